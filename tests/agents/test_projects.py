"""Projects: one key per repository whatever the remote's spelling; private unless team
visible, and then within the tenant only."""

from __future__ import annotations

from typing import Any

import pytest

from agents.selectors import project_get, project_list
from agents.services.projects import normalise_remote, project_key, project_register
from atlas_platform.exceptions import NotFound, ValidationError
from tenants.models import AuditEvent

pytestmark = pytest.mark.django_db

SPELLINGS = [
    "git@github.com:Acme/Rocket.git",
    "https://github.com/Acme/Rocket",
    "https://alice@GitHub.com/Acme/Rocket.git/",
    "ssh://git@github.com:22/Acme/Rocket.git",
]


@pytest.mark.parametrize("remote", SPELLINGS)
def test_every_spelling_of_a_remote_is_one_key(remote):
    assert normalise_remote(remote) == "github.com/Acme/Rocket"
    assert project_key(remote=remote) == project_key(remote=SPELLINGS[0])


def test_two_checkouts_of_one_repository_are_one_project(alice):
    desk = project_register(user=alice, remote=SPELLINGS[0], path="/home/alice/rocket")
    laptop = project_register(user=alice, remote=SPELLINGS[1], path="/Users/alice/src/rocket")

    assert desk.created and not laptop.created
    assert laptop.project.pk == desk.project.pk and desk.project.name == "Rocket"


def test_without_a_remote_the_path_is_the_key(alice):
    one = project_register(user=alice, path="/srv/scratch/")
    two = project_register(user=alice, path="/srv/scratch")
    other = project_register(user=alice, path="/srv/other")

    assert one.project.pk == two.project.pk != other.project.pk


def test_a_project_is_private_until_team_visible_and_then_only_in_its_tenant(alice, bob, charlie):
    key = project_register(user=alice, remote=SPELLINGS[0]).project.key

    with pytest.raises(NotFound):
        project_get(user=bob, key=key)
    project_register(user=alice, remote=SPELLINGS[0], team_visible=True)

    assert project_get(user=bob, key=key).user == alice
    assert [p.key for p in project_list(user=bob, include_team=True)] == [key]
    assert list(project_list(user=bob)) == []
    with pytest.raises(NotFound):
        project_get(user=charlie, key=key)
    assert list(project_list(user=charlie, include_team=True)) == []
    assert AuditEvent.objects.filter(action="project.update").count() == 1


def test_bad_projects_are_refused(alice):
    cases: list[dict[str, Any]] = [
        {},
        {"remote": "not a remote"},
        {"remote": "https://github.com/"},
        {"path": "  "},
    ]
    for bad in cases:
        with pytest.raises(ValidationError):
            project_register(user=alice, **bad)
