"""Signals the memory services send, so other apps can react without the memory app knowing.

``episode_recorded``: a turn stored an episode (kwargs ``user``, ``episode``, and
``procedure_ids``: the playbooks its recall returned). Receivers run on the turn path: keep
them to a query or two, and queue anything slower.
"""

from django.dispatch import Signal

episode_recorded = Signal()
