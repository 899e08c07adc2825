"""The commands, one module per group. Each declares its commands' arguments
(``arguments``, called by ``atlas_cli.parser``) and the commands that run with a profile
(``COMMANDS``: name -> function of the arguments and the ``Context``). ``GROUPS`` is the
order ``atlas --help`` lists them in."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from atlas_cli.commands import (
    delivery,
    graph,
    hooks,
    memories,
    memory_files,
    messages,
    presence,
    profile,
    spool,
    tasks,
)
from atlas_cli.core import Command

GROUPS = (profile, memories, tasks, messages, presence, delivery, memory_files, graph, spool, hooks)
COMMANDS: dict[str, Command] = {
    name: command for group in GROUPS for name, command in group.COMMANDS.items()
}
# Those that need no profile: login writes one, hooks edits settings.json.
STANDALONE: dict[str, Callable[[argparse.Namespace], int]] = {
    "login": profile.login,
    "hooks": hooks.hooks,
}
# Every command the parser knows; ``hook`` (hooks.run) runs before anything else, and never
# fails.
NAMES = frozenset([*COMMANDS, *STANDALONE, "hook"])
