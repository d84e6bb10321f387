"""What the admin side may use of a running process: :class:`RunningStoker` (the cache, its
pipeline and purger, the settings) and :class:`RunningWarmer` (the warmer and its stores).

The admin layer sits below the assembly (``stoker.app``): it never imports it, not even
for types (an import contract). The app's ``Stoker`` and ``WarmService`` satisfy these
protocols structurally; every member is read-only here, so the admin side reads and
drives the parts, and never rewires them.
"""

from __future__ import annotations

from typing import Protocol

from stoker.admin.audit import RefusalAudit
from stoker.backends.warm_stores import WarmStores
from stoker.cache.store import CacheStore
from stoker.cache.tiered import TieredStore
from stoker.cache.version_watch import VersionWatch
from stoker.clock import Clock
from stoker.config.settings import Settings
from stoker.origin.timing import OriginTiming
from stoker.proxy.pipeline import Pipeline
from stoker.purge.audit import AuditTrail
from stoker.purge.purger import Purger
from stoker.schedule.ticker import Ticker
from stoker.warm.credentials import CredentialBook
from stoker.warm.warmer import Warmer


class RunningStoker(Protocol):
    """One running Stoker process, as the admin listener sees it."""

    @property
    def settings(self) -> Settings:
        """The settings in force (a reload replaces them)."""

    @property
    def clock(self) -> Clock: ...

    @property
    def pipeline(self) -> Pipeline:
        """The request core: its counters, configuration and cache version."""

    @property
    def store(self) -> TieredStore:
        """Both cache tiers."""

    @property
    def l2(self) -> CacheStore:
        """The persistent tier alone."""

    @property
    def purger(self) -> Purger: ...

    @property
    def audit(self) -> AuditTrail:
        """The audit log every change is written to."""

    @property
    def refusals(self) -> RefusalAudit:
        """Refused calls, recorded at a bounded rate per client."""

    @property
    def version_watch(self) -> VersionWatch: ...

    @property
    def origin_timing(self) -> OriginTiming: ...


class RunningWarmer(Protocol):
    """The warmer of one process, its stores and its ticker."""

    @property
    def stoker(self) -> RunningStoker: ...

    @property
    def stores(self) -> WarmStores: ...

    @property
    def warmer(self) -> Warmer: ...

    @property
    def ticker(self) -> Ticker: ...

    @property
    def credentials(self) -> CredentialBook: ...
