"""The notes "Autograd 自动微分的动机和实现" (a NumPy Tensor, operator classes), with rg.Tensor.

Their example: y = ln x1 + x1*x2 - exp(x2) at (x1, x2) = (2, 5). The forward
pass computes the intermediate values (their Figure 4), the backward pass
the derivative of y with respect to every node (Figure 5), ending in
dy/dx1 = 5.5 and dy/dx2 = -146.4. Their program prints
    loss = [-137.72001192]
    x1.grad = [5.5]
    x2.grad = [-146.41316]
(data in float64, .grad in float32); both precisions are run here. Their
operator classes (Log, Exp with forward and backward) are written once more
as `rg.autograd.Function`s, with the same numbers.

    python examples/notes_numpy_tensor.py [--draw graph.svg]
"""

from __future__ import annotations

import argparse

import numpy as np

import retrograd as rg
import retrograd.viz as viz


def run(dtype: np.dtype, draw: str | None = None) -> None:
    """The notes' test program, with every intermediate value and gradient shown."""
    x1 = rg.tensor(np.array([2.0]), dtype=dtype, requires_grad=True)
    x2 = rg.tensor(np.array([5.0]), dtype=dtype, requires_grad=True)
    v1 = rg.log(x1)
    v2 = x1 * x2
    v3 = rg.exp(x2)
    v4 = v1 + v2
    loss = v4 - v3
    for v in (v1, v2, v3, v4, loss):
        v.retain_grad()  # keep the gradients of intermediate nodes, for Figure 5
    print("loss =", loss.data)
    loss.backward(rg.ones_like(loss))  # a one-element vector: seed dy/dy = 1 explicitly
    print("x1.grad =", x1.grad.data)
    print("x2.grad =", x2.grad.data)
    nodes = [("x1", x1), ("x2", x2), ("v1 = ln x1", v1), ("v2 = x1*x2", v2),
             ("v3 = exp(x2)", v3), ("v4 = v1 + v2", v4), ("y = v4 - v3", loss)]
    print("forward values (Figure 4) and dy/d(node) (Figure 5):")
    for name, v in nodes:
        print(f"  {name:<13} value = {v.item():11.5f}   dy/d = {v.grad.item():11.5f}")
    if draw:
        labels = {v: name for name, v in nodes}
        written, message = viz.render(loss, draw, labels=labels)
        print(f"graph drawn to {written}" + (f" ({message})" if message else ""))


class Log(rg.autograd.Function):
    """The notes' Log operator: forward saves its input, backward is dz / a."""

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return rg.log(a)

    @staticmethod
    def backward(ctx, dz):
        (a,) = ctx.saved_tensors
        return dz / a  # since d(log a)/da = 1/a


class Exp(rg.autograd.Function):
    """The notes' Exp operator: backward reuses the output, dz * exp(a)."""

    @staticmethod
    def forward(ctx, a):
        z = rg.exp(a)
        ctx.save_for_backward(z)
        return z

    @staticmethod
    def backward(ctx, dz):
        (z,) = ctx.saved_tensors
        return dz * z  # since d(exp a)/da = exp(a)


def with_operator_classes() -> None:
    print("== with operator classes (rg.autograd.Function), float64")
    x1 = rg.tensor([2.0], dtype=rg.float64, requires_grad=True)
    x2 = rg.tensor([5.0], dtype=rg.float64, requires_grad=True)
    loss = Log.apply(x1) + x1 * x2 - Exp.apply(x2)
    loss.sum().backward()
    print("loss =", loss.data)
    print("x1.grad =", x1.grad.data)
    print("x2.grad =", x2.grad.data)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draw", metavar="FILE", help="also draw the graph (.svg, .png, .dot)")
    args = parser.parse_args()
    print("== float64 (the notes' data)")
    run(np.float64, args.draw)
    print("== float32 (the notes' .grad)")
    run(np.float32)
    with_operator_classes()
    x1 = rg.tensor(2.0, dtype=rg.float64, requires_grad=True)
    x2 = rg.tensor(5.0, dtype=rg.float64, requires_grad=True)
    (rg.log(x1) + x1 * x2 - rg.exp(x2)).backward()
    print(f"so: dy/dx1 = {x1.grad.item():.1f}, dy/dx2 = {x2.grad.item():.1f}"
          "   (the notes: 5.5 and -146.4)")


if __name__ == "__main__":
    main()
