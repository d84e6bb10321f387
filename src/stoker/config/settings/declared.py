"""The declaration of every setting: one :class:`Settings` field per key, carrying its
type, its default, its parser, its help and whether commands take it as a ``--flag``.

Invariants: :data:`FIELDS` is read off :class:`Settings` (so a setting cannot exist in
one and not the other); a setting ``name`` is the ``STOKER_NAME`` variable and, when
declared a flag, ``--name`` with ``_`` as ``-``; a :class:`Settings` passes the
cross-field checks (:meth:`Settings.__post_init__`) or is never made.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, TypeVar

from stoker.config.presets import NAMES as PRESET_NAMES
from stoker.config.rules import Rule
from stoker.config.settings.values import (
    address,
    boolean,
    cache_name,
    choice,
    credential_names,
    networks,
    optional,
    origin_slots,
    override_fields,
    path,
    paths,
    positive_int,
    positive_seconds,
    process_count,
    redis_url,
    seconds,
    size,
    str_list,
    text,
    url,
    urls,
    variants,
    whole,
)
from stoker.http.keys import normalise_host
from stoker.http.site_hosts import SiteHosts

T = TypeVar("T")
ENV_PREFIX = "STOKER_"
_SPEC = "stoker.setting"


class SettingsError(ValueError):
    """A configuration problem, phrased for the person who has to fix it."""


@dataclass(frozen=True)
class Setting:
    """How one setting is read and explained.

    ``help`` is one line (``stoker settings``, the ``--flag``'s help); ``doc`` and
    ``default_doc`` are what docs/configuration.md's table says of it and of its default when the
    help, or the default as written, would not do; ``reload``: a running Stoker takes a
    new value on ``SIGHUP`` (:mod:`stoker.config.reload`), else it needs a restart."""

    parse: Callable[[Any], Any]
    help: str
    doc: str | None = None
    default_doc: str | None = None
    flag: bool = False
    reload: bool = False


def setting(default: T, parse: Callable[[Any], T], help: str, *, doc: str | None = None,
            default_doc: str | None = None, flag: bool = False, reload: bool = False) -> T:
    """A :class:`Settings` field: ``default`` and ``parse`` must agree with the field's type
    (mypy checks both), and the class attribute is ``default``."""
    spec = Setting(parse, help, doc, default_doc, flag, reload)
    return field(default=default, metadata={_SPEC: spec})


def variable(key: str) -> str:
    """The environment variable of setting ``key``."""
    return f"{ENV_PREFIX}{key.upper()}"


def flag_name(key: str) -> str:
    """The command-line flag of setting ``key``."""
    return f"--{key.replace('_', '-')}"


DEFAULT_VARIANTS: tuple[tuple[tuple[str, str], ...], ...] = ((
    ("accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"),
    ("accept-encoding", "gzip, deflate, br, zstd"),
),)
"""One typical browser request."""


@dataclass(frozen=True)
class Settings:
    """Validated configuration for every Stoker command."""

    origin: str | None = setting(
        None, optional(url),
        "Origin base URL to cache, e.g. http://127.0.0.1:9000",
        flag=True)
    origin_host: str | None = setting(
        None, optional(text),
        "Host header sent to the origin (default: the client's Host)",
        default_doc="client's Host")
    listen: str = setting(
        "127.0.0.1:8080", address,
        "Public proxy listener HOST:PORT",
        flag=True)
    admin_listen: str = setting(
        "127.0.0.1:8081", address,
        "Admin API/dashboard listener HOST:PORT",
        flag=True)
    admin_token: str | None = setting(
        None, optional(text),
        "Bearer token required by the admin API",
        flag=True)
    admin_token_file: Path | None = setting(
        None, optional(path),
        "File holding admin_token (instead of it); relative: in $CREDENTIALS_DIRECTORY",
        doc="A file holding the admin API's bearer token, read at start and on `SIGHUP` "
            "(leading and trailing whitespace dropped), instead of `admin_token` (set one of "
            "the two). A relative path is read in `$CREDENTIALS_DIRECTORY` when that is set "
            "(systemd's `LoadCredential=`, docs/deploy.md), else in the working directory",
        flag=True)
    data_dir: Path = setting(
        Path(".stoker"), path,
        "Directory for the SQLite files and large cached bodies",
        flag=True)
    database_url: str | None = setting(
        None, optional(text),
        "postgresql://… for queue/runs/deadlines (default: SQLite in data_dir)",
        doc="`postgresql://…` for the job queue, the audit log, the purge bus and the cache "
            "version's record, shared by the nodes using it (default: SQLite and "
            "`cache-version.json` in `data_dir`)",
        flag=True)
    server: str = setting(
        "stoker", choice("stoker", "granian"),
        "HTTP server: stoker (its own HTTP/1.1 front: fastest hits; a TLS listener is served "
        "by granian) or granian (HTTP/1.1 and HTTP/2)",
        doc="`stoker`: Stoker's own HTTP/1.1 server, which answers fresh hits (from memory or"
            " SQLite) without going through ASGI (see BENCHMARKS.md); a TLS listener is "
            "served by granian. `granian`: HTTP/1.1 and HTTP/2 (h2c with prior knowledge, or "
            "ALPN under TLS), everything through ASGI; choose it for clients that speak "
            "HTTP/2 without TLS (TLS terminators and load balancers speak HTTP/1.1 to a "
            "backend)",
        flag=True)
    l1_max_bytes: int = setting(
        256 * 1024 * 1024, size,
        "Memory for cached pages and per-URL tables, e.g. 256MiB",
        doc="Memory for cached pages (the LRU memory tier) and what else the cache holds in "
            "memory: the fast path's key memo and the hit counter (1/32 each) and the L2 "
            "write queue (`l2_queue_max_bytes`); entries are accounted at their real cost in "
            "Python objects")
    l2_max_bytes: int = setting(
        4 * 1024 * 1024 * 1024, size,
        "Persistent (L2) cache bound, e.g. 4GiB",
        doc="SQLite tier bound (expired, then oldest, evicted)")
    body_file_threshold: int = setting(
        256 * 1024, size,
        "Bodies larger than this are stored in files",
        doc="Larger bodies are stored as files (temp + fsync + rename)",
        reload=True)
    max_object_bytes: int = setting(
        1024 * 1024 * 1024, size,
        "Responses larger than this are passed through, not stored",
        doc="Larger responses pass through unstored",
        reload=True)
    max_decoded_body: int = setting(
        64 * 1024 * 1024, size,
        "A gzip/br answer decoding past this is stored as the origin sent it, not decoded",
        doc="Most bytes a gzip or br body from the origin is decoded to for storing: one "
            "that decodes to more (or past `max_expansion_ratio`) is stored as the origin "
            "sent it, in its coding, for the clients that accept it; decoding stops there",
        reload=True)
    max_expansion_ratio: int = setting(
        100, positive_int,
        "A gzip/br answer decoding to more than this many times its size (past 1 MiB) is "
        "stored as sent, not decoded",
        doc="Most times its own size a gzip or br body from the origin is decoded to "
            "(looked at once it has decoded to 1 MiB; pages compress 5 to 10 times, a "
            "decompression bomb a thousand): one that expands more is stored as the origin "
            "sent it, in its coding, and decoding stops there",
        reload=True)
    default_swr: float = setting(
        0.0, seconds,
        "stale-while-revalidate window when the origin gives none",
        doc="stale-while-revalidate when the origin says nothing",
        reload=True)
    default_sie: float = setting(
        0.0, seconds,
        "stale-if-error window when the origin gives none",
        doc="stale-if-error when the origin says nothing",
        reload=True)
    keep: float = setting(
        3600.0, seconds,
        "Keep expired entries with validators this long for revalidation",
        doc="Keep expired entries with validators for conditional revalidation",
        reload=True)
    origin_timeout: float = setting(
        30.0, seconds,
        "Longest wait on the origin: to connect, to take the request body, for each piece of "
        "its answer",
        doc="Longest wait on the origin: to connect, to take each piece of a request body, "
            "for its answer and each piece of it (then 504, or stale-if-error)")
    collapse_timeout: float = setting(
        15.0, seconds,
        "How long collapsed requests wait for the leader",
        doc="How long collapsed requests wait on one fetch before going to the origin "
            "themselves (again from when a waiter takes a dead fetch lease over)",
        reload=True)
    client_body_timeout: float = setting(
        60.0, seconds,
        "Longest pause while a client sends its request body (then 408); bodies are read "
        "whole before the origin is asked",
        doc="Longest pause while a client sends its request body (then 408, nothing "
            "forwarded); bodies are read whole before the origin is asked, as nginx does")
    client_max_body_size: int = setting(
        1024 * 1024 * 1024, size,
        "Largest request body accepted (then 413); beyond 64 KiB it waits in a temporary file",
        doc="Largest request body accepted (then 413, nothing forwarded); past 64 KiB a body "
            "waits in an unnamed temporary file under `data_dir`",
        reload=True)
    cache_name: str = setting(
        "stoker", cache_name,
        "Name used in Cache-Status and Via (a token)",
        doc="Name in `Cache-Status` and `Via`")
    tag_headers: tuple[str, ...] = setting(
        ("surrogate-key", "cache-tag"), str_list,
        "Response headers carrying cache tags",
        reload=True)
    strip_tag_headers: bool = setting(
        True, boolean,
        "Remove tag headers from responses to clients",
        reload=True)
    honor_client_no_cache: bool = setting(
        False, boolean,
        "Let a client's Cache-Control: no-cache force revalidation",
        doc="Let a client's `Cache-Control: no-cache` force revalidation (off, as in Varnish "
            "and nginx, so clients cannot bust the cache)",
        reload=True)
    purge_hosts: tuple[str, ...] = setting(
        (), str_list,
        "Hosts purge URLs may name, e.g. www.example.com (empty: any host)",
        doc="Hosts absolute purge URLs may name (others → 400)",
        default_doc="any")
    purge_allow: tuple[str, ...] = setting(
        (), networks,
        "Client IPs/CIDRs allowed to send PURGE to the proxy (empty: PURGE disabled)",
        doc="Client addresses/CIDRs allowed to send `PURGE`: the client as `trusted_proxies` "
            "resolve it (the TCP peer, or the address a trusted proxy forwards)",
        default_doc="— (off)")
    purge_mode: str = setting(
        "hard", choice("hard", "soft"),
        "What a purge that does not say soft or hard is: hard (entries gone) or soft (marked "
        "stale, served while they revalidate)",
        doc="What a purge that does not say is: `hard` (entries gone: the next visitor waits "
            "for the origin) or `soft` (entries marked stale: served while they revalidate, "
            "where they may be served stale). For the `PURGE` method without `X-Purge-Soft`, "
            "API purges without `\"soft\"` and `stoker purge` without `--soft`/`--hard`: "
            "CMS purge clients cannot ask for soft purges. `X-Purge-Soft: 0`, "
            "`\"soft\": false` and `--hard` are always hard",
        reload=True)
    admin_allowed_origins: tuple[str, ...] = setting(
        (), str_list,
        "Origins (scheme://host:port) besides the admin listener's own whose pages may send "
        "it writes",
        doc="Origins (`https://admin.example.com`) besides the admin listener's own that may "
            "send it writes (a mutating request whose `Origin`, or else `Referer`, is another "
            "→ 403, audited)",
        default_doc="the listener's own")
    admin_session_lifetime: float = setting(
        43200.0, seconds,
        "How long a dashboard login lasts (the session cookie and its server-side record)",
        default_doc="12h")
    audit_max_age: float = setting(
        90 * 86_400.0, positive_seconds,
        "How long audit-log records are kept (older ones are pruned every few minutes)",
        doc="How long audit-log records (purges, refused calls, logins: with client "
            "addresses) are kept; older ones are deleted by a periodic prune",
        default_doc="90d", reload=True)
    audit_max_rows: int = setting(
        100_000, positive_int,
        "Most audit-log records kept (the oldest beyond are pruned every few minutes)",
        doc="Most audit-log records kept; the oldest beyond are deleted by the same prune "
            "(with each record's target bounded, this bounds the log's size)", reload=True)
    trusted_proxies: tuple[str, ...] = setting(
        ("127.0.0.0/8", "::1"), networks,
        "Peers (IPs/CIDRs) whose X-Forwarded-Proto/-For and Forwarded are believed",
        doc="Peers (addresses/CIDRs) whose `X-Forwarded-Proto`/`Forwarded: proto=` set the "
            "request's scheme and whose `X-Forwarded-For`/`Forwarded: for=` name the client "
            "(for `purge_allow`, logs, the audit); from anyone else those headers are "
            "ignored. Empty: trust nobody")
    keep_override_headers: tuple[str, ...] = setting(
        (), override_fields,
        "Override headers (x-original-url, forwarded, ...) passed on from trusted_proxies",
        doc="Request fields Stoker otherwise drops, that the origin still gets when a "
            "`trusted_proxies` peer sends them: `forwarded` (then kept, with Stoker's element "
            "appended, not rewritten), `x-original-url`, `x-rewrite-url`, "
            "`x-http-method-override`, `x-http-method`, `x-method-override`, "
            "`x-forwarded-scheme`, `-port`, `-prefix`, `-server`, `x-host`. They are not part "
            "of the cache key: keep one only if that proxy sets it on every request, "
            "replacing the visitor's. From any other peer they are always dropped",
        default_doc="none")
    max_variants: int = setting(
        32, positive_int,
        "Most Vary variants kept per URL (least recently used dropped)",
        doc="Most `Vary` variants kept per URL; the least recently used is dropped, so a "
            "per-visitor `Vary` cannot fill the cache with one page",
        reload=True)
    processes: int = setting(
        1, process_count,
        "Serving processes on one address, each with its own memory tier (auto: one per core)",
        doc="Serving processes sharing `listen` (`SO_REUSEPORT`), each with its own memory "
            "tier, all sharing `data_dir`'s cache tier, job queue and purges: a purge "
            "answers once every process has it in force; `auto`: one per core",
        default_doc="`1`", flag=True)
    node_id: str | None = setting(
        None, optional(text),
        "This Stoker's name among those sharing a cache (default: hostname-pid)",
        doc="This Stoker's name among the processes and nodes sharing a cache: in the purge "
            "answers naming who did not confirm, and in the logs",
        default_doc="hostname-pid", flag=True)
    purge_ack_timeout: float = setting(
        5.0, seconds,
        "Longest a purge waits for the other processes to have it in force",
        doc="Longest a purge waits for every other live process sharing the cache to have "
            "it in force; the answer then names those that did not confirm "
            "(`unconfirmed`)")
    node_timeout: float = setting(
        10.0, seconds,
        "A process sharing the cache that has not been heard of this long is not waited for",
        doc="A process sharing the cache that has not confirmed its position for this long "
            "is taken for gone: purges no longer wait for it; a fetch lease its holder has "
            "not renewed for this long is dead, and a waiting process takes it over")
    notifier: str = setting(
        "auto", choice("auto", "poll", "postgres", "redis"),
        "How the processes sharing a cache hear of each other's purges sooner than their "
        "polls: auto, poll, postgres or redis",
        doc="How the processes and nodes sharing a cache poke each other when a purge is "
            "relayed or confirmed, so that a purge answers without waiting for polls of the "
            "purge bus: `redis` (pub/sub on `l2_url`), `postgres` (LISTEN/NOTIFY on "
            "`database_url`), `poll` (none: the bus is read every 20 ms); `auto`: `redis` "
            "with `l2_url`, else `postgres` with `database_url`, else `poll`. The bus stays "
            "the record: a lost subscription is made again, counted "
            "(`stoker_notifier_reconnects_total`), and meanwhile the bus is polled")
    shutdown_timeout: float = setting(
        10.0, seconds,
        "On SIGTERM: time to flush L2 writes and drain background work, then give up",
        doc="On SIGTERM/SIGINT: one budget, from the signal, for the requests in flight, the "
            "queued cache writes (flushed from the start), background revalidations and "
            "reclaims; what is still running then is cancelled, abandoned and logged")
    l2_queue_max_bytes: int | None = setting(
        None, optional(size),
        "Bound of cache writes queued for L2 (default: 1/16 of l1_max_bytes, 1-64 MiB, taken "
        "from it); beyond it the oldest queued are dropped",
        doc="Cache writes waiting for the SQLite tier, taken out of `l1_max_bytes`; when it "
            "falls behind (or fails) beyond this, the oldest waiting writes are dropped "
            "(counted as `l2_dropped` in `/api/status`)",
        default_doc="1/16 of `l1_max_bytes` (1\N{EN DASH}64 MiB)")
    l2_write_timeout: float = setting(
        10.0, seconds,
        "How long a purge or flush waits for a failing L2 before reporting an error",
        doc="How long a purge waits for a failing SQLite tier before answering with an error "
            "(the purge still reaches it, in order, once it recovers)")
    l2_url: str | None = setting(
        None, optional(redis_url),
        "redis://… to keep the persistent tier in Redis, shared by the nodes (with database_url)",
        doc="`redis://host:port/db`: the persistent tier in Redis, shared by every node with "
            "this setting (entries, their bodies up to `l2_max_object_bytes`, the tag index) "
            "instead of `data_dir/cache.db`; needs `database_url`, through which the nodes "
            "share their purges, fetch leases and the cache version's record")
    l2_max_object_bytes: int = setting(
        8 * 1024 * 1024, size,
        "With l2_url: the largest response stored (larger ones pass through)",
        doc="With `l2_url`: the largest response stored, its body kept in memory and in "
            "Redis (larger ones pass through unstored; no body goes to a file)")
    l2_inline_reads: bool = setting(
        True, boolean,
        "Read L2 hits on the event loop (fast); false on a slow or network disk, whose reads "
        "would stall every request",
        doc="Read SQLite-tier hits directly on the event loop (an indexed read of 7 columns, "
            "~5 µs when the database's pages are in the OS page cache) instead of handing "
            "each to the SQLite thread (~40 µs more CPU per hit). While it reads, nothing "
            "else runs: on a slow, network or throttled disk, or with an `l2_max_bytes` much "
            "larger than the RAM that caches it, set `false` so a read that waits for the "
            "disk does not stall every request. Bodies kept in files are never read this way")
    preset: str | None = setting(
        None, optional(choice(*PRESET_NAMES)),
        "Platform preset expanded into the rules (stoker settings --preset NAME prints it)",
        doc="Platform preset expanded into the rules: `wordpress`, `woocommerce`, `django`, "
            "`wagtail`, `drupal`, `rails`, `laravel`, `generic` (see Cache rules)",
        reload=True)
    stopgap_header: str = setting(
        "X-Stoker-Stopgap", text,
        "Response header marking an origin's placeholder page: never stored, revisited",
        doc="A response carrying it (or answering `202`/`503`) is an origin's placeholder: "
            "never stored, revisited by the warmer")
    stopgap_delay: float = setting(
        20.0, seconds,
        "Wait before a warm run revisits a stopgap page",
        doc="A warm run revisits a placeholder page this much later (at most twice)")
    origin_max_concurrency: int = setting(
        16, origin_slots,
        "Most origin requests in flight at once, visitors' misses and warm visits together; "
        "visitors first, warm visits never take the last quarter",
        doc="Most requests in flight to the origin at once, visitors' misses and warm visits "
            "together (at least 2). Visitors come first: a freed slot goes to a waiting "
            "visitor before any warm visit, and warm visits never take the last quarter of "
            "the slots (at least one), so a visitor's miss finds a free slot even while the "
            "warmer is busy")
    origin_max_per_client: int | None = setting(
        None, optional(positive_int),
        "Origin slots one client holds within its share; beyond it only while a quarter of "
        "the slots stays free for others",
        doc="Origin slots one client (its address as `trusted_proxies` resolve it; an IPv6 "
            "client by its /64) holds within its share of `origin_max_concurrency`. Beyond "
            "its share a client borrows a slot only when no other client within its share "
            "waits, after warm visits, and never into the last quarter of the slots, so one "
            "client's slow URLs cannot take every slot: another client's miss finds one free."
            " A freed slot goes to the waiting client holding fewest (round robin; a URL "
            "already holding slots behind others). Behind a proxy not in `trusted_proxies` "
            "every visitor is one client: list it, or set this to `origin_max_concurrency`",
        default_doc="a quarter of `origin_max_concurrency`, at least 1")
    warm_max_concurrency: int = setting(
        8, positive_int,
        "Most warm visits in flight at once; below it the warmer adapts to the origin's "
        "latency, 429 and 503",
        doc="Most warm visits in flight at once. The warmer starts at 1 and adapts below "
            "this: one more per round of visits answered near the origin's usual latency, "
            "half as many when latency rises or the origin answers 429 or 503 (and none until"
            " its `Retry-After`, at most 10 minutes)")
    site_url: tuple[str, ...] = setting(
        (), urls,
        "The public site as visitors see it (scheme + host), one or more: every warm visit "
        "uses it (default: the public listener)",
        doc="The site as visitors see it, e.g. `https://www.example.com` (several allowed): "
            "the scheme and Host of warm visits, so the warmer fills the entries visitors "
            "read. Stoker also learns the scheme and Host visitors arrive with (after "
            "`trusted_proxies`; the site's own hosts and `site_aliases` only) and warms each "
            "page on those too; `stoker check`, the log and the warm page say when they "
            "differ from `site_url`",
        default_doc="the public listener: `https://` with `tls_cert`, else `http://`")
    site_aliases: tuple[str, ...] = setting(
        (), str_list,
        "Other hosts sitemaps may name for the same site (e.g. the origin's own address): "
        "mapped onto site_url",
        doc="Other hosts a sitemap, a home page's links or a purge may name for the same site"
            " (the origin's own address, a CMS's configured host; `host` is any port, "
            "`host:port` that one): their URLs are mapped onto `site_url`, and a purge naming"
            " one covers the site's own hosts; other hosts are skipped and counted. "
            "`origin_host` is always one")
    warm_max_urls: int = setting(
        50_000, positive_int,
        "Most URLs one warm run visits",
        doc="Most URLs one warm run visits (most visited first)")
    warm_workers: int | None = setting(
        None, optional(whole),
        "Warm jobs this process runs at once (0: no warming here; stoker worker can do it)",
        doc="Warm jobs this process runs at once (each a URL's visits; the warmer's throttle "
            "keeps at most `warm_max_concurrency` of their visits at the origin); `0`: none "
            "here (run `stoker worker` elsewhere on the same `database_url`)",
        default_doc="`warm_max_concurrency`")
    warm_variants: tuple[tuple[tuple[str, str], ...], ...] = setting(
        DEFAULT_VARIANTS, variants,
        "Request headers of each variant a URL is warmed with, e.g. [{ \"accept-encoding\" = "
        "\"gzip, br\" }]",
        doc="Request headers of each variant every URL is warmed with, e.g. `[{ "
            "\"accept-encoding\" = \"gzip, br\" }, { \"user-agent\" = \"… Mobile …\" }]` "
            "(JSON in the variable); a variant without `user-agent` sends "
            "`stoker-warmer/<version>`",
        default_doc="a typical browser")
    warm_credentials: tuple[str, ...] = setting(
        (), credential_names,
        "Names of the headers and cookies the warmer may send the origin, set through the "
        "admin API (e.g. header:x-bypass-maintenance, cookie:age_ok)",
        doc="The headers and cookies the warmer may send the origin (`header:NAME`, "
            "`cookie:NAME`), e.g. a header that lets it past a maintenance page; their values "
            "are set at run time (`PUT /api/warm/credentials/NAME`), write-only, kept in the "
            "database and never logged. Sent on warm visits and the warmer's sitemap "
            "fetches only, never on a visitor's request; the answer is stored for visitors "
            "as any other, so a credential must not make the origin personalise the page",
        default_doc="— (none)")
    rewarm_delay: float = setting(
        60.0, seconds,
        "Re-warm purged URLs this long after the last purge",
        doc="Purged pages are re-warmed this long after the last purge of a burst …",
        reload=True)
    rewarm_max_wait: float = setting(
        300.0, seconds,
        "... but at most this long after the first purge",
        doc="… but at most this long after its first",
        reload=True)
    rewarm_now_max: int = setting(
        10, whole,
        "A purge making fewer URLs than this cold is re-warmed at once, not after "
        "rewarm_delay (0: off)",
        doc="A purge that makes fewer URLs than this cold (an edit's page, its list pages) "
            "is re-warmed at once, with whatever purged URLs wait, instead of `rewarm_delay` "
            "after the burst's last purge; `0` turns it off",
        reload=True)
    rewarm_also: tuple[str, ...] = setting(
        (), paths,
        "Paths purged (soft or hard alike) and re-warmed with every purge on the site, "
        "e.g. [\"/\", \"/blog/\"]",
        doc="Paths (e.g. `[\"/\", \"/blog/\"]`: the home and archive pages a CMS's purge "
            "client does not name) purged with every purge that is not of everything, on each "
            "of the site's hosts, soft or hard as that purge is, and re-warmed with its URLs",
        default_doc="— (none)", reload=True)
    refresh_interval: float = setting(
        86_400.0, seconds,
        "Full warm run this long after the last one finished (0: no daily refresh)",
        doc="A full warm run this long after the last one finished (after a failed one "
            "started); `0` turns the daily refresh off")
    outage_retry: float = setting(
        30.0, positive_seconds,
        "After an origin outage: first retry of a failed discovery and of failed URLs",
        doc="How soon the warmer tries the origin again after it failed: the first retry of "
            "a full run whose discovery failed, the first check of the URLs that failed "
            "while the origin was down, and the warm worker's pause (circuit breaker) "
            "while warm visits keep failing; each retry waits twice as long as the last, "
            "up to `outage_retry_max`")
    outage_retry_max: float = setting(
        1800.0, positive_seconds,
        "... doubling up to this long between retries",
        doc="The longest wait between two such retries")
    refresh_ahead: float = setting(
        30.0, seconds,
        "Refresh the entries visitors read this long before they go stale (0: off)",
        doc="Entries visitors read are revalidated by the warmer (a conditional GET) this "
            "long before they go stale, or once 80 % of their lifetime has passed if that "
            "comes later (a 60 s page 12 s before), most requested first, within the warm "
            "throttle and the origin limit (visitors first); `0` turns refresh ahead off")
    refresh_window: float = setting(
        3600.0, positive_seconds,
        "Refresh ahead only entries a visitor read within this long",
        doc="Refresh ahead keeps refreshing an entry while a visitor (not the warmer) read "
            "it within this long; then it is left to expire")
    warm_on_start: str = setting(
        "empty", choice("empty", "always", "never"),
        "A full warm run when Stoker starts: empty (when the cache holds nothing, e.g. a new "
        "data_dir), always, or never",
        doc="A full warm run when Stoker starts: `empty` (only when the cache holds nothing: "
            "a new `data_dir`), `always`, or `never`")
    keep_stale: float = setting(
        86_400.0, seconds,
        "Keep entries past freshness this long and serve them when the origin fails (not past"
        " must-revalidate/no-cache/s-maxage)",
        doc="Keep entries past their freshness this long and answer with them when the origin"
            " refuses the connection, times out, closes without answering or answers "
            "500/502/503/504 (`Cache-Status: stoker; hit; detail=stale-if-error`) — never for"
            " responses with `must-revalidate`, `proxy-revalidate`, `no-cache` or `s-maxage` "
            "(beyond their own `stale-if-error`). `0`: only the origin's `stale-if-error`",
        reload=True)
    access_log: str | None = setting(
        None, optional(text),
        "Access log: - (standard output) or a file path (default: off)",
        doc="`-` (standard output) or a file: one line per request — time, client (through "
            "`trusted_proxies`), method, URL, status, bytes, duration, time waiting for the "
            "origin, cache status (`hit`, `stale`, `miss`, `bypass`, `collapsed`). Never "
            "cookies, `Authorization` or the values of `log_redact_query` parameters. Costs "
            "16\N{EN DASH}25 µs of CPU per hit, depending on the machine (BENCHMARKS.md), so "
            "it is off by default",
        default_doc="off")
    access_log_format: str = setting(
        "combined", choice("combined", "json"),
        "combined (with the cache status appended) or json",
        doc="`combined` (nginx/Apache's, with the cache status and the two durations in ms "
            "appended) or `json`")
    log_format: str = setting(
        "text", choice("text", "json"),
        "Stoker's own log lines as text, or as one JSON object each (for log shippers)",
        doc="Stoker's own log lines (not the access log): `text`, or `json`, one object per "
            "line with `time`, `level`, `logger`, `message` (and `error`)",
        flag=True)
    log_redact_query: tuple[str, ...] = setting(
        ("token", "key", "api_key", "password", "secret", "signature", "sig", "code", "auth"),
        str_list,
        "Query parameters whose values the access log never writes",
        doc="Query parameters whose values the access log writes as `REDACTED`")
    tls_cert: Path | None = setting(
        None, optional(path),
        "PEM certificate chain: the public listener speaks HTTPS (HTTP/2 by ALPN) with "
        "tls_key",
        doc="PEM certificate chain and key: the public listener speaks HTTPS on granian, "
            "HTTP/2 by ALPN (for sites without a TLS terminator in front). Without them it "
            "speaks HTTP/1.1 (and, with `server = \"granian\"`, HTTP/2 with prior knowledge)")
    tls_key: Path | None = setting(
        None, optional(path),
        "PEM private key of tls_cert",
        doc="PEM private key of `tls_cert` (the two go together)")
    error_page: Path | None = setting(
        None, optional(path),
        "HTML file sent as the body of Stoker's own 502/503/504 when the origin fails and no "
        "stale copy can answer (at most 1 MiB; read at start and on reload)",
        doc="An HTML file (at most 1 MiB) sent as the body of the `502`, `503` or `504` Stoker "
            "answers itself when the origin fails and no stale copy can stand in, to clients "
            "that accept HTML (`Content-Type: text/html; charset=utf-8`, `Cache-Control: "
            "no-store`, the status and `Retry-After` unchanged); other clients, and every "
            "answer without it, get the short plain-text one. Read when Stoker starts and "
            "on each reload, never per request",
        flag=True, reload=True)
    compress: bool = setting(
        True, boolean,
        "Store br and gzip forms of compressible responses (text, JSON, JS, SVG, XML over 1 "
        "KiB, inline bodies), made once when first accepted, and serve the best one accepted",
        doc="Compress stored responses once, on demand: a `200` of `text/*`, JSON, "
            "JavaScript, SVG or XML over 1 KiB, without its own `Content-Encoding` and "
            "without `Cache-Control: no-transform`, gets br and gzip forms beside identity, "
            "made when a client first accepts a coding (after a miss whose client accepts "
            "one, once its response has ended; a miss never waits for compression) and then "
            "stored with the entry (bodies above `body_file_threshold`, kept in files, get "
            "none made, and keep the origin's gzip or br bytes when it sent them); hits get "
            "the best form the client's `Accept-Encoding` accepts (identity when it names "
            "none). Never per hit",
        reload=True)

    rules: tuple[Rule, ...] = field(default=())

    def __post_init__(self) -> None:
        """The checks between settings that need nothing but the values."""
        if (self.tls_cert is None) != (self.tls_key is None):
            raise SettingsError("tls_cert and tls_key go together: set both (PEM files) for "
                                "HTTPS on the public listener, or neither")
        if self.l2_url and not self.database_url:
            raise SettingsError("l2_url needs database_url: the nodes sharing the Redis tier "
                                "share their purges and fetch leases through PostgreSQL")
        if self.notifier == "postgres" and not self.database_url:
            raise SettingsError("notifier = postgres needs database_url: the pokes go "
                                "through the PostgreSQL the nodes share (or choose auto)")
        if self.outage_retry_max < self.outage_retry:
            raise SettingsError(f"outage_retry_max ({self.outage_retry_max:g} s) must be at "
                                f"least outage_retry ({self.outage_retry:g} s)")
        if self.notifier == "redis" and not self.l2_url:
            raise SettingsError("notifier = redis needs l2_url: the pokes go through the "
                                "Redis the nodes share (or choose auto)")

    @property
    def site_urls(self) -> tuple[str, ...]:
        """Where warm visits go: ``site_url``, else the public listener (a wildcard
        bind reached on loopback; https with ``tls_cert``, as its visitors use it)."""
        if self.site_url:
            return self.site_url
        host, _, port = self.listen.rpartition(":")
        host = {"0.0.0.0": "127.0.0.1", "::": "[::1]", "[::]": "[::1]"}.get(host, host)
        scheme = "https" if self.tls_cert is not None else "http"
        return (f"{scheme}://{normalise_host(scheme, f'{host}:{port}')}",)

    @property
    def warm_jobs(self) -> int:
        """Warm jobs this process runs at once: ``warm_workers``, by default as many as
        the warm visits the throttle lets go to the origin (fewer would cap the warmer
        below ``warm_max_concurrency`` however fast the origin answers)."""
        return self.warm_max_concurrency if self.warm_workers is None else self.warm_workers

    @property
    def sqlite_path(self) -> Path:
        """The embedded database file."""
        return self.data_dir / "stoker.db"

    @property
    def cache_path(self) -> Path:
        """The cache tier's file (the purge bus of the processes sharing it is there too)."""
        return self.data_dir / "cache.db"

    @property
    def aliases(self) -> tuple[str, ...]:
        """The hosts that stand for the site: ``site_aliases`` and ``origin_host`` (the Host
        the origin knows itself by, which its links, sitemaps and purge clients name)."""
        extra = (self.origin_host,) if self.origin_host else ()
        return tuple(dict.fromkeys((*self.site_aliases, *extra)))

    @property
    def site_hosts(self) -> SiteHosts:
        """The site's own hosts (``site_url``, ``purge_hosts``, the listener; never
        ``origin_host``) and its :attr:`aliases`: what purges cover."""
        return SiteHosts.of(site_urls=self.site_url, purge_hosts=self.purge_hosts,
                            listen=self.listen, aliases=self.aliases)


FIELDS: dict[str, Setting] = {each.name: each.metadata[_SPEC] for each in fields(Settings)
                              if _SPEC in each.metadata}
"""Every setting by name, in declaration order."""
