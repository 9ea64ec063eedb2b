"""rg.func.vmap's `randomness=` and `chunk_size=` (torch.func.vmap's keywords): "same" shares
one draw across the batch, "different" draws per element (the model-ensembling tutorial's
dropout), the default refuses random draws, and bad values raise torch's exception types."""

import numpy as np
import pytest
import torch

import retrograd as rg


def _noisy(t):
    return t + rg.randn(t.shape[-1], dtype=t.dtype)


def test_same_shares_one_draw_across_the_batch():
    x = rg.tensor(np.arange(12.0).reshape(4, 3))
    noise = (rg.func.vmap(_noisy, randomness="same")(x) - x).data
    np.testing.assert_allclose(noise, np.broadcast_to(noise[:1], noise.shape), atol=1e-12)
    assert np.any(noise != 0)
    tx = torch.arange(12.0, dtype=torch.float64).reshape(4, 3)
    tn = (torch.func.vmap(lambda t: t + torch.randn(3, dtype=t.dtype), randomness="same")(tx)
          - tx)
    torch.testing.assert_close(tn, tn[:1].expand(4, 3))


def test_different_draws_per_element_as_a_loop_would():
    x = rg.tensor(np.arange(12.0).reshape(4, 3))
    rg.manual_seed(5)
    got = rg.func.vmap(_noisy, randomness="different")(x)
    rg.manual_seed(5)
    want = rg.stack([_noisy(x[i]) for i in range(4)])
    np.testing.assert_array_equal(got.data, want.data)
    noise = got.data - x.data
    assert len({tuple(r) for r in noise}) == 4


def test_different_with_in_dims_out_dims_and_dropout_per_sample_grads():
    rg.manual_seed(0)
    model = rg.nn.Sequential(rg.nn.Linear(3, 5), rg.nn.Dropout(0.5), rg.nn.Linear(5, 1))
    model.double()
    params = {k: v.detach() for k, v in model.named_parameters()}
    x = rg.tensor(np.random.default_rng(1).standard_normal((6, 3)))

    def loss(p, xi):
        return rg.func.functional_call(model, p, (xi,)).sum()

    rg.manual_seed(9)
    got = rg.func.vmap(rg.func.grad(loss), in_dims=(None, 0), randomness="different")(params, x)
    rg.manual_seed(9)
    want = [rg.func.grad(loss)(params, x[i]) for i in range(6)]
    for k in params:
        assert got[k].shape == (6,) + params[k].shape
        np.testing.assert_allclose(got[k].data, np.stack([w[k].data for w in want]), rtol=1e-12)
    out = rg.func.vmap(lambda t: (t * 2, t.sum()), randomness="different", out_dims=(1, 0))(x)
    assert out[0].shape == (3, 6) and out[1].shape == (6,)


def test_default_refuses_random_draws():
    x = rg.ones(4, 3)
    with pytest.raises(RuntimeError):
        torch.func.vmap(lambda t: t + torch.randn(3))(torch.ones(4, 3))
    with pytest.raises(RuntimeError, match="randomness='different'"):
        rg.func.vmap(_noisy)(x)


def test_chunk_size_gives_the_same_result():
    x = rg.tensor(np.random.default_rng(2).standard_normal((5, 3)))
    f = rg.func.vmap(lambda t: (t * t).sum(), chunk_size=2)
    np.testing.assert_allclose(f(x).data, (x.data ** 2).sum(1), rtol=1e-12)


@pytest.mark.parametrize(("kw", "exc"), [({"randomness": "sometimes"}, RuntimeError),
                                          ({"chunk_size": 0}, ValueError),
                                          ({"chunk_size": -2}, ValueError)])
def test_bad_keywords_raise_torchs_types(kw, exc):
    with pytest.raises(exc):
        torch.func.vmap(lambda t: t, **kw)(torch.ones(2))
    with pytest.raises(exc):
        rg.func.vmap(lambda t: t, **kw)(rg.ones(2))
