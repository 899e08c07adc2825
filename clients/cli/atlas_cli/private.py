"""Text the developer marks private never leaves the machine: whatever stands between
``<private>`` and ``</private>`` (any case, spaces allowed inside the brackets) is removed
before anything is sent, with the tags. An opening tag without its closing tag hides the rest
of the text (failing closed); a stray closing tag is dropped.

``Client.call`` redacts every request body (writes, spooled or not, and reads such as a
recall query), so no command or hook can forget it; memory-file sync and note indexing also
strip before hashing, so what is compared is what was sent."""

from __future__ import annotations

import re
from typing import Any

_SPAN = re.compile(r"<\s*private\s*>.*?(?:<\s*/\s*private\s*>|\Z)", re.IGNORECASE | re.DOTALL)
_CLOSE = re.compile(r"<\s*/\s*private\s*>", re.IGNORECASE)


def strip_private(text: str) -> str:
    """``text`` without its private spans (and their tags)."""
    if "<" not in text:
        return text
    return _CLOSE.sub("", _SPAN.sub("", text))


def has_private(text: str) -> bool:
    return strip_private(text) != text


def redact(value: Any) -> Any:
    """``value`` (a JSON document) with every string's private spans removed."""
    if isinstance(value, str):
        return strip_private(value)
    if isinstance(value, dict):
        return {key: redact(item) for key, item in value.items()}
    if isinstance(value, list):
        return [redact(item) for item in value]
    return value
