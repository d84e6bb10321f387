"""``/readyz``'s verdict and its write probe (faults injected in its one writer), which
admin paths the guard checks, the members listed."""

from __future__ import annotations

import asyncio
import errno
import os
import stat
import threading
from pathlib import Path

import pytest

from stoker.admin import health
from stoker.admin.guard import guarded
from stoker.admin.health import (
    NOT_YET,
    OK,
    PROBE_EVERY,
    PROBE_FILE,
    WriteProbe,
    verdict,
    write_probe_file,
)
from stoker.admin.metrics import member_summary
from stoker.admin.status import members_json
from stoker.clock import FakeClock
from stoker.purge.bus import Member


def test_ready_only_when_every_check_is_ok() -> None:
    assert verdict({"l2": OK, "ticker": OK}) == (
        200, {"ready": True, "checks": {"l2": OK, "ticker": OK}})
    status, body = verdict({"l2": OK, "queue": "ConnectionError: refused"})
    assert status == 503 and body["ready"] is False
    assert body["checks"]["queue"] == "ConnectionError: refused"


def test_the_api_and_the_metrics_are_guarded_the_probes_are_not() -> None:
    assert guarded("/api") and guarded("/api/purge") and guarded("/metrics")
    assert not guarded("/healthz") and not guarded("/readyz") and not guarded("/apiary")


def test_members_are_live_while_heard_of_within_the_node_timeout() -> None:
    listed = members_json([Member("n/0", 7, 100.0), Member("n/1", 5, 80.0)], now=105.0,
                          node_timeout=10.0)
    said_nothing = member_summary(None)
    assert listed == [{"name": "n/0", "confirmed": 7, "seen_at": 100.0, "live": True,
                       **said_nothing},
                      {"name": "n/1", "confirmed": 5, "seen_at": 80.0, "live": False,
                       **said_nothing}]


class Disk:
    """The probe's writer with a fault to inject: ``fault`` raised while set; ``hold``
    keeps a write from returning until set."""

    def __init__(self) -> None:
        self.writes = 0
        self.fault: OSError | None = None
        self.hold = threading.Event()
        self.hold.set()

    def write(self, path: Path) -> None:
        self.writes += 1
        self.hold.wait(10)
        if self.fault is not None:
            raise self.fault


async def test_a_data_dir_that_refuses_writes_makes_readyz_fail_until_it_takes_them(
        tmp_path: Path) -> None:
    clock, disk = FakeClock(), Disk()
    probe = WriteProbe(tmp_path, clock, write=disk.write)
    assert await probe.result() == OK
    disk.fault = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    clock.advance(PROBE_EVERY)
    found = await probe.result()
    assert found == "data_dir refuses writes: OSError: [Errno 28] No space left on device"
    assert verdict({"l2": OK, "data_dir": found})[0] == 503
    disk.fault = None
    clock.advance(PROBE_EVERY)
    assert await probe.result() == OK


async def test_the_probe_writes_at_most_once_per_period_however_often_asked(
        tmp_path: Path) -> None:
    clock, disk = FakeClock(), Disk()
    probe = WriteProbe(tmp_path, clock, write=disk.write)
    found = await asyncio.gather(*(probe.result() for _ in range(50)))
    assert sorted(found) == sorted([OK] + [NOT_YET] * 49)  # asked at once: one write
    assert disk.writes == 1
    clock.advance(PROBE_EVERY - 0.1)
    await probe.result()
    assert disk.writes == 1
    clock.advance(0.1)
    await probe.result()
    assert disk.writes == 2


async def test_a_hung_write_fails_readyz_in_time_and_is_not_piled_on(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(health, "CHECK_TIMEOUT", 0.05)
    clock, disk = FakeClock(), Disk()
    probe = WriteProbe(tmp_path, clock, write=disk.write)
    disk.hold.clear()
    assert await probe.result() == "data_dir: no write returned within 0.05 s"
    clock.advance(PROBE_EVERY)
    assert await probe.result() == "data_dir: no write returned within 0.05 s"
    assert disk.writes == 1  # the hung write is still out: no second one
    disk.hold.set()
    while disk.writes == 1:  # once the hung write has returned, the next one is made
        await asyncio.sleep(0.01)
        clock.advance(PROBE_EVERY)
        assert await probe.result() in (OK, "data_dir: no write returned within 0.05 s")
    assert await probe.result() == OK


def test_the_real_writer_leaves_a_private_file(tmp_path: Path) -> None:
    write_probe_file(tmp_path / PROBE_FILE)
    assert (tmp_path / PROBE_FILE).read_bytes() == b"stoker readiness probe\n"
    assert stat.S_IMODE((tmp_path / PROBE_FILE).stat().st_mode) == 0o600
