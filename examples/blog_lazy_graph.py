"""The blog post "automatic differentiation in 30 lines of Python", redone with retrograd.

Its Tensor builds a graph first, takes values later (`forward()`), and
differentiates into a *new graph* (`grad(x)`). That is `rg.sym`: variables
with values bound later, `e.value` recomputed lazily, `e.diff(x)` an
expression. The post's numbers, each printed beside the post's own value:
x + y = 8, (x + y)*y = 40, d/dy = x + 2y = 13, and for
z = (12 - x e^y) / (45 + x y e^-x) at (3, 5): dz/dx = -3.34729777301069,
dz/dy = -9.70176956641438, checked with SymPy and with `rg.Tensor`.

    python examples/blog_lazy_graph.py
"""

from __future__ import annotations

import numpy as np

import retrograd as rg
import retrograd.sym as sym

BLOG_DX = -3.34729777301069  # z.grad(x) in the post, and SymPy's diff().evalf()
BLOG_DY = -9.70176956641438  # z.grad(y)


def show(v: object) -> str:
    """A value the way the post prints its Tensors (T:8), to 15 significant digits."""
    return f"T:{float(v):.15g}"


def plain_python() -> None:
    print("== Plain Python variables lose the relation")
    x, y = 3, 5
    z = x + y
    x = 4
    print(f"z = x + y = {z}; after x = {x}, z is still {z}")


def lazy_graph() -> None:
    print("== A graph first, values later")
    x, y = sym.var("x"), sym.var("y")
    z = x + y  # nothing is computed yet
    print("z =", z, "->", show(z.eval(x=3, y=5)), "(post: T:8)")
    z1 = x + y
    z2 = z1 * y
    x.value, y.value = 3, 5  # the post's x.value = 3, y.value = 5, then forward()
    print("z2 = (x + y)*y ->", show(z2.value), "(post: T:40)")

    # the Hacker News comment: set a value, and only what depends on it is recomputed
    before = sym.eval_count()
    x.value = 4
    print("after x.value = 4: z =", show(z.value), f"(comment: 9); recomputed "
          f"{sym.eval_count() - before} node")


def derivative_graph() -> None:
    print("== The derivative is a new graph")
    x, y = sym.var("x"), sym.var("y")
    z2 = (x + y) * y
    g = z2.diff(y)  # an expression, not a number
    print("g = dz2/dy =", g, "(post: x + 2*y)")
    print("g at x=3, y=5 ->", show(g.eval(x=3, y=5)), "(post: 13)")
    try:
        import sympy as sp
    except ImportError:
        print("SymPy: skipped (not installed)")
    else:
        xs, ys = sp.symbols("x y")
        print("SymPy: g - (x + 2*y) simplifies to", sp.simplify(g.to_sympy() - (xs + 2 * ys)))


def the_post_formula(x, y, exp):
    """z = (12 - x e^y) / (45 + x y e^-x), for rg.sym, rg.Tensor or SymPy alike."""
    return (12 - x * exp(y)) / (45 + x * y * exp(-x))


def big_example() -> None:
    print("== z = (12 - x*exp(y)) / (45 + x*y*exp(-x)) at x=3, y=5")
    x, y = sym.var("x"), sym.var("y")
    z = the_post_formula(x, y, sym.exp)
    dx, dy = z.grad([x, y])  # both derivatives from one reverse sweep
    at = {"x": 3.0, "y": 5.0}
    print("z.grad(x) ->", show(dx.eval(**at)), "(post: T:-3.34729777301069)")
    print("z.grad(y) ->", show(dy.eval(**at)), "(post: T:-9.70176956641438)")
    print(f"graph sizes: z {z.size} nodes, dz/dx {dx.size}, dz/dy {dy.size}")

    try:
        import sympy as sp
    except ImportError:
        print("SymPy: skipped (not installed)")
    else:
        xs, ys = sp.symbols("x y")
        zs = the_post_formula(xs, ys, sp.exp)
        sx = sp.diff(zs, xs).evalf(subs={xs: 3, ys: 5})
        sy = sp.diff(zs, ys).evalf(subs={xs: 3, ys: 5})
        print("SymPy diff().evalf(): d/dx", show(sx), " d/dy", show(sy))

    # the same numbers from the Tensor engine (reverse mode on values, no new graph)
    xt = rg.tensor(3.0, dtype=rg.float64, requires_grad=True)
    yt = rg.tensor(5.0, dtype=rg.float64, requires_grad=True)
    zt = the_post_formula(xt, yt, rg.exp)
    zt.backward()
    print("rg.Tensor backward(): d/dx", show(xt.grad.item()), " d/dy", show(yt.grad.item()))
    ok = np.allclose([dx.eval(**at), dy.eval(**at), xt.grad.item(), yt.grad.item()],
                     [BLOG_DX, BLOG_DY, BLOG_DX, BLOG_DY], rtol=1e-13, atol=0)
    print("all agree with the post:", ok)


def main() -> None:
    plain_python()
    lazy_graph()
    derivative_graph()
    big_example()


if __name__ == "__main__":
    main()
