"""rg.jit's fast guard: once the Python state a function reaches has stayed the same for two
calls, a generated guard checks it instead of walking it again. Every change the full walk
would see must still be seen: each test warms the guard up, changes one thing, and compares
the jitted call with the plain one."""

import functools

import numpy as np
import pytest

import retrograd as rg
from retrograd import nn, optim

X = rg.tensor(np.array([1.0, -2.0, 3.0]))


def _check(fn, change, x=X, calls_after=2):
    jitted = rg.jit(fn)
    for _ in range(4):
        np.testing.assert_allclose(jitted(x).data, fn(x).data, rtol=1e-12)
    assert jitted._guard is not None  # the guarded fast path is what is being tested
    change()
    for _ in range(calls_after):
        np.testing.assert_allclose(jitted(x).data, fn(x).data, rtol=1e-12)
    return jitted


SCALE = 2.0
GLOBAL_T = rg.tensor(np.array([1.0, 2.0, 3.0]))


def _uses_scale(x):
    return x * SCALE


def _uses_global_tensor(x):
    return x * GLOBAL_T


def _uses_max(x):
    return x * max(1.0, 2.0)


def test_global_number_changed():
    global SCALE

    def change():
        global SCALE
        SCALE = 7.0

    try:
        _check(_uses_scale, change)
    finally:
        SCALE = 2.0


def test_global_tensor_rebound_and_resized():
    global GLOBAL_T

    def change():
        global GLOBAL_T
        GLOBAL_T = rg.tensor(np.array([-1.0, 0.5, 4.0]))

    old = GLOBAL_T
    try:
        _check(_uses_global_tensor, change)
        GLOBAL_T.data = np.array([5.0])  # a new shape, same tensor: broadcasts
        _check(_uses_global_tensor, lambda: setattr(GLOBAL_T, "data", np.array([2.0, 1, 0])))
    finally:
        GLOBAL_T = old


def test_new_global_shadowing_a_builtin():
    def change():
        globals()["max"] = lambda a, b: 5.0

    try:
        _check(_uses_max, change)
    finally:
        globals().pop("max", None)


def test_closure_cell_rebound():
    k = 2.0

    def f(x):
        return x * k

    def change():
        nonlocal k
        k = -3.0

    _check(f, change)


def test_defaults_and_code_replaced():
    def f(x, k=2.0):
        return x * k

    def g(x, k=2.0):
        return x + k

    _check(f, lambda: setattr(f, "__defaults__", (4.0,)))
    _check(f, lambda: setattr(f, "__code__", g.__code__))


class _Holder:
    def __init__(self) -> None:
        self.k = 2.0
        self.items = [1.0, 2.0]
        self.table = {"a": 1.0, "b": 2.0}

    def scale(self, x):
        return x * self.k

    def ordered(self, x):
        out = x
        for v in self.table.values():  # the order matters
            out = out * 2.0 + v
        return out


def test_object_attributes_changed_added_and_removed():
    h = _Holder()
    _check(lambda x: h.scale(x), lambda: setattr(h, "k", 5.0))
    _check(lambda x: x * getattr(h, "extra", 1.0), lambda: setattr(h, "extra", 3.0))
    h.extra = 3.0
    _check(lambda x: x * getattr(h, "extra", 1.0), lambda: delattr(h, "extra"))


def test_object_class_reassigned_and_method_patched():
    class Other(_Holder):
        def scale(self, x):
            return x - self.k

    h = _Holder()
    _check(lambda x: h.scale(x), lambda: setattr(h, "__class__", Other))
    h = _Holder()
    f = _Holder.scale
    try:
        _check(lambda x: h.scale(x), lambda: setattr(_Holder, "scale",
                                                      lambda self, x: x * 10.0))
    finally:
        _Holder.scale = f


def test_containers_mutated_in_place():
    h = _Holder()
    _check(lambda x: x * h.items[-1], lambda: h.items.append(9.0))
    _check(lambda x: x * h.items[0], lambda: h.items.__setitem__(0, -1.0))
    _check(lambda x: h.ordered(x), lambda: h.table.__setitem__("b", 5.0))

    def reorder():
        h.table["a"] = h.table.pop("a")  # same keys and values, another order

    _check(lambda x: h.ordered(x), reorder)
    flags = {1, 2}
    _check(lambda x: x * (3.0 if 3 in flags else 1.0), lambda: flags.add(3))
    nested = ([1.0],)
    _check(lambda x: x * nested[0][0], lambda: nested[0].__setitem__(0, 4.0))


def test_small_array_changed_in_place_and_tensor_requires_grad():
    a = np.array([1.0, 2.0, 3.0])
    _check(lambda x: x * rg.tensor(a), lambda: a.__setitem__(0, 5.0))
    w = rg.tensor(np.array([1.0, 2.0, 3.0]))
    j = _check(lambda x: x * w, lambda: w.requires_grad_())
    assert j(X).requires_grad


def test_partial_keywords_and_bound_method_object():
    def scaled(x, *, k):
        return x * k

    p = functools.partial(scaled, k=2.0)
    _check(lambda x: p(x), lambda: p.keywords.__setitem__("k", 6.0))
    h = _Holder()
    method = h.scale
    _check(lambda x: method(x), lambda: setattr(h, "k", -1.0))


def test_nested_jitted_function_state():
    k = [2.0]
    inner = rg.jit(lambda x: x * k[0])
    _check(lambda x: inner(x) + 1.0, lambda: k.__setitem__(0, 3.0))


def test_module_mode_learning_rate_and_new_parameter():
    rg.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 3), nn.BatchNorm1d(3)).double()
    x = rg.tensor(np.random.default_rng(0).standard_normal((4, 3)))
    model.eval()
    _check(lambda t: model(t), model.train, x=x, calls_after=1)
    model.eval()
    _check(lambda t: model(t), lambda: setattr(model[0], "bias",
                                               nn.Parameter(rg.ones(3, dtype=rg.float64))),
           x=x)
    w = rg.tensor(np.ones(3), requires_grad=True)
    opt = optim.SGD([w], lr=0.1)

    def step(t):
        opt.zero_grad()
        (w * t).sum().backward()
        opt.step()
        return w * 1.0

    w_eager = rg.tensor(np.ones(3), requires_grad=True)
    opt_eager = optim.SGD([w_eager], lr=0.1)
    f = rg.jit(step)
    for k in range(8):
        if k == 5:  # the guard is in place by then
            opt.param_groups[0]["lr"] = opt_eager.param_groups[0]["lr"] = 0.5
        got = f(X)
        opt_eager.zero_grad()
        (w_eager * X).sum().backward()
        opt_eager.step()
        np.testing.assert_allclose(got.data, w_eager.data, rtol=1e-12)


def test_equal_but_new_key_strings_keep_the_program():
    table = {"scale": 2.0}
    f = _check(lambda x: x * table["scale"],
               lambda: table.update({"".join(["sc", "ale"]): 2.0}))
    assert f.trace_count == 1


def test_nan_constants_and_state_changing_at_every_call():
    nan = float("nan")
    f = _check(lambda x: x + (0.0 if nan == nan else 1.0), lambda: None)
    assert f.trace_count == 1
    count = [0]

    def g(x):
        count[0] += 1
        return x * 1.0

    j = rg.jit(g)
    for k in range(10):
        np.testing.assert_allclose(j(X).data, X.data)
        assert count[0] == k + 1  # each call traces again (the count is read in Python)


@pytest.mark.parametrize("name", ["SGD", "Adam"])
def test_pytorch_style_step_keeps_its_guard(name):
    rg.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2)).double()
    opt = getattr(optim, name)(model.parameters(), lr=0.01)

    def step(x):
        opt.zero_grad()
        loss = (model(x) ** 2).mean()
        loss.backward()
        opt.step()
        return loss

    f = rg.jit(step)
    x = rg.tensor(np.random.default_rng(1).standard_normal((5, 3)))
    for _ in range(10):
        f(x)
    assert f._guard is not None and f._guard_hits >= 5
