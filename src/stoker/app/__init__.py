"""Assembly: the :class:`~stoker.app.stoker.Stoker` object, the warm service, the serve and
worker processes (:mod:`~stoker.app.serving`) and the ASGI middleware."""
