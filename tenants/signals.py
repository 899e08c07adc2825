"""Signals about a tenant's users, so apps on top can react without tenants (or each other)
knowing them.

``user_data_erasing``: an erasure of a user's data is finishing (kwargs ``user``, and
``whole_user``: True when everything of the user goes, not only chosen memories). Sent inside
the erasure's final transaction, before the user record is deleted: a receiver deletes the rows
of its app that hold the user's data (a whole user: all of them; otherwise whatever may hold
erased text, such as stored replies) and returns ``{table: rows deleted}`` for the receipt.
"""

from django.dispatch import Signal

user_data_erasing = Signal()
