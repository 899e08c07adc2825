"""A note's front matter: the YAML between its ``---`` lines, loaded safely and checked value by
value, so that everything the YAML loader can produce is either kept as written or refused with
a 400 naming the field.

Limits: 16 KiB of YAML, 20 levels of nesting (checked on each parser event as the composer
takes it, so its recursion stops at the limit), no aliases (no billion laughs). Values:
strings without NUL or lone surrogates (an escaped surrogate *pair* becomes the character it
spells), integers within 64 bits, finite floats (``.inf`` / ``.nan`` are refused: JSON cannot
hold them), dates and times as ISO text, a timestamp that is no real moment (``0000-00-00``)
and ``!!binary`` as the text written, sets as sorted lists. A scalar a standard tag cannot read
(``!!int 0xZZ``) is a YAML error at its line. Quoting a value always keeps it as text.
"""

from __future__ import annotations

import math
from datetime import date, datetime
from typing import Any, NoReturn

import yaml
from yaml.constructor import ConstructorError
from yaml.nodes import Node, ScalarNode

from atlas_platform.exceptions import ValidationError
from atlas_platform.text import PROBLEMS, escape_surrogates, join_surrogate_pairs, text_problem

MAX_FRONT_MATTER = 16_384
MAX_DEPTH = 20
INT_RANGE = (-(2**63), 2**63 - 1)
_BIG = "integer_too_large"
_NOT_READABLE = (ValueError, TypeError, KeyError, IndexError, AttributeError, OverflowError)


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader that refuses an alias and nesting past ``MAX_DEPTH`` as the
    composer takes each event (one pass over the text: the composer's recursion never goes
    deeper than the limit), and reads a scalar its standard tag cannot read as a
    ``ConstructorError`` at the node's line (PyYAML lets ``ValueError`` and the like escape)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.atlas_depth = 0
        self.atlas_top_key = ""
        self.atlas_want_key = False

    def get_event(self) -> Any:
        event = super().get_event()  # type: ignore[no-untyped-call]
        if isinstance(event, yaml.AliasEvent):
            refuse(self.atlas_top_key, "must not use YAML aliases", "alias")
        if self.atlas_depth == 1 and isinstance(event, yaml.NodeEvent):
            if self.atlas_want_key:
                self.atlas_top_key = event.value if isinstance(event, yaml.ScalarEvent) else "?"
            self.atlas_want_key = not self.atlas_want_key
        if isinstance(event, yaml.CollectionStartEvent):
            self.atlas_depth += 1
            # The root mapping: a key comes next.
            self.atlas_want_key = self.atlas_want_key or self.atlas_depth == 1
            if self.atlas_depth > MAX_DEPTH:
                refuse(self.atlas_top_key, f"is nested deeper than {MAX_DEPTH} levels", "too_deep")
        elif isinstance(event, yaml.CollectionEndEvent):
            self.atlas_depth -= 1
        return event

    def construct_object(self, node: Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep)
        except _NOT_READABLE as exc:
            raise ConstructorError(
                None, None, f"cannot read this value as {node.tag}", node.start_mark
            ) from exc


def _as_written(loader: _Loader, node: ScalarNode) -> str:
    return str(loader.construct_scalar(node))


def _timestamp(loader: _Loader, node: ScalarNode) -> Any:
    """A date or time; one that is no real moment (``0000-00-00``, ``2024-02-30``, an offset
    of 99 hours) is the text as written."""
    try:
        return loader.construct_yaml_timestamp(node)
    except _NOT_READABLE:
        return _as_written(loader, node)


class _TooLong:
    """An integer written with more digits than Python reads (4,300) or than 64 bits need:
    refused by ``_plain``, by the field's name."""


_TOO_LONG = _TooLong()


def _int(loader: _Loader, node: ScalarNode) -> Any:
    digits = str(node.value).lstrip("+-").replace("_", "")
    if len(digits) > 70:  # 0b + 64 binary digits is the longest spelling that still fits
        return _TOO_LONG
    return loader.construct_yaml_int(node)


_Loader.add_constructor("tag:yaml.org,2002:int", _int)
_Loader.add_constructor("tag:yaml.org,2002:timestamp", _timestamp)
_Loader.add_constructor("tag:yaml.org,2002:binary", _as_written)


def load_front_matter(raw: str) -> dict[str, Any]:
    """The front matter ``raw`` (the YAML text between the ``---`` lines) as JSON values."""
    if len(raw) > MAX_FRONT_MATTER:
        refuse("", f"is longer than {MAX_FRONT_MATTER} characters", "too_long")
    loader = None
    try:
        loader = _Loader(raw)  # its reader refuses a control character at once
        data = loader.get_single_data()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 2})" if mark is not None else ""
        raise ValidationError(
            f"front matter is not valid YAML{where}.",
            code="bad_front_matter",
            field="front_matter",
            reason="not_yaml",
        ) from exc
    finally:
        if loader is not None:
            loader.dispose()
    if data is None:
        return {}
    if not isinstance(data, dict):
        refuse("", "must be a YAML mapping", "not_a_mapping")
    plain = _plain(data, "")
    assert isinstance(plain, dict)  # noqa: S101 - _plain keeps a mapping a mapping
    return plain


def _plain(value: Any, where: str) -> Any:
    """A loaded YAML value as a JSON value, or a refusal naming ``where``."""
    if value is None or isinstance(value, bool):
        return value
    if _past_64_bits(value):
        refuse(where, "is an integer past 64 bits; quote it to keep it as text", _BIG)
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            refuse(where, "is not a finite number; quote it to keep it as text", "not_finite")
        return value
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            name = _key(key, where)
            out[name] = _plain(item, f"{where}.{name}" if where else name)
        return out
    if isinstance(value, set | frozenset):
        return sorted((_plain(v, where) for v in value), key=str)
    if isinstance(value, list | tuple):
        return [_plain(v, f"{where}[{n}]") for n, v in enumerate(value)]
    return _text(str(value), where)


def _past_64_bits(value: Any) -> bool:
    if isinstance(value, _TooLong):
        return True
    return isinstance(value, int) and not INT_RANGE[0] <= value <= INT_RANGE[1]


def _key(key: Any, where: str) -> str:
    """A mapping key as text (YAML also allows numbers, dates, null and booleans as keys)."""
    if _past_64_bits(key):
        refuse(where, "has a key that is an integer past 64 bits", _BIG)
    text = join_surrogate_pairs(key if isinstance(key, str) else str(key))
    problem = text_problem(text)
    if problem is not None:
        refuse(where, f"has a key that {PROBLEMS[problem]}", problem)
    return text


def _text(value: str, where: str) -> str:
    text = join_surrogate_pairs(value)
    problem = text_problem(text)
    if problem is not None:
        refuse(where, PROBLEMS[problem], problem)
    return text


def refuse(where: str, problem: str, reason: str) -> NoReturn:
    """A 400 naming the field (``where``: its path, ``tags[1]``, ``a.b``; "" the whole front
    matter) and why (``reason``, machine-readable)."""
    name = f"front matter {where!r}" if where else "front matter"  # repr escapes a surrogate
    raise ValidationError(
        f"{name} {problem}.",
        code="bad_front_matter",
        # a key as written may hold a lone surrogate: the answer must still encode
        field=f"front_matter.{escape_surrogates(where)}" if where else "front_matter",
        reason=reason,
    )
