"""``atlas graph reconcile``: plan (default), then with ``--apply`` ask and apply. The server
deletes only notes this machine has seen and moves notes found at a new path; ``--force``
lifts its mass-deletion guard."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from atlas_cli import config, memsync, moves
from atlas_cli.core import OK, Context, Failure, read
from atlas_cli.ignore import is_note, note_rules
from atlas_cli.output import emit


def arguments(s: argparse.ArgumentParser) -> None:
    s.add_argument("--root", action="append")
    s.add_argument("--apply", action="store_true", help="apply the plan (asks unless --yes)")
    s.add_argument("--yes", action="store_true")
    s.add_argument(
        "--force",
        action="store_true",
        help="lift the mass-deletion guard (more than 20, or 10%% of the notes under the roots)",
    )


def reconcile(args: argparse.Namespace, ctx: Context) -> int:
    """Plan (default), then with --apply ask and apply: deletes only notes this machine has
    seen; moves notes found at a new path; --force lifts the mass-deletion guard."""
    plan = _plan(args, ctx)
    text = reconcile_text(plan)
    names = [c["key"] for c in plan.get("candidates", [])]
    changes = names + [m["key"] for m in plan.get("moves", [])]
    if not args.apply:
        emit(args, plan, text + "\n(plan only; --apply to apply)")
        return OK
    if changes and not args.yes:
        print(text)
        answer = input(f"delete {len(names)} and move {len(changes) - len(names)} entities? [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            emit(args, {"applied": False}, "nothing deleted")
            return OK
    receipt = read(
        ctx,
        "POST",
        "graph/reconcile/apply",
        {"plan_id": plan["plan_id"], "manifest_hash": plan["manifest_hash"]},
    )
    emit(
        args,
        receipt,
        f"deleted {len(receipt.get('deleted', []))}, moved {len(receipt.get('moved', []))}; "
        f"restorable until {receipt.get('restorable_until')}",
    )
    return OK


def _plan(args: argparse.Namespace, ctx: Context) -> Any:
    """The server's plan for this checkout's notes under the roots."""
    roots = args.root or [""]
    body = {
        "project_key": ctx.project.key,
        "roots": roots,
        "files": reconcile_manifest(ctx.project.root, roots),
        "machine_key": config.machine_key(),
        "force": bool(args.force),
    }
    try:
        return read(ctx, "POST", "graph/reconcile/plan", body)
    except Failure as exc:
        if "too_many_deletions" in str(exc):
            raise Failure(
                f"{exc} Check the plan, then rerun with --force.", exc.code, exc.data
            ) from None
        raise


def reconcile_manifest(root: Path, roots: list[str]) -> list[dict[str, str]]:
    """Every note under the roots (hidden folders and what `.atlasignore` matches skipped):
    path, hash, and its front matter id when it has one (reconcile finds a moved note by it)."""
    prefixes = [r.strip("/") + "/" if r.strip("/") else "" for r in roots]
    rules = note_rules(root)  # an ignored file is not even named to the server
    files = []
    for p in sorted(root.rglob("*.md")):
        rel = p.relative_to(root).as_posix()
        if any(part.startswith(".") for part in p.relative_to(root).parts):
            continue
        if not any(rel.startswith(prefix) for prefix in prefixes) or not is_note(rel, rules):
            continue
        data = p.read_bytes()
        item = {"path": rel, "hash": memsync.digest(data)}
        found = moves.front_matter_id(data.decode("utf-8", "replace"))
        if found:
            item["id"] = found
        files.append(item)
    return files


def reconcile_text(plan: dict[str, Any]) -> str:
    """The plan as a person reads it: each missing note, what happens to it and why."""
    lines = [f"{c['key']} ({c['path']}): delete: {c.get('why', '')}" for c in plan["candidates"]]
    lines += [
        f"{m['key']} ({m['path']}): move to {m['to']}: {m.get('why', '')}"
        for m in plan.get("moves", [])
    ]
    lines += [f"{k['key']} ({k['path']}): keep: {k.get('why', '')}" for k in plan.get("kept", [])]
    return "\n".join(lines) or "nothing to delete or move"
