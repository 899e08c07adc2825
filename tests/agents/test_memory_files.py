"""Memory files through the operations endpoint and ``GET .../memory-files`` (the server
side of ``atlas sync-memories``): versions, conflicts, deletes, refusals."""

from __future__ import annotations

import hashlib

import pytest

from agents.models import MemoryFile
from agents.services.projects import project_register
from memory.selectors import memory_get

pytestmark = pytest.mark.django_db

OPS = "users/alice/operations"


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.fixture
def project(alice, es_store):
    return project_register(user=alice, remote="git@github.com:acme/shop.git").project.key


def put(api, token, op_id, **args):
    body = {"operations": [{"id": op_id, "op": "memory_file.put", "args": args}]}
    response = api.post(OPS, body, token=token)
    assert response.status_code == 200, response.content
    return response.json()["results"][0]


def test_a_put_based_on_a_stale_version_is_a_conflict_with_the_servers_version(
    api, alice_bound, project
):
    first = put(api, alice_bound, "p1", project_key=project, path="a.md", content="one\n")
    second = put(
        api,
        alice_bound,
        "p2",
        project_key=project,
        path="a.md",
        content="two\n",
        base_hash=sha("one\n"),
        machine_key="laptop",
    )
    stale = put(
        api,
        alice_bound,
        "p3",
        project_key=project,
        path="a.md",
        content="three\n",
        base_hash=sha("one\n"),
    )

    assert first["status"] == second["status"] == "applied"
    assert stale["status"] == "conflict" and stale["status_code"] == 409
    details = stale["error"]["details"]
    assert details["content_hash"] == sha("two\n") and details["machine_key"] == "laptop"
    row = MemoryFile.objects.get()
    assert row.version == 2 and memory_get(user=row.user, memory_id=row.memory_id).text == "two\n"


def test_the_listing_has_hashes_versions_tombstones_and_text(api, alice_bound, project):
    put(api, alice_bound, "p1", project_key=project, path="keep.md", content="kept\n")
    put(api, alice_bound, "p2", project_key=project, path="gone.md", content="gone\n")
    delete = {"project_key": project, "path": "gone.md", "base_hash": sha("gone\n")}
    api.post(
        OPS,
        {"operations": [{"id": "d1", "op": "memory_file.delete", "args": delete}]},
        token=alice_bound,
    )

    listed = api.get(f"users/alice/memory-files?project={project}&content=true", token=alice_bound)

    rows = {r["path"]: r for r in listed.json()["results"]}
    assert rows["keep.md"]["content"] == "kept\n" and rows["keep.md"]["content_hash"] == sha(
        "kept\n"
    )
    assert rows["gone.md"]["deleted"] and rows["gone.md"]["content"] is None


# Paths another machine's client would write somewhere other than where they read: plain
# escapes, and their look-alikes (fullwidth solidus and full stop, one- and two-dot leaders,
# small full stop, division and fraction slashes, fullwidth reverse solidus), absolute, home,
# a drive, .git, control and bidirectional-override characters.
UNSAFE_PATHS = [
    "/etc/passwd",
    "../x.md",
    "a//b.md",
    "a/./b.md",
    "a\\b.md",
    "",
    "\uff0e\uff0e/x.md",
    "\u2025/x.md",
    "\u2024\u2024/x.md",
    "\ufe52\ufe52/x.md",
    "a\uff0fb.md",
    "a\u2215b.md",
    "a\u2044b.md",
    "\uff3cetc\uff3cpasswd.md",
    "\uff0fetc/passwd.md",
    "~/x.md",
    "\uff5e/x.md",
    "C:/x.md",
    ".git/config",
    "notes/.GIT/hooks/x.md",
    "a\x01b.md",
    "a\nb.md",
    "a\u202eb.md",
    "x" * 501,
]


@pytest.mark.parametrize("path", UNSAFE_PATHS)
def test_paths_outside_the_folder_are_rejected_and_nothing_is_written(
    api, alice_bound, project, path
):
    result = put(api, alice_bound, "p1", project_key=project, path=path, content="x")

    assert result["status"] == "rejected" and result["status_code"] == 400
    assert MemoryFile.objects.count() == 0


def test_another_users_project_is_not_found(api, bob_bound, project):
    body = {
        "operations": [
            {
                "id": "p1",
                "op": "memory_file.put",
                "args": {"project_key": project, "path": "a.md", "content": "x"},
            }
        ]
    }

    result = api.post("users/bob/operations", body, token=bob_bound).json()["results"][0]

    assert result["status"] == "rejected" and result["error"]["code"] == "project_not_found"
    listed = api.get(f"users/bob/memory-files?project={project}", token=bob_bound)
    assert listed.status_code == 404


@pytest.mark.parametrize("path", ["notes/testing.md", "caf\u00e9.md", "\ufb01le.md", "a.b.md"])
def test_ordinary_names_are_kept_as_given(api, alice_bound, project, path):
    result = put(api, alice_bound, "p1", project_key=project, path=path, content="x")

    assert result["status"] == "applied" and MemoryFile.objects.get().path == path


def delete(api, token, op_id, **args):
    body = {"operations": [{"id": op_id, "op": "memory_file.delete", "args": args}]}
    return api.post(OPS, body, token=token).json()["results"][0]


def test_an_edit_of_a_version_another_machine_deleted_is_a_conflict_not_a_resurrection(
    api, alice_bound, project
):
    put(api, alice_bound, "p1", project_key=project, path="a.md", content="one\n")
    gone = delete(
        api,
        alice_bound,
        "d1",
        project_key=project,
        path="a.md",
        base_hash=sha("one\n"),
        machine_key="laptop",
    )

    edit = put(
        api,
        alice_bound,
        "p2",
        project_key=project,
        path="a.md",
        content="one, edited\n",
        base_hash=sha("one\n"),
    )

    assert gone["status"] == "applied"
    assert edit["status"] == "conflict" and edit["error"]["code"] == "memory_file_conflict"
    assert edit["error"]["details"]["deleted"] is True
    assert edit["error"]["details"]["machine_key"] == "laptop"
    assert MemoryFile.objects.get().deleted
    # the machine keeps its version on purpose (no base: it knows the file is gone there)
    kept = put(api, alice_bound, "p3", project_key=project, path="a.md", content="one, edited\n")
    assert kept["status"] == "applied" and not MemoryFile.objects.get().deleted


def test_a_delete_of_a_version_another_machine_edited_is_a_conflict(api, alice_bound, project):
    put(api, alice_bound, "p1", project_key=project, path="a.md", content="one\n")
    put(
        api,
        alice_bound,
        "p2",
        project_key=project,
        path="a.md",
        content="two\n",
        base_hash=sha("one\n"),
    )

    gone = delete(api, alice_bound, "d1", project_key=project, path="a.md", base_hash=sha("one\n"))

    assert gone["status"] == "conflict" and gone["error"]["details"]["content_hash"] == sha("two\n")
    assert not MemoryFile.objects.get().deleted
