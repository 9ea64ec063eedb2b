"""Tensors in shared memory and rg.multiprocessing, as torch.multiprocessing: Hogwild's
pattern (model.share_memory(), workers train it) changes the parent's model exactly as
torch's does, under fork and spawn; shared tensors pickled through a queue stay shared;
spawn() runs fn(i, *args) and re-raises a worker's error; the shared file goes away.
(The workers live in tests/mp_workers.py, so a spawned process need not import torch.)"""

import gc
import os

import numpy as np
import pytest
import torch
import torch.multiprocessing as tmp
from mp_workers import fail, fill, train, write_through_queue

import retrograd as rg
import retrograd.multiprocessing as rmp


def _hogwild(lib, mp, method):
    """Two workers, one after the other (so the result is deterministic), train a shared
    model; the parent's weights after them."""
    ctx = mp.get_context(method)
    model = lib.nn.Linear(4, 2)
    with lib.no_grad():
        model.weight.copy_(lib.tensor(np.arange(8.0).reshape(2, 4) / 10))
        model.bias.zero_()
    model.share_memory()
    assert model.weight.is_shared()
    for seed in range(2):
        p = ctx.Process(target=train, args=(lib.__name__, model, seed))
        p.start()
        p.join()
        assert p.exitcode == 0
    return model.weight.detach().numpy().copy(), model.bias.detach().numpy().copy()


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_hogwild_workers_update_the_parents_model_as_torch(method):
    want = _hogwild(torch, tmp, "fork")  # (torch's result does not depend on the method)
    got = _hogwild(rg, rmp, method)
    assert not np.allclose(got[0], np.arange(8.0).reshape(2, 4) / 10)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_shared_tensor_sent_through_a_queue_is_the_same_memory():
    ctx = rmp.get_context("spawn")
    q, done = ctx.Queue(), ctx.Queue()
    t = rg.zeros(3).share_memory_()
    p = ctx.Process(target=write_through_queue, args=(q, done))
    p.start()
    q.put(t)
    assert done.get(timeout=120) is True
    p.join()
    np.testing.assert_array_equal(t.numpy(), np.full(3, 2.0, np.float32))


def test_spawn_runs_fn_with_the_process_index_and_reraises():
    t = rg.zeros(3).share_memory_()
    assert rmp.spawn(fill, args=(t, 10.0), nprocs=2, start_method="fork") is None
    np.testing.assert_array_equal(t.numpy(), [10.0, 11.0, 0.0])
    with pytest.raises(rmp.ProcessRaisedException, match="worker one fails"):
        rmp.spawn(fail, nprocs=2, start_method="fork")
    ctx = rmp.spawn(fill, args=(t, 0.0), nprocs=1, join=False, start_method="fork")
    while not ctx.join():
        pass
    assert t.numpy()[0] == 0.0


def test_share_memory_is_in_place_and_the_file_goes_with_the_tensor():
    from retrograd import sharing

    t = rg.tensor([1.0, 2.0], requires_grad=True)
    assert not t.is_shared()
    assert t.share_memory_() is t and t.is_shared() and t.requires_grad
    np.testing.assert_array_equal(t.numpy(), [1.0, 2.0])
    path = sharing.shared_path(t.data)
    assert os.path.exists(path)
    (t * 3).sum().backward()
    np.testing.assert_array_equal(t.grad.numpy(), [3.0, 3.0])
    del t
    gc.collect()
    assert not os.path.exists(path)
    assert rmp.get_sharing_strategy() in rmp.get_all_sharing_strategies()


def test_deepcopy_of_a_shared_tensor_is_private_as_torch():
    import copy

    for lib in (torch, rg):
        t = lib.ones(2).share_memory_()
        u = copy.deepcopy(t)
        u.add_(4.0)
        assert t.tolist() == [1.0, 1.0] and u.tolist() == [5.0, 5.0]
        m = lib.nn.Linear(2, 1).share_memory()
        m2 = copy.deepcopy(m)
        with lib.no_grad():
            m2.weight.fill_(7.0)
        assert (m.weight != 7.0).all()
