"""The ``atlas`` command line for coding agents (standard library only; never imports the
server). See docs/cli.md in the repository."""

__version__ = "0.1.0"
