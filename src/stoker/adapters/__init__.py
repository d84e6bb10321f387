"""The request core's adapters: the ASGI app and its replies, the fast path the front and
the ASGI app answer fresh hits with, warm visits run in process, the access log."""
