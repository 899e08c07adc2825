"""The client package stands alone: no server code, no third-party imports, and the same
project key as the server for every spelling of a remote."""

from __future__ import annotations

import ast
import json
import subprocess
import sys

import pytest

from agents.services.projects import project_key
from tests.cli.conftest import CLI_SOURCE

STDLIB = set(sys.stdlib_module_names)


def test_the_client_imports_the_standard_library_and_itself_only():
    imported = set()
    for path in (CLI_SOURCE / "atlas_cli").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imported |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module:
                imported.add(node.module.split(".")[0])

    assert imported - STDLIB - {"atlas_cli", "__future__"} == set()


def test_the_installed_client_runs_without_the_servers_packages(atlas_bin):
    python = atlas_bin / "python"
    probe = "import importlib.util as u; print(u.find_spec('django') is None)"

    alone = subprocess.run([str(python), "-I", "-c", probe], capture_output=True, text=True)
    version = subprocess.run(
        [str(atlas_bin / "atlas"), "--version"], capture_output=True, text=True
    )
    bridge = subprocess.run([str(atlas_bin / "bridge"), "--help"], capture_output=True, text=True)

    assert alone.stdout.strip() == "True"
    assert version.stdout.startswith("atlas-cli ")
    assert bridge.returncode == 0 and "sync-memories" in bridge.stdout


@pytest.mark.parametrize(
    "remote",
    [
        "git@github.com:Acme/Shop.git",
        "https://github.com/Acme/Shop",
        "ssh://git@GitHub.com:22/Acme/Shop.git/",
        "https://user@github.com/Acme/Shop.git",
    ],
)
def test_the_client_derives_the_servers_project_key(atlas_bin, remote):
    assert client_key(atlas_bin, remote, "/anywhere") == project_key(remote=remote)[0]
    assert client_key(atlas_bin, remote, None) == project_key(remote="github.com:Acme/Shop")[0]


def test_a_checkout_without_a_remote_is_keyed_by_its_path(atlas_bin):
    assert client_key(atlas_bin, None, "/home/me/notes/") == project_key(path="/home/me/notes/")[0]


def client_key(atlas_bin, remote, path) -> str:
    code = (
        "import sys; from atlas_cli.project import key_for; "
        "print(key_for(remote=sys.argv[1] or None, path=sys.argv[2] or None))"
    )
    done = subprocess.run(
        [str(atlas_bin / "python"), "-I", "-c", code, remote or "", path or ""],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def test_the_client_refuses_exactly_the_memory_file_paths_the_server_refuses(atlas_bin):
    from agents.services.memory_files import path_problem
    from tests.agents.test_memory_files import UNSAFE_PATHS

    probes = [*UNSAFE_PATHS, "notes/testing.md", "caf\u00e9.md", "\ufb01le.md", "a.b.md"]
    code = (
        "import json, sys; from atlas_cli.paths import path_problem; "
        "print(json.dumps([path_problem(p) is None for p in json.load(sys.stdin)]))"
    )
    done = subprocess.run(
        [str(atlas_bin / "python"), "-I", "-c", code],
        input=json.dumps(probes),
        capture_output=True,
        text=True,
        check=True,
    )

    client = json.loads(done.stdout)
    assert client == [path_problem(p) is None for p in probes]
    assert client.count(True) == 4  # the ordinary names only
