"""Query understanding for recall: time expressions ("last March", "two weeks ago", "last
winter") turned into a time window relative to the recall's ``now``, and the words of a query
that the lexical legs search for (``lexical_terms``).

Deterministic and small on purpose: a handful of patterns over English phrases, no model. The
window is a *soft* preference (recall adds a time-filtered leg to the fusion, see
``memory.services.recall``); nothing outside it is dropped.
"""

from __future__ import annotations

import calendar
import re
import string
from dataclasses import dataclass
from datetime import datetime, timedelta

MONTHS = {name.lower(): n for n, name in enumerate(calendar.month_name) if name}
MONTHS.update({name.lower(): n for n, name in enumerate(calendar.month_abbr) if name})
MONTHS.pop("may", None)  # "may" is mostly the verb; the full month name is matched separately
MONTH_NAMES = "|".join(sorted((*MONTHS, "may"), key=len, reverse=True))
SEASONS = {"winter": 12, "spring": 3, "summer": 6, "autumn": 9, "fall": 9}  # first month
NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "a couple of": 2,
    "couple of": 2,
    "two": 2,
    "three": 3,
    "a few": 3,
    "few": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
}
NUMBER_WORDS = "|".join(sorted(map(re.escape, NUMBERS), key=len, reverse=True))
UNITS = {"day": 1.0, "week": 7.0, "month": 30.44, "year": 365.25}


@dataclass(frozen=True)
class TimeWindow:
    """``start <= timestamp <= end``; ``phrase`` is the words it was read from."""

    start: datetime
    end: datetime
    phrase: str


def _month_start(year: int, month: int, like: datetime) -> datetime:
    while month < 1:
        month, year = month + 12, year - 1
    while month > 12:
        month, year = month - 12, year + 1
    return like.replace(year=year, month=month, day=1, hour=0, minute=0, second=0, microsecond=0)


def _months(
    start_year: int, start_month: int, count: int, like: datetime
) -> tuple[datetime, datetime]:
    start = _month_start(start_year, start_month, like)
    end = _month_start(start_year, start_month + count, like) - timedelta(microseconds=1)
    return start, end


def _clip(start: datetime, end: datetime, now: datetime, phrase: str) -> TimeWindow | None:
    end = min(end, now)
    return TimeWindow(start, end, phrase) if start < end else None


def _named_month(month: int, qualifier: str, now: datetime) -> tuple[datetime, datetime]:
    """The latest such month that has begun ("last March" in July: this year's March; in
    March itself, "last March" means the previous year's)."""
    current = month == now.month and qualifier != "last"
    year = now.year if month < now.month or current else now.year - 1
    return _months(year, month, 1, now)


def _season(first_month: int, qualifier: str, now: datetime) -> tuple[datetime, datetime]:
    """The latest such season that has begun; "last" skips one in progress."""
    year = now.year if first_month <= now.month else now.year - 1
    start = _month_start(year, first_month, now)
    in_progress = start <= now < _month_start(year, first_month + 3, now)
    if qualifier == "last" and in_progress:
        year -= 1
    return _months(year, first_month, 3, now)


_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\b(yesterday|today|this morning|tonight|earlier today)\b"), "day"),
    (re.compile(rf"\b({NUMBER_WORDS}|\d+)\s+(day|week|month|year)s?\s+(?:ago|back)\b"), "ago"),
    (re.compile(r"\b(last|this|past|previous)\s+(week|weekend|month|year)\b"), "span"),
    (
        re.compile(r"\b(earlier this year|this year|start of the year|beginning of the year)\b"),
        "year",
    ),
    (re.compile(r"\b(recently|lately|the other day)\b"), "recent"),
    # A season needs a marker of a past one ("in summer" alone is usually a habit).
    (
        re.compile(rf"\b(last|this|past|early|late|back in the|back in)\s+({'|'.join(SEASONS)})\b"),
        "season",
    ),
    (
        re.compile(
            rf"\b(?:(last|this|in|back in|early|late|during|since|start of|beginning of|end of)"
            rf"\s+)?({MONTH_NAMES})\b"
        ),
        "month",
    ),
    (re.compile(r"\b(?:in|during|back in)\s+(20\d\d)\b"), "calendar_year"),
    (re.compile(r"\b(christmas|the holidays|new year)\b"), "holidays"),
]


def parse_time_window(text: str, now: datetime) -> TimeWindow | None:
    """The first time expression in ``text`` as a window ending no later than ``now``."""
    lowered = text.lower()
    for pattern, kind in _PATTERNS:
        match = pattern.search(lowered)
        if match is None:
            continue
        try:
            window = _window(kind, match, now, text)
        except (OverflowError, ValueError):
            # "5000 years ago", "1000000000 weeks ago": before year 1 (or a count too long to
            # be a number) is no window Atlas can search; the query runs without one.
            continue
        if window is not None:
            return window
    return None


def _window(kind: str, match: re.Match[str], now: datetime, text: str) -> TimeWindow | None:
    phrase = match.group(0)
    day = now.replace(hour=0, minute=0, second=0, microsecond=0)
    if kind == "day":
        if match.group(1) == "yesterday":
            return _clip(day - timedelta(days=1), day, now, phrase)
        return _clip(day, now, now, phrase)
    if kind == "ago":
        raw = match.group(1)
        count = int(raw) if raw.isdigit() else NUMBERS[raw]
        unit = UNITS[match.group(2)]
        centre = now - timedelta(days=count * unit)
        slack = timedelta(days=max(unit * 0.75, count * unit * 0.25, 2.0))
        return _clip(centre - slack, centre + slack, now, phrase)
    if kind == "span":
        qualifier, unit_name = match.group(1), match.group(2)
        if unit_name in {"week", "weekend"}:
            back = 7 if qualifier == "this" else 14
            return _clip(day - timedelta(days=back), now, now, phrase)
        if unit_name == "month":
            if qualifier == "this":
                return _clip(_month_start(now.year, now.month, now), now, now, phrase)
            start, end = _months(now.year, now.month - 1, 1, now)
            return _clip(start, end, now, phrase)
        year = now.year if qualifier == "this" else now.year - 1
        if qualifier == "past":
            return _clip(now - timedelta(days=365), now, now, phrase)
        start, end = _months(year, 1, 12, now)
        return _clip(start, end, now, phrase)
    if kind == "year":
        if "start" in phrase or "beginning" in phrase:
            start, end = _months(now.year, 1, 2, now)
            return _clip(start, end, now, phrase)
        return _clip(_month_start(now.year, 1, now), now, now, phrase)
    if kind == "recent":
        return _clip(now - timedelta(days=30), now, now, phrase)
    if kind == "season":
        start, end = _season(SEASONS[match.group(2)], match.group(1), now)
        return _clip(start, end, now, phrase)
    if kind == "month":
        qualifier, name = match.group(1) or "", match.group(2)
        if name == "may" and not qualifier:
            return None  # "may I ..." / "it may be": only a qualified "in May" is a month
        month = MONTHS.get(name) or 5
        start, end = _named_month(month, qualifier, now)
        if qualifier == "since":
            end = now
        elif qualifier in {"early", "start of", "beginning of"}:
            end = start + timedelta(days=15)
        elif qualifier in {"late", "end of"}:
            start = start + timedelta(days=14)
        return _clip(start, end, now, phrase)
    if kind == "calendar_year":
        start, end = _months(int(match.group(1)), 1, 12, now)
        return _clip(start, end, now, phrase)
    if kind == "holidays":
        year = now.year if now.month == 12 and now.day >= 20 else now.year - 1
        start = now.replace(year=year, month=12, day=15, hour=0, minute=0, second=0, microsecond=0)
        return _clip(start, start + timedelta(days=24), now, phrase)
    return None


def without_time_phrase(text: str, window: TimeWindow | None) -> str:
    """``text`` less the words its time window was read from ("What did Lena buy in March?"
    -> "What did Lena buy?"): what the dense leg embeds once the window carries the time, so
    the vector is about the event, not about dates. Unchanged without a window, or when the
    phrase is all there is."""
    if window is None:
        return text
    stripped = re.sub(re.escape(window.phrase), " ", text, count=1, flags=re.IGNORECASE)
    stripped = re.sub(r"\s+([?.!,])", r"\1", " ".join(stripped.split()))
    return stripped if any(char.isalnum() for char in stripped) else text


# Function words match most documents: they add little to BM25 but make every match set huge.
# Both engines search the same terms (the Elasticsearch analyzer's own stop list is shorter).
STOP_WORDS = frozenset(
    {"a", "an", "and", "are", "as", "at", "be", "but", "by", "did", "do", "does", "for", "from",
     "had", "has", "have", "how", "i", "if", "in", "into", "is", "it", "its", "me", "my", "of",
     "on", "or", "our", "so", "than", "that", "the", "their", "then", "there", "these", "they",
     "this", "to", "was", "we", "were", "what", "when", "where", "which", "who", "why", "will",
     "with", "would", "you", "your"}
)  # fmt: skip


def lexical_terms(text: str) -> list[str]:
    """The words of ``text`` the lexical legs search for, as written and in order: words with
    a letter or digit, minus function words. When every word is a function word, all of them
    (a query is never emptied)."""
    words = [word for word in text.split() if any(char.isalnum() for char in word)]
    return [w for w in words if w.lower().strip(string.punctuation) not in STOP_WORDS] or words


# Scripts written without spaces between words (CJK, kana, Thai, Lao, Myanmar, Khmer): each of
# their characters counts as a word of content, so a sentence in them is never "a word or two".
UNSPACED = re.compile(
    "[\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]"
)
QUESTION_MARKS = ("?", "\uff1f", "\u061f")  # "?", the full-width one, the Arabic one
CLOSING = "\"')]\u201d\u2019\u00bb\u300d\u300f\uff09"  # quotes and brackets after one


def content_word_count(text: str) -> int:
    """How many words of ``text`` carry content: words with a letter or digit, minus function
    words (``STOP_WORDS``). "Oh no, what happened?" has three; "Got a sec?" two. In a script
    written without spaces every character counts as one."""
    count = 0
    for word in text.split():
        unspaced = len(UNSPACED.findall(word))
        if unspaced:
            count += unspaced
            continue
        w = word.lower().strip(string.punctuation)
        count += any(char.isalnum() for char in w) and w not in STOP_WORDS
    return count


def is_question(text: str) -> bool:
    """Whether ``text`` ends on a question: its last sentence ends with a question mark ("?",
    "\uff1f", "\u061f"; a closing quote or bracket after it allowed)."""
    return text.rstrip().rstrip(CLOSING).endswith(QUESTION_MARKS)


def feedback_terms(query: str, texts: list[str], *, limit: int) -> list[str]:
    """Up to ``limit`` words of ``texts`` (the first pass's best hits) that ``query`` lacks,
    for pseudo-relevance feedback: the words most of the texts share first (a word in two of
    three hits says more about the topic than one said twice in one), then the most frequent,
    then the earliest seen. Lower-cased, without punctuation, function words or words under
    three characters, so what the expanded lexical leg searches is content."""
    asked = {w.lower().strip(string.punctuation) for w in query.split()}
    docs: dict[str, int] = {}
    counts: dict[str, int] = {}
    order: dict[str, int] = {}
    for text in texts:
        seen: set[str] = set()
        for raw in text.split():
            word = raw.lower().strip(string.punctuation)
            if len(word) < 3 or word in STOP_WORDS or word in asked:
                continue
            if not all(char.isalnum() or char in "'-" for char in word):
                continue
            order.setdefault(word, len(order))
            counts[word] = counts.get(word, 0) + 1
            if word not in seen:
                seen.add(word)
                docs[word] = docs.get(word, 0) + 1
    ranked = sorted(counts, key=lambda w: (-docs[w], -counts[w], order[w]))
    return ranked[: max(0, limit)]
