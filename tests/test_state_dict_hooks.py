"""state_dict's protocol as PyTorch's: _save_to_state_dict, extra state, the state-dict
and load-state-dict hooks, and the version metadata."""

import numpy as np
import pytest
import torch

import retrograd as rg


def _net(lib):
    class WithExtra(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = lib.nn.Linear(2, 2)
            self.counter = 3

        def get_extra_state(self):
            return {"counter": self.counter}

        def set_extra_state(self, state):
            self.counter = state["counter"]

    return lib.nn.Sequential(WithExtra(), lib.nn.BatchNorm1d(2))


def test_keys_order_metadata_and_extra_state_like_torch():
    ours, theirs = _net(rg), _net(torch)
    a, b = ours.state_dict(), theirs.state_dict()
    assert list(a) == list(b)
    assert a["0._extra_state"] == b["0._extra_state"] == {"counter": 3}
    assert dict(a._metadata) == {k: dict(v) for k, v in b._metadata.items()}
    assert list(ours.state_dict(prefix="model.")) == list(theirs.state_dict(prefix="model."))
    sd = dict(a)
    sd["0._extra_state"] = {"counter": 7}
    ours.load_state_dict(sd)
    assert ours[0].counter == 7
    del sd["0._extra_state"]
    with pytest.raises(RuntimeError, match="_extra_state"):
        ours.load_state_dict(sd)
    theirs_sd = dict(b)
    del theirs_sd["0._extra_state"]
    with pytest.raises(RuntimeError, match="_extra_state"):
        theirs.load_state_dict(theirs_sd)


def test_state_dict_hooks_like_torch():
    def run(lib):
        calls = []
        m = lib.nn.Sequential(lib.nn.Linear(2, 2))
        m[0].register_state_dict_pre_hook(lambda mod, prefix, keep: calls.append(("pre", prefix)))

        def post(mod, sd, prefix, meta):
            calls.append(("post", prefix, sorted(sd)))
            sd[prefix + "added"] = lib.ones(1)
        m.register_state_dict_post_hook(post)
        h = m._register_state_dict_hook(lambda mod, sd, prefix, meta: {"only": lib.zeros(1)})
        first = sorted(m.state_dict())
        h.remove()
        second = sorted(m.state_dict())
        m.register_state_dict_post_hook(lambda *a: 1)
        try:
            m.state_dict()
            raised = None
        except RuntimeError as e:
            raised = "must return None" in str(e)
        return calls, first, second, raised
    assert run(rg) == run(torch)


def test_load_state_dict_hooks_like_torch():
    def run(lib):
        calls = []
        m = lib.nn.Sequential(lib.nn.Linear(2, 2))

        def rename(mod, sd, prefix, meta, strict, missing, unexpected, errors):
            calls.append(("pre", prefix))
            if prefix + "w" in sd:
                sd[prefix + "weight"] = sd.pop(prefix + "w")
        m[0].register_load_state_dict_pre_hook(rename)

        def forgive(mod, keys):
            calls.append(("post", sorted(keys.missing_keys), sorted(keys.unexpected_keys)))
            keys.unexpected_keys.clear()
        m.register_load_state_dict_post_hook(forgive)
        w = np.arange(4.0, dtype=np.float32).reshape(2, 2)
        m.load_state_dict({"0.w": lib.tensor(w), "0.bias": lib.zeros(2), "extra": lib.ones(1)})
        return calls, np.asarray(m[0].weight.detach().numpy()).tolist()
    assert run(rg) == run(torch)
