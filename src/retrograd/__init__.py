"""retrograd: automatic differentiation for Python on NumPy.

    import retrograd as rg
    x = rg.tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward()
    x.grad  # tensor([2., 4.])
"""

from . import _allocator  # noqa: F401,I001  (first: glibc keeps freed large buffers)
from . import (
    autograd,
    data,
    distributed,
    func,
    methods,  # completes Tensor: operators and op methods  # noqa: I001
    nn,
    optim,
    sym,
    viz,
)
from .api.cumulative import (
    argsort,
    cummax,
    cummin,
    cumprod,
    cumsum,
    kthvalue,
    logcumsumexp,
    median,
    mode,
    msort,
    return_types,
    sort,
    topk,
)
from .api.indexing import (
    chunk,
    diag,
    diag_embed,
    diagonal,
    flip,
    fliplr,
    flipud,
    gather,
    index_add,
    index_select,
    masked_fill,
    masked_select,
    meshgrid,
    moveaxis,
    movedim,
    narrow,
    nonzero,
    repeat_interleave,
    roll,
    scatter,
    scatter_add,
    scatter_reduce,
    take_along_dim,
    tile,
    tril,
    triu,
    unbind,
    unflatten,
)
from .api import (
    abs,
    argmax,
    argmin,
    broadcast_to,
    cat,
    clamp,
    clip,
    concatenate,
    cos,
    einsum,
    exp,
    expand,
    flatten,
    log,
    log1p,
    log_softmax,
    logsumexp,
    matmul,
    max,
    maximum,
    mean,
    min,
    minimum,
    permute,
    prod,
    relu,
    reshape,
    sigmoid,
    sign,
    sin,
    softmax,
    split,
    sqrt,
    squeeze,
    stack,
    std,
    sum,
    tan,
    tanh,
    transpose,
    unsqueeze,
    var,
    where,
)
from .creation import (
    arange,
    eye,
    full,
    linspace,
    manual_seed,
    ones,
    ones_like,
    rand,
    randint,
    randn,
    tensor,
    zeros,
    zeros_like,
)
from .dtypes import bool_, float32, float64, get_default_dtype, int64, set_default_dtype
from .grad_mode import enable_grad, is_grad_enabled, no_grad
from .gradcheck import GradcheckError, gradcheck, gradgradcheck
from .jit import jit
from .serialization import load, save
from .tensor import Tensor
from .value import Value

__version__ = "0.1.0"

__all__ = [n for n in dir() if not n.startswith("_")]
