"""Stoker's own HTTP/1.1 server (``server = "stoker"``, the default).

An :class:`asyncio.Protocol` per connection (:mod:`~stoker.server.front.connection`) on
httptools' public parser, the exchange of one request (:mod:`~stoker.server.front.exchange`:
answered by Stoker's request core from the parsed head, or by any other ASGI app), the
listener with its one timer for every connection (:mod:`~stoker.server.front.listener`),
and what lets fresh hits skip even the exchange: heads remembered by their bytes and
responses written once per loop iteration (:mod:`~stoker.server.front.heads`,
:mod:`~stoker.server.front.batch`).
It names nothing private of any other server.
"""
