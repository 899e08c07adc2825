"""The MCP tools: each parses its arguments and calls one memory service for the request's user.

The user comes from the authenticated request (``atlas_platform.mcp.auth``), never from the
arguments.
The docstrings and field descriptions are what the model reads: they say when to use each tool.
"""

# No ``from __future__ import annotations``: the MCP SDK builds the JSON schemas from these
# signatures at runtime, Annotated descriptions included.

from datetime import UTC, datetime
from typing import Annotated, Literal

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import BaseModel, Field

from atlas_platform.mcp.calls import call
from memory.mcp.results import (
    chain_out,
    profile_out,
    recall_out,
    reply_out,
    turn_out,
    written_out,
)
from memory.selectors import memory_history as history_select
from memory.selectors import memory_profile
from memory.services.recall import memory_recall
from memory.services.replies import memory_reply_record
from memory.services.writes import (
    memory_forget,
    memory_turn_record,
    memory_write,
    procedure_outcome_record,
)

MemoryId = Annotated[str, Field(description="A memory id, as returned by recall or write.")]


class Step(BaseModel):
    """One step of a procedural playbook."""

    order: int | None = Field(None, description="Position in the playbook (1 = first).")
    instruction: str = Field(description="What to do in this step.")
    tool: str | None = Field(None, description="The tool or command this step uses, if any.")


def _steps(steps: list[Step] | None) -> list[dict[str, object]] | None:
    """Steps as the services take them: an unset order is left out (list order applies)."""
    return [step.model_dump(exclude_none=True) for step in steps] if steps is not None else None


def _utc(moment: datetime | None) -> datetime | None:
    """Times without a zone are taken as UTC."""
    if moment is None or moment.tzinfo is not None:
        return moment
    return moment.replace(tzinfo=UTC)


async def recall_memory(
    ctx: Context,
    query: Annotated[
        str,
        Field(
            description="What to look for, in natural language. Keep the user's exact words for "
            "names, versions and error codes."
        ),
    ],
    memory_types: Annotated[
        list[Literal["episodic", "semantic", "procedural"]] | None,
        Field(
            description="Restrict to these stores: episodic (past messages, verbatim), semantic "
            "(facts about the user), procedural (playbooks). Default: all three."
        ),
    ] = None,
    k: Annotated[int, Field(ge=1, le=20, description="How many memories to return.")] = 10,
    include_catalog: Annotated[
        bool, Field(description="Also search the tenant's shared knowledge catalog.")
    ] = True,
    include_superseded: Annotated[
        bool,
        Field(
            description="Also return facts that newer facts replaced (flagged superseded: true). "
            "Only for questions about the past, such as 'where did I live before?'."
        ),
    ] = False,
    since: Annotated[
        datetime | None, Field(description="Only memories from this time on (ISO 8601).")
    ] = None,
    until: Annotated[
        datetime | None, Field(description="Only memories up to this time (ISO 8601).")
    ] = None,
    project: Annotated[
        str | None,
        Field(
            pattern=r"^[A-Za-z0-9][A-Za-z0-9._:@/-]{0,199}$",
            description="Only memories written from this project: its key, as the session "
            "brief states it. Memories written from no project come too; the catalog as asked.",
        ),
    ] = None,
) -> CallToolResult:
    """Search the user's long-term memory (past messages, facts, playbooks, and the tenant
    catalog) and return the most relevant memories, best first, with their ids. Call it before
    answering anything that may depend on what the user told you earlier, and to find the id
    of a fact before superseding or forgetting it."""
    return await call(
        ctx,
        memory_recall,
        recall_out,
        query=query,
        memory_types=memory_types,
        k=k,
        include_catalog=include_catalog,
        include_superseded=include_superseded,
        since=_utc(since),
        until=_utc(until),
        project=project,
        include_unscoped=True,
    )


async def write_memory(
    ctx: Context,
    memory_type: Annotated[
        Literal["semantic", "procedural"],
        Field(
            description="semantic: a stable fact about the user (preference, identity, "
            "constraint, world). procedural: a reusable multi-step playbook."
        ),
    ],
    text: Annotated[
        str, Field(description="The fact or playbook, self-contained, in one or two sentences.")
    ],
    fact_type: Annotated[
        Literal["preference", "identity", "constraint", "world"] | None,
        Field(description="Semantic facts only: what kind of fact this is."),
    ] = None,
    confidence: Annotated[
        float, Field(ge=0.0, le=1.0, description="How sure you are, 0 to 1.")
    ] = 1.0,
    supersedes: Annotated[
        list[str] | None,
        Field(
            description="Ids of the user's current facts that THIS fact makes false (found with "
            "recall_memory). They are kept as history, flagged superseded, and drop out of "
            "recall. Use it whenever new information replaces old: the user moved, changed job, "
            "changed a preference. Name only facts that are now false, never merely related ones."
        ),
    ] = None,
    contradiction: Annotated[
        Literal["natural", "harsh"] | None,
        Field(
            description="Only with supersedes. natural: things changed over time (the old fact "
            "was true, now it is outdated). harsh: the new fact flatly contradicts the old one "
            "(it was wrong, or sources disagree); this lowers the new fact's confidence a little."
        ),
    ] = None,
    valid_from: Annotated[
        datetime | None, Field(description="Semantic: when the fact starts to hold (ISO 8601).")
    ] = None,
    valid_to: Annotated[
        datetime | None, Field(description="Semantic: when the fact stops holding (ISO 8601).")
    ] = None,
    name: Annotated[str | None, Field(description="Procedural: a short playbook name.")] = None,
    description: Annotated[
        str | None, Field(description="Procedural: what the playbook achieves.")
    ] = None,
    trigger: Annotated[
        str | None, Field(description="Procedural: the situation in which to use it.")
    ] = None,
    steps: Annotated[
        list[Step] | None, Field(description="Procedural: the steps, in order.")
    ] = None,
) -> CallToolResult:
    """Store a durable fact about the user (semantic) or a playbook (procedural); it is
    recallable at once. When the new fact replaces an older one, pass the old fact's id in
    `supersedes` instead of forgetting it: the history stays and recall shows only the current
    fact. Do not store things that are already in memory."""
    return await call(
        ctx,
        memory_write,
        written_out,
        memory_type=memory_type,
        text=text,
        fact_type=fact_type,
        confidence=confidence,
        supersedes=supersedes or (),
        contradiction=contradiction,
        valid_from=_utc(valid_from),
        valid_to=_utc(valid_to),
        name=name,
        description=description,
        trigger=trigger,
        steps=_steps(steps),
    )


async def forget_memory(ctx: Context, memory_id: MemoryId) -> CallToolResult:
    """Permanently delete one memory. Use it ONLY when the user explicitly asks you to forget
    or delete something. When a fact has merely changed or turned out wrong, use write_memory
    with `supersedes` instead, which keeps the history."""
    return await call(
        ctx, memory_forget, lambda _none: {"forgotten": memory_id}, memory_id=memory_id
    )


async def record_turn(
    ctx: Context,
    text: Annotated[
        str, Field(description="The user's message, verbatim: do not summarise or rewrite it.")
    ],
    session_id: Annotated[
        str | None, Field(description="Your conversation or session id, to group turns.")
    ] = None,
    agent: Annotated[str | None, Field(description="Your name, as the recording agent.")] = None,
) -> CallToolResult:
    """Record the user's latest message in episodic memory, before you answer it, and get back
    the memories most relevant to it (recalled on the exact words). Call it once per user
    message."""
    return await call(
        ctx,
        memory_turn_record,
        turn_out,
        provisions=True,  # the first turn creates an unknown user where the tenant allows it
        text=text,
        session_id=session_id,
        agent=agent,
    )


async def memory_history(ctx: Context, memory_id: MemoryId) -> CallToolResult:
    """The supersession chain through a fact, oldest first: the facts it replaced and the
    facts that replaced it. Use it to answer how something changed over time."""
    return await call(ctx, history_select, chain_out, memory_id=memory_id)


async def record_reply(
    ctx: Context,
    text: Annotated[
        str, Field(description="Your answer to the user, verbatim (or its substance, if long).")
    ],
    session_id: Annotated[
        str | None, Field(description="The same conversation id you gave record_turn.")
    ] = None,
    agent: Annotated[str | None, Field(description="Your name, as the recording agent.")] = None,
) -> CallToolResult:
    """Record your own answer to the user in episodic memory, after record_turn stored their
    message, so a later "what did you suggest last time?" can be answered. It runs no recall
    and is never taken for a fact about the user."""
    return await call(
        ctx, memory_reply_record, reply_out, text=text, session_id=session_id, agent=agent
    )


async def record_playbook_outcome(
    ctx: Context,
    memory_id: Annotated[str, Field(description="The playbook's id (from recall).")],
    success: Annotated[bool, Field(description="Did following the playbook work this time?")],
    refined_steps: Annotated[
        list[Step] | None,
        Field(description="Better steps learned this time: they replace the playbook's steps."),
    ] = None,
) -> CallToolResult:
    """Report whether a procedural playbook you followed worked. Successes and failures are
    counted; refined steps replace the old ones (the playbook's version goes up)."""
    steps = _steps(refined_steps)
    return await call(
        ctx,
        procedure_outcome_record,
        written_out,
        memory_id=memory_id,
        success=success,
        refined_steps=steps,
    )


async def about_me(ctx: Context) -> CallToolResult:
    """What Atlas knows about the user: their current facts and playbooks, and how many
    memories of each type it holds. For "what do you know about me?"; to look something
    specific up, use recall_memory."""
    return await call(ctx, memory_profile, profile_out)


TOOLS = (
    recall_memory,
    write_memory,
    forget_memory,
    record_turn,
    record_reply,
    record_playbook_outcome,
    about_me,
    memory_history,
)
