"""PreCompact: a checkpoint of the session, read from the transcript without a model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from atlas_cli.core import Context, background_sync
from atlas_cli.hooks.session import session_id, start_session


def pre_compact(ctx: Context, event: dict[str, Any], started: float) -> None:
    session = session_id(event)
    text = checkpoint_text(event)
    if session and text:
        start_session(ctx, session)
        ctx.spool.add("session.checkpoint", {"session_id": session, "text": text})
        background_sync(ctx.profile.name)


def checkpoint_text(event: dict[str, Any]) -> str:
    """A checkpoint from the transcript, without a model: the prompts, the files written and
    the last answer (at most 6,000 characters)."""
    prompts: list[str] = []
    files: list[str] = []
    last = ""
    path = event.get("transcript_path")
    if isinstance(path, str) and Path(path).is_file():
        for message in _messages(Path(path)):
            content = message.get("content")
            blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
            for block in blocks:
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "text" and isinstance(block.get("text"), str):
                    if message.get("role") == "user":
                        prompts.append(block["text"][:300])
                    else:
                        last = block["text"][:1500]
                elif block.get("type") == "tool_use":
                    target = (block.get("input") or {}).get("file_path")
                    if target and target not in files:
                        files.append(str(target))
    parts = [f"Checkpoint before compaction ({event.get('trigger', 'auto')})."]
    if prompts:
        parts.append("Asked: " + " | ".join(prompts[-8:]))
    if files:
        parts.append("Files written: " + ", ".join(files[-20:]))
    if last:
        parts.append("Last answer: " + last)
    return "\n".join(parts)[:6000]


def _messages(transcript: Path) -> list[dict[str, Any]]:
    """The messages of the transcript's last 2,000 lines (lines that are not one skipped)."""
    found = []
    for line in transcript.read_text(encoding="utf-8", errors="replace").splitlines()[-2000:]:
        try:
            item = json.loads(line)
        except ValueError:
            continue
        message = item.get("message") if isinstance(item, dict) else None
        if isinstance(message, dict):
            found.append(message)
    return found
