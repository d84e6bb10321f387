"""The purge-events example of docs/purging.md runs as printed."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.integration.warm_site import SRC

PURGING = SRC.parent / "docs" / "purging.md"


def example() -> str:
    section = PURGING.read_text().split("## Purge events (Python)", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match is not None, "docs/purging.md's purge-events section lost its example"
    return match.group(1)


def test_the_purge_events_example_runs(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STOKER_")}
    env.update(PYTHONPATH=str(SRC), STOKER_ORIGIN="http://127.0.0.1:9",
               STOKER_DATA_DIR=str(tmp_path / "data"))
    result = subprocess.run([sys.executable, "-c", example()], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "purged tags: 0 URLs\n"
