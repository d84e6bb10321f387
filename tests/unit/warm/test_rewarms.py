"""Purged URLs recorded for the re-warm behind the purge call (stoker.warm.rewarms)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from stoker.warm.rewarms import RETRY_FIRST, RETRY_MOST, RewarmRecorder


class Pending:
    """A pending store that records what it was given; the first ``failures`` adds
    raise; ``gate``, when set, holds every add until it opens."""

    def __init__(self, failures: int = 0) -> None:
        self.added: list[tuple[list[str], float]] = []
        self.failures = failures
        self.gate: asyncio.Event | None = None

    async def add(self, urls: Sequence[str], now: float) -> int:
        if self.gate is not None:
            await self.gate.wait()
        if self.failures:
            self.failures -= 1
            raise OSError("injected: the pending store is down")
        self.added.append((list(urls), now))
        return len(urls)

    async def take(self, limit: int = 0) -> list[str]:
        raise AssertionError("not used")

    async def count(self) -> int:
        return sum(len(urls) for urls, _ in self.added)

    async def aclose(self) -> None:
        return None


class Recorded:
    """The recorder under test, its store, the arms it made (after how many writes, for
    how many URLs) and the retry waits it asked for."""

    def __init__(self, pending: Pending) -> None:
        self.pending = pending
        self.arms: list[tuple[int, int]] = []
        self.waits: list[float] = []
        self.recorder = RewarmRecorder(pending, self.arm, sleep=self.sleep)

    async def arm(self, count: int) -> None:
        self.arms.append((len(self.pending.added), count))

    async def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)


async def test_purges_are_recorded_in_order_with_their_times_each_followed_by_an_arm() -> None:
    pending = Pending()
    pending.gate = asyncio.Event()
    recorded = Recorded(pending)
    recorded.recorder.add(["https://a/1", "https://a/2"], 10.0)  # returns without waiting
    recorded.recorder.add([], 11.0)  # nothing to record
    recorded.recorder.add(["https://a/3"], 12.0)
    assert recorded.recorder.waiting() == 3 and pending.added == []
    pending.gate.set()
    await recorded.recorder.settle()
    assert pending.added == [(["https://a/1", "https://a/2"], 10.0), (["https://a/3"], 12.0)]
    assert recorded.arms == [(1, 2), (2, 1)]  # each purge's own count: 2 URLs, then 1
    assert recorded.recorder.waiting() == 0


async def test_a_purge_added_while_one_is_written_follows_it() -> None:
    pending = Pending()
    pending.gate = asyncio.Event()
    recorded = Recorded(pending)
    recorded.recorder.add(["https://a/1"], 1.0)
    await asyncio.sleep(0)  # the writer is now waiting at the store
    recorded.recorder.add(["https://a/2"], 2.0)
    pending.gate.set()
    await recorded.recorder.settle()
    assert pending.added == [(["https://a/1"], 1.0), (["https://a/2"], 2.0)]
    recorded.recorder.add(["https://a/3"], 3.0)  # after the writer ended: a new one
    await recorded.recorder.settle()
    assert [now for _, now in pending.added] == [1.0, 2.0, 3.0]


async def test_a_failing_store_is_retried_with_doubling_waits_and_nothing_is_dropped(
        caplog: pytest.LogCaptureFixture) -> None:
    pending = Pending(failures=7)
    recorded = Recorded(pending)
    recorded.recorder.add(["https://a/1"], 1.0)
    recorded.recorder.add(["https://a/2"], 2.0)
    await recorded.recorder.settle()
    assert pending.added == [(["https://a/1"], 1.0), (["https://a/2"], 2.0)]
    assert recorded.waits == [RETRY_FIRST * 2 ** n for n in range(5)] + [RETRY_MOST] * 2
    assert recorded.arms == [(1, 1), (2, 1)]
    assert caplog.text.count("could not record 1 purged URLs for their re-warm") == 7


async def test_close_gives_up_on_a_store_that_stays_down_and_says_how_many_urls(
        caplog: pytest.LogCaptureFixture) -> None:
    pending = Pending(failures=10**9)
    recorder = RewarmRecorder(pending, Recorded(pending).arm)  # real sleeps
    recorder.add(["https://a/1", "https://a/2"], 1.0)
    await recorder.close(timeout=0.05)
    assert pending.added == []
    assert "shutting down with 2 purged URLs not recorded" in caplog.text


async def test_close_with_nothing_left_logs_nothing(caplog: pytest.LogCaptureFixture) -> None:
    pending = Pending()
    recorded = Recorded(pending)
    recorded.recorder.add(["https://a/1"], 1.0)
    await recorded.recorder.close(timeout=30)
    await recorded.recorder.close(timeout=30)  # twice: nothing more to do
    assert pending.added == [(["https://a/1"], 1.0)]
    assert "not recorded" not in caplog.text
