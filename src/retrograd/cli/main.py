"""The `retrograd` command: the dispatcher of `train`, `sample`, `graph` and `check`.

Each subcommand is a module of this package with `add_parser(subparsers)`
(its flags) and `run(args) -> int` (its work); the dispatcher only wires them
together. Bad arguments give a one-line error and exit status 2, a command
that cannot finish exits 1 with one line, Ctrl-C exits 130; never a traceback.
"""

from __future__ import annotations

import argparse
import sys

from . import check, graph, sample, train
from .errors import CommandFailed, UsageError
from .options import Parser

__all__ = ["main", "build_parser", "version", "COMMANDS"]

COMMANDS = {"train": train, "sample": sample, "graph": graph, "check": check}


def version() -> str:
    """The installed distribution's version, else the package's `__version__`."""
    from importlib import metadata

    try:
        return metadata.version("retrograd")
    except metadata.PackageNotFoundError:
        from .. import __version__

        return __version__


def build_parser() -> argparse.ArgumentParser:
    """The parser of every subcommand, each adding its own flags."""
    parser = Parser(prog="retrograd", description="Automatic differentiation on NumPy.")
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    sub = parser.add_subparsers(dest="command", parser_class=Parser, metavar="COMMAND")
    for module in COMMANDS.values():
        module.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line `argv` (default: `sys.argv[1:]`); return the exit status."""
    try:
        args = build_parser().parse_args(argv)
        if args.version:
            print(f"retrograd {version()}")
            return 0
        if args.command is None:
            raise UsageError(f"choose a command: {', '.join(COMMANDS)} (or --version)")
        return args.run(args)
    except UsageError as e:
        print(f"retrograd: error: {e}", file=sys.stderr)
        return 2
    except CommandFailed as e:
        print(f"retrograd: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("retrograd: interrupted", file=sys.stderr)
        return 130
