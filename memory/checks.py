"""System checks of the memory app (registered in ``MemoryConfig.ready``)."""

from __future__ import annotations

from typing import Any

from django.core.checks import CheckMessage, Error, Warning

from memory.services.startup import prefix_check


def check_index_prefix(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """atlas.E001: the index prefix holds another deployment's indices (the start is refused);
    atlas.W001: some carry no deployment id (made before ids; requests using them get 503)."""
    found = prefix_check()
    messages: list[CheckMessage] = []
    if found.conflict:
        messages.append(
            Error(
                found.conflict,
                hint="Point ATLAS_ES_INDEX_PREFIX at this deployment's own indices.",
                id="atlas.E001",
            )
        )
    if found.unstamped:
        messages.append(
            Warning(
                found.unstamped,
                hint="Indices without a deployment id were made before ids: give this "
                "deployment its own ATLAS_ES_INDEX_PREFIX, or remove them if nothing uses them.",
                id="atlas.W001",
            )
        )
    return messages
