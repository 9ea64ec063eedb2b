"""rg.jit: equals eager, retraces exactly when it must, and refuses what it cannot capture."""

import collections

import numpy as np
import pytest

import retrograd as rg
from retrograd import ops
from retrograd.cli.check import cases
from retrograd.engine import apply
from retrograd.jit import JitError
from retrograd.ops.samples import SAMPLES

rng = np.random.default_rng(0)


def _params(dtype=np.float64):
    shapes = [(16, 8), (16,), (4, 16), (4,)]
    return [rg.tensor(rng.standard_normal(s).astype(dtype) * 0.3, requires_grad=True)
            for s in shapes]


def mlp_loss(w1, b1, w2, b2, x, y):
    h = rg.relu(x @ w1.T + b1)
    logits = h @ w2.T + b2
    logp = rg.log_softmax(logits, dim=1)
    return -(logp * y).sum() / x.shape[0]


def _batch(n=5, dtype=np.float64):
    x = rg.tensor(rng.standard_normal((n, 8)).astype(dtype))
    y = rg.tensor(np.eye(4)[rng.integers(0, 4, n)].astype(dtype))
    return x, y


def value_and_grads(w1, b1, w2, b2, x, y):
    loss = mlp_loss(w1, b1, w2, b2, x, y)
    return loss, rg.autograd.grad(loss, [w1, b1, w2, b2])


def test_mlp_loss_equals_eager():
    ps = _params()
    x, y = _batch()
    f = rg.jit(mlp_loss)
    np.testing.assert_allclose(f(*ps, x, y).data, mlp_loss(*ps, x, y).data, rtol=1e-12)


def test_value_and_grad_equals_eager():
    ps = _params()
    x, y = _batch()
    f = rg.jit(value_and_grads)
    loss, grads = f(*ps, x, y)
    loss0, grads0 = value_and_grads(*ps, x, y)
    np.testing.assert_allclose(loss.data, loss0.data, rtol=1e-12)
    for g, g0 in zip(grads, grads0):
        np.testing.assert_allclose(g.data, g0.data, rtol=1e-10, atol=1e-14)
    assert f.trace_count == 1
    x2, y2 = _batch()  # new values, same shapes: no retrace, fresh results
    loss2, grads2 = f(*ps, x2, y2)
    assert f.trace_count == 1
    np.testing.assert_allclose(loss2.data, mlp_loss(*ps, x2, y2).data, rtol=1e-12)


def test_backward_inside_jit_writes_grads_each_call():
    ps = _params()
    x, y = _batch()

    def step(x, y):
        loss = mlp_loss(*ps, x, y)
        loss.backward()
        return loss

    f = rg.jit(step)
    f(x, y)
    jit_grads = [p.grad.data.copy() for p in ps]
    for p in ps:
        p.grad = None
    mlp_loss(*ps, x, y).backward()
    for g, p in zip(jit_grads, ps):
        np.testing.assert_allclose(g, p.grad.data, rtol=1e-10)
    f(x, y)  # accumulates, as eager backward does
    for g, p in zip(jit_grads, ps):
        np.testing.assert_allclose(2 * g, p.grad.data, rtol=1e-10)


def test_captured_weights_are_read_at_every_call():
    w = rg.tensor(rng.standard_normal((3, 3)))
    f = rg.jit(lambda x: (x @ w).sum())
    x = rg.tensor(rng.standard_normal((2, 3)))
    before = f(x).item()
    w.data *= 2.0  # an optimizer's in-place update
    assert f(x).item() == pytest.approx(2 * before)
    assert f.trace_count == 1


def test_tensor_made_on_the_inputs_device_inside_jit():
    """`rg.tensor(data, device=x.device)` (a constant placed beside the input, common in
    ported code) was refused as an assignment of `.data`; on its own device nothing moves."""
    def f(x):
        return (x * rg.tensor([1.0, 2.0], device=x.device)).sum()

    j = rg.jit(f)
    for _ in range(2):
        x = rg.randn(3, 2)
        assert float(j(x)) == float(f(x))
    assert j.trace_count == 1


def test_cnn_step_equals_eager():
    from retrograd.api import conv2d, max_pool2d
    w = rg.tensor(rng.standard_normal((4, 1, 3, 3)) * 0.3, requires_grad=True)
    v = rg.tensor(rng.standard_normal((10, 4 * 4 * 4)) * 0.1, requires_grad=True)
    x = rg.tensor(rng.standard_normal((2, 1, 8, 8)))

    def loss(w, v, x):
        h = max_pool2d(rg.relu(conv2d(x, w, padding=1)), 2)
        out = h.reshape(2, -1) @ v.T
        return rg.logsumexp(out, dim=1).mean()

    def step(w, v, x):
        value = loss(w, v, x)
        return (value,) + rg.autograd.grad(value, [w, v])

    got = rg.jit(step)(w, v, x)
    want = step(w, v, x)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a.data, b.data, rtol=1e-10, atol=1e-14)


def test_several_outputs_and_structures():
    def f(x, scale):
        return {"sum": x.sum() * scale, "parts": [x * 2, rg.exp(x)]}, 7

    x = rg.tensor(rng.standard_normal(5))
    j = rg.jit(f)
    got, seven = j(x, 3.0)
    want, _ = f(x, 3.0)
    assert seven == 7
    np.testing.assert_allclose(got["sum"].data, want["sum"].data)
    for a, b in zip(got["parts"], want["parts"]):
        np.testing.assert_allclose(a.data, b.data)


def test_retrace_on_shape_dtype_and_python_arguments():
    f = rg.jit(lambda x, k: x * k)
    f(rg.ones(3), 2.0)
    f(rg.ones(3) * 5, 2.0)
    assert f.trace_count == 1
    f(rg.ones(4), 2.0)
    assert f.trace_count == 2
    f(rg.ones(4, dtype=rg.float64), 2.0)
    assert f.trace_count == 3
    out = f(rg.ones(4, dtype=rg.float64), 3.0)
    assert f.trace_count == 4
    np.testing.assert_allclose(out.data, 3.0)


def test_closure_constant_change_retraces():
    k = 2.0
    f = rg.jit(lambda x: x * k)
    assert f(rg.ones(2)).data.tolist() == [2.0, 2.0]
    k = 5.0
    assert f(rg.ones(2)).data.tolist() == [5.0, 5.0]
    assert f.trace_count == 2


GLOBAL_SCALE = 2.0


def scaled(x):
    return x * GLOBAL_SCALE


def test_global_python_number_change_retraces():
    """A module global the function reads is a guard: a new value retraces."""
    global GLOBAL_SCALE
    f = rg.jit(scaled)
    assert f(rg.ones(1)).item() == 2.0
    GLOBAL_SCALE = 3.0
    try:
        assert f(rg.ones(1)).item() == 3.0
        assert f.trace_count == 2
    finally:
        GLOBAL_SCALE = 2.0


@pytest.mark.parametrize("use", [
    lambda x: x.sum().item(),
    lambda x: bool(x.sum() > 0),
    lambda x: x * 2 if x.sum() > 0 else x,
    lambda x: x.numpy() * 2,
    lambda x: float(x.sum()),
])
def test_python_use_of_traced_values_raises(use):
    f = rg.jit(use)
    with pytest.raises(JitError, match="rg.jit"):
        f(rg.ones(3))


def test_inplace_on_an_argument_is_replayed_at_every_call():
    x = rg.ones(3)

    def f(x):
        x.add_(1.0)
        return x * 2

    j = rg.jit(f)
    for k in range(2, 5):
        v0 = x._version
        np.testing.assert_array_equal(j(x).data, 2.0 * k)
        assert x.data.tolist() == [float(k)] * 3 and x._version == v0 + 1
    assert j.trace_count == 1


def test_random_inside_jit_raises():
    with pytest.raises(JitError, match="random"):
        rg.jit(lambda x: x + rg.randn(3))(rg.ones(3))


def test_outputs_are_fresh_arrays_each_call():
    f = rg.jit(lambda x: (x * 2, x))
    x = rg.ones(3)
    a, ident = f(x)
    b, _ = f(x)
    assert a.data is not b.data and not np.shares_memory(a.data, b.data)
    a.data[0] = 100.0
    assert b.data[0] == 2.0
    ident.data[0] = 100.0  # an output that is an input is a copy
    assert x.data[0] == 1.0


def test_fusion_and_constant_folding_keep_nan_semantics():
    def f(x):
        c = rg.tensor(np.array([0.0, np.inf]))
        return rg.exp(rg.tanh(x * 2.0 + 1.0)) * (c * 0.0)  # c*0 folds to [0, nan]

    x = rg.tensor(np.array([0.5, 0.25]))
    j = rg.jit(f)
    got = j(x).data
    want = f(x).data
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    assert np.isnan(got[1]) and got[0] == want[0]
    assert j.graph.ops_after == j.graph.ops_traced - 1  # c * 0.0 was folded, not rewritten


def test_program_text_and_op_counts():
    f = rg.jit(lambda x: (rg.tanh(x) + rg.tanh(x)).sum())  # tanh(x) twice: one after CSE
    f(rg.ones(3))
    prog = f.graph
    text = str(prog)
    assert "tanh" in text and "return" in text
    assert prog.ops_traced == 4 and prog.ops_after == 3
    assert text.count("tanh") == 1


def test_fused_chain_equals_eager():
    def chain(x):
        y = x
        for _ in range(10):
            y = rg.sin(rg.exp(rg.tanh(y * 1.01 + 0.1)))
        return y.sum(), rg.autograd.grad(y.sum(), [x])[0]

    x = rg.tensor(np.linspace(-1, 1, 8).astype(np.float32), requires_grad=True)
    f = rg.jit(chain)
    got = f(x)
    want = chain(x)
    assert f.graph.fused > 0
    for a, b in zip(got, want):
        np.testing.assert_allclose(a.data, b.data, rtol=1e-5)
        assert a.dtype == b.dtype


def test_hooks_and_retain_grad_inside_jit_match_eager():
    def f(x):
        y = x * 2
        y.retain_grad()
        y.register_hook(lambda g: g * 3)
        return rg.autograd.grad((y * y).sum(), [x])[0]

    x = rg.tensor([1.0, 2.0], requires_grad=True)
    np.testing.assert_allclose(rg.jit(f)(x).data, f(x).data)


def _relabel(x, rng):
    """Integer and boolean inputs (labels, masks) with their values shuffled."""
    if isinstance(x, rg.Tensor) and x.dtype.kind in "biu" and x.ndim:
        return rg.Tensor(rng.permutation(x.data.reshape(-1)).reshape(x.shape))
    return x


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_every_op_replays_new_values_like_eager(name):
    """Traced once, called on other values: a rule that branched on the traced
    values, or froze an array made from them, gives the first call's answer."""
    op = ops.OPS[name]
    rng = np.random.default_rng(7)
    for (first, attrs), (second, _) in zip(cases(name, seed=4), cases(name, seed=5)):
        diff = tuple(k for k, x in enumerate(first) if isinstance(x, rg.Tensor)
                     and x.requires_grad)
        second = [_relabel(x, rng) for x in second]
        weight = rg.Tensor(rng.standard_normal(apply(op, *first, **attrs).shape))

        def loss(*xs, attrs=attrs, weight=weight):
            out = (apply(op, *xs, **attrs) * weight).sum()
            return out.real if out.dtype.kind == "c" else out  # grad needs a real scalar

        eager = rg.func.value_and_grad(loss, argnums=diff)
        fast = rg.jit(eager)
        fast(*first)
        value, grads = fast(*second)
        ref_value, ref_grads = eager(*second)
        assert fast.trace_count == 1
        np.testing.assert_allclose(value.data, ref_value.data, rtol=1e-12, atol=1e-12)
        for g, r in zip(grads, ref_grads):
            np.testing.assert_allclose(g.data, r.data, rtol=1e-12, atol=1e-12)


def test_prod_gradient_with_zeros_after_tracing_without():
    f = rg.jit(rg.func.grad(lambda x: x.prod()))
    f(rg.tensor([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(f(rg.tensor([1.0, 0.0, 3.0])).data, [0.0, 3.0, 0.0])


def test_structured_outputs_on_the_tensor_only_fast_path():
    """Calls with tensors only take a cheaper cached path: same structures, fresh arrays."""
    pair = collections.namedtuple("pair", "total parts")

    def f(x, y):
        return pair((x * y).sum(), [y * 2, rg.tensor([1.0, 2.0])]), {"k": (x + y,)}

    x, y = rg.tensor(rng.standard_normal(3)), rg.tensor(rng.standard_normal(3))
    j = rg.jit(f)
    for _ in range(3):
        (got, extra), (want, want_extra) = j(x, y), f(x, y)
        assert isinstance(got, pair) and isinstance(got.parts, list)
        assert got.total.shape == () and isinstance(got.total.data, np.ndarray)
        np.testing.assert_allclose(got.total.data, want.total.data)
        np.testing.assert_allclose(got.parts[0].data, want.parts[0].data)
        np.testing.assert_array_equal(got.parts[1].data, [1.0, 2.0])
        np.testing.assert_allclose(extra["k"][0].data, want_extra["k"][0].data)
        got.parts[1].data[0] = 99.0  # a constant output is a copy: the next call is unchanged
    assert j.trace_count == 1


def test_losses_read_each_calls_labels_and_refuse_what_they_cannot_replay():
    from retrograd.nn import functional as F

    w = rg.tensor(rng.standard_normal((4, 3)))
    x = rg.tensor(rng.standard_normal((5, 3)))

    def losses(w, x, y):
        z = F.linear(x, w)
        return F.cross_entropy(z, y), F.nll_loss(rg.log_softmax(z, dim=1), y, reduction="sum")

    eager = rg.func.value_and_grad(lambda w, x, y: sum(losses(w, x, y)))
    fast = rg.jit(eager)
    for labels in ([0, 1, 2, 3, 0], [3, 3, 1, 0, 2], [1, 1, 1, 1, 1]):
        y = rg.tensor(np.array(labels))
        (v, g), (rv, rg_) = fast(w, x, y), eager(w, x, y)
        np.testing.assert_allclose(v.data, rv.data, rtol=1e-12)
        np.testing.assert_allclose(g.data, rg_.data, rtol=1e-12)
    assert fast.trace_count == 1
    with pytest.raises(IndexError, match="target 4 is out of bounds: the input has 4 classes"):
        fast(w, x, rg.tensor(np.array([0, 1, 4, 2, 0])))  # a replay checks labels too
    # ignore_index in the first call's labels: the composed path, replayed with new labels
    ce = rg.jit(lambda x, y: F.cross_entropy(x, y))
    for labels in ([0, -100, 1, 2, 0], [-100, 2, 2, -100, 1], [-100] * 5):
        y = rg.tensor(np.array(labels))
        np.testing.assert_allclose(ce(x, y).data, F.cross_entropy(x, y).data, rtol=1e-12)


def test_soft_target_cross_entropy_replays_new_targets_and_matches_pytorch():
    import torch

    from retrograd.nn import functional as F

    z = rg.tensor(rng.standard_normal((4, 3)), requires_grad=True)

    def loss(z, q):
        return F.cross_entropy(z, q, label_smoothing=0.1)

    eager = rg.func.grad(loss, argnums=(0, 1))
    fast = rg.jit(eager)
    for _ in range(3):
        q = rg.tensor(rng.dirichlet(np.ones(3), size=4))
        got, want = fast(z, q), eager(z, q)
        tz = torch.tensor(z.data, requires_grad=True)
        tq = torch.tensor(q.data, requires_grad=True)
        torch.nn.functional.cross_entropy(tz, tq, label_smoothing=0.1).backward()
        for a, b, t in zip(got, want, (tz, tq)):
            np.testing.assert_allclose(a.data, b.data, rtol=1e-12)
            np.testing.assert_allclose(a.data, t.grad.numpy(), rtol=1e-10)
    assert fast.trace_count == 1


def test_tensor_indices_refuse_and_array_arguments_retrace_on_new_values():
    x = rg.tensor(np.arange(5.0))
    with pytest.raises(JitError, match="indexing with a tensor"):
        rg.jit(lambda x, i: x[i])(x, rg.tensor(np.array([0, 1])))
    f = rg.jit(lambda x, i: x[i] * 2)  # a NumPy index is a constant: new values retrace
    np.testing.assert_array_equal(f(x, np.array([0, 1])).data, [0.0, 2.0])
    np.testing.assert_array_equal(f(x, np.array([3, 4])).data, [6.0, 8.0])
    np.testing.assert_array_equal(f(x, [1, 2]).data, [2.0, 4.0])
    assert f.trace_count == 3
    g = rg.jit(lambda x: x[rg.tensor(np.array([4, 0]))])  # made inside: a constant, allowed
    np.testing.assert_array_equal(g(x).data, [4.0, 0.0])
