"""Connectionist Temporal Classification: `ctc_loss`, PyTorch's `F.ctc_loss`.

The loss of one sequence is -log of the total probability of every alignment of
its target with the input frames: the target with a blank before, between and after
its labels (the extended labels, 2S + 1 of them) is walked left to right, one frame
at a time, staying on a label, stepping to the next, or skipping a blank between two
different labels.

Here the arguments are checked (lengths and labels by ops too, so that an `rg.jit`
replay checks each call's), the targets padded and extended, and each frame's
log-probability of each extended label gathered: `emit` (T, N, 2S + 1), a recorded
op. The alpha recursion over the frames and its alpha-beta gradient are one node of
the op table, `ops/ctc.py`, computed on arrays for the whole batch (a Python loop over
T only). The gradient is the loss's derivative, -P(state at frame t) summed per
label: PyTorch's adds exp(log_probs) to it (the gradient with respect to the logits
of a log_softmax), which is the same once it has passed through `log_softmax`, as it
does in practice. CTC is differentiable once, as in PyTorch. An impossible alignment
(an input too short for its target) gives an infinite loss and, as in PyTorch, NaN
gradients for its frames, or 0 and a zero gradient with `zero_infinity=True`.
"""

from __future__ import annotations

import numpy as np

from .. import ops
from .._values import every_value, values_of
from ..devices import namespace_of
from ..engine import apply
from ..grad_mode import state
from ..ops.checks import check_within
from ..tensor import Tensor
from ._args import _t
from ._loss_args import (
    LossDtypeError,
    LossShapeError,
    LossTargetError,
    LossValueError,
    check_reduction,
    no_half,
)
from .elementwise import clamp, where
from .indexing import gather
from .reductions import mean, sum
from .shape import cat, expand, reshape, stack, unsqueeze

__all__ = ["ctc_loss"]

_FN = "ctc_loss"


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank: int = 0,
             reduction: str = "mean", zero_infinity: bool = False) -> Tensor:
    """CTC loss of `log_probs` (T, N, C) (or (T, C) unbatched; log-softmax outputs) against
    `targets` padded (N, S) or concatenated (sum(target_lengths),), with per-sequence
    `input_lengths` (<= T) and `target_lengths` (tensors or sequences of ints). 'mean'
    divides each loss by its target length, then averages over the batch."""
    check_reduction(reduction, _FN)
    return ctc(log_probs, targets, input_lengths, target_lengths, blank, reduction,
               zero_infinity)


def ctc(log_probs, targets, input_lengths, target_lengths, blank: int, reduction: str,
        zero_infinity: bool) -> Tensor:
    """`ctc_loss` with a checked reduction (shared with the `torch.*` spelling)."""
    lp = _t(log_probs)
    if lp.dtype.kind != "f":
        raise LossDtypeError(f"{_FN}: log_probs must be floating, got {lp.dtype}")
    no_half(lp, _FN)
    if lp.ndim not in (2, 3):
        raise LossShapeError(f"{_FN}: log_probs must be (T, N, C) or (T, C), got shape "
                             f"{tuple(lp.shape)}")
    if lp.size == 0:
        raise LossShapeError(f"{_FN}: log_probs must not be empty, got shape "
                             f"{tuple(lp.shape)}")
    unbatched = lp.ndim == 2
    if unbatched:
        lp = unsqueeze(lp, 1)
    t_max, n, c = lp.shape
    if not 0 <= blank < c:
        raise LossValueError(f"{_FN}: blank must be in label range [0, {c - 1}], got {blank}")
    il = _lengths(input_lengths, n, unbatched, "input_lengths", lp)
    tl = _lengths(target_lengths, n, unbatched, "target_lengths", lp)
    y = _targets(_t(targets), tl, n, unbatched, lp)
    s = y.shape[1]
    checks = [_within(il, 0, t_max, "input_lengths", f"at most T={t_max}"),
              _within(tl, s if unbatched and _t(targets).ndim == 1 else 0, s, "target_lengths",
                      f"at most the targets' width {s}")]
    xp = namespace_of(lp.data)
    listed = reshape(_arange(xp, s, y), 1, s) < unsqueeze(tl, 1)       # (N, S)
    checks.append(_labels(y, listed, c, blank))
    y = where(listed, y, blank)
    ext, skip = _extended(y, blank, xp)                                # (N, L)
    big_l = ext.shape[1]
    emit = gather(lp, 2, expand(unsqueeze(ext, 0), t_max, n, big_l))  # (T, N, L)
    loss = -apply(ops.ctc_loglik, emit, skip, il, tl)
    inf = loss == np.inf
    if zero_infinity:
        loss = where(inf, np.zeros((), loss.dtype), loss)
    elif lp.requires_grad:
        loss = loss + _nan_gradient(lp, il, inf, xp)
    for one in checks:
        loss = loss * one
    if reduction == "mean":
        return mean(loss / clamp(tl, min=1).to(loss.dtype))
    if reduction == "sum":
        return sum(loss)
    return reshape(loss, ()) if unbatched else loss


def _arange(xp, k: int, like: Tensor) -> Tensor:
    return Tensor(xp.arange(k, dtype=like.dtype))


def _lengths(v, n: int, unbatched: bool, name: str, lp: Tensor) -> Tensor:
    """Lengths as an int64 tensor of shape (N,)."""
    if not isinstance(v, Tensor):
        arr = np.asarray(v)
        if arr.dtype.kind not in "iu":
            raise LossDtypeError(f"{_FN}: {name} must be integral, got {v!r}")
        v = Tensor(namespace_of(lp.data).asarray(arr.astype(np.int64)))
    elif v.dtype.kind not in "iu":
        raise LossDtypeError(f"{_FN}: {name} must be integral, got {v.dtype}")
    if unbatched and v.ndim == 0:
        v = reshape(v, 1)
    if v.shape != (n,):
        raise LossShapeError(f"{_FN}: {name} must be of size batch_size ({n},), got shape "
                             f"{tuple(v.shape)}")
    return v if v.dtype == np.int64 else v.to(np.int64)


def _within(v: Tensor, lo: int, hi: int, name: str, what: str) -> Tensor:
    """Checked in Python (PyTorch's RuntimeError) and by an op (every rg.jit replay)."""
    message = f"{_FN}: {name} must be at least {lo} and {what}"
    if state.tracer is None:
        vals = every_value(v)
        if vals.size and not bool(((vals >= lo) & (vals <= hi)).all()):
            bad = int(vals[(vals < lo) | (vals > hi)].ravel()[0])
            raise LossValueError(f"{message}, got {bad}")
    return apply(check_within, v.detach(), lo=lo, hi=hi, open_lo=False, message=message)


def _labels(y: Tensor, listed: Tensor, c: int, blank: int) -> Tensor:
    """The listed labels must be classes other than the blank (PyTorch's documented
    contract, which its kernels do not check: a blank in a target gives a gradient that
    is not the loss's derivative)."""
    message = (f"{_FN}: target labels must be class indices in [0, {c - 1}] other than "
               f"the blank ({blank})")
    bad = listed & ((y < 0) | (y >= c) | (y == blank))
    if state.tracer is None:
        flags = every_value(bad)
        if flags.size and bool(flags.any()):
            vals = namespace_of(flags).broadcast_to(every_value(y), flags.shape)
            v = int(vals[flags].ravel()[0])
            error = LossValueError if v == blank else LossTargetError
            raise error(f"{message}, got {v}")
    return apply(check_within, bad.to(np.int64), lo=0, hi=0, open_lo=False, message=message)


def _targets(y: Tensor, tl: Tensor, n: int, unbatched: bool, lp: Tensor) -> Tensor:
    """Padded int64 targets (N, S)."""
    if y.dtype.kind not in "iuf":
        raise LossDtypeError(f"{_FN}: targets must hold integer labels, got {y.dtype}")
    if y.dtype != np.int64:
        y = y.detach().to(np.int64)
    if y.ndim not in (1, 2):
        raise LossShapeError(f"{_FN}: targets must be padded (N, S) or concatenated "
                             f"(sum(target_lengths),), got shape {tuple(y.shape)}")
    if unbatched and y.ndim == 1:  # one sequence: all of it is the target
        if state.tracer is None and not bool((every_value(tl) == y.shape[0]).all()):
            raise LossShapeError(f"{_FN}: an unbatched target of shape {tuple(y.shape)} must "
                                 f"hold target_length={int(every_value(tl).ravel()[0])} labels")
        return unsqueeze(y, 0)
    if y.ndim == 2:
        if y.shape[0] != n:
            raise LossShapeError(f"{_FN}: padded targets must have shape (N={n}, S), got "
                                 f"{tuple(y.shape)}")
        return y
    lengths = values_of(tl, "ctc_loss with concatenated targets (their split depends on "
                        "target_lengths)", "pass the targets padded to (N, S)")
    flat = values_of(y, "ctc_loss with concatenated targets", "pass them padded to (N, S)")
    if lengths.size and lengths.min() < 0:
        raise LossValueError(f"{_FN}: target_lengths must be at least 0, got "
                             f"{int(lengths.min())}")
    total = int(lengths.sum())
    if flat.shape[0] != total:
        raise LossShapeError(f"{_FN}: concatenated targets must have sum(target_lengths) = "
                             f"{total} entries, got shape {tuple(y.shape)}")
    xp = namespace_of(flat)
    s = int(lengths.max()) if lengths.size else 0
    padded = xp.zeros((n, s), np.int64)
    start = 0
    for k, length in enumerate(lengths.tolist()):  # host ints, whatever the device
        padded[k, :length] = flat[start:start + length]
        start += length
    return Tensor(padded)


def _extended(y: Tensor, blank: int, xp) -> tuple:
    """The extended labels (N, 2S + 1): blank, y1, blank, y2, ..., blank; and where a
    position may be reached from two back (a label that differs from the previous one)."""
    n, s = y.shape
    blanks = Tensor(xp.full((n, s), blank, np.int64))
    ext = cat([reshape(stack([blanks, y], 2), n, 2 * s),
               Tensor(xp.full((n, 1), blank, np.int64))], 1)
    big_l = 2 * s + 1
    prev2 = cat([Tensor(xp.full((n, min(2, big_l)), -1, np.int64)),
                 ext[:, :max(big_l - 2, 0)]], 1)
    odd = Tensor(xp.asarray(np.arange(big_l) % 2 == 1) & xp.asarray(np.arange(big_l) >= 2))
    return ext, (ext != prev2) & odd


def _nan_gradient(lp: Tensor, il: Tensor, inf: Tensor, xp) -> Tensor:
    """Zero per sequence, whose gradient is NaN for the frames t < input length of the
    sequences whose loss is infinite (PyTorch's gradient there) and 0 for the others.
    `where(False, u * nan, 0)` is 0 with the gradient nan * 0 = NaN (no 0 / 0, so NumPy
    does not warn); the `where` on the frames passes it to those sequences alone."""
    t_max, n, _ = lp.shape
    frames = reshape(_arange(xp, t_max, il), t_max, 1, 1) < reshape(il, 1, n, 1)
    frames = frames & reshape(inf, 1, n, 1)
    u = sum(where(frames, lp - lp.detach(), np.zeros((), lp.dtype)), (0, 2))
    never = Tensor(xp.zeros((n,), np.bool_))
    return where(never, u * np.array(np.nan, lp.dtype), np.zeros((), lp.dtype))
