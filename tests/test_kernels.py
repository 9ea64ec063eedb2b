"""retrograd.kernels: choosing between the compiled (Numba) and NumPy paths."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from retrograd import kernels


def test_use_switches_and_restores_the_mode_and_the_size():
    before = (kernels.mode(), kernels._state["min_size"])
    with kernels.use("numpy", min_size=0):
        assert kernels.mode() == "numpy"
        assert not kernels.enabled(10 ** 9)
    assert (kernels.mode(), kernels._state["min_size"]) == before


def test_an_unknown_mode_is_named():
    with pytest.raises(ValueError, match="'cuda'"):
        with kernels.use("cuda"):
            pass


def test_the_environment_chooses_and_a_bad_value_is_named():
    code = "from retrograd import kernels; print(kernels.mode())"
    run = lambda v: subprocess.run([sys.executable, "-c", code], capture_output=True,  # noqa: E731
                                   text=True, env={"RETROGRAD_KERNELS": v, "PATH": ""})
    assert run("numpy").stdout.strip() == "numpy"
    bad = run("fast")
    assert bad.returncode != 0 and "RETROGRAD_KERNELS" in bad.stderr and "'fast'" in bad.stderr


def test_small_inputs_take_the_numpy_path():
    with kernels.use("numpy"):
        assert not kernels.enabled(1 << 30)
    with kernels.use("numba", min_size=100):  # the test extra installs Numba
        assert kernels.enabled(100) and not kernels.enabled(99)


def test_a_kernel_compiles_keeps_nan_and_infinity_and_sums_like_numpy():
    def total(a):
        s = 0.0
        for v in a:
            s += v
        return s

    k = kernels.kernel(total)
    a = np.random.default_rng(0).standard_normal(1000)
    assert k(a) == pytest.approx(a.sum(), rel=1e-12)
    a[3] = np.nan
    assert np.isnan(k(a))
    a[3] = np.inf
    assert k(a) == np.inf
    assert k.__name__ == "total" and k.py_func is total


@kernels.inline
def _twice_first(a, n):
    for k in range(n):
        a[k] *= 2.0


def _uses_helper(a):
    _twice_first(a, 3)
    return a.sum()


def test_an_inline_helper_is_compiled_with_its_kernel_and_works_before_it():
    a = np.arange(5.0)
    _twice_first(a, 2)  # plain Python until a kernel of this module compiles
    assert a.tolist() == [0.0, 2.0, 2.0, 3.0, 4.0]
    k = kernels.kernel(_uses_helper)
    assert k(np.ones(4)) == 7.0
    assert not isinstance(globals()["_twice_first"], type(_uses_helper))  # now compiled


def test_a_kernel_without_a_writable_cache_compiles_in_memory(monkeypatch):
    """Where Numba finds no writable cache location (a read-only install), the kernel
    still compiles and runs, kept in memory."""
    import numba

    real = numba.njit

    def no_locator(*args, **kw):
        if kw.get("cache"):
            raise RuntimeError("cannot cache function 'f': no locator available")
        return real(*args, **kw)

    monkeypatch.setattr(numba, "njit", no_locator)

    def halve(a):
        return a.sum() / 2

    assert kernels.kernel(halve)(np.ones(6)) == 3.0
