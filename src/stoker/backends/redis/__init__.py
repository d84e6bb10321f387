"""Redis: a cache tier several Stoker nodes share (:class:`RedisCacheStore`)."""
