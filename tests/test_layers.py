"""Normalisation, embedding, recurrent and attention layers and the containers against
PyTorch's, after loading the same weights: parameter names, outputs, gradients, 20 SGD
steps (float64), state_dict round trips through rg.save/rg.load (buffers included), and
clear errors for bad arguments."""

import numpy as np
import pytest
import torch

import retrograd as rg
import retrograd.nn as nn

RNG = np.random.default_rng(0)


@pytest.fixture(autouse=True)
def _seeded():
    """Torch's initial weights (copied into ours) decide each trajectory: fix them."""
    torch.manual_seed(0)
    rg.manual_seed(0)


def _load(mod, ref) -> None:
    """Copy `ref`'s parameters and buffers into `mod` (names must agree)."""
    sd = ref.state_dict()
    assert list(mod.state_dict()) == list(sd)
    mod.load_state_dict({k: v.detach().numpy() for k, v in sd.items()})


def _as_rg(x):
    if isinstance(x, (tuple, list)):
        return type(x)(_as_rg(v) for v in x)
    return None if x is None else rg.tensor(x)


def _as_torch(x):
    if isinstance(x, (tuple, list)):
        return type(x)(_as_torch(v) for v in x)
    return None if x is None else torch.tensor(x)


def _first(out):
    """The differentiable output of a layer (RNNs and attention return tuples)."""
    return out[0] if isinstance(out, (tuple, list)) else out


def _flat(out):
    if isinstance(out, (tuple, list)):
        return [a for o in out for a in _flat(o)]
    return [] if out is None else [out]


def _train_alongside(mod, ref, make_inputs, steps: int = 20, lr: float = 0.1, tol=1e-6):
    """Same weights, same inputs, `steps` SGD steps on sum(output * w): outputs, gradients
    and parameters agree at every step."""
    _load(mod, ref)
    has_params = bool(list(ref.parameters()))
    if has_params:
        opt = rg.optim.SGD(mod.parameters(), lr=lr, momentum=0.9)
        opt_t = torch.optim.SGD(ref.parameters(), lr=lr, momentum=0.9)
    names = [n for n, _ in ref.named_parameters()]
    for _ in range(steps):
        inputs = make_inputs()
        out = mod(*_as_rg(inputs))
        out_t = ref(*_as_torch(inputs))
        for a, b in zip(_flat(out), _flat(out_t)):
            assert a.shape == tuple(b.shape)
            np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=tol, atol=tol)
        if not has_params:
            continue
        w = RNG.standard_normal(tuple(_first(out_t).shape))
        opt.zero_grad()
        opt_t.zero_grad()
        (_first(out) * rg.tensor(w)).sum().backward()
        (_first(out_t) * torch.tensor(w)).sum().backward()
        grads = dict(mod.named_parameters())
        for n, p in ref.named_parameters():
            if p.grad is None:
                assert grads[n].grad is None or not grads[n].grad.numpy().any(), n
                continue
            scale = max(1.0, float(p.grad.abs().max()))  # cancellation is relative to it
            np.testing.assert_allclose(grads[n].grad.numpy(), p.grad.numpy(), rtol=tol,
                                       atol=tol * scale, err_msg=n)
        opt.step()
        opt_t.step()
    for n, (a, b) in zip(names, zip(mod.parameters(), ref.parameters())):
        np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=tol, atol=tol,
                                   err_msg=n)
    for (n, a), (_, b) in zip(mod.named_buffers(), ref.named_buffers()):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=tol, atol=tol, err_msg=n)


def _roundtrip(mod, tmp_path):
    """rg.save/rg.load of the state_dict restores every parameter and buffer."""
    path = tmp_path / "m.rgt"
    rg.save(mod.state_dict(), str(path))
    loaded = rg.load(str(path))
    assert list(loaded) == list(mod.state_dict())
    for k, v in mod.state_dict().items():
        assert np.asarray(loaded[k].data if isinstance(loaded[k], rg.Tensor) else loaded[k]
                          ).dtype == v.dtype
        np.testing.assert_array_equal(np.asarray(loaded[k].data if isinstance(
            loaded[k], rg.Tensor) else loaded[k]), v.numpy())
    return loaded


def _x(*shape):
    return lambda: RNG.standard_normal(shape)


# ---------------------------------------------------------------- normalisation

@pytest.mark.parametrize("kwargs", [{}, {"elementwise_affine": False}, {"bias": False}])
def test_layer_norm_trains_like_torch(kwargs, tmp_path):
    mod = nn.LayerNorm((3, 4), dtype=rg.float64, **kwargs)
    ref = torch.nn.LayerNorm((3, 4), dtype=torch.float64, **kwargs)
    _train_alongside(mod, ref, lambda: (RNG.standard_normal((2, 3, 4)),))
    _roundtrip(mod, tmp_path)


def test_rms_norm_and_group_norm_train_like_torch():
    _train_alongside(nn.RMSNorm(5, dtype=rg.float64), torch.nn.RMSNorm(5, dtype=torch.float64),
                     lambda: (RNG.standard_normal((3, 5)),))
    _train_alongside(nn.GroupNorm(2, 6, dtype=rg.float64),
                     torch.nn.GroupNorm(2, 6, dtype=torch.float64),
                     lambda: (RNG.standard_normal((3, 6, 4)),))


@pytest.mark.parametrize("cls,shape", [("BatchNorm1d", (8, 3)), ("BatchNorm1d", (4, 3, 5)),
                                       ("BatchNorm2d", (4, 3, 2, 2))])
@pytest.mark.parametrize("momentum", [0.1, None])
def test_batch_norm_running_stats_train_and_eval_like_torch(cls, shape, momentum, tmp_path):
    mod = getattr(nn, cls)(3, momentum=momentum, dtype=rg.float64)
    ref = getattr(torch.nn, cls)(3, momentum=momentum, dtype=torch.float64)
    assert [n for n, _ in mod.named_buffers()] == [n for n, _ in ref.named_buffers()]
    _train_alongside(mod, ref, lambda: (RNG.standard_normal(shape) * 2 + 1,))
    assert int(mod.num_batches_tracked.item()) == 20
    mod.eval()
    ref.eval()
    x = RNG.standard_normal(shape)
    np.testing.assert_allclose(mod(rg.tensor(x)).numpy(), ref(torch.tensor(x)).detach().numpy(),
                               rtol=1e-10, atol=1e-12)
    before = mod.running_mean.numpy().copy()
    mod(rg.tensor(x))
    np.testing.assert_array_equal(mod.running_mean.numpy(), before)  # eval: no update
    loaded = _roundtrip(mod, tmp_path)
    assert "num_batches_tracked" in loaded and "running_var" in loaded
    fresh = getattr(nn, cls)(3, momentum=momentum, dtype=rg.float64)
    fresh.load_state_dict(loaded)
    np.testing.assert_array_equal(fresh.running_var.numpy(), mod.running_var.numpy())


def test_batch_norm_without_running_stats_uses_batch_statistics():
    mod = nn.BatchNorm1d(3, track_running_stats=False, affine=False, dtype=rg.float64)
    ref = torch.nn.BatchNorm1d(3, track_running_stats=False, affine=False, dtype=torch.float64)
    assert list(mod.state_dict()) == list(ref.state_dict()) == []
    x = RNG.standard_normal((5, 3))
    mod.eval()
    ref.eval()
    np.testing.assert_allclose(mod(rg.tensor(x)).numpy(), ref(torch.tensor(x)).numpy(),
                               rtol=1e-12)


def test_normalisation_errors_name_arguments_and_shapes():
    with pytest.raises(ValueError, match=r"normalized_shape=\[4\].*\[2, 3\]"):
        nn.LayerNorm(4)(rg.randn(2, 3))
    with pytest.raises(ValueError, match=r"expected 3 features.*\(4, 5\)"):
        nn.BatchNorm1d(3)(rg.randn(4, 5))
    with pytest.raises(ValueError, match=r"4-D input, got shape \(4, 3\)"):
        nn.BatchNorm2d(3)(rg.randn(4, 3))
    with pytest.raises(ValueError, match=r"divisible by num_groups"):
        nn.GroupNorm(4, 6)


# ---------------------------------------------------------------- embedding

def test_embedding_trains_like_torch_and_from_pretrained(tmp_path):
    mod = nn.Embedding(6, 4, padding_idx=1, dtype=rg.float64)
    ref = torch.nn.Embedding(6, 4, padding_idx=1, dtype=torch.float64)
    assert not mod.weight.numpy()[1].any()
    idx = lambda: (RNG.integers(0, 6, (3, 5)),)  # noqa: E731
    _train_alongside(mod, ref, idx)
    _roundtrip(mod, tmp_path)
    w = RNG.standard_normal((5, 3))
    frozen = nn.Embedding.from_pretrained(rg.tensor(w))
    assert not frozen.weight.requires_grad
    np.testing.assert_array_equal(frozen(rg.tensor([4, 0])).numpy(), w[[4, 0]])
    assert nn.Embedding.from_pretrained(w, freeze=False).weight.requires_grad
    with pytest.raises(IndexError, match="index 6 is out of range for 6"):
        mod(rg.tensor([6]))
    with pytest.raises(TypeError, match="integer indices"):
        mod(rg.tensor([1.0]))


# ---------------------------------------------------------------- recurrent

@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize("layers,bidirectional,batch_first", [(1, False, False),
                                                               (2, True, True)])
def test_recurrent_layers_train_like_torch(kind, layers, bidirectional, batch_first,
                                           tmp_path):
    kw = dict(num_layers=layers, bidirectional=bidirectional, batch_first=batch_first)
    mod = getattr(nn, kind)(3, 4, dtype=rg.float64, **kw)
    ref = getattr(torch.nn, kind)(3, 4, dtype=torch.float64, **kw)
    assert [n for n, _ in mod.named_parameters()] == [n for n, _ in ref.named_parameters()]
    dirs = 2 if bidirectional else 1
    shape = (2, 5, 3) if batch_first else (5, 2, 3)

    def inputs():
        h = RNG.standard_normal((layers * dirs, 2, 4))
        if kind == "LSTM":
            return RNG.standard_normal(shape), (h, RNG.standard_normal((layers * dirs, 2, 4)))
        return RNG.standard_normal(shape), h

    _train_alongside(mod, ref, inputs, lr=0.05)
    _roundtrip(mod, tmp_path)


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_recurrent_layers_unbatched_without_state_and_relu(kind):
    kw = {"nonlinearity": "relu"} if kind == "RNN" else {}
    mod = getattr(nn, kind)(3, 4, bias=False, dtype=rg.float64, **kw)
    ref = getattr(torch.nn, kind)(3, 4, bias=False, dtype=torch.float64, **kw)
    _train_alongside(mod, ref, lambda: (RNG.standard_normal((6, 3)),), steps=3)


def test_recurrent_initialisation_and_dropout_between_layers():
    rg.manual_seed(0)
    lstm = nn.LSTM(8, 16, num_layers=2, dropout=0.5)
    bound = 1 / 4
    for p in lstm.parameters():
        assert np.abs(p.numpy()).max() <= bound and p.numpy().std() > bound / 3
    assert lstm.weight_ih_l1.shape == (64, 16) and lstm.bias_hh_l0.shape == (64,)
    x = rg.randn(5, 2, 8)
    train_out = lstm(x)[0].numpy()
    lstm.eval()
    eval_out = lstm(x)[0].numpy()
    assert not np.allclose(train_out, eval_out)
    np.testing.assert_array_equal(lstm(x)[0].numpy(), eval_out)


@pytest.mark.parametrize("kind", ["RNNCell", "LSTMCell", "GRUCell"])
def test_cells_train_like_torch(kind):
    mod = getattr(nn, kind)(3, 4, dtype=rg.float64)
    ref = getattr(torch.nn, kind)(3, 4, dtype=torch.float64)

    def inputs():
        h = RNG.standard_normal((2, 4))
        if kind == "LSTMCell":
            return RNG.standard_normal((2, 3)), (h, RNG.standard_normal((2, 4)))
        return RNG.standard_normal((2, 3)), h

    _train_alongside(mod, ref, inputs)
    _train_alongside(mod, ref, lambda: (RNG.standard_normal(3),), steps=2)


def test_recurrent_errors_name_sizes():
    lstm = nn.LSTM(4, 6, num_layers=2)
    with pytest.raises(ValueError, match=r"input_size. Expected 4, got 3"):
        lstm(rg.randn(5, 2, 3))
    with pytest.raises(ValueError, match=r"2-D.*3-D.*\(5,\)"):
        lstm(rg.randn(5))
    with pytest.raises(ValueError, match=r"h_0 of shape \(2, 2, 6\), got \(1, 2, 6\)"):
        lstm(rg.randn(5, 2, 4), (rg.zeros(1, 2, 6), rg.zeros(2, 2, 6)))
    with pytest.raises(ValueError, match=r"GRU: hx of shape \(1, 3, 2\)"):
        nn.GRU(1, 2)(rg.randn(4, 3, 1), rg.zeros(1, 2, 2))
    with pytest.raises(ValueError, match="nonlinearity"):
        nn.RNN(2, 3, nonlinearity="sigmoid")
    with pytest.raises(ValueError, match=r"LSTMCell: expected input of shape \(N, 3\)"):
        nn.LSTMCell(3, 2)(rg.randn(2, 4))


# ---------------------------------------------------------------- attention

@pytest.mark.parametrize("batch_first", [False, True])
def test_multihead_attention_trains_like_torch(batch_first, tmp_path):
    mod = nn.MultiheadAttention(8, 2, batch_first=batch_first, dtype=rg.float64)
    ref = torch.nn.MultiheadAttention(8, 2, batch_first=batch_first, dtype=torch.float64)
    assert [n for n, _ in mod.named_parameters()] == [n for n, _ in ref.named_parameters()]
    lq, ls, n = 3, 4, 2

    def shape(L):
        return (n, L, 8) if batch_first else (L, n, 8)

    pad = np.zeros((n, ls), bool)
    pad[0, -1] = True
    causal = np.triu(np.ones((lq, ls), bool), 1)

    def inputs():
        q, kv = RNG.standard_normal(shape(lq)), RNG.standard_normal(shape(ls))
        return q, kv, kv, pad, True, causal

    _train_alongside(mod, ref, inputs)
    q = RNG.standard_normal(shape(lq))
    float_mask = RNG.standard_normal((n * 2, lq, lq))
    out = mod(rg.tensor(q), rg.tensor(q), rg.tensor(q), attn_mask=rg.tensor(float_mask),
              average_attn_weights=False)
    out_t = ref(torch.tensor(q), torch.tensor(q), torch.tensor(q),
                attn_mask=torch.tensor(float_mask), average_attn_weights=False)
    for a, b in zip(out, out_t):  # after 20 steps the values may be large (~1e7): the
        scale = max(1.0, float(b.abs().max()))  # rounding is relative to the largest
        np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=1e-9,
                                   atol=1e-10 * scale)
    _roundtrip(mod, tmp_path)


def test_multihead_attention_kdim_vdim_unbatched_and_no_weights():
    mod = nn.MultiheadAttention(6, 3, kdim=4, vdim=5, dtype=rg.float64)
    ref = torch.nn.MultiheadAttention(6, 3, kdim=4, vdim=5, dtype=torch.float64)
    assert [n for n, _ in mod.named_parameters()] == [n for n, _ in ref.named_parameters()]
    _train_alongside(mod, ref, lambda: (RNG.standard_normal((3, 6)), RNG.standard_normal((4, 4)),
                                        RNG.standard_normal((4, 5))), steps=3)
    out, w = mod(rg.randn(3, 2, 6, dtype=rg.float64), rg.randn(4, 2, 4, dtype=rg.float64),
                 rg.randn(4, 2, 5, dtype=rg.float64), need_weights=False)
    assert w is None and out.shape == (3, 2, 6)


def test_multihead_attention_errors_name_masks_and_shapes():
    mha = nn.MultiheadAttention(8, 2)
    q = rg.randn(3, 2, 8)
    with pytest.raises(ValueError, match=r"2-D attn_mask is \(3, 3\).*\(3, 4\)"):
        mha(q, rg.randn(4, 2, 8), rg.randn(4, 2, 8), attn_mask=rg.zeros(3, 3))
    with pytest.raises(ValueError, match=r"key_padding_mask shape of \(2, 3\).*\(3, 2\)"):
        mha(q, q, q, key_padding_mask=rg.zeros(3, 2, dtype=rg.bool_))
    with pytest.raises(ValueError, match=r"embedding dimension of 8.*\(3, 2, 7\)"):
        mha(rg.randn(3, 2, 7), q, q)
    with pytest.raises(ValueError, match="divisible by num_heads"):
        nn.MultiheadAttention(7, 2)


@pytest.mark.parametrize("norm_first,activation", [(False, "relu"), (True, "gelu")])
def test_transformer_encoder_trains_like_torch(norm_first, activation, tmp_path):
    kw = dict(dim_feedforward=16, dropout=0.0, activation=activation, batch_first=True,
              norm_first=norm_first)
    layer = nn.TransformerEncoderLayer(8, 2, dtype=rg.float64, **kw)
    ref = torch.nn.TransformerEncoderLayer(8, 2, dtype=torch.float64, **kw)
    mask = np.zeros((2, 5), bool)
    mask[1, 3:] = True
    _train_alongside(layer, ref, lambda: (RNG.standard_normal((2, 5, 8)), None, mask), steps=10,
                     lr=0.01)
    enc = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(8, dtype=rg.float64))
    enc_t = torch.nn.TransformerEncoder(ref, 2, norm=torch.nn.LayerNorm(8, dtype=torch.float64),
                                        enable_nested_tensor=False)
    assert list(enc.state_dict()) == list(enc_t.state_dict())
    _train_alongside(enc, enc_t, lambda: (RNG.standard_normal((2, 5, 8)),), steps=5, lr=0.01)
    assert enc.layers[0].linear1.weight is not enc.layers[1].linear1.weight
    _roundtrip(enc, tmp_path)


# ---------------------------------------------------------------- containers and buffers

def test_containers_register_like_torch():
    d = nn.ModuleDict({"a": nn.Linear(2, 3), "b": nn.LayerNorm(3)})
    d["c"] = nn.Linear(3, 1)
    d_t = torch.nn.ModuleDict({"a": torch.nn.Linear(2, 3), "b": torch.nn.LayerNorm(3)})
    d_t["c"] = torch.nn.Linear(3, 1)
    assert list(d.state_dict()) == list(d_t.state_dict())
    assert list(d) == ["a", "b", "c"] and "b" in d and len(d) == 3
    del d["a"]
    assert list(d.keys()) == ["b", "c"]
    pl = nn.ParameterList([nn.Parameter(rg.zeros(2)), rg.ones(3)])
    pl.append(rg.ones(1))
    pl_t = torch.nn.ParameterList([torch.zeros(2), torch.ones(3), torch.ones(1)])
    assert list(pl.state_dict()) == list(pl_t.state_dict())
    assert all(isinstance(p, nn.Parameter) for p in pl) and len(list(pl.parameters())) == 3
    pd = nn.ParameterDict({"w": rg.ones(2)})
    assert list(pd.state_dict()) == ["w"] and pd["w"].requires_grad
    with pytest.raises(TypeError, match="Parameters"):
        pl.append(3.0)
    u = nn.Unflatten(1, (2, 3))
    assert u(rg.zeros(4, 6)).shape == (4, 2, 3)


def test_buffers_are_saved_moved_and_loaded():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(2, 2)
            self.register_buffer("stat", rg.zeros(2))
            self.register_buffer("scratch", rg.ones(3), persistent=False)

    class MT(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(2, 2)
            self.register_buffer("stat", torch.zeros(2))
            self.register_buffer("scratch", torch.ones(3), persistent=False)

    m = M()
    assert list(m.state_dict()) == list(MT().state_dict()) == ["stat", "lin.weight", "lin.bias"]
    assert [n for n, _ in m.named_buffers()] == ["stat", "scratch"]
    m.double()
    assert m.stat.dtype == np.float64 and m.scratch.dtype == np.float64
    m.load_state_dict({"lin.weight": np.eye(2), "lin.bias": np.zeros(2), "stat": np.ones(2)})
    np.testing.assert_array_equal(m.stat.numpy(), np.ones(2))
    with pytest.raises(RuntimeError, match="size mismatch for stat"):
        m.load_state_dict({"lin.weight": np.eye(2), "lin.bias": np.zeros(2),
                           "stat": np.ones(3)})
