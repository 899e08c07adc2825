"""Deterministic generators of the ``conversations`` and ``agent_work`` corpora, and of the
brief eval's project histories (``briefs``)."""

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
    if directory == CORPUS_DIR:  # the brief eval's histories (eval_brief) live beside it
        from lab.evaluation.generators import briefs

        files += [(briefs.BRIEFS_DIR / f"{h['name']}.json", render(h)) for h in briefs.generate()]
    return files
