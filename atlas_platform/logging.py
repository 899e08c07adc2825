"""Structured (JSON lines) logging with the request id on every record."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

from atlas_platform.context import current_request_id

_STANDARD = set(logging.makeLogRecord({}).__dict__) | {"message", "asctime", "request_id"}


class RequestIdFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = current_request_id()
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, request id, extras."""

    def format(self, record: logging.LogRecord) -> str:
        payload: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, tz=UTC).isoformat(),
            "level": record.levelname,
            "logger": record.name,
            "msg": record.getMessage(),
            "request_id": getattr(record, "request_id", "") or None,
        }
        payload.update(
            {
                k: v
                for k, v in record.__dict__.items()
                if k not in _STANDARD and not k.startswith("_")
            }
        )
        if record.exc_info:
            payload["exc"] = self.formatException(record.exc_info)
        return json.dumps(payload, default=str)


# Servers' access-log loggers: uvicorn's (also what gunicorn's uvicorn workers write through).
ACCESS_LOGGERS = ("uvicorn.access",)
PRIVATE_QUERY_PREFIXES = ("/admin/",)  # operator pages: a search box's text rides in the URL


class RefusalWithoutTraceback(logging.Filter):
    """``django.request``'s line for a refused request (403: a role without the right, a
    CSRF failure) keeps its one line and drops the traceback: a refusal is the product
    working, not an error to debug. Other statuses are untouched."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "status_code", None) == 403:
            record.exc_info, record.exc_text = None, None
        return True


class AccessLogRedaction(logging.Filter):
    """Drop the query string of operator pages from access-log lines: the memory inspector's
    recall text (``?q=``), a changelist search or filter value would otherwise be written to
    the log verbatim. The path, method and status stay."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) >= 3 and isinstance(args[2], str):
            path, sep, _query = args[2].partition("?")
            if sep and path.startswith(PRIVATE_QUERY_PREFIXES):
                record.args = (*args[:2], f"{path}?[redacted]", *args[3:])
        return True


def access_log_redaction_install() -> None:
    """Add the redaction to the access loggers (once; the served app calls it at import)."""
    for name in ACCESS_LOGGERS:
        target = logging.getLogger(name)
        if not any(isinstance(f, AccessLogRedaction) for f in target.filters):
            target.addFilter(AccessLogRedaction())
