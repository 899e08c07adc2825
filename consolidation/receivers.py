"""The turn path's hook into consolidation (connected in ``apps.ready``)."""

from __future__ import annotations

import logging
from typing import Any

from django.db import transaction
from django.dispatch import receiver

from consolidation.llm import model_configured
from consolidation.services.triggers import consolidation_episode_recorded
from memory.public import MemoryDoc, episode_recorded
from tenants.models import User

logger = logging.getLogger(__name__)


@receiver(episode_recorded, dispatch_uid="consolidation.episode_recorded")
def on_episode_recorded(
    sender: Any, *, user: User, episode: MemoryDoc, procedure_ids: list[str], **kwargs: Any
) -> None:
    """The episode is stored already: a failure here is logged, never the turn's failure.
    Without a model nothing is counted, and no transaction is opened for it."""
    if not model_configured():
        return
    try:
        with transaction.atomic():
            consolidation_episode_recorded(
                user=user,
                episode_id=episode.id,
                session_id=episode.session_id,
                procedure_ids=procedure_ids,
            )
    except Exception:
        logger.exception("consolidation: could not count episode %s", episode.id)
