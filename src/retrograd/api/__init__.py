"""The functional API (`rg.exp`, `rg.sum`, `rg.reshape`, ...), by the same families as
the op table: each function normalises PyTorch- and NumPy-style arguments and
applies a primitive; a few (`mean`, `var`, `stack`, `conv2d`, ...) are
compositions of primitives and need no derivative of their own."""

from .elementwise import (
    abs,
    clamp,
    clip,
    cos,
    exp,
    log,
    log1p,
    maximum,
    minimum,
    relu,
    sigmoid,
    sign,
    sin,
    sqrt,
    tan,
    tanh,
    where,
)
from .linalg import einsum, matmul
from .reductions import (
    argmax,
    argmin,
    log_softmax,
    logsumexp,
    max,
    mean,
    min,
    prod,
    softmax,
    std,
    sum,
    var,
)
from .shape import (
    broadcast_to,
    cat,
    concatenate,
    expand,
    flatten,
    permute,
    reshape,
    split,
    squeeze,
    stack,
    transpose,
    unsqueeze,
)
from .windows import avg_pool2d, conv2d, max_pool2d
