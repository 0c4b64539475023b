"""Log lines: plain text by default, one JSON object per line with ``AGENTLOFT_LOG_FORMAT=json``.

``agentloft serve`` hands ``log_config`` to uvicorn, which applies it in every worker. Each record gets
the id of the request (or of the turn's starting request) it was written for (``requestId``, ``-``
outside one), and our per-request line (``core.requests``) replaces uvicorn's access log, which knew
neither the route template, nor the user, nor the id.

A JSON line holds ``time``, ``level``, ``logger``, ``message``, ``requestId``, whatever the caller passed
in ``extra`` (the request line's ``method``, ``route``, ``status``, ``durationMs``, ``userId``; a turn's
``agent``, ``model``, ``outcome``...) and ``exc`` for a traceback. A small formatter rather than a library:
these few fields need no dependency.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any, Literal

from agentloft.core.requests import current_request_id

LogFormat = Literal["text", "json"]

# The attributes every LogRecord has: what is not among them came in ``extra``.
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime", "taskName"}
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s [%(requestId)s] %(message)s"


class RequestIdFilter(logging.Filter):
    """Stamp each record with the current request id, so every line of a request can be found by it."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "requestId"):
            record.requestId = current_request_id() or "-"
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per record, on one line."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_"):
                line[key] = value
        if record.exc_info:
            line["exc"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str, ensure_ascii=False)


def log_config(fmt: LogFormat, level: str) -> dict[str, Any]:
    """The ``logging.config.dictConfig`` of a server: our handler on the root logger and on uvicorn's
    own (which otherwise keep their own format), uvicorn's access log off."""
    formatter: dict[str, Any] = ({"()": JsonFormatter} if fmt == "json"
                                 else {"format": TEXT_FORMAT})
    level = level.upper()
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"request_id": {"()": RequestIdFilter}},
        "formatters": {"agentloft": formatter},
        "handlers": {"stderr": {"class": "logging.StreamHandler", "stream": "ext://sys.stderr",
                                "formatter": "agentloft", "filters": ["request_id"]}},
        "root": {"handlers": ["stderr"], "level": level},
        "loggers": {
            "uvicorn": {"handlers": [], "level": level, "propagate": True},
            "uvicorn.error": {"handlers": [], "level": level, "propagate": True},
            "uvicorn.access": {"handlers": [], "level": "WARNING", "propagate": False},
        },
    }
