"""rg.jit traces `t.copy_(v)` of v's own shape and dtype as `t` standing for v's value (no
copy node); every later change of either one stays its own, as in eager mode."""

import numpy as np

import retrograd as rg


def _run(fn, make):
    eager_args = make()
    want = fn(*eager_args)
    jitted = rg.jit(fn)
    for _ in range(3):
        args = make()
        got = jitted(*args)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g.numpy(), w.numpy())
        for a, e in zip(args, eager_args):
            np.testing.assert_array_equal(a.numpy(), e.numpy())
    return jitted


def test_copy_then_change_the_source():
    def f(t, q):
        t.copy_(q * 2.0)
        q.add_(1.0)  # t keeps the copied value
        t.mul_(3.0)  # q keeps its own
        return t + 0.0, q + 0.0

    jitted = _run(f, lambda: (rg.tensor(np.arange(6.0)), rg.tensor(np.ones(6))))
    assert "setitem" not in jitted.graph.source


def test_copy_of_an_external_tensor_is_written_back():
    def f(t, q):
        t.copy_(q)
        return (t.sum(),)

    _run(f, lambda: (rg.zeros(2, 3), rg.tensor(np.arange(6.0).reshape(2, 3))))


def test_copy_with_broadcast_or_cast_keeps_the_copy():
    def f(t, q, r):
        t.copy_(q)  # (3,) broadcast into (2, 3)
        r.copy_(q.double())  # float64 into float32
        return t * 1.0, r * 1.0

    _run(f, lambda: (rg.zeros(2, 3), rg.tensor(np.array([1.0, 2.0, 3.0], np.float32)),
                     rg.zeros(3)))
