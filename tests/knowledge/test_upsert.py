"""Upserts that change nothing cost no embedding; a note that changed under a known-content
check is still embedded and written."""

from __future__ import annotations

import pytest

from knowledge.models import Entity
from knowledge.services import entities
from memory.services.documents import searchable_embed
from tests.knowledge.conftest import fm, project_of, writer

pytestmark = [pytest.mark.django_db, pytest.mark.services]


def test_re_sending_the_same_note_embeds_nothing(alice, store, monkeypatch):
    note = writer(alice, project_of(alice))
    calls: list[int] = []

    def counted(**kw):
        calls.append(1)
        return searchable_embed(**kw)

    monkeypatch.setattr(entities, "searchable_embed", counted)
    note("a.md", fm(id="a", body="one\n"))
    assert note("a.md", fm(id="a", body="one\n")).outcome == "unchanged"
    assert note("a.md", fm(id="a", body="two\n"), base=1).outcome == "updated"
    assert len(calls) == 2


def test_a_note_that_changed_after_the_check_is_embedded_in_a_second_pass(
    alice, store, monkeypatch
):
    note = writer(alice, project_of(alice))
    note("a.md", fm(id="a", body="one\n"))
    real_write = entities._write
    seen: list[int] = []

    def racing(*args):
        if not seen:  # another writer changes the note between the check and the write
            seen.append(1)
            Entity.objects.filter(key="a").update(content_hash="0" * 64)
        return real_write(*args)

    monkeypatch.setattr(entities, "_write", racing)
    done = note("a.md", fm(id="a", body="one\n"), base=1)
    assert done.outcome == "updated" and done.revision is not None
    assert done.revision.embedding and len(done.revision.embedding) == 384
