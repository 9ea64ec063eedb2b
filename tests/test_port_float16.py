"""float16 reductions and normalisations computed in float32, as torch's CPU kernels do:
values of a few hundred (whose squares overflow float16) give torch's results, not inf
or zeros; and float16 running statistics of batch and instance norm update as torch's."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import retrograd as rg

rng = np.random.default_rng(0)
DATA = (rng.standard_normal((4, 512)) * 300).astype(np.float16)

CASES = {
    "sum": lambda L, F, x: x.sum(1), "mean": lambda L, F, x: x.mean(1),
    "mean of |x|, past float16's max": lambda L, F, x: x.abs().mean(),
    "sum past float16's max and back": lambda L, F, x: L.cat([x.abs().flatten(),
                                                                -x.abs().flatten()]).sum(),
    "var": lambda L, F, x: (x / 300).var(1), "std": lambda L, F, x: x.std(1),
    "std_mean": lambda L, F, x: L.std_mean(x, 1)[0], "norm": lambda L, F, x: x.norm(dim=1),
    "vector_norm": lambda L, F, x: L.linalg.vector_norm(x, dim=1),
    "matrix_norm": lambda L, F, x: L.linalg.matrix_norm(x),
    "cumsum": lambda L, F, x: L.ones(3000, dtype=L.float16).cumsum(0),
    "layer_norm": lambda L, F, x: F.layer_norm(x, (512,)),
    "rms_norm": lambda L, F, x: F.rms_norm(x, (512,)),
    "group_norm": lambda L, F, x: F.group_norm(x.reshape(4, 8, 64), 2),
    "batch_norm": lambda L, F, x: F.batch_norm(x, None, None, training=True),
    "instance_norm": lambda L, F, x: F.instance_norm(x.reshape(4, 8, 64)),
    "cosine_similarity": lambda L, F, x: F.cosine_similarity(x, x.flip(0)),
    "normalize": lambda L, F, x: F.normalize(x),
    "pairwise_distance": lambda L, F, x: F.pairwise_distance(x, x.flip(0)),
    "dist": lambda L, F, x: L.dist(x[0], x[1]),
    "l1_loss": lambda L, F, x: F.l1_loss(x, x.flip(0)),
    "mse_loss": lambda L, F, x: F.mse_loss(x / 30, x.flip(0) / 30),
    "smooth_l1_loss": lambda L, F, x: F.smooth_l1_loss(x, x.flip(0)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_float16_reductions_match_torch(name):
    fn = CASES[name]
    t = fn(torch, torch.nn.functional, torch.tensor(DATA))
    r = fn(rg, rg.nn.functional, rg.tensor(DATA))
    assert str(r.dtype) == str(t.dtype).replace("torch.", "")
    tn, rn = t.float().numpy(), r.numpy().astype(np.float32)
    np.testing.assert_array_equal(np.isinf(rn), np.isinf(tn))
    finite = np.isfinite(tn)
    scale = max(1.0, float(np.abs(tn[finite]).max())) if finite.any() else 1.0
    np.testing.assert_allclose(rn[finite], tn[finite], rtol=1e-2, atol=2e-3 * scale)


@pytest.mark.parametrize("layer", ["BatchNorm1d", "InstanceNorm1d"])
def test_float16_layers_update_their_running_statistics_as_torch(layer):
    x = (rng.standard_normal((8, 4, 5)) * 300).astype(np.float16)
    out = []
    for L in (torch, rg):
        m = getattr(L.nn, layer)(4, track_running_stats=True, affine=True)
        m = m.half() if L is torch else m.to(rg.float16)
        xt = L.tensor(x, requires_grad=True)
        y = m(xt)
        (y.float() * y.float()).sum().backward() if L is torch else \
            (y.to(rg.float32) ** 2).sum().backward()
        out.append([np.asarray(v.detach().float().numpy() if L is torch else
                               v.detach().numpy().astype(np.float32))
                    for v in (y, m.running_mean, m.running_var, m.weight.grad)]
                   + [str(xt.grad.dtype).replace("torch.", "")])
    for a, b in zip(*out):
        if isinstance(a, str):
            assert a == b
        else:
            np.testing.assert_allclose(b, a, rtol=1e-2, atol=1e-2 * max(1.0, np.abs(a).max()))


def test_a_float16_input_with_float32_parameters_stays_float16():
    x = (rng.standard_normal((3, 6)) * 300).astype(np.float16)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = torch.nn.functional.layer_norm(torch.tensor(x), (6,), torch.ones(6), torch.zeros(6))
    r = rg.nn.functional.layer_norm(rg.tensor(x), (6,), rg.ones(6), rg.zeros(6))
    assert str(r.dtype) == "float16" and t.dtype == torch.float16
    np.testing.assert_allclose(r.numpy().astype(np.float32), t.float().numpy(), atol=2e-3)


HALF_X = np.array([0.001, 0.0, 1000.0, -3.5, 65504.0, 3.0, -65504.0], dtype=np.float16)
NUMBER_OPS = {  # torch multiplies and divides by a number in float32; adds, subtracts and
    # raises to a power with the number rounded to float16 first
    "x * 1e5": lambda x: x * 1e5, "x * 1.0004": lambda x: x * 1.0004,
    "1e5 * x": lambda x: 1e5 * x, "x / 2**24": lambda x: x / 16777216.0,
    "3 / x": lambda x: 3 / x, "1e-5 / x": lambda x: 1e-5 / x,
    "x * 1e-5 * 1e5": lambda x: x * 1e-5 * 1e5,
    "x + 70000": lambda x: x + 70000, "1e-4 + x": lambda x: 1e-4 + x,
    "70000 - x": lambda x: 70000 - x, "x - 1e5": lambda x: x - 1e5,
    "x ** 1.00001": lambda x: x ** 1.00001, "2 ** (x / 1000)": lambda x: 2.0 ** (x / 1000),
}


@pytest.mark.parametrize("name", sorted(NUMBER_OPS))
def test_float16_with_a_python_number_rounds_as_torch(name):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = NUMBER_OPS[name](torch.tensor(HALF_X))
        r = NUMBER_OPS[name](rg.tensor(HALF_X))
    assert str(r.dtype) == "float16"
    np.testing.assert_array_equal(r.numpy(), t.numpy())


def test_float16_times_a_number_differentiates_through_float32():
    out = []
    for L in (torch, rg):
        x = L.tensor(HALF_X[:4], requires_grad=True)
        (x * 1e-3).sum().backward()
        out.append((x.grad.numpy(), str(x.grad.dtype).replace("torch.", "")))
    np.testing.assert_array_equal(out[1][0], out[0][0])
    assert out[0][1] == out[1][1]


@pytest.mark.parametrize("name", ["*=", "/=", "mul_", "div_"])
def test_float16_in_place_with_a_number_rounds_as_torch(name):
    def run(L):
        x = L.tensor(HALF_X[:4])
        if name == "*=":
            x *= 1e5
        elif name == "/=":
            x /= 16777216.0
        elif name == "mul_":
            x.mul_(1e5)
        else:
            x.div_(1e-5)
        return x.numpy()

    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(run(rg), run(torch))
