"""Reading notes: front matter with a YAML parser, the body as written, stable keys, edges."""

from __future__ import annotations

import pytest

from atlas_platform.exceptions import ValidationError
from knowledge.parsing import parse_note

NOTE = """---
id: plan-migrate
type: plan
title: Migrate the database
status: Blocked
blocked_by: [task-a, task-b]
depends_on: decision-c
initiative: platform
tags: [db, ops]
date: 2026-04-01
---
# Heading that is not the title

We wait on [[Task A]] and [[notes/other|the other note]], see [the runbook](../ops/runbook.md#step)
and [site](https://example.com/x.md).

```
[[not a link]]
```
"""


def test_front_matter_gives_fields_and_edges_and_keeps_the_body():
    note = parse_note(path="docs/plans/migrate.md", content=NOTE)
    assert note.key == "plan-migrate"
    assert (note.type, note.title, note.status) == ("plan", "Migrate the database", "blocked")
    assert note.tags == ["db", "ops"]
    assert note.front_matter["date"] == "2026-04-01"
    assert note.body.startswith("# Heading that is not the title\n\nWe wait on [[Task A]]")
    assert note.body == NOTE.split("---\n", 2)[2]
    assert note.edges == [
        ("blocked_by", "task-a"),
        ("blocked_by", "task-b"),
        ("depends_on", "decision-c"),
        ("part_of", "platform"),
        ("relates_to", "Task A"),
        ("relates_to", "docs/ops/runbook.md"),
        ("relates_to", "notes/other"),
    ]


def test_a_key_without_id_is_type_and_slug_of_the_relative_path():
    one = parse_note(path="docs/Plans/Migrate DB.md", content="---\ntype: plan\n---\nx")
    two = parse_note(path="./docs/Plans/Migrate DB.md", content="---\ntype: plan\n---\ny")
    assert one.key == two.key == "plan:docs-plans-migrate-db"
    plain = parse_note(path="notes/idea.md", content="# An idea\n\ntext")
    assert (plain.key, plain.type, plain.title) == ("note:notes-idea", "note", "An idea")
    assert plain.front_matter == {} and plain.body == "# An idea\n\ntext"


def test_a_string_or_a_list_in_blocked_by():
    one = parse_note(path="a.md", content="---\nblocked_by: x\ndepends_on: [y, z]\n---\n")
    assert one.edges == [("blocked_by", "x"), ("depends_on", "y"), ("depends_on", "z")]


@pytest.mark.parametrize(
    ("path", "content", "code"),
    [
        ("../a.md", "x", "bad_path"),
        ("/etc/a.md", "x", "bad_path"),
        ("a.txt", "x", "bad_path"),
        ("a.md", "---\n: : [\n---\nbody", "bad_front_matter"),
        ("a.md", "---\n- a list\n---\nbody", "bad_front_matter"),
        ("a.md", "---\na: &x [1]\nb: *x\n---\nbody", "bad_front_matter"),
        ("a.md", "---\nblocked_by: {a: 1}\n---\n", "bad_front_matter"),
        ("a.md", "---\nid: 'has space'\n---\n", "bad_front_matter"),
        ("a.md", "bad\x00", "bad_content"),
    ],
)
def test_bad_notes_are_refused_with_a_reason(path, content, code):
    with pytest.raises(ValidationError) as caught:
        parse_note(path=path, content=content)
    assert caught.value.code == code


def test_an_unclosed_front_matter_is_body():
    note = parse_note(path="a.md", content="---\ntitle: x\nno end")
    assert note.front_matter == {} and note.body == "---\ntitle: x\nno end"
