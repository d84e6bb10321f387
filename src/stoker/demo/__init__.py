"""A deliberately slow demo website, used by ``stoker demo`` and by integration tests.

The app lives in :mod:`stoker.demo.origin` (``make_demo_app``); this package
imports nothing eagerly so ``python -m stoker.demo.origin`` runs cleanly.
"""

from __future__ import annotations
