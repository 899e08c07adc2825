"""The graph commands' answers as text for people (``--json`` prints the server's JSON), and
the one argument they read differently from the server: a date-only ``semantic-diff UNTIL``
means the end of that day."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def until_moment(text: str) -> str:
    """``UNTIL`` as the server takes it: a date alone includes that whole day (the next
    midnight, UTC); anything else is passed on as written."""
    if not DATE.match(text):
        return text
    try:
        day = dt.date.fromisoformat(text)
    except ValueError:
        return text  # the server names what is wrong with it
    return f"{day + dt.timedelta(days=1)}T00:00:00Z"


def _entity(item: dict[str, Any]) -> str:
    status = f" [{item['status']}]" if item.get("status") else ""
    title = f"  {item['title']}" if item.get("title") else ""
    return f"{item.get('key')}{status}{title}"


def related_text(found: dict[str, Any]) -> str:
    root = found.get("root") or {}
    lines = [_entity(root)]
    for node in found.get("nodes", []):
        indent = "  " * int(node.get("depth") or 1)
        missing = "" if node.get("resolved") else "  (no such note yet)"
        via = f" (via {node['via']})" if int(node.get("depth") or 1) > 1 else ""
        lines.append(f"{indent}{node.get('label')} {_entity(node)}{via}{missing}")
    if len(lines) == 1:
        lines.append("  (nothing relates to it)")
    return "\n".join(lines)


def blockers_text(found: dict[str, Any]) -> str:
    lines = []
    for row in found.get("results", []):
        lines.append(_entity(row.get("entity") or {}))
        for blocker in row.get("blockers", []):
            missing = "" if blocker.get("resolved") else ", no such note yet"
            idle = float(blocker.get("idle_days") or 0)
            lines.append(f"  blocked by {_entity(blocker)} (idle {idle:.1f} d{missing})")
    return "\n".join(lines) or "(nothing is blocked)"


DIFF_LISTS = (
    ("created", "created"),
    ("deleted", "deleted"),
    ("restored", "restored"),
    ("newly_blocked", "newly blocked"),
    ("unblocked", "unblocked"),
    ("completed", "completed"),
)


def diff_text(found: dict[str, Any]) -> str:
    lines = [f"from {found.get('since')} to {found.get('until')}"]
    for field, label in DIFF_LISTS:
        if found.get(field):
            lines.append(f"{label}: {', '.join(found[field])}")
    for change in found.get("status_changes") or []:
        lines.append(f"status: {change.get('key')} {change.get('from')} -> {change.get('to')}")
    for name, sign in (("edges_added", "+"), ("edges_removed", "-")):
        for edge in found.get(name) or []:
            lines.append(f"{sign} {edge.get('from')} {edge.get('label')} {edge.get('to')}")
    for item in found.get("rewritten") or []:
        lines.append(f"rewritten: {item.get('key')} (distance {item.get('distance')})")
    if len(lines) == 1:
        lines.append("(nothing changed)")
    return "\n".join(lines)


def handoff_text(found: dict[str, Any]) -> str:
    text = str(found.get("markdown") or "")
    if found.get("narration"):
        text += "\n\n## Narrative\n" + str(found["narration"])
    return text
