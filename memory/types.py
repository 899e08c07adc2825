"""memory's public vocabulary: what other apps and memory's own entry points may name. The
engine's other types (read scopes, leg queries and hits) stay behind the services."""

from memory.engine.types import (
    ENTITY,
    ERASABLE_TYPES,
    MEMORY_TYPES,
    PERSONAL_TYPES,
    GrowthBucket,
    GrowthPoint,
    MemoryDoc,
    MemoryType,
)

__all__ = [
    "ENTITY",
    "ERASABLE_TYPES",
    "MEMORY_TYPES",
    "PERSONAL_TYPES",
    "GrowthBucket",
    "GrowthPoint",
    "MemoryDoc",
    "MemoryType",
]
