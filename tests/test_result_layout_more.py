"""Results PyTorch allocates row-major stay row-major here for permuted inputs, so ported
`.view(...)` calls work: cat/stack/roll, masked_fill, tril/triu, log-sigmoid, cummax/cummin,
norms, batch/instance norm, advanced indexing, einsum, F.unfold. Values and
gradients through the `.view` against torch. (Also `Tensor.tile(2, 1)`, torch's varargs.)"""

import numpy as np
import pytest
import torch

import retrograd as rg

BASES = {
    "permute021": lambda lib, a: a.permute(0, 2, 1),
    "permute210": lambda lib, a: a.permute(2, 1, 0),
    "transpose01": lambda lib, a: a.transpose(0, 1),
}

CASES = {
    "cat0": lambda lib, x: lib.cat([x, x], 0),
    "cat-1": lambda lib, x: lib.cat([x, x * 2], -1),
    "stack1": lambda lib, x: lib.stack([x, x], 1),
    "roll": lambda lib, x: x.roll(1, -1),
    "masked_fill": lambda lib, x: x.masked_fill(x > 0, 0.5),
    "tril": lambda lib, x: x.tril(),
    "triu": lambda lib, x: x.triu(1),
    "logsigmoid": lambda lib, x: lib.nn.functional.logsigmoid(x),
    "cummax": lambda lib, x: x.cummax(-1).values,
    "cummin_idx": lambda lib, x: x.cummin(1).indices,
    "norm": lambda lib, x: x.norm(dim=-1),
    "batch_norm": lambda lib, x: lib.nn.functional.batch_norm(x, None, None, training=True),
    "instance_norm": lambda lib, x: lib.nn.functional.instance_norm(x),
    "advanced_index": lambda lib, x: x[:, :, [0, 1]],
    "einsum": lambda lib, x: lib.einsum("bij,bkj->bik", x, x),
    "unfold": lambda lib, x: lib.nn.functional.unfold(x[:, None], 2),
}


@pytest.mark.parametrize("base", list(BASES))
@pytest.mark.parametrize("case", list(CASES))
def test_view_after_op_works_as_in_torch(base, case):
    data = np.random.default_rng(0).standard_normal((3, 4, 5))
    out = {}
    for lib in (torch, rg):
        a = lib.tensor(data, requires_grad=True)
        y = CASES[case](lib, BASES[base](lib, a))
        if not (lib is rg and out["torch"][0] is None):
            try:
                flat = y.view(-1)
            except RuntimeError:
                assert lib is torch  # where torch refuses, retrograd may still view
                out["torch"] = (None, None, None)
                continue
        else:
            flat = y.reshape(-1)
        if flat.dtype.is_floating_point if lib is torch else flat.dtype.kind == "f":
            w = lib.tensor(np.arange(flat.shape[0], dtype=np.float64) % 7)
            (flat * w).sum().backward()
            grad = a.grad.numpy()
        else:
            grad = None
        out[lib.__name__] = (flat.detach().numpy(), grad, y.is_contiguous())
    want, got = out["torch"], out["retrograd"]
    if want[0] is None:
        return
    assert got[2] or not want[2]
    np.testing.assert_allclose(got[0], want[0], rtol=1e-10, atol=1e-12)
    if want[1] is not None:
        np.testing.assert_allclose(got[1], want[1], rtol=1e-10, atol=1e-12)


def test_tile_takes_varargs_as_torch_method():
    data = np.arange(6.0).reshape(2, 3)
    for args in [(2, 1), ((2, 1),), (2,), (1, 2, 2)]:
        want = torch.tensor(data).tile(*args).numpy()
        np.testing.assert_array_equal(rg.tensor(data).tile(*args).numpy(), want)
