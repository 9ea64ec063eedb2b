"""The `retrograd` command: `train`, `graph` and `check`.

Each subcommand's work lives in its own module, imported only when it runs.
Bad arguments give a one-line error and exit status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import sys


class UsageError(Exception):
    """A bad argument: reported on one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, status 2
        raise UsageError(message)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="retrograd", description="Automatic differentiation on NumPy.")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)

    train = sub.add_parser("train", help="train a model on the handwritten digits")
    train.add_argument("--model", choices=["mlp", "cnn"], default="mlp")
    train.add_argument("--epochs", type=_positive_int, default=None)
    train.add_argument("--batch-size", type=_positive_int, default=None)
    train.add_argument("--lr", type=_positive_float, default=None)
    train.add_argument("--seed", type=int, default=0)
    train.add_argument("--out", default="runs/latest")

    graph = sub.add_parser("graph", help="draw an expression's graph with values and gradients")
    graph.add_argument("expr")
    graph.add_argument("--at", default="", help="bindings, e.g. a=2,b=3")
    graph.add_argument("-o", "--output", default=None, help="picture file (.svg, .png or .dot)")

    check = sub.add_parser("check", help="gradient-check every op in the op table")
    check.add_argument("--op", action="append", default=None, help="only this op (repeatable)")
    check.add_argument("--seed", type=int, default=0)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if args.command is None:
            raise UsageError("choose a command: train, graph or check")
        if args.command == "check":
            from .check import run
        elif args.command == "train":
            from .train import run
        else:
            from .graph_cmd import run
        return run(args)
    except UsageError as e:
        print(f"retrograd: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    # Under `python -m retrograd.cli` this file runs as __main__, a second copy of the
    # module; use the package's copy so its UsageError is the one subcommands raise.
    from retrograd.cli import main as _main

    sys.exit(_main())
