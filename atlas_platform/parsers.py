"""Request parsers for the REST API (``DEFAULT_PARSER_CLASSES``).

Kept apart from ``atlas_platform.api``: DRF reads this setting while ``rest_framework.views``
is being imported, so the parser's module must not import the views in turn.
"""

from __future__ import annotations

from typing import Any

from rest_framework import exceptions as drf_exceptions
from rest_framework.parsers import JSONParser

from atlas_platform.text import PROBLEMS, Problem, escape_surrogates, text_problem


class StrictJSONParser(JSONParser):
    """JSON bodies whose strings hold no NUL character (U+0000: PostgreSQL cannot store one in
    text or JSON) and no lone surrogate (a ``\\ud800`` escape that is not half of a pair: no
    UTF-8 encoder takes it, so it could never be written out again; ``atlas_platform.text``).
    No memory needs either, so each is refused up front with a 400 naming the field instead of
    failing half-way through a write, or later, in every read and export of what was stored."""

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
        found = _bad_text(data, "body")
        if found is not None:
            where, problem = found
            raise drf_exceptions.ParseError(f"{where} {PROBLEMS[problem]}.", code=problem)
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


def _bad_text(value: Any, path: str) -> tuple[str, Problem] | None:
    """The path of the first string (key or value) that cannot be stored, and why; or None."""
    if isinstance(value, str):
        problem = text_problem(value)
        return (path, problem) if problem else None
    if isinstance(value, dict):
        for key, item in value.items():
            problem = text_problem(key)
            if problem:
                return f"{path} key {escape_surrogates(repr(key))}", problem
            found = _bad_text(item, f"{path}.{escape_surrogates(key)}")
            if found:
                return found
    if isinstance(value, list):
        for n, item in enumerate(value):
            found = _bad_text(item, f"{path}[{n}]")
            if found:
                return found
    return None
