"""Function-result caching: ``@cached`` puts a function's results in Stoker's cache.

    from stoker.functions import cached

    @cached(ttl="1m", swr="5m", sie="1h", tags=["catalogue"])
    async def price(sku: str) -> dict: ...

Results live in the same tiers as pages (L1 memory, L2 SQLite or Redis) under keys of
their own (:mod:`stoker.functions.keys`), are purged by the same tag purges, collapse
across processes sharing the store, and are served stale while refreshed or while the
function fails, as :mod:`stoker.functions.decide` says.  ``docs/functions.md`` is the
user's guide.
"""

from stoker.functions.cached import Cached, CachedFunction, cached
from stoker.functions.codecs import Codec, JsonCodec, MsgpackCodec, PickleCodec, Unreadable
from stoker.functions.runtime import Runtime, default_runtime

__all__ = ["Cached", "CachedFunction", "Codec", "JsonCodec", "MsgpackCodec", "PickleCodec",
           "Runtime", "Unreadable", "cached", "default_runtime"]
