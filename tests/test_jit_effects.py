"""rg.jit of PyTorch-style training steps: zero_grad, backward and the optimizer's in-place
updates are replayed at every call, giving eager mode's parameters, gradients and state."""

import numpy as np
import pytest

import retrograd as rg
from retrograd import nn, optim
from retrograd.jit import JitError
from retrograd.nn import functional as F

STEPS = 20
# LBFGS evaluates a closure a data-dependent number of times (refused under rg.jit, with
# its own test in test_optim_breadth.py); SparseAdam needs sparse gradients (refused, as
# PyTorch refuses dense ones)
NOT_TRACED = ("LBFGS", "SparseAdam")
OPTIMIZERS = sorted(n for n in optim.__all__ if isinstance(getattr(optim, n), type)
                    and issubclass(getattr(optim, n), optim.Optimizer)
                    and n not in ("Optimizer", *NOT_TRACED))
CONFIGS = [(name, {}) for name in OPTIMIZERS] + [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.9)),
    ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-2)),
    ("SGD", dict(lr=0.05, momentum=0.9, weight_decay=1e-2, dampening=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.5, maximize=True)),
    ("Adam", dict(lr=1e-2)),
    ("Adam", dict(lr=1e-2, betas=(0.8, 0.99), weight_decay=1e-2)),
    ("Adam", dict(lr=1e-2, amsgrad=True)),
    ("AdamW", dict(lr=1e-2)),
    ("AdamW", dict(lr=1e-2, weight_decay=0.1, amsgrad=True)),
    ("NAdam", dict(lr=1e-2)),
    ("NAdam", dict(lr=1e-2, weight_decay=1e-2, momentum_decay=1e-2)),
    ("NAdam", dict(lr=1e-2, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("RMSprop", dict(lr=1e-2, momentum=0.9, centered=True, weight_decay=1e-2)),
    ("Adagrad", dict(lr=0.1, lr_decay=1e-2, initial_accumulator_value=0.1)),
    ("Adamax", dict(lr=1e-2, weight_decay=1e-2)),
]
assert "NAdam" in OPTIMIZERS


def _batches(seed=0):
    r = np.random.default_rng(seed)
    return [(rg.tensor(r.standard_normal((6, 5))), rg.tensor(r.integers(0, 3, 6)))
            for _ in range(STEPS)]


def _run(name, kw, use_jit, dtype=np.float64, lr_change=False, zero_first=False):
    rg.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 3)).to(dtype)
    params = list(model.parameters())
    if name == "Muon":  # (matrices only, as torch's; the biases then stay as they are)
        params = [p for p in params if p.ndim == 2]
    opt = getattr(optim, name)(params, **kw)

    def step(x, y):
        if zero_first:
            opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        if not zero_first:
            opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    run = rg.jit(step) if use_jit else step
    losses = []
    for k, (x, y) in enumerate(_batches()):
        if lr_change and k == STEPS // 2:
            for group in opt.param_groups:
                group["lr"] *= 0.5
        losses.append(run(rg.tensor(x.data.astype(dtype)), y).item())
    return model, opt, np.array(losses), run


def _state_arrays(opt):
    out = []
    for p in opt.param_groups[0]["params"]:
        for k, v in sorted(opt.state.get(p, {}).items()):
            out.append((k, np.asarray(v.data if isinstance(v, rg.Tensor) else v, float)))
    return out


@pytest.mark.parametrize("zero_first", [False, True], ids=["zero_grad-last", "zero_grad-first"])
@pytest.mark.parametrize("name,kw", CONFIGS, ids=[f"{n}-{i}" for i, (n, _) in
                                                  enumerate(CONFIGS)])
def test_jitted_pytorch_style_step_trains_like_eager(name, kw, zero_first):
    m_eager, o_eager, l_eager, _ = _run(name, kw, False, zero_first=zero_first)
    m_jit, o_jit, l_jit, run = _run(name, kw, True, zero_first=zero_first)
    np.testing.assert_allclose(l_jit, l_eager, rtol=1e-12, atol=1e-14)
    assert np.ptp(l_eager) > 1e-6  # it really trains
    for p, q in zip(m_jit.parameters(), m_eager.parameters()):
        np.testing.assert_allclose(p.data, q.data, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(p.grad.data, q.grad.data, rtol=1e-12, atol=1e-14)
    for (k1, a), (k2, b) in zip(_state_arrays(o_jit), _state_arrays(o_eager), strict=True):
        assert k1 == k2
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    assert run.trace_count <= 3  # state made on the first call, then one program replayed


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_learning_rate_changed_between_calls_is_used(name):
    kw = {"lr": 0.05, **({"momentum": 0.9} if name == "SGD" else {})}
    m_eager, _, l_eager, _ = _run(name, kw, False, lr_change=True)
    m_jit, _, l_jit, _ = _run(name, kw, True, lr_change=True)
    np.testing.assert_allclose(l_jit, l_eager, rtol=1e-12, atol=1e-14)
    for p, q in zip(m_jit.parameters(), m_eager.parameters()):
        np.testing.assert_allclose(p.data, q.data, rtol=1e-12, atol=1e-14)


def test_float32_adam_step_equals_eager():
    m_eager, _, l_eager, _ = _run("Adam", dict(lr=1e-2), False, dtype=np.float32)
    m_jit, _, l_jit, _ = _run("Adam", dict(lr=1e-2), True, dtype=np.float32)
    np.testing.assert_allclose(l_jit, l_eager, rtol=1e-6)
    for p, q in zip(m_jit.parameters(), m_eager.parameters()):
        assert p.dtype == q.dtype == np.float32
        np.testing.assert_allclose(p.data, q.data, rtol=1e-5, atol=1e-7)


def test_backward_without_zero_grad_accumulates_like_eager():
    w = rg.tensor(np.array([1.0, -2.0, 3.0]), requires_grad=True)
    f = rg.jit(lambda x: (w * x).sum().backward())
    x = rg.tensor(np.array([0.5, 1.0, 2.0]))
    for k in range(1, 4):
        assert f(x) is None
        np.testing.assert_array_equal(w.grad.data, k * x.data)
    w.grad = None  # changed outside: the guard on .grad retraces
    f(x)
    np.testing.assert_array_equal(w.grad.data, x.data)


def test_manual_update_with_inplace_operators_and_gradient_clipping():
    rng = np.random.default_rng(1)
    w0 = rng.standard_normal((4, 3))

    def make():
        w = rg.tensor(w0.copy(), requires_grad=True)

        def step(x):
            nonlocal w  # `w -= ...` changes w in place and binds the same tensor again
            loss = ((x @ w) ** 2).sum()
            w.grad = None
            loss.backward()
            with rg.no_grad():
                w.grad.mul_(0.5)
                w -= 0.01 * w.grad
            return loss
        return w, step

    w_e, step_e = make()
    w_j, step_j = make()
    step_j = rg.jit(step_j)
    for _ in range(5):
        x = rg.tensor(rng.standard_normal((2, 4)))
        np.testing.assert_allclose(step_j(x).data, step_e(x).data, rtol=1e-13)
    np.testing.assert_allclose(w_j.data, w_e.data, rtol=1e-13)
    np.testing.assert_allclose(w_j.grad.data, w_e.grad.data, rtol=1e-13)
    assert step_j.trace_count == 1


def test_state_stored_outside_at_every_call_is_refused():
    history = []

    def f(x):
        y = x * 2
        history.append(y)
        return y

    j = rg.jit(f)
    j(rg.ones(2))  # a first call may create state: it runs eagerly
    with pytest.raises(JitError, match="stored a tensor"):
        j(rg.ones(2))


def test_inplace_write_into_a_view_is_refused():
    def f(x):
        y = x * 1.0
        y[0:2].add_(1.0)
        return y

    with pytest.raises(JitError, match="view"):
        rg.jit(f)(rg.ones(3))


def test_version_counters_move_on_replay():
    w = rg.tensor(np.ones(3), requires_grad=True)
    opt = optim.SGD([w], lr=0.1)

    def step(x):
        loss = (w * x).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()

    f = rg.jit(step)
    x = rg.tensor(np.arange(3.0))
    f(x)
    f(x)
    saved = (w * w).sum()  # saves w
    f(x)  # changes w in place
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        saved.backward()


def test_layer_buffers_updated_in_place_are_replayed():
    def make():
        rg.manual_seed(0)
        return nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3)).double()

    eager, traced = make(), make()
    f = rg.jit(lambda x: traced(x).sum())
    r = np.random.default_rng(0)
    for _ in range(4):
        x = rg.tensor(r.standard_normal((5, 4)))
        np.testing.assert_allclose(f(x).data, eager(x).sum().data, rtol=1e-12)
    for name in ("running_mean", "running_var", "num_batches_tracked"):
        np.testing.assert_allclose(getattr(traced[1], name).data, getattr(eager[1], name).data,
                                   rtol=1e-12)
    assert f.trace_count == 1


def test_inplace_write_reading_its_own_target_replays():
    """y.add_(y) links y and its node in a reference cycle; the trace must not mistake the
    cycle for a tensor stored into outside state (it refused every second call)."""
    w = rg.tensor(np.random.default_rng(0).standard_normal((4, 4)), requires_grad=True)

    def step(x):
        y = (x @ w).tanh() * 1
        y.add_(y)
        y.mul_(2)
        loss = (y * y).sum()
        loss.backward()
        return loss

    jitted = rg.jit(step)
    rng = np.random.default_rng(1)
    for _ in range(4):
        x = rg.tensor(rng.standard_normal((2, 4)))
        w.grad = None
        got = jitted(x)
        got_grad = w.grad.numpy().copy()
        w.grad = None
        want = step(x)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)
        np.testing.assert_allclose(got_grad, w.grad.numpy(), rtol=1e-12)
    assert jitted.trace_count == 1
