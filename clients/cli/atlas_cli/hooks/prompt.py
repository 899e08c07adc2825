"""UserPromptSubmit (installed with ``--prompt-recall``): what Atlas recalls for the prompt,
printed for the model; nothing when the server is away or the prompt is all private."""

from __future__ import annotations

import sys
from typing import Any

from atlas_cli.api import Client, HttpError, Offline
from atlas_cli.core import Context
from atlas_cli.hooks.session import left
from atlas_cli.private import strip_private


def user_prompt_submit(ctx: Context, event: dict[str, Any], started: float) -> None:
    prompt = event.get("prompt")
    if not isinstance(prompt, str) or not strip_private(prompt).strip():
        return  # nothing to recall for (a prompt all private is not sent at all)
    client = Client(ctx.profile, timeout=left(started, 2.0))
    try:
        query = {
            "query": prompt[:2000],
            "k": 3,
            "project": ctx.project.key,
            "include_unscoped": True,
        }
        found = client.call("POST", client.user_path("recall"), query)
    except (Offline, HttpError) as exc:
        print(f"atlas: recall: {exc}", file=sys.stderr)
        return
    hits = found.get("hits", [])
    if hits:
        print("Atlas recalls:\n" + "\n".join(f"- {str(h.get('text', ''))[:300]}" for h in hits))
