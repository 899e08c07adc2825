"""Forget requests from before the global ids (``user_ref`` = the user's primary key) are
rewritten to the user's memory id by erasure's migration 0002, so their jobs find the user's
documents (which carry ``User.uid``)."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("erasure", "0001_forget_requests")]
AFTER = [("erasure", "0002_user_ref_global_ids")]


def migrate(targets: list[tuple[str, str]]) -> Any:
    """Erasure migrated to ``targets``; the models as they were then, with every other app's
    (the tenants' columns) as the database has them now."""
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    others = [n for n in executor.loader.graph.leaf_nodes() if n[0] != "erasure"]
    return executor.loader.project_state([*others, *targets]).apps


@pytest.mark.django_db(transaction=True)
def test_old_forget_requests_get_the_users_global_id():
    old = migrate(BEFORE)
    Tenant = old.get_model("tenants", "Tenant")
    User = old.get_model("tenants", "User")
    ForgetRequest = old.get_model("erasure", "ForgetRequest")
    acme = Tenant.objects.create(slug="acme", name="Acme")
    alice = User.objects.create(tenant=acme, external_id="alice")
    bob = User.objects.create(tenant=acme, external_id="bob")
    common = {"tenant": acme, "scope": "user", "requested_by_type": "operator"}
    legacy = ForgetRequest.objects.create(user=alice, user_ref=str(alice.pk), **common)
    current = ForgetRequest.objects.create(user=bob, user_ref=bob.uid.hex, **common)
    erased = ForgetRequest.objects.create(user=None, user_ref="999999", **common)

    new = migrate(AFTER)

    rows = new.get_model("erasure", "ForgetRequest").objects
    assert rows.get(pk=legacy.pk).user_ref == alice.uid.hex
    assert rows.get(pk=current.pk).user_ref == bob.uid.hex  # already an id: unchanged
    assert rows.get(pk=erased.pk).user_ref == "999999"  # no user left to name

    migrate(BEFORE)  # and back
    back = migrate(BEFORE).get_model("erasure", "ForgetRequest").objects
    assert back.get(pk=legacy.pk).user_ref == str(alice.pk)
    # Every app back at its latest migration (AFTER is not erasure's last one any more): the
    # next tests on this worker find the schema as it is now.
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())
