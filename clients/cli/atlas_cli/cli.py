"""``atlas``: the command line (and ``bridge``, the source design's spelling of it).

Every write is spooled before the network and never fails because the server is away; every
read needs the server and exits 3 when it is unreachable. ``--json`` prints one JSON document.
Exit codes: 0 ok, 1 error, 2 usage, 3 offline (a read, or a sync), 4 token missing, invalid,
revoked or not bound to an agent, 5 refused by the server (rejected or conflict), 6 the spool
cannot take the write, 7 a sync left operations pending (throttled, out of time, server error).
"""

from __future__ import annotations

import json
import sys

from atlas_cli import config
from atlas_cli.commands import COMMANDS, STANDALONE
from atlas_cli.core import AUTH, ERROR, SPOOL, Context, Failure
from atlas_cli.hooks.run import run as run_hook
from atlas_cli.parser import parse
from atlas_cli.spool import SpoolError


def main(argv: list[str] | None = None, prog: str = "atlas") -> int:
    args = parse(argv, prog, description=__doc__)
    if args.command == "hook":
        return run_hook(args)
    try:
        if args.command in STANDALONE:
            return STANDALONE[args.command](args)
        ctx = Context(config.profile(args.profile), timeout=args.timeout)
        if not ctx.profile.token:
            raise Failure(
                f"profile {ctx.profile.name} has no token: "
                "`atlas login --token ...` or set ATLAS_TOKEN",
                AUTH,
            )
        try:
            return COMMANDS[args.command](args, ctx)
        finally:
            ctx.close()
    except Failure as exc:
        if getattr(args, "json", False):
            print(
                json.dumps({"error": str(exc), "exit": exc.code, "details": exc.data}, default=str)
            )
        print(f"atlas: {exc}", file=sys.stderr)
        return exc.code
    except SpoolError as exc:
        print(f"atlas: {exc}", file=sys.stderr)
        return SPOOL
    except config.ConfigError as exc:
        print(f"atlas: {exc}", file=sys.stderr)
        return AUTH
    except (ValueError, OSError) as exc:
        print(f"atlas: {exc}", file=sys.stderr)
        return ERROR


def bridge_main(argv: list[str] | None = None) -> int:
    """``bridge``: the source design's spelling; its verbs and flags are atlas's, and
    ``bridge entity search`` is ``atlas graph search``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:2] == ["entity", "search"]:
        argv = ["graph", "search", *argv[2:]]
    return main(argv, prog="bridge")


if __name__ == "__main__":
    raise SystemExit(main())
