"""An optimizer's `state_dict()` holds its live state tensors, as PyTorch's does: steps taken
after it show in it, `load_state_dict` adopts the tensors when nothing needs converting, and a
deep copy is the way to keep a snapshot. Each relation is read off torch in the test."""

import copy

import numpy as np
import pytest
import torch

import retrograd as rg

CASES = [("Adam", {}), ("AdamW", {}), ("SGD", {"momentum": 0.9}), ("NAdam", {}),
         ("RMSprop", {"momentum": 0.5}), ("Adagrad", {})]


def _opt(lib, name, kw, dtype):
    w = lib.nn.Parameter(lib.ones(3, dtype=dtype))
    return w, getattr(lib.optim, name)([w], lr=0.1, **kw)


def _step(w, opt):
    w.grad = None
    (w * w).sum().backward()
    opt.step()


@pytest.mark.parametrize(("name", "kw"), CASES)
def test_state_dict_is_live_and_loading_adopts_as_torch(name, kw):
    rw, ro = _opt(rg, name, kw, rg.float64)
    tw, to = _opt(torch, name, kw, torch.float64)
    _step(rw, ro)
    _step(tw, to)
    rsd, tsd = ro.state_dict(), to.state_dict()
    snap = copy.deepcopy(rsd)
    for k, tv in tsd["state"][0].items():
        rv = rsd["state"][0][k]
        assert (rv is ro.state[rw][k]) == (tv is to.state[tw][k]), k
    _step(rw, ro)
    _step(tw, to)
    for k, tv in tsd["state"][0].items():  # the later step shows in the earlier state_dict
        np.testing.assert_allclose(np.asarray(rsd["state"][0][k].numpy()), tv.numpy(),
                                   rtol=1e-7, err_msg=k)
        assert not np.array_equal(np.asarray(snap["state"][0][k].numpy()),
                                  np.asarray(rsd["state"][0][k].numpy())) or k == "sum"
    rw2, ro2 = _opt(rg, name, kw, rg.float64)
    tw2, to2 = _opt(torch, name, kw, torch.float64)
    ro2.load_state_dict(rsd)
    to2.load_state_dict(tsd)
    for k in tsd["state"][0]:
        assert (ro2.state[rw2][k] is rsd["state"][0][k]) == \
            (to2.state[tw2][k] is tsd["state"][0][k]), k


def test_loading_into_another_dtype_converts_as_torch():
    rw, ro = _opt(rg, "Adam", {}, rg.float32)
    tw, to = _opt(torch, "Adam", {}, torch.float32)
    _step(rw, ro)
    _step(tw, to)
    rw2, ro2 = _opt(rg, "Adam", {}, rg.float64)
    tw2, to2 = _opt(torch, "Adam", {}, torch.float64)
    ro2.load_state_dict(ro.state_dict())
    to2.load_state_dict(to.state_dict())
    assert ro2.state[rw2]["exp_avg"].dtype == to2.state[tw2]["exp_avg"].numpy().dtype
    assert (ro2.state[rw2]["exp_avg"] is ro.state[rw]["exp_avg"]) == \
        (to2.state[tw2]["exp_avg"] is to.state[tw]["exp_avg"])


def _resumed(lib, name, kw, split):
    w = lib.nn.Parameter(lib.tensor(np.random.default_rng(0).standard_normal((4, 3)),
                                    dtype=lib.float64))
    opt = getattr(lib.optim, name)([w], **kw)
    for s in range(8):
        if s == split:
            sd = copy.deepcopy(opt.state_dict())
            opt = getattr(lib.optim, name)([w], **kw)
            opt.load_state_dict(sd)
        w.grad = None
        (w ** 3).sum().backward()
        opt.step()
    return w.detach().numpy().copy()


@pytest.mark.parametrize(("name", "kw"), [("NAdam", {"lr": 0.05}),
                                          ("ASGD", {"lr": 0.05, "t0": 5, "lambd": 0.01}),
                                          ("Adam", {"lr": 0.05})])
@pytest.mark.parametrize("split", [None, 4])
def test_resumed_run_matches_torchs_resumed_run(name, kw, split):
    """Loading converts 0-d state (NAdam's mu_product, ASGD's eta and mu) to the parameters'
    dtype as torch does, so a resumed float64 run follows torch's resumed run."""
    np.testing.assert_allclose(_resumed(rg, name, kw, split), _resumed(torch, name, kw, split),
                               rtol=1e-13, atol=1e-14)
