"""memory's section of the user export (``tenants.exports``): every personal memory."""

from __future__ import annotations

from memory.api.serializers import MemoryOut
from memory.selectors import memory_export
from tenants.exports import register_export


def register() -> None:
    register_export(
        "memories",
        rows=lambda user: memory_export(user=user),
        shape=MemoryOut,
        help_text="Every personal memory (episodes, facts, playbooks), superseded facts too, "
        "oldest first.",
    )
