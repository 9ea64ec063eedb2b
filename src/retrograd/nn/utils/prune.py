"""`rg.nn.utils.prune`: PyTorch's pruning utilities (`torch.nn.utils.prune`).

Pruning `name` of a module moves the parameter to `name_orig`, stores a 0/1 buffer
`name_mask`, and sets `name` to `name_orig * name_mask`, recomputed by a forward
pre-hook (the pruning method itself) before each forward. Pruning the same tensor
again combines the methods in a `PruningContainer` (the new one acts only on the
entries, or channels, still kept); `remove` makes the pruning permanent. The random
methods draw from retrograd's generator, so their masks differ from PyTorch's draws.
"""

from __future__ import annotations

import numbers
from abc import ABC, abstractmethod

from ... import creation
from ...api import kthvalue, norm, topk
from ...creation import rand, rand_like
from ...primitive import ArgumentError
from ...tensor import Tensor
from .convert_parameters import parameters_to_vector

__all__ = ["BasePruningMethod", "PruningContainer", "Identity", "RandomUnstructured",
           "L1Unstructured", "RandomStructured", "LnStructured", "CustomFromMask",
           "identity", "random_unstructured", "l1_unstructured", "random_structured",
           "ln_structured", "global_unstructured", "custom_from_mask", "remove", "is_pruned"]


class BasePruningMethod(ABC):
    """A way of pruning a tensor: `compute_mask(t, default_mask)` gives the 0/1 mask.
    As a forward pre-hook it recomputes the pruned tensor before each forward."""

    _tensor_name: str | None = None
    PRUNING_TYPE = "unstructured"

    def __call__(self, module, inputs) -> None:
        setattr(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """The mask for `t`, given the mask of earlier pruning (`default_mask`)."""

    def apply_mask(self, module) -> Tensor:
        orig = getattr(module, self._tensor_name + "_orig")
        mask = getattr(module, self._tensor_name + "_mask")
        return mask.to(dtype=orig.dtype) * orig

    @classmethod
    def apply(cls, module, name: str, *args, importance_scores=None, **kwargs):
        """Prune `module.name` in place with a new `cls(*args, **kwargs)`; return it."""
        hooks = module.__dict__.get("_forward_pre_hooks", {})
        old = [(k, h) for k, h in hooks.items()
               if isinstance(h, BasePruningMethod) and h._tensor_name == name]
        if len(old) > 1:  # AssertionError, as torch's
            raise AssertionError(f"more than one pruning hook on the same tensor {name!r}; use "
                                 "a PruningContainer")
        for k, _ in old:
            del hooks[k]
        method = cls(*args, **kwargs)
        method._tensor_name = name
        if old:
            container = old[0][1] if isinstance(old[0][1], PruningContainer) \
                else PruningContainer(old[0][1])
            container.add_pruning_method(method)
            method = container
        orig = getattr(module, name)
        if importance_scores is not None:
            if tuple(importance_scores.shape) != tuple(orig.shape):  # torch's kind of error
                raise AssertionError(f"importance_scores should have the same shape as "
                                     f"parameter {name} of {module}, got "
                                     f"{tuple(importance_scores.shape)} vs {tuple(orig.shape)}")
        else:
            importance_scores = orig
        if not isinstance(method, PruningContainer):
            delattr(module, name)
            module.register_parameter(name + "_orig", orig)
            default_mask = creation.ones_like(orig)
        else:
            default_mask = getattr(module, name + "_mask").detach().clone()
        try:
            mask = method.compute_mask(importance_scores.detach(), default_mask=default_mask)
            module.register_buffer(name + "_mask", mask)
            setattr(module, name, method.apply_mask(module))
            module.register_forward_pre_hook(method)
        except Exception:
            if not isinstance(method, PruningContainer):  # roll back to the plain parameter
                orig = getattr(module, name + "_orig")
                delattr(module, name + "_orig")
                module.register_parameter(name, orig)
            raise
        return method

    def prune(self, t: Tensor, default_mask: Tensor | None = None,
              importance_scores: Tensor | None = None) -> Tensor:
        """`t` pruned (a new tensor), without touching any module."""
        scores = importance_scores if importance_scores is not None else t
        if tuple(scores.shape) != tuple(t.shape):
            raise AssertionError(f"importance_scores should have the same shape as tensor t, "
                                 f"got {tuple(scores.shape)} vs {tuple(t.shape)}")
        default_mask = default_mask if default_mask is not None else creation.ones_like(t)
        return t * self.compute_mask(scores, default_mask=default_mask)

    def remove(self, module) -> None:
        """Make the pruning permanent: `name` becomes a parameter holding the pruned values."""
        weight = self.apply_mask(module)
        if hasattr(module, self._tensor_name):
            delattr(module, self._tensor_name)
        orig = getattr(module, self._tensor_name + "_orig")
        orig.data = weight.data
        delattr(module, self._tensor_name + "_orig")
        delattr(module, self._tensor_name + "_mask")
        module.register_parameter(self._tensor_name, orig)


class PruningContainer(BasePruningMethod):
    """Successive pruning of one tensor: each method acts on what the earlier left."""

    def __init__(self, *args) -> None:
        self._pruning_methods: tuple = ()
        if len(args) == 1 and not isinstance(args[0], BasePruningMethod):
            args = tuple(args[0])
        for m in args:
            self.add_pruning_method(m)

    def add_pruning_method(self, method: BasePruningMethod) -> None:
        if not isinstance(method, BasePruningMethod) and method is not None:
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        if method is not None and self._tensor_name is not None \
                and self._tensor_name != method._tensor_name:
            raise ArgumentError(f"can only add pruning methods acting on the parameter named "
                                f"'{self._tensor_name}' to PruningContainer {self}; found "
                                f"'{method._tensor_name}'")
        self._tensor_name = method._tensor_name
        self._pruning_methods += (method,)

    def __len__(self) -> int:
        return len(self._pruning_methods)

    def __iter__(self):
        return iter(self._pruning_methods)

    def __getitem__(self, idx):
        return self._pruning_methods[idx]

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        method = self._pruning_methods[-1]
        new_mask = default_mask.to(dtype=t.dtype)
        if method.PRUNING_TYPE == "unstructured":
            slc = (default_mask == 1,)
        elif method.PRUNING_TYPE == "structured":
            if not hasattr(method, "dim"):
                raise AttributeError("pruning methods of PRUNING_TYPE 'structured' need a "
                                     "'dim' attribute")
            dim = method.dim % t.ndim
            keep = default_mask.sum(dim=[d for d in range(t.ndim) if d != dim]) != 0
            slc = tuple(keep if d == dim else slice(None) for d in range(t.ndim))
        elif method.PRUNING_TYPE == "global":
            slc = (slice(None),) * t.ndim
        else:
            raise ArgumentError(f"unrecognized PRUNING_TYPE {method.PRUNING_TYPE!r}")
        partial = method.compute_mask(t[slc], default_mask=default_mask[slc])
        new_mask[slc] = partial.to(dtype=new_mask.dtype)
        return new_mask


class Identity(BasePruningMethod):
    """Prunes nothing (a mask of ones): to get the pruning bookkeeping only."""

    def compute_mask(self, t, default_mask):
        return default_mask

    @classmethod
    def apply(cls, module, name):
        return super().apply(module, name)


def _check_amount(amount) -> None:
    if not isinstance(amount, numbers.Real) or isinstance(amount, bool):
        raise TypeError(f"invalid type for amount: {amount}. Must be int or float.")
    if (isinstance(amount, numbers.Integral) and amount < 0) or (
            not isinstance(amount, numbers.Integral) and not 0.0 <= amount <= 1.0):
        raise ArgumentError(f"amount={amount} should either be a float in the range [0, 1] or a "
                            "non-negative integer")


def _n_prune(amount, size: int) -> int:
    if isinstance(amount, numbers.Integral):
        if amount > size:
            raise ArgumentError(f"amount={amount} should be smaller than the number of parameters "
                                f"to prune={size}")
        return int(amount)
    return round(amount * size)


def _zero_lowest(default_mask, scores, k: int):
    """A copy of `default_mask` with zeros at the `k` entries of lowest `scores()`."""
    mask = default_mask.clone()
    if k:
        idx = topk(scores().reshape(-1), k, largest=False).indices
        flat = mask.reshape(-1)
        flat[idx] = 0
        mask = flat.reshape(mask.shape)
    return mask


class RandomUnstructured(BasePruningMethod):
    """Zero `amount` (a count, or a fraction) of the entries, chosen at random."""

    def __init__(self, amount) -> None:
        _check_amount(amount)
        self.amount = amount

    def compute_mask(self, t, default_mask):
        return _zero_lowest(default_mask, lambda: -rand_like(t), _n_prune(self.amount,
                                                                           t.numel()))

    @classmethod
    def apply(cls, module, name, amount):
        return super().apply(module, name, amount=amount)


class L1Unstructured(BasePruningMethod):
    """Zero the `amount` entries of smallest absolute value."""

    def __init__(self, amount) -> None:
        _check_amount(amount)
        self.amount = amount

    def compute_mask(self, t, default_mask):
        return _zero_lowest(default_mask, lambda: t.abs(), _n_prune(self.amount, t.numel()))

    @classmethod
    def apply(cls, module, name, amount, importance_scores=None):
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


def _channel_mask(t, dim: int, keep) -> Tensor:
    mask = creation.zeros_like(t)
    mask[tuple(keep if d == dim % t.ndim else slice(None) for d in range(t.ndim))] = 1
    return mask


def _check_structured(t) -> None:
    if t.ndim <= 1:
        raise ArgumentError(f"structured pruning can only be applied to multidimensional tensors; "
                            f"found tensor of shape {tuple(t.shape)} with {t.ndim} dims")


class RandomStructured(BasePruningMethod):
    """Zero `amount` whole channels along `dim`, chosen at random."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount, dim: int = -1) -> None:
        _check_amount(amount)
        self.amount, self.dim = amount, dim

    def compute_mask(self, t, default_mask):
        _check_structured(t)
        n = t.shape[self.dim]
        k = _n_prune(self.amount, n)
        if k == 0:
            return default_mask
        prob = rand(n)  # the k channels with the lowest draws go
        mask = _channel_mask(t, self.dim, prob > kthvalue(prob, k).values)
        return mask * default_mask.to(dtype=mask.dtype)

    @classmethod
    def apply(cls, module, name, amount, dim=-1):
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(BasePruningMethod):
    """Zero the `amount` channels along `dim` of smallest L`n` norm."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount, n, dim: int = -1) -> None:
        _check_amount(amount)
        self.amount, self.n, self.dim = amount, n, dim

    def compute_mask(self, t, default_mask):
        _check_structured(t)
        size = t.shape[self.dim]
        k = _n_prune(self.amount, size)
        if k == 0:
            return default_mask
        dims = [d for d in range(t.ndim) if d != self.dim % t.ndim]
        norms = norm(t, p=self.n, dim=dims)
        keep = topk(norms, size - k, largest=True).indices
        mask = _channel_mask(t, self.dim, keep)
        return mask * default_mask.to(dtype=mask.dtype)

    @classmethod
    def apply(cls, module, name, amount, n, dim, importance_scores=None):
        return super().apply(module, name, amount=amount, n=n, dim=dim,
                             importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Prune with a given 0/1 mask."""

    PRUNING_TYPE = "global"

    def __init__(self, mask) -> None:
        self.mask = mask

    def compute_mask(self, t, default_mask):
        if tuple(default_mask.shape) != tuple(self.mask.shape):
            raise AssertionError(f"default_mask shape {tuple(default_mask.shape)} must match "
                                 f"self.mask shape {tuple(self.mask.shape)}")  # as torch
        return default_mask * self.mask.to(dtype=default_mask.dtype)

    @classmethod
    def apply(cls, module, name, mask):
        return super().apply(module, name, mask=mask)


def identity(module, name: str):
    Identity.apply(module, name)
    return module


def random_unstructured(module, name: str, amount):
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module, name: str, amount, importance_scores=None):
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module, name: str, amount, dim: int):
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module, name: str, amount, n, dim: int, importance_scores=None):
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def custom_from_mask(module, name: str, mask):
    CustomFromMask.apply(module, name, mask)
    return module


def global_unstructured(parameters, pruning_method, importance_scores=None, **kwargs) -> None:
    """Prune the (module, name) pairs together: `pruning_method` (unstructured) picks
    over all their entries at once, e.g. the 20% smallest weights of the whole model."""
    parameters = list(parameters)
    scores = importance_scores if importance_scores is not None else {}
    if not isinstance(scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be a dict")
    flat_scores = parameters_to_vector([scores.get((m, n), getattr(m, n)).detach()
                                        for m, n in parameters])
    default = parameters_to_vector([getattr(m, n + "_mask", None)
                                    if hasattr(m, n + "_mask")
                                    else creation.ones_like(getattr(m, n))
                                    for m, n in parameters])
    method = pruning_method(**kwargs)
    method._tensor_name = "temp"
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError(f'only "unstructured" PRUNING_TYPE supported for the pruning_method; '
                        f"found method {pruning_method} of type {method.PRUNING_TYPE}")
    container = PruningContainer(method)
    final = container.compute_mask(flat_scores, default)
    at = 0
    for m, n in parameters:
        p = getattr(m, n)
        size = p.numel()
        custom_from_mask(m, n, mask=final[at:at + size].reshape(p.shape))
        at += size


def remove(module, name: str):
    """Make the pruning of `module.name` permanent and drop its hook."""
    hooks = module.__dict__.get("_forward_pre_hooks", {})
    for k, hook in list(hooks.items()):
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            hook.remove(module)
            del hooks[k]
            return module
    raise ArgumentError(f"Parameter '{name}' of module {module} has to be pruned before pruning "
                        "can be removed")


def is_pruned(module) -> bool:
    """True if `module` or any submodule has a pruning hook."""
    return any(isinstance(h, BasePruningMethod)
               for m in module.modules()
               for h in m.__dict__.get("_forward_pre_hooks", {}).values())
