"""DistributedSampler against torch.utils.data's, the clip_grad module path and the
memory-format conversions of nn.utils."""

import numpy as np
import pytest
import torch
from torch.utils.data import DistributedSampler as TorchSampler

import retrograd as rg
from retrograd.utils.data import DataLoader, DistributedSampler

CASES = [(10, 3, False), (10, 3, True), (2, 5, False), (7, 2, False), (7, 7, True), (0, 2, False)]


@pytest.mark.parametrize("n, k, drop_last", CASES)
def test_unshuffled_shares_equal_torch(n, k, drop_last):
    for r in range(k):
        want = TorchSampler(range(n), k, r, shuffle=False, drop_last=drop_last)
        got = DistributedSampler(range(n), k, r, shuffle=False, drop_last=drop_last)
        assert list(got) == list(want) and len(got) == len(want)


@pytest.mark.parametrize("n, k, drop_last", CASES[:5])
def test_shuffled_shares_partition_like_torch(n, k, drop_last):
    shares = [list(DistributedSampler(range(n), k, r, seed=3, drop_last=drop_last))
              for r in range(k)]
    torch_shares = [list(TorchSampler(range(n), k, r, seed=3, drop_last=drop_last))
                    for r in range(k)]
    assert [len(s) for s in shares] == [len(s) for s in torch_shares]
    flat = sum(shares, [])
    if drop_last:
        assert len(set(flat)) == len(flat)  # cut, never repeated
    else:
        assert set(flat) == set(range(n))  # every index read by some rank
    again = [list(DistributedSampler(range(n), k, r, seed=3, drop_last=drop_last))
             for r in range(k)]
    assert again == shares  # the same order on every rank and every run


def test_set_epoch_reshuffles_and_dataloader_takes_it():
    s = DistributedSampler(range(50), 2, 1, seed=0)
    first = list(s)
    s.set_epoch(1)
    assert list(s) != first
    s.set_epoch(0)
    assert list(s) == first
    loader = DataLoader(rg.arange(20.0), batch_size=5, sampler=DistributedSampler(
        range(20), 2, 0, shuffle=False))
    assert [b.tolist() for b in loader] == [[0.0, 2.0, 4.0, 6.0, 8.0],
                                            [10.0, 12.0, 14.0, 16.0, 18.0]]


def test_default_world_and_bad_rank():
    s = DistributedSampler(range(4))  # no launcher: one rank of size 1
    assert s.num_replicas == 1 and s.rank == 0 and sorted(s) == [0, 1, 2, 3]
    for bad in (2, -1):
        with pytest.raises(ValueError, match="Invalid rank"):
            TorchSampler(range(4), 2, bad)
        with pytest.raises(ValueError, match="Invalid rank"):
            DistributedSampler(range(4), 2, bad)


def test_clip_grad_module_path_and_memory_format_conversion():
    from retrograd.nn.utils.clip_grad import clip_grad_norm_, clip_grad_value_
    p, tp = rg.tensor([3.0, 4.0], requires_grad=True), torch.tensor([3.0, 4.0],
                                                                   requires_grad=True)
    (p * p).sum().backward()
    (tp * tp).sum().backward()
    got = clip_grad_norm_([p], 1.0)
    want = torch.nn.utils.clip_grad.clip_grad_norm_([tp], 1.0)
    np.testing.assert_allclose(got.data, want.numpy(), rtol=1e-6)
    np.testing.assert_allclose(p.grad.data, tp.grad.numpy(), rtol=1e-6)
    clip_grad_value_([p], 0.1)
    assert np.abs(p.grad.data).max() <= 0.1
    m = rg.nn.Conv2d(2, 3, 3)
    assert rg.nn.utils.convert_conv2d_weight_memory_format(m, rg.channels_last) is m
    with pytest.raises(TypeError):
        rg.nn.utils.convert_conv2d_weight_memory_format(m, "channels_last")
