"""Gaps found by running PyTorch's ModuleInfo database (module_db: each nn module with its
constructor arguments, forward inputs and error inputs) on rg.nn: each case rebuilds the
input by hand and compares values, dtypes, shapes and float64 gradients with torch
computed here (or the exception type torch raises); the last tests run whole small models
built the way module_db builds them."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest
import torch
from port_compare import close, close_grads
from port_compare import pair as _pair
from port_compare import raise_alike as _raise_alike

import retrograd as rg


def _copy_state(tm, rm) -> None:
    """Load the torch module's state (parameters and buffers) into the retrograd one."""
    rm.load_state_dict({k: rg.tensor(v.detach().numpy().copy())
                        for k, v in tm.state_dict().items()})


# --------------------------------------------------- fractional max pool _random_samples

@pytest.mark.parametrize("nd,shape,rows", [(2, (4, 6, 6), 2), (2, (2, 4, 6, 6), 3),
                                           (3, (4, 5, 5, 5), 2), (3, (2, 3, 6, 6, 6), 4)])
def test_fractional_max_pool_takes_extra_random_sample_rows(nd, shape, rows):
    """_random_samples may have more rows than the batch (an unbatched input is a batch of
    one): the first rows are used, as in PyTorch (module_db's 'ratio_no_batch_dim')."""
    c = shape[-nd - 1]
    u = np.random.default_rng(1).random((rows, c, nd))
    xt, xr = _pair(shape)
    mt = getattr(torch.nn, f"FractionalMaxPool{nd}d")(2, output_ratio=0.5,
                                                      _random_samples=torch.tensor(u))
    mr = getattr(rg.nn, f"FractionalMaxPool{nd}d")(2, output_ratio=0.5,
                                                   _random_samples=rg.tensor(u))
    e, a = mt(xt), mr(xr)
    close(a, e)
    cot = np.random.default_rng(2).standard_normal(tuple(e.shape))
    # a scalar, not grad_outputs: torch's first grad_outputs imports sympy (seconds)
    close(rg.autograd.grad((a * rg.tensor(cot)).sum(), xr)[0],
          torch.autograd.grad((e * torch.tensor(cot)).sum(), xt)[0])


def test_fractional_max_pool_too_few_random_sample_rows_raise():
    u = np.random.default_rng(1).random((1, 4, 2))
    _raise_alike(lambda L: L.nn.functional.fractional_max_pool2d(
        L.zeros(2, 4, 6, 6, dtype=L.float64), 2, output_size=3,
        _random_samples=L.tensor(u)), RuntimeError)


# --------------------------------------------------- batch_norm eps

@pytest.mark.parametrize("d", [1, 2])
@pytest.mark.parametrize("eps", [0.0, -1.0])
def test_batch_norm_refuses_non_positive_eps_in_training(eps, d):
    """F.batch_norm (so BatchNorm*d in training) refuses eps <= 0 with ValueError."""
    shape = (2, 3) + (4,) * (d - 1)
    _raise_alike(lambda L: getattr(L.nn, f"BatchNorm{d}d")(3, eps=eps)(L.ones(*shape)),
                 ValueError)
    _raise_alike(lambda L: L.nn.functional.batch_norm(L.ones(2, 3), None, None, training=True,
                                                      eps=eps), ValueError)


def test_batch_norm_eps_in_eval():
    """Out of training eps = 0 is accepted (the same values), a negative one refused."""
    outs = []
    for L in (torch, rg):
        m = L.nn.BatchNorm1d(3, eps=0.0).double().eval()
        outs.append(m(L.tensor(np.arange(6.0).reshape(2, 3))))
    close(outs[1], outs[0])
    _raise_alike(lambda L: L.nn.functional.batch_norm(L.ones(2, 3), L.zeros(3), L.ones(3),
                                                      eps=-1.0), ValueError)


def test_aten_batch_norm_takes_any_eps():
    """torch.batch_norm and torch.native_batch_norm (ATen) do not check eps: only
    F.batch_norm does."""
    x = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 5.0]])
    rm, rv = np.zeros(3), np.ones(3)
    outs = []
    for L in (torch, rg):
        t = L.tensor(x)
        outs.append([L.batch_norm(t, None, None, None, None, True, 0.1, 0.0, False),
                     L.native_batch_norm(t, None, None, None, None, True, 0.1, 0.0)[0],
                     L.batch_norm(t, None, None, L.tensor(rm), L.tensor(rv), False, 0.1, -0.5,
                                  False)])
    for a, e in zip(*outs[::-1]):
        close(a, e)


# --------------------------------------------------- class targets

@pytest.mark.parametrize("ignore_index", [0, 1, 3])
def test_cross_entropy_probabilities_refuse_a_non_negative_ignore_index(ignore_index):
    """A float (probabilities) target takes no ignore_index: torch refuses any >= 0."""
    q = np.full((2, 3), 1 / 3)
    _raise_alike(lambda L: L.nn.CrossEntropyLoss(ignore_index=ignore_index)(
        L.zeros(2, 3, dtype=L.float64), L.tensor(q)), RuntimeError)
    _raise_alike(lambda L: L.nn.functional.cross_entropy(
        L.zeros(3, dtype=L.float64), L.tensor(q[0]), ignore_index=ignore_index), RuntimeError)


def test_cross_entropy_probabilities_negative_ignore_index_is_none():
    xt, xr = _pair((2, 3))
    q = np.random.default_rng(3).dirichlet(np.ones(3), 2)
    e = torch.nn.functional.cross_entropy(xt, torch.tensor(q), ignore_index=-1)
    a = rg.nn.functional.cross_entropy(xr, rg.tensor(q), ignore_index=-1)
    close(a, e)
    close(rg.autograd.grad(a, xr)[0], torch.autograd.grad(e, xt)[0])


@pytest.mark.parametrize("tshape,tdtype", [((5,), "int64"), ((5,), "float64"),
                                           ((5, 2), "float64"), ((3, 4), "float64")])
def test_class_target_batch_mismatch_is_a_value_error(tshape, tdtype):
    """A target whose batch differs from the input's: ValueError before any dtype check
    (cross_entropy, nll_loss, LinearCrossEntropyLoss), as in PyTorch."""
    t = np.zeros(tshape, dtype=tdtype)
    _raise_alike(lambda L: L.nn.functional.cross_entropy(L.zeros(4, 2, dtype=L.float64),
                                                         L.tensor(t)), ValueError)
    _raise_alike(lambda L: L.nn.functional.nll_loss(L.zeros(4, 2, dtype=L.float64),
                                                    L.tensor(t)), ValueError)
    _raise_alike(lambda L: L.nn.LinearCrossEntropyLoss(3, 2, dtype=L.float64)(
        L.zeros(4, 3, dtype=L.float64), L.tensor(t)), ValueError)


# --------------------------------------------------- constructors

@pytest.mark.parametrize("sizes", [(-1, 3), (3, -1)])
def test_embedding_negative_size_is_a_runtime_error(sizes):
    _raise_alike(lambda L: L.nn.Embedding(*sizes), RuntimeError)
    _raise_alike(lambda L: L.nn.EmbeddingBag(*sizes), RuntimeError)


@pytest.mark.parametrize("cls", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize("kw", [{"bias": 0}, {"bias": 1}, {"bias": "True"},
                                {"batch_first": 0}, {"batch_first": 1},
                                {"batch_first": "False"}])
def test_rnn_bool_flags_must_be_bools(cls, kw):
    """RNN/LSTM/GRU take bias and batch_first as bools only (TypeError otherwise)."""
    _raise_alike(lambda L: getattr(L.nn, cls)(3, 5, **kw), TypeError)


@pytest.mark.parametrize("nd,shape", [(1, (2, 3, 4, 5)), (1, (4,)), (2, (2, 3)),
                                      (2, (1, 2, 3, 4, 5)), (3, (2, 3, 4))])
def test_circular_pad_layer_checks_the_input_rank(nd, shape):
    """CircularPad{n}d takes (n+1)- or (n+2)-D inputs and says so with ValueError (F.pad
    itself refuses others with NotImplementedError)."""
    _raise_alike(lambda L: getattr(L.nn, f"CircularPad{nd}d")(1)(L.zeros(*shape)), ValueError)


# --------------------------------------------------- pickling after a view

def test_a_tensor_that_was_viewed_pickles():
    """A tensor some view (a slice, .view) was taken of pickles and deep-copies, as in torch:
    FractionalMaxPool2d slices its _random_samples in forward, and module_db's pickle test
    (and a DataLoader worker) pickles the module or the data afterwards."""
    for lib in (torch, rg):
        t = lib.arange(6.0).reshape(3, 2)
        views = (t[:, 0], t.view(6))
        for x in (t, views[0]):
            for y in (pickle.loads(pickle.dumps(x)), copy.deepcopy(x)):
                np.testing.assert_array_equal(y.numpy(), x.numpy())
    u = np.random.default_rng(0).random((1, 3, 2))
    xt, xr = _pair((1, 3, 5, 7), requires_grad=False)
    outs = []
    for lib, x in ((torch, xt), (rg, xr)):
        m = lib.nn.FractionalMaxPool2d(2, output_ratio=0.5, _random_samples=lib.tensor(u))
        m(x)
        outs.append(pickle.loads(pickle.dumps(m))(x))
    close(outs[1], outs[0])


# --------------------------------------------------- whole programs (module_db style)

def _twins(build):
    """build(lib) in torch (seeded, float64) and in retrograd with torch's state copied."""
    torch.manual_seed(0)
    tm = build(torch).double()
    rm = build(rg).double()
    _copy_state(tm, rm)
    return tm, rm


class _TorchAdam:
    """Adam written out for the torch side (torch.optim's first step imports torch._dynamo,
    seconds this file cannot spend); the retrograd side runs rg.optim.Adam."""

    def __init__(self, params, lr: float, betas=(0.9, 0.999), eps: float = 1e-8) -> None:
        self.params, self.lr, self.betas, self.eps, self.t = list(params), lr, betas, eps, 0
        self.m = [torch.zeros_like(p) for p in self.params]
        self.v = [torch.zeros_like(p) for p in self.params]

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self) -> None:
        (b1, b2), self.t = self.betas, self.t + 1
        for p, m, v in zip(self.params, self.m, self.v):
            if p.grad is None:
                continue
            m.mul_(b1).add_(p.grad, alpha=1 - b1)
            v.mul_(b2).addcmul_(p.grad, p.grad, value=1 - b2)
            den = (v / (1 - b2 ** self.t)).sqrt_().add_(self.eps)
            p.sub_(self.lr * (m / (1 - b1 ** self.t)) / den)


def _train(tm, rm, loss_t, loss_r, lr: float = 1e-2, steps: int = 3) -> None:
    """`steps` Adam steps in both libraries: losses, gradients, and the state after."""
    ot, orr = _TorchAdam(tm.parameters(), lr), rg.optim.Adam(rm.parameters(), lr=lr)
    for _ in range(steps):
        ot.zero_grad()
        orr.zero_grad()
        lt, lr_ = loss_t(), loss_r()
        close(lr_, lt, "loss", 1e-9)
        lt.backward()
        lr_.backward()
        close_grads(tm, rm)
        ot.step()
        orr.step()
    for k, v in tm.state_dict().items():
        close(rm.state_dict()[k], v, k, 1e-8)


def test_transformer_encoder_from_a_layer_trains_like_torch():
    """TransformerEncoder(encoder_layer, 2) as module_db builds it (gelu, norm_first,
    batch_first, a final norm) with a causal mask; Adam steps, then eval. (No key padding
    mask: torch's first one imports sympy, seconds this file cannot spend.)"""
    def build(L):
        layer = L.nn.TransformerEncoderLayer(8, 2, 16, 0.0, L.nn.functional.gelu,
                                             batch_first=True, norm_first=True)
        return L.nn.TransformerEncoder(layer, 2, norm=L.nn.LayerNorm(8),
                                       enable_nested_tensor=False)
    tm, rm = _twins(build)
    xt, xr = _pair((3, 5, 8), requires_grad=False)
    causal = np.triu(np.ones((5, 5), bool), 1)

    def loss(m, x, mask):
        y = m(x, mask=mask)
        return (y * y).mean()
    _train(tm, rm, lambda: loss(tm, xt, torch.tensor(causal)),
           lambda: loss(rm, xr, rg.tensor(causal)))
    tm.eval()
    rm.eval()
    with torch.no_grad(), rg.no_grad():
        close(rm(xr), tm(xt), "eval", 1e-8)


def test_conv_batchnorm_classifier_trains_like_torch():
    """Conv2d -> BatchNorm2d -> ReLU -> MaxPool2d -> CircularPad2d -> Conv2d -> GroupNorm ->
    AdaptiveAvgPool2d -> Linear, cross-entropy with label smoothing and class weights; Adam
    steps, then the running statistics and the eval output."""
    def build(L):
        nn = L.nn
        return nn.Sequential(nn.Conv2d(3, 6, 3, padding=1), nn.BatchNorm2d(6), nn.ReLU(),
                             nn.MaxPool2d(2), nn.CircularPad2d(1), nn.Conv2d(6, 4, 3),
                             nn.GroupNorm(2, 4), nn.AdaptiveAvgPool2d((2, 1)), nn.Flatten(),
                             nn.Linear(8, 5))
    tm, rm = _twins(build)
    xt, xr = _pair((4, 3, 8, 8), requires_grad=False)
    y = np.array([0, 3, 4, 1])
    w = np.linspace(0.5, 1.5, 5)
    ft = torch.nn.CrossEntropyLoss(weight=torch.tensor(w), label_smoothing=0.1)
    fr = rg.nn.CrossEntropyLoss(weight=rg.tensor(w), label_smoothing=0.1)
    _train(tm, rm, lambda: ft(tm(xt), torch.tensor(y)), lambda: fr(rm(xr), rg.tensor(y)))
    tm.eval()
    rm.eval()
    with torch.no_grad(), rg.no_grad():
        close(rm(xr), tm(xt), "eval", 1e-8)


def test_recurrent_stack_trains_like_torch():
    """A bidirectional 2-layer LSTM with projections fed an initial state, a GRU and an
    RNNCell loop over its output, as module_db's RNN inputs; Adam steps."""
    class Net:
        def __init__(self, L):
            nn = L.nn
            self.m = nn.ModuleDict({
                "lstm": nn.LSTM(3, 6, 2, batch_first=True, bidirectional=True, proj_size=2),
                "gru": nn.GRU(4, 5, bias=False),
                "cell": nn.RNNCell(5, 3, nonlinearity="relu")})

    def run(m, L, x, h0, c0):
        y, (h, c) = m["lstm"](x, (h0, c0))
        z, hz = m["gru"](y.transpose(0, 1))
        s = L.zeros(z.shape[1], 3, dtype=z.dtype)
        for t in range(z.shape[0]):
            s = m["cell"](z[t], s)
        return (s ** 2).sum() + (h * c[..., :2]).sum() + hz.mean()
    torch.manual_seed(0)
    tm = Net(torch).m.double()
    rm = Net(rg).m.double()
    _copy_state(tm, rm)
    xt, xr = _pair((2, 4, 3), requires_grad=False)
    ht, hr = _pair((4, 2, 2), 1, requires_grad=False)
    ct, cr = _pair((4, 2, 6), 2, requires_grad=False)
    _train(tm, rm, lambda: run(tm, torch, xt, ht, ct), lambda: run(rm, rg, xr, hr, cr),
           )


# --------------------------------------------------- reprs and attributes

@pytest.mark.parametrize("build", [
    lambda L: L.nn.AvgPool1d(2), lambda L: L.nn.AvgPool1d(3, 1, 1),
    lambda L: L.nn.RNNCell(5, 10, nonlinearity="relu"),
    lambda L: L.nn.RNNCell(5, 10, bias=False, nonlinearity="relu"),
    lambda L: L.nn.ZeroPad2d(1), lambda L: L.nn.ConstantPad1d(1, 2.5),
    lambda L: L.nn.ConstantPad3d((1, 0, 2, 0, 1, 1), 3), lambda L: L.nn.ReflectionPad1d(2),
    lambda L: L.nn.Conv2d(4, 5, 3, padding="same"), lambda L: L.nn.Conv1d(4, 5, 3, padding="valid"),
    lambda L: L.nn.LinearCrossEntropyLoss(5, 4, reduction="sum")])
def test_module_reprs_match(build):
    """module_db's modules print as torch's (the pooling sizes as tuples, RNNCell's relu,
    ConstantPad's padding=, ZeroPad's padding alone, padding=same unquoted)."""
    assert repr(build(rg)) == repr(build(torch))


def test_avg_pool1d_keeps_its_sizes_as_tuples():
    for lib in (torch, rg):
        m = lib.nn.AvgPool1d(3, padding=1)
        assert (m.kernel_size, m.stride, m.padding) == ((3,), (3,), (1,))


def test_relu6_has_hardtanh_bounds():
    for lib in (torch, rg):
        m = lib.nn.ReLU6()
        assert (m.min_val, m.max_val) == (0.0, 6.0)


# --------------------------------------------------- lazy modules

@pytest.mark.parametrize("make,shape", [(lambda L: L.nn.LazyLinear(3), (4, 5)),
                                        (lambda L: L.nn.LazyConv2d(2, 3), (1, 2, 5, 5)),
                                        (lambda L: L.nn.LazyBatchNorm1d(
                                            track_running_stats=False), (4, 5))])
def test_lazy_module_deepcopies_before_its_first_call(make, shape):
    """A lazy layer deep-copies before its first call (a copy of the placeholders that
    materialises on its own first call, the original untouched), as in torch."""
    shapes = []
    for L in (torch, rg):
        m = make(L)
        c = copy.deepcopy(m)
        c(L.ones(*shape))
        assert type(m.weight).__name__ == "UninitializedParameter"
        assert type(c).__name__ == type(m).__name__[4:]
        shapes.append([tuple(p.shape) for p in c.parameters()])
    assert shapes[0] == shapes[1]


def test_lazy_norm_with_running_stats_refuses_deepcopy_before_its_first_call():
    _raise_alike(lambda L: copy.deepcopy(L.nn.LazyBatchNorm1d()), ValueError)
