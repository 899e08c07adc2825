"""The agents app's state changes: one module per entity, ``<entity>_<action>(*, ...)``."""
