"""The hooks in Claude Code's ``settings.json``: ``atlas hooks install|uninstall|status``.

Installing merges marked entries into ``settings.json`` (user scope: ``$CLAUDE_CONFIG_DIR``
or ``~/.claude``; project scope: ``<project>/.claude/settings.json``), after a backup that
never overwrites an earlier one (the first is kept as ``settings.json.atlas-original``), and
never writes a token: the hook command reads the profile. Uninstalling removes exactly the
marked entries. Each entry runs ``atlas hook NAME`` (``atlas_cli.hooks.run``).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
import time
from pathlib import Path
from typing import Any

MARK = "#atlas-cli-hook"
EVENTS: dict[str, tuple[str | None, str, int]] = {
    # event: (matcher, atlas hook name, Claude Code timeout in seconds)
    "SessionStart": (None, "session-start", 15),
    "PostToolUse": ("Write|Edit|MultiEdit|Bash", "post-tool-use", 5),  # Bash: mv, git mv
    "Stop": (None, "stop", 5),
    "SessionEnd": (None, "session-end", 10),
    "PreCompact": (None, "pre-compact", 10),
}
OPTIONAL = {"UserPromptSubmit": (None, "user-prompt-submit", 5)}


def settings_path(scope: str, project_root: Path) -> Path:
    if scope == "project":
        return project_root / ".claude" / "settings.json"
    config = Path(os.environ.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude")
    return config / "settings.json"


def default_command(scope: str) -> str:
    if scope == "project":
        return "atlas"  # a file meant to be committed: no machine's path in it
    found = shutil.which("atlas")
    return shlex.quote(found) if found else shlex.quote(sys.executable) + " -m atlas_cli"


def _ours(entry: Any) -> bool:
    return isinstance(entry, dict) and MARK in str(entry.get("command", ""))


def install(
    path: Path, *, command: str, profile: str | None, prompt_recall: bool = False
) -> dict[str, Any]:
    settings = _read(path)
    backup = _backup(path)
    hooks = settings.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise ValueError(f"{path}: 'hooks' is not an object; fix it by hand")
    events = {**EVENTS, **(OPTIONAL if prompt_recall else {})}
    _strip(hooks)
    profile_arg = f" --profile {shlex.quote(profile)}" if profile else ""
    for event, (matcher, name, timeout) in events.items():
        entry: dict[str, Any] = {
            "type": "command",
            "command": f"{command}{profile_arg} hook {name} {MARK}",
            "timeout": timeout,
        }
        group: dict[str, Any] = {"hooks": [entry]}
        if matcher:
            group["matcher"] = matcher
        hooks.setdefault(event, []).append(group)
    _write(path, settings)
    original = path.with_name(f"{path.name}.atlas-original")
    return {
        "settings": str(path),
        "backup": str(backup) if backup else None,
        "original": str(original) if original.exists() else None,
        "events": sorted(events),
    }


def uninstall(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {"settings": str(path), "removed": 0}
    settings = _read(path)
    backup = _backup(path)
    removed = _strip(settings.get("hooks") or {})
    if isinstance(settings.get("hooks"), dict) and not settings["hooks"]:
        del settings["hooks"]
    _write(path, settings)
    return {"settings": str(path), "backup": str(backup) if backup else None, "removed": removed}


def installed(path: Path) -> list[str]:
    if not path.exists():
        return []
    try:
        hooks = _read(path).get("hooks") or {}
    except ValueError:
        return []
    return sorted(
        event
        for event, groups in hooks.items()
        if any(_ours(h) for g in groups if isinstance(g, dict) for h in g.get("hooks", []))
    )


def _strip(hooks: dict[str, Any]) -> int:
    removed = 0
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept = []
        for group in groups:
            if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                before = len(group["hooks"])
                group["hooks"] = [h for h in group["hooks"] if not _ours(h)]
                removed += before - len(group["hooks"])
                if not group["hooks"]:
                    continue
            kept.append(group)
        if kept:
            hooks[event] = kept
        else:
            del hooks[event]
    return removed


def _read(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8") or "{}")
    except ValueError as exc:
        raise ValueError(f"{path} is not valid JSON ({exc}); nothing was changed") from exc
    if not isinstance(data, dict):
        raise ValueError(f"{path} is not a JSON object; nothing was changed")
    return data


def _backup(path: Path) -> Path | None:
    """Copy the settings aside before a change, never over an earlier copy: the file as it
    was before atlas first touched it is kept as ``<name>.atlas-original``, and each change
    gets its own ``<name>.atlas-backup-<time>[-n]``."""
    if not path.exists():
        return None
    if MARK not in path.read_text(encoding="utf-8", errors="replace"):
        _copy_new(path, path.with_name(f"{path.name}.atlas-original"))
    stamp = f"{path.name}.atlas-backup-{time.strftime('%Y%m%d%H%M%S')}"
    for n in range(1000):
        backup = path.with_name(stamp if n == 0 else f"{stamp}-{n}")
        if _copy_new(path, backup):
            return backup
    raise ValueError(f"{path}: too many backups this second; nothing was changed")


def _copy_new(source: Path, target: Path) -> bool:
    """Copy ``source`` to ``target`` only if ``target`` does not exist (False then)."""
    try:
        with source.open("rb") as src, target.open("xb") as dst:
            shutil.copyfileobj(src, dst)
    except FileExistsError:
        return False
    shutil.copystat(source, target)
    return True


def _write(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.atlas-tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)
