"""nn.Module API details compared with torch, from a conformance sweep: ParameterDict key
order, named_modules' memo, load_state_dict(assign=True) dtypes and non-tensor values,
PyTorch's checks on registered names, and a module assigned to a parameter's slot."""

from collections import OrderedDict

import numpy as np
import pytest
import torch

import retrograd as rg

SOURCES = [lambda p: {"q": p(1), "c": p(2), "m": p(3)},   # a plain dict: sorted by key
           lambda p: OrderedDict([("q", p(1)), ("c", p(2))]),  # kept in its order
           lambda p: [("z", p(1)), ("a", p(2))]]  # pairs: kept in their order


@pytest.mark.parametrize("source", SOURCES)
def test_parameter_dict_key_order_as_torch(source):
    names = []
    for lib in (rg, torch):
        def p(n, lib=lib):
            return lib.nn.Parameter(lib.ones(n))
        d = lib.nn.ParameterDict(source(p))
        d.update({"y": p(1), "b": p(1)})
        names.append((list(d), [n for n, _ in d.named_parameters()]))
    assert names[0] == names[1]


def test_parameter_dict_pop_get_setdefault_clear_as_torch():
    out = []
    for lib in (rg, torch):
        d = lib.nn.ParameterDict({"a": lib.nn.Parameter(lib.ones(2))})
        p = d.pop("a")
        d.setdefault("b", lib.nn.Parameter(lib.zeros(1)))
        got = (tuple(p.shape), "a" in d, d.get("zz") is None, list(d))
        d.clear()
        out.append(got + (len(d),))
    assert out[0] == out[1]


def test_named_modules_memo_skips_modules_as_torch():
    got = []
    for lib in (rg, torch):
        m = lib.nn.Sequential(lib.nn.Linear(1, 1), lib.nn.Sequential(lib.nn.ReLU()))
        memo = {m[1]}
        got.append([n for n, _ in m.named_modules(memo=memo)])
    assert got[0] == got[1]


def test_load_state_dict_assign_keeps_the_checkpoints_dtype():
    dts = []
    for lib in (rg, torch):
        m = lib.nn.Linear(2, 3)
        m.load_state_dict({"weight": lib.ones(3, 2, dtype=lib.float64),
                           "bias": lib.zeros(3, dtype=lib.float64)}, assign=True)
        dts.append((str(m.weight.dtype).split(".")[-1], m.weight.requires_grad))
        m.load_state_dict({"weight": lib.ones(3, 2, dtype=lib.float64),
                           "bias": lib.zeros(3, dtype=lib.float64)})
    assert dts[0] == dts[1]


@pytest.mark.parametrize("value", [[[1.0]], 1.0, "x"])
def test_load_state_dict_refuses_values_that_are_not_tensors(value):
    for lib in (rg, torch):
        m = lib.nn.Linear(1, 1)
        with pytest.raises(RuntimeError, match="expected"):
            m.load_state_dict({"weight": value, "bias": lib.ones(1)})


@pytest.mark.parametrize("call", [
    lambda lib, m: m.register_buffer("a.b", lib.ones(1)),
    lambda lib, m: m.register_buffer("", lib.ones(1)),
    lambda lib, m: m.register_parameter("a.b", lib.nn.Parameter(lib.ones(1))),
    lambda lib, m: m.register_buffer("forward", lib.ones(1)),
    lambda lib, m: (setattr(m, "foo", 1), m.register_buffer("foo", lib.ones(1))),
    lambda lib, m: (setattr(m, "x", 1), m.add_module("x", lib.nn.ReLU())),
    lambda lib, m: m.add_module(1, lib.nn.ReLU()),
    lambda lib, m: m.register_buffer(3, lib.ones(1)),
    lambda lib, m: setattr(m, "weight", lib.nn.ReLU()),
])
def test_bad_registrations_raise_torchs_exception_types(call):
    types = []
    for lib in (rg, torch):
        with pytest.raises((KeyError, TypeError)) as info:
            call(lib, lib.nn.Linear(1, 1))
        types.append(info.type if info.type in (KeyError, TypeError) else
                     (KeyError if issubclass(info.type, KeyError) else TypeError))
    assert types[0] == types[1]
    m = rg.nn.Linear(1, 1)
    m.register_buffer("ok", rg.ones(1))  # a fresh name still registers
    assert "ok" in m.state_dict() and np.all(m.ok.numpy() == 1)


def test_set_submodule_type_transposed_and_sequential_times_as_torch():
    out = []
    for lib in (rg, torch):
        m = lib.nn.Sequential(lib.nn.Linear(2, 2))
        m.set_submodule("1", lib.nn.ReLU())
        m.set_submodule("0", lib.nn.Tanh())
        errs = []
        for args, kw in ((("", lib.nn.ReLU()), {}), (("0", 3), {}),
                         (("5", lib.nn.ReLU()), {"strict": True})):
            with pytest.raises((ValueError, AttributeError)) as info:
                m.set_submodule(*args, **kw)
            errs.append(info.type.__name__ if info.type in (ValueError, AttributeError)
                        else ("ValueError" if issubclass(info.type, ValueError)
                              else "AttributeError"))
        lin = lib.nn.Linear(2, 2)
        lin.register_buffer("count", lib.zeros(2, dtype=lib.int64))
        lin.type(lib.float64)
        tripled = lib.nn.Sequential(lib.nn.Linear(1, 1)) * 3
        out.append(([type(c).__name__ for c in m], errs,
                    str(lin.weight.dtype).split(".")[-1], str(lin.count.dtype).split(".")[-1],
                    type(lin.weight).__name__, lib.nn.Conv2d(1, 1, 1).transposed,
                    lib.nn.ConvTranspose1d(1, 1, 1).transposed, len(tripled),
                    tripled[0] is tripled[2], len(list(tripled.parameters()))))
    assert out[0] == out[1]


def test_private_hook_dicts_and_non_persistent_set_as_torch():
    """Code that reads or fills torch's private per-module dicts (`_forward_hooks`, ...,
    `_non_persistent_buffers_set`) directly behaves as with torch."""
    import copy

    def run(lib):
        out = []
        m = lib.nn.Linear(2, 2)
        out.append((type(m._forward_hooks).__name__, len(m._forward_hooks),
                    len(m._forward_pre_hooks), len(m._backward_hooks),
                    sorted(m._non_persistent_buffers_set)))
        m._forward_hooks[12345] = lambda mod, args, o: o * 2
        x = lib.ones(1, 2)
        with lib.no_grad():
            m.weight.fill_(1.0)
            m.bias.fill_(0.0)
        out.append(m(x).tolist())
        m._forward_hooks.clear()
        out.append(m(x).tolist())
        m.register_buffer("tmp", lib.zeros(1), persistent=False)
        out.append((sorted(m._non_persistent_buffers_set), sorted(m.state_dict())))
        m._non_persistent_buffers_set.discard("tmp")
        out.append(sorted(m.state_dict()))
        h = m.register_forward_hook(lambda mod, a, o: o + 1)
        out.append((len(m._forward_hooks), m(x).tolist(), copy.deepcopy(m)(x).tolist()))
        h.remove()
        out.append((len(m._forward_hooks), m(x).tolist()))
        return out

    assert run(rg) == run(torch)
