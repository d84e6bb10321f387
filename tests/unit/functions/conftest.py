"""A runtime for the function cache's tests: a Stoker on SQLite in ``tmp_path``, no
origin, a fake clock that moves only when told to."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from stoker.app.stoker import Stoker
from stoker.clock import FakeClock
from stoker.config.settings import settings_from
from stoker.functions.runtime import NoOrigin


@dataclass
class Opened:
    stoker: Stoker
    clock: FakeClock

    async def __call__(self) -> Stoker:
        return self.stoker


@pytest.fixture
async def opened(tmp_path: Path) -> AsyncIterator[Opened]:
    clock = FakeClock(auto_advance=False)
    stoker = await Stoker.open(settings_from({"data_dir": str(tmp_path)}), clock=clock,
                               origin=NoOrigin(), evict_loop=False)
    try:
        yield Opened(stoker, clock)
    finally:
        await stoker.close()
