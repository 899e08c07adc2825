"""``atlas memory-files [--pull]`` (``sync-memories``, the source design's spelling, is its
alias): send this project's memory files (Claude Code's auto-memory folder, or ``--dir``);
``--pull`` also brings other machines' changes, with conflict files, never a silent
overwrite (``atlas_cli.memsync``). SessionStart does the same both ways."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from atlas_cli import config, memsync
from atlas_cli.conflicts import conflict_lines
from atlas_cli.core import OFFLINE, OK, REFUSED, Command, Context, Failure, read
from atlas_cli.output import emit
from atlas_cli.project import memory_dir

if TYPE_CHECKING:
    from atlas_cli.parser import Subcommands

NAME, ALIAS = "memory-files", "sync-memories"


def arguments(commands: Subcommands) -> None:
    s = commands.add(
        NAME,
        aliases=(ALIAS,),
        help="send memory files; --pull brings other machines' changes",
    )
    if s:
        s.add_argument("--pull", action="store_true")
        s.add_argument(
            "--dir", help="the folder (default: Claude Code's auto-memory of the project)"
        )
        s.add_argument("--force", action="store_true", help=argparse.SUPPRESS)
        s.add_argument("--budget", type=float, default=30.0)


def exchange(ctx: Context, *, folder: Path, do_pull: bool, budget: float) -> memsync.SyncReport:
    """Push ``folder``'s changes (spooled, then delivered within ``budget``), then with
    ``do_pull`` bring the server's; offline, the pull is skipped and said so in the report."""
    report = memsync.SyncReport()
    key = ctx.register_project()
    machine = config.machine_key()
    memsync.push(ctx.spool, project_key=key, folder=folder, machine_key=machine, report=report)
    ctx.deliver(budget)
    if do_pull:
        try:
            remote = read(ctx, "GET", "memory-files", project=key, content=True)
        except Failure as exc:
            if exc.code != OFFLINE:
                raise
            # The push is spooled (a write never fails offline); the pull waits for the server.
            report.pull_skipped = str(exc)
            return report
        memsync.pull(
            ctx.spool,
            remote.get("results", []),
            project_key=key,
            folder=folder,
            machine_key=machine,
            report=report,
        )
    return report


def memory_files(args: argparse.Namespace, ctx: Context) -> int:
    folder = Path(args.dir) if args.dir else memory_dir(ctx.project.root)
    report = exchange(ctx, folder=folder, do_pull=args.pull, budget=args.budget)
    data = {"folder": str(folder), **report.as_dict()}
    human = (
        f"{folder}: pushed {len(report.pushed)}, deleted {len(report.deleted)}, "
        f"pulled {len(report.pulled)}, "
        f"removed {len(report.removed)}, conflicts {len(report.conflicts)}"
        + "".join(f"\nconflict: {c}" for c in report.conflicts)
        + "".join(f"\nskipped: {c}" for c in report.skipped)
    )
    if report.conflicts:
        conflicts = memsync.open_conflicts(ctx.spool, project_key=ctx.project.key, folder=folder)
        human += "\n" + "\n".join(conflict_lines(conflicts, folder))
    if report.pull_skipped:
        human += f"\npull skipped: {report.pull_skipped}"
        print(f"atlas: pull skipped, {report.pull_skipped}", file=sys.stderr)
    emit(args, data, human)
    return REFUSED if report.conflicts else OK


COMMANDS: dict[str, Command] = {NAME: memory_files, ALIAS: memory_files}
