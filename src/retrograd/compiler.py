"""`rg.compiler`: `torch.compiler`'s names that model code calls at import or in its
forward (`@torch.compiler.disable`, `torch.compiler.is_compiling()`).

`rg.compile` returns its function unchanged (see `api.torch_misc`), so nothing is ever
being compiled: the predicates say False, the decorators return their function, and the
settings are accepted and change nothing.
"""

from __future__ import annotations

from collections.abc import Callable

from .api.torch_misc import compile  # noqa: A004  (torch.compiler.compile)

__all__ = ["compile", "disable", "is_compiling", "is_dynamo_compiling", "is_exporting",
           "allow_in_graph", "assume_constant_result", "reset", "list_backends", "set_stance",
           "cudagraph_mark_step_begin", "substitute_in_graph"]


def is_compiling() -> bool:
    """`torch.compiler.is_compiling()`: False, since nothing is compiled."""
    return False


def is_dynamo_compiling() -> bool:
    """`torch.compiler.is_dynamo_compiling()`: False."""
    return False


def is_exporting() -> bool:
    """`torch.compiler.is_exporting()`: False."""
    return False


def disable(fn: Callable | None = None, recursive: bool = True, *, reason: str | None = None):
    """`torch.compiler.disable`: `fn` unchanged (or a decorator that returns it)."""
    if fn is None:
        return lambda f: f
    return fn


def allow_in_graph(fn: Callable) -> Callable:
    """`torch.compiler.allow_in_graph`: `fn` unchanged."""
    return fn


def assume_constant_result(fn: Callable) -> Callable:
    """`torch.compiler.assume_constant_result`: `fn` unchanged."""
    return fn


def substitute_in_graph(original_fn: Callable, *, can_constant_fold_through: bool = False,
                        skip_signature_check: bool = False) -> Callable:
    """`torch.compiler.substitute_in_graph`: a decorator returning the substitute unchanged."""
    return lambda fn: fn


def reset() -> None:
    """`torch.compiler.reset()`: there is no compilation cache to clear."""


def list_backends(exclude_tags=("debug", "experimental")) -> list[str]:
    """`torch.compiler.list_backends()`: the names `rg.compile(backend=...)` accepts; it
    ignores them all."""
    return ["inductor"]


def set_stance(stance: str = "default", *, skip_guard_eval_unsafe: bool = False,
               force_backend=None):
    """`torch.compiler.set_stance`: accepted; a no-op (usable as a decorator or context)."""
    return _Unchanged()


class _Unchanged:
    """A context manager and decorator that changes nothing."""

    def __enter__(self) -> _Unchanged:
        return self

    def __exit__(self, *exc) -> None:
        return None

    def __call__(self, fn: Callable) -> Callable:
        return fn


def cudagraph_mark_step_begin() -> None:
    """`torch.compiler.cudagraph_mark_step_begin()`: no CUDA graphs; a no-op."""
