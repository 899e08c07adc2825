"""Reading one markdown note: front matter (YAML, loaded and checked by ``front_matter``), the
body kept as written, the stable key, and the edges it declares.

Pure functions, no database: ``parse_note(path, content)`` is all the services need.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
from dataclasses import dataclass, field
from typing import Any

from atlas_platform.exceptions import ValidationError
from atlas_platform.text import text_problem
from knowledge.front_matter import load_front_matter, refuse

MAX_CONTENT = 200_000  # the body limit (ATLAS_MAX_REQUEST_BYTES, 256 KiB) with JSON escapes
MAX_PATH = 500
MAX_REFS = 200
ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$")
_FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.M | re.S)
_WIKILINK = re.compile(r"\[\[([^\]\|#\n]{1,300})(?:#[^\]\|\n]*)?(?:\|[^\]\n]*)?\]\]")
_MD_LINK = re.compile(r"\[[^\]\n]*\]\(\s*<?([^)\s>]+?\.md)(?:#[^)\s]*)?>?(?:\s+\"[^\"]*\")?\s*\)")
_HEADING = re.compile(r"^#\s+(.+?)\s*#*\s*$", re.M)
_NOT_SLUG = re.compile(r"[^a-z0-9]+")
DONE_STATUSES = frozenset({"done", "completed", "complete", "closed", "resolved", "shipped"})
BLOCKED_STATUSES = frozenset({"blocked", "waiting", "on_hold", "on-hold"})


@dataclass(frozen=True)
class ParsedNote:
    key: str
    type: str
    title: str
    status: str
    priority: str
    initiative: str
    tags: list[str]
    front_matter: dict[str, Any]
    body: str
    path: str
    content_hash: str
    edges: list[tuple[str, str]] = field(default_factory=list)  # (label, target), sorted

    @property
    def search_text(self) -> str:
        """What the searchable document holds: title, then body."""
        return f"{self.title}\n\n{self.body}".strip()


def content_hash(content: str) -> str:
    return hashlib.sha256(content.encode("utf-8")).hexdigest()


def clean_path(path: str) -> str:
    """A note's path relative to the project root: posix separators, no ``..``, not absolute,
    ending in ``.md`` (or ``.markdown``)."""
    if not isinstance(path, str) or not path.strip() or len(path) > MAX_PATH or "\x00" in path:
        raise ValidationError(
            f"path must be 1-{MAX_PATH} characters.", code="bad_path", field="path"
        )
    value = path.strip().replace("\\", "/")
    if value.startswith("/") or re.match(r"^[A-Za-z]:/", value):
        raise ValidationError(
            "path must be relative to the project root.", code="bad_path", field="path"
        )
    parts = [p for p in value.split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        raise ValidationError("path must stay inside the project.", code="bad_path", field="path")
    value = "/".join(parts)
    if not value.lower().endswith((".md", ".markdown")):
        raise ValidationError("path must name a markdown file.", code="bad_path", field="path")
    return value


def clean_root(root: str) -> str:
    """A reconcile root: a folder relative to the project root (``""`` is the whole project)."""
    if not isinstance(root, str) or len(root) > MAX_PATH or "\x00" in root:
        raise ValidationError("roots: folders of at most 500 characters.", code="bad_root")
    value = root.strip().replace("\\", "/")
    if value.startswith("/") or re.match(r"^[A-Za-z]:/", value):
        raise ValidationError("roots must be relative to the project root.", code="bad_root")
    parts = [p for p in value.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise ValidationError("roots must stay inside the project.", code="bad_root")
    return "/".join(parts)


def under(path: str, root: str) -> bool:
    return root == "" or path == root or path.startswith(root + "/")


def slug(text: str) -> str:
    return _NOT_SLUG.sub("-", text.lower()).strip("-")[:150]


def stem(path: str) -> str:
    """A file's name without extension, case-folded: what a ``[[wikilink]]`` names."""
    name = posixpath.basename(path)
    return name.rsplit(".", 1)[0].casefold()


def derived_key(kind: str, path: str) -> str:
    """The key of a note without a front matter ``id``: its type and the slug of its path."""
    return f"{kind[:40]}:{slug(path.rsplit('.', 1)[0]) or 'note'}"


def split_front_matter(content: str) -> tuple[dict[str, Any], str]:
    """(front matter, body). Front matter: a first line ``---``, YAML, a line ``---`` or
    ``...``. The body is everything after it, unchanged. No front matter: ({}, content)."""
    text = content[1:] if content.startswith("\ufeff") else content
    first, _, rest = text.partition("\n")
    if first.rstrip("\r") != "---":
        return {}, content
    lines = rest.split("\n")
    for n, line in enumerate(lines):
        if line.rstrip("\r") in ("---", "..."):
            raw = "\n".join(lines[:n])
            body = "\n".join(lines[n + 1 :])
            return load_front_matter(raw), body
    return {}, content  # an opening line without a closing one is not front matter


def _word(fm: dict[str, Any], name: str, max_length: int = 50) -> str:
    value = fm.get(name)
    if value is None:
        return ""
    if not isinstance(value, str | int | float) or isinstance(value, bool):
        refuse(name, "must be a string", "not_a_string")
    text = str(value).strip()
    if len(text) > max_length:
        refuse(name, f"is longer than {max_length} characters", "too_long")
    return text


def _refs(fm: dict[str, Any], name: str) -> list[str]:
    """A string or a list of strings (``blocked_by: a`` or ``blocked_by: [a, b]``)."""
    value = fm.get(name)
    if value is None or value == "":
        return []
    items = value if isinstance(value, list) else [value]
    refs = []
    for item in items:
        if isinstance(item, bool) or not isinstance(item, str | int | float):
            refuse(name, "must be a string or a list of strings", "not_a_string")
        text = str(item).strip()
        if not text or len(text) > MAX_PATH:
            refuse(name, f"must hold references of 1-{MAX_PATH} characters", "too_long")
        refs.append(text)
    return refs


def _tags(fm: dict[str, Any]) -> list[str]:
    value = fm.get("tags")
    if value is None:
        return []
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list):
        refuse("tags", "must be a list", "not_a_list")
    tags = [str(t).strip() for t in items if str(t).strip()]
    if len(tags) > 50 or any(len(t) > 100 for t in tags):
        refuse("tags", "must hold at most 50 tags of at most 100 characters", "too_long")
    return tags


def _links(body: str, path: str) -> list[str]:
    """``[[wikilinks]]`` (their names) and relative ``.md`` links (as paths relative to the
    project root), outside code fences; links leaving the project are dropped."""
    text = _FENCE.sub("", body)
    found = [m.group(1).strip() for m in _WIKILINK.finditer(text)]
    folder = posixpath.dirname(path)
    for match in _MD_LINK.finditer(text):
        link = match.group(1)
        if re.match(r"^[a-z][a-z0-9+.-]*:", link, re.I):
            continue  # http:, file:, ...
        joined = link.lstrip("/") if link.startswith("/") else posixpath.join(folder, link)
        normal = posixpath.normpath(joined)
        if normal.startswith("..") or normal.startswith("/"):
            continue
        found.append(normal)
    return [f for f in found if f]


def parse_note(*, path: str, content: str) -> ParsedNote:
    """Everything the graph keeps of one note. Raises ``ValidationError`` (400) on a path or
    front matter it cannot take; the body is never altered. Nothing is kept between calls: a
    process-wide cache of parses would hold a note's text past its user's erasure."""
    return _parse(path, content)


def _parse(path: str, content: str) -> ParsedNote:
    if not isinstance(content, str) or len(content) > MAX_CONTENT or text_problem(content):
        raise ValidationError(
            f"content must be text of at most {MAX_CONTENT} characters, without NUL "
            "characters or lone surrogates.",
            code="bad_content",
            field="content",
        )
    where = clean_path(path)
    fm, body = split_front_matter(content)
    kind = slug(_word(fm, "type")) or "note"
    explicit = _word(fm, "id", 128)
    if explicit and not ID_PATTERN.match(explicit):
        refuse("id", "must be 1-128 of A-Za-z0-9._:@- (starting with one of A-Za-z0-9)", "bad_id")
    key = explicit or derived_key(kind, where)
    heading = _HEADING.search(_FENCE.sub("", body))
    title = (
        _word(fm, "title", 500)
        or (heading.group(1).strip()[:500] if heading else "")
        or posixpath.basename(where).rsplit(".", 1)[0]
    )
    edges = {("blocked_by", r) for r in _refs(fm, "blocked_by")}
    edges |= {("depends_on", r) for r in _refs(fm, "depends_on")}
    initiative = _word(fm, "initiative", 200)
    if initiative:
        edges.add(("part_of", initiative))
    edges |= {("relates_to", link) for link in _links(body, where)}
    edges = {(label, target) for label, target in edges if target not in (key, where)}
    if len(edges) > MAX_REFS:
        raise ValidationError(
            f"a note may declare at most {MAX_REFS} relationships.",
            code="bad_front_matter",
            field="content",
            reason="too_many_relationships",
        )
    return ParsedNote(
        key=key,
        type=kind[:50],
        title=title,
        status=_word(fm, "status").lower(),
        priority=_word(fm, "priority").lower(),
        initiative=initiative,
        tags=_tags(fm),
        front_matter=fm,
        body=body,
        path=where,
        content_hash=content_hash(content),
        edges=sorted(edges),
    )
