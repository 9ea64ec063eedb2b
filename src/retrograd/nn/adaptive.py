"""`AdaptiveLogSoftmaxWithLoss`: torch.nn's efficient softmax for many classes (Grave et
al., 2017). The frequent classes (below the first cutoff) and one entry per cluster of
rarer classes form the head; each cluster has a tail, a two-layer projection whose
hidden size shrinks by `div_value` per cluster. A class in a cluster has log-probability
head(cluster) + tail(class).

PyTorch runs each tail on the rows whose targets fall in its cluster (a boolean
selection, whose size depends on the values); here every tail runs on every row and a
`where` keeps each row's own, so the values and gradients are the same and `rg.jit`
replays it for any targets.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Sequence

import numpy as np

from .. import api as _f
from .. import creation
from .._values import every_value
from ..api._loss_args import LossShapeError, LossTargetError
from ..grad_mode import state
from ..primitive import ArgumentError
from ..tensor import Tensor, as_tensor
from . import functional as F
from .containers import ModuleList, Sequential
from .linear import Linear
from .module import Module

__all__ = ["AdaptiveLogSoftmaxWithLoss"]

def _t(x) -> Tensor:
    return x if isinstance(x, Tensor) else as_tensor(x)


_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """Adaptive softmax over `n_classes` split at `cutoffs`; `forward(input, target)` gives
    `(output, loss)`: each row's target log-probability and the mean negative one.
    `log_prob(input)` gives every class's, `predict(input)` the most likely class. Like
    `torch.nn.AdaptiveLogSoftmaxWithLoss`."""

    def __init__(self, in_features: int, n_classes: int, cutoffs: Sequence[int],
                 div_value: float = 4.0, head_bias: bool = False, device=None,
                 dtype=None) -> None:
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ArgumentError("cutoffs should be a sequence of length larger than 0")
        if (cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1
                or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs)):
            raise ArgumentError("cutoffs should be a sequence of unique, positive integers sorted "
                                "in an increasing order, where each value is between 1 and "
                                f"n_classes-1 ({n_classes - 1}); got {cutoffs}")
        self.in_features, self.n_classes = in_features, n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value, self.head_bias = div_value, head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias, dtype=dtype)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hsz = int(in_features // div_value ** (i + 1))
            osz = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(Linear(in_features, hsz, bias=False, dtype=dtype),
                                        Linear(hsz, osz, bias=False, dtype=dtype)))
        if device is not None:
            self.to(device)

    def reset_parameters(self) -> None:
        """Draw every layer's parameters again, as at construction."""
        self.head.reset_parameters()
        for i2h, h2o in self.tail:
            i2h.reset_parameters()
            h2o.reset_parameters()

    def forward(self, input_, target_):
        x, y = _t(input_), _t(target_)
        if y.ndim == 1:
            if x.ndim == 0 or x.shape[0] != y.shape[0]:
                raise LossShapeError(f"AdaptiveLogSoftmaxWithLoss: input {tuple(x.shape)} and "
                                     f"target {tuple(y.shape)} should have the same size in "
                                     "the batch dimension")
            if x.ndim != 2:
                raise LossShapeError(f"AdaptiveLogSoftmaxWithLoss: a 1-d target expects 2-d "
                                     f"inputs, got input {tuple(x.shape)}")
        elif y.ndim == 0:
            if x.ndim != 1:
                raise LossShapeError(f"AdaptiveLogSoftmaxWithLoss: a 0-d target expects a 1-d "
                                     f"input, got input {tuple(x.shape)}")
        else:
            raise LossShapeError(f"AdaptiveLogSoftmaxWithLoss: 0-d or 1-d target expected "
                                 f"(multi-target not supported), got {tuple(y.shape)}")
        batched = y.ndim > 0
        if not batched:
            x, y = _f.unsqueeze(x, 0), _f.unsqueeze(y, 0)
        self._check_targets(y)
        head = F.log_softmax(self.head(x), 1)
        output = creation.zeros_like(y, dtype=head.dtype)
        gather = y
        for i in range(1, len(self.cutoffs)):
            low, high = self.cutoffs[i - 1], self.cutoffs[i]
            inside = (y >= low) & (y < high)
            local = F.log_softmax(self.tail[i - 1](x), 1)
            rel = _f.where(inside, y - low, 0)
            picked = _f.gather(local, 1, _f.unsqueeze(rel, 1))[:, 0]
            output = _f.where(inside, picked, output)
            gather = _f.where(inside, self.shortlist_size + i - 1, gather)
        output = output + _f.gather(head, 1, _f.unsqueeze(gather, 1))[:, 0]
        loss = _f.mean(-output)
        return _ASMoutput(output if batched else output[0], loss)

    def _check_targets(self, y: Tensor) -> None:
        if y.dtype.kind not in "iu":
            raise TypeError(f"AdaptiveLogSoftmaxWithLoss: target must hold integer class "
                            f"indices, got {y.dtype}")
        if state.tracer is None:
            v = every_value(y)
            if v.size and (v.min() < 0 or v.max() >= self.n_classes):
                raise LossTargetError(f"AdaptiveLogSoftmaxWithLoss: target values should be in "
                                      f"[0, {self.n_classes - 1}], but values in range "
                                      f"[{int(v.min())}, {int(v.max())}] were found")

    def _full_log_prob(self, x: Tensor, head_output: Tensor) -> Tensor:
        head = F.log_softmax(head_output, 1)
        parts = [head[:, :self.shortlist_size]]
        for i in range(self.n_clusters):
            local = F.log_softmax(self.tail[i](x), 1)
            parts.append(local + head[:, self.shortlist_size + i:self.shortlist_size + i + 1])
        return _f.cat(parts, 1)

    def log_prob(self, input) -> Tensor:
        """Every class's log-probability, (N, n_classes)."""
        return self._full_log_prob(input, self.head(input))

    def predict(self, input) -> Tensor:
        """The most likely class of each row (the head's choice when it is a frequent class,
        as in PyTorch), int64 (N,)."""
        head_output = self.head(input)
        first = _f.argmax(head_output, 1)
        full = _f.argmax(self._full_log_prob(input, head_output), 1)
        return _f.where(first >= self.shortlist_size, full, first).to(np.int64)
