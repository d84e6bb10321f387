"""The origin: the ``OriginClient`` port the request core fetches through
(:mod:`~stoker.origin.port`, its errors and the per-request context), and its
implementations: Stoker's HTTP/1.1 client (:mod:`~stoker.origin.http`), the in-process
ASGI origin (:mod:`~stoker.origin.asgi`), and the wrappers that watch and limit every
request (:mod:`~stoker.origin.monitored`, :mod:`~stoker.origin.limited`)."""
