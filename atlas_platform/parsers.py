"""Request parsers for the REST API (``DEFAULT_PARSER_CLASSES``).

Kept apart from ``atlas_platform.api``: DRF reads this setting while ``rest_framework.views``
is being imported, so the parser's module must not import the views in turn.
"""

from __future__ import annotations

from typing import Any

from rest_framework import exceptions as drf_exceptions
from rest_framework.parsers import JSONParser


class StrictJSONParser(JSONParser):
    """JSON bodies whose strings hold no NUL character (U+0000): PostgreSQL cannot store one in
    text or JSON, and no memory needs it, so it is refused up front with a 400 naming the field
    instead of failing half-way through a write."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:  # the JSON decoder's own stack, past Python's recursion limit
            data = None
            deep = True
        else:
            deep = too_deep(data)
        if deep:
            raise drf_exceptions.ParseError(
                f"The JSON body nests deeper than {MAX_BODY_DEPTH} levels.", code="too_deep"
            )
        where = _nul_path(data, "body")
        if where is not None:
            raise drf_exceptions.ParseError(
                f"{where} contains a NUL character (\\u0000); remove it.", code="nul_character"
            )
        return data


MAX_BODY_DEPTH = 64  # far past any request's shape; metadata has its own, smaller limit


def too_deep(value: Any, limit: int = MAX_BODY_DEPTH) -> bool:
    """Whether ``value`` nests objects / arrays deeper than ``limit`` (a loop, not recursion:
    a hostile depth must not cost the stack)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if not isinstance(node, (dict, list)):
            continue
        if depth > limit:
            return True
        children = node.values() if isinstance(node, dict) else node
        stack.extend((c, depth + 1) for c in children)
    return False


def _nul_path(value: Any, path: str) -> str | None:
    """The path of the first string (key or value) holding a NUL character, or None."""
    if isinstance(value, str):
        return path if "\x00" in value else None
    if isinstance(value, dict):
        for key, item in value.items():
            if "\x00" in key:
                return f"{path} key {key!r}"
            found = _nul_path(item, f"{path}.{key}")
            if found:
                return found
    if isinstance(value, list):
        for n, item in enumerate(value):
            found = _nul_path(item, f"{path}[{n}]")
            if found:
                return found
    return None
