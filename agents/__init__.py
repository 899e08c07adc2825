"""Coding agents on Atlas, server side (issue 18): agents, machines and presence, projects,
sessions, tasks, messages, and exactly-once replay of offline work.

Layering: imports ``atlas_platform``, ``tenants`` and memory's public API (``memory.services``,
``memory.selectors``, ``memory.types``, ``memory.plans``); nothing from ``consolidation`` or
``erasure``, which do not import it either.
"""
