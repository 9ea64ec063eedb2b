"""`rg.optim.swa_utils`: weight averaging as PyTorch's `torch.optim.swa_utils`.

`AveragedModel` keeps a deep copy of a model whose parameters (and, with
`use_buffers=True`, buffers) follow a running average of the model's: the plain mean by
default (stochastic weight averaging), or an exponential moving average through
`get_ema_avg_fn` / `get_ema_multi_avg_fn` or a function of one's own. torchvision's
classification recipe builds its `ExponentialMovingAverage` on it. `update_bn` recomputes
BatchNorm statistics over a loader for the averaged weights; `SWALR` anneals each group's
learning rate to a fixed SWA value.

The update order and arithmetic follow PyTorch's CPU path, so a training run gives the same
averaged weights: the first update copies, later ones average; integer buffers
(`num_batches_tracked`) receive the averaged value cast back to their dtype.
"""

from __future__ import annotations

import copy
import itertools
import math
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from ..grad_mode import no_grad
from ..nn.module import Module
from ..nn.normalization import _BatchNorm
from ..primitive import ArgumentError
from ..tensor import Tensor
from .lr_scheduler import LRScheduler

__all__ = ["AveragedModel", "SWALR", "update_bn", "get_ema_avg_fn", "get_ema_multi_avg_fn",
           "get_swa_avg_fn", "get_swa_multi_avg_fn"]


def _check_decay(decay: float) -> None:
    if decay < 0.0 or decay > 1.0:
        raise ArgumentError(f"Invalid decay value {decay} provided. Please provide a value in "
                            f"[0,1] range.")


def get_ema_avg_fn(decay: float = 0.999) -> Callable:
    """`avg_fn` for an exponential moving average: decay * averaged + (1 - decay) * current."""
    _check_decay(decay)

    def ema_update(ema_param: Tensor, current_param: Tensor, num_averaged) -> Tensor:
        with no_grad():
            return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn() -> Callable:
    """`avg_fn` for the running mean: averaged + (current - averaged) / (n + 1)."""
    def swa_update(averaged_param: Tensor, current_param: Tensor, num_averaged) -> Tensor:
        with no_grad():
            return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


def get_ema_multi_avg_fn(decay: float = 0.999) -> Callable:
    """`multi_avg_fn` for an exponential moving average, updating lists of tensors in place
    (floating ones by lerp towards the current values, integer ones by the weighted sum)."""
    _check_decay(decay)

    def ema_update(ema_param_list: list, current_param_list: list, _num_averaged) -> None:
        with no_grad():
            if ema_param_list and ema_param_list[0].dtype.kind in "fc":
                for p_ema, p_model in zip(ema_param_list, current_param_list, strict=True):
                    p_ema.lerp_(p_model, 1 - decay)
            else:
                for p_ema, p_model in zip(ema_param_list, current_param_list, strict=True):
                    p_ema.copy_(p_ema * decay + p_model * (1 - decay))

    return ema_update


def get_swa_multi_avg_fn() -> Callable:
    """`multi_avg_fn` for the running mean, updating lists of floating tensors in place."""
    def swa_update(averaged_param_list: list, current_param_list: list, num_averaged) -> None:
        with no_grad():
            # as torch's 1 / (num_averaged + 1): AveragedModel's int64 count gives the weight
            # in the default dtype (float32: 1/3 rounded), a Python count a float64 one
            weight = float(1 / (num_averaged + 1))
            if averaged_param_list and averaged_param_list[0].dtype.kind in "fc":
                for p_avg, p_model in zip(averaged_param_list, current_param_list, strict=True):
                    p_avg.lerp_(p_model, weight)
            elif averaged_param_list:  # torch's foreach path refuses integer tensors too
                raise RuntimeError("get_swa_multi_avg_fn: integer tensors cannot hold the "
                                   "running mean in place (torch refuses them as well); "
                                   "average floating tensors, or use get_swa_avg_fn")

    return swa_update


class AveragedModel(Module):
    """A deep copy of `model` whose weights are averaged over `update_parameters` calls;
    calling it runs the copy. `avg_fn(averaged, current, n)` returns one averaged tensor,
    `multi_avg_fn(averaged_list, current_list, n)` updates lists in place (give at most one;
    neither means the running mean). With `use_buffers` the buffers are averaged too, else
    they are copied from the model at each update. `n_averaged` counts the updates."""

    def __init__(self, model: Module, device=None, avg_fn: Callable | None = None,
                 multi_avg_fn: Callable | None = None, use_buffers: bool = False) -> None:
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = copy.deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", Tensor(np.array(0, dtype=np.int64)))
        if device is not None:
            self.n_averaged = self.n_averaged.to(device)
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def update_parameters(self, model: Module) -> None:
        """Fold `model`'s current weights into the average (the first call copies them)."""
        if self.use_buffers:
            mine = itertools.chain(self.module.parameters(), self.module.buffers())
            theirs = itertools.chain(model.parameters(), model.buffers())
        else:
            mine, theirs = self.parameters(), model.parameters()
        first = int(self.n_averaged.item()) == 0
        pairs = []
        with no_grad():
            for p_avg, p_model in zip(mine, theirs):  # as torch: stops at the shorter
                current = p_model.detach().to(p_avg.device)
                pairs.append((p_avg.detach(), current))
                if first:
                    p_avg.detach().copy_(current)
            if not first:
                n = self.n_averaged.to(self.n_averaged.device)
                if self.avg_fn is not None and self.multi_avg_fn is None:
                    for p_avg, current in pairs:
                        p_avg.copy_(self.avg_fn(p_avg, current, n))
                else:
                    # grouped by dtype (and device) as torch's foreach path groups them
                    groups: dict = {}
                    for p_avg, current in pairs:
                        key = (str(p_avg.device), p_avg.dtype)
                        groups.setdefault(key, ([], []))
                        groups[key][0].append(p_avg)
                        groups[key][1].append(current)
                    for avg_list, cur_list in groups.values():
                        if self.multi_avg_fn is not None:
                            self.multi_avg_fn(avg_list, cur_list, n)
                        else:  # torch's CPU path: the running mean, one tensor at a time
                            swa = get_swa_avg_fn()
                            for p_avg, current in zip(avg_list, cur_list, strict=True):
                                p_avg.copy_(swa(p_avg, current, n))
            if not self.use_buffers:
                for b_avg, b_model in zip(self.module.buffers(), model.buffers(), strict=True):
                    b_avg.detach().copy_(b_model.detach().to(b_avg.device))
            self.n_averaged.add_(1)


def update_bn(loader: Iterable[Any], model: Module, device=None) -> None:
    """Recompute every BatchNorm layer's running statistics as the plain average over one pass
    of `loader` (its items, or their first element), in training mode and without gradients;
    momenta and the training flag are restored afterwards."""
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    with no_grad():
        for item in loader:
            if isinstance(item, (list, tuple)):
                item = item[0]
            if device is not None:
                item = item.to(device)
            model(item)
    for module, momentum in momenta.items():
        module.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneal each group's learning rate from its value to `swa_lr` over `anneal_epochs`
    steps ("cos" or "linear"), then hold it there, as torch's SWALR."""

    def __init__(self, optimizer, swa_lr, anneal_epochs: int = 10, anneal_strategy: str = "cos",
                 last_epoch: int = -1) -> None:
        swa_lrs = _per_group(optimizer, swa_lr)
        for lr, group in zip(swa_lrs, optimizer.param_groups, strict=True):
            group["swa_lr"] = lr
        if anneal_strategy not in ("cos", "linear"):
            raise ArgumentError("anneal_strategy must be one of 'cos' or 'linear', instead got "
                                f"{anneal_strategy}")
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ArgumentError(f"anneal_epochs must be equal or greater than 0, got "
                                f"{anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    def _set_anneal_func(self, anneal_strategy: str) -> None:
        self._anneal_strategy = anneal_strategy
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else \
            self._linear_anneal

    def state_dict(self) -> dict[str, Any]:
        """Every attribute but the optimizer and `anneal_func` (a function, which a
        checkpoint cannot hold): the strategy is saved by name, as PyTorch's."""
        return {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the state and the annealing function of the saved strategy."""
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)

    @staticmethod
    def _linear_anneal(t: float) -> float:
        return t

    @staticmethod
    def _cosine_anneal(t: float) -> float:
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr: float, swa_lr: float, alpha: float) -> float:
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self) -> list:
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_t = max(0, min(1, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self.anneal_func(prev_t)
        prev_lrs = [self._get_initial_lr(g["lr"], g["swa_lr"], prev_alpha)
                    for g in self.optimizer.param_groups]
        t = max(0, min(1, step / max(1, self.anneal_epochs)))
        alpha = self.anneal_func(t)
        return [g["swa_lr"] * alpha + lr * (1 - alpha)
                for g, lr in zip(self.optimizer.param_groups, prev_lrs, strict=True)]


def _per_group(optimizer, value) -> list:
    n = len(optimizer.param_groups)
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            raise ArgumentError(f"swa_lr must have the same length as optimizer.param_groups: "
                                f"swa_lr has {len(value)}, optimizer.param_groups has {n}")
        return list(value)
    return [value] * n
