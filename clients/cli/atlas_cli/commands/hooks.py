"""``atlas hooks install|uninstall|status`` (Claude Code's settings.json: ``hooks.settings``)
and ``atlas hook NAME``, which the installed hooks run (``hooks.run``). Neither needs a
profile's token."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from atlas_cli.core import OK, Command
from atlas_cli.hooks import settings
from atlas_cli.hooks.run import HOOKS
from atlas_cli.output import emit
from atlas_cli.project import resolve

if TYPE_CHECKING:
    from atlas_cli.parser import Subcommands


def arguments(commands: Subcommands) -> None:
    if s := commands.add("hooks", help="Claude Code hooks"):
        h = s.add_subparsers(dest="hooks_cmd", required=True)
        for name in ("install", "uninstall", "status"):
            s = h.add_parser(name, parents=[commands.common])
            s.add_argument("--scope", choices=["user", "project"], default="user")
            s.add_argument("--settings", help="this settings.json instead")
            if name == "install":
                s.add_argument(
                    "--command",
                    dest="hook_command",
                    help="how the hook runs atlas (default: this atlas)",
                )
                s.add_argument(
                    "--prompt-recall", action="store_true", help="also UserPromptSubmit recall"
                )
    if s := commands.add("hook", help=argparse.SUPPRESS):
        s.add_argument("name", choices=sorted(HOOKS))
        s.add_argument("rest", nargs="*", help=argparse.SUPPRESS)


def hooks(args: argparse.Namespace) -> int:
    root = resolve().root
    path = Path(args.settings) if args.settings else settings.settings_path(args.scope, root)
    if args.hooks_cmd == "install":
        command = args.hook_command or settings.default_command(args.scope)
        done = settings.install(
            path, command=command, profile=args.profile, prompt_recall=args.prompt_recall
        )
    elif args.hooks_cmd == "uninstall":
        done = settings.uninstall(path)
    else:
        done = {"settings": str(path), "installed": settings.installed(path)}
    emit(args, done, json.dumps(done, indent=2))
    return OK


COMMANDS: dict[str, Command] = {}  # hooks and hook need no profile: see commands.STANDALONE
