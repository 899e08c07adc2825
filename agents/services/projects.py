"""Projects: registered by the normalised git remote (else the path), so two checkouts of one
repository on two machines are the same project."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from django.db import IntegrityError, transaction

from agents.models import Project
from agents.services.common import audit, now
from atlas_platform.exceptions import ValidationError
from tenants.models import User
from tenants.services.validation import validate

_SCP_REMOTE = re.compile(r"^(?:[^@/]+@)?([^:/]+):(?!//)(.+)$")  # git@host:org/repo.git
_URL_REMOTE = re.compile(r"^[a-z][a-z0-9+.-]*://(?:[^@/]+@)?([^/:]+)(?::\d+)?/(.+)$", re.I)


def normalise_remote(remote: str) -> str:
    """``host/path`` of a git remote, whatever its spelling: scheme, user, port, ``.git`` and
    case of the host dropped (``git@github.com:Org/Repo.git`` == ``https://github.com/Org/Repo``)."""
    remote = remote.strip()
    match = _URL_REMOTE.match(remote) or _SCP_REMOTE.match(remote)
    if match is None:
        raise ValidationError("remote is not a git remote URL.", code="bad_remote")
    host, path = match.group(1).lower(), match.group(2).strip("/")
    path = path.removesuffix(".git").strip("/")
    if not path:
        raise ValidationError("remote names no repository.", code="bad_remote")
    return f"{host}/{path}"


def project_key(*, remote: str | None = None, path: str | None = None) -> tuple[str, str]:
    """(key, normalised remote or "") for a remote, else for a checkout path."""
    if remote:
        normal = normalise_remote(remote)
        return hashlib.sha256(f"git:{normal}".encode()).hexdigest(), normal
    if path and path.strip():
        where = path.strip().rstrip("/") or "/"
        return hashlib.sha256(f"path:{where}".encode()).hexdigest(), ""
    raise ValidationError("Give the project's git remote or its path.", code="bad_project")


@dataclass(frozen=True)
class ProjectRegistered:
    project: Project
    created: bool


def project_register(
    *,
    user: User,
    remote: str | None = None,
    path: str | None = None,
    name: str | None = None,
    team_visible: bool | None = None,
) -> ProjectRegistered:
    """The user's project for this remote (or path), created on first registration; a later
    registration may rename it or change its team visibility (audited)."""
    key, normal = project_key(remote=remote, path=path)
    default_name = (normal or (path or "").rstrip("/")).rsplit("/", 1)[-1] or key[:12]
    name = (name or "").strip() or default_name
    with transaction.atomic():
        project = Project.objects.for_caller(user).select_for_update().filter(key=key).first()
        if project is not None:
            return ProjectRegistered(_update(project, name, team_visible), created=False)
        project = Project(
            user=user,
            key=key,
            name=name,
            remote=normal,
            team_visible=bool(team_visible),
            created_at=now(),
        )
        validate(project, exclude=["user"])
        try:
            with transaction.atomic():
                project.save()
        except IntegrityError:  # registered concurrently
            return ProjectRegistered(Project.objects.for_caller(user).get(key=key), created=False)
        audit("project.register", user=user, target=project, team_visible=project.team_visible)
    return ProjectRegistered(project, created=True)


def _update(project: Project, name: str, team_visible: bool | None) -> Project:
    changes: dict[str, object] = {"name": name} if name != project.name else {}
    if team_visible is not None and team_visible != project.team_visible:
        changes["team_visible"] = team_visible
    if not changes:
        return project
    for field, value in changes.items():
        setattr(project, field, value)
    validate(project, exclude=["user"])
    project.save(update_fields=list(changes))
    audit("project.update", user=project.user, target=project, fields=sorted(changes))
    return project
