"""`retrograd check`: gradient-check every op in the op table against finite differences."""

from __future__ import annotations

import argparse
import time

import numpy as np

from ..engine import apply
from ..gradcheck import GradcheckError, gradcheck, gradgradcheck
from ..ops import OPS
from ..ops.samples import SAMPLES
from ..tensor import Tensor
from .errors import UsageError
from .options import non_negative_int

__all__ = ["add_parser", "run", "cases", "check_op", "op_fn"]


def add_parser(subparsers) -> argparse.ArgumentParser:
    """`retrograd check [--op NAME ...] [--seed N]`."""
    parser = subparsers.add_parser("check", help="gradient-check every op in the op table")
    parser.add_argument("--op", action="append", default=None, help="only this op (repeatable)")
    parser.add_argument("--seed", type=non_negative_int, default=0)
    parser.set_defaults(run=run)
    return parser


def cases(name: str, seed: int = 0):
    """(inputs as Tensors, attrs, differentiable input indices) for each sample of an op."""
    rng = np.random.default_rng(seed)
    for arrays, attrs in SAMPLES[name](rng):
        inputs = []
        for a in arrays:
            t = Tensor(np.asarray(a)) if isinstance(a, (np.ndarray, np.generic, float)) else a
            if isinstance(t, Tensor) and t.dtype == np.float64:
                t.requires_grad_(True)
            inputs.append(t)
        yield inputs, attrs


def op_fn(op, attrs):
    """The op with its attributes fixed, as a function of its inputs."""
    return lambda *xs: apply(op, *xs, **attrs)


def check_op(name: str, seed: int = 0, second_order: bool = True) -> tuple[int, str]:
    """Number of cases checked, and '' or the first failure's message."""
    op = OPS[name]
    n = 0
    for inputs, attrs in cases(name, seed):
        fn = op_fn(op, attrs)
        try:
            gradcheck(fn, inputs)
            if second_order and op.smooth:
                gradgradcheck(fn, inputs, fast=True)
        except (GradcheckError, RuntimeError, ValueError) as e:
            shapes = [getattr(x, "shape", x) for x in inputs]
            return n, f"inputs {shapes}, attrs {attrs}: {e}"
        n += 1
    return n, ""


def run(args: argparse.Namespace) -> int:
    """Check the ops named by `--op` (default: all with samples); 1 if any disagrees."""
    names = args.op or [n for n in OPS if n in SAMPLES]
    unknown = [n for n in names if n not in SAMPLES]
    if unknown:
        raise UsageError(f"no gradient check for op(s) {', '.join(unknown)}; known: "
                         f"{', '.join(sorted(SAMPLES))}")
    width = max(len(n) for n in names)
    print(f"{'op':<{width}}  cases  order  result")
    failed = 0
    start = time.perf_counter()
    for name in names:
        order = "2" if OPS[name].smooth else "1"
        n, err = check_op(name, args.seed)
        status = "ok" if not err else "FAIL " + err
        failed += bool(err)
        print(f"{name:<{width}}  {n:>5}  {order:>5}  {status}")
    print(f"{len(names) - failed} of {len(names)} ops agree with finite differences "
          f"({time.perf_counter() - start:.1f} s)")
    return 1 if failed else 0
