"""rg.nn against torch.nn: registration, state_dict names, every layer and loss (values and
gradients, float64), dropout modes, initialisation, and clear errors for bad labels."""

import math

import numpy as np
import pytest
import torch

import retrograd as rg
from retrograd import nn
from retrograd.nn import functional as F
from retrograd.nn import init

torch.set_num_threads(1)  # tiny ops: PyTorch's thread pool only adds overhead
TF = torch.nn.functional
TOL = dict(rtol=1e-10, atol=1e-12)


def _to_torch(x, grad=False):
    t = torch.tensor(np.array(x.data if isinstance(x, rg.Tensor) else x))
    return t.requires_grad_(grad) if t.is_floating_point() else t


def _same_weights(ours: nn.Module, theirs: torch.nn.Module) -> None:
    theirs.load_state_dict({k: torch.tensor(v.data) for k, v in ours.state_dict().items()})


def _check(fn_ours, fn_theirs, *arrays, grad_of=None, seed=0):
    """Compare values and the gradients of every float input under a random cotangent."""
    grad_of = range(len(arrays)) if grad_of is None else grad_of
    ours = [rg.Tensor(a, requires_grad=(i in grad_of and a.dtype.kind == "f"))
            if isinstance(a, np.ndarray) else a for i, a in enumerate(arrays)]
    theirs = [_to_torch(a, grad=(i in grad_of and a.dtype.kind == "f"))
              if isinstance(a, np.ndarray) else a for i, a in enumerate(arrays)]
    out, ref = fn_ours(*ours), fn_theirs(*theirs)
    np.testing.assert_allclose(out.data, ref.detach().numpy(), **TOL)
    assert out.shape == tuple(ref.shape)
    cot = np.random.default_rng(seed).standard_normal(out.shape)
    out.backward(rg.Tensor(cot))
    ref.backward(torch.tensor(cot))
    checked = 0
    for o, t in zip(ours, theirs):
        if isinstance(o, rg.Tensor) and o.requires_grad:
            np.testing.assert_allclose(o.grad.data, t.grad.numpy(), **TOL)
            checked += 1
    assert checked > 0


def _rng(seed=0):
    return np.random.default_rng(seed)


# ---------------------------------------------------------------- modules and registration

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))
        self.head = nn.Linear(4 * 4 * 4, 10)
        self.scale = nn.Parameter(rg.ones(1))
        self.not_a_param = rg.ones(3)

    def forward(self, x):
        return self.head(self.features(x).flatten(1)) * self.scale


class TNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.features = torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3, padding=1),
                                            torch.nn.ReLU(), torch.nn.MaxPool2d(2))
        self.head = torch.nn.Linear(4 * 4 * 4, 10)
        self.scale = torch.nn.Parameter(torch.ones(1))

    def forward(self, x):
        return self.head(self.features(x).flatten(1)) * self.scale


def test_state_dict_names_and_shapes_match_pytorch():
    ours, theirs = Net(), TNet()
    sd, tsd = ours.state_dict(), theirs.state_dict()
    assert list(sd) == list(tsd)
    assert [tuple(v.shape) for v in sd.values()] == [tuple(v.shape) for v in tsd.values()]
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]


def test_whole_model_matches_pytorch_forward_and_backward():
    ours, theirs = Net().double(), TNet().double()
    _same_weights(ours, theirs)
    x = _rng().standard_normal((3, 1, 8, 8))
    out = ours(rg.Tensor(x))
    ref = theirs(torch.tensor(x))
    np.testing.assert_allclose(out.data, ref.detach().numpy(), **TOL)
    out.sum().backward()
    ref.sum().backward()
    tparams = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():
        np.testing.assert_allclose(p.grad.data, tparams[name].grad.numpy(), **TOL, err_msg=name)


def test_registration_rules():
    net = Net()
    names = [n for n, _ in net.named_parameters()]
    assert "not_a_param" not in names
    assert len(list(net.parameters())) == 5
    assert [n for n, _ in net.named_children()] == ["features", "head"]
    assert [n for n, _ in net.named_modules()] == ["", "features", "features.0", "features.1",
                                                   "features.2", "head"]
    with pytest.raises(TypeError, match="scale"):
        net.scale = rg.ones(1)  # a plain tensor cannot replace a registered parameter
    net.head = None
    assert "head.weight" not in net.state_dict()
    del net.scale
    assert "scale" not in net.state_dict()


def test_shared_parameters_are_listed_once():
    lin = nn.Linear(3, 3)
    seq = nn.Sequential(lin, nn.ReLU(), lin)
    assert len(list(seq.parameters())) == 2
    assert list(seq.state_dict()) == ["0.weight", "0.bias", "2.weight", "2.bias"]


def test_module_needs_super_init():
    class Bad(nn.Module):
        def __init__(self):
            self.fc = nn.Linear(2, 2)

    with pytest.raises(AttributeError, match="super"):
        Bad()


def test_train_eval_reach_every_submodule():
    net = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.Dropout(0.5)))
    assert net.eval() is net
    assert all(not m.training for m in net.modules())
    net.train()
    assert all(m.training for m in net.modules())


def test_zero_grad_sets_none():
    lin = nn.Linear(3, 2)
    lin(rg.randn(4, 3)).sum().backward()
    assert lin.weight.grad is not None
    lin.zero_grad()
    assert lin.weight.grad is None and lin.bias.grad is None


def test_sequential_indexing_and_repr():
    seq = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    assert isinstance(seq[0], nn.Linear) and isinstance(seq[-1], nn.Linear)
    assert len(seq[1:]) == 2 and len(seq) == 3
    assert "(0): Linear(in_features=4, out_features=3, bias=True)" in repr(seq)
    with pytest.raises(IndexError):
        seq[5]


def test_parameter_is_a_tensor_in_arithmetic():
    p = nn.Parameter(rg.tensor([1.0, 2.0]))
    assert p.requires_grad and p.is_leaf
    (p * 3.0 + p * p).sum().backward()
    np.testing.assert_allclose(p.grad.data, [5.0, 7.0])


# ---------------------------------------------------------------- layers against torch

@pytest.mark.parametrize("xshape", [(5, 4), (2, 3, 4), (4,)])
@pytest.mark.parametrize("bias", [True, False])
def test_linear(xshape, bias):
    lin = nn.Linear(4, 3, bias=bias, dtype=rg.float64)
    tlin = torch.nn.Linear(4, 3, bias=bias, dtype=torch.float64)
    _same_weights(lin, tlin)
    x = _rng().standard_normal(xshape)
    _check(lambda x: lin(x), lambda x: tlin(x), x)
    for name, p in lin.named_parameters():
        np.testing.assert_allclose(p.grad.data, dict(tlin.named_parameters())[name].grad, **TOL)


@pytest.mark.parametrize("kw", [dict(), dict(stride=2, padding=1), dict(dilation=2, padding=2),
                                dict(groups=2, bias=False), dict(padding="same"),
                                dict(kernel_size=(2, 3), stride=(1, 2))])
def test_conv2d(kw):
    kw = dict(kw)
    k = kw.pop("kernel_size", 3)
    conv = nn.Conv2d(4, 6, k, dtype=rg.float64, **kw)
    tconv = torch.nn.Conv2d(4, 6, k, dtype=torch.float64, **kw)
    _same_weights(conv, tconv)
    x = _rng(1).standard_normal((2, 4, 7, 8))
    _check(lambda x: conv(x), lambda x: tconv(x), x)
    tparams = dict(tconv.named_parameters())
    for name, p in conv.named_parameters():
        np.testing.assert_allclose(p.grad.data, tparams[name].grad, **TOL)


@pytest.mark.parametrize("layer,tlayer", [
    (nn.MaxPool2d(2), torch.nn.MaxPool2d(2)),
    (nn.MaxPool2d(3, stride=2, padding=1), torch.nn.MaxPool2d(3, stride=2, padding=1)),
    (nn.AvgPool2d(2), torch.nn.AvgPool2d(2)),
    (nn.Flatten(), torch.nn.Flatten()),
    (nn.ReLU(), torch.nn.ReLU()), (nn.Tanh(), torch.nn.Tanh()),
    (nn.Sigmoid(), torch.nn.Sigmoid()), (nn.Softmax(1), torch.nn.Softmax(1)),
    (nn.LogSoftmax(1), torch.nn.LogSoftmax(1)), (nn.Identity(), torch.nn.Identity()),
])
def test_parameter_free_layers(layer, tlayer):
    x = _rng(2).standard_normal((2, 3, 6, 6))
    _check(lambda x: layer(x), lambda x: tlayer(x), x)


def test_functional_names_exist():
    for name in ("linear relu tanh sigmoid softmax log_softmax cross_entropy nll_loss mse_loss "
                 "binary_cross_entropy_with_logits conv2d max_pool2d avg_pool2d dropout").split():
        assert callable(getattr(F, name)), name


# ---------------------------------------------------------------- dropout

def test_dropout_train_and_eval():
    rg.manual_seed(0)
    drop = nn.Dropout(0.25)
    x = rg.ones(200, 50, dtype=rg.float64, requires_grad=True)
    y = drop(x)
    kept = y.data != 0
    assert 0.7 < kept.mean() < 0.8
    np.testing.assert_allclose(y.data[kept], 1 / 0.75)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.data, kept / 0.75)
    drop.eval()
    assert drop(x) is x
    assert F.dropout(x, 0.0) is x
    np.testing.assert_array_equal(F.dropout(x, 1.0).data, 0)
    with pytest.raises(ValueError, match="between 0 and 1"):
        nn.Dropout(1.5)


def test_dropout_is_reproducible():
    rg.manual_seed(3)
    a = F.dropout(rg.ones(100), 0.5).data
    rg.manual_seed(3)
    b = F.dropout(rg.ones(100), 0.5).data
    np.testing.assert_array_equal(a, b)


# ---------------------------------------------------------------- losses against torch

@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_mse_loss(reduction):
    r = _rng(3)
    _check(lambda a, b: nn.MSELoss(reduction=reduction)(a, b),
           lambda a, b: torch.nn.MSELoss(reduction=reduction)(a, b),
           r.standard_normal((4, 3)), r.standard_normal((4, 3)))


def test_mse_loss_warns_and_broadcasts_as_torch():
    with pytest.warns(UserWarning, match=r"target size \(\(4,\)\).*input size \(\(4, 1\)\)"):
        loss = F.mse_loss(rg.ones(4, 1), rg.zeros(4))
    assert loss.item() == 1.0
    with pytest.raises(ValueError, match=r"\(4, 2\).*\(3,\)"):
        F.mse_loss(rg.zeros(4, 2), rg.zeros(3))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("smoothing", [0.0, 0.1, 0.35])
def test_cross_entropy_fast_path(reduction, smoothing):
    r = _rng(4)
    z, y = r.standard_normal((6, 5)) * 3, r.integers(0, 5, 6)
    _check(lambda z, y: F.cross_entropy(z, y, reduction=reduction, label_smoothing=smoothing),
           lambda z, y: TF.cross_entropy(z, y, reduction=reduction, label_smoothing=smoothing),
           z, y, grad_of=[0])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cross_entropy_rows_far_apart_and_non_finite_match_pytorch(dtype):
    """One exp shift for all rows is the fast path; rows far below it must fall back."""
    rows = [[1000.0, 0.0, -3.0], [0.0, 1.0, 2.0], [-50.0, -49.0, -60.0], [3.0, 3.0, 3.0]]
    y = np.array([0, 2, 1, 1])
    for z in (np.array(rows), np.array(rows) / 100, np.array([[np.inf, 0, 1], [0, 1, 2]] * 2),
              np.array([[np.nan, 0, 1], [0, 1, 2]] * 2), np.array([[-np.inf, 0, 1]] * 4)):
        z = z.astype(dtype)
        ours = rg.Tensor(z, requires_grad=True)
        theirs = torch.tensor(z, requires_grad=True)
        loss, ref = F.cross_entropy(ours, rg.Tensor(y), reduction="sum"), \
            TF.cross_entropy(theirs, torch.tensor(y), reduction="sum")
        np.testing.assert_allclose(loss.data, ref.detach().numpy(), rtol=1e-5)
        loss.backward()
        ref.backward()
        np.testing.assert_allclose(ours.grad.data, theirs.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_cross_entropy_interleaved_forwards_and_repeated_backward():
    """The forward keeps its softmax for its backward: other losses computed in between
    (on the same scores with other labels, or on other scores), a second backward, and
    labels changed in place before the backward (read then, as a recomputation would)
    must all give PyTorch's gradients."""
    r = _rng(5)
    z_np = r.standard_normal((6, 5))
    labels = [r.integers(0, 5, 6) for _ in range(3)]
    z, tz = rg.Tensor(z_np, requires_grad=True), _to_torch(z_np, grad=True)
    y0, y1 = rg.Tensor(labels[0]), rg.Tensor(labels[1])
    a, b = F.cross_entropy(z, y0), F.cross_entropy(z, y1)
    c = F.cross_entropy(z * 2.0, y0, reduction="sum")
    a.backward(retain_graph=True)
    a.backward(retain_graph=True)
    c.backward()
    b.backward()
    ta = TF.cross_entropy(tz, torch.tensor(labels[0]))
    tb = TF.cross_entropy(tz, torch.tensor(labels[1]))
    tc = TF.cross_entropy(tz * 2.0, torch.tensor(labels[0]), reduction="sum")
    (2 * ta + tb + tc).backward()
    np.testing.assert_allclose(z.grad.data, tz.grad.numpy(), **TOL)
    y2 = rg.Tensor(labels[2].copy())
    d = F.cross_entropy(z, y2)
    y2.data[...] = labels[0]
    z.grad = None
    d.backward()
    tz.grad = None
    TF.cross_entropy(tz, torch.tensor(labels[0])).backward()
    np.testing.assert_allclose(z.grad.data, tz.grad.numpy(), **TOL)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
@pytest.mark.parametrize("case", ["weight", "ignore", "weight+ignore", "spatial", "probs",
                                  "probs+weight", "unbatched"])
def test_cross_entropy_general(reduction, smoothing, case):
    r = _rng(5)
    z = r.standard_normal((6, 4)) * 2
    y = r.integers(0, 4, 6)
    kw = {}
    if "weight" in case:
        kw["weight"] = r.uniform(0.5, 2.0, 4)
    if "ignore" in case:
        y[[1, 4]] = -100
    if case == "spatial":
        z, y = r.standard_normal((3, 4, 2, 5)), r.integers(0, 4, (3, 2, 5))
    if case.startswith("probs"):
        y = r.dirichlet(np.ones(4), 6)
    if case == "unbatched":
        z, y = z[0], y[0]
    _check(lambda z, y: F.cross_entropy(z, y, reduction=reduction, label_smoothing=smoothing,
                                        **{k: rg.Tensor(v) for k, v in kw.items()}),
           lambda z, y: TF.cross_entropy(z, y, reduction=reduction, label_smoothing=smoothing,
                                         **{k: torch.tensor(v) for k, v in kw.items()}),
           z, y if isinstance(y, np.ndarray) else np.asarray(y), grad_of=[0])


def test_cross_entropy_module():
    r = _rng(6)
    z, y = r.standard_normal((5, 3)), r.integers(0, 3, 5)
    _check(lambda z, y: nn.CrossEntropyLoss(label_smoothing=0.1)(z, y),
           lambda z, y: torch.nn.CrossEntropyLoss(label_smoothing=0.1)(z, y), z, y, grad_of=[0])


def test_cross_entropy_float32_stays_float32():
    z = rg.randn(4, 3, requires_grad=True)
    loss = F.cross_entropy(z, rg.tensor([0, 1, 2, 0]))
    assert loss.dtype == np.float32
    loss.backward()
    assert z.grad.dtype == np.float32


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
def test_nll_loss(reduction, weighted):
    r = _rng(7)
    lp = np.log(r.dirichlet(np.ones(4), 5))
    y = r.integers(0, 4, 5)
    y[2] = -100
    w = r.uniform(0.5, 2, 4) if weighted else None
    _check(lambda a, b: F.nll_loss(a, b, None if w is None else rg.Tensor(w),
                                   reduction=reduction),
           lambda a, b: TF.nll_loss(a, b, None if w is None else torch.tensor(w),
                                    reduction=reduction), lp, y, grad_of=[0])
    _check(lambda a, b: nn.NLLLoss(reduction=reduction)(a, b),
           lambda a, b: torch.nn.NLLLoss(reduction=reduction)(a, b), lp, y, grad_of=[0])


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("extra", [{}, {"weight": True}, {"pos_weight": True}])
def test_bce_with_logits(reduction, extra):
    r = _rng(8)
    x = r.standard_normal((4, 3)) * 4
    x[0, 0] = 0.0  # the kink of |x|: the gradient must still be sigmoid(0) - t
    t = r.uniform(0, 1, (4, 3))
    ours_kw, their_kw = {}, {}
    if "weight" in extra:
        w = r.uniform(0.5, 2, 3)
        ours_kw["weight"], their_kw["weight"] = rg.Tensor(w), torch.tensor(w)
    if "pos_weight" in extra:
        pw = r.uniform(0.5, 3, 3)
        ours_kw["pos_weight"], their_kw["pos_weight"] = rg.Tensor(pw), torch.tensor(pw)
    _check(lambda a, b: F.binary_cross_entropy_with_logits(a, b, reduction=reduction, **ours_kw),
           lambda a, b: TF.binary_cross_entropy_with_logits(a, b, reduction=reduction,
                                                            **their_kw), x, t)


def test_bce_with_logits_is_stable_for_large_logits():
    x = rg.tensor([-800.0, 800.0], dtype=rg.float64, requires_grad=True)
    loss = nn.BCEWithLogitsLoss(reduction="sum")(x, rg.tensor([1.0, 0.0], dtype=rg.float64))
    assert np.isfinite(loss.item()) and loss.item() == pytest.approx(1600.0)
    loss.backward()
    np.testing.assert_allclose(x.grad.data, [-1.0, 1.0])


# ---------------------------------------------------------------- bad labels

@pytest.mark.parametrize("target,exc,match", [
    ([0, 1, 10], IndexError, r"target 10 is out of bounds.*10 classes"),
    ([0, -1, 2], IndexError, r"target -1 is out of bounds"),
    ([0.0, 1.0, 2.0], TypeError, r"integer class indices"),
    ([[0], [1], [2]], ValueError, r"target of shape \(3, 1\).*expected class indices of shape "
                                  r"\(3,\)"),
    ([0, 1], ValueError, r"target of shape \(2,\).*\(3,\)"),
    ([True, False, True], TypeError, r"integer class indices"),
])
def test_cross_entropy_bad_labels(target, exc, match):
    z = rg.randn(3, 10, requires_grad=True)
    before = z.data.copy()
    with pytest.raises(exc, match=match):
        F.cross_entropy(z, rg.tensor(target))
    with pytest.raises(exc, match=match):
        nn.CrossEntropyLoss()(z, np.array(target))
    np.testing.assert_array_equal(z.data, before)
    assert z.grad is None


def test_nll_loss_bad_labels():
    with pytest.raises(IndexError, match="out of bounds"):
        F.nll_loss(rg.randn(2, 3), rg.tensor([0, 3]))
    with pytest.raises(TypeError, match="integer"):
        F.nll_loss(rg.randn(2, 3), rg.tensor([0.0, 1.0]))


def test_bad_reduction_is_named():
    with pytest.raises(ValueError, match="'average'"):
        F.cross_entropy(rg.randn(2, 3), rg.tensor([0, 1]), reduction="average")


def test_linear_shape_error_names_shapes():
    with pytest.raises(ValueError, match=r"\(2, 5\).*\(3, 4\)"):
        nn.Linear(4, 3)(rg.randn(2, 5))


# ---------------------------------------------------------------- initialisation

def test_default_linear_and_conv_init_follow_pytorch():
    rg.manual_seed(0)
    lin = nn.Linear(400, 300)
    bound = 1 / math.sqrt(400)
    assert np.abs(lin.weight.data).max() <= bound
    assert np.abs(lin.weight.data).max() > 0.99 * bound
    # U(-b, b) has standard deviation b / sqrt(3)
    assert lin.weight.data.std() == pytest.approx(bound / math.sqrt(3), rel=0.02)
    assert np.abs(lin.bias.data).max() <= bound
    conv = nn.Conv2d(8, 16, 3)
    cb = 1 / math.sqrt(8 * 9)
    assert np.abs(conv.weight.data).max() <= cb and np.abs(conv.bias.data).max() <= cb
    assert lin.weight.dtype == np.float32


def test_init_is_reproducible():
    rg.manual_seed(1)
    a = nn.Linear(5, 5).weight.data.copy()
    rg.manual_seed(1)
    np.testing.assert_array_equal(a, nn.Linear(5, 5).weight.data)


@pytest.mark.parametrize("fn,expected_std", [
    (lambda w: init.kaiming_uniform_(w, nonlinearity="relu"), math.sqrt(2 / 500)),
    (lambda w: init.kaiming_normal_(w, nonlinearity="relu"), math.sqrt(2 / 500)),
    (lambda w: init.kaiming_normal_(w, mode="fan_out", nonlinearity="relu"), math.sqrt(2 / 400)),
    (lambda w: init.xavier_uniform_(w), math.sqrt(2 / 900)),
    (lambda w: init.xavier_normal_(w, gain=2.0), 2 * math.sqrt(2 / 900)),
])
def test_init_distributions(fn, expected_std):
    rg.manual_seed(2)
    w = nn.Parameter(rg.zeros(400, 500))
    assert fn(w) is w
    assert w.data.std() == pytest.approx(expected_std, rel=0.02)
    assert abs(w.data.mean()) < 0.05 * expected_std


def test_init_uniform_bounds_and_constants():
    rg.manual_seed(3)
    w = rg.zeros(100, 200)
    init.xavier_uniform_(w)
    a = math.sqrt(6 / 300)
    assert np.abs(w.data).max() <= a and np.abs(w.data).max() > 0.98 * a
    init.zeros_(w)
    assert not w.data.any()
    init.ones_(w)
    assert (w.data == 1).all()
    assert init.calculate_gain("tanh") == pytest.approx(5 / 3)
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init.xavier_uniform_(rg.zeros(5))
