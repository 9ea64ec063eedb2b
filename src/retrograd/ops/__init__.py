"""The op table: every primitive's forward, vjp and jvp rules, by family.

Read `elementwise.py` first: one screen, one row per op. Then `reductions.py`,
`shape.py` (reshaping and indexing), `linalg.py`, `windows.py` (im2col for
convolution and pooling) and `fused.py` (layers fused into one node, with NumPy
fast paths). `samples.py` holds sample inputs for every op, for `retrograd
check` and the generated tests. Importing this package registers every op in
`retrograd.primitive.OPS`.
"""

from ..primitive import NUMPY, OPS, Op, defop, elementwise, sum_to
from .activations import (
    elu,
    hardsigmoid,
    hardswish,
    hardtanh,
    leaky_relu,
    logsigmoid,
    mish,
    prelu,
    silu,
    softplus,
    softsign,
    threshold,
)
from .bitwise import bitwise_and, bitwise_not, bitwise_or, bitwise_xor
from .casts import bitcast
from .complex import angle, cabs, complex, conj, imag, real, view_as_complex, view_as_real
from .ctc import ctc_loglik, ctc_posterior
from .cumulative import (
    argsort,
    cum_extreme_index,
    cumprod,
    cumsum,
    kth_index,
    logcumsumexp,
    median_index,
    mode_index,
    topk_index,
)
from .elementwise import (
    abs,
    add,
    clamp,
    clamp_max_t,
    clamp_min_t,
    clamp_t,
    cos,
    div,
    eq,
    exp,
    fmax,
    ge,
    gt,
    le,
    log,
    log1p,
    lt,
    maximum,
    minimum,
    mul,
    ne,
    neg,
    pow,
    relu,
    sigmoid,
    sign,
    sin,
    sqrt,
    sub,
    tan,
    tanh,
    where,
)
from .fft import fft_c2c, fft_c2r, fft_r2c
from .fused import LabelError, cross_entropy, linear, max_pool2d, one_hot
from .fused_activations import gelu
from .fused_attention import attention
from .fused_norms import layer_norm
from .fused_rnn import gru_scan, lstm_scan, rnn_relu_scan, rnn_tanh_scan
from .grid_sample import grid_sample, grid_sample_t
from .indexing import (
    diag_scatter,
    diagonal,
    gather,
    index_add,
    index_select,
    nonzero,
    scatter_add_dim,
    scatter_dim,
    scatter_reduce,
)
from .linalg import einsum, matmul
from .linalg_decomp import (
    cholesky,
    det,
    eig,
    eigh,
    inv,
    logabsdet,
    lu,
    matrix_exp,
    pinv,
    qr,
    slogdet_sign,
    solve,
    solve_triangular,
    svd,
)
from .math import (
    acos,
    acosh,
    all,
    any,
    asin,
    asinh,
    atan,
    atan2,
    atanh,
    bce_slope,
    binary_cross_entropy,
    ceil,
    copysign,
    cosh,
    erf,
    erfc,
    erfinv,
    exp2,
    expm1,
    floor,
    floor_divide,
    fmod,
    frac,
    hypot,
    isclose,
    isfinite,
    isinf,
    isnan,
    left_shift,
    lerp,
    log2,
    log10,
    logaddexp,
    logaddexp2,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    nan_to_num,
    reciprocal,
    remainder,
    right_shift,
    round,
    rsqrt,
    sinh,
    square,
    trunc,
    trunc_divide,
    xlogy,
)
from .norms import pnorm, standardize
from .pooling import (
    gather_flat,
    max_pool,
    max_pool_arg,
    max_pool_indices,
    pool_gather,
    pool_scatter,
    unpool,
)
from .quantize import fake_quantize, fake_quantize_mask
from .reductions import (
    argmax,
    argmin,
    log_softmax,
    logsumexp,
    max,
    min,
    prod,
    prod_others,
    softmax,
    sum,
)
from .resample import pad_constant, resample, resample_t
from .sampling import standard_gamma_grad, standard_gamma_reparam
from .shape import (
    cast,
    cat,
    contiguous,
    expand,
    getitem,
    ones_like,
    permute,
    reshape,
    scatter,
    setitem,
    zeros_like,
)
from .special import (
    digamma,
    entr,
    erfcx,
    gammainc,
    gammaincc,
    gammaln,
    i0,
    i0e,
    i1,
    i1e,
    log_ndtr,
    ndtr,
    ndtri,
    polygamma,
    sinc,
    xlog1py,
    zeta,
)
from .transfer import to_device
from .updates import (
    adam_apply,
    adam_exp_avg,
    adam_exp_avg_sq,
    adam_step,
    adam_step_,
    adam_update_,
    lerp_,
    square_avg_,
)
from .windows import (
    as_strided_add,
    as_strided_view,
    conv_cols,
    conv_cols_t,
    conv_t_unit,
    conv_t_unit_bias,
    conv_unit,
    conv_unit_bias,
    fold,
    phase_fold,
    phase_fold_bias,
    phase_fold_t,
    phase_in,
    phase_in_t,
    phase_keep,
    unfold,
    unfold_view,
)


def _c_order(r):
    if r.ndim > 1 and not r.flags.c_contiguous:
        return r.copy(order="C")
    return r


def _row_major(op: Op) -> None:
    """Make `op`'s result row-major (C-contiguous), as PyTorch allocates a reduction's, a
    scan's, a norm's or a batched matrix product's result whatever the inputs' layout
    (NumPy's matmul keeps permuted batch dimensions' order) (not attention's: PyTorch's
    follows the query's layout, as the fused kernel's does); NumPy keeps a
    permuted input's order, so `x.permute(...).sum(1).view(-1)` would be refused where
    PyTorch's works."""
    forward = op.forward

    def run(*xs, **attrs):
        r = forward(*xs, **attrs)
        if isinstance(r, tuple):
            return tuple(_c_order(a) for a in r)
        return _c_order(r)

    run.__name__ = getattr(forward, "__name__", op.name)
    op.forward = run
    setattr(NUMPY, op.name, run)
    saving = op.saving
    if saving is not None:  # the recorded path's forward: (output, what the rules read)
        def run_saving(*xs, **attrs):
            r, saved = saving(*xs, **attrs)
            return _c_order(r), saved

        op.saving = run_saving


for _name in ("sum prod max min argmax argmin logsumexp softmax log_softmax cumsum cumprod "
              "logcumsumexp all any cum_extreme_index logsigmoid pnorm standardize "
              "einsum matmul").split():
    _row_major(OPS[_name])

__all__ = [n for n in dir() if not n.startswith("_")]
