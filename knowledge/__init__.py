"""The knowledge graph of a coding agent's own markdown notes (issue 19).

Every markdown file an agent writes (plans, decisions, initiatives, task notes) is an
``Entity`` of one of the user's projects, keyed stably (front matter ``id``, else type + slug of
the path relative to the project root, so two checkouts give the same keys). Front matter is
parsed with a YAML parser and the body is kept. Relationships come from the front matter
(``blocked_by``, ``depends_on``: a string or a list; ``initiative``: part of) and from the body
(``[[wikilinks]]`` and relative ``.md`` links: relates to); a target that does not exist yet is
an unresolved edge and resolves when it appears (edges name their target, resolution is read).

Every change is a ``Revision`` (created, updated, deleted, restored, conflict) with what
changed; an ``Edge`` row lives from the revision that added it to the one that removed it, so
the graph can be read as of any date. A write names the version it is based on; a stale base
keeps both (the server's current version, and a flagged conflict revision with the other text).

Entity text is searchable through memory's public ``memory.services.documents`` (an ``entity``
document per entity, the same hybrid legs, decay and isolation as memories, never in memory
recall). Reconcile is two-phase with guards (``knowledge.services.reconcile``); deletions are
tombstones restorable for ``ATLAS_KNOWLEDGE_RESTORE_DAYS``.
"""
