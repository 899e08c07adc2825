"""memory's public API: everything the other apps (consolidation, erasure, agents, knowledge,
lifecycle, atlas_server) and the lab may use of memory, declared here and nowhere else.

They import memory through this module alone: the import contract ``memory-public-api``
(pyproject.toml) fails ``make lint`` on an import of any other memory module from outside
memory. A name another app needs is added here, to ``_HOMES`` and to the ``TYPE_CHECKING``
block alike (``tests/memory/test_public.py`` holds the two together).

Each name is loaded from its home module on first use (PEP 562), so a name costs what its
module costs: a worker that only writes memories does not load the MCP host or the REST views.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# name -> the module that defines it
_HOMES: dict[str, str] = {
    # the vocabulary
    "MemoryDoc": "memory.types",
    "PERSONAL_TYPES": "memory.types",
    "ERASABLE_TYPES": "memory.types",
    "RecallPlan": "memory.plans",
    "DEFAULT_PLAN": "memory.plans",
    "ResolvedPlan": "memory.plans",
    "resolve_plan": "memory.plans",
    "TimeAnchor": "memory.plans",
    "MemoryStoreUnavailable": "memory.errors",
    "episode_recorded": "memory.signals",
    # writes
    "memory_write": "memory.services.writes",
    "memory_turn_record": "memory.services.writes",
    "memory_forget": "memory.services.writes",
    "memory_writes_together": "memory.services.writes",
    "embedding_text": "memory.services.writes",
    "procedure_outcome_record": "memory.services.writes",
    "CONTRADICTIONS": "memory.services.writes",
    "FACT_TYPES": "memory.services.writes",
    "memory_import": "memory.services.imports",
    "ImportedMemory": "memory.services.imports",
    "catalog_import": "memory.services.catalog",
    "catalog_doc_id": "memory.services.catalog",
    "replayable": "memory.services.intents",
    "pending_intents": "memory.services.intents",
    "clean_text": "memory.services.common",
    "store_errors": "memory.services.common",
    # recall and reads
    "memory_recall": "memory.services.recall",
    "memory_get": "memory.selectors",
    "memory_get_many": "memory.selectors",
    "memory_episodes_after": "memory.selectors",
    "memory_previous_turn": "memory.selectors",
    # other apps' searchable documents (the knowledge graph's entities)
    "searchable_put": "memory.services.documents",
    "searchable_delete": "memory.services.documents",
    "searchable_search": "memory.services.documents",
    "searchable_embed": "memory.services.documents",
    "searchable_writes_together": "memory.services.documents",
    # erasure
    "memory_ids_page": "memory.selectors",
    "memory_personal_all": "memory.selectors",
    "memory_personal_get": "memory.selectors",
    "memory_remaining_count": "memory.selectors",
    "memory_supporting_episode_ids": "memory.selectors",
    "memory_erase_page": "memory.services.erasure",
    "memory_expunge_deleted": "memory.services.erasure",
    "memory_expunge_later": "memory.services.erasure",
    "memory_session_cursors_drop": "memory.services.erasure",
    # backup, restore and retention (lifecycle)
    "memory_store_kind": "memory.services.backup",
    "memory_store_counts": "memory.services.backup",
    "memory_store_backup": "memory.services.backup",
    "memory_store_empty": "memory.services.backup",
    "memory_store_restore": "memory.services.backup",
    "memory_ids_stored_before": "memory.selectors",
    "memory_archive_superseded": "memory.services.archive",
    "memory_archive_expire": "memory.services.archive",
    "memory_archived_count": "memory.services.archive",
    # start-up
    "refuse_foreign_indices": "memory.services.startup",
    # the embedding model: the configured one, and the hook for other embedders (the lab's
    # offline candidates build on the ONNX embedder and its file checks)
    "embedder": "memory.services.common",
    "load_embedder": "memory.embedding",
    "register_embedder": "memory.embedding",
    "Embedder": "memory.embedding",
    "EmbeddingError": "memory.embedding",
    "OnnxEmbedder": "memory.embedding",
    "MiniLMOnnxEmbedder": "memory.embedding",
    "ModelFiles": "memory.embedding",
    "MINILM_TOKENIZER": "memory.embedding",
    "checked": "memory.embedding",
    "keep": "memory.embedding",
    "normalise": "memory.embedding",
    "OnnxCrossEncoderReranker": "memory.rerank",
    # memory's MCP tools, which the platform's MCP host serves beside the other apps'
    "memory_tools": "memory.mcp.server",
    "INSTRUCTIONS": "memory.mcp.server",
    "RECALL_TOOLS": "memory.mcp.server",
    "register_forget_handoff": "memory.admin.inspector",
}

__all__ = sorted(_HOMES)

if TYPE_CHECKING:  # the same names for mypy (`x as x`: an explicit re-export)
    from memory.admin.inspector import register_forget_handoff as register_forget_handoff
    from memory.embedding import (
        MINILM_TOKENIZER as MINILM_TOKENIZER,
        Embedder as Embedder,
        EmbeddingError as EmbeddingError,
        MiniLMOnnxEmbedder as MiniLMOnnxEmbedder,
        ModelFiles as ModelFiles,
        OnnxEmbedder as OnnxEmbedder,
        checked as checked,
        keep as keep,
        load_embedder as load_embedder,
        normalise as normalise,
        register_embedder as register_embedder,
    )
    from memory.errors import MemoryStoreUnavailable as MemoryStoreUnavailable
    from memory.mcp.server import (
        INSTRUCTIONS as INSTRUCTIONS,
        RECALL_TOOLS as RECALL_TOOLS,
        memory_tools as memory_tools,
    )
    from memory.plans import (
        DEFAULT_PLAN as DEFAULT_PLAN,
        RecallPlan as RecallPlan,
        ResolvedPlan as ResolvedPlan,
        TimeAnchor as TimeAnchor,
        resolve_plan as resolve_plan,
    )
    from memory.rerank import OnnxCrossEncoderReranker as OnnxCrossEncoderReranker
    from memory.selectors import (
        memory_episodes_after as memory_episodes_after,
        memory_get as memory_get,
        memory_get_many as memory_get_many,
        memory_ids_page as memory_ids_page,
        memory_ids_stored_before as memory_ids_stored_before,
        memory_personal_all as memory_personal_all,
        memory_personal_get as memory_personal_get,
        memory_previous_turn as memory_previous_turn,
        memory_remaining_count as memory_remaining_count,
        memory_supporting_episode_ids as memory_supporting_episode_ids,
    )
    from memory.services.archive import (
        memory_archive_expire as memory_archive_expire,
        memory_archive_superseded as memory_archive_superseded,
        memory_archived_count as memory_archived_count,
    )
    from memory.services.backup import (
        memory_store_backup as memory_store_backup,
        memory_store_counts as memory_store_counts,
        memory_store_empty as memory_store_empty,
        memory_store_kind as memory_store_kind,
        memory_store_restore as memory_store_restore,
    )
    from memory.services.catalog import (
        catalog_doc_id as catalog_doc_id,
        catalog_import as catalog_import,
    )
    from memory.services.common import (
        clean_text as clean_text,
        embedder as embedder,
        store_errors as store_errors,
    )
    from memory.services.documents import (
        searchable_delete as searchable_delete,
        searchable_writes_together as searchable_writes_together,
        searchable_embed as searchable_embed,
        searchable_put as searchable_put,
        searchable_search as searchable_search,
    )
    from memory.services.erasure import (
        memory_erase_page as memory_erase_page,
        memory_expunge_deleted as memory_expunge_deleted,
        memory_expunge_later as memory_expunge_later,
        memory_session_cursors_drop as memory_session_cursors_drop,
    )
    from memory.services.imports import (
        ImportedMemory as ImportedMemory,
        memory_import as memory_import,
    )
    from memory.services.intents import pending_intents as pending_intents, replayable as replayable
    from memory.services.recall import memory_recall as memory_recall
    from memory.services.startup import refuse_foreign_indices as refuse_foreign_indices
    from memory.services.writes import (
        CONTRADICTIONS as CONTRADICTIONS,
        FACT_TYPES as FACT_TYPES,
        embedding_text as embedding_text,
        memory_forget as memory_forget,
        memory_turn_record as memory_turn_record,
        memory_write as memory_write,
        memory_writes_together as memory_writes_together,
        procedure_outcome_record as procedure_outcome_record,
    )
    from memory.signals import episode_recorded as episode_recorded
    from memory.types import (
        ERASABLE_TYPES as ERASABLE_TYPES,
        PERSONAL_TYPES as PERSONAL_TYPES,
        MemoryDoc as MemoryDoc,
    )
else:

    def __getattr__(name: str) -> Any:
        home = _HOMES.get(name)
        if home is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        globals()[name] = value  # the next access is a plain module attribute
        return value


def __dir__() -> list[str]:
    return [*globals(), *__all__]
