"""No private response is ever served to another client, on real servers (every case in
process: ``tests/core/test_privacy.py``)."""

from __future__ import annotations

from tests.core.test_privacy import (  # noqa: F401  (again, on real servers)
    test_private_response_is_never_served_to_a_second_client,
)
