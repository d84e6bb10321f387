"""A deliberately slow demo website, used by ``stoker demo`` and by integration tests.

The app lives in :mod:`stoker.demo.origin` (``make_demo_app``); ``stoker demo`` serves it
(``--origin-listen``); this package imports nothing eagerly.
"""

from __future__ import annotations
