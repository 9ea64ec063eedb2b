"""`rg.amp`: PyTorch's automatic-mixed-precision names (`autocast`, `GradScaler`), so
training loops written for them (nanoGPT's train.py) run unchanged.

retrograd computes in the dtypes it is given; it has no lower-precision kernels to
switch to. So an enabled `autocast` does what PyTorch's does when it cannot run the
requested dtype (a CUDA autocast without a GPU, a CPU autocast to an unsupported dtype):
it warns that it is disabling itself and runs the code in its own dtypes (results are
then computed at full precision; their dtypes are the inputs', not the lower one).
`GradScaler` is
PyTorch's loss scaler in full: scale the loss, unscale the gradients, skip a step whose
gradients hold inf or NaN, and grow or back off the scale.
"""

from __future__ import annotations

import functools
import math
import sys
import types
import warnings
from collections.abc import Iterable
from typing import Any

import numpy as np

from . import devices
from .grad_mode import no_grad
from .primitive import ArgumentError
from .tensor import Tensor

__all__ = ["autocast", "GradScaler", "is_autocast_available", "is_autocast_enabled",
           "get_autocast_dtype", "custom_fwd", "custom_bwd"]

# the dtype an autocast would lower to, per device type: PyTorch's defaults, changed (and
# restored) by `autocast(..., dtype=)` blocks, enabled or not, as PyTorch's are
_AUTOCAST_DTYPES: dict[str, Any] = {}


def _default_autocast_dtype(device_type: str):
    from .dtypes import bfloat16, float16

    return bfloat16 if device_type in ("cpu", "xla", "hpu", "mtia", "xpu") else float16


def is_autocast_available(device_type: str) -> bool:
    """Whether `autocast` can lower precision on `device_type`: never in retrograd."""
    return False


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """`torch.is_autocast_enabled`: whether an autocast is active; never in retrograd (an
    enabled `autocast` disables itself)."""
    return False


def get_autocast_dtype(device_type: str):
    """`torch.get_autocast_dtype(device_type)`: the dtype an autocast on that device
    would lower to (PyTorch's default, bfloat16 on CPU, float16 on CUDA, or the one of the
    innermost `autocast(..., dtype=)` block). retrograd never lowers to it."""
    if not isinstance(device_type, str):
        raise TypeError(f"get_autocast_dtype(): device_type must be a str, not "
                        f"{type(device_type).__name__}")
    kind = device_type.split(":")[0]
    if kind not in _DEVICE_TYPES:
        raise RuntimeError(f"Expected one of {', '.join(_DEVICE_TYPES)} device type at start "
                           f"of device string: {device_type}")
    if kind in _AUTOCAST_DTYPES:
        return _AUTOCAST_DTYPES[kind]
    return _default_autocast_dtype(kind)


_DEVICE_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip",
                 "ve", "fpga", "maia", "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia",
                 "privateuseone")


class autocast:
    """`torch.autocast(device_type, dtype=None, enabled=True, cache_enabled=None)`, as a
    context manager or decorator. It never lowers precision: enabled, it warns (as PyTorch
    does for a dtype it cannot autocast to) and disables itself."""

    def __init__(self, device_type: str, dtype=None, enabled: bool = True,
                 cache_enabled: bool | None = None) -> None:
        if not isinstance(device_type, str):
            raise ArgumentError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        self.device = device_type
        self.fast_dtype = dtype
        self._enabled = bool(enabled)
        if self._enabled and device_type == "cuda" and not devices.available("cuda"):
            warnings.warn("CUDA is not available or torch_xla is imported. Disabling autocast.",
                          stacklevel=2)
            self._enabled = False
        if self._enabled:
            name = device_type.upper()
            warnings.warn(f"In {name} autocast, but the target dtype is not supported. "
                          f"Disabling autocast.\nretrograd has no mixed-precision kernels: "
                          f"the code runs in its own dtypes (dtype={dtype!r} is not used).",
                          stacklevel=2)
            self._enabled = False

    def __enter__(self) -> autocast:
        kind = self.device.split(":")[0]
        self._prev_dtype = _AUTOCAST_DTYPES.get(kind, None)
        if self.fast_dtype is not None:
            _AUTOCAST_DTYPES[kind] = self.fast_dtype
        return self

    def __exit__(self, *exc) -> None:
        kind = self.device.split(":")[0]
        if self._prev_dtype is None:
            _AUTOCAST_DTYPES.pop(kind, None)
        else:
            _AUTOCAST_DTYPES[kind] = self._prev_dtype
        return None

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)
        return wrapped


def custom_fwd(fwd=None, *, device_type: str, cast_inputs=None):
    """`torch.amp.custom_fwd` for a custom Function's forward. Its effects (run under or
    cast for autocast) apply only inside an enabled autocast, which retrograd never has,
    so the forward runs as written."""
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)
    return fwd


def custom_bwd(bwd=None, *, device_type: str):
    """`torch.amp.custom_bwd`: backward under the forward's autocast state, which in
    retrograd is always off, so the backward runs as written."""
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)
    return bwd


_READY, _UNSCALED, _STEPPED = "ready", "unscaled", "stepped"


class GradScaler:
    """`torch.amp.GradScaler`: loss scaling with dynamic growth and backoff.

    Disabled (`enabled=False`, or device "cuda" without a GPU, which PyTorch disables with
    a warning) every method is a pass-through: `scale` returns its argument and `step`
    calls `optimizer.step()`."""

    def __init__(self, device: str = "cuda", init_scale: float = 2.0 ** 16,
                 growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True) -> None:
        self._device = device
        self._enabled = bool(enabled)
        if self._enabled and device == "cuda" and not devices.available("cuda"):
            warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  "
                          "Disabling.", stacklevel=2)
            self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
        self._scale = float(np.float32(init_scale))
        self._growth_factor = growth_factor
        self._backoff_factor = backoff_factor
        self._growth_interval = growth_interval
        self._growth_tracker = 0
        self._states: dict[int, dict[str, Any]] = {}

    def _state(self, optimizer) -> dict[str, Any]:
        return self._states.setdefault(id(optimizer), {"stage": _READY, "found_inf": None})

    def is_enabled(self) -> bool:
        return self._enabled

    def scale(self, outputs):
        """Multiply a tensor (or a list/tuple/iterable of tensors) by the scale: a 0-d
        float32 tensor, as PyTorch's."""
        if not self._enabled:
            return outputs
        factor = Tensor(np.full((), self._scale, dtype=np.float32))

        def apply(val):
            if isinstance(val, Tensor):
                return val * factor.to(val.device)
            if isinstance(val, Iterable):
                out = map(apply, val)
                return type(val)(out) if isinstance(val, (list, tuple)) else out
            raise ArgumentError("outputs must be a Tensor or an iterable of Tensors")
        return apply(outputs)

    def unscale_(self, optimizer) -> None:
        """Divide the optimizer's gradients by the scale, in place, and record whether any
        is inf or NaN (that step is then skipped)."""
        if not self._enabled:
            return
        st = self._state(optimizer)
        if st["stage"] == _UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since "
                               "the last update().")
        if st["stage"] == _STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        inv = float(np.float32(1.0 / self._scale))
        found = False
        with no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    g = p.grad
                    if g is None:
                        continue
                    if g.dtype == np.float16:
                        raise ArgumentError("Attempting to unscale FP16 gradients.")
                    g.mul_(inv)
                    if not found and not bool(np.all(np.isfinite(devices.host(g.data)))):
                        found = True
        st["found_inf"] = found
        st["stage"] = _UNSCALED

    def step(self, optimizer, *args, **kwargs):
        """Unscale (unless done already) and call `optimizer.step()`, unless the gradients
        held inf or NaN; returns what `step` returned (None when skipped)."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is "
                               "enabled.")
        st = self._state(optimizer)
        if st["stage"] == _STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if st["stage"] == _READY:
            self.unscale_(optimizer)
        out = None if st["found_inf"] else optimizer.step(*args, **kwargs)
        st["stage"] = _STEPPED
        return out

    def update(self, new_scale: float | Tensor | None = None) -> None:
        """Back the scale off after a skipped step, grow it after `growth_interval` good
        ones in a row (or set it to `new_scale`)."""
        if not self._enabled:
            return
        if new_scale is not None:
            if isinstance(new_scale, Tensor):
                if new_scale.numel() != 1 or new_scale.requires_grad:
                    raise AssertionError("new_scale should be a float or a 1-element "
                                         "FloatTensor with requires_grad=False.")
                new_scale = new_scale.item()
            self._scale = float(np.float32(new_scale))
        else:
            found = [s["found_inf"] for s in self._states.values() if s["found_inf"] is not None]
            if not found:
                raise AssertionError("No inf checks were recorded prior to update.")
            if any(found):
                self._scale = float(np.float32(self._scale * self._backoff_factor))
                self._growth_tracker = 0
            else:
                self._growth_tracker += 1
                if self._growth_tracker == self._growth_interval:
                    grown = np.float32(self._scale * self._growth_factor)
                    if math.isfinite(grown):
                        self._scale = float(grown)
                    self._growth_tracker = 0
        self._states = {}

    def get_scale(self) -> float:
        return self._scale if self._enabled else 1.0

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._growth_factor = new_factor

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._backoff_factor = new_factor

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._growth_interval = new_interval

    def state_dict(self) -> dict[str, Any]:
        """scale, growth and backoff factors, interval and tracker; {} when disabled."""
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval,
                "_growth_tracker": self._growth_tracker}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        self._scale = float(state_dict["scale"])
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._growth_tracker = int(state_dict["_growth_tracker"])


class _CudaGradScaler(GradScaler):
    """`torch.cuda.amp.GradScaler(...)`: GradScaler("cuda", ...)."""

    def __init__(self, init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000,
                 enabled: bool = True) -> None:
        super().__init__("cuda", init_scale, growth_factor, backoff_factor, growth_interval,
                         enabled)


class _CudaAutocast(autocast):
    """`torch.cuda.amp.autocast(enabled=True, dtype=float16, cache_enabled=True)`."""

    def __init__(self, enabled: bool = True, dtype=None, cache_enabled: bool = True) -> None:
        super().__init__("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


# `rg.cuda.amp`: a module object, registered under its dotted name, so that PyTorch's
# `from torch.cuda.amp import GradScaler, autocast` spelling imports (rg.cuda is a module,
# not a package, so there is no file for it)
cuda_amp = types.ModuleType("retrograd.cuda.amp", "torch.cuda.amp's names: GradScaler and "
                            "autocast on device 'cuda', custom_fwd and custom_bwd.")
cuda_amp.GradScaler = _CudaGradScaler
cuda_amp.autocast = _CudaAutocast
cuda_amp.custom_fwd = custom_fwd
cuda_amp.custom_bwd = custom_bwd
sys.modules.setdefault(cuda_amp.__name__, cuda_amp)
