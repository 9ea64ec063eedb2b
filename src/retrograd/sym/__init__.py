"""rg.sym: symbolic graphs. Build the graph first, bind values later, differentiate into a graph.

    import retrograd as rg
    x, y = rg.sym.var("x"), rg.sym.var("y")
    z = (12 - x * rg.sym.exp(y)) / (45 + x * y * rg.sym.exp(-x))
    dx, dy = z.grad([x, y])        # two expressions, from one reverse sweep
    dx.eval(x=3.0, y=5.0)          # -3.34729777301069
    x.value, y.value = 3.0, 5.0    # bind; `dx.value` then caches every node
    x.value = 4.0; dx.value        # recomputes only the nodes that depend on x

An expression is a node of the shared graph IR (`retrograd.ir`), hash-consed
in one table: building the same subexpression twice gives the same node, so
`a is b` is structural equality and `e.size` counts distinct nodes.
Variables are identified by their name: `var("x")` twice is one node, and its
bound value is shared by every expression that uses it.

Derivatives come from the op table (`retrograd.ops`): the reverse sweep calls
each op's vjp rule with a namespace whose functions build graph nodes, the same
rules the Tensor engine runs on arrays. Nothing in this package knows a
derivative.

Simplification happens as nodes are built (constant folding by the op's own
NumPy forward, and the rewrites listed in `simplify.py`), giving exactly what
plain evaluation would, up to the sign of a zero result.
The rule named `assume_finite` (on by default) adds rewrites that are exact
only when the values involved are finite: `0*a -> 0`, `a-a -> 0`, `0/a -> 0`,
dropping a zero cotangent in the reverse sweep, and derivatives that are
polynomials in one variable returned in Horner form (fewer nodes and
operations). With `a` NaN or infinite (say `a = log(x)` at `x = 0`), plain
evaluation gives NaN where the rewritten graph gives 0. Turn it off with
`with rg.sym.assume_finite(False): ...` to get graphs whose values equal plain
evaluation of the chain rule everywhere.

Evaluation is element-wise: a variable's value may be an array. A result that
does not depend on any array-valued variable (a derivative that simplified to
a constant, say) comes back as a scalar from `eval` and `.value`;
`compile` broadcasts every result to the shape of its arguments.

The package in layers, each importing only the ones before it:
`state` (binding clock, `assume_finite`), then `evaluation`, `printing` and
`export` (they read nodes and never make one), then `expr` (the `Expr` node,
its table, `var`/`const`, `build`), then `simplify` and `functions`, `diff`,
`codegen` (`compile`) and `parse` (`parse`, `from_sympy`). This file only
re-exports the public names.
"""

from ..ir import UnboundVariableError
from .codegen import compile
from .diff import grad
from .evaluation import TraceEntry
from .expr import Expr, const, evaluate, size, var
from .functions import (
    abs,
    acos,
    acosh,
    asin,
    asinh,
    atan,
    atan2,
    atanh,
    cos,
    cosh,
    erf,
    erfc,
    erfinv,
    exp,
    exp2,
    expm1,
    gelu,
    hypot,
    log,
    log1p,
    log2,
    log10,
    logaddexp,
    logaddexp2,
    logsigmoid,
    maximum,
    minimum,
    mish,
    reciprocal,
    relu,
    rsqrt,
    sigmoid,
    silu,
    sin,
    sinh,
    softplus,
    softsign,
    sqrt,
    square,
    tan,
    tanh,
    where,
    xlogy,
)
from .parse import from_sympy, parse
from .state import assume_finite, eval_count

__all__ = [
    "Expr", "var", "const", "exp", "log", "log1p", "sqrt", "sin", "cos", "tan", "tanh",
    "sigmoid", "relu", "abs", "maximum", "minimum", "where", "grad", "size", "compile",
    "from_sympy", "parse", "evaluate", "assume_finite", "eval_count", "UnboundVariableError",
    "TraceEntry",
]
__all__ += [  # the element-wise math and activations of the op table
    "log2", "log10", "exp2", "expm1", "rsqrt", "reciprocal", "square", "asin", "acos", "atan",
    "sinh", "cosh", "asinh", "acosh", "atanh", "erf", "erfc", "erfinv", "silu", "mish",
    "logsigmoid", "softsign", "atan2", "hypot", "logaddexp", "logaddexp2", "xlogy", "gelu",
    "softplus",
]
