"""The project a directory belongs to: its git root, its remote (read from the git config,
no ``git`` binary needed), and the project key the server derives from them. Two checkouts
of one repository (two paths, two machines) have one key; a directory without a remote is
keyed by its path."""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

# The same normalisation as the server's agents.services.projects (tests keep them equal).
_SCP_REMOTE = re.compile(r"^(?:[^@/]+@)?([^:/]+):(?!//)(.+)$")
_URL_REMOTE = re.compile(r"^[a-z][a-z0-9+.-]*://(?:[^@/]+@)?([^/:]+)(?::\d+)?/(.+)$", re.I)


def normalise_remote(remote: str) -> str | None:
    remote = remote.strip()
    match = _URL_REMOTE.match(remote) or _SCP_REMOTE.match(remote)
    if match is None:
        return None
    host, path = match.group(1).lower(), match.group(2).strip("/")
    path = path.removesuffix(".git").strip("/")
    return f"{host}/{path}" if path else None


def key_for(*, remote: str | None, path: str | None) -> str:
    normal = normalise_remote(remote) if remote else None
    if normal:
        return hashlib.sha256(f"git:{normal}".encode()).hexdigest()
    where = (path or "").strip().rstrip("/") or "/"
    return hashlib.sha256(f"path:{where}".encode()).hexdigest()


def git_root(start: Path) -> Path | None:
    here = start.resolve()
    for candidate in (here, *here.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


def _git_dir(root: Path) -> Path | None:
    dot = root / ".git"
    if dot.is_dir():
        return dot
    try:  # a worktree or submodule: "gitdir: <path>"
        text = dot.read_text(encoding="utf-8").strip()
    except OSError:
        return None
    if not text.startswith("gitdir:"):
        return None
    gitdir = Path(text.split(":", 1)[1].strip())
    gitdir = gitdir if gitdir.is_absolute() else (root / gitdir).resolve()
    common = gitdir / "commondir"
    if common.exists():
        shared = Path(common.read_text(encoding="utf-8").strip())
        return shared if shared.is_absolute() else (gitdir / shared).resolve()
    return gitdir


def git_remote(root: Path) -> str | None:
    """The ``origin`` remote's url (else the first remote's) from the git config."""
    gitdir = _git_dir(root)
    if gitdir is None:
        return None
    try:
        lines = (gitdir / "config").read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    section = ""
    urls: dict[str, str] = {}
    for raw in lines:
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip()
            continue
        name, sep, value = line.partition("=")
        if sep and name.strip().lower() == "url" and section.startswith("remote "):
            remote = section[len("remote ") :].strip().strip('"')
            urls.setdefault(remote, value.strip().strip('"'))
    if "origin" in urls:
        return urls["origin"]
    return urls[sorted(urls)[0]] if urls else None


@dataclass(frozen=True)
class Project:
    root: Path
    remote: str | None
    key: str

    @property
    def name(self) -> str:
        normal = normalise_remote(self.remote) if self.remote else None
        return (normal or str(self.root)).rstrip("/").rsplit("/", 1)[-1]

    def register_args(self) -> dict[str, str]:
        if self.remote and normalise_remote(self.remote):
            return {"remote": self.remote}
        return {"path": str(self.root)}


def resolve(start: Path | None = None) -> Project:
    start = Path(start or os.environ.get("CLAUDE_PROJECT_DIR") or os.getcwd())
    root = git_root(start) or start.resolve()
    remote = git_remote(root) if (root / ".git").exists() else None
    return Project(root=root, remote=remote, key=key_for(remote=remote, path=str(root)))


def claude_memory_dir(root: Path) -> Path:
    """Claude Code's auto-memory folder for a project: ``<config>/projects/<slug>/memory``,
    the slug being the git root's path with every non-alphanumeric character turned to ``-``."""
    config = Path(os.environ.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude")
    slug = re.sub(r"[^A-Za-z0-9]", "-", str(root))
    if len(slug) > 200:
        slug = slug[:200] + "-" + hashlib.sha256(str(root).encode()).hexdigest()[:8]
    return config / "projects" / slug / "memory"


def memory_dir(root: Path) -> Path:
    """The memory-file folder the CLI and the hooks share: ``ATLAS_MEMORY_DIR``, else Claude
    Code's auto-memory folder of the project at ``root``."""
    explicit = os.environ.get("ATLAS_MEMORY_DIR")
    return Path(explicit) if explicit else claude_memory_dir(root)
