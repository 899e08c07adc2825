"""Notes: any markdown with any front matter, sent to ``POST .../entities`` and as
``entity.upsert`` in ``POST .../operations``, is answered below 500. The YAML is generated to
break things: hostile scalars (``.inf``, ``.nan``, 5,000-digit integers, ``0000-00-00``, NUL
and surrogate escapes, control characters, odd tags), deep nesting, anchors and aliases, merge
keys, complex keys. A bad note is a 400 naming the field (alone), in a batch it is ``rejected``
alone and the good operation beside it applies; what was stored reads back, and the user's
export stays whole."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from django.test import Client
from hypothesis import event, given
from hypothesis import strategies as st

from agents.models import Project
from agents.services.projects import project_register
from tenants.models import User
from tests.agents.conftest import bound_token, register
from tests.fuzz.conftest import FUZZ, shared_error

pytestmark = pytest.mark.usefixtures("fuzz_store")

# YAML scalars as written: each reached a 500 once, or is a neighbour of one that did.
HOSTILE_SCALARS = [
    ".inf",
    "-.inf",
    ".nan",
    ".NaN",
    "1.0e+400",
    "-1.0e+400",
    "-" + "9" * 30,
    "9223372036854775808",
    "0x" + "f" * 80,
    "0b" + "1" * 64,
    "0o777",
    "190:20:30",
    "1_000",
    "0000-00-00",
    "2024-02-30",
    "9999-12-31",
    "2024-01-01T25:61:61Z",
    "2001-12-14t21:59:43.10-05:00",
    "2024-01-01 10:00:00 +99:00",
    '"\\0"',
    '"a\\0b"',
    '"\\ud800"',
    '"\\udfff tail"',
    '"\\ud83d\\ude00"',
    '"\\ud83d"',
    '"\\x01\\x7f\\e\\a"',
    '"\\N\\_\\L\\P"',
    '"\\U0010FFFF"',
    '"\\U00110000"',
    "'\u202e'",
    "yes",
    "off",
    "~",
    "null",
    "!!binary aGVsbG8=",
    "!!binary '***'",
    "!!int 0xZZ",
    "!!int ''",
    "!!bool maybe",
    "!!float abc",
    "!!timestamp nope",
    "!!str 5",
    "!!set {a, b}",
    "!!omap [a: 1, b: 2]",
    "!!pairs [a: 1, a: 2]",
    "!!python/object/apply:os.system ['true']",
    "!custom x",
    "&anchor [1, 2]",
    "*anchor",
]
NAMES = ["id", "type", "title", "status", "priority", "initiative", "tags", "blocked_by"]
KEY = st.one_of(
    st.sampled_from([*NAMES, "depends_on", "x", "'\\0'", '"\\ud800"', "? [a]", "1.5", "~"]),
    st.from_regex(r"[a-z_]{1,8}", fullmatch=True),
)
PLAIN_SCALARS = ["done", "plan", "2026-04-01", "42", "'quoted: text'", "[a, b]", "high"]
SCALAR = st.one_of(
    st.sampled_from(HOSTILE_SCALARS),
    st.sampled_from(PLAIN_SCALARS),
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.sampled_from([20, 70, 4300, 5000]).map(lambda n: "9" * n),  # built: a short repr
    st.integers(min_value=1, max_value=5000).map(lambda n: "9" * n),
    st.integers(min_value=100, max_value=600).map(lambda n: "x" * n),
    st.text(max_size=20).map(json.dumps),  # a JSON string is a YAML double-quoted one
)
VALUE = st.recursive(
    SCALAR,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4).map(lambda xs: "[" + ", ".join(xs) + "]"),
        st.dictionaries(KEY, inner, max_size=3).map(
            lambda d: "{" + ", ".join(f"{k}: {v}" for k, v in d.items()) + "}"
        ),
    ),
    max_leaves=10,
)
DEEP = st.integers(min_value=15, max_value=8000).map(lambda n: "[" * n + "]" * n)
LINE = st.one_of(
    st.tuples(KEY, st.one_of(VALUE, DEEP)).map(lambda kv: f"{kv[0]}: {kv[1]}"),
    st.sampled_from(
        [
            "base: &b {status: done}\nother: *b",
            "<<: {status: done}",
            "? [a, b]\n: c",
            "? 2024-01-01\n: dated",
            "tags: a, b, c",
            "blocked_by:\n  - one\n  - {two: 2}",
            "title: |\n  two\n  lines",
            "%YAML 1.1",
            "- a list",
            ": : [",
        ]
    ),
)
HUGE_KEY = st.just(5000).map(lambda n: "? " + "9" * n + "\n: huge key")
FRONT_MATTER = st.lists(st.one_of(LINE, HUGE_KEY), min_size=1, max_size=5).map("\n".join)
NOTE = st.tuples(FRONT_MATTER, st.text(max_size=60)).map(lambda p: f"---\n{p[0]}\n---\n{p[1]}")
PATHS = (f"notes/n{n}.md" for n in itertools.count())


@pytest.fixture
def writer(alice: User) -> tuple[str, Project]:
    project = project_register(user=alice, remote="git@x:a/b.git").project
    return bound_token(register(alice)), project


def below_500(response: Any) -> dict[str, Any]:
    assert response.status_code < 500, (response.status_code, response.content[:300])
    if response.status_code >= 400:
        return shared_error(response.content)
    body: dict[str, Any] = response.json()
    return body


def names_the_field(error: dict[str, Any]) -> None:
    if error["code"] == "bad_front_matter":
        assert error["details"]["field"].startswith("front_matter"), error


def reads_back(client: Client, token: str, project: Project, done: dict[str, Any]) -> None:
    key = done["entity"]["key"]
    got = client.get(
        f"/api/v1/users/alice/entities/{key}",
        {"project": project.key},
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert got.status_code == 200, got.content[:300]
    export: Any = client.get("/api/v1/users/alice/export", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert export.status_code == 200
    assert json.loads(b"".join(export.streaming_content))["counts"]["entities"] >= 1


def post(
    client: Client, token: str, path: str, body: Any, headers: dict[str, str] | None = None
) -> Any:
    return client.post(
        f"/api/v1/users/alice/{path}",
        json.dumps(body),
        content_type="application/json",
        headers={"Authorization": f"Bearer {token}", **(headers or {})},
    )


def test_the_generator_reaches_what_broke_before() -> None:
    """The named cases of the red team are in the pool the properties draw from (the
    5,000-digit integer and the deep nesting are built by ``SCALAR`` and ``DEEP``)."""
    assert {".inf", "-.inf", ".nan", "0000-00-00", '"\\0"', '"\\ud800"'} <= set(HOSTILE_SCALARS)


@FUZZ
@given(content=NOTE, ledger=st.booleans())
def test_any_note_upserted_alone_is_below_500(
    client: Client, writer: tuple[str, Project], content: str, ledger: bool
) -> None:
    """Alone, with or without an ``Operation-Id`` (the replay ledger's path)."""
    token, project = writer
    path = next(PATHS)
    body = {"project_key": project.key, "path": path, "content": content}
    headers = {"Operation-Id": f"alone-{path[7:-3]}"} if ledger else {}
    response = post(client, token, "entities", body, headers)
    answer = below_500(response)
    event(f"alone: {response.status_code} {answer.get('code', '')}")
    if response.status_code >= 400:
        names_the_field(answer)
    else:
        reads_back(client, token, project, answer)


@FUZZ
@given(contents=st.lists(NOTE, min_size=1, max_size=4))
def test_any_notes_in_a_batch_are_answered_each_and_the_good_one_applies(
    client: Client, writer: tuple[str, Project], contents: list[str]
) -> None:
    token, project = writer
    ops = [
        {
            "id": f"fuzz-{path[7:-3]}",
            "op": "entity.upsert",
            "args": {"project_key": project.key, "path": path, "content": content},
        }
        for path, content in zip(PATHS, [*contents, "# A plain note\n"], strict=False)
    ]
    response = post(client, token, "operations", {"operations": ops})
    results = below_500(response)["results"]
    assert response.status_code == 200 and len(results) == len(ops)
    for result in results:
        event(f"in a batch: {result['status']}")
        assert result["status_code"] < 500, result
        assert result["status"] in ("applied", "rejected"), result
        if result["status"] == "rejected":
            names_the_field(result["error"])
    assert results[-1]["status"] == "applied"  # the good note beside the hostile ones
    reads_back(client, token, project, results[-1]["result"])
