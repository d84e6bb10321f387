"""The cold-trace benchmark's site, visitor trace and edit schedule (pure, seeded).

Everything here is a function of its arguments: the same seed gives the same site
layout, the same trace and the same events, so every system replays exactly the same
requests and purges.

- The site has ``pages`` pages: the home page ``/``, list pages ``/list/<j>`` and item
  pages ``/item/<i>``; item ``i`` appears on list ``i // per_list``.  Every page is in
  the sitemap.
- Popularity is Zipf(``s``) over a seeded order of the pages (the home page first):
  the page of rank ``r`` is asked for with weight ``1 / r**s``.
- The trace is a Poisson stream of ``rate`` requests a second; each is a bot's with
  probability ``bot_share``.  Human visitors pick a page by popularity and one of
  :data:`HEADS` (browser request heads with different ``Accept-Encoding`` forms); bots
  walk the sitemap in order, one URL after the other, wrapping around.
- Events: one edit every ``1 / edits_per_s`` seconds (from ``1 / edits_per_s`` on) of
  an item drawn by popularity (a popular page is edited more often), and a deploy every
  ``deploy_every`` seconds.  Time 0 is the start of the measured phase.
"""

from __future__ import annotations

import bisect
import itertools
import random
from collections.abc import Iterator
from dataclasses import dataclass

HEADS: tuple[tuple[str, str], ...] = (
    ("Mozilla/5.0 (X11; Linux x86_64) Chrome/131.0", "gzip, deflate, br, zstd"),
    ("Mozilla/5.0 (Windows NT 10.0) Chrome/120.0", "gzip, deflate, br"),
    ("Mozilla/5.0 (Macintosh) Safari/605.1.15", "gzip, deflate, br"),
    ("Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Firefox/133.0", "gzip, deflate, br, zstd"),
    ("Mozilla/5.0 (iPhone) Mobile Safari/604.1", "br, gzip, deflate"),
    ("curl/8.5.0", ""),
)
"""Human visitors' (``User-Agent``, ``Accept-Encoding``) pairs ("" sends none)."""
BOT_HEAD = ("Mozilla/5.0 (compatible; Googlebot/2.1)", "gzip, deflate, br")


@dataclass(frozen=True)
class Site:
    """``pages`` pages: ``/``, ``lists`` list pages and the items, ``per_list`` a list."""

    pages: int
    per_list: int = 50

    def __post_init__(self) -> None:
        if self.pages < 3 or self.per_list < 1:
            raise ValueError("a site needs at least 3 pages and 1 item per list")

    @property
    def lists(self) -> int:
        return -(-(self.pages - 1) // (self.per_list + 1))

    @property
    def items(self) -> int:
        return self.pages - 1 - self.lists

    def list_of(self, item: int) -> int:
        return item // self.per_list

    def items_of(self, list_index: int) -> range:
        start = list_index * self.per_list
        return range(start, min(self.items, start + self.per_list))

    def paths(self) -> list[str]:
        """Every page, in sitemap order."""
        return (["/"] + [f"/list/{j}" for j in range(self.lists)]
                + [f"/item/{i}" for i in range(self.items)])  # fmt: skip


class Zipf:
    """Draws ranks 0..n-1 with weight ``1 / (rank + 1) ** s``."""

    def __init__(self, n: int, s: float) -> None:
        self.cumulative = list(itertools.accumulate(1 / (r + 1) ** s for r in range(n)))

    def draw(self, rng: random.Random) -> int:
        point = rng.random() * self.cumulative[-1]
        return min(bisect.bisect_right(self.cumulative, point), len(self.cumulative) - 1)


def popularity(site: Site, seed: int) -> list[str]:
    """The site's pages, most popular first: the home page, then a seeded shuffle."""
    rest = site.paths()[1:]
    random.Random(seed).shuffle(rest)
    return ["/", *rest]


@dataclass(frozen=True)
class Request:
    at: float  # seconds from the trace's start
    path: str
    head: int  # index in HEADS, -1 for a bot
    bot: bool


def trace(site: Site, *, seed: int, rate: float, duration: float, bot_share: float,
          s: float = 1.0, start: float = 0.0) -> list[Request]:
    """The requests of ``duration`` seconds, their times offset by ``start``."""
    rng = random.Random(seed)
    order, zipf, sitemap = popularity(site, seed), Zipf(site.pages, s), site.paths()
    walk = itertools.cycle(sitemap)
    requests: list[Request] = []
    at = rng.expovariate(rate)
    while at < duration:
        if rng.random() < bot_share:
            requests.append(Request(start + at, next(walk), -1, True))
        else:
            path = order[zipf.draw(rng)]
            requests.append(Request(start + at, path, rng.randrange(len(HEADS)), False))
        at += rng.expovariate(rate)
    return requests


@dataclass(frozen=True)
class Event:
    at: float
    kind: str  # "edit" or "deploy"
    item: int = -1  # the edited item (edits)


def events(site: Site, *, seed: int, duration: float, edits_per_s: float,
           deploy_every: float, s: float = 1.0) -> list[Event]:
    """Edits and deploys of ``duration`` seconds, in time order (a deploy first on a tie)."""
    rng = random.Random(seed + 1)
    order, zipf = popularity(site, seed), Zipf(site.pages, s)
    found: list[Event] = []
    for at in _ticks(1 / edits_per_s if edits_per_s > 0 else 0, duration):
        found.append(Event(at, "edit", _edited_item(order, zipf, rng)))
    found += [Event(at, "deploy") for at in _ticks(deploy_every, duration)]
    return sorted(found, key=lambda event: (event.at, event.kind != "deploy"))


def _ticks(every: float, duration: float) -> Iterator[float]:
    if every <= 0:
        return
    for n in itertools.count(1):
        if n * every >= duration:
            return
        yield n * every


def _edited_item(order: list[str], zipf: Zipf, rng: random.Random) -> int:
    """An item drawn by popularity (pages that are not items are drawn again)."""
    while True:
        path = order[zipf.draw(rng)]
        if path.startswith("/item/"):
            return int(path.removeprefix("/item/"))
