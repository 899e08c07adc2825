"""The command line's parser: the options every command takes (before or after its name),
each command's arguments (declared by its module in ``atlas_cli.commands``), and the fast
path that builds the named command's parser alone."""

from __future__ import annotations

import argparse
import contextlib
import sys
from typing import Any, NoReturn

from atlas_cli import __version__, commands

COMMON_DEFAULTS: dict[str, Any] = {"json": False, "profile": None, "timeout": 10.0}


class Subcommands:
    """Where a command module adds its commands' parsers: ``add`` returns a command's parser,
    or None when the parser is built for another command alone. ``common`` is the parent of
    every (sub)command's parser."""

    def __init__(
        self,
        sub: argparse._SubParsersAction[argparse.ArgumentParser],
        common: argparse.ArgumentParser,
        only: str | None,
    ) -> None:
        self.sub = sub
        self.common = common
        self.only = only

    def add(
        self, name: str, *, aliases: tuple[str, ...] = (), **kw: Any
    ) -> argparse.ArgumentParser | None:
        if self.only is not None and self.only not in (name, *aliases):
            return None
        if aliases:
            kw["aliases"] = list(aliases)
        return self.sub.add_parser(name, parents=[self.common], **kw)


def common_options() -> argparse.ArgumentParser:
    """The options every command takes, before or after its name. Their defaults are
    SUPPRESS: argparse shares these action objects between the parsers, and a subcommand's
    default would overwrite what was given before it (`atlas --profile X status` ran as the
    default profile). ``parse`` fills the defaults in once, after parsing."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--json", action="store_true", default=argparse.SUPPRESS, help="print one JSON document"
    )
    common.add_argument("--profile", default=argparse.SUPPRESS, help="the profile to use")
    common.add_argument(
        "--timeout", type=float, default=argparse.SUPPRESS, help="seconds per server call (10)"
    )
    return common


def parser(
    prog: str = "atlas",
    *,
    description: str | None = None,
    only: str | None = None,
    cls: type[argparse.ArgumentParser] = argparse.ArgumentParser,
) -> argparse.ArgumentParser:
    """The command line's parser; ``only``: with that one command's subparser alone (building
    all 42 took ~65 ms of a ~0.2 s command; the rest of the tree is never read then)."""
    common = common_options()
    p = cls(
        prog=prog,
        description=description,
        parents=[common],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--version", action="version", version=f"atlas-cli {__version__}")
    subcommands = Subcommands(p.add_subparsers(dest="command", required=True), common, only)
    for group in commands.GROUPS:
        group.arguments(subcommands)
    return p


class _Retry(Exception):
    """The one-command parser met something it does not handle alone."""


class _OneCommandParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _Retry(message)


def command_named(argv: list[str]) -> str | None:
    """The command ``argv`` names when only common options (spelled in full) come before it;
    None otherwise (help, ``--version``, an abbreviation, a typo: the whole tree decides)."""
    rest = iter(argv)
    for word in rest:
        if word == "--json" or word.startswith(("--profile=", "--timeout=")):
            continue
        if word in ("--profile", "--timeout"):
            next(rest, None)
            continue
        return word if word in commands.NAMES else None
    return None


def parse(
    argv: list[str] | None, prog: str = "atlas", *, description: str | None = None
) -> argparse.Namespace:
    """The arguments, the common options wherever they were given (after the command wins).
    The parser holds the named command's subparser alone; anything that one refuses is
    parsed again by the whole tree, so every error and help text reads as before."""
    argv = list(sys.argv[1:] if argv is None else argv)
    name = command_named(argv)
    args = None
    if name is not None:
        with contextlib.suppress(_Retry):
            one = parser(prog, description=description, only=name, cls=_OneCommandParser)
            args = one.parse_args(argv)
    if args is None:
        args = parser(prog, description=description).parse_args(argv)
    for name, default in COMMON_DEFAULTS.items():
        if not hasattr(args, name):
            setattr(args, name, default)
    return args
