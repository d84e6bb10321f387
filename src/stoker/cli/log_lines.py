"""How Stoker's own log lines look: text for a terminal, or JSON for log shippers.

Invariants: with ``json`` every record is one line holding one JSON object with
``time`` (ISO 8601, UTC, milliseconds), ``level``, ``logger`` and ``message`` (the
formatted message), plus ``error`` (the traceback) when the record carries an
exception; nothing else is written to the stream.  The access log is apart
(``access_log_format``).
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class JsonFormatter(logging.Formatter):
    """One JSON object per record (see the module invariants)."""

    def format(self, record: logging.LogRecord) -> str:
        line = {"time": datetime.fromtimestamp(record.created, UTC).isoformat(
                    timespec="milliseconds").replace("+00:00", "Z"),
                "level": record.levelname, "logger": record.name,
                "message": record.getMessage()}
        if record.exc_info:
            line["error"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False)


def setup_logging(verbose: bool, log_format: str = "text") -> None:
    """Log at INFO (DEBUG when ``verbose``) to standard error, as ``log_format`` says."""
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter() if log_format == "json" else
                         logging.Formatter(TEXT_FORMAT))
    logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO, handlers=[handler])
