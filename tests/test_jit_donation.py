"""rg.jit computes a write-back in the written array itself when nothing else reads the
old value (`_donation_plan`): a jitted Adam step updates each parameter and moment in
place, with no copy back, and gives eager mode's values bit for bit; calls whose arrays
alias fall back to copies. The update ops' compiled loops equal their NumPy paths bit for
bit."""

import sys

import numpy as np
import pytest
import torch

import retrograd as rg
from retrograd import kernels, ops

J = sys.modules["retrograd.jit"]


def _model_step(name, kw, dtype, arrays):
    """Two parameters over the given arrays, an optimizer, and one training step."""
    w, b = (rg.Tensor._wrap(a) for a in arrays)
    w.requires_grad_(True)
    b.requires_grad_(True)
    opt = getattr(rg.optim, name)([w, b], lr=0.05, **kw)
    x = rg.tensor(np.random.default_rng(1).standard_normal((8, 5)).astype(dtype))

    def step():
        loss = ((x @ w + b).tanh() ** 2).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    return w, b, opt, step


def _fresh(dtype):
    rng = np.random.default_rng(0)
    return [rng.standard_normal((5, 3)).astype(dtype), rng.standard_normal(3).astype(dtype)]


CASES = [("Adam", {}), ("AdamW", {"weight_decay": 0.3}), ("Adam", {"betas": (0.3, 0.9)}),
         ("AdamW", {"amsgrad": True})]


@pytest.mark.parametrize("mode", ["numba", "numpy"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name,kw", CASES)
def test_adam_step_is_computed_in_place(name, kw, dtype, mode):
    with kernels.use(mode, min_size=0):
        we, be, opt_e, step_e = _model_step(name, kw, dtype, _fresh(dtype))
        for _ in range(5):
            step_e()
        w, b, opt, step = _model_step(name, kw, dtype, _fresh(dtype))
        fn = rg.jit(step)
        fn()
        arrays = [w.data, b.data] + [s.data for st in opt.state.values()
                                     for k, s in st.items() if k != "step"]
        versions = [w._version, b._version]
        for _ in range(4):
            fn()
        # the program wrote into the parameters' and moments' own arrays: no copy back
        src = fn.graph.source  # one step op per parameter (amsgrad: moments and update)
        if kw.get("amsgrad"):
            assert "_into_adam_apply(" in src and "out=a" in src
        else:
            assert src.count("_into_adam_step(") == 2 and "adam_apply" not in src
            assert all("out=(a" in line for line in src.splitlines() if "adam_step" in line)
        assert fn.graph.donated
        assert all(x is y for x, y in zip(arrays, [w.data, b.data] + [
            s.data for st in opt.state.values() for k, s in st.items() if k != "step"]))
        assert [w._version, b._version] == [v + 4 for v in versions]
    np.testing.assert_array_equal(w.numpy(), we.numpy())
    np.testing.assert_array_equal(b.numpy(), be.numpy())
    for st, st_e in zip(opt.state.values(), opt_e.state.values()):
        for k in st:
            np.testing.assert_array_equal(st[k].numpy(), st_e[k].numpy())


def test_views_of_one_array_fall_back_to_copies():
    """Two parameters that are views of one array do not own their memory: the call
    passes copies and writes back, and the values stay eager mode's."""
    dtype = np.float64
    flat_e, flat = np.zeros(18), np.zeros(18)
    for f in (flat_e, flat):
        f[:15], f[15:] = (a.ravel() for a in _fresh(dtype))
    we, be, _, step_e = _model_step("Adam", {}, dtype, [flat_e[:15].reshape(5, 3),
                                                         flat_e[15:]])
    w, b, _, step = _model_step("Adam", {}, dtype, [flat[:15].reshape(5, 3), flat[15:]])
    fn = rg.jit(step)
    for _ in range(4):
        step_e()
        fn()
    np.testing.assert_array_equal(flat, flat_e)
    np.testing.assert_array_equal(w.numpy(), we.numpy())


def test_a_view_read_before_the_update_keeps_the_old_values():
    """c takes b's values, then a (whose array b views) is doubled in place: eager mode's
    c holds the old values. The program must not double a's array before c's copy back
    reads b (b is a view into it, so the call passes a copy of a instead)."""
    def make():
        arr = np.arange(4.0)
        a, b, c = rg.Tensor._wrap(arr), rg.Tensor._wrap(arr[:2]), rg.tensor(np.zeros(2))

        def f():
            c.copy_(b)
            a.mul_(2.0)

        return a, c, f

    a, c, f = make()
    ae, ce, fe = make()
    fn = rg.jit(f)
    for _ in range(3):
        fn()
        fe()
        np.testing.assert_array_equal(c.numpy(), ce.numpy())
        np.testing.assert_array_equal(a.numpy(), ae.numpy())


def test_donation_safe_refuses_aliasing_arrays():
    a, b = np.zeros(4), np.zeros(4)
    assert J._donation_safe((a, b), (np.ones(2),))
    assert not J._donation_safe((a, a), ())  # one array passed twice
    assert not J._donation_safe((a,), (a[1:],))  # another input is a view of it
    assert not J._donation_safe((a,), (a,))
    assert not J._donation_safe((a[1:],), ())  # does not own its memory
    ro = np.zeros(3)
    ro.flags.writeable = False
    assert not J._donation_safe((ro,), ())


def test_an_input_read_after_its_update_is_not_donated():
    """The old value of p is read after p's in-place update: p's array must not be
    written before that read (the plan leaves it to a copy back)."""
    p = rg.tensor(np.arange(4.0))

    def f():
        old = p * 1.0
        p.add_(1.0)
        return p * 2.0 + old.exp().sum() * 0.0 + old

    fn = rg.jit(f)
    pe = rg.tensor(np.arange(4.0))

    def fe():
        old = pe * 1.0
        pe.add_(1.0)
        return pe * 2.0 + old.exp().sum() * 0.0 + old

    for _ in range(3):
        np.testing.assert_array_equal(fn().numpy(), fe().numpy())
    np.testing.assert_array_equal(p.numpy(), pe.numpy())


def test_a_written_value_that_is_also_returned_is_not_donated():
    p = rg.tensor(np.arange(4.0))
    fn = rg.jit(lambda: p.add_(1.0) * 1.0)
    outs = [fn() for _ in range(3)]
    assert [o.numpy().tolist() for o in outs] == [[i + k for i in range(4)] for k in (1, 2, 3)]

    q = rg.tensor(np.arange(3.0))

    def g():
        q.mul_(2.0)
        return q

    fg = rg.jit(g)
    fg()
    r2 = fg()
    np.testing.assert_array_equal(q.numpy(), np.arange(3.0) * 4)
    np.testing.assert_array_equal(r2.numpy(), q.numpy())


# ---------------------------------------------------------------- the update ops


def _arrays(dtype, shape=(7, 9), seed=0):
    rng = np.random.default_rng(seed)
    m, d, v, x = (rng.standard_normal(shape).astype(dtype) for _ in range(4))
    d.flat[0], d.flat[1], d.flat[2] = np.nan, np.inf, -np.inf
    return m, d, np.abs(v), x


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("weight", [0.1, 0.5, 0.7])
def test_update_kernels_equal_numpy_bit_for_bit(dtype, weight):
    m, d, v, x = _arrays(dtype)
    res = {}
    for mode in ("numba", "numpy"):
        with kernels.use(mode, min_size=0):
            m1 = ops.updates._exp_avg(m, d, weight=weight)
            v1 = ops.updates._exp_avg_sq(v, d, beta=0.95)
            x1 = ops.updates._adam_apply(x, m1, v1, np.array(3.0), lr=0.01, beta1=0.9,
                                         beta2=0.95, eps=1e-8, decay=0.99)
            x2 = ops.updates._adam_apply(x, m1, v1, np.array(3.0), lr=0.01, beta1=0.9,
                                         beta2=0.95, eps=1e-8, decay=1.0)
            res[mode] = (m1, v1, x1, x2)
    for a, b in zip(res["numba"], res["numpy"]):
        np.testing.assert_array_equal(a, b)
    # and they are torch's operations (to rounding: torch's loops may fuse a multiply-add)
    tm, td = torch.from_numpy(m), torch.from_numpy(d)
    torch.testing.assert_close(torch.from_numpy(res["numpy"][0]), torch.lerp(tm, td, weight),
                               equal_nan=True)
    tv = torch.from_numpy(v.copy()).mul_(0.95).addcmul_(td, td, value=1 - 0.95)
    torch.testing.assert_close(torch.from_numpy(res["numpy"][1]), tv, equal_nan=True)


@pytest.mark.parametrize("mode", ["numba", "numpy"])
def test_update_ops_into_an_input_and_strided(mode):
    """Written into one of their inputs (as the jit does), and on strided arrays (the
    NumPy path), the values are those of a fresh output."""
    m, d, v, x = _arrays(np.float32, shape=(6, 8))
    with kernels.use(mode, min_size=0):
        want = ops.updates._exp_avg(m, d, weight=0.1)
        got = m.copy()
        ops.updates._exp_avg(got, d, weight=0.1, out=got)
        np.testing.assert_array_equal(got, want)
        want = ops.updates._exp_avg_sq(v, d, beta=0.9)
        got = v.copy()
        ops.updates._exp_avg_sq(got, d, beta=0.9, out=got)
        np.testing.assert_array_equal(got, want)
        mt, dt = m.T, d.T  # strided
        np.testing.assert_array_equal(ops.updates._exp_avg(mt, dt, weight=0.1),
                                      ops.updates._exp_avg(m, d, weight=0.1).T)


def test_small_parameters_take_a_compiled_loop_once_it_exists():
    """Below MIN_SIZE a kernel runs only after a large call has compiled it (a small call
    never waits for a compile); the results are the NumPy path's either way."""
    from retrograd.kernels import updates as KU

    small_m, small_d = np.arange(6.0, dtype=np.float32), np.ones(6, np.float32)
    want = small_m.copy()
    with kernels.use("numpy"):
        ops.updates.lerp_(want, small_d, 0.1, out=want)
    with kernels.use("numba"):
        assert not kernels.enabled(6, None)
        big = np.zeros(kernels.MIN_SIZE, np.float32)
        ops.updates.lerp_(big, big.copy(), 0.1, out=big)
        assert KU.lerp_.ready() and kernels.enabled(6, KU.lerp_)
        ops.updates.lerp_(small_m, small_d, 0.1, out=small_m)
    with kernels.use("numpy"):
        assert not kernels.enabled(10 ** 6, KU.lerp_)
    np.testing.assert_array_equal(small_m, want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("beta1", [0.9, 0.3])
def test_fused_adam_step_equals_the_three_updates(dtype, beta1):
    """`adam_step_` (one pass) gives the moments' and the update's results bit for bit,
    compiled or not, in place or into fresh buffers (the jit's undonated outputs)."""
    m, d, v, x = _arrays(dtype, shape=(5, 11), seed=3)
    kw = dict(lr=0.01, beta1=beta1, beta2=0.95, eps=1e-8)
    want = [m.copy(), v.copy(), x.copy()]
    with kernels.use("numpy"):
        ops.updates.lerp_(want[0], d, 1.0 - beta1, want[0])
        ops.updates.square_avg_(want[1], d, 0.95, want[1])
        ops.updates.adam_update_(want[2], want[0], want[1], 4.0, decay=0.98, **kw)
    for mode in ("numba", "numpy"):
        with kernels.use(mode, min_size=0):
            got = [m.copy(), v.copy(), x.copy()]
            ops.adam_step_(got[2], d, got[0], got[1], 4.0, decay=0.98, **kw)
            for a, b in zip(got, want):
                np.testing.assert_array_equal(a, b)
            xs = ops.updates._adam_step(x, d, m, v, np.array(4.0), decay=0.98,
                                        out=(None, None, None), **kw)
            for a, b in zip(xs, (want[2], want[0], want[1])):
                np.testing.assert_array_equal(a, b)


def test_a_returned_moment_is_not_donated():
    """The step returns the first moment: its value is an output, so only the parameter
    and the second moment are written in place (out=(a, None, a)); values as eager."""
    def make():
        w = rg.tensor(np.linspace(-1, 1, 6).reshape(2, 3), requires_grad=True)
        opt = rg.optim.Adam([w], lr=0.1)

        def step():
            opt.zero_grad()
            (w * w).sum().backward()
            opt.step()
            return opt.state[w]["exp_avg"], w * 1.0

        return step

    fe, fj = make(), rg.jit(make())
    for _ in range(4):
        for a, b in zip(fe(), fj()):
            np.testing.assert_array_equal(a.numpy(), b.numpy())
    line = next(x for x in fj.graph.source.splitlines() if "_into_adam_step(" in x)
    assert ", None, a" in line


def test_apply_many_outside_a_trace():
    rg_x = rg.tensor(np.ones(3))
    outs = rg.engine.apply_many(ops.adam_step, rg_x, rg_x * 0.5, rg.tensor(np.zeros(3)),
                                rg.tensor(np.zeros(3)), 1.0, lr=0.1, beta1=0.9, beta2=0.99,
                                eps=1e-8, decay=1.0)
    assert len(outs) == 3 and not any(o.requires_grad for o in outs)
    np.testing.assert_allclose(outs[0].numpy(), 1.0 - 0.1, rtol=1e-6)
    np.testing.assert_array_equal(rg_x.numpy(), np.ones(3))  # inputs untouched
