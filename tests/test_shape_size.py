"""`t.shape` and `t.size()` are `rg.Size`s as torch's are `torch.Size`s (`x.shape.numel()`,
`x.size()[1:].numel()`), still tuples for NumPy and printing as tuples; and
`t.numpy(force=True)` as torch's."""

import numpy as np
import pytest
import torch

import retrograd as rg

SHAPES = [(), (0,), (3,), (2, 3), (2, 0, 4), (1, 2, 3, 4)]


@pytest.mark.parametrize("shape", SHAPES)
def test_shape_and_size_are_sizes_with_torchs_numel(shape):
    a = np.zeros(shape)
    x, t = rg.tensor(a), torch.tensor(a)
    for got, want in ((x.shape, t.shape), (x.size(), t.size())):
        assert isinstance(got, rg.Size) and isinstance(got, tuple)
        assert got == tuple(want) and got.numel() == want.numel()
        assert got[1:].numel() == want[1:].numel() and isinstance(got[1:], rg.Size)
        assert (got + (5,)).numel() == (want + (5,)).numel()
    assert x.size == a.size  # uncalled: NumPy's element count (SPEC)
    assert str(x.shape) == str(tuple(shape)) == repr(x.shape)
    assert np.zeros(x.shape).shape == tuple(shape) and rg.zeros(x.shape).shape == x.shape


def test_shape_arithmetic_refuses_non_ints_as_torch():
    x, t = rg.ones(2, 3), torch.ones(2, 3)
    for bad in ((None,), (1.5,)):
        with pytest.raises(TypeError):
            t.shape + bad
        with pytest.raises(TypeError):
            x.shape + bad


def test_numpy_force_detaches_as_torch():
    x = rg.tensor([1.0, 2.0], requires_grad=True) * 3
    t = torch.tensor([1.0, 2.0], requires_grad=True) * 3
    np.testing.assert_array_equal(x.numpy(force=True), t.numpy(force=True))


def test_storages_say_whether_tensors_share_memory_as_torchs():
    def facts(lib):
        x = lib.arange(12.0).reshape(3, 4)
        views = [x[1:], x.t(), x.reshape(12), x[:, 1]]
        copies = [x.clone(), x[[0, 2]], x.contiguous().t().contiguous()]
        base = x.untyped_storage()
        return ([v.untyped_storage().data_ptr() == base.data_ptr() for v in views + copies],
                [v.untyped_storage().nbytes() for v in views], len(base),
                x[1:].untyped_storage().size(), x.is_meta)

    assert facts(rg) == facts(torch)
    assert rg.arange(6.0)[2:].storage().size() == 6
    assert rg.empty(2, device="meta").is_meta
