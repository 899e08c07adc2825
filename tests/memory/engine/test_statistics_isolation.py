"""The word-presence probe of issue 17, on the real cluster.

With her own access only, a user writes a memory holding a candidate word W and one holding a
fresh word C (same length, same shape), recalls ``"W C"`` over semantic memories and compares
the two hits' lexical ranks (what an agent is shown: ``leg_ranks``). Equal term statistics
tie, and the tie goes to the memory written first (W's); when C outranks W, some other
document in the index that scored her recall holds W.

Across tenants the probe must always fail (each tenant has its own index). Within one tenant
it works while users share the tenant's index (the residual channel README's isolation
section states), and fails once the tenant keeps each user's statistics apart
(``Tenant.statistics_scope = "user"``). After an erasure the word leaves no trace."""

from __future__ import annotations

import secrets
import time
from typing import Any

import pytest

from erasure.services import (
    OperatorPrincipal,
    forget_request_approve,
    forget_request_execute,
    forget_request_open,
)
from memory.services.erasure import memory_expunge_deleted
from memory.services.recall import memory_recall
from memory.services.scoping import tenant_layout
from memory.services.writes import memory_forget, memory_write
from tenants.models import Tenant, User
from tenants.scoping import scope_for
from tenants.services.scoped_keys import scoped_key_provision

pytestmark = pytest.mark.django_db
TRIALS = 5


def fresh_word() -> str:
    return "zq" + secrets.token_hex(5).translate(str.maketrans("0123456789", "ghijklmnop"))


def probe(user: User, word: str, *, clean_up: bool = False) -> bool:
    """True when the probe says some other document of the index holds ``word``
    (``clean_up``: the user forgets the two probe memories afterwards)."""
    control = fresh_word()
    w = memory_write(user=user, text=f"probe note {word}", memory_type="semantic")
    c = memory_write(user=user, text=f"probe note {control}", memory_type="semantic")
    result = memory_recall(
        user=user,
        query=f"{word} {control}",
        memory_types=["semantic"],
        include_catalog=False,
        track_usage=False,
    )
    ranks = {h.doc.id: h.leg_ranks.get("lexical", 0) for h in result.hits}
    assert ranks[w.id] and ranks[c.id]
    if clean_up:
        memory_forget(user=user, memory_id=w.id)
        memory_forget(user=user, memory_id=c.id)
    return ranks[c.id] < ranks[w.id]


def tenant_with_users(slug: str, *names: str, scope: str = "tenant") -> list[User]:
    tenant = Tenant.objects.create(
        slug=slug,
        name=slug,
        isolation_mode=Tenant.IsolationMode.DLS,
        statistics_scope=scope,
        erasure_requires_second_operator=False,  # one operator opens and approves here
    )
    users = [User.objects.create(tenant=tenant, external_id=n) for n in names]
    for user in users:
        scoped_key_provision(user=user)
    return users


@pytest.fixture
def cluster(es: Any, settings: Any) -> Any:
    settings.ATLAS_MEMORY_BACKEND = "elasticsearch"
    tenant_layout.clear()
    return es


def test_the_probe_never_sees_another_tenants_words(cluster):
    (alice,) = tenant_with_users("acme", "alice")
    (charlie,) = tenant_with_users("globex", "charlie")
    found = []
    for _ in range(TRIALS):
        word = fresh_word()
        for n in range(3):  # the other tenant holds the word, several times over
            memory_write(user=charlie, text=f"charlie {word} item {n}", memory_type="semantic")
        found.append(probe(alice, word))
    assert found == [False] * TRIALS


def test_within_a_shared_tenant_index_the_probe_works(cluster):
    """The residual channel, measured: users of one tenant share its term statistics."""
    alice, bob = tenant_with_users("acme", "alice", "bob")
    found = []
    for _ in range(TRIALS):
        word = fresh_word()
        for n in range(3):
            memory_write(user=bob, text=f"bob {word} item {n}", memory_type="semantic")
        found.append(probe(alice, word))
    assert found == [True] * TRIALS


def test_per_user_statistics_close_the_channel_within_a_tenant(cluster):
    alice, bob = tenant_with_users("acme", "alice", "bob", scope="user")
    found = []
    for _ in range(TRIALS):
        word = fresh_word()
        for n in range(3):
            memory_write(user=bob, text=f"bob {word} item {n}", memory_type="semantic")
        found.append(probe(alice, word))
    assert found == [False] * TRIALS
    # Each user's documents are in an index of their own, and the key reads only it and the
    # tenant's (catalog) index.
    index = cluster.user_index(alice.memory_tenant_id, alice.memory_id)
    key = alice.current_key()
    assert key is not None and index.endswith(alice.memory_id)


def test_an_erasure_leaves_no_statistical_trace(
    cluster, platform_admin, django_capture_on_commit_callbacks
):
    """A deleted document counts in the statistics until merged away: after a plain forget
    the probe still finds the word; the forget request's erasure expunges it."""
    alice, bob, carol = tenant_with_users("acme", "alice", "bob", "carol")
    scope = scope_for(platform_admin.account)
    assert scope is not None
    admin = OperatorPrincipal(platform_admin.account, scope)
    word = fresh_word()
    written = [
        memory_write(user=bob, text=f"bob {word} item {n}", memory_type="semantic")
        for n in range(3)
    ]
    for doc in written:
        memory_forget(user=bob, memory_id=doc.id)
    # Gone from every read, still in the statistics.
    assert probe(alice, word, clean_up=True) is True

    request = forget_request_open(
        reason="the subject asked", ticket="DPO-1", user=bob, scope="user", by=admin
    )
    with django_capture_on_commit_callbacks(execute=False):
        forget_request_approve(request=request, by=admin)
    forget_request_execute(request_id=request.pk)
    request.refresh_from_db()
    assert request.status == "done"

    # The shard lets soft deletes go once its retention lease moves past them (~30 s): the
    # erasure merged once, a task merges again until none is left (here: the same, polled).
    deadline = time.monotonic() + 120
    while not memory_expunge_deleted(tenant_id=bob.memory_tenant_id, user_id=bob.memory_id):
        assert time.monotonic() < deadline, "deleted documents still counted after 120 s"
        time.sleep(5)
    # Every deleted document of the index was merged away: no trace of bob's (nor alice's).
    assert probe(carol, word) is False
