"""`retrograd sample --run DIR`: names made up by the model of a saved `--task names` run.

The run folder's `metrics.json` says which model, vocabulary and context the
run used; `model.npz` holds its weights. The same seed gives the same names.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from .. import serialization
from ..models import names as M
from .errors import UsageError
from .options import non_negative_int, positive_float, positive_int

__all__ = ["add_parser", "run", "load_run"]


def add_parser(subparsers) -> argparse.ArgumentParser:
    """`retrograd sample --run DIR [--n 20] [--temperature T] [--top-k K] [--seed S]`."""
    parser = subparsers.add_parser("sample", help="sample names from a saved names run")
    parser.add_argument("--run", required=True, metavar="DIR", dest="run_dir",
                        help="the folder of a `retrograd train --task names` run")
    parser.add_argument("--n", type=positive_int, default=20, metavar="N",
                        help="how many names (default: 20)")
    parser.add_argument("--temperature", type=positive_float, default=1.0, metavar="T",
                        help="below 1: safer, more common names; above 1: wilder (default: 1)")
    parser.add_argument("--top-k", type=positive_int, default=None, metavar="K",
                        help="draw each character from the K likeliest only")
    parser.add_argument("--seed", type=non_negative_int, default=0, metavar="S",
                        help="the draws (default: 0)")
    parser.set_defaults(run=run)
    return parser


def load_run(folder: str | Path):
    """(model, vocabulary, context) of a saved names run; `UsageError` naming what is
    missing or wrong."""
    folder = Path(folder)
    meta_path, ckpt = folder / "metrics.json", folder / "model.npz"
    if not folder.is_dir():
        raise UsageError(f"argument --run: no such run folder {str(folder)!r}")
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"argument --run: {str(folder)!r} has no metrics.json") from None
    except (OSError, ValueError) as e:
        raise UsageError(f"argument --run: cannot read {str(meta_path)!r}: {e}") from None
    if not isinstance(meta, dict) or meta.get("task") != "names":
        raise UsageError(f"argument --run: {str(folder)!r} is not a run of "
                         f"`retrograd train --task names`")
    try:
        vocab, context = M.Vocabulary(meta["vocabulary"]), int(meta["context"])
        model = M.build(meta["model"], len(vocab), context)
    except (KeyError, TypeError, ValueError) as e:
        raise UsageError(f"argument --run: {str(meta_path)!r} does not describe a names "
                         f"model ({e})") from None
    if not ckpt.is_file():
        raise UsageError(f"argument --run: {str(folder)!r} has no checkpoint model.npz")
    try:
        model.load_state_dict(serialization.load(ckpt))
    except Exception as e:  # a damaged or foreign file: say so in one line
        raise UsageError(f"argument --run: cannot load {str(ckpt)!r}: {e}") from None
    return model, vocab, context


def run(args: argparse.Namespace) -> int:
    """Print `--n` sampled names, one a line."""
    if not math.isfinite(args.temperature):
        raise UsageError(f"argument --temperature: expected a finite number, "
                         f"got {args.temperature}")
    model, vocab, context = load_run(args.run_dir)
    for tokens in M.sample(model, args.n, context, temperature=args.temperature,
                           top_k=args.top_k, seed=args.seed):
        print(vocab.decode(tokens))
    return 0
