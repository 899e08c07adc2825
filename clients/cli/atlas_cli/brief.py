"""The SessionStart brief as the model reads it: the server composes it (sections, budget,
each item once: ``GET .../graph/handoff``); this machine only puts first what the server
cannot know, and keeps the last brief for when the server is away.

``LEAD_SOURCES`` is the hook for those local lines: each source is a function of the
``Context`` returning lines (markdown, one item each) to put first, before the server's brief,
counted against the same budget. The spooled writes this machine has not delivered yet are one
such source. Open memory-file conflicts are not: ``conflicts.with_conflicts`` puts them above
everything, outside the budget, so no budget ever trims them away.

The budget: ``--budget`` on ``atlas graph gen-handoff`` (per request), else the
``ATLAS_BRIEF_TOKENS`` variable, else the profile's ``brief_tokens`` (``atlas login
--brief-tokens N``), else the server's default (1,500). Tokens are estimated as the server
does: characters / 4, rounded up.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable
from typing import Any

from atlas_cli import config
from atlas_cli.api import Client
from atlas_cli.core import Context

LeadSource = Callable[[Context], list[str]]
MIN_SERVER_BUDGET = 100  # the server's smallest brief


def spooled_lines(ctx: Context) -> list[str]:
    """Writes made here and not delivered yet (the server's brief cannot show them)."""
    counts = ctx.spool.counts()
    lines = []
    if counts.get("pending"):
        lines.append(
            f"- {counts['pending']} write(s) from this machine are spooled, not yet on the "
            "server (`atlas sync` sends them; `atlas spool ls` lists them)."
        )
    if counts.get("quarantined"):
        lines.append(
            f"- {counts['quarantined']} write(s) were refused by the server and set aside "
            "(`atlas spool ls --all`)."
        )
    return lines


# Local lines to put first, in this order (open conflicts go first: see the module).
LEAD_SOURCES: list[LeadSource] = [spooled_lines]


def tokens(text: str) -> int:
    """The server's estimate (knowledge.services.brief.tokens): characters / 4, rounded up."""
    return math.ceil(len(text) / 4)


def budget(ctx: Context, requested: int | None = None) -> int | None:
    """The brief's size: the request's, else ATLAS_BRIEF_TOKENS, else the profile's, else
    None (the server's default)."""
    if requested:
        return requested
    env = os.environ.get("ATLAS_BRIEF_TOKENS", "")
    if env.isdigit():
        return int(env)
    return ctx.profile.brief_tokens


def lead_lines(ctx: Context) -> list[str]:
    lines: list[str] = []
    for source in LEAD_SOURCES:
        lines += source(ctx)
    return lines


def lead_block(lines: list[str]) -> str:
    return "## On this machine\n" + "\n".join(lines) if lines else ""


def server_brief(
    ctx: Context, *, timeout: float, tokens_left: int | None, session: str | None
) -> dict[str, Any]:
    """The server's brief for this project (JSON; its ``markdown`` is the text)."""
    client = Client(ctx.profile, timeout=max(0.3, timeout))
    query: dict[str, Any] = {"project": ctx.project.key, "machine_key": config.machine_key()}
    if tokens_left is not None:
        query["token_budget"] = max(MIN_SERVER_BUDGET, tokens_left)
    if session:
        query["session_id"] = session
    found: dict[str, Any] = client.call("GET", client.user_path("graph/handoff"), query=query)
    return found


def compose(ctx: Context, *, timeout: float, session: str | None = None) -> str:
    """The brief: local lines first, then the server's, within one budget; the server's part
    is kept for an offline start."""
    lead = lead_block(lead_lines(ctx))
    total = budget(ctx)
    left = None if total is None else total - (tokens(lead) + 2 if lead else 0)
    found = server_brief(ctx, timeout=timeout, tokens_left=left, session=session)
    text = str(found.get("markdown", "")).rstrip("\n")
    ctx.spool.put(f"brief:{ctx.project.key}", json.dumps({"at": time.time(), "text": text}))
    return "\n\n".join(part for part in (lead, text) if part)


def offline(ctx: Context) -> str:
    """What an offline start reads: the local lines and the last brief this machine got."""
    lead = lead_block(lead_lines(ctx))
    cached = ctx.spool.get(f"brief:{ctx.project.key}")
    if cached:
        old = json.loads(cached)
        stamp = time.strftime("%Y-%m-%d %H:%M", time.localtime(old["at"]))
        note = f"(Atlas is offline: the brief below was cached at {stamp}.)"
        body = str(old["text"])
    else:
        note = "(Atlas is offline and has no cached brief for this project; writes are spooled.)"
        body = ""
    return "\n\n".join(part for part in (lead, note, body) if part)
