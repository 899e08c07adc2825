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


@pytest.mark.parametrize("path", ["/etc/passwd", "../x.md", "a//b.md", "a/./b.md", "a\\b.md", ""])
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
