"""The settings of a Stoker embedded in an app (:mod:`stoker.embed`): the same settings,
read the same way, but the app's server answers its requests, not Stoker's listeners.

Invariants:
- The site's hosts are the app's: ``site_url``'s and ``purge_hosts``, never the proxy's
  ``listen`` address; naming none, every host the app is reached by is the site's
  (:attr:`~stoker.http.site_hosts.SiteHosts.any_host`), so a purge of an absolute URL never
  warns of an unknown host.  Warm visits go to ``site_url`` only (none: no full runs).
- The settings of Stoker's own servers (:data:`SERVER_ONLY`) are refused when given in
  code (:func:`refuse_server_settings`, naming the setting); read from a ``stoker.toml``
  the proxy shares, they are left unused.
- Warming needs ``site_url`` (warm visits and discovery go there): asked for without it,
  :func:`require_site_for_warming` raises naming ``site_url``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, fields

from stoker.config.settings.declared import Settings, SettingsError
from stoker.http.site_hosts import SiteHosts

SERVER_ONLY = ("listen", "admin_listen", "processes", "server", "tls_cert", "tls_key",
               "access_log", "access_log_format")
"""Settings of Stoker's own listeners and processes: an app's server does their work."""


@dataclass(frozen=True)
class AppSettings(Settings):
    """:class:`Settings` of a Stoker embedded in an app (see the module invariants)."""

    @property
    def site_urls(self) -> tuple[str, ...]:
        """Where warm visits go: ``site_url`` (none: nowhere, no listener of ours)."""
        return self.site_url

    @property
    def site_hosts(self) -> SiteHosts:
        """``site_url``'s hosts and ``purge_hosts`` (none: every host) with the aliases."""
        return SiteHosts.of(site_urls=self.site_url, purge_hosts=self.purge_hosts,
                            listen=None, aliases=self.aliases)


def as_app_settings(settings: Settings) -> AppSettings:
    """``settings`` as an embedded Stoker's (validated again, unchanged)."""
    if isinstance(settings, AppSettings):
        return settings
    return AppSettings(**{each.name: getattr(settings, each.name) for each in fields(settings)})


def refuse_server_settings(names: Iterable[str]) -> None:
    """Refuse settings of Stoker's own servers given to an embedded Stoker, naming the first."""
    for name in names:
        if name in SERVER_ONLY:
            raise SettingsError(f"{name} is a setting of Stoker's own servers: an app "
                                "embedding Stoker is served by its own server (uvicorn, "
                                "granian, …); name the site with site_url instead")


def require_site_for_warming(settings: Settings) -> None:
    """``warm=True`` needs ``site_url`` (see the module invariants)."""
    if not settings.site_url:
        raise SettingsError("warm=True needs site_url (the site's public URL, e.g. "
                            "site_url=\"https://www.example.com\"): warm visits, the sitemap "
                            "and purged paths are read on it")
