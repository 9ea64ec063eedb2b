"""rg.jit is sound or refuses: no traced value read in Python, no stale state, Python return
values as in eager mode, outputs that keep requires_grad."""

import numpy as np
import pytest

import retrograd as rg
from retrograd import nn
from retrograd.jit import JitError

rng = np.random.default_rng(3)
W = rg.tensor(rng.standard_normal(3))


@pytest.mark.parametrize("use", [
    lambda t: t * 2 if t.data.sum() > 0 else -t,
    lambda t: t * float(t.data[0]),
    lambda t: (t * 2, str(t)),
    lambda t: (t * 2, repr(t)),
    lambda t: (t * 2, f"{t}"),
    lambda t: (t * 2, format(t, "")),
    lambda t: (t * 2, t.tolist()),
    lambda t: rg.tensor(np.asarray(t)) * 2,
    lambda t: t * 2 if t.sum() > 0 else -t,
    lambda t: t * float(t.sum()),
    lambda t: t * int(t.sum()),
    lambda t: t * t.sum().item(),
    lambda t: rg.tensor(t.numpy() * 2),
    lambda t: t * sum(float(v) for v in t),
    lambda t: t * (W.data.sum() > 0),
    lambda t: (t * W, str(W)),
    lambda t: (t * 2, str(t * 3)),
], ids=["data-if", "data-index", "str", "repr", "fstring", "format", "tolist", "asarray",
        "bool", "float", "int", "item", "numpy", "iterate", "captured-data", "captured-str",
        "intermediate-str"])
def test_every_python_read_of_a_traced_value_raises(use):
    with pytest.raises(JitError, match="rg.jit"):
        rg.jit(use)(rg.tensor(np.array([1.0, 2.0, 3.0])))


def test_grad_data_read_inside_raises():
    w = rg.tensor(np.ones(3), requires_grad=True)

    def f(x):
        (w * x).sum().backward()
        return x * float(w.grad.data.sum())

    with pytest.raises(JitError, match="rg.jit"):
        rg.jit(f)(rg.ones(3, dtype=rg.float64))


def test_assigning_data_inside_raises():
    w = rg.tensor(np.ones(3))

    def f(x):
        w.data = np.zeros(3)
        return x * w

    with pytest.raises(JitError, match="assigning .data"):
        rg.jit(f)(rg.ones(3, dtype=rg.float64))


def test_values_are_readable_again_after_tracing():
    x = rg.tensor(np.array([1.0, -2.0]))
    f = rg.jit(lambda t: t * 3)
    y = f(x)
    assert "3." in str(y) and x.data.sum() == -1.0 and type(x) is rg.Tensor


def test_rebound_captured_tensor_is_read():
    w = rg.tensor(np.array([1.0, 2.0]))
    f = rg.jit(lambda x: x * w)
    x = rg.tensor(np.array([3.0, 4.0]))
    np.testing.assert_array_equal(f(x).data, [3.0, 8.0])
    w = rg.tensor(np.array([-1.0, 0.5]))  # noqa: F841 - read by the lambda
    np.testing.assert_array_equal(f(x).data, [-3.0, 2.0])


GLOBAL_W = rg.tensor(np.array([1.0, 2.0]))


def _times_global(x):
    return x * GLOBAL_W


def test_rebound_global_tensor_is_read():
    global GLOBAL_W
    f = rg.jit(_times_global)
    x = rg.tensor(np.array([3.0, 4.0]))
    old = GLOBAL_W
    np.testing.assert_array_equal(f(x).data, [3.0, 8.0])
    GLOBAL_W = rg.tensor(np.array([2.0, 2.0]))
    try:
        np.testing.assert_array_equal(f(x).data, [6.0, 8.0])
    finally:
        GLOBAL_W = old


def test_new_parameter_assigned_to_a_module_is_read():
    lin = nn.Linear(2, 2).double()
    f = rg.jit(lambda x: lin(x))
    x = rg.tensor(rng.standard_normal((3, 2)))
    np.testing.assert_allclose(f(x).data, lin(x).data)
    lin.weight = nn.Parameter(rg.tensor(rng.standard_normal((2, 2))))
    np.testing.assert_allclose(f(x).data, lin(x).data)
    lin.bias = nn.Parameter(rg.tensor(rng.standard_normal(2)))
    np.testing.assert_allclose(f(x).data, lin(x).data)


def test_train_after_an_eval_trace_does_not_keep_dropout_off():
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))
    model.eval()
    f = rg.jit(lambda x: model(x))
    x = rg.ones(2, 4)
    np.testing.assert_allclose(f(x).data, model(x).data)
    model.train()
    with pytest.raises(JitError, match="random"):  # dropout draws: refused, never silently off
        f(x)
    model.eval()
    np.testing.assert_allclose(f(x).data, model(x).data)


class _Config:
    def __init__(self) -> None:
        self.scale = 2.0


def test_object_attribute_change_retraces():
    cfg = _Config()
    f = rg.jit(lambda x: x * cfg.scale)
    assert f(rg.ones(1)).item() == 2.0
    cfg.scale = 5.0
    assert f(rg.ones(1)).item() == 5.0


class _Scaled(nn.Module):
    factor = 2.0

    def forward(self, x):
        return x * self.factor * GLOBAL_FACTOR


GLOBAL_FACTOR = 1.0


def test_class_attribute_and_globals_of_a_method_retrace():
    global GLOBAL_FACTOR
    m = _Scaled()
    f = rg.jit(m)
    assert f(rg.ones(1)).item() == 2.0
    _Scaled.factor = 3.0
    GLOBAL_FACTOR = 2.0
    try:
        assert f(rg.ones(1)).item() == 6.0
    finally:
        _Scaled.factor = 2.0
        GLOBAL_FACTOR = 1.0


@pytest.mark.parametrize("fn", [
    lambda x: None,
    lambda x: 3,
    lambda x: "text",
    lambda x: np.arange(3),
    lambda x: x.shape,
    lambda x: {"n": 2, "s": "a", "y": x * 2},
    lambda x: [x * 2, None, (1.5, "b"), {"k": [x.sum(), x.ndim]}],
    lambda x: (x.dtype, len(x)),
], ids=["none", "int", "str", "ndarray", "shape", "dict", "mixed", "dtype-len"])
def test_non_tensor_return_values_come_back_as_in_eager_mode(fn):
    f = rg.jit(fn)
    for _ in range(3):
        x = rg.tensor(rng.standard_normal(4))
        _assert_same(f(x), fn(x))
    assert f.trace_count == 1


def _assert_same(got, want):
    if isinstance(want, rg.Tensor):
        assert isinstance(got, rg.Tensor) and got.dtype == want.dtype
        np.testing.assert_allclose(got.data, want.data, rtol=1e-12)
    elif isinstance(want, dict):
        assert type(got) is dict and list(got) == list(want)
        for k in want:
            _assert_same(got[k], want[k])
    elif isinstance(want, (list, tuple)):
        assert type(got) is type(want) and len(got) == len(want)
        for a, b in zip(got, want):
            _assert_same(a, b)
    elif isinstance(want, np.ndarray):
        np.testing.assert_array_equal(got, want)
    else:
        assert got == want and type(got) is type(want)


def test_outputs_keep_requires_grad_so_a_jax_style_step_runs_twice():
    def step(w, x, y):
        loss = ((x @ w - y) ** 2).mean()
        g = rg.autograd.grad(loss, [w])[0]
        return loss, w - 0.1 * g

    fast = rg.jit(step)
    w = rg.tensor(rng.standard_normal((3, 1)), requires_grad=True)
    w_eager = w
    x, y = rg.tensor(rng.standard_normal((8, 3))), rg.tensor(rng.standard_normal((8, 1)))
    for _ in range(3):
        loss, w = fast(w, x, y)
        loss_e, w_eager = step(w_eager, x, y)
        assert w.requires_grad == w_eager.requires_grad is True
        assert loss.requires_grad == loss_e.requires_grad
        np.testing.assert_allclose(w.data, w_eager.data, rtol=1e-12)
    assert fast.trace_count == 1


def test_requires_grad_follows_eager_and_backward_through_an_output_refuses():
    w = rg.tensor(np.ones(2), requires_grad=True)
    f = rg.jit(lambda x: (x * w).sum())
    x = rg.tensor(np.array([1.0, 2.0]))
    for _ in range(2):
        out = f(x)
        assert out.requires_grad and not out.is_leaf
        with pytest.raises(JitError, match="backward through the output"):
            out.backward()
    with rg.no_grad():
        assert not f(x).requires_grad
    vg = rg.func.value_and_grad(lambda w: (w * w).sum())
    g = rg.jit(vg)
    for _ in range(2):
        got, want = g(w), vg(w)
        assert [t.requires_grad for t in got] == [t.requires_grad for t in want]
