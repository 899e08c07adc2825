"""What text Atlas can store and write out again, checked in one place wherever user text
enters (the JSON body parser, a note's front matter, MCP tool arguments).

Two characters are refused: NUL (U+0000: PostgreSQL's text and jsonb cannot hold it) and a lone
UTF-16 surrogate (U+D800-U+DFFF, as a ``\\ud800`` escape in JSON or YAML spells it): it is not
a character, no UTF-8 encoder takes it, so anything stored with one could never be written out
again (a response, the user's export). ``escape_surrogates`` is the other half: text written
out never fails on one that is already stored.
"""

from __future__ import annotations

import re
from typing import Literal

SURROGATE = re.compile("[\ud800-\udfff]")
Problem = Literal["nul_character", "surrogate"]
PROBLEMS: dict[Problem, str] = {
    "nul_character": "contains a NUL character (\\u0000); remove it",
    "surrogate": (
        "contains a lone UTF-16 surrogate (a \\ud800-\\udfff escape that is not half of a "
        "pair); write the character itself"
    ),
}


def text_problem(text: str) -> Problem | None:
    """Why ``text`` cannot be stored (``nul_character``, ``surrogate``), or None."""
    if "\x00" in text:
        return "nul_character"
    if SURROGATE.search(text):
        return "surrogate"
    return None


def join_surrogate_pairs(text: str) -> str:
    """``text`` with each escaped surrogate *pair* (``"\\ud83d\\ude00"``, how JSON and YAML
    escapes spell a character past U+FFFF) made the one character it spells; lone halves are
    left for ``text_problem`` to refuse."""
    if not SURROGATE.search(text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def escape_surrogates(json_text: str) -> str:
    """JSON text whose lone surrogates (inside its strings) are written as ``\\udXXX`` escapes:
    still the same JSON value, and now encodable as UTF-8."""
    return SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", json_text)
