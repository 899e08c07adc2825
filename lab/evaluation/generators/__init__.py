"""Deterministic generators of the ``conversations`` and ``agent_work`` corpora."""

from __future__ import annotations

from pathlib import Path

from lab.evaluation.corpus import CORPUS_DIR


def generated_files(directory: Path = CORPUS_DIR) -> list[tuple[Path, str]]:
    """Every generated corpus file: (path, the text the generator writes)."""
    from lab.evaluation.generators import agent_work, conversations
    from lab.evaluation.generators.common import render

    files = [
        (directory / "conversations" / f"{chat.persona}.json", render(conversations.generate(chat)))
        for chat in conversations.CHATS
    ]
    files.append(
        (directory / "agent_work" / f"{agent_work.PERSONA}.json", render(agent_work.generate()))
    )
    return files
