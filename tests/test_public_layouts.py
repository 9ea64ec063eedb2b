"""Every public function and Tensor method, op-table or not, gives the same result whatever
the memory layout of its tensor arguments (the op table's ops are checked one by one, with
gradients, in test_op_layouts.py; this covers the rest: rounding, comparisons, sorting,
searching, counting, bit operations, in-place methods and the like).

Each callable is tried with a few argument patterns (float, integer or bool tensors of
shape (3, 4, 5), with a dim, a scalar or a permutation), each call after the same
`rg.manual_seed` (so random functions draw alike); the first pattern it accepts and
answers twice alike is run again on the same values laid out with every axis reversed in
memory, and with the first axis innermost. The results must be equal, dtype and shape
included."""

import inspect
import warnings

import numpy as np
import pytest

import retrograd as rg
import retrograd.nn.functional as F

_GLOBAL_STATE = ("set_", "manual_seed", "seed", "use_", "save", "load", "compile", "jit",
                 "enable", "disable", "autocast", "no_grad", "inference", "get_", "is_grad",
                 "initial_seed")
"""Names whose calls change or read process-wide settings (or files): not swept."""

PATTERNS = [("f",), ("f", "f"), ("f", 1), ("f", "f", "f"), ("i",), ("i", "i"), ("b",),
            ("b", "b"), ("f", "i"), ("f", 0.5), ("i", 2), ("f", (2, 0, 1)), ("f", 4),
            ("f", 1, 2)]


def _flipped(a):
    back = (slice(None, None, -1),) * a.ndim
    return np.ascontiguousarray(a[back])[back]


def _first_last(a):
    return np.moveaxis(np.ascontiguousarray(np.moveaxis(a, 0, -1)), -1, 0)


LAYOUTS = {"contiguous": np.copy, "flipped": _flipped, "first-last": _first_last}


def _values():
    r = np.random.default_rng(0)
    return {"f": r.uniform(0.1, 0.9, (3, 4, 5)), "i": r.integers(-5, 6, (3, 4, 5)),
            "b": r.integers(0, 2, (3, 4, 5)).astype(bool)}


def _args(pattern, layout, values):
    # Tensor._wrap: creation refuses negative strides, as torch does, but ops may still
    # hand each other such arrays (a reversed view), so every callable must take them
    return [rg.Tensor._wrap(LAYOUTS[layout](values[p])) if isinstance(p, str) else p
            for p in pattern]


def _arrays(out):
    if isinstance(out, rg.Tensor):
        return [out.detach().numpy().copy()]
    if isinstance(out, (tuple, list)) and out and all(isinstance(o, rg.Tensor) for o in out):
        return [o.detach().numpy().copy() for o in out]
    return None


def _poison():
    """Fill freed blocks of the results' sizes with NaN and 0x5a bytes, so that an output
    left uninitialised does not hold the previous call's (equal) values by chance."""
    junk = [np.full(n, np.nan) for n in (60, 60, 120, 180, 240)]
    junk += [np.full(n, 0x5A, np.uint8) for n in (60, 480, 960, 1440)]
    del junk


def _same(a, b):
    """Equal results: exactly, or for floats to the last few bits (NumPy's contiguous loops
    use SIMD functions and other summation orders, so they may differ from its strided
    loops in the last bit)."""
    def close(x, y):
        if x.dtype.kind in "fc":
            return np.allclose(x, y, rtol=1e-12, atol=1e-12, equal_nan=True)
        return np.array_equal(x, y)
    return len(a) == len(b) and all(x.shape == y.shape and x.dtype == y.dtype and close(x, y)
                                    for x, y in zip(a, b))


def _seeded(call, args):
    rg.manual_seed(1234)
    return _arrays(call(args))


def _sweep(callables):
    """(how many callables were compared, the differences found)."""
    with rg.random.fork_rng():
        return _sweep_seeded(callables)


def _sweep_seeded(callables):
    values = _values()
    checked, differences = 0, []
    for name, call in callables:
        for pattern in PATTERNS:
            try:
                first = _seeded(call, _args(pattern, "contiguous", values))
                again = _seeded(call, _args(pattern, "contiguous", values))
            except Exception:  # noqa: BLE001 - this pattern is not one it takes
                continue
            if first is None or again is None or not _same(first, again):
                break  # no tensor result, or one that changes from call to call
            for layout in ("flipped", "first-last"):
                try:
                    args = _args(pattern, layout, values)
                    _poison()
                    got = _seeded(call, args)
                except Exception as e:  # noqa: BLE001 - reported below
                    differences.append((name, pattern, layout, f"{type(e).__name__}: {e}"))
                    continue
                if got is None or not _same(first, got):
                    differences.append((name, pattern, layout, "a different result"))
            checked += 1
            break
    return checked, differences


def _functions(space):
    for name in sorted(dir(space)):
        fn = getattr(space, name)
        if name.startswith("_") or name.startswith(_GLOBAL_STATE) or not callable(fn) \
                or isinstance(fn, type) or inspect.ismodule(fn):
            continue
        yield name, lambda args, fn=fn: fn(*args)


def _methods():
    for name in sorted(dir(rg.Tensor)):
        if name.startswith("_") or not callable(getattr(rg.Tensor, name, None)):
            continue
        yield name, lambda args, name=name: getattr(args[0], name)(*args[1:])


@pytest.mark.parametrize("space, least", [("rg", 300), ("F", 60), ("Tensor", 350)])
def test_public_callables_give_the_same_result_in_any_layout(space, least):
    callables = {"rg": lambda: _functions(rg), "F": lambda: _functions(F),
                 "Tensor": _methods}[space]()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        checked, differences = _sweep(callables)
    assert not differences
    assert checked >= least  # the sweep reached the callables it is meant to
