"""Reading notes: front matter with a YAML parser, the body as written, stable keys, edges."""

from __future__ import annotations

import json

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


# Every value the YAML loader can produce is kept as written or refused with the field named.
HOSTILE = [
    ("x: " + "[" * 8000 + "]" * 8000, "x", "too_deep"),
    ("a:\n  b: " + "{c: " * 30 + "1" + "}" * 30, "a", "too_deep"),
    ("a: &l [lol, lol]\nb: [*l, *l, *l]", "b", "alias"),
    ("x: *nowhere", "x", "alias"),  # an alias of no anchor: still the alias refusal
    ("x: .inf", "x", "not_finite"),
    ("x: -.inf", "x", "not_finite"),
    ("x: .nan", "x", "not_finite"),
    ("x: 1.0e+400", "x", "not_finite"),
    ("x: [1, " + "9" * 5000 + "]", "x[1]", "integer_too_large"),
    ("? " + "9" * 5000 + "\n: v", "", "integer_too_large"),
    ("x: 9223372036854775808", "x", "integer_too_large"),
    ('x: "\\0"', "x", "nul_character"),
    ('x: {"y\\0": 1}', "x", "nul_character"),
    ('"\\ud800": 1', "", "surrogate"),
    ('x: "\\ud800"', "x", "surrogate"),
    ('tags: [a, "\\udc00b"]', "tags[1]", "surrogate"),
    ("x: a\x01b", "", "not_yaml"),  # a control character: the reader refuses it at once
    ("x: a\x1bb", "", "not_yaml"),
    ("x: !!int 0xZZ", "line 2", "not_yaml"),
    ("x: !!bool maybe", "line 2", "not_yaml"),
    ("x: !!timestamp nope", "x", None),  # kept as the text written
]


@pytest.mark.parametrize(("yaml_text", "where", "reason"), HOSTILE)
def test_hostile_front_matter_is_refused_naming_the_field(yaml_text, where, reason):
    content = f"---\n{yaml_text}\n---\nbody"
    if reason is None:
        assert parse_note(path="a.md", content=content).front_matter == {"x": "nope"}
        return
    with pytest.raises(ValidationError) as caught:
        parse_note(path="a.md", content=content)
    assert caught.value.code == "bad_front_matter"
    assert caught.value.details["reason"] == reason
    assert where in caught.value.message
    if not where.startswith("line"):
        assert caught.value.details["field"] == f"front_matter.{where}".rstrip(".")


def test_odd_dates_and_other_odd_values_are_kept_as_written():
    note = parse_note(
        path="a.md",
        content=(
            "---\n"
            "never: 0000-00-00\n"
            "feb30: 2024-02-30\n"
            "real: 2024-02-29\n"
            "odd_zone: 2024-01-01T10:00:00+99:00\n"
            "big: 9223372036854775807\n"
            "small: -9223372036854775808\n"
            "float: 1.5e+300\n"
            'pair: "\\ud83d\\ude00"\n'
            'control: "\\x01\\t\\e"\n'
            "set: !!set {b, a}\n"
            "pairs: !!pairs [a: 1, b: 2]\n"
            "blob: !!binary aGVsbG8=\n"
            "? 2024-01-01\n"
            ": dated key\n"
            "---\nbody"
        ),
    )
    assert note.front_matter == {
        "never": "0000-00-00",
        "feb30": "2024-02-30",
        "real": "2024-02-29",
        "odd_zone": "2024-01-01T10:00:00+99:00",
        "big": 2**63 - 1,
        "small": -(2**63),
        "float": 1.5e300,
        "pair": "\U0001f600",  # an escaped surrogate pair is the character it spells
        "control": "\x01\t\x1b",
        "set": ["a", "b"],
        "pairs": [["a", 1], ["b", 2]],
        "blob": "aGVsbG8=",
        "2024-01-01": "dated key",
    }


def test_deep_nesting_is_refused_before_the_yaml_composer_recurses():
    deep = "---\nx: " + "[" * 8000 + "]" * 8000 + "\n---\n"
    assert len(deep) < 16_384
    with pytest.raises(ValidationError) as caught:
        parse_note(path="a.md", content=deep)
    assert "nested deeper than 20" in caught.value.message


def test_a_lone_surrogate_in_the_content_is_refused():
    with pytest.raises(ValidationError) as caught:
        parse_note(path="a.md", content="body \ud800")
    assert caught.value.code == "bad_content"


def test_every_refusal_of_front_matter_names_the_field():
    for content, field in [
        ("---\ntype: [a]\n---\n", "front_matter.type"),
        ("---\ntitle: " + "x" * 501 + "\n---\n", "front_matter.title"),
        ("---\nblocked_by: [{a: 1}]\n---\n", "front_matter.blocked_by"),
        ("---\ntags: {a: 1}\n---\n", "front_matter.tags"),
        ("---\nid: 'has space'\n---\n", "front_matter.id"),
        ('---\n"\\ud800": ' + "[" * 30 + "]" * 30 + "\n---\n", "front_matter.\\ud800"),
    ]:
        with pytest.raises(ValidationError) as caught:
            parse_note(path="a.md", content=content)
        assert caught.value.details["field"] == field, content
        json.dumps(caught.value.details, ensure_ascii=False).encode()  # the answer encodes


def test_a_refused_note_is_refused_again():
    bad = "---\nid: [unclosed\n---\nbody\n"
    for _ in range(2):
        with pytest.raises(ValidationError):
            parse_note(path="notes/bad.md", content=bad)
