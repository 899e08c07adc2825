"""Where the client keeps its state, and its profiles.

``ATLAS_HOME`` (default ``$XDG_CONFIG_HOME/atlas``, else ``~/.config/atlas``) holds
``config.json`` (profiles, this machine's key; ``ATLAS_URL`` overrides a profile's url),
``tokens/<profile>`` (owner-only) and ``spool/<profile>.db``. A token may come from the
environment instead (``ATLAS_TOKEN``, or the variable a profile names in ``token_env``),
so nothing secret needs to be on disk.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import socket
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any


class ConfigError(Exception):
    """The client is not configured (no profile, no token)."""


def home() -> Path:
    explicit = os.environ.get("ATLAS_HOME")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "atlas"


def _private_dir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    with contextlib.suppress(OSError):
        os.chmod(path, 0o700)
    return path


def write_private(path: Path, text: str) -> None:
    """Write a file only its owner may read (created 0600, replaced atomically)."""
    _private_dir(path.parent)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def load() -> dict[str, Any]:
    path = home() / "config.json"
    if not path.exists():
        return {"profiles": {}}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path} is not readable JSON ({exc}); fix or remove it.") from exc
    return data if isinstance(data, dict) else {"profiles": {}}


def save(data: dict[str, Any]) -> None:
    write_private(home() / "config.json", json.dumps(data, indent=2, sort_keys=True) + "\n")


def machine_key() -> str:
    """This installation's stable key, generated once (``ATLAS_MACHINE_KEY`` overrides)."""
    explicit = os.environ.get("ATLAS_MACHINE_KEY")
    if explicit:
        return explicit
    data = load()
    key = data.get("machine_key")
    if not isinstance(key, str) or not key:
        key = f"m-{uuid.uuid4().hex[:20]}"
        data["machine_key"] = key
        save(data)
    return key


def machine_label() -> str:
    return os.environ.get("ATLAS_MACHINE_LABEL") or socket.gethostname()[:200]


def os_name() -> str:
    return f"{platform.system()} {platform.release()}"[:100]


@dataclass(frozen=True)
class Profile:
    name: str
    url: str
    user: str
    agent: str
    token: str | None
    token_source: str
    brief_tokens: int | None = None  # the SessionStart brief's size (None: the server's)

    @property
    def spool_path(self) -> Path:
        return _private_dir(home() / "spool") / f"{self.name}.db"

    @property
    def cache_dir(self) -> Path:
        return _private_dir(home() / "cache" / self.name)


def profile_name(explicit: str | None = None) -> str:
    return explicit or os.environ.get("ATLAS_PROFILE") or load().get("default_profile") or "default"


def profile(explicit: str | None = None) -> Profile:
    name = profile_name(explicit)
    data = load().get("profiles", {}).get(name)
    if not isinstance(data, dict):
        raise ConfigError(f"No profile {name!r}: run `atlas login --url URL --token -`.")
    token, source = _token(name, data)
    return Profile(
        name=name,
        url=str(os.environ.get("ATLAS_URL") or data.get("url", "")).rstrip("/"),
        user=str(data.get("user", "")),
        agent=str(data.get("agent", "claude-code")),
        token=token,
        token_source=source,
        brief_tokens=_brief_tokens(data.get("brief_tokens")),
    )


def _brief_tokens(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _token(name: str, data: dict[str, Any]) -> tuple[str | None, str]:
    if os.environ.get("ATLAS_TOKEN"):
        return os.environ["ATLAS_TOKEN"].strip(), "env ATLAS_TOKEN"
    variable = data.get("token_env")
    if isinstance(variable, str) and variable and os.environ.get(variable):
        return os.environ[variable].strip(), f"env {variable}"
    path = home() / "tokens" / name
    if path.exists():
        return path.read_text(encoding="utf-8").strip() or None, str(path)
    return None, "none"


def login(
    *,
    name: str,
    url: str,
    user: str,
    agent: str,
    token: str | None,
    token_env: str | None,
    brief_tokens: int | None = None,
) -> Path | None:
    data = load()
    profiles = data.setdefault("profiles", {})
    entry: dict[str, Any] = {"url": url.rstrip("/"), "user": user, "agent": agent}
    if token_env:
        entry["token_env"] = token_env
    kept = (profiles.get(name) or {}).get("brief_tokens")
    if brief_tokens or kept:
        entry["brief_tokens"] = brief_tokens or kept
    profiles[name] = entry
    data.setdefault("default_profile", name)
    save(data)
    if token:
        path = home() / "tokens" / name
        write_private(path, token.strip() + "\n")
        return path
    return None
