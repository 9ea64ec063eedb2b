"""einops on retrograd Tensors: an einops backend, defined only once einops is imported.

einops picks the backend for a tensor among the subclasses of its `AbstractBackend`
whose `framework_name` is an imported module (its own way of taking backends from
outside code). `RetrogradBackend`, for "retrograd", is such a subclass; it is created by
`register()`, which needs einops, so `import retrograd` calls `hook()` instead:

- einops already imported: `hook()` registers the backend at once;
- otherwise `hook()` puts a finder at the front of `sys.meta_path` that lets the import
  of `einops._backends` run as usual, registers the backend right after it, and takes
  itself off `sys.meta_path` (until then it looks at each import's name only).

So whichever of retrograd and einops is imported first, `einops.rearrange`, `reduce`,
`repeat`, `einsum`, `pack`, `unpack`, `parse_shape` and `asnumpy` accept retrograd
Tensors; every step is a retrograd op, so the results are differentiable (and traced by
`rg.jit`). The backend's `layers()` is `retrograd.integrations.einops_layers`.
"""

from __future__ import annotations

import sys

_WATCHED = "einops._backends"  # the module that defines AbstractBackend
_backend_class: type | None = None


def register() -> type:
    """Define the retrograd backend for einops (once) and return its class. Imports
    einops."""
    global _backend_class
    if _backend_class is not None:
        return _backend_class
    from einops._backends import AbstractBackend

    from ..api.linalg import einsum
    from ..api.shape import cat, stack
    from ..api.torch_names import from_numpy
    from ..creation import arange
    from ..dtypes import int64
    from ..tensor import Tensor

    class RetrogradBackend(AbstractBackend):
        """einops' operations in retrograd ops (the same steps as einops' torch backend
        takes, so values and gradients are torch's)."""

        framework_name = "retrograd"

        def is_appropriate_type(self, tensor) -> bool:
            return isinstance(tensor, Tensor)

        def from_numpy(self, x):
            t = from_numpy(x)
            return t.requires_grad_(True) if t.is_floating_point() else t

        def to_numpy(self, x):
            return x.detach().cpu().numpy()

        def arange(self, start, stop):
            return arange(start, stop, dtype=int64)

        def reduce(self, x, operation, axes):
            if operation in ("min", "max"):
                return getattr(x, "a" + operation)(dim=tuple(axes))
            if operation in ("sum", "mean"):
                return getattr(x, operation)(dim=tuple(axes))
            if operation in ("prod", "any", "all"):  # one dimension at a time
                for d in sorted(axes, reverse=True):
                    x = getattr(x, operation)(dim=d)
                return x
            raise NotImplementedError(f"einops: unknown reduction {operation!r}")

        def transpose(self, x, axes):
            return x.permute(tuple(axes))

        def stack_on_zeroth_dimension(self, tensors: list):
            return stack(tensors)

        def add_axis(self, x, new_position):
            return x.unsqueeze(new_position)

        def add_axes(self, x, n_axes, pos2len):
            sizes = [-1] * n_axes
            for pos, length in pos2len.items():
                x = x.unsqueeze(pos)
                sizes[pos] = length
            return x.expand(sizes)

        def tile(self, x, repeats):
            return x.repeat(tuple(repeats))

        def concat(self, tensors, axis: int):
            return cat(tensors, dim=axis)

        def is_float_type(self, x) -> bool:
            return x.is_floating_point()

        def layers(self):
            from . import einops_layers
            return einops_layers

        def einsum(self, pattern, *x):
            return einsum(pattern, *x)

    _backend_class = RetrogradBackend
    return RetrogradBackend


class _RegisterAfter:
    """A loader (importlib's protocol, duck-typed) that runs a module with its own loader,
    then puts that loader back on the module and registers the backend."""

    def __init__(self, loader) -> None:
        self._loader = loader

    def __getattr__(self, name: str):  # get_source, get_filename, ...: the loader's
        if name == "_loader":
            raise AttributeError(name)
        return getattr(self._loader, name)

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module) -> None:
        self._loader.exec_module(module)
        module.__loader__ = self._loader
        if module.__spec__ is not None:
            module.__spec__.loader = self._loader
        register()


class _EinopsWatcher:
    """A meta path finder (duck-typed) that finds nothing itself: when `einops._backends`
    is imported, it takes the spec the other finders give and has the backend registered
    after the module runs."""

    def find_spec(self, fullname, path, target=None):
        if fullname != _WATCHED:
            return None
        unhook()
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = find(fullname, path, target) if find is not None else None
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _RegisterAfter(spec.loader)
                return spec
        return None


_watcher = _EinopsWatcher()


def hook() -> None:
    """Make einops accept retrograd Tensors: register now if einops is imported, else
    as soon as it is. Called by `import retrograd`; does not import einops."""
    if _WATCHED in sys.modules:
        register()
    elif _watcher not in sys.meta_path:
        sys.meta_path.insert(0, _watcher)


def unhook() -> None:
    """Stop waiting for einops (if `hook()` was waiting)."""
    if _watcher in sys.meta_path:
        sys.meta_path.remove(_watcher)
