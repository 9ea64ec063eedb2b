"""Intra-op threads (`retrograd.threads`): how work is split, and that kernels split over
threads give PyTorch's values and the single-thread values."""

import numpy as np
import pytest
import torch

import retrograd as rg
from retrograd import threads


@pytest.fixture
def nthreads():
    """Set the intra-op thread count for one test, restoring it after."""
    old = threads.num_threads()
    yield threads.set_num_threads
    threads.set_num_threads(old)


def test_chunks_cover_the_range_once_and_respect_the_minimum_work(nthreads):
    nthreads(3)
    pieces = threads.chunks(10, 1e9)
    assert pieces[0][0] == 0 and pieces[-1][1] == 10 and len(pieces) == 3
    assert all(a[1] == b[0] for a, b in zip(pieces, pieces[1:]))
    assert threads.chunks(10, 1.5 * threads._MIN_WORK) == [(0, 10)]  # too little to split
    assert len(threads.chunks(10, 2.5 * threads._MIN_WORK)) == 2
    assert threads.chunks(2, 1e9) == [(0, 1), (1, 2)]  # never more pieces than rows
    nthreads(1)
    assert threads.chunks(10, 1e9) == [(0, 10)]


def test_run_does_not_nest_and_raises_a_piece_error(nthreads):
    nthreads(2)
    inner = []
    threads.run(lambda a, b: inner.append(threads.chunks(100, 1e12)), [(0, 1), (1, 2)])
    assert inner == [[(0, 100)], [(0, 100)]]  # a piece on a pool thread runs its work inline

    def bad(a, b):
        if a == 1:
            raise ValueError("piece 1 failed")
        return a

    with pytest.raises(ValueError, match="piece 1 failed"):
        threads.run(bad, [(0, 1), (1, 2)])
    assert threads.run(lambda a, b: b - a, [(0, 3), (3, 4)]) == [3, 1]


def test_rg_set_num_threads_sets_the_intra_op_count(nthreads):
    old = rg.get_num_threads()
    try:
        rg.set_num_threads(3)
        assert threads.num_threads() == 3
    finally:
        rg.set_num_threads(old)


def test_default_count_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("RETROGRAD_NUM_THREADS", "5")
    assert threads._default() == 5
    monkeypatch.delenv("RETROGRAD_NUM_THREADS")
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert threads._default() == 3
    monkeypatch.setenv("OMP_NUM_THREADS", "junk")
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    assert threads._default() >= 1


def _layer_norm_both(x, w, b, gy):
    xs = [rg.tensor(a, requires_grad=True) for a in (x, w, b)]
    y = rg.nn.functional.layer_norm(xs[0], (x.shape[-1],), xs[1], xs[2])
    (y * rg.tensor(gy)).sum().backward()
    return [y.numpy()] + [a.grad.numpy() for a in xs]


@pytest.mark.parametrize("shape,mean", [((1024, 256), 0.0), ((48, 40, 70), 0.0),
                                        ((512, 256), 300.0)])
def test_layer_norm_split_over_threads_matches_torch_and_one_thread(nthreads, shape, mean,
                                                                  monkeypatch):
    monkeypatch.setattr(threads, "_MIN_WORK", 1 << 12)  # small inputs: split them anyway
    rng = np.random.default_rng(len(shape))
    x = rng.standard_normal(shape) + mean
    w, b = rng.standard_normal(shape[-1]), rng.standard_normal(shape[-1])
    gy = rng.standard_normal(shape)
    nthreads(1)
    one = _layer_norm_both(x, w, b, gy)
    ts = [torch.tensor(a, requires_grad=True) for a in (x, w, b)]
    yt = torch.nn.functional.layer_norm(ts[0], (shape[-1],), ts[1], ts[2])
    (yt * torch.tensor(gy)).sum().backward()
    ref = [yt.detach().numpy()] + [t.grad.numpy() for t in ts]
    for k in (2, 3):
        nthreads(k)
        assert len(threads.chunks(int(np.prod(shape[:-1])), 10.0 * x.size)) == k
        got = _layer_norm_both(x, w, b, gy)
        for g, o, r in zip(got, one, ref):
            np.testing.assert_allclose(g, r, rtol=1e-9, atol=1e-10)
            np.testing.assert_allclose(g, o, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("fn", ["eigh", "svd", "qr"])
def test_batched_decompositions_split_over_threads_equal_one_thread(nthreads, fn, monkeypatch):
    monkeypatch.setattr(threads, "_MIN_WORK", 1 << 12)
    rng = np.random.default_rng(1)
    a = rng.standard_normal((4, 16, 24, 24))
    a = (a + np.swapaxes(a, -1, -2)) / 2 if fn == "eigh" else a
    results = []
    for k in (1, 2):
        nthreads(k)
        t = rg.tensor(a, requires_grad=True)
        outs = getattr(rg.linalg, fn)(t)
        sum((o * o).sum() if fn != "eigh" or i == 0 else (o * o * o).sum()
            for i, o in enumerate(outs)).backward()
        results.append([o.numpy() for o in outs] + [t.grad.numpy()])
    for one, two in zip(*results):
        np.testing.assert_array_equal(one, two)
    ref = getattr(torch.linalg, fn)(torch.tensor(a))
    if fn == "eigh":
        np.testing.assert_allclose(results[1][0], ref[0].numpy(), rtol=1e-10, atol=1e-12)
    elif fn == "svd":
        np.testing.assert_allclose(results[1][1], ref[1].numpy(), rtol=1e-10, atol=1e-12)
    else:
        np.testing.assert_allclose(np.abs(results[1][1]), np.abs(ref[1].numpy()),
                                   rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("op", ["conv_transpose2d", "conv2d", "conv_transpose3d"])
def test_fold_split_over_threads_matches_torch_and_one_thread(nthreads, op, monkeypatch):
    monkeypatch.setattr(threads, "_MIN_WORK", 1)  # small inputs: split them anyway
    calls = []
    run = threads.run
    monkeypatch.setattr(threads, "run", lambda fn, pieces: calls.append(len(pieces))
                        or run(fn, pieces))
    rng = np.random.default_rng(2)
    nd = 3 if op.endswith("3d") else 2
    x = rng.standard_normal((8, 6) + (12,) * nd)
    w = rng.standard_normal((6, 5) + (3,) * nd) if "transpose" in op \
        else rng.standard_normal((5, 6) + (3,) * nd)
    kw = dict(stride=2, padding=1)
    results = []
    for k in (1, 2):
        nthreads(k)
        xs, ws = rg.tensor(x, requires_grad=True), rg.tensor(w, requires_grad=True)
        y = getattr(rg.nn.functional, op)(xs, ws, **kw)
        (y * y).sum().backward()
        results.append([y.numpy(), xs.grad.numpy(), ws.grad.numpy()])
    xt, wt = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    yt = getattr(torch.nn.functional, op)(xt, wt, **kw)
    (yt * yt).sum().backward()
    assert 2 in calls  # the fold did run in two pieces
    for one, two, ref in zip(*results, [yt.detach().numpy(), xt.grad.numpy(), wt.grad.numpy()]):
        np.testing.assert_array_equal(one, two)
        np.testing.assert_allclose(two, ref, rtol=1e-9, atol=1e-9)


def test_blas_is_held_to_one_thread_while_pieces_run_and_restored_after(nthreads):
    threadpoolctl = pytest.importorskip("threadpoolctl")
    import scipy.linalg  # noqa: F401 - load SciPy's BLAS too, so both are held

    nthreads(2)
    with threadpoolctl.threadpool_limits(2, user_api="blas"):
        seen = threads.run(lambda a, b: [c.num_threads for c in threads._blas_libs()],
                           [(0, 1), (1, 2)])
        after = [c.num_threads for c in threads._blas_libs()]
    assert seen and all(set(s) == {1} for s in seen)
    assert after and set(after) == {2}


def _lent_run(nthreads):
    """Two intra-op threads and NumPy's OpenBLAS at two threads (so its pool has a thread
    to lend), the lender found; fails (not skips) where NumPy's BLAS is an OpenBLAS
    pthreads build without it."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    nthreads(2)
    limits = threadpoolctl.threadpool_limits(2, user_api="blas")
    libs = threads._blas_libs()
    openblas = [c for c in libs if c.internal_api == "openblas"
                and c.threading_layer == "pthreads"]
    return limits, bool(openblas)


def test_pieces_run_on_openblas_threads_with_results_in_order(nthreads):
    import threading

    limits, openblas = _lent_run(nthreads)
    with limits:
        if openblas:
            assert threads._lent_threads(1) is not None
        where = threads.run(lambda a, b: (a, b, threading.get_ident()), [(0, 3), (3, 7)])
        blas_during = threads.run(lambda a, b: [c.num_threads for c in threads._blas_libs()],
                                  [(0, 1), (1, 2)])
    assert [w[:2] for w in where] == [(0, 3), (3, 7)]
    assert where[0][2] == threading.get_ident() != where[1][2]  # piece 0 here, 1 elsewhere
    assert all(set(s) == {1} for s in blas_during)  # BLAS held to one thread meanwhile
    if openblas:  # the second piece ran on a thread Python did not start (OpenBLAS's)
        names = threads.run(lambda a, b: threading.current_thread().name, [(0, 1), (1, 2)])
        assert names[1].startswith("Dummy")


def test_lent_pieces_raise_their_error_do_not_nest_and_leave_no_record(nthreads):
    limits, _ = _lent_run(nthreads)
    with limits:
        def bad(a, b):
            if a == 1:
                raise KeyError("piece 1 failed")
            return np.ones(1000) @ np.ones(1000)  # BLAS called inside a piece
        with pytest.raises(KeyError, match="piece 1 failed"):
            threads.run(bad, [(0, 1), (1, 2)])
        inner = threads.run(lambda a, b: threads.run(lambda c, d: d - c, [(0, 2), (2, 5)]),
                            [(0, 1), (1, 2)])
        assert inner == [[2, 3], [2, 3]]  # a nested run goes inline, in order
        assert threads.run(lambda a, b: float(np.ones((64, 64)).sum()), [(0, 1), (1, 2)]) \
            == [4096.0, 4096.0]
    assert threads._calls == {}


def test_the_lent_threads_can_be_turned_off(nthreads, monkeypatch):
    import threading

    limits, _ = _lent_run(nthreads)
    monkeypatch.setenv("RETROGRAD_BLAS_THREADS", "0")
    threads._lent["key"] = "stale"  # looked up again, with the variable set
    try:
        with limits:
            assert threads._lent_threads(1) is None
            names = threads.run(lambda a, b: threading.current_thread().name,
                                [(0, 1), (1, 2)])
    finally:
        threads._lent["key"] = "stale"  # and again after, without it
    assert names[1].startswith("retrograd")  # a thread of the pool of ours
