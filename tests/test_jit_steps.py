"""rg.jit of whole training steps as people write them: zero_grad first or last, gradient
clipping, small MLPs with several layer kinds and losses, batch shapes that change between
calls, BatchNorm's cumulative average and attention masks passed as arguments. Each jitted
run is compared with the same run in eager mode (itself checked against PyTorch elsewhere),
and the clipping itself with torch."""

import math

import numpy as np
import pytest
import torch

import retrograd as rg
from retrograd import nn, optim
from retrograd.jit import JitError
from retrograd.nn import functional as F

SIZES = [6, 6, 6, 5, 5, 6, 7]  # batch sizes call by call: each new one retraces

LAYERS = {
    "relu": lambda: [nn.Linear(4, 5), nn.ReLU(), nn.Linear(5, 3)],
    "tanh": lambda: [nn.Linear(4, 5), nn.Tanh(), nn.Linear(5, 3)],
    "gelu": lambda: [nn.Linear(4, 5), nn.GELU(), nn.Linear(5, 3)],
    "layernorm": lambda: [nn.Linear(4, 5), nn.LayerNorm(5), nn.ReLU(), nn.Linear(5, 3)],
    "dropout-eval": lambda: [nn.Linear(4, 5), nn.ReLU(), nn.Dropout(0.5), nn.Linear(5, 3)],
}
OPTIMS = [("SGD", dict(lr=0.1, momentum=0.9)), ("Adam", dict(lr=1e-2)),
          ("AdamW", dict(lr=1e-2)), ("RMSprop", dict(lr=1e-2)), ("Adagrad", dict(lr=0.1)),
          ("NAdam", dict(lr=1e-2)), ("Adamax", dict(lr=1e-2)), ("SGD", dict(lr=0.1))]
CASES = [  # (layers, optimizer, loss, clipping, where zero_grad goes)
    ("relu", 0, "ce", None, "first"), ("tanh", 1, "mse", "norm", "first"),
    ("gelu", 2, "ce", "value", "first"), ("layernorm", 3, "mse", "norm", "first"),
    ("dropout-eval", 4, "ce", "norm", "first"), ("relu", 5, "ce", "norm", "first"),
    ("tanh", 6, "mse", None, "first"), ("gelu", 7, "ce", "norm", "first"),
    ("layernorm", 5, "ce", "value", "last"), ("relu", 1, "mse", "norm", "last"),
    ("tanh", 0, "ce", "norm", "module"), ("gelu", 3, "mse", "value", "zeros"),
]


def _train(layers, opt_k, loss, clip, zero, use_jit, dtype=np.float32):
    rg.manual_seed(0)
    model = nn.Sequential(*LAYERS[layers]()).to(dtype)
    if layers == "dropout-eval":
        model.eval()
    name, kw = OPTIMS[opt_k]
    opt = getattr(optim, name)(model.parameters(), **kw)

    def step(x, y):
        if zero == "first":
            opt.zero_grad()
        out = model(x)
        value = F.cross_entropy(out, y) if loss == "ce" else F.mse_loss(out, y)
        if zero == "last":
            opt.zero_grad()
        elif zero == "module":
            model.zero_grad()
        elif zero == "zeros":
            opt.zero_grad(set_to_none=False)
        value.backward()
        if clip == "norm":
            nn.utils.clip_grad_norm_(model.parameters(), 0.05)
        elif clip == "value":
            nn.utils.clip_grad_value_(model.parameters(), 0.01)
        opt.step()
        return value

    run = rg.jit(step) if use_jit else step
    r = np.random.default_rng(1)
    losses = []
    for n in SIZES:
        x = rg.tensor(r.standard_normal((n, 4)).astype(dtype))
        y = rg.tensor(r.integers(0, 3, n)) if loss == "ce" else \
            rg.tensor(r.standard_normal((n, 3)).astype(dtype))
        losses.append(run(x, y).item())
    return model, np.array(losses), run


@pytest.mark.parametrize("layers,opt_k,loss,clip,zero", CASES,
                         ids=[f"{c[0]}-{OPTIMS[c[1]][0]}-{c[2]}-{c[3]}-{c[4]}" for c in CASES])
def test_mlp_training_step_replays_like_eager(layers, opt_k, loss, clip, zero):
    m_eager, l_eager, _ = _train(layers, opt_k, loss, clip, zero, False)
    m_jit, l_jit, run = _train(layers, opt_k, loss, clip, zero, True)
    assert np.ptp(l_eager) > 1e-4
    np.testing.assert_allclose(l_jit, l_eager, rtol=1e-6, atol=1e-7)
    for p, q in zip(m_jit.parameters(), m_eager.parameters(), strict=True):
        np.testing.assert_allclose(p.data, q.data, rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(p.grad.data, q.grad.data, rtol=1e-6, atol=1e-7)
    assert run.trace_count <= 6  # three batch sizes, each with at most one eager first call


def _torch_clipped(ws, gs, max_norm, norm_type):
    ts = [torch.tensor(w, requires_grad=True) for w in ws]
    for t, g in zip(ts, gs):
        t.grad = torch.tensor(g)
    total = torch.nn.utils.clip_grad_norm_((t for t in ts), max_norm, norm_type)
    return total.item(), [t.grad.numpy() for t in ts]


@pytest.mark.parametrize("norm_type", [2.0, 1.0, math.inf])
@pytest.mark.parametrize("use_jit", [False, True])
def test_clip_grad_norm_of_a_generator_clips_like_torch(norm_type, use_jit):
    r = np.random.default_rng(2)
    ws = [r.standard_normal((4, 3)), r.standard_normal(3)]
    model_params = [rg.tensor(w, requires_grad=True) for w in ws]

    def clip():
        return nn.utils.clip_grad_norm_((p for p in model_params), 0.5, norm_type)

    run = rg.jit(clip) if use_jit else clip
    for _ in range(3):
        gs = [r.standard_normal(w.shape) for w in ws]
        for p, g in zip(model_params, gs):
            p.grad = rg.tensor(g.copy())
        total = run()
        want_total, want = _torch_clipped(ws, gs, 0.5, norm_type)
        assert total.item() == pytest.approx(want_total, rel=1e-12)
        for p, w in zip(model_params, want):
            np.testing.assert_allclose(p.grad.data, w, rtol=1e-12)
            assert np.abs(p.grad.data).max() < np.abs(gs[0]).max()  # really clipped


def test_gradients_clipped_in_place_then_stepped_are_written_back_in_order():
    """.grad tensors that exist before the call and parameters are both written in place:
    each must get its own value back (not the other's)."""
    def make():
        rg.manual_seed(0)
        return nn.Linear(4, 3).double()

    def run(use_jit):
        model = make()
        opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

        def update():
            nn.utils.clip_grad_norm_(model.parameters(), 0.1)
            opt.step()

        f = rg.jit(update) if use_jit else update
        r = np.random.default_rng(3)
        for _ in range(5):
            opt.zero_grad()
            (model(rg.tensor(r.standard_normal((5, 4)))) ** 2).sum().backward()
            f()
        return model

    m_eager, m_jit = run(False), run(True)
    for p, q in zip(m_jit.parameters(), m_eager.parameters(), strict=True):
        np.testing.assert_allclose(p.data, q.data, rtol=1e-13)
        np.testing.assert_allclose(p.grad.data, q.grad.data, rtol=1e-13)


def test_clip_grad_norm_error_if_nonfinite_is_refused_inside_jit():
    w = rg.tensor(np.ones(3), requires_grad=True)
    w.grad = rg.tensor(np.ones(3))
    f = rg.jit(lambda: nn.utils.clip_grad_norm_([w], 1.0, error_if_nonfinite=True))
    with pytest.raises(JitError, match="error_if_nonfinite"):
        f()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_batchnorm_cumulative_average_running_stats_under_jit(dtype):
    def make():
        rg.manual_seed(0)
        return nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3, momentum=None)).to(dtype)

    eager, traced = make(), make()
    f = rg.jit(lambda x: traced(x).sum())
    tm = torch.nn.BatchNorm1d(3, momentum=None, dtype=getattr(torch, np.dtype(dtype).name))
    r = np.random.default_rng(4)
    for _ in range(6):
        x = rg.tensor(r.standard_normal((5, 4)).astype(dtype))
        np.testing.assert_allclose(f(x).data, eager(x).sum().data, rtol=1e-6)
        with torch.no_grad():
            tm(torch.tensor(eager[0](x).data))
    bn_e, bn_j = eager[1], traced[1]
    assert bn_j.num_batches_tracked.item() == bn_e.num_batches_tracked.item() == 6
    for name in ("running_mean", "running_var"):
        got, want = getattr(bn_j, name).data, getattr(bn_e, name).data
        assert got.dtype == want.dtype == dtype
        np.testing.assert_array_equal(got, want)
        np.testing.assert_allclose(want, getattr(tm, name).numpy(), rtol=1e-5)
    assert f.trace_count == 1


def test_attention_bool_mask_passed_as_an_argument_is_read_at_each_call():
    rg.manual_seed(0)
    mha = nn.MultiheadAttention(4, 2, batch_first=True).double()
    f = rg.jit(lambda x, m: mha(x, x, x, key_padding_mask=m)[0])
    r = np.random.default_rng(5)
    x = rg.tensor(r.standard_normal((2, 3, 4)))
    for mask in ([[False, False, True], [False, True, True]],
                 [[True, False, False], [False, False, True]]):
        m = rg.tensor(np.array(mask))
        np.testing.assert_allclose(f(x, m).data, mha(x, x, x, key_padding_mask=m)[0].data,
                                   rtol=1e-12)
    assert f.trace_count == 1


class _Last(nn.Module):
    """A sequence layer's last step through a linear head (for the recurrent and attention
    layers, whose outputs are tuples)."""

    def __init__(self, body, width, pick=True):
        super().__init__()
        self.body, self.head, self.pick = body, nn.Linear(width, 3), pick

    def forward(self, x):
        y = self.body(x)
        return self.head((y[0] if self.pick else y)[:, -1])


KINDS = {
    "lstm": (lambda: _Last(nn.LSTM(4, 5, batch_first=True), 5), (6, 7, 4)),
    "gru": (lambda: _Last(nn.GRU(4, 5, batch_first=True), 5), (6, 7, 4)),
    "conv-pool": (lambda: nn.Sequential(nn.Conv2d(1, 2, 3, padding=1), nn.ReLU(),
                                        nn.MaxPool2d(2), nn.Flatten(), nn.Linear(32, 3)),
                  (6, 1, 8, 8)),
    "batchnorm2d": (lambda: nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.Flatten(),
                                          nn.Linear(72, 3)), (6, 1, 8, 8)),
    "groupnorm": (lambda: nn.Sequential(nn.Conv2d(1, 4, 3), nn.GroupNorm(2, 4), nn.Flatten(),
                                        nn.Linear(144, 3)), (6, 1, 8, 8)),
    "encoder": (lambda: _Last(nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0,
                                                         batch_first=True), 4, pick=False),
                (6, 7, 4)),
}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_layer_kinds_train_under_jit_like_eager(kind):
    """Ops whose forward hands its backward saved intermediates (layer_norm's rows and
    statistics, the LSTM's gates) are replayed with them."""
    def train(use_jit):
        rg.manual_seed(0)
        make, shape = KINDS[kind]
        model = make()
        opt = optim.Adam(model.parameters(), lr=1e-2)

        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss

        run = rg.jit(step) if use_jit else step
        r = np.random.default_rng(6)
        losses = [run(rg.tensor(r.standard_normal(shape).astype(np.float32)),
                      rg.tensor(r.integers(0, 3, shape[0]))).item() for _ in range(4)]
        return model, losses, run

    m_eager, l_eager, _ = train(False)
    m_jit, l_jit, run = train(True)
    np.testing.assert_allclose(l_jit, l_eager, rtol=1e-5, atol=1e-6)
    for p, q in zip(m_jit.parameters(), m_eager.parameters(), strict=True):
        np.testing.assert_allclose(p.data, q.data, rtol=1e-5, atol=1e-6)
    assert run.trace_count <= 2


def test_a_float32_parameter_gets_a_float32_gradient_under_jit_as_in_eager():
    import numpy as np

    import retrograd as rg

    w = rg.nn.Parameter(rg.ones(3))
    x = rg.tensor(np.ones((4, 3)))  # float64 input, float32 weight: x * w promotes

    def grads(x):
        return rg.autograd.grad((x * w).sum(), [w])[0]

    eager = grads(x)
    jitted = rg.jit(grads)
    for _ in range(2):
        got = jitted(x)
    assert eager.dtype == got.dtype == np.float32
    np.testing.assert_allclose(got.data, eager.data)
    second = rg.autograd.grad((x * w).sum(), [w], create_graph=True)[0]
    assert second.dtype == np.float32
