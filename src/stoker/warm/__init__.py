"""The warmer: discovery, warm runs and their triggers (pure cores, ports, orchestration).

The warmer reaches the proxy only through ports it defines (a visit runs a request
through the cache pipeline in process), so it sits below ``stoker.proxy``; the
backends implement its stores.
"""
