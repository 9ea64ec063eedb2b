"""Training-infrastructure and functional-API cases found different from torch by porting
tutorial programs (torch.func ensembling and per-sample gradients, MAML, checkpointing,
autocast/GradScaler no-op loops, pruning, parametrizations, schedulers, samplers):
jacfwd's `randomness=`, `get_autocast_dtype`."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import retrograd as rg


def _np(t) -> np.ndarray:
    return t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t.detach().numpy())


# ------------------------------------------------------------------ jacfwd(randomness=)

@pytest.mark.parametrize("randomness", ["same", "different"])
def test_jacfwd_randomness_allows_random_draws(randomness):
    x = np.random.default_rng(0).standard_normal(3)
    out = []
    for L in (torch, rg):
        def f(a, L=L):
            return a.sin() + L.rand(3, dtype=L.float64) * 0
        out.append(_np(L.func.jacfwd(f, randomness=randomness)(L.tensor(x))))
    np.testing.assert_allclose(out[1], out[0], rtol=1e-12)


def test_jacfwd_randomness_error_refuses_random_draws_and_bad_values():
    for L in (torch, rg):
        x = L.ones(3, dtype=L.float64)
        with pytest.raises(RuntimeError):
            L.func.jacfwd(lambda a, L=L: a * L.rand(3, dtype=L.float64))(x)
        with pytest.raises(RuntimeError, match="randomness"):
            L.func.jacfwd(lambda a: a.sin(), randomness="bad")(x)
        # a plain jvp still draws freely
        L.func.jvp(lambda a, L=L: a * L.rand(3, dtype=L.float64), (x,), (x,))


def test_jacfwd_randomness_over_a_dict_of_params():
    rng = np.random.default_rng(1)
    w, x = rng.standard_normal((2, 3)), rng.standard_normal(3)
    out = []
    for L in (torch, rg):
        def f(p, L=L):
            return (p["w"] @ L.tensor(x)).tanh() + L.randn(2, dtype=L.float64) * 0
        j = L.func.jacfwd(f, randomness="same")({"w": L.tensor(w)})
        out.append(_np(j["w"]))
    np.testing.assert_allclose(out[1], out[0], rtol=1e-12)


# ------------------------------------------------------------------ get_autocast_dtype

def test_get_autocast_dtype_defaults_blocks_and_errors():
    warnings.simplefilter("ignore")
    res = []
    for L in (torch, rg):
        r = [L.get_autocast_dtype("cpu") is L.bfloat16, L.get_autocast_dtype("cuda") is L.float16]
        with L.autocast("cpu", dtype=L.float16, enabled=False):
            r.append(L.get_autocast_dtype("cpu") is L.float16)
            with L.autocast("cpu", dtype=L.bfloat16, enabled=False):
                r.append(L.get_autocast_dtype("cpu") is L.bfloat16)
            r.append(L.get_autocast_dtype("cpu") is L.float16)
        r.append(L.get_autocast_dtype("cpu") is L.bfloat16)
        for bad in ("xyz", 3):
            try:
                L.get_autocast_dtype(bad)
                r.append("ok")
            except Exception as e:  # noqa: BLE001  (the type is what is compared)
                r.append(type(e).__name__)
        res.append(r)
    assert res[1] == res[0]
