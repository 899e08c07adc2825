"""System checks of the memory app (registered in ``MemoryConfig.ready``)."""

from __future__ import annotations

from typing import Any

from django.core.checks import CheckMessage, Error

from memory.services.startup import deployment_conflict


def check_index_prefix(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """atlas.E001: the index prefix holds another deployment's indices."""
    message = deployment_conflict()
    if not message:
        return []
    return [
        Error(
            message,
            hint="Point ATLAS_ES_INDEX_PREFIX at this deployment's own indices.",
            id="atlas.E001",
        )
    ]
