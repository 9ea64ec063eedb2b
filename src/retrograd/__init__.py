"""retrograd: automatic differentiation for Python on NumPy.

    import retrograd as rg
    x = rg.tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward()
    x.grad  # tensor([2., 4.])
"""

from . import _allocator  # noqa: F401,I001  (first: glibc keeps freed large buffers)
from . import _quiet  # noqa: F401,I001  (NumPy's warnings from inside the ops)
from . import (
    autograd,
    data,
    distributed,
    distributions,
    func,
    methods,  # completes Tensor: operators and op methods  # noqa: I001
    nn,
    optim,
    special,
    sym,
    viz,
)
from .api.activations import (
    celu,
    selu,
    threshold,
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
from .api.math import (
    acos,
    acosh,
    all,
    allclose,
    any,
    arccos,
    arccosh,
    arcsin,
    arcsinh,
    arctan,
    arctan2,
    arctanh,
    asin,
    asinh,
    atan,
    atan2,
    atanh,
    bitwise_and,
    bitwise_left_shift,
    bitwise_not,
    bitwise_or,
    bitwise_right_shift,
    bitwise_xor,
    ceil,
    copysign,
    cosh,
    div,
    divide,
    erf,
    erfc,
    erfinv,
    exp2,
    expm1,
    fix,
    floor,
    floor_divide,
    fmod,
    frac,
    hypot,
    isclose,
    isfinite,
    isinf,
    isnan,
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
    round,
    rsqrt,
    sinh,
    square,
    true_divide,
    trunc,
    xlogy,
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
from .api.numpy_style import (
    absolute,
    append,
    array_split,
    atleast_1d,
    atleast_2d,
    atleast_3d,
    column_stack,
    conjugate,
    convolve,
    correlate,
    cumulative_trapezoid,
    deg2rad,
    degrees,
    diff,
    dstack,
    expand_dims,
    fabs,
    fmax,
    fmin,
    hstack,
    interp,
    mod,
    nanmean,
    nansum,
    polyval,
    rad2deg,
    radians,
    ravel,
    rollaxis,
    rot90,
    row_stack,
    swapaxes,
    swapdims,
    tensor_split,
    trapezoid,
    trapz,
    vstack,
)
from .special import digamma, i0, igamma, igammac, lgamma, logit, mvlgamma, polygamma, sinc
from .api.norms import cdist, norm, std_mean, var_mean, vector_norm
from .api.complex import (
    angle,
    complex,
    conj,
    conj_physical,
    imag,
    is_complex,
    polar,
    real,
    resolve_conj,
    view_as_complex,
    view_as_real,
)
from .api.index_writes import (
    diagonal_scatter,
    index_copy,
    index_fill,
    index_put,
    index_put_,
    index_reduce,
    masked_scatter,
    put,
    select_scatter,
    slice_scatter,
)
from .api.indexing import argwhere, select, take
from .api.numeric import (
    float_power,
    frexp,
    gcd,
    heaviside,
    isneginf,
    isposinf,
    isreal,
    lcm,
    ldexp,
    nextafter,
    sgn,
    signbit,
)
from .api.quantiles import nanmedian, nanquantile, quantile
from .api.reductions import amax, amin, aminmax, count_nonzero
from .api.sets import (
    bincount,
    bucketize,
    histc,
    histogram,
    histogramdd,
    isin,
    searchsorted,
    unique,
    unique_consecutive,
)
from .api.splits import dsplit, hsplit, split_with_sizes, vsplit
from .api.grid import affine_grid_generator, grid_sampler
from .api.resample import pixel_shuffle, pixel_unshuffle
from .api.modes import (
    get_num_threads,
    inference_mode,
    is_inference_mode_enabled,
    set_grad_enabled,
    set_num_threads,
)
from .api.rng import bernoulli, get_rng_state, initial_seed, normal, poisson, seed, set_rng_state
from .api.rng import _sample_dirichlet, _standard_gamma
from .api.tensor_methods import TypedStorage, UntypedStorage  # t.storage(), ...
from .api.torch_misc import (  # torch's top-level utilities (api/torch_misc.py)
    _assert, are_deterministic_algorithms_enabled, bartlett_window, blackman_window, compile,
    empty_permuted, empty_strided, fill, frombuffer, get_default_device, get_device,
    get_float32_matmul_precision, gradient, hamming_window, hann_window, is_anomaly_enabled,
    is_conj, is_deterministic_algorithms_warn_only_enabled, is_signed, is_storage,
    kaiser_window, range, set_anomaly_enabled, set_default_device,
    set_float32_matmul_precision, set_printoptions, typename, unravel_index,
    use_deterministic_algorithms, vmap,
    cond, from_dlpack, get_deterministic_debug_mode, get_num_interop_threads,
    is_warn_always_enabled, set_default_tensor_type, set_deterministic_debug_mode,
    set_flush_denormal, set_num_interop_threads, set_warn_always, to_dlpack,
    init_num_threads, is_anomaly_check_nan_enabled, is_distributed, is_inference, is_neg,
    nonzero_static, resolve_neg,
)
from .api.scatter_views import as_strided_scatter  # api/scatter_views.py
from .api.hashing import hash_tensor  # api/hashing.py
from .api.fake_quant import (  # api/fake_quant.py
    fake_quantize_per_channel_affine,
    fake_quantize_per_tensor_affine,
)
from .api.rng_extras import binomial  # api/rng_extras.py
from .api.control_flow import while_loop  # api/control_flow.py
from .api.lobpcg import lobpcg  # api/lobpcg.py
from .api.segment_reduce import segment_reduce  # api/segment_reduce.py
from .api.sym_shapes import (  # torch's symbolic-shape helpers on concrete numbers
    sym_constrain_range, sym_constrain_range_for_size, sym_float, sym_fresh_size, sym_int,
    sym_ite, sym_max, sym_min, sym_not, sym_sqrt, sym_sum,
)
from .api.native_norms import (  # ATen's native forms (api/native_norms.py)
    native_batch_norm, native_dropout, native_group_norm, native_layer_norm,
)
from .api.rnn_functional import (  # torch's functional RNNs (api/rnn_functional.py)
    gru, gru_cell, lstm, lstm_cell, rnn_relu, rnn_relu_cell, rnn_tanh, rnn_tanh_cell,
)
from .api.torch_additions import (  # smaller torch names (api/torch_additions.py)
    convolution, eig, embedding_renorm_, grid_sampler_2d, grid_sampler_3d, has_lapack,
    has_spectral,
    legacy_contiguous_format, lstsq, matrix_rank, newaxis, norm_except_dim, solve, symeig,
)
from .api.view_copies import (  # the *_copy functions and a few aliases (api/view_copies.py)
    alias_copy, as_strided, as_strided_copy, constant_pad_nd, detach_, detach_copy,
    diagonal_copy, expand_copy, narrow_copy, permute_copy, select_copy, slice_copy, split_copy,
    split_with_sizes_copy,
    squeeze_copy, t_copy, transpose_copy, unbind_copy, unfold_copy, unsafe_chunk, unsafe_split,
    unsafe_split_with_sizes, unsqueeze_copy, view_as_complex_copy, view_as_real_copy, view_copy,
)
from .api.torch_names import (
    add,
    as_tensor,
    asarray,
    broadcast_shapes,
    broadcast_tensors,
    can_cast,
    clamp_max,
    clamp_min,
    clone,
    concat,
    detach,
    eq,
    equal,
    finfo,
    from_numpy,
    ge,
    greater,
    greater_equal,
    gt,
    iinfo,
    is_floating_point,
    is_nonzero,
    is_same_size,
    is_tensor,
    le,
    less,
    less_equal,
    lt,
    mul,
    multiply,
    ne,
    neg,
    negative,
    not_equal,
    numel,
    positive,
    pow,
    promote_types,
    result_type,
    rsub,
    scalar_tensor,
    sub,
    subtract,
    t,
)
from .api.windows import (
    adaptive_avg_pool1d,
    avg_pool1d,
    conv1d,
    conv2d,
    conv3d,
    conv_transpose1d,
    conv_transpose2d,
    conv_transpose3d,
    max_pool1d,
    max_pool2d,
    max_pool3d,
)
from .generator import Generator
from . import random  # noqa: E402  (torch.random's names; after creation, which it uses)
from . import profiler  # noqa: E402  (torch.profiler's names: timed regions)
from . import library  # noqa: E402  (torch.library's custom operators; after ops)
from . import _dynamo, _inductor  # noqa: E402,F401  (torch._dynamo/_inductor's knobs)
from . import fx  # noqa: E402  (torch.fx.wrap, for modules that call it at import)
from .layouts import (  # torch's layout and memory-format constants (layouts.py)
    channels_last, channels_last_3d, contiguous_format, layout, memory_format,
    preserve_format, sparse_bsc, sparse_bsr, sparse_coo, sparse_csc, sparse_csr, strided,
)
from .creation import (
    arange,
    default_generator,
    empty,
    empty_like,
    eye,
    full,
    full_like,
    linspace,
    manual_seed,
    multinomial,
    ones,
    ones_like,
    rand,
    rand_like,
    randint,
    randint_like,
    randn,
    randn_like,
    randperm,
    tensor,
    zeros,
    zeros_like,
)
from .dtypes import (
    bfloat16,
    bool_,
    double,
    dtype,
    float16,
    float32,
    float64,
    get_default_dtype,
    half,
    int8,
    int16,
    int32,
    int64,
    long,
    set_default_dtype,
    short,
    uint8,
)
from .grad_mode import enable_grad, is_grad_enabled, no_grad
from .gradcheck import GradcheckError, gradcheck, gradgradcheck
from .jit import JitError, jit
from .serialization import CheckpointError, load, save
from .tensor import Tensor
from . import cuda  # noqa: I001  (rg.cuda: imports CuPy only when a GPU is asked for)
from . import meta as _meta  # noqa: I001,F401  (the "meta" device: shapes without data)
from . import amp  # noqa: I001  (rg.amp: autocast refuses when enabled, GradScaler)
from .amp import GradScaler, autocast, get_autocast_dtype, is_autocast_enabled  # noqa: I001
from . import compiler, cpu, types  # noqa: I001  (torch.compiler's, torch.cpu's, torch.types')
from . import functional  # noqa: I001  (torch.functional's names: einsum, split, stft, ...)
from . import quasirandom  # noqa: I001  (torch.quasirandom's SobolEngine, on SciPy)
from . import multiprocessing  # noqa: I001  (torch.multiprocessing's: spawn, shared tensors)
from . import signal  # noqa: I001  (torch.signal.windows)
from . import sparse  # noqa: I001  (rg.sparse: torch.sparse's products, stored dense)
from . import accelerator  # noqa: I001  (rg.accelerator: device-agnostic; asks rg.cuda)
from . import backends  # noqa: I001  (rg.backends.cudnn/mps/cuda: settings)
from . import onnx  # noqa: I001  (rg.onnx: importable; export refuses)
from .devices import device
from .value import Value
from . import fft, linalg  # noqa: I001  (rg.fft, rg.linalg; after methods)
from .linalg import cholesky_solve, dot, inner, kron, outer, tensordot, trace
from .api.linalg import (  # PyTorch's BLAS-style products
    addbmm,
    addcdiv,
    addcmul,
    addmm,
    addmv,
    addr,
    baddbmm,
    bmm,
    mm,
    mv,
    vdot,
)
from .api.matrices import (
    block_diag,
    cartesian_prod,
    combinations,
    corrcoef,
    cov,
    diagflat,
    dist,
    logspace,
    renorm,
    tril_indices,
    triu_indices,
    vander,
)
from .linalg_aliases import (  # torch.det, torch.svd, ...: PyTorch's top-level spellings
    addmv_,
    adjoint,
    chain_matmul,
    cholesky,
    cholesky_inverse,
    cross,
    det,
    frobenius_norm,
    geqrf,
    ger,
    inverse,
    logdet,
    lu,
    lu_solve,
    lu_unpack,
    matrix_exp,
    matrix_power,
    nuclear_norm,
    orgqr,
    ormqr,
    pca_lowrank,
    pinverse,
    qr,
    slogdet,
    svd,
    svd_lowrank,
    triangular_solve,
)
from .api.torch_losses import (  # noqa: I001  (torch's own spellings: rg.kl_div, rg.ctc_loss, ...)
    binary_cross_entropy_with_logits,
    cosine_embedding_loss,
    ctc_loss,
    hinge_embedding_loss,
    kl_div,
    margin_ranking_loss,
    poisson_nll_loss,
    triplet_margin_loss,
)
from .api.torch_layers import (  # noqa: I001  (torch's own layer functions: rg.dropout, ...)
    adaptive_max_pool1d,
    alpha_dropout,
    alpha_dropout_,
    batch_norm,
    dropout,
    dropout_,
    embedding,
    feature_alpha_dropout,
    feature_alpha_dropout_,
    feature_dropout,
    feature_dropout_,
    group_norm,
    instance_norm,
    layer_norm,
    max_pool1d_with_indices,
    rrelu,
)
from .api.activations import celu_, hardshrink, prelu, relu_, rrelu_, selu_, threshold_  # noqa: I001,E501
from .api.bilinear import bilinear  # noqa: I001
from .api.norms import cosine_similarity, pairwise_distance, pdist, rms_norm  # noqa: I001
from .api.resample import channel_shuffle, native_channel_shuffle  # noqa: I001
from .api.windows import conv_tbc  # noqa: I001
from .api.spectral import istft, stft  # noqa: I001
from .api.sparse_dense import sparse_coo_tensor, sparse_csr_tensor, spmm  # noqa: I001,E501  (stored dense)
from . import testing, utils  # noqa: I001  (rg.testing, rg.utils.data, rg.utils.checkpoint)
from . import _utils  # noqa: I001,F401  (torch._utils: _flatten_dense_tensors for fp16 utils)
from . import _C  # noqa: I001,F401  (torch._C._LinAlgError, caught by torchdiffeq)
from .size import Size  # noqa: I001
from .api import inplace as _inplace  # noqa: I001
_inplace.bind(Tensor)  # in-place forms of methods bound after retrograd.methods, if any

from .api.legacy_types import (  # noqa: E402,I001  (torch.LongTensor([1]), ...)
    BoolTensor, ByteTensor, CharTensor, DoubleTensor, FloatTensor, HalfTensor, IntTensor,
    LongTensor, ShortTensor,
)
from .api.inplace_functions import FUNCTIONS as _INPLACE_FUNCTIONS  # noqa: E402,I001
globals().update({k: v for k, v in _INPLACE_FUNCTIONS.items() if k not in globals()})
from .dtypes import TORCH_SPELLINGS as _TORCH_SPELLINGS  # noqa: E402,I001
globals().update(_TORCH_SPELLINGS)  # rg.float, rg.int, rg.bool, rg.cfloat, ...: torch's names
from .api import foreach as _foreach  # noqa: E402,I001
globals().update({k: getattr(_foreach, k) for k in _foreach.__all__})  # rg._foreach_lerp_, ...
from .api import out_args as _out_args  # noqa: E402,I001
_out_args.bind(globals(), special, functional)  # torch's out= on top-level functions; rg.pi, ...

from . import version  # noqa: E402,I001  (rg.version, as torch.version)
from .version import __version__  # noqa: E402

__all__ = [n for n in dir() if not n.startswith("_") and n not in ("float", "int", "bool")]

from .integrations import einops as _einops  # noqa: E402,I001  (after __all__: not a torch name)
_einops.hook()  # einops' functions accept Tensors, whichever of the two is imported first
