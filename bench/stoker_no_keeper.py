"""``python -m stoker`` with :class:`stoker.server.heap.HeapKeeper` taken out, for
``bench/soak.py --no-keeper``.

``run_async`` freezes the start-up heap (``freeze_heap``) and installs the keeper as
always; the coroutine it runs first removes the keeper from ``gc.callbacks``, so the
process never freezes after a full collection (nor unfreezes).  The start-up freeze
stays, as in ``stoker serve``.  ``/api/status`` then reports ``"freezes": null``.
Run from the repository root with the worktree's ``src`` on ``PYTHONPATH``:

    python -m bench.stoker_no_keeper serve --config stoker.toml …
"""

from __future__ import annotations

import gc
from collections.abc import Coroutine
from typing import Any

from stoker.cli import common as cli_common
from stoker.server.heap import HeapKeeper

run_async = cli_common.run_async


async def without_keeper(main: Coroutine[Any, Any, None]) -> None:
    """Remove the keeper ``run_async`` installed, then run ``main``."""
    gc.callbacks[:] = [each for each in gc.callbacks if not isinstance(each, HeapKeeper)]
    await main


def run_without_keeper(main: Coroutine[Any, Any, None]) -> None:
    run_async(without_keeper(main))


if __name__ == "__main__":
    from stoker.cli.main import main as stoker_main

    cli_common.run_async = run_without_keeper
    stoker_main()
