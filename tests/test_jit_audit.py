"""rg.jit over the whole public functional API: traced on one set of values, called on
others of the same shapes and dtypes, every function gives eager mode's answer (values,
and gradients for float inputs) or refuses with `JitError` at trace time; never a silent
first-call answer. Tensor-valued arguments (masks, indices, weights, targets, running
statistics) are arguments of the jitted function, so a library function that read their
values in Python would freeze them."""

from __future__ import annotations

import copy
import inspect

import numpy as np
import pytest

import retrograd as rg
from retrograd import fft, linalg, nn, special
from retrograd.jit import JitError
from retrograd.nn import functional as F

NAMESPACES = {"rg": rg, "F": F, "linalg": linalg, "fft": fft, "special": special}


# ---------------------------------------------------------------- example inputs

def fl(*shape, lo=-1.0, hi=1.0):
    return lambda rng: rng.uniform(lo, hi, shape)


def pos(*shape):
    return fl(*shape, lo=0.5, hi=2.0)


def unit(*shape):
    return fl(*shape, lo=0.1, hi=0.9)


def ints(*shape, lo=0, hi=3):
    return lambda rng: rng.integers(lo, hi, shape)


def bools(*shape):
    return lambda rng: rng.random(shape) < 0.5


def cplx(*shape):
    return lambda rng: rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def signs(*shape):
    return lambda rng: np.where(rng.random(shape) < 0.5, -1.0, 1.0)


def spd(n):
    def make(rng):
        a = rng.standard_normal((n, n))
        return a @ a.T + n * np.eye(n)
    return make


def lower(n):
    return lambda rng: np.tril(rng.uniform(-1, 1, (n, n)), -1) + np.diag(rng.uniform(1, 2, n))


def sym(n):
    def make(rng):
        a = rng.standard_normal((n, n))
        return a + a.T
    return make


def low_rank(n):
    """Square matrices whose rank changes with the draw."""
    def make(rng):
        u, v = rng.standard_normal((n, n)), rng.standard_normal((n, n))
        return u @ np.diag(rng.random(n) < 0.5) @ v
    return make


def increasing(n):
    return lambda rng: np.cumsum(rng.uniform(0.2, 1.0, n)) - 1.0


def pool_index(out, k):
    """Valid max_unpool indices: for each pooled position, one place in its window."""
    def make(rng):
        grids = np.meshgrid(*[np.arange(o) for o in out], indexing="ij")
        size = [o * k for o in out]
        flat = 0
        for d, g in enumerate(grids):
            flat = flat * size[d] + g * k + rng.integers(0, k, g.shape)
        return flat.reshape((1, 1) + tuple(out))
    return make


def choose(*values):
    return lambda rng: np.asarray(values[rng.integers(len(values))])


class Case:
    """`fn(*tensors)` with one generator per tensor argument; `grad` is False when the
    function has no gradient to check, or the argument numbers to differentiate (default:
    every float argument)."""

    def __init__(self, fn, *gens, grad: bool | tuple = True):
        self.fn, self.gens, self.grad = fn, gens, grad


C = Case


def along_1(f):
    return lambda x: f(x, 1)


def of_list(f):
    return lambda x, y: f([x, y])


def of_complex(f):
    return lambda re, im: f(rg.complex(re, im))

X = fl(3, 4)
Y = fl(3, 4)

CASES: dict[str, Case] = {
    # ---- element-wise
    **{f"rg.{n}": C(getattr(rg, n), X) for n in [
        "abs", "angle", "arcsinh", "asinh", "arctan", "atan", "ceil", "cos", "cosh",
        "deg2rad", "erf", "erfc", "exp", "exp2", "expm1", "fix", "floor", "frac", "isfinite",
        "isinf", "isnan", "logical_not", "nan_to_num", "rad2deg", "real", "relu", "round",
        "sigmoid", "sign", "sin", "sinc", "sinh", "square", "tan", "tanh", "trunc", "conj",
        "conj_physical", "resolve_conj", "selu", "celu", "i0", "msort", "ravel",
        "atleast_1d", "atleast_2d", "atleast_3d", "fliplr", "flipud", "zeros_like",
        "ones_like", "tensor", "flatten", "is_complex"]},
    **{f"rg.{n}": C(getattr(rg, n), unit(3, 4)) for n in [
        "acos", "arccos", "asin", "arcsin", "atanh", "arctanh", "erfinv", "logit"]},
    **{f"rg.{n}": C(getattr(rg, n), pos(3, 4)) for n in [
        "log", "log10", "log1p", "log2", "rsqrt", "sqrt", "reciprocal", "lgamma", "digamma"]},
    **{f"rg.{n}": C(getattr(rg, n), fl(3, 4, lo=1.2, hi=3.0)) for n in ["acosh", "arccosh"]},
    **{f"rg.{n}": C(getattr(rg, n), X, Y) for n in [
        "arctan2", "atan2", "copysign", "fmax", "fmin", "hypot", "logaddexp", "logaddexp2",
        "maximum", "minimum", "isclose", "complex", "allclose", "kron"]},
    **{f"rg.{n}": C(getattr(rg, n), X, pos(3, 4)) for n in [
        "div", "divide", "true_divide", "floor_divide", "remainder", "fmod"]},
    "rg.div[floor]": C(lambda x, y: rg.div(x, y, rounding_mode="floor"), X, pos(3, 4)),
    "rg.div[trunc]": C(lambda x, y: rg.div(x, y, rounding_mode="trunc"), X, pos(3, 4)),
    "rg.allclose[near]": C(lambda x, d: rg.allclose(x, x + d), X, choose(0.0, 1.0)),
    "rg.xlogy": C(rg.xlogy, pos(3, 4), pos(3, 4)),
    **{f"rg.{n}": C(getattr(rg, n), X) for n in [
        "absolute", "conjugate", "degrees", "radians", "fabs"]},
    "rg.mod": C(rg.mod, X, pos(3, 4)),
    "rg.rollaxis": C(lambda x: rg.rollaxis(x, 1), X),
    "rg.igamma": C(rg.igamma, pos(3, 4), pos(3, 4), grad=(1,)),
    "rg.igammac": C(rg.igammac, pos(3, 4), pos(3, 4), grad=(1,)),
    "rg.polar": C(rg.polar, pos(3, 4), X),
    "rg.lerp": C(rg.lerp, X, Y, unit(3, 4)),
    "rg.where": C(rg.where, bools(3, 4), X, Y),
    "rg.imag": C(lambda re, im: rg.imag(rg.complex(re, im) * 2), X, Y),
    "rg.view_as_complex": C(rg.view_as_complex, fl(3, 2)),
    "rg.view_as_real": C(lambda re, im: rg.view_as_real(rg.complex(re, im)), X, Y),
    **{f"rg.{n}": C(getattr(rg, n), bools(3, 4), bools(3, 4)) for n in [
        "logical_and", "logical_or", "logical_xor"]},
    **{f"rg.{n}": C(getattr(rg, n), ints(3, 4, hi=64), ints(3, 4, hi=64)) for n in [
        "bitwise_and", "bitwise_or", "bitwise_xor"]},
    "rg.bitwise_not": C(rg.bitwise_not, ints(3, 4, hi=64)),
    "rg.bitwise_left_shift": C(rg.bitwise_left_shift, ints(3, 4, hi=64), ints(3, 4, hi=4)),
    "rg.bitwise_right_shift": C(rg.bitwise_right_shift, ints(3, 4, hi=64), ints(3, 4, hi=4)),
    "rg.mvlgamma": C(lambda x: rg.mvlgamma(x, 2), fl(3, 4, lo=1.0, hi=3.0)),
    "rg.polygamma": C(lambda x: rg.polygamma(1, x), pos(3, 4)),
    "rg.threshold": C(lambda x: rg.threshold(x, 0.1, 2.0), X),
    "rg.clamp": C(lambda x: rg.clamp(x, -0.5, 0.5), X),
    "rg.clip": C(lambda x: rg.clip(x, -0.5, 0.5), X),
    "rg.full_like": C(lambda x: rg.full_like(x, 2.5), X),
    "rg.softmax": C(lambda x: rg.softmax(x, 1), X),
    "rg.log_softmax": C(lambda x: rg.log_softmax(x, 1), X),
    "rg.rand_like": C(rg.rand_like, X),
    "rg.randn_like": C(rg.randn_like, X),
    "rg.randint_like": C(lambda x: rg.randint_like(x, 0, 5), X),
    "rg.multinomial": C(lambda p: rg.multinomial(p, 2), pos(3, 4)),
    # ---- reductions, sorting, scans
    **{f"rg.{n}": C(getattr(rg, n), X) for n in [
        "argmax", "argmin", "argsort", "logsumexp", "max", "min", "mean", "median", "nanmean",
        "nansum", "norm", "prod", "std", "std_mean", "sum", "var", "var_mean", "vector_norm",
        "sort"]},
    **{f"rg.{n}[dim]": C(along_1(getattr(rg, n)), X) for n in [
        "argmax", "argmin", "max", "min", "median", "logsumexp", "mean", "prod", "std", "sum",
        "var", "cummax", "cummin", "cumprod", "cumsum", "logcumsumexp", "nansum", "nanmean"]},
    "rg.all": C(rg.all, bools(3, 4)),
    "rg.any": C(rg.any, bools(3, 4)),
    "rg.all[dim]": C(lambda m: rg.all(m, 1), bools(3, 4)),
    "rg.mode": C(lambda x: rg.mode(x, 1), ints(3, 6, hi=3)),
    "rg.kthvalue": C(lambda x: rg.kthvalue(x, 2, 1), X),
    "rg.topk": C(lambda x: rg.topk(x, 2), X),
    # ---- shapes
    "rg.broadcast_to": C(lambda x: rg.broadcast_to(x, (3, 4)), fl(1, 4)),
    "rg.expand": C(lambda x: rg.expand(x, 3, 4), fl(1, 4)),
    **{f"rg.{n}": C(of_list(getattr(rg, n)), X, Y) for n in [
        "cat", "concatenate", "column_stack", "dstack", "hstack", "vstack", "row_stack",
        "stack"]},
    "rg.chunk": C(lambda x: rg.chunk(x, 2, 1), X),
    "rg.split": C(lambda x: rg.split(x, 2, 1), X),
    "rg.array_split": C(lambda x: rg.array_split(x, 3, 1), X),
    "rg.tensor_split": C(lambda x: rg.tensor_split(x, [1, 3], 1), X),
    "rg.unbind": C(rg.unbind, X),
    "rg.diag": C(rg.diag, fl(4)),
    "rg.diag_embed": C(rg.diag_embed, fl(2, 3)),
    "rg.diagonal": C(rg.diagonal, X),
    "rg.expand_dims": C(lambda x: rg.expand_dims(x, 0), X),
    "rg.flip": C(lambda x: rg.flip(x, (0,)), X),
    "rg.moveaxis": C(lambda x: rg.moveaxis(x, 0, 2), fl(2, 3, 4)),
    "rg.movedim": C(lambda x: rg.movedim(x, 0, 2), fl(2, 3, 4)),
    "rg.narrow": C(lambda x: rg.narrow(x, 1, 1, 2), X),
    "rg.permute": C(lambda x: rg.permute(x, 1, 0), X),
    "rg.reshape": C(lambda x: rg.reshape(x, 4, 3), X),
    "rg.roll": C(lambda x: rg.roll(x, 1, 1), X),
    "rg.rot90": C(rg.rot90, X),
    "rg.squeeze": C(rg.squeeze, fl(3, 1, 4)),
    "rg.swapaxes": C(lambda x: rg.swapaxes(x, 0, 1), X),
    "rg.swapdims": C(lambda x: rg.swapdims(x, 0, 1), X),
    "rg.tile": C(lambda x: rg.tile(x, (2, 1)), X),
    "rg.transpose": C(lambda x: rg.transpose(x, 0, 1), X),
    "rg.tril": C(rg.tril, X),
    "rg.triu": C(rg.triu, X),
    "rg.unflatten": C(lambda x: rg.unflatten(x, 1, (2, 2)), X),
    "rg.unsqueeze": C(lambda x: rg.unsqueeze(x, 0), X),
    "rg.meshgrid": C(rg.meshgrid, fl(3), fl(4)),
    "rg.repeat_interleave": C(lambda x: rg.repeat_interleave(x, 2, dim=1), X),
    "rg.repeat_interleave[tensor]": C(lambda x, r: rg.repeat_interleave(x, r, dim=1), X,
                                      ints(4, hi=3)),
    "rg.pixel_shuffle": C(lambda x: rg.pixel_shuffle(x, 2), fl(1, 4, 2, 2)),
    "rg.pixel_unshuffle": C(lambda x: rg.pixel_unshuffle(x, 2), fl(1, 1, 4, 4)),
    # ---- indexing
    "rg.gather": C(lambda x, i: rg.gather(x, 1, i), X, ints(3, 2, hi=4)),
    "rg.index_select": C(lambda x, i: rg.index_select(x, 1, i), X, ints(2, hi=4)),
    "rg.index_add": C(lambda x, i, s: rg.index_add(x, 1, i, s), X, ints(2, hi=4), fl(3, 2)),
    "rg.masked_fill": C(lambda x, m: rg.masked_fill(x, m, 0.5), X, bools(3, 4)),
    "rg.masked_fill[tensor]": C(rg.masked_fill, X, bools(3, 4), fl()),
    "rg.masked_select": C(rg.masked_select, X, bools(3, 4)),
    "rg.masked_select[broadcast]": C(rg.masked_select, X, bools(1, 4)),
    "rg.nonzero[as_tuple]": C(lambda m: rg.nonzero(m, as_tuple=True), bools(3, 4)),
    "rg.nonzero[0d]": C(lambda m: rg.nonzero(m, as_tuple=True), bools()),
    "rg.nonzero": C(rg.nonzero, bools(3, 4)),
    "rg.scatter": C(lambda x, i, s: rg.scatter(x, 1, i, s), X, ints(3, 2, hi=4), fl(3, 2)),
    "rg.scatter[value]": C(lambda x, i: rg.scatter(x, 1, i, value=2.0), X, ints(3, 2, hi=4)),
    "rg.scatter_add": C(lambda x, i, s: rg.scatter_add(x, 1, i, s), X, ints(3, 2, hi=4),
                        fl(3, 2)),
    "rg.scatter_reduce": C(lambda x, i, s: rg.scatter_reduce(x, 1, i, s, "amax"), X,
                           ints(3, 2, hi=4), fl(3, 2)),
    "rg.take_along_dim": C(lambda x, i: rg.take_along_dim(x, i, 1), X, ints(3, 2, hi=4)),
    # ---- products, linear algebra at the top level
    "rg.cdist": C(rg.cdist, fl(3, 2), fl(4, 2)),
    "rg.cholesky_solve": C(rg.cholesky_solve, fl(3, 2), lower(3)),
    "rg.dot": C(rg.dot, fl(3), fl(3)),
    "rg.inner": C(rg.inner, fl(3), fl(3)),
    "rg.outer": C(rg.outer, fl(3), fl(4)),
    "rg.matmul": C(rg.matmul, X, fl(4, 2)),
    "rg.einsum": C(lambda a, b: rg.einsum("ij,jk->ik", a, b), X, fl(4, 2)),
    "rg.tensordot": C(lambda a, b: rg.tensordot(a, b, 1), X, fl(4, 2)),
    "rg.trace": C(rg.trace, fl(3, 3)),
    # ---- NumPy-style
    "rg.append": C(lambda x, y: rg.append(x, y, 1), X, Y),
    "rg.convolve": C(rg.convolve, fl(5), fl(3)),
    "rg.correlate": C(rg.correlate, fl(5), fl(3)),
    "rg.cumulative_trapezoid": C(rg.cumulative_trapezoid, X),
    "rg.diff": C(rg.diff, X),
    "rg.interp": C(rg.interp, fl(6, lo=-1.5, hi=1.5), increasing(5), fl(5)),
    "rg.interp[period]": C(lambda x, xp, fp: rg.interp(x, xp, fp, period=2.0), fl(6),
                           fl(5, lo=-3.0, hi=3.0), fl(5)),
    "rg.interp[sides]": C(lambda x, xp, fp, r: rg.interp(x, xp, fp, left=-2.0, right=r),
                          fl(6, lo=-1.5, hi=1.5), increasing(5), fl(5), fl()),
    "rg.polyval": C(rg.polyval, fl(3), fl(4)),
    "rg.trapezoid": C(rg.trapezoid, X),
    "rg.trapezoid[x]": C(lambda y, x: rg.trapezoid(y, x), fl(5), increasing(5)),
    "rg.trapz": C(rg.trapz, X),
    # ---- windows
    "rg.adaptive_avg_pool1d": C(lambda x: rg.adaptive_avg_pool1d(x, 3), fl(1, 2, 7)),
    "rg.avg_pool1d": C(lambda x: rg.avg_pool1d(x, 2), fl(1, 2, 6)),
    "rg.max_pool1d": C(lambda x: rg.max_pool1d(x, 2), fl(1, 2, 6)),
    "rg.max_pool2d": C(lambda x: rg.max_pool2d(x, 2), fl(1, 2, 4, 4)),
    "rg.max_pool3d": C(lambda x: rg.max_pool3d(x, 2), fl(1, 1, 4, 4, 2)),
    "rg.max_pool2d[indices]": C(lambda x: rg.max_pool2d(x, 2, return_indices=True),
                                fl(1, 2, 4, 4)),
    "rg.conv1d": C(rg.conv1d, fl(1, 2, 6), fl(3, 2, 3), fl(3)),
    "rg.conv2d": C(lambda x, w, b: rg.conv2d(x, w, b, padding=1), fl(1, 2, 4, 4),
                   fl(3, 2, 3, 3), fl(3)),
    "rg.conv3d": C(rg.conv3d, fl(1, 2, 3, 3, 3), fl(2, 2, 2, 2, 2), fl(2)),
    "rg.conv_transpose1d": C(rg.conv_transpose1d, fl(1, 2, 4), fl(2, 3, 3), fl(3)),
    "rg.conv_transpose2d": C(lambda x, w: rg.conv_transpose2d(x, w, stride=2),
                             fl(1, 2, 3, 3), fl(2, 3, 2, 2)),
    "rg.conv_transpose3d": C(rg.conv_transpose3d, fl(1, 2, 2, 2, 2), fl(2, 1, 2, 2, 2)),
    # ---- nn.functional
    "F.linear": C(F.linear, X, fl(2, 4), fl(2)),
    "F.softmin": C(lambda x: F.softmin(x, 1), X),
    "F.glu": C(F.glu, X),
    "F.gelu[tanh]": C(lambda x: F.gelu(x, approximate="tanh"), X),
    "F.hardtanh": C(lambda x: F.hardtanh(x, -0.5, 0.5), X),
    "F.threshold": C(lambda x: F.threshold(x, 0.1, 2.0), X),
    **{f"F.{n}": C(getattr(F, n), fl(3, 4, lo=-4.0, hi=4.0)) for n in [
        "relu", "tanh", "sigmoid", "celu", "elu", "gelu", "hardsigmoid", "hardswish",
        "leaky_relu", "logsigmoid", "mish", "relu6", "selu", "silu", "softplus", "softsign",
        "tanhshrink"]},
    "F.softmax": C(lambda x: F.softmax(x, 1), X),
    "F.log_softmax": C(lambda x: F.log_softmax(x, 1), X),
    "F.cross_entropy": C(F.cross_entropy, fl(5, 3), ints(5)),
    "F.cross_entropy[sum]": C(lambda x, y: F.cross_entropy(x, y, reduction="sum",
                                                           label_smoothing=0.1),
                              fl(5, 3), ints(5)),
    "F.cross_entropy[none]": C(lambda x, y: F.cross_entropy(x, y, reduction="none"),
                               fl(5, 3), ints(5)),
    "F.cross_entropy[weight]": C(lambda x, y, w: F.cross_entropy(x, y, w), fl(5, 3), ints(5),
                                 pos(3)),
    "F.cross_entropy[ignore]": C(lambda x, y: F.cross_entropy(x, y, ignore_index=1),
                                 fl(5, 3), ints(5)),
    "F.cross_entropy[probs]": C(F.cross_entropy, fl(5, 3), unit(5, 3)),
    "F.cross_entropy[nd]": C(F.cross_entropy, fl(2, 3, 4), ints(2, 4)),
    "F.nll_loss": C(F.nll_loss, fl(5, 3), ints(5)),
    "F.nll_loss[weight]": C(lambda x, y, w: F.nll_loss(x, y, w), fl(5, 3), ints(5), pos(3)),
    "F.nll_loss[ignore]": C(lambda x, y: F.nll_loss(x, y, ignore_index=0), fl(5, 3), ints(5)),
    "F.mse_loss": C(F.mse_loss, X, Y),
    "F.binary_cross_entropy_with_logits": C(F.binary_cross_entropy_with_logits, X,
                                            unit(3, 4)),
    "F.binary_cross_entropy_with_logits[weights]": C(
        lambda x, y, w, p: F.binary_cross_entropy_with_logits(x, y, w, pos_weight=p), X,
        unit(3, 4), pos(3, 4), pos(4)),
    "F.binary_cross_entropy": C(F.binary_cross_entropy, unit(3, 4), unit(3, 4)),
    "F.binary_cross_entropy[weight]": C(F.binary_cross_entropy, unit(3, 4), unit(3, 4),
                                        pos(3, 4)),
    "F.l1_loss": C(F.l1_loss, X, Y),
    "F.smooth_l1_loss": C(lambda x, y: F.smooth_l1_loss(x, y, beta=0.5), X, Y),
    "F.huber_loss": C(lambda x, y: F.huber_loss(x, y, delta=0.5), X, Y),
    "F.kl_div": C(F.kl_div, X, unit(3, 4)),
    "F.kl_div[log]": C(lambda x, y: F.kl_div(x, y, log_target=True), X, Y),
    "F.cosine_embedding_loss": C(lambda a, b, y: F.cosine_embedding_loss(a, b, y, 0.1),
                                 X, Y, signs(3)),
    "F.margin_ranking_loss": C(lambda a, b, y: F.margin_ranking_loss(a, b, y, 0.1),
                               fl(5), fl(5), signs(5)),
    "F.one_hot": C(lambda y: F.one_hot(y, 4), ints(5, hi=4)),
    "F.one_hot[infer]": C(F.one_hot, lambda rng: rng.permutation(rng.integers(2, 6))[:2]),
    "F.embedding": C(F.embedding, ints(3, hi=5), fl(5, 2)),
    "F.embedding[padding]": C(lambda i, w: F.embedding(i, w, padding_idx=0), ints(3, hi=5),
                              fl(5, 2)),
    "F.embedding[max_norm]": C(lambda i, w: (F.embedding(i, w, max_norm=0.5), w * 1),
                               ints(3, hi=5), fl(5, 2), grad=False),  # writes into w
    "F.dropout": C(lambda x: F.dropout(x, 0.5, training=False), X),
    "F.dropout[train]": C(F.dropout, X),
    "F.dropout1d": C(F.dropout1d, fl(2, 3, 4)),
    "F.dropout2d": C(lambda x: F.dropout2d(x, training=False), fl(2, 3, 2, 2)),
    "F.dropout3d": C(lambda x: F.dropout3d(x, training=False), fl(2, 3, 2, 2, 2)),
    "F.alpha_dropout": C(F.alpha_dropout, X),
    "F.feature_alpha_dropout": C(lambda x: F.feature_alpha_dropout(x, 0.5, training=True),
                                 fl(2, 3, 4)),
    "F.layer_norm": C(lambda x, w, b: F.layer_norm(x, (4,), w, b), X, fl(4), fl(4)),
    "F.group_norm": C(lambda x, w, b: F.group_norm(x, 2, w, b), fl(2, 4, 3), fl(4), fl(4)),
    "F.batch_norm": C(lambda x, m, v, w, b: F.batch_norm(x, m, v, w, b), fl(4, 3), fl(3),
                      pos(3), fl(3), fl(3)),
    "F.batch_norm[train]": C(lambda x, m, v, w, b: (
        F.batch_norm(x, m, v, w, b, training=True), m * 1, v * 1), fl(4, 3), fl(3), pos(3),
        fl(3), fl(3), grad=(0, 3, 4)),
    "F.rms_norm": C(lambda x, w: F.rms_norm(x, (4,), w), X, fl(4)),
    "F.normalize": C(F.normalize, X),
    "F.cosine_similarity": C(F.cosine_similarity, X, Y),
    "F.max_pool1d[indices]": C(lambda x: F.max_pool1d(x, 2, return_indices=True),
                               fl(1, 2, 6)),
    "F.avg_pool2d": C(lambda x: F.avg_pool2d(x, 2, divisor_override=3), fl(1, 2, 4, 4)),
    "F.avg_pool3d": C(lambda x: F.avg_pool3d(x, 2), fl(1, 1, 2, 4, 4)),
    "F.max_unpool1d": C(lambda x, i: F.max_unpool1d(x, i, 2), fl(1, 1, 3),
                        pool_index((3,), 2)),
    "F.max_unpool2d": C(lambda x, i: F.max_unpool2d(x, i, 2), fl(1, 1, 2, 2),
                        pool_index((2, 2), 2)),
    "F.max_unpool3d": C(lambda x, i: F.max_unpool3d(x, i, 2), fl(1, 1, 2, 1, 2),
                        pool_index((2, 1, 2), 2)),
    "F.adaptive_avg_pool2d": C(lambda x: F.adaptive_avg_pool2d(x, (2, 3)), fl(1, 2, 5, 5)),
    "F.adaptive_avg_pool3d": C(lambda x: F.adaptive_avg_pool3d(x, 2), fl(1, 1, 3, 3, 3)),
    "F.adaptive_max_pool1d": C(lambda x: F.adaptive_max_pool1d(x, 3), fl(1, 2, 7)),
    "F.adaptive_max_pool1d[indices]": C(
        lambda x: F.adaptive_max_pool1d(x, 3, return_indices=True), fl(1, 2, 7)),
    "F.adaptive_max_pool2d": C(lambda x: F.adaptive_max_pool2d(x, (2, 3)), fl(1, 2, 5, 5)),
    "F.adaptive_max_pool2d[indices]": C(
        lambda x: F.adaptive_max_pool2d(x, 2, return_indices=True), fl(1, 2, 5, 5)),
    "F.pad": C(lambda x: F.pad(x, (1, 2), value=0.5), fl(1, 2, 4)),
    "F.pad[reflect]": C(lambda x: F.pad(x, (1, 2), mode="reflect"), fl(1, 2, 4)),
    "F.pad[replicate]": C(lambda x: F.pad(x, (1, 2, 1, 0), mode="replicate"),
                          fl(1, 2, 3, 4)),
    "F.pad[circular]": C(lambda x: F.pad(x, (1, 2), mode="circular"), fl(1, 2, 4)),
    "F.interpolate": C(lambda x: F.interpolate(x, scale_factor=2), fl(1, 2, 3)),
    "F.interpolate[linear]": C(lambda x: F.interpolate(x, size=5, mode="linear"),
                               fl(1, 2, 3)),
    "F.interpolate[bilinear]": C(lambda x: F.interpolate(x, size=(4, 5), mode="bilinear",
                                                         align_corners=True),
                                 fl(1, 2, 3, 3)),
    "F.interpolate[bicubic]": C(lambda x: F.interpolate(x, scale_factor=2, mode="bicubic"),
                                fl(1, 1, 3, 3)),
    "F.upsample": C(lambda x: F.upsample(x, scale_factor=2, mode="nearest"), fl(1, 2, 3, 3)),
    # sampling grids (api/grid.py)
    "F.grid_sample": C(lambda x, g: F.grid_sample(x, g, align_corners=False), fl(1, 2, 3, 4),
                       fl(1, 2, 3, 2, lo=-1.2, hi=1.2)),
    "F.grid_sample[bicubic]": C(
        lambda x, g: F.grid_sample(x, g, mode="bicubic", padding_mode="reflection",
                                   align_corners=True), fl(2, 1, 3, 3), fl(2, 2, 2, 2, lo=-1.3,
                                                                             hi=1.3)),
    "F.grid_sample[3d]": C(
        lambda x, g: F.grid_sample(x, g, mode="nearest", padding_mode="border",
                                   align_corners=False), fl(1, 2, 2, 3, 3), fl(1, 2, 1, 2, 3)),
    "F.affine_grid": C(lambda t: F.affine_grid(t, (2, 1, 3, 4), align_corners=False),
                       fl(2, 2, 3)),
    "F.affine_grid[3d]": C(lambda t: F.affine_grid(t, (1, 1, 2, 2, 3), align_corners=True),
                           fl(1, 3, 4)),
    "rg.grid_sampler": C(lambda x, g: rg.grid_sampler(x, g, 0, 2, False), fl(1, 2, 3, 4),
                         fl(1, 2, 2, 2)),
    "rg.affine_grid_generator": C(lambda t: rg.affine_grid_generator(t, (2, 1, 3, 3), False),
                                  fl(2, 2, 3)),
    "F.scaled_dot_product_attention": C(F.scaled_dot_product_attention, fl(2, 3, 4),
                                        fl(2, 5, 4), fl(2, 5, 3)),
    "F.scaled_dot_product_attention[bool]": C(F.scaled_dot_product_attention, fl(2, 3, 4),
                                              fl(2, 5, 4), fl(2, 5, 3), bools(2, 3, 5)),
    "F.scaled_dot_product_attention[float]": C(
        F.scaled_dot_product_attention, fl(2, 3, 4), fl(2, 5, 4), fl(2, 5, 3), fl(3, 5)),
    "F.scaled_dot_product_attention[-inf]": C(
        lambda q, k, v, m: F.scaled_dot_product_attention(
            q, k, v, rg.where(m, 0.0, float("-inf"))),
        fl(2, 3, 4), fl(2, 5, 4), fl(2, 5, 3), bools(3, 5)),
    "F.scaled_dot_product_attention[causal]": C(
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
        fl(2, 3, 4), fl(2, 5, 4), fl(2, 5, 3)),
    "F.scaled_dot_product_attention[dropout]": C(
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, dropout_p=0.5),
        fl(2, 3, 4), fl(2, 5, 4), fl(2, 5, 3)),
    "F.unfold": C(lambda x: F.unfold(x, 2), fl(1, 2, 3, 3)),
    "F.fold": C(lambda x: F.fold(x, (3, 3), 2), fl(1, 8, 4)),
    # ---- linalg
    "linalg.det": C(linalg.det, fl(3, 3)),
    "linalg.slogdet": C(linalg.slogdet, fl(3, 3)),
    "linalg.inv": C(linalg.inv, spd(3)),
    "linalg.solve": C(linalg.solve, spd(3), fl(3, 2)),
    "linalg.solve_triangular": C(lambda a, b: linalg.solve_triangular(a, b, upper=False),
                                 lower(3), fl(3, 2)),
    "linalg.cholesky": C(linalg.cholesky, spd(3)),
    "linalg.qr": C(linalg.qr, fl(4, 3)),
    "linalg.qr[complete]": C(lambda a: linalg.qr(a, mode="complete"), fl(4, 3),
                             grad=False),  # no derivative (as in PyTorch)
    "linalg.eigh": C(linalg.eigh, sym(3)),
    "linalg.eigvalsh": C(linalg.eigvalsh, sym(3)),
    "linalg.svd": C(lambda a: linalg.svd(a, full_matrices=False)[1], fl(4, 3)),
    "linalg.svd[full]": C(linalg.svd, fl(4, 3)),
    "linalg.svd[square]": C(linalg.svd, fl(3, 3)),
    "linalg.lstsq[gelsd]": C(lambda a, b: linalg.lstsq(a, b, driver="gelsd"), fl(4, 3),
                             fl(4, 2)),
    "linalg.svdvals": C(linalg.svdvals, fl(4, 3)),
    "linalg.pinv": C(linalg.pinv, fl(4, 3)),
    "linalg.pinv[rank]": C(linalg.pinv, low_rank(3), grad=False),
    "linalg.pinv[hermitian]": C(lambda a: linalg.pinv(a, hermitian=True), spd(3)),
    "linalg.lstsq": C(linalg.lstsq, fl(4, 3), fl(4, 2)),
    "linalg.matrix_norm": C(linalg.matrix_norm, fl(3, 3)),
    **{f"linalg.matrix_norm[{o}]": C(lambda a, o=o: linalg.matrix_norm(a, o), fl(3, 3))
       for o in ["nuc", 2, -2, 1, -1, np.inf, -np.inf]},
    "linalg.vector_norm": C(lambda x: linalg.vector_norm(x, 3, 1), X),
    "linalg.vector_norm[inf]": C(lambda x: linalg.vector_norm(x, np.inf), X),
    "linalg.vector_norm[0]": C(lambda x: linalg.vector_norm(x, 0), X),
    "linalg.norm": C(linalg.norm, fl(3, 3)),
    "linalg.matrix_power": C(lambda a: linalg.matrix_power(a, 3), fl(3, 3)),
    "linalg.matrix_power[-2]": C(lambda a: linalg.matrix_power(a, -2), spd(3)),
    "linalg.matrix_exp": C(linalg.matrix_exp, fl(3, 3)),
    "linalg.cross": C(linalg.cross, fl(2, 3), fl(2, 3)),
    "linalg.multi_dot": C(lambda a, b, c: linalg.multi_dot([a, b, c]), fl(2, 3), fl(3, 4),
                          fl(4, 2)),
    "linalg.matrix_rank": C(linalg.matrix_rank, low_rank(3)),
    "linalg.matrix_rank[hermitian]": C(lambda a: linalg.matrix_rank(a @ a.mT, hermitian=True),
                                       low_rank(3)),
    # ---- fft
    **{f"fft.{n}": C(getattr(fft, n), fl(8)) for n in [
        "fft", "ifft", "rfft", "ihfft", "fftshift", "ifftshift"]},
    **{f"fft.{n}": C(getattr(fft, n), fl(4, 4)) for n in [
        "fft2", "ifft2", "rfft2", "fftn", "ifftn", "rfftn"]},
    **{f"fft.{n}": C(of_complex(getattr(fft, n)), fl(5), fl(5))
       for n in ["irfft", "hfft"]},
    "fft.fft[complex]": C(lambda re, im: fft.fft(rg.complex(re, im)), fl(5), fl(5)),
    "fft.irfft2": C(lambda re, im: fft.irfft2(rg.complex(re, im)), fl(4, 3), fl(4, 3)),
    "fft.irfftn": C(lambda re, im: fft.irfftn(rg.complex(re, im)), fl(4, 3), fl(4, 3)),
    # ---- special
    **{f"special.{n}": C(getattr(special, n), X) for n in [
        "erf", "erfc", "erfcx", "expit", "i0", "i0e", "i1", "i1e", "sinc", "ndtr",
        "log_ndtr", "exp2", "expm1", "round"]},
    **{f"special.{n}": C(getattr(special, n), pos(3, 4)) for n in [
        "gammaln", "digamma", "psi", "entr", "log1p"]},
    "special.erfinv": C(special.erfinv, unit(3, 4)),
    "special.logit": C(special.logit, unit(3, 4)),
    "special.ndtri": C(special.ndtri, unit(3, 4)),
    "special.polygamma": C(lambda x: special.polygamma(2, x), pos(3, 4)),
    "special.multigammaln": C(lambda x: special.multigammaln(x, 3), fl(3, 4, lo=1.5, hi=3.0)),
    "special.xlogy": C(special.xlogy, pos(3, 4), pos(3, 4)),
    "special.xlog1py": C(special.xlog1py, pos(3, 4), pos(3, 4)),
    "special.gammasgn": C(special.gammasgn, X),
    "special.gamma": C(special.gamma, pos(3, 4)),
    "special.betaln": C(special.betaln, pos(3, 4), pos(3, 4)),
    "special.beta": C(special.beta, pos(3, 4), pos(3, 4)),
    "special.erfcinv": C(special.erfcinv, fl(3, 4, lo=0.1, hi=1.9)),
    "special.logsumexp": C(lambda x: special.logsumexp(x, 1), X),
    "special.softmax": C(lambda x: special.softmax(x, 1), X),
    "special.log_softmax": C(lambda x: special.log_softmax(x, 1), X),
    "special.zeta": C(special.zeta, fl(3, 4, lo=1.5, hi=3.0), pos(3, 4)),
    "special.gammainc": C(special.gammainc, pos(3, 4), pos(3, 4), grad=(1,)),
    "special.gammaincc": C(special.gammaincc, pos(3, 4), pos(3, 4), grad=(1,)),
    **{f"special.{n}": C(getattr(special, n), X) for n in [
        "bessel_j0", "bessel_j1", "modified_bessel_i0", "modified_bessel_i1",
        "spherical_bessel_j0"]},
    **{f"special.{n}": C(getattr(special, n), pos(3, 4)) for n in [
        "bessel_y0", "bessel_y1", "modified_bessel_k0", "modified_bessel_k1",
        "scaled_modified_bessel_k0", "scaled_modified_bessel_k1"]},
    # values only, as in PyTorch (no derivative defined)
    "special.airy_ai": C(special.airy_ai, X, grad=False),
    **{f"special.{n}": C(lambda x, n=n: getattr(special, n)(x, 3), X, grad=False) for n in [
        "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
        "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
        "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
        "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
        "laguerre_polynomial_l", "legendre_polynomial_p"]},
    # ---- more fft, and the short-time transform
    **{f"fft.{n}": C(getattr(fft, n), fl(4, 4)) for n in ["ihfft2", "ihfftn"]},
    **{f"fft.{n}": C(lambda re, im, n=n: getattr(fft, n)(rg.complex(re, im)), fl(4, 3),
                     fl(4, 3)) for n in ["hfft2", "hfftn"]},
    "rg.stft": C(lambda x: rg.stft(x, 8, hop_length=2, window=rg.hann_window(8),
                                   return_complex=True), fl(32)),
    "rg.istft": C(lambda x: rg.istft(rg.stft(x, 8, hop_length=2, window=rg.hann_window(8),
                                             return_complex=True),
                                     8, hop_length=2, window=rg.hann_window(8), length=32),
                  fl(32)),
    "F.linear_cross_entropy": C(lambda x, w, y: F.linear_cross_entropy(x, w, y), fl(5, 4),
                                fl(3, 4), ints(5)),
}

# ---- the losses of torch.nn.functional and their torch.* spellings (tests/test_losses_more.py)
def _ctc_case(fn, **kw):
    """log_probs (T=6, N=3, C=4), padded targets (3, 2) without the blank, lengths."""
    return C(lambda lp, y, il, tl: fn(lp, y, il, tl, **kw), fl(6, 3, 4, lo=-3.0, hi=0.0),
             ints(3, 2, lo=1, hi=4), ints(3, lo=4, hi=7), ints(3, lo=0, hi=3))


CASES.update({
    "F.l1_loss[weight]": C(lambda x, y, w: F.l1_loss(x, y, weight=w), X, Y, pos(3, 4)),
    "F.huber_loss[weight]": C(lambda x, y, w: F.huber_loss(x, y, weight=w), X, Y, pos(3, 4)),
    "F.gaussian_nll_loss": C(F.gaussian_nll_loss, X, Y, pos(3, 4)),
    "F.gaussian_nll_loss[short]": C(lambda x, y, v: F.gaussian_nll_loss(x, y, v, full=True),
                                    X, Y, pos(3)),
    "F.poisson_nll_loss": C(lambda x, y: F.poisson_nll_loss(x, y, full=True), X,
                            fl(3, 4, lo=0.0, hi=4.0)),
    "F.poisson_nll_loss[rate]": C(lambda x, y: F.poisson_nll_loss(x, y, log_input=False),
                                  pos(3, 4), pos(3, 4)),
    "F.hinge_embedding_loss": C(F.hinge_embedding_loss, X, signs(3, 4)),
    "F.soft_margin_loss": C(F.soft_margin_loss, X, signs(3, 4), grad=(0,)),  # target: none
    "F.multilabel_soft_margin_loss": C(F.multilabel_soft_margin_loss, X, unit(3, 4), pos(4)),
    "F.multi_margin_loss": C(lambda x, y, w: F.multi_margin_loss(x, y, 2, 0.5, w), X,
                             ints(3, hi=4), pos(4)),
    "F.multilabel_margin_loss": C(F.multilabel_margin_loss, X, ints(3, 4, lo=-1, hi=4)),
    "F.triplet_margin_loss": C(lambda a, p, n: F.triplet_margin_loss(a, p, n, swap=True), X,
                               Y, fl(3, 4)),
    "F.triplet_margin_with_distance_loss": C(F.triplet_margin_with_distance_loss, X, Y,
                                             fl(3, 4)),
    "F.ctc_loss": _ctc_case(F.ctc_loss),
    "F.ctc_loss[none]": _ctc_case(F.ctc_loss, reduction="none", zero_infinity=True),
    "rg.ctc_loss": _ctc_case(rg.ctc_loss, reduction=2),
    "rg.binary_cross_entropy_with_logits": C(
        lambda x, y, w, p: rg.binary_cross_entropy_with_logits(x, y, w, p, 1), X, unit(3, 4),
        pos(4), pos(4)),
    "rg.cosine_embedding_loss": C(rg.cosine_embedding_loss, X, Y, signs(3)),
    "rg.hinge_embedding_loss": C(rg.hinge_embedding_loss, X, signs(3, 4)),
    "rg.kl_div": C(lambda x, y: rg.kl_div(x, y, 1, log_target=True), X, Y),
    "rg.margin_ranking_loss": C(rg.margin_ranking_loss, X, Y, signs(3, 1)),
    "rg.poisson_nll_loss": C(lambda x, y: rg.poisson_nll_loss(x, y, True, True, 1e-8, 2), X,
                             fl(3, 4, lo=0.0, hi=4.0)),
    "rg.triplet_margin_loss": C(rg.triplet_margin_loss, X, Y, fl(3, 4)),
})


# Public callables that take no tensor (creation from Python values, settings, files,
# the transforms themselves): nothing to trace.
NO_TENSORS = {
    "rg.arange", "rg.empty", "rg.eye", "rg.full", "rg.linspace", "rg.ones", "rg.zeros",
    "rg.rand", "rg.randn", "rg.randint", "rg.randperm", "rg.get_default_dtype",
    "rg.set_default_dtype", "rg.is_grad_enabled", "rg.manual_seed", "rg.load", "rg.save",
    "rg.jit", "rg.gradcheck", "rg.gradgradcheck", "fft.fftfreq", "fft.rfftfreq",
    "rg.empty_like",  # uninitialised values: nothing to compare
}

# Functions that refuse inside rg.jit, with what their JitError says.
RANDOM = "random numbers"
REFUSES = {
    "rg.rand_like": RANDOM, "rg.randn_like": RANDOM, "rg.randint_like": RANDOM,
    "rg.multinomial": RANDOM, "F.dropout[train]": RANDOM, "F.dropout1d": RANDOM,
    "F.feature_alpha_dropout": RANDOM, "F.scaled_dot_product_attention[dropout]": RANDOM,
    # the result's shape depends on the values
    "rg.masked_select": "rg.where(mask, input, 0)",
    "rg.masked_select[broadcast]": "rg.where(mask, input, 0)",
    "rg.repeat_interleave[tensor]": "indexing with a tensor",
    "rg.nonzero": "keep the shape with a mask", "rg.nonzero[as_tuple]": "keep the shape",
    "rg.nonzero[0d]": "keep the shape",
    "F.one_hot[infer]": "pass num_classes",
    "linalg.lstsq[gelsd]": "use the default driver",
    # values computed outside the op table (no op gives them)
    "linalg.qr[complete]": "use mode='reduced'", "linalg.svd[full]": "full_matrices=False",
    # a Python value computed from the tensors
    "rg.allclose": "rg.isclose(...).all()", "rg.allclose[near]": "rg.isclose(...).all()",
}


# ---- PyTorch's matrix products, top-level linear-algebra spellings, matrices and statistics
# (values against torch: tests/test_torch_linalg_names.py)


def _pivots(m, k):
    return lambda rng: np.array([rng.integers(j + 1, m + 1) for j in range(k)])


def _spd_as(n, shape):
    return lambda rng: spd(n)(rng).reshape(shape)


CASES.update({
    "rg.mm": C(rg.mm, fl(2, 3), fl(3, 4)),
    "rg.bmm": C(rg.bmm, fl(2, 2, 3), fl(2, 3, 4)),
    "rg.mv": C(rg.mv, fl(2, 3), fl(3)),
    "rg.vdot": C(rg.vdot, fl(3), fl(3)),
    "rg.addmm": C(rg.addmm, fl(2, 4), fl(2, 3), fl(3, 4)),
    "rg.addmm[beta]": C(lambda i, a, b: rg.addmm(i, a, b, beta=0.5, alpha=2.0), fl(4),
                        fl(2, 3), fl(3, 4)),
    "rg.addmm[beta0]": C(lambda i, a, b: rg.addmm(i, a, b, beta=0), fl(2, 4), fl(2, 3),
                         fl(3, 4)),
    "rg.addmv": C(rg.addmv, fl(2), fl(2, 3), fl(3)),
    "rg.addr": C(lambda i, a, b: rg.addr(i, a, b, alpha=3.0), fl(2, 3), fl(2), fl(3)),
    "rg.baddbmm": C(rg.baddbmm, fl(2, 2, 4), fl(2, 2, 3), fl(2, 3, 4)),
    "rg.addbmm": C(rg.addbmm, fl(2, 4), fl(2, 2, 3), fl(2, 3, 4)),
    "rg.addcmul": C(lambda x, a, b: rg.addcmul(x, a, b, value=0.5), X, X, Y),
    "rg.addcdiv": C(lambda x, a, b: rg.addcdiv(x, a, b, value=2.0), X, X, pos(3, 4)),
    "rg.chain_matmul": C(rg.chain_matmul, fl(2, 3), fl(3, 4), fl(4, 2)),
    "rg.ger": C(rg.ger, fl(3), fl(4)),
    "rg.cross": C(rg.cross, fl(3, 4), fl(3, 4)),
    "rg.det": C(rg.det, fl(3, 3)),
    "rg.logdet": C(rg.logdet, spd(3)),
    "rg.slogdet": C(rg.slogdet, fl(3, 3)),
    "rg.inverse": C(rg.inverse, spd(3)),
    "rg.pinverse": C(rg.pinverse, fl(4, 3)),
    "rg.matrix_power": C(lambda a: rg.matrix_power(a, 3), fl(3, 3)),
    "rg.matrix_exp": C(rg.matrix_exp, fl(3, 3)),
    "rg.cholesky": C(rg.cholesky, spd(3)),
    "rg.cholesky_inverse": C(rg.cholesky_inverse, lower(3)),
    "rg.qr": C(rg.qr, fl(4, 3)),
    "rg.svd": C(rg.svd, fl(4, 3)),
    "rg.svd[compute_uv]": C(lambda a: rg.svd(a, compute_uv=False), fl(4, 3)),
    "rg.lu": C(lambda a: rg.lu(a, get_infos=True), fl(3, 3)),
    "rg.lu_unpack": C(lambda a: rg.lu_unpack(*linalg.lu_factor(a)), fl(3, 4)),
    "rg.lu_solve": C(lambda a, b: rg.lu_solve(b, *linalg.lu_factor(a)), spd(3), fl(3, 2)),
    "rg.triangular_solve": C(lambda b, a: rg.triangular_solve(b, a, upper=False), fl(3, 2),
                             lower(3)),
    "rg.nuclear_norm": C(rg.nuclear_norm, fl(3, 3)),
    "rg.frobenius_norm": C(lambda x: rg.frobenius_norm(x, (0, 1)), X),
    "rg.geqrf": C(rg.geqrf, fl(4, 3), grad=False),  # no derivative (as in PyTorch)
    "rg.orgqr": C(rg.orgqr, fl(4, 3), fl(2)),
    "rg.ormqr": C(rg.ormqr, fl(4, 3), fl(3), fl(4, 2)),
    "rg.block_diag": C(lambda a, b: rg.block_diag(a, b), fl(2, 2), fl(3)),
    "rg.cartesian_prod": C(rg.cartesian_prod, fl(2), fl(3)),
    "rg.combinations": C(rg.combinations, fl(4)),
    "rg.vander": C(rg.vander, fl(3)),
    "rg.diagflat": C(rg.diagflat, fl(2, 2)),
    "rg.cov": C(rg.cov, fl(3, 5)),
    "rg.cov[weights]": C(lambda x, f, a: rg.cov(x, fweights=f, aweights=a), fl(3, 5),
                         ints(5, lo=0, hi=3), pos(5)),
    "rg.corrcoef": C(rg.corrcoef, fl(3, 5)),
    "rg.dist": C(rg.dist, X, Y),
    "rg.renorm": C(lambda x: rg.renorm(x, 2, 0, 0.8), X),
    "linalg.lu_factor": C(linalg.lu_factor, fl(3, 3)),
    "linalg.lu_factor_ex": C(linalg.lu_factor_ex, fl(3, 4)),
    "linalg.lu": C(linalg.lu, fl(3, 4)),
    "linalg.lu_solve": C(lambda a, b: linalg.lu_solve(*linalg.lu_factor(a), b, adjoint=True),
                         spd(3), fl(3, 2)),
    "linalg.lu_solve[pivots]": C(linalg.lu_solve, fl(3, 3, lo=1.0, hi=2.0), _pivots(3, 3),
                                 fl(3, 2)),
    "linalg.inv_ex": C(linalg.inv_ex, spd(3)),
    "linalg.cholesky_ex": C(linalg.cholesky_ex, spd(3)),
    "linalg.solve_ex": C(linalg.solve_ex, spd(3), fl(3, 2)),
    "linalg.cond": C(linalg.cond, fl(3, 3)),
    "linalg.cond[fro]": C(lambda a: linalg.cond(a, "fro"), spd(3)),
    "linalg.diagonal": C(linalg.diagonal, fl(3, 3)),
    "linalg.matmul": C(linalg.matmul, fl(2, 3), fl(3, 4)),
    "linalg.vecdot": C(linalg.vecdot, X, Y),
    "linalg.vander": C(linalg.vander, fl(3)),
    "linalg.tensorinv": C(lambda a: linalg.tensorinv(a, 1), _spd_as(4, (4, 2, 2))),
    "linalg.tensorsolve": C(linalg.tensorsolve, _spd_as(4, (2, 2, 4)), fl(2, 2)),
    "linalg.householder_product": C(linalg.householder_product, fl(4, 3), fl(2)),
    "linalg.eig": C(linalg.eig, fl(3, 3)),
    "linalg.eigvals": C(linalg.eigvals, fl(3, 3)),
    "rg.adjoint": C(rg.adjoint, fl(2, 3, 4)),
    "rg.addmv_": C(lambda i, a, v: rg.addmv_(i * 1.0, a, v), fl(2), fl(2, 3), fl(3),
                   grad=False),  # an in-place write, as F.relu_'s case
    "rg.svd_lowrank": C(lambda a: rg.svd_lowrank(a, q=2), fl(4, 3)),
    "rg.pca_lowrank": C(rg.pca_lowrank, fl(4, 3)),
})
NO_TENSORS |= {"rg.tril_indices", "rg.triu_indices", "rg.logspace"}
REFUSES.update({"rg.geqrf": "use rg.linalg.qr", "rg.svd_lowrank": "random numbers",
                "rg.pca_lowrank": "random numbers"})
# the channels' zero points are validated and truncated in Python (their values, not ops)
REFUSES["rg.fake_quantize_per_channel_affine"] = "numpy() of a traced tensor"


# ---- reductions, sets, statistics, number functions and index writes
# (tests/test_torch_reduce_names.py compares them with torch)
CASES.update({
    "rg.amax": C(lambda x: rg.amax(x, 1), X),
    "rg.amin": C(rg.amin, X),
    "rg.aminmax": C(lambda x: rg.aminmax(x, dim=1), X),
    "rg.count_nonzero": C(lambda x: rg.count_nonzero(x, 1), ints(3, 4)),
    "rg.argwhere": C(rg.argwhere, bools(3, 4)),
    "rg.nanmedian": C(rg.nanmedian, X),
    "rg.nanmedian[dim]": C(lambda x: rg.nanmedian(x, 1), X),
    "rg.quantile": C(lambda x, q: rg.quantile(x, q, 1), X, unit(2)),
    "rg.quantile[nearest]": C(lambda x: rg.quantile(x, 0.4, interpolation="nearest"), X),
    "rg.nanquantile": C(rg.nanquantile, X, unit(3)),
    "rg.unique": C(lambda x: rg.unique(x, return_inverse=True, return_counts=True),
                   ints(3, 4)),
    "rg.unique_consecutive": C(rg.unique_consecutive, ints(6)),
    "rg.bincount": C(rg.bincount, ints(5)),
    "rg.histc": C(lambda x: rg.histc(x, 4, -0.5, 0.5), X),
    "rg.histc[data range]": C(lambda x: rg.histc(x, 4), X),
    "rg.histogram": C(lambda x, w: rg.histogram(x, 3, weight=w, density=True), X, pos(3, 4)),
    "rg.histogram[edges]": C(rg.histogram, X, increasing(4)),
    "rg.histogramdd": C(lambda x, w: rg.histogramdd(x, [2, 3, 2, 2], weight=w, density=True),
                        X, pos(3)),
    "rg.histogramdd[edges]": C(lambda x, e: rg.histogramdd(x[:, :2], [e, e]), X,
                               increasing(4)),
    "rg.bucketize": C(rg.bucketize, X, increasing(5)),
    "rg.searchsorted": C(lambda s, v: rg.searchsorted(s, v, right=True), increasing(5), X),
    "rg.isin": C(rg.isin, ints(3, 4, hi=5), ints(3, hi=5)),
    **{f"rg.{n}": C(getattr(rg, n), X) for n in [
        "isneginf", "isposinf", "isreal", "sgn", "signbit", "frexp"]},
    "rg.heaviside": C(lambda x, v: rg.heaviside(rg.round(x), v),
                      fl(3, 4, lo=-1.5, hi=1.5), X),
    "rg.float_power": C(rg.float_power, pos(3, 4), X),
    "rg.ldexp": C(rg.ldexp, X, ints(3, 4, lo=-2, hi=3)),
    "rg.gcd": C(rg.gcd, ints(3, 4, hi=20), ints(3, 4, hi=20)),
    "rg.lcm": C(rg.lcm, ints(3, 4, hi=20), ints(3, 4, hi=20)),
    "rg.nextafter": C(rg.nextafter, X, Y),
    "rg.take": C(rg.take, X, ints(5, lo=-12, hi=12)),
    "rg.select": C(lambda x: rg.select(x, 1, -1), X),
    "rg.index_fill": C(lambda x, i: rg.index_fill(x, 1, i, 0.5), X, ints(2, lo=-4, hi=4)),
    "rg.index_fill[tensor]": C(lambda x, i, v: rg.index_fill(x, 1, i, v), X, ints(2, hi=4),
                               fl()),
    "rg.index_copy": C(lambda x, i, s: rg.index_copy(x, 1, i, s), X, ints(2, hi=4), fl(3, 2)),
    "rg.index_put": C(lambda x, i, v: rg.index_put(x, (i,), v, accumulate=True), X,
                      ints(4, hi=3), fl(4, 4)),
    "rg.index_put[pairs]": C(lambda x, i, j, v: rg.index_put(x, (i, j), v), X, ints(3, hi=3),
                             ints(3, lo=-4, hi=4), fl(3)),
    # grad=False: an in-place write into a tensor that requires grad, replayed by rg.jit,
    # refuses on the second call (as x.masked_fill_ does), a limit of rg.jit
    "rg.index_put_": C(lambda x, i, v: rg.index_put_(x * 1, (i,), v), X, ints(2, hi=3),
                       fl(4), grad=False),
    "rg.index_reduce": C(lambda x, i, s: rg.index_reduce(x, 0, i, s, "amax"), X,
                         ints(2, hi=3), fl(2, 4)),
    "rg.put": C(lambda x, i, s: rg.put(x, i, s, accumulate=True), X, ints(3, lo=-12, hi=12),
                fl(3)),
    "rg.masked_scatter": C(rg.masked_scatter, X, bools(3, 4), fl(12)),
    "rg.select_scatter": C(lambda x, s: rg.select_scatter(x, s, 0, 1), X, fl(4)),
    "rg.slice_scatter": C(lambda x, s: rg.slice_scatter(x, s, 1, 0, 4, 2), X, fl(3, 2)),
    "rg.diagonal_scatter": C(lambda x, s: rg.diagonal_scatter(x, s, 1), X, fl(3)),
    "rg.split_with_sizes": C(lambda x: rg.split_with_sizes(x, [1, 3], 1), X),
    "rg.hsplit": C(lambda x: rg.hsplit(x, 2), X),
    "rg.vsplit": C(lambda x: rg.vsplit(x, [1]), X),
    "rg.dsplit": C(lambda x: rg.dsplit(x, 2), fl(2, 2, 4)),
})
REFUSES.update({  # the result's length depends on the values
    "rg.unique": "distinct values", "rg.unique_consecutive": "distinct values",
    "rg.bincount": "largest value + 1", "rg.argwhere": "keep the shape with a mask",
})


# ---- more of torch.nn.functional's layers and torch's own spellings of them
# (values against torch: tests/test_layers_more.py)

def _bag_offsets(rng):
    """Offsets of 3 bags over 7 indices, the middle one possibly empty."""
    return np.array([0, rng.integers(0, 4), 4])


CASES.update({
    "F.prelu": C(F.prelu, fl(2, 3, 4), fl(3)),
    "F.rrelu": C(F.rrelu, X),
    "F.rrelu[train]": C(lambda x: F.rrelu(x, training=True), X),
    "F.rrelu_": C(lambda x: F.rrelu_(x * 1.0), X, grad=False),
    "F.hardshrink": C(lambda x: F.hardshrink(x, 0.3), X),
    "F.softshrink": C(lambda x: F.softshrink(x, 0.3), X),
    "F.gumbel_softmax": C(F.gumbel_softmax, X),
    # the in-place forms on tensors that do not require grad: rg.jit refuses a recorded
    # write whose operand read its target (y.add_(y) too), on the second call
    **{f"F.{n}": C(lambda x, n=n: getattr(F, n)(x * 1.0), X, grad=False) for n in [
        "relu_", "elu_", "celu_", "selu_", "leaky_relu_", "hardtanh_"]},
    "F.threshold_": C(lambda x: F.threshold_(x * 1.0, 0.1, 2.0), X, grad=False),
    "F.instance_norm": C(lambda x, w, b: F.instance_norm(x, weight=w, bias=b), fl(2, 3, 4),
                         fl(3), fl(3)),
    "F.instance_norm[stats]": C(lambda x, m, v: (
        F.instance_norm(x, m, v, momentum=0.3), m * 1, v * 1), fl(2, 3, 4), fl(3), pos(3),
        grad=(0,)),
    "F.instance_norm[eval]": C(lambda x, m, v: F.instance_norm(x, m, v, use_input_stats=False),
                               fl(2, 3, 4), fl(3), pos(3)),
    "F.local_response_norm": C(lambda x: F.local_response_norm(x, 3), fl(2, 4, 3)),
    "F.local_response_norm[4d]": C(lambda x: F.local_response_norm(x, 2), fl(1, 3, 2, 2)),
    "F.pairwise_distance": C(F.pairwise_distance, X, Y),
    "F.pdist": C(F.pdist, X),
    "F.pdist[inf]": C(lambda x: F.pdist(x, float("inf")), X),
    "F.adaptive_max_pool3d": C(lambda x: F.adaptive_max_pool3d(x, 2, True),
                               fl(1, 2, 3, 3, 3)),
    **{f"F.lp_pool{d}d": C(lambda x, d=d: getattr(F, f"lp_pool{d}d")(x, 2, 2),
                           fl(1, 2, *(4,) * d)) for d in (1, 2, 3)},
    **{f"F.max_pool{d}d_with_indices": C(
        lambda x, d=d: getattr(F, f"max_pool{d}d_with_indices")(x, 2), fl(1, 2, *(4,) * d))
       for d in (1, 2, 3)},
    **{f"F.adaptive_max_pool{d}d_with_indices": C(
        lambda x, d=d: getattr(F, f"adaptive_max_pool{d}d_with_indices")(x, 2),
        fl(1, 2, *(3,) * d)) for d in (1, 2, 3)},
    "F.bilinear": C(F.bilinear, fl(2, 3), fl(2, 4), fl(5, 3, 4), fl(5)),
    "F.channel_shuffle": C(lambda x: F.channel_shuffle(x, 2), fl(2, 4, 3)),
    "F.native_channel_shuffle": C(lambda x: F.native_channel_shuffle(x, 2), fl(2, 4, 3)),
    "F.upsample_nearest": C(lambda x: F.upsample_nearest(x, scale_factor=2), fl(1, 2, 3, 3)),
    "F.upsample_bilinear": C(lambda x: F.upsample_bilinear(x, (4, 5)), fl(1, 2, 3, 3)),
    "F.embedding[freq]": C(lambda i, w: F.embedding(i, w, scale_grad_by_freq=True),
                           ints(5, hi=4), fl(4, 2)),
    **{f"F.embedding_bag[{m}]": C(lambda i, w, o, m=m: F.embedding_bag(i, w, o, mode=m),
                                  ints(7, hi=5), fl(5, 2), _bag_offsets)
       for m in ("sum", "mean", "max")},
    "F.embedding_bag[2d]": C(lambda i, w: F.embedding_bag(i, w, padding_idx=0, mode="max"),
                             ints(3, 2, hi=5), fl(5, 2)),
    "F.embedding_bag[weights]": C(lambda i, w, o, p: F.embedding_bag(
        i, w, o, mode="sum", per_sample_weights=p, scale_grad_by_freq=True), ints(7, hi=5),
        fl(5, 2), _bag_offsets, fl(7)),
    "rg.dropout": C(lambda x: rg.dropout(x, 0.5, False), X),
    "rg.dropout[train]": C(lambda x: rg.dropout(x, 0.5, True), X),
    "rg.dropout_": C(lambda x: rg.dropout_(x * 1.0, 0.5, False), X, grad=False),
    **{f"rg.{n}": C(lambda x, n=n: getattr(rg, n)(x * 1.0, 0.5, True), fl(2, 3, 4)) for n in [
        "alpha_dropout", "alpha_dropout_", "feature_alpha_dropout", "feature_alpha_dropout_",
        "feature_dropout", "feature_dropout_"]},
    "rg.batch_norm": C(lambda x, w, b, m, v: rg.batch_norm(x, w, b, m, v, False, 0.1, 1e-5,
                                                           False), fl(4, 3), fl(3), fl(3),
                       fl(3), pos(3)),
    "rg.instance_norm": C(lambda x, w, b: rg.instance_norm(x, w, b, None, None, True, 0.1,
                                                           1e-5, False), fl(2, 3, 4), fl(3),
                          fl(3)),
    "rg.layer_norm": C(lambda x, w: rg.layer_norm(x, (4,), w), X, fl(4)),
    "rg.group_norm": C(lambda x: rg.group_norm(x, 2), fl(2, 4, 3)),
    "rg.embedding": C(lambda w, i: rg.embedding(w, i, 0), fl(5, 2), ints(3, hi=5)),
    "rg.rrelu": C(rg.rrelu, X),
    "rg.adaptive_max_pool1d": C(lambda x: rg.adaptive_max_pool1d(x, 2), fl(1, 2, 5)),
    "rg.max_pool1d_with_indices": C(lambda x: rg.max_pool1d_with_indices(x, 2), fl(1, 2, 6)),
    **{f"F.fractional_max_pool{d}d{w}": C(
        lambda x, u, d=d, w=w: getattr(F, f"fractional_max_pool{d}d{w}")(
            x, 2, 3, _random_samples=u), fl(1, 2, *(6,) * d), unit(1, 2, d), grad=(0,))
       for d in (2, 3) for w in ("", "_with_indices")},
    "F.fractional_max_pool2d[random]": C(lambda x: F.fractional_max_pool2d(x, 2, 3),
                                         fl(1, 2, 6, 6)),
    "F.conv_tbc": C(lambda x, w, b: F.conv_tbc(x, w, b, 1), fl(5, 2, 3), fl(3, 3, 4), fl(4)),
})
# istft checks the window's overlap-add (NOLA) on its values, as PyTorch does
REFUSES.update({"rg.istft": "numpy() of a traced tensor"})
REFUSES.update({  # random numbers
    "F.fractional_max_pool2d[random]": RANDOM, "F.rrelu[train]": RANDOM,
    "F.gumbel_softmax": RANDOM, "rg.dropout[train]": RANDOM,
    **{f"rg.{n}": RANDOM for n in [
        "alpha_dropout", "alpha_dropout_", "feature_alpha_dropout", "feature_alpha_dropout_",
        "feature_dropout", "feature_dropout_"]},
})


# ---- PyTorch's spellings of arithmetic, comparisons, copies and queries (api/torch_names.py;
# values against torch: tests/test_torch_names.py), its random draws from tensors
# (api/rng.py) and F.multi_head_attention_forward (api/attention.py)
def _mha(need_weights: bool, **kw):
    """F.multi_head_attention_forward on sequence-first (L, N, E) inputs, with every weight
    an argument: 2 heads of 2, eval mode (no dropout)."""
    return lambda q, k, v, w, b, ow, ob, *masks: F.multi_head_attention_forward(
        q, k, v, 4, 2, w, b, None, None, False, 0.0, ow, ob, training=False,
        need_weights=need_weights, **kw, **dict(zip(("key_padding_mask", "attn_mask"), masks)))


_MHA_ARGS = (fl(3, 2, 4), fl(5, 2, 4), fl(5, 2, 4), fl(12, 4), fl(12), fl(4, 4), fl(4))


def _last_key_kept(f):
    """Masks that leave every query the last key to see (else NaN rows, as in PyTorch)."""
    def g(*ts):
        *rest, pad, att = ts
        last = rg.arange(pad.shape[-1]) < pad.shape[-1] - 1
        return f(*rest, pad & last, att & last)
    return g


CASES.update({
    **{f"rg.{n}": C(getattr(rg, n), X, Y) for n in [
        "add", "sub", "subtract", "mul", "multiply", "rsub", "eq", "ne", "lt", "le", "gt", "ge",
        "greater", "greater_equal", "less", "less_equal", "not_equal", "is_same_size",
        "result_type"]},
    **{f"rg.{n}[int]": C(getattr(rg, n), ints(3, 4), ints(3, 4)) for n in [
        "add", "sub", "mul", "rsub", "eq", "ne", "lt", "le", "gt", "ge"]},
    "rg.add[alpha]": C(lambda x, y: rg.add(x, y, alpha=2.5), X, Y),
    "rg.add[number]": C(lambda x: rg.add(x, 2.5, alpha=2), X),
    "rg.add[broadcast]": C(rg.add, X, fl(4)),
    "rg.add[out]": C(lambda x, y, o: rg.add(x, y, out=o), X, Y, fl(3, 4), grad=False),
    "rg.sub[alpha]": C(lambda x, y: rg.sub(x, y, alpha=-0.5), X, Y),
    "rg.rsub[alpha]": C(lambda x, y: rg.rsub(x, y, alpha=3), X, Y),
    "rg.mul[bool]": C(rg.mul, bools(3, 4), bools(3, 4)),
    "rg.mul[out]": C(lambda x, y, o: rg.mul(x, y, out=o), X, Y, fl(3, 4), grad=False),
    "rg.pow": C(rg.pow, pos(3, 4), X),
    "rg.pow[number]": C(lambda x: rg.pow(x, 3), X),
    "rg.pow[base]": C(lambda e: rg.pow(2.0, e), X),
    "rg.pow[int]": C(rg.pow, ints(3, 4, lo=-3, hi=4), ints(3, 4, lo=0, hi=4)),
    "rg.pow[int negative]": C(rg.pow, ints(3, 4, lo=-2, hi=3), ints(3, 4, lo=-2, hi=3)),
    **{f"rg.{n}": C(getattr(rg, n), X) for n in [
        "neg", "negative", "positive", "clone", "detach", "numel", "t", "as_tensor", "asarray",
        "is_tensor", "is_floating_point"]},
    "rg.neg[int]": C(rg.neg, ints(3, 4, lo=-3, hi=3)),
    "rg.t[1d]": C(rg.t, fl(4)),
    "rg.as_tensor[dtype]": C(lambda x: rg.as_tensor(x, dtype=rg.float32), X),
    "rg.asarray[copy]": C(lambda x: rg.asarray(x, dtype=rg.float32, copy=True), X),
    "rg.is_floating_point[int]": C(rg.is_floating_point, ints(3, 4)),
    "rg.result_type[int]": C(rg.result_type, ints(3, 4), bools(3, 4)),
    "rg.broadcast_tensors": C(rg.broadcast_tensors, fl(3, 1), fl(1, 4), fl(4)),
    "rg.clamp_min": C(lambda x: rg.clamp_min(x, -0.5), X),
    "rg.clamp_max": C(lambda x: rg.clamp_max(x, 0.5), X),
    "rg.clamp_min[tensor]": C(rg.clamp_min, X, Y),
    "rg.clamp_max[tensor]": C(rg.clamp_max, X, fl(4)),
    # a Python bool from the values
    "rg.equal": C(rg.equal, X, Y),
    "rg.equal[near]": C(lambda x, d: rg.equal(x, x + d), X, choose(0.0, 1.0)),
    "rg.is_nonzero": C(rg.is_nonzero, fl(1)),
    # random draws (as rg.rand_like)
    "rg.bernoulli": C(rg.bernoulli, unit(3, 4)),
    "rg.bernoulli[p]": C(lambda x: rg.bernoulli(x, 0.3), X),
    "rg.normal": C(rg.normal, X, pos(3, 4)),
    "rg.normal[mean]": C(lambda m: rg.normal(m, 2.0), X),
    "rg.poisson": C(rg.poisson, pos(3, 4)),
    # attention, as nn.MultiheadAttention calls it
    "F.multi_head_attention_forward": C(_mha(True), *_MHA_ARGS),
    "F.multi_head_attention_forward[heads]": C(_mha(True, average_attn_weights=False),
                                               *_MHA_ARGS),
    "F.multi_head_attention_forward[masks]": C(_last_key_kept(_mha(False)), *_MHA_ARGS,
                                               bools(2, 5), bools(3, 5)),
    "F.multi_head_attention_forward[dropout]": C(
        lambda *ts: F.multi_head_attention_forward(
            *ts[:3], 4, 2, ts[3], ts[4], None, None, False, 0.5, ts[5], ts[6],
            training=True), *_MHA_ARGS),
})
NO_TENSORS |= {  # numbers, shapes, dtypes, NumPy arrays; the generator; settings
    "rg.scalar_tensor", "rg.from_numpy", "rg.broadcast_shapes", "rg.promote_types",
    "rg.can_cast", "rg.seed", "rg.initial_seed", "rg.get_rng_state",
    "rg.set_rng_state",  # takes get_rng_state's bytes, not a tensor to compute with
    "rg.get_num_threads", "rg.set_num_threads", "rg.is_inference_mode_enabled"}
REFUSES.update({
    "rg.equal": "rg.eq(x, y).all()", "rg.equal[near]": "rg.eq(x, y).all()",
    "rg.is_nonzero": "bool() of a traced tensor",
    **{k: RANDOM for k in ["rg.bernoulli", "rg.bernoulli[p]", "rg.normal", "rg.normal[mean]",
                           "rg.poisson", "F.multi_head_attention_forward[dropout]"]},
})

# api/torch_misc.py (rg.gradient, rg.fill, rg.unravel_index; the rest are settings,
# creation from numbers, predicates, and the vmap/compile transforms)
CASES.update({
    "rg.gradient": C(lambda x: rg.gradient(x, edge_order=2), X),
    "rg.gradient[spacing]": C(lambda x, c: rg.gradient(x, spacing=[c], dim=1), X,
                              lambda rng: np.cumsum(rng.uniform(0.5, 1.5, 4))),
    "rg.fill": C(lambda x, v: rg.fill(x, v), X, fl()),
    "rg.unravel_index": C(lambda i: rg.unravel_index(i, (3, 4)), ints(5, lo=-12, hi=12)),
})
NO_TENSORS |= {
    "rg.vmap", "rg.compile", "rg.set_printoptions", "rg.get_default_device",
    "rg.set_default_device", "rg.use_deterministic_algorithms",
    "rg.are_deterministic_algorithms_enabled", "rg.is_deterministic_algorithms_warn_only_enabled",
    "rg.set_float32_matmul_precision", "rg.get_float32_matmul_precision", "rg.hann_window",
    "rg.hamming_window", "rg.blackman_window", "rg.bartlett_window", "rg.kaiser_window",
    "rg.empty_strided", "rg.empty_permuted", "rg.frombuffer", "rg.range", "rg.is_anomaly_enabled",
    "rg.set_anomaly_enabled", "rg.is_conj", "rg.is_signed", "rg.typename", "rg.is_storage",
    "rg.get_device"}

# api/sparse_dense.py: PyTorch's sparse COO / CSR constructors and product, stored dense
CASES.update({
    "rg.sparse_coo_tensor": C(lambda v: rg.sparse_coo_tensor([[0, 1, 1], [2, 0, 0]], v, (2, 3)),
                              fl(3)),
    "rg.sparse_csr_tensor": C(lambda v: rg.sparse_csr_tensor([0, 1, 3], [2, 0, 1], v, (2, 3)),
                              fl(3)),
    "rg.spmm": C(rg.spmm, X, fl(4, 2)),
})

# api/fake_quant.py: quantise-dequantise with a straight-through gradient
CASES.update({
    "rg.fake_quantize_per_tensor_affine": C(
        lambda x: rg.fake_quantize_per_tensor_affine(x, 0.05, 3, -128, 127), X),
    "rg.fake_quantize_per_channel_affine": C(
        lambda x: rg.fake_quantize_per_channel_affine(
            x, rg.tensor([0.05, 0.1, 0.02]), rg.tensor([0, 2, -1], dtype=rg.int32), 0, -128,
            127), X),
})

# api/inplace_functions.py: torch.sin_ and its kin, in-place writes as F.relu_'s case
_INPLACE_DOMAIN = {**{n: unit(3) for n in ["acos_", "arccos_", "atanh_", "arctanh_", "logit_"]},
                   **{n: pos(3) for n in ["log_", "log10_", "log1p_", "log2_", "reciprocal_",
                                          "rsqrt_", "sqrt_"]},
                   "acosh_": fl(3, lo=1.1, hi=2.0), "arccosh_": fl(3, lo=1.1, hi=2.0)}
_INPLACE_ARGS = {"clamp_": (-0.5, 0.5), "clip_": (-0.5, 0.5), "clamp_max_": (0.5,),
                 "clamp_min_": (-0.5,), "fill_": (2.0,)}
CASES.update({
    **{f"rg.{n}": C(lambda x, n=n: getattr(rg, n)(x * 1.0, *_INPLACE_ARGS.get(n, ())),
                    _INPLACE_DOMAIN.get(n, fl(3)), grad=False)
       for n in ["abs_", "acos_", "acosh_", "arccos_", "arccosh_", "arcsin_", "arcsinh_",
                 "arctan_", "arctanh_", "asin_", "asinh_", "atan_", "atanh_", "ceil_", "cos_",
                 "cosh_", "deg2rad_", "erf_", "erfc_", "exp2_", "exp_", "expm1_", "fix_",
                 "floor_", "frac_", "log10_", "log1p_", "log2_", "log_", "neg_", "negative_",
                 "rad2deg_", "reciprocal_", "round_", "rsqrt_", "sigmoid_", "sin_", "sinc_",
                 "sinh_", "sqrt_", "square_", "tan_", "tanh_", "trunc_", "clamp_",
                 "clamp_max_", "clamp_min_", "clip_", "fill_", "zero_", "logit_",
                 "nan_to_num_"]},
    "rg.xlogy_": C(lambda x, y: rg.xlogy_(x * 1.0, y), pos(3), pos(3), grad=False),
})


# api/view_copies.py and the torch_misc additions: view copies, method forms, switches
CASES.update({
    "rg.view_copy": C(lambda x: rg.view_copy(x, (4, 3)), X),
    "rg.permute_copy": C(lambda x: rg.permute_copy(x, (1, 0)), X),
    "rg.expand_copy": C(lambda x: rg.expand_copy(x, (3, 4)), fl(1, 4)),
    "rg.transpose_copy": C(lambda x: rg.transpose_copy(x, 0, 1), X),
    "rg.t_copy": C(rg.t_copy, X),
    "rg.squeeze_copy": C(rg.squeeze_copy, fl(3, 1)),
    "rg.unsqueeze_copy": C(lambda x: rg.unsqueeze_copy(x, 1), X),
    "rg.diagonal_copy": C(rg.diagonal_copy, X),
    "rg.select_copy": C(lambda x: rg.select_copy(x, 1, 2), X),
    "rg.slice_copy": C(lambda x: rg.slice_copy(x, 1, 1, 3), X),
    "rg.split_copy": C(lambda x: rg.split_copy(x, 2, 1), X),
    "rg.split_with_sizes_copy": C(lambda x: rg.split_with_sizes_copy(x, [1, 3], 1), X),
    "rg.unbind_copy": C(rg.unbind_copy, X),
    "rg.unfold_copy": C(lambda x: rg.unfold_copy(x, 1, 2, 1), X),
    "rg.detach_copy": C(rg.detach_copy, X, grad=False),
    "rg.alias_copy": C(rg.alias_copy, X),
    "rg.narrow_copy": C(lambda x: rg.narrow_copy(x, 1, 1, 2), X),
    "rg.as_strided": C(lambda x: rg.as_strided(x, (2, 2), (1, 2)), X),
    "rg.as_strided_copy": C(lambda x: rg.as_strided_copy(x, (2, 2), (1, 2)), X),
    "rg.as_strided_scatter": C(lambda x, s: rg.as_strided_scatter(x, s, (2, 2), (1, 2), 1), X,
                               fl(2, 2)),
    "rg.as_strided_scatter[overlap]": C(lambda x, s: rg.as_strided_scatter(x, s, (2, 3), (1, 1)),
                                        X, fl(2, 3)),
    "rg.view_as_real_copy": C(lambda re, im: rg.view_as_real_copy(rg.complex(re, im)), X, Y),
    "rg.view_as_complex_copy": C(rg.view_as_complex_copy, fl(3, 2)),
    "rg.unsafe_chunk": C(lambda x: rg.unsafe_chunk(x, 2, 1), X),
    "rg.unsafe_split": C(lambda x: rg.unsafe_split(x, 2, 1), X),
    "rg.unsafe_split_with_sizes": C(lambda x: rg.unsafe_split_with_sizes(x, [3, 1], 1), X),
    "rg.constant_pad_nd": C(lambda x: rg.constant_pad_nd(x, (1, 2), 0.5), X),
    "rg.detach_": C(lambda x: rg.detach_(x * 1.0), X, grad=False),
    "rg.resolve_neg": C(rg.resolve_neg, X),
    "rg.is_neg": C(rg.is_neg, X, grad=False),
    "rg.is_inference": C(rg.is_inference, X, grad=False),
    "rg.is_distributed": C(rg.is_distributed, X, grad=False),
    "rg.from_dlpack": C(rg.from_dlpack, X, grad=False),  # a tensor requiring grad: BufferError
    "rg.to_dlpack": C(rg.to_dlpack, X, grad=False),
    "rg.nonzero_static": C(lambda m: rg.nonzero_static(m, size=4), bools(3, 4), grad=False),
    "rg.cond": C(lambda p, x: rg.cond(p, lambda v: v + 1, lambda v: v - 1, (x,)),
                 bools(), X),
    "rg.gcd_": C(lambda a, b: rg.gcd_(a * 1, b), ints(3, lo=1, hi=9), ints(3, lo=1, hi=9),
                 grad=False),
    "rg.lcm_": C(lambda a, b: rg.lcm_(a * 1, b), ints(3, lo=1, hi=9), ints(3, lo=1, hi=9),
                 grad=False),
    "rg.ldexp_": C(lambda x, e: rg.ldexp_(x * 1.0, e), fl(3), ints(3), grad=False),
    "rg.i0_": C(lambda x: rg.i0_(x * 1.0), fl(3), grad=False),
    "rg.conj_physical_": C(lambda x: rg.conj_physical_(x * 1.0), fl(3), grad=False),
    "rg.resize_as_": C(lambda x, y: rg.resize_as_(x * 1.0, y), fl(3), fl(3), grad=False),
    "linalg.outer": C(linalg.outer, fl(3), fl(4)),
    "linalg.inner": C(linalg.inner, X, Y),
    "linalg.dot": C(linalg.dot, fl(3), fl(3)),
    "linalg.kron": C(linalg.kron, fl(2, 2), fl(2, 3)),
    "linalg.cholesky_solve": C(linalg.cholesky_solve, fl(3, 2), lower(3)),
})

# api/linalg_ldl.py: LAPACK's sytrf/sytrs through SciPy (values in Python, no op; as in torch,
# no derivative); api/scatter_views.py's case is with the view copies above
CASES.update({
    "linalg.ldl_factor": C(linalg.ldl_factor, sym(3), grad=False),
    "linalg.ldl_factor_ex": C(linalg.ldl_factor_ex, sym(3), grad=False),
    "linalg.ldl_solve": C(lambda a, b: linalg.ldl_solve(*linalg.ldl_factor(a), b), sym(3),
                          fl(3, 2), grad=False),
})
CASES.update({  # api/hashing.py: an xor fold of bit patterns, by rows
    "rg.hash_tensor": C(rg.hash_tensor, X, grad=False),
    "rg.hash_tensor[dim]": C(lambda x: rg.hash_tensor(x, 1, keepdim=True), fl(3, 5),
                             grad=False),
    "rg.hash_tensor[ints]": C(lambda x: rg.hash_tensor(x, (0,)), ints(3, 4, lo=-5, hi=5),
                              grad=False),
})
CASES.update({  # api/torch_additions.py: fronts on F.conv*, F.grid_sample, vector_norm
    "rg.norm_except_dim": C(lambda v: rg.norm_except_dim(v, 3, 1), fl(3, 4, 2)),
    "rg.norm_except_dim[all]": C(lambda v: rg.norm_except_dim(v, 2, -1), X),
    "rg.convolution": C(lambda x, w, b: rg.convolution(x, w, b, [2, 1], [1, 0], [1, 1], False,
                                                       [0, 0], 2), fl(2, 4, 5, 5),
                        fl(6, 2, 3, 3), fl(6)),
    "rg.convolution[transposed]": C(lambda x, w: rg.convolution(x, w, None, 2, 1, 1, True, 1,
                                                                1), fl(2, 4, 5), fl(4, 3, 3)),
    "rg.grid_sampler_2d": C(lambda x, g: rg.grid_sampler_2d(x, g, 0, 1, False),
                            fl(2, 3, 4, 4), fl(2, 3, 3, 2)),
    "rg.grid_sampler_3d": C(lambda x, g: rg.grid_sampler_3d(x, g, 0, 0, True),
                            fl(1, 2, 3, 3, 3), fl(1, 2, 2, 2, 3)),
})
CASES.update({  # api/rnn_functional.py: torch's functional RNNs, by public rows
    "rg.lstm_cell": C(lambda x, h, c, wi, wh, bi, bh: rg.lstm_cell(x, (h, c), wi, wh, bi, bh),
                      fl(2, 3), fl(2, 2), fl(2, 2), fl(8, 3), fl(8, 2), fl(8), fl(8)),
    "rg.gru_cell": C(rg.gru_cell, fl(2, 3), fl(2, 2), fl(6, 3), fl(6, 2), fl(6), fl(6)),
    "rg.rnn_tanh_cell": C(rg.rnn_tanh_cell, fl(2, 3), fl(2, 2), fl(2, 3), fl(2, 2)),
    "rg.rnn_relu_cell": C(rg.rnn_relu_cell, fl(2, 3), fl(2, 2), fl(2, 3), fl(2, 2), fl(2),
                          fl(2)),
    "rg.lstm": C(lambda x, h, c, wi, wh: rg.lstm(x, (h, c), [wi, wh], False, 1, 0.0, False,
                                                 False, False), fl(3, 2, 3), fl(1, 2, 2),
                 fl(1, 2, 2), fl(8, 3), fl(8, 2)),
    "rg.gru": C(lambda x, h, wi, wh, bi, bh: rg.gru(x, h, [wi, wh, bi, bh], True, 1, 0.0,
                                                    False, False, True), fl(2, 3, 3),
                fl(1, 2, 2), fl(6, 3), fl(6, 2), fl(6), fl(6)),
    "rg.rnn_tanh": C(lambda x, h, wi, wh, wi2, wh2: rg.rnn_tanh(
        x, h, [wi, wh, wi2, wh2], False, 1, 0.0, False, True, False), fl(3, 2, 3),
        fl(2, 2, 2), fl(2, 3), fl(2, 2), fl(2, 3), fl(2, 2)),
    "rg.rnn_relu": C(lambda x, h, wi, wh: rg.rnn_relu(x, h, [wi, wh], False, 1, 0.0, False,
                                                      False, False), fl(3, 2, 3), fl(1, 2, 2),
                     fl(2, 3), fl(2, 2)),
})
CASES.update({  # api/native_norms.py: the public norms plus their statistics
    "rg.native_layer_norm": C(lambda x, w, b: rg.native_layer_norm(x, [4], w, b, 1e-5), X,
                              fl(4), fl(4)),
    "rg.native_group_norm": C(lambda x, w, b: rg.native_group_norm(x, w, b, 2, 4, 3, 2, 1e-5),
                              fl(2, 4, 3), fl(4), fl(4)),
    "rg.native_batch_norm": C(lambda x, w, b: rg.native_batch_norm(x, w, b, None, None, True,
                                                                   0.1, 1e-5), X, fl(4), fl(4)),
    "rg.native_dropout": C(lambda x: rg.native_dropout(x, 0.5, False), X),
    "rg.native_dropout[train]": C(lambda x: rg.native_dropout(x, 0.5, True), X),
})
REFUSES["rg.native_dropout[train]"] = RANDOM
CASES["rg.while_loop"] = C(lambda n, x: rg.while_loop(  # api/control_flow.py
    lambda i, v: i < n, lambda i, v: (i + 1, v * 0.5 + 1.0), (n * 0, x)), ints(lo=2, hi=4), X)
REFUSES["rg.while_loop"] = "item() of a traced tensor"
CASES.update({  # api/grouped_mm.py (float32 as torch's CPU kernel needs)
    "F.grouped_mm": C(lambda a, b: F.grouped_mm(a.float(), b.float()), fl(2, 3, 4),
                      fl(2, 4, 2)),
    "F.grouped_mm[offs]": C(lambda a, b, o: F.grouped_mm(a.float(), b.float(), offs=o),
                            fl(6, 4), fl(3, 4, 2), lambda rng: np.array([2, 3, 6], np.int32)),
})
REFUSES["F.grouped_mm[offs]"] = "pass offs as a Python-built tensor"
CASES.update({  # api/lobpcg.py: eigh (after a Cholesky change of basis for B)
    "rg.lobpcg": C(lambda a: rg.lobpcg(a, k=2), spd(6)),
    "rg.lobpcg[B]": C(lambda a, b: rg.lobpcg(a, k=1, B=b, largest=False), spd(4), spd(4)),
})
CASES["rg.embedding_renorm_"] = C(lambda w, i: rg.embedding_renorm_(w * 1.0, i, 0.5, 2.0),
                                fl(4, 3), ints(3, lo=0, hi=4), grad=False)
REFUSES["rg.embedding_renorm_"] = "renorm outside the function"
CASES.update({  # api/segment_reduce.py: slices reduced by the public reductions
    "rg.segment_reduce": C(lambda x, n: rg.segment_reduce(x, "max", lengths=n, unsafe=True),
                           fl(5, 2), lambda rng: np.array([2, 0, 3])),
    "rg.segment_reduce[offsets]": C(lambda x, o: rg.segment_reduce(
        x, "mean", offsets=o, initial=0.5, axis=1), fl(2, 5), lambda rng: np.array(
            [[0, 2, 5], [1, 1, 4]])),
})
REFUSES.update({"rg.segment_reduce": "pass lengths built outside the function",
                "rg.segment_reduce[offsets]": "pass lengths built outside the function"})
CASES["rg.binomial"] = C(rg.binomial, fl(3, lo=1.0, hi=1.0), unit(3),
                        grad=False)  # api/rng_extras.py
REFUSES["rg.binomial"] = RANDOM
NO_TENSORS |= {f"rg.{n}" for n in __import__(  # Python numbers (api/sym_shapes.py)
    "retrograd.api.sym_shapes", fromlist=["__all__"]).__all__}
NO_TENSORS |= {"rg.solve", "rg.lstsq", "rg.eig", "rg.symeig",  # removed in torch 1.9:
               "rg.matrix_rank"}  # they only raise, saying what replaced them
REFUSES.update({"linalg.ldl_factor": "factorise outside the function",
                "linalg.ldl_factor_ex": "factorise outside the function",
                "linalg.ldl_solve": "factorise outside the function"})
REFUSES.update({
    "rg.to_dlpack": "pass the tensor itself",
    "rg.nonzero_static": "compare with a mask",
    "rg.cond": "item() of a traced tensor",
    "rg.resize_as_": "resize outside the function",
})
NO_TENSORS |= {
    "rg.get_deterministic_debug_mode", "rg.set_deterministic_debug_mode",
    "rg.get_num_interop_threads", "rg.set_num_interop_threads", "rg.init_num_threads",
    "rg.is_anomaly_check_nan_enabled", "rg.is_warn_always_enabled", "rg.set_warn_always",
    "rg.set_flush_denormal", "rg.set_default_tensor_type", "rg.is_autocast_enabled",
    "rg.get_autocast_dtype"}


def public_callables():
    for prefix, mod in NAMESPACES.items():
        for name in mod.__all__:
            obj = getattr(mod, name)
            if callable(obj) and not inspect.isclass(obj) and not inspect.ismodule(obj):
                yield f"{prefix}.{name}", obj


def test_every_public_function_has_a_case():
    covered = {id(c.fn) for c in CASES.values()}
    for key in CASES:
        prefix, _, name = key.partition(".")
        obj = getattr(NAMESPACES[prefix], name.split("[")[0], None)
        if obj is not None:
            covered.add(id(obj))
    missing = [key for key, obj in public_callables()
               if key not in CASES and key not in NO_TENSORS and id(obj) not in covered]
    assert not missing, f"no jit audit case for: {missing}"
    assert not set(REFUSES) - set(CASES)


# ---------------------------------------------------------------- the check

def _leaves(out) -> list:
    if isinstance(out, rg.Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        return [v for o in out for v in _leaves(o)]
    return [out]


def _same(got, want, what: str) -> None:
    got, want = _leaves(got), _leaves(want)
    assert len(got) == len(want), what
    for g, w in zip(got, want):
        if isinstance(w, rg.Tensor):
            assert isinstance(g, rg.Tensor), what
            assert g.shape == w.shape and g.dtype == w.dtype, what
            if w.dtype.kind in "fc":
                np.testing.assert_allclose(g.data, w.data, rtol=1e-9, atol=1e-12,
                                           equal_nan=True, err_msg=what)
            else:
                np.testing.assert_array_equal(g.data, w.data, err_msg=what)
        else:
            assert g == w, what


def _tensors(arrays, diff=()) -> list:
    return [rg.tensor(a.copy(), requires_grad=k in diff) for k, a in enumerate(arrays)]


def _draws(case: Case, seeds) -> list:
    return [[np.asarray(g(np.random.default_rng(s))) for g in case.gens] for s in seeds]


SEEDS = (11, 12, 13)


def _jit_or_refuse(fn, draws, eager_fn, what):
    """Traced on draws[0]; each later draw must equal eager mode. The refusal's message
    if it refused, else True."""
    j = rg.jit(fn)
    try:
        first = j(*draws[0]())
    except JitError as e:
        return str(e)
    _same(first, eager_fn(*draws[0]()), f"{what}: the traced call")
    for k, make in enumerate(draws[1:], 1):
        _same(j(*make()), eager_fn(*make()), f"{what}: replay on other values (draw {k})")
    assert j.trace_count == 1, what
    return True


def _loss_of(fn, weights):
    def loss(*xs):
        total = 0.0
        for o, w in zip(_leaves(fn(*xs)), weights):
            if w is not None:
                o = rg.view_as_real(o) if o.dtype.kind == "c" else o
                total = total + (o * w).sum()
        return total
    return loss


@pytest.mark.parametrize("key", sorted(CASES))
def test_jit_replays_each_public_function_or_refuses(key):
    _check(key, CASES[key], REFUSES.get(key))


def _check(key: str, case: Case, refusal: str | None) -> None:
    """Forward, then value_and_grad, each jitted: replays like eager, or refuses when (and
    as) `refusal` says."""
    draws = _draws(case, SEEDS)
    got = _jit_or_refuse(case.fn, [lambda d=d: _tensors(d) for d in draws], case.fn, key)
    if refusal is None:
        assert got is True, f"{key}: refused inside rg.jit: {got}"
    else:
        assert got is not True, f"{key}: expected to refuse inside rg.jit"
        assert "rg.jit" in got and refusal in got, f"{key}: refused saying {got}"
        return
    diff = case.grad if isinstance(case.grad, tuple) else tuple(
        k for k, a in enumerate(draws[0]) if a.dtype.kind == "f" and case.grad)
    if not diff:
        return
    outs = _leaves(case.fn(*_tensors(draws[0], diff)))
    rng = np.random.default_rng(5)
    weights = [rg.tensor(rng.standard_normal(o.shape + ((2,) if o.dtype.kind == "c" else ())))
               if isinstance(o, rg.Tensor) and o.requires_grad else None for o in outs]
    if not any(w is not None for w in weights):
        return
    vg = rg.func.value_and_grad(_loss_of(case.fn, weights), argnums=diff)
    got = _jit_or_refuse(vg, [lambda d=d: _tensors(d, diff) for d in draws], vg, key + " grad")
    assert got is True, f"{key}: the forward replays but its gradient refuses: {got}"


# ---------------------------------------------------------------- invalid values on a replay

def _t(*values, **kw):
    return rg.tensor(np.array(*values, **kw))


INVALID = {  # traced on valid values, replayed on invalid ones: an error as in eager mode
    "F.binary_cross_entropy": (F.binary_cross_entropy, [_t([0.3, 0.6]), _t([0.0, 1.0])],
                               [_t([1.3, 0.6]), _t([0.0, 1.0])], ValueError),
    "F.binary_cross_entropy[nan]": (F.binary_cross_entropy, [_t([0.3, 0.6]), _t([0.0, 1.0])],
                                    [_t([np.nan, 0.6]), _t([0.0, 1.0])], ValueError),
    "F.embedding": (F.embedding, [_t([0, 1]), _t(np.ones((3, 2)))],
                    [_t([0, 5]), _t(np.ones((3, 2)))], IndexError),
    "F.embedding[negative]": (F.embedding, [_t([0, 1]), _t(np.ones((3, 2)))],
                              [_t([0, -1]), _t(np.ones((3, 2)))], IndexError),
    "rg.gather": (lambda x, i: rg.gather(x, 0, i), [_t([1.0, 2.0]), _t([0, 1])],
                  [_t([1.0, 2.0]), _t([0, -1])], IndexError),
    "F.one_hot": (lambda y: F.one_hot(y, 3), [_t([0, 1])], [_t([0, 4])], Exception),
    "F.cross_entropy": (F.cross_entropy, [_t(np.ones((2, 3))), _t([0, 1])],
                        [_t(np.ones((2, 3))), _t([0, 3])], Exception),
    "F.nll_loss": (F.nll_loss, [_t(np.ones((2, 3))), _t([0, 1])],
                   [_t(np.ones((2, 3))), _t([0, -1])], Exception),
}


@pytest.mark.parametrize("key", sorted(INVALID))
def test_a_replay_on_invalid_values_raises_as_eager_mode_does(key):
    """A check that ran only while tracing would let a replay turn invalid values into a
    number; the checks are ops of the program (or the ops themselves refuse)."""
    fn, good, bad, error = INVALID[key]
    with pytest.raises(error) as eager:
        fn(*bad)
    j = rg.jit(fn)
    j(*good)
    with pytest.raises(error) as replay:
        j(*bad)
    if error is ValueError:
        assert str(replay.value) == str(eager.value)


# ---------------------------------------------------------------- distributions

def simplex(*shape):
    def make(rng):
        p = rng.uniform(0.2, 1.0, shape)
        return p / p.sum(-1, keepdims=True)
    return make


def counts(*shape):
    return lambda rng: rng.integers(0, 5, shape).astype(np.float64)


def coin(*shape):
    return lambda rng: (rng.random(shape) < 0.5).astype(np.float64)


D = rg.distributions
# name -> (constructor from the parameter tensors, parameter generators, value generator)
DISTRIBUTIONS = {
    "Normal": (D.Normal, [fl(3), pos(3)], fl(3)),
    "MultivariateNormal": (lambda m, c: D.MultivariateNormal(m, c), [fl(3), spd(3)], fl(2, 3)),
    "MultivariateNormal[tril]": (lambda m, L: D.MultivariateNormal(m, scale_tril=L),
                                 [fl(3), lower(3)], fl(2, 3)),
    "MultivariateNormal[precision]": (lambda m, P: D.MultivariateNormal(m, precision_matrix=P),
                                      [fl(3), spd(3)], fl(2, 3)),
    "StudentT": (D.StudentT, [fl(3, lo=2.0, hi=5.0), fl(3), pos(3)], fl(3)),
    "Poisson": (D.Poisson, [pos(3)], counts(3)),
    "Beta": (D.Beta, [pos(3), pos(3)], unit(3)),
    "Gamma": (D.Gamma, [pos(3), pos(3)], pos(3)),
    "Chi2": (D.Chi2, [pos(3)], pos(3)),
    "Dirichlet": (D.Dirichlet, [pos(2, 3)], simplex(2, 3)),
    "Categorical": (lambda p: D.Categorical(probs=p), [simplex(2, 4)], ints(2, hi=4)),
    "Categorical[logits]": (lambda z: D.Categorical(logits=z), [fl(2, 4)], ints(3, 2, hi=4)),
    "Bernoulli": (lambda p: D.Bernoulli(probs=p), [unit(3)], coin(3)),
    "Bernoulli[logits]": (lambda z: D.Bernoulli(logits=z), [fl(3)], coin(3)),
    "Uniform": (D.Uniform, [fl(3, lo=-2.0, hi=-1.0), fl(3, lo=1.0, hi=2.0)], fl(3)),
    "Exponential": (D.Exponential, [pos(3)], pos(3)),
    "Laplace": (D.Laplace, [fl(3), pos(3)], fl(3)),
}
METHODS = {
    "log_prob": lambda d, v: d.log_prob(v), "cdf": lambda d, v: d.cdf(v),
    "icdf": lambda d, v: d.icdf(rg.sigmoid(v)), "entropy": lambda d, v: d.entropy(),
    "mean": lambda d, v: d.mean, "variance": lambda d, v: d.variance,
    "mode": lambda d, v: d.mode, "stddev": lambda d, v: d.stddev,
    "sample": lambda d, v: d.sample(), "rsample": lambda d, v: d.rsample((2,)),
}


NO_GRAD = {("Gamma", "cdf"): 0, ("Chi2", "cdf"): 0}  # d/d(shape) of gammainc: as in PyTorch


def _dist_case(name: str, method: str) -> Case:
    make, params, value = DISTRIBUTIONS[name]
    n, call = len(params), METHODS[method]
    diff = range(n + (value(np.random.default_rng(0)).dtype.kind == "f"
                      and method in ("log_prob", "cdf", "icdf")))
    return Case(lambda *ts: call(make(*ts[:n]), ts[n]), *params, value,
                grad=tuple(k for k in diff if NO_GRAD.get((name, method)) != k))


@pytest.mark.parametrize("method", sorted(METHODS))
@pytest.mark.parametrize("name", sorted(DISTRIBUTIONS))
def test_jit_replays_each_distribution_method_or_refuses(name, method):
    """Parameters and values are arguments of the jitted function: log_prob, cdf, icdf,
    entropy and the moments replay like eager mode; sampling refuses (random numbers)."""
    case = _dist_case(name, method)
    tensors = _tensors(_draws(case, SEEDS[:1])[0])
    try:
        case.fn(*tensors)
    except NotImplementedError:
        return  # not defined for this distribution in eager mode either
    _check(f"{name}.{method}", case, RANDOM if method in ("sample", "rsample") else None)


def test_kl_divergence_replays():
    pairs = [(D.Normal, [fl(3), pos(3)]), (lambda p: D.Categorical(probs=p), [simplex(2, 4)]),
             (lambda p: D.Bernoulli(probs=p), [unit(3)]), (D.Exponential, [pos(3)]),
             (D.Gamma, [pos(3), pos(3)]), (lambda m, c: D.MultivariateNormal(m, c),
                                           [fl(3), spd(3)])]
    for make, gens in pairs:
        n = len(gens)
        case = Case(lambda *ts, make=make, n=n: D.kl_divergence(make(*ts[:n]), make(*ts[n:])),
                    *gens, *gens)
        _check(f"kl_divergence {make}", case, None)


# ---------------------------------------------------------------- nn layers

def _layers():
    """(name, make layer, input generators) for each nn layer."""
    return {
        "Linear": (lambda: nn.Linear(4, 2), [X]),
        "Conv1d": (lambda: nn.Conv1d(2, 3, 3, padding=1), [fl(2, 2, 5)]),
        "Conv2d": (lambda: nn.Conv2d(2, 3, 3), [fl(1, 2, 4, 4)]),
        "Conv3d": (lambda: nn.Conv3d(1, 2, 2), [fl(1, 1, 3, 3, 3)]),
        "ConvTranspose1d": (lambda: nn.ConvTranspose1d(2, 3, 3), [fl(1, 2, 4)]),
        "ConvTranspose2d": (lambda: nn.ConvTranspose2d(2, 1, 2, stride=2), [fl(1, 2, 3, 3)]),
        "ConvTranspose3d": (lambda: nn.ConvTranspose3d(1, 1, 2), [fl(1, 1, 2, 2, 2)]),
        "MaxPool1d": (lambda: nn.MaxPool1d(2), [fl(1, 2, 6)]),
        "MaxPool2d": (lambda: nn.MaxPool2d(2), [fl(1, 2, 4, 4)]),
        "MaxPool3d": (lambda: nn.MaxPool3d(2), [fl(1, 1, 2, 4, 4)]),
        "AvgPool1d": (lambda: nn.AvgPool1d(2), [fl(1, 2, 6)]),
        "AvgPool2d": (lambda: nn.AvgPool2d(2), [fl(1, 2, 4, 4)]),
        "AvgPool3d": (lambda: nn.AvgPool3d(2), [fl(1, 1, 2, 4, 4)]),
        "AdaptiveAvgPool1d": (lambda: nn.AdaptiveAvgPool1d(3), [fl(1, 2, 7)]),
        "AdaptiveAvgPool2d": (lambda: nn.AdaptiveAvgPool2d(2), [fl(1, 2, 5, 5)]),
        "AdaptiveAvgPool3d": (lambda: nn.AdaptiveAvgPool3d(2), [fl(1, 1, 3, 3, 3)]),
        "AdaptiveMaxPool1d": (lambda: nn.AdaptiveMaxPool1d(3), [fl(1, 2, 7)]),
        "AdaptiveMaxPool2d": (lambda: nn.AdaptiveMaxPool2d(2), [fl(1, 2, 5, 5)]),
        "AdaptiveMaxPool2d[indices]": (lambda: nn.AdaptiveMaxPool2d(2, return_indices=True),
                                       [fl(1, 2, 5, 5)]),
        "MaxUnpool1d": (lambda: nn.MaxUnpool1d(2), [fl(1, 1, 3), pool_index((3,), 2)]),
        "MaxUnpool2d": (lambda: nn.MaxUnpool2d(2), [fl(1, 1, 2, 2), pool_index((2, 2), 2)]),
        "MaxUnpool3d": (lambda: nn.MaxUnpool3d(2),
                        [fl(1, 1, 2, 1, 2), pool_index((2, 1, 2), 2)]),
        "Flatten": (lambda: nn.Flatten(), [fl(2, 3, 4)]),
        "Unflatten": (lambda: nn.Unflatten(1, (2, 2)), [X]),
        "Identity": (lambda: nn.Identity(), [X]),
        "Dropout": (lambda: nn.Dropout(0.5), [X]),
        **{n: (lambda n=n: getattr(nn, n)(), [X]) for n in [
            "ReLU", "Tanh", "Sigmoid", "GELU", "SiLU", "Mish", "Softplus", "ELU", "CELU",
            "SELU", "LeakyReLU", "ReLU6", "Hardtanh", "Hardswish", "Hardsigmoid", "Softsign",
            "LogSigmoid", "GLU", "Tanhshrink"]},
        "Softmax": (lambda: nn.Softmax(1), [X]),
        "LogSoftmax": (lambda: nn.LogSoftmax(1), [X]),
        "Softmin": (lambda: nn.Softmin(1), [X]),
        "Threshold": (lambda: nn.Threshold(0.1, 2.0), [X]),
        "MSELoss": (lambda: nn.MSELoss(), [X, Y]),
        "CrossEntropyLoss": (lambda: nn.CrossEntropyLoss(), [fl(5, 3), ints(5)]),
        "NLLLoss": (lambda: nn.NLLLoss(), [fl(5, 3), ints(5)]),
        "BCEWithLogitsLoss": (lambda: nn.BCEWithLogitsLoss(), [X, unit(3, 4)]),
        **{f"{n}": (lambda n=n: getattr(nn, n)(1), [fl(1, 2, 4)]) for n in [
            "ZeroPad1d", "ReflectionPad1d", "ReplicationPad1d", "CircularPad1d"]},
        **{f"{n}": (lambda n=n: getattr(nn, n)(1), [fl(1, 2, 3, 3)]) for n in [
            "ZeroPad2d", "ReflectionPad2d", "ReplicationPad2d", "CircularPad2d"]},
        **{f"{n}": (lambda n=n: getattr(nn, n)(1), [fl(1, 1, 2, 3, 3)]) for n in [
            "ZeroPad3d", "ReflectionPad3d", "ReplicationPad3d", "CircularPad3d"]},
        "ConstantPad1d": (lambda: nn.ConstantPad1d(1, 0.5), [fl(1, 2, 4)]),
        "ConstantPad2d": (lambda: nn.ConstantPad2d(1, 0.5), [fl(1, 2, 3, 3)]),
        "ConstantPad3d": (lambda: nn.ConstantPad3d(1, 0.5), [fl(1, 1, 2, 3, 3)]),
        "Upsample": (lambda: nn.Upsample(scale_factor=2, mode="bilinear"), [fl(1, 1, 3, 3)]),
        "PixelShuffle": (lambda: nn.PixelShuffle(2), [fl(1, 4, 2, 2)]),
        "PixelUnshuffle": (lambda: nn.PixelUnshuffle(2), [fl(1, 1, 4, 4)]),
        "LayerNorm": (lambda: nn.LayerNorm(4), [X]),
        "RMSNorm": (lambda: nn.RMSNorm(4), [X]),
        "GroupNorm": (lambda: nn.GroupNorm(2, 4), [fl(2, 4, 3)]),
        "BatchNorm1d": (lambda: nn.BatchNorm1d(3), [fl(4, 3)]),
        "SyncBatchNorm": (lambda: nn.SyncBatchNorm(3), [fl(4, 3, 2)]),
        "BatchNorm1d[cumulative]": (lambda: nn.BatchNorm1d(3, momentum=None), [fl(4, 3)]),
        "BatchNorm2d": (lambda: nn.BatchNorm2d(2), [fl(2, 2, 3, 3)]),
        "BatchNorm3d": (lambda: nn.BatchNorm3d(2), [fl(2, 2, 2, 2, 2)]),
        "Embedding": (lambda: nn.Embedding(5, 2), [ints(3, hi=5)]),
        "Embedding[max_norm]": (lambda: nn.Embedding(5, 2, max_norm=0.5), [ints(3, hi=5)]),
        "RNN": (lambda: nn.RNN(3, 4, batch_first=True), [fl(2, 5, 3)]),
        "LSTM": (lambda: nn.LSTM(3, 4, num_layers=2), [fl(5, 2, 3)]),
        "GRU": (lambda: nn.GRU(3, 4, bidirectional=True), [fl(5, 2, 3)]),
        "RNNCell": (lambda: nn.RNNCell(3, 4), [fl(2, 3), fl(2, 4)]),
        "LSTMCell": (lambda: nn.LSTMCell(3, 4), [fl(2, 3)]),
        "GRUCell": (lambda: nn.GRUCell(3, 4), [fl(2, 3), fl(2, 4)]),
        "MultiheadAttention": (lambda: nn.MultiheadAttention(4, 2, batch_first=True),
                               [fl(2, 3, 4), fl(2, 5, 4), fl(2, 5, 4)]),
        "MultiheadAttention[masks]": (
            lambda: _with_masks(nn.MultiheadAttention(4, 2, batch_first=True)),
            [fl(2, 3, 4), fl(2, 5, 4), bools(2, 5), bools(3, 5)]),
        "TransformerEncoderLayer": (
            lambda: nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0, batch_first=True),
            [fl(2, 3, 4)]),
        "TransformerEncoder[mask]": (
            lambda: _with_src_mask(nn.TransformerEncoder(
                nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0, batch_first=True), 2)),
            [fl(2, 3, 4), bools(2, 3)]),
        "Sequential": (lambda: nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 1)), [X]),
        "LSTM[proj]": (lambda: nn.LSTM(3, 4, bidirectional=True, proj_size=2), [fl(5, 2, 3)]),
        "MultiheadAttention[bias_kv]": (
            lambda: nn.MultiheadAttention(4, 2, add_bias_kv=True, add_zero_attn=True, kdim=3),
            [fl(3, 2, 4), fl(5, 2, 3), fl(5, 2, 4)]),
        "TransformerDecoderLayer": (
            lambda: nn.TransformerDecoderLayer(4, 2, 8, dropout=0.0, batch_first=True),
            [fl(2, 3, 4), fl(2, 5, 4)]),
        "TransformerDecoder": (
            lambda: nn.TransformerDecoder(
                nn.TransformerDecoderLayer(4, 2, 8, dropout=0.0, norm_first=True), 2),
            [fl(3, 2, 4), fl(5, 2, 4)]),
        "Transformer": (lambda: nn.Transformer(4, 2, 1, 1, 8, dropout=0.0, batch_first=True),
                        [fl(2, 5, 4), fl(2, 3, 4)]),
    }


class _with_masks(nn.Module):
    def __init__(self, mha):
        super().__init__()
        self.mha = mha

    def forward(self, q, kv, pad, att):
        last = rg.arange(pad.shape[-1]) < pad.shape[-1] - 1
        pad, att = pad & last, att & last  # leave each query the last key to see
        return self.mha(q, kv, kv, key_padding_mask=pad, attn_mask=att)[0]


class _with_src_mask(nn.Module):
    def __init__(self, enc):
        super().__init__()
        self.enc = enc

    def forward(self, x, pad):
        return self.enc(x, src_key_padding_mask=pad & (rg.arange(pad.shape[-1]) > 0))


LAYERS = _layers()


def _called(layer, *shape):
    """A lazy layer after its first (eager) call: its sizes known, it is the eager layer."""
    layer(rg.randn(*shape, dtype=rg.float64))
    return layer


LAYERS.update({  # more of torch.nn's layers (tests/test_layers_more.py)
    "PReLU": (lambda: nn.PReLU(3), [fl(2, 3, 4)]),
    "RReLU": (lambda: nn.RReLU(), [X]),
    "Hardshrink": (lambda: nn.Hardshrink(0.3), [X]),
    "Softshrink": (lambda: nn.Softshrink(0.3), [X]),
    "Softmax2d": (lambda: nn.Softmax2d(), [fl(1, 3, 2, 2)]),
    "Dropout1d": (lambda: nn.Dropout1d(), [fl(2, 3, 4)]),
    "Dropout2d": (lambda: nn.Dropout2d(), [fl(2, 3, 2, 2)]),
    "Dropout3d": (lambda: nn.Dropout3d(), [fl(2, 3, 2, 2, 2)]),
    "AlphaDropout": (lambda: nn.AlphaDropout(), [X]),
    "FeatureAlphaDropout": (lambda: nn.FeatureAlphaDropout(), [fl(2, 3, 4)]),
    "InstanceNorm1d": (lambda: nn.InstanceNorm1d(3, affine=True), [fl(2, 3, 4)]),
    "InstanceNorm2d": (lambda: nn.InstanceNorm2d(3, track_running_stats=True),
                       [fl(2, 3, 2, 2)]),
    "InstanceNorm3d": (lambda: nn.InstanceNorm3d(2), [fl(2, 2, 2, 2, 2)]),
    "LocalResponseNorm": (lambda: nn.LocalResponseNorm(2), [fl(2, 4, 3)]),
    "CrossMapLRN2d": (lambda: nn.CrossMapLRN2d(3, 0.5, 0.75, 1.0), [fl(2, 5, 2, 3)]),
    "CosineSimilarity": (lambda: nn.CosineSimilarity(), [X, Y]),
    "PairwiseDistance": (lambda: nn.PairwiseDistance(), [X, Y]),
    "AdaptiveMaxPool3d": (lambda: nn.AdaptiveMaxPool3d(2), [fl(1, 2, 3, 3, 3)]),
    "LPPool1d": (lambda: nn.LPPool1d(2, 2), [fl(1, 2, 4)]),
    "LPPool2d": (lambda: nn.LPPool2d(2, 2), [fl(1, 2, 4, 4)]),
    "LPPool3d": (lambda: nn.LPPool3d(2, 2), [fl(1, 2, 2, 2, 2)]),
    "Fold": (lambda: nn.Fold((3, 3), 2), [fl(1, 8, 4)]),
    "Unfold": (lambda: nn.Unfold(2), [fl(1, 2, 3, 3)]),
    "Bilinear": (lambda: nn.Bilinear(3, 4, 2), [fl(2, 3), fl(2, 4)]),
    "ChannelShuffle": (lambda: nn.ChannelShuffle(2), [fl(1, 4, 3)]),
    "UpsamplingNearest2d": (lambda: nn.UpsamplingNearest2d(scale_factor=2), [fl(1, 2, 2, 2)]),
    "UpsamplingBilinear2d": (lambda: nn.UpsamplingBilinear2d((3, 4)), [fl(1, 2, 2, 2)]),
    "EmbeddingBag": (lambda: nn.EmbeddingBag(5, 2, mode="max"), [ints(2, 3, hi=5)]),
    "EmbeddingBag[offsets]": (lambda: nn.EmbeddingBag(5, 2), [ints(7, hi=5), _bag_offsets]),
    "FractionalMaxPool2d": (lambda: nn.FractionalMaxPool2d(2, output_ratio=0.5,
                                                           return_indices=True),
                            [fl(1, 2, 6, 6)]),
    "FractionalMaxPool3d": (lambda: nn.FractionalMaxPool3d(
        2, 2, _random_samples=rg.tensor([[[0.3, 0.6, 0.1]]])), [fl(1, 1, 4, 4, 4)]),
    "LazyLinear": (lambda: _called(nn.LazyLinear(2), 3, 4), [X]),
    **{f"Lazy{k}{d}d": (lambda k=k, d=d: _called(getattr(nn, f"Lazy{k}{d}d")(2, 2),
                                                  1, 2, *(3,) * d), [fl(1, 2, *(3,) * d)])
       for k in ("Conv", "ConvTranspose") for d in (1, 2, 3)},
    **{f"Lazy{k}{d}d": (lambda k=k, d=d: _called(getattr(nn, f"Lazy{k}{d}d")(),
                                                  2, 2, *(2,) * d), [fl(2, 2, *(2,) * d)])
       for k in ("BatchNorm", "InstanceNorm") for d in (1, 2, 3)},
})
LAYERS.update({  # the other losses (tests/test_losses_more.py)
    **{n: (lambda n=n: getattr(nn, n)(), [X, Y]) for n in [
        "L1Loss", "SmoothL1Loss", "HuberLoss"]},
    "KLDivLoss": (lambda: nn.KLDivLoss(reduction="batchmean", log_target=True), [X, Y]),
    "BCELoss": (lambda: nn.BCELoss(), [unit(3, 4), unit(3, 4)]),
    "NLLLoss2d": (lambda: nn.NLLLoss2d(), [fl(2, 3, 2, 2), ints(2, 2, 2)]),
    "GaussianNLLLoss": (lambda: nn.GaussianNLLLoss(), [X, Y, pos(3, 4)]),
    "PoissonNLLLoss": (lambda: nn.PoissonNLLLoss(), [X, fl(3, 4, lo=0.0, hi=4.0)]),
    "HingeEmbeddingLoss": (lambda: nn.HingeEmbeddingLoss(), [X, signs(3, 4)]),
    "SoftMarginLoss": (lambda: nn.SoftMarginLoss(), [X, signs(3, 4)]),
    "MultiLabelSoftMarginLoss": (lambda: nn.MultiLabelSoftMarginLoss(), [X, unit(3, 4)]),
    "CosineEmbeddingLoss": (lambda: nn.CosineEmbeddingLoss(0.1), [X, Y, signs(3)]),
    "MarginRankingLoss": (lambda: nn.MarginRankingLoss(0.1), [fl(5), fl(5), signs(5)]),
    "MultiMarginLoss": (lambda: nn.MultiMarginLoss(), [X, ints(3, hi=4)]),
    "MultiLabelMarginLoss": (lambda: nn.MultiLabelMarginLoss(), [X, ints(3, 4, lo=-1, hi=4)]),
    "TripletMarginLoss": (lambda: nn.TripletMarginLoss(), [X, Y, fl(3, 4)]),
    "TripletMarginWithDistanceLoss": (lambda: nn.TripletMarginWithDistanceLoss(swap=True),
                                      [X, Y, fl(3, 4)]),
    "CTCLoss": (lambda: nn.CTCLoss(), [fl(6, 3, 4, lo=-3.0, hi=0.0), ints(3, 2, lo=1, hi=4),
                                       ints(3, lo=4, hi=7), ints(3, lo=0, hi=3)]),
    "LinearCrossEntropyLoss": (lambda: nn.LinearCrossEntropyLoss(4, 3, bias=True),
                               [X, ints(3)]),
    "LinearCrossEntropyLoss[kdim]": (
        lambda: nn.LinearCrossEntropyLoss(4, 3, out_features=(2,), label_smoothing=0.1),
        [X, ints(3, 2)]),
    "AdaptiveLogSoftmaxWithLoss": (lambda: nn.AdaptiveLogSoftmaxWithLoss(16, 8, [2, 5]),
                                   [fl(5, 16), ints(5, hi=8)]),
})
LAYERS["DataParallel"] = (lambda: nn.DataParallel(nn.Linear(4, 3)), [X])  # runs the module
LAYER_REFUSES = {"Dropout[train]"}  # random numbers
LAYER_REFUSES |= {f"{n}[train]" for n in ["RReLU", "Dropout1d", "Dropout2d", "Dropout3d",
                                           "AlphaDropout", "FeatureAlphaDropout"]}
LAYER_REFUSES |= {"FractionalMaxPool2d[train]", "FractionalMaxPool2d[eval]"}  # random windows


def test_every_nn_layer_has_a_case():
    skip = {"Parameter", "Module", "ModuleList", "ModuleDict", "ParameterList",
            "ParameterDict", "RNNBase", "RNNCellBase", "UninitializedParameter", "Buffer",
            "UninitializedBuffer"}
    named = {k.split("[")[0] for k in LAYERS}
    missing = [n for n in nn.__all__ if inspect.isclass(getattr(nn, n))
               and n not in skip and n not in named]
    assert not missing, f"no jit audit case for the layers: {missing}"


def _state(layer) -> list:
    """Buffers, parameters and parameter gradients, as arrays."""
    return [b.data.copy() for b in layer.buffers()] + [
        p.data.copy() for p in layer.parameters()] + [
        None if p.grad is None else p.grad.data.copy() for p in layer.parameters()]


def _step(layer):
    """The layer's forward, then a backward into its parameters' .grad (accumulating)."""
    def step(*xs):
        out = layer(*xs)
        floats = [o for o in _leaves(out) if isinstance(o, rg.Tensor) and o.requires_grad]
        if floats:
            sum((o * o).sum() for o in floats).backward()
        return out
    return step


@pytest.mark.parametrize("mode", ["train", "eval"])
@pytest.mark.parametrize("key", sorted(LAYERS))
def test_jit_replays_each_layer_or_refuses(key, mode):
    """Each layer's forward and backward, jitted, on three batches: outputs, buffers (running
    statistics), parameters (max_norm renormalisation) and gradients as in eager mode."""
    make, gens = LAYERS[key]
    rg.set_default_dtype(np.float64)
    rg.manual_seed(0)
    eager = make()
    getattr(eager, mode)()
    for p in eager.parameters():  # .grad None or not is guarded: start with one, trace once
        p.grad = rg.zeros_like(p)
    traced = copy.deepcopy(eager)  # a deep copy drops .grad, as torch's Parameter does
    for p in traced.parameters():
        p.grad = rg.zeros_like(p)
    draws = _draws(Case(None, *gens), SEEDS)
    j = rg.jit(_step(traced))
    name = f"{key}[{mode}]"
    refuses = f"{key.split('[')[0]}[{mode}]" in LAYER_REFUSES
    for k, d in enumerate(draws):
        try:
            got = j(*_tensors(d))
        except JitError as e:
            assert k == 0, f"{name}: refused on a later call: {e}"
            assert refuses, f"{name} refused: {e}"
            return
        _same(got, _step(eager)(*_tensors(d)), f"{name}: call {k}")
        for a, b in zip(_state(traced), _state(eager)):
            assert (a is None) == (b is None), f"{name}: a .grad set in one mode only"
            if a is not None:
                np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12,
                                           err_msg=f"{name}: state after call {k}")
    assert j.trace_count == 1
    assert not refuses, f"{name} should refuse"
