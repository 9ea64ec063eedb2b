"""More of torch.nn's layers and torch.nn.functional's functions against PyTorch's: each
module loaded with its torch twin's weights gives the same outputs and float64 gradients
(input and parameters), the same state_dict keys, the same train/eval behaviour, and bad
arguments raise torch's exception type. Randomised layers: statistics with a fixed seed,
and their deterministic (eval) path exactly."""

import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import retrograd as rg
import retrograd.nn as nn
import retrograd.nn.functional as F

RNG = np.random.default_rng(0)


@pytest.fixture(autouse=True)
def _seeded():
    """Fixed seeds; layers made in float64 (as their torch twins, made with .double())."""
    torch.manual_seed(0)
    rg.manual_seed(0)
    before = rg.get_default_dtype()
    rg.set_default_dtype(np.float64)
    yield
    rg.set_default_dtype(before)


def _x(*shape, scale=1.0):
    return RNG.standard_normal(shape) * scale


def _load(mod, ref) -> None:
    """Copy `ref`'s parameters and buffers into `mod`; their names must be torch's."""
    sd = ref.state_dict()
    assert list(mod.state_dict()) == list(sd)
    mod.load_state_dict({k: v.detach().numpy() for k, v in sd.items()})


def _same(a, b, tol=1e-10) -> None:
    if isinstance(b, (tuple, list)):
        assert len(a) == len(b)
        for u, v in zip(a, b):
            _same(u, v, tol)
        return
    b = b.detach().numpy()
    assert a.shape == b.shape, (a.shape, b.shape)
    if b.dtype.kind in "iub":
        np.testing.assert_array_equal(a.numpy(), b)
    else:
        np.testing.assert_allclose(a.numpy(), b, rtol=tol, atol=tol)


def _twin(mod, ref, *inputs, grad=True, tol=1e-10, load=True):
    """Same weights and float64 inputs: outputs, input gradients and parameter gradients
    of sum(out * w) for a random w agree."""
    if load:
        _load(mod, ref)
    xs = [rg.tensor(a, requires_grad=grad and a.dtype.kind == "f") for a in inputs]
    ts = [torch.tensor(a, requires_grad=grad and a.dtype.kind == "f") for a in inputs]
    out, out_t = mod(*xs), ref(*ts)
    _same(out, out_t, tol)
    if not grad:
        return out, out_t
    first, first_t = (out[0], out_t[0]) if isinstance(out, tuple) else (out, out_t)
    w = RNG.standard_normal(tuple(first_t.shape))
    (first * rg.tensor(w)).sum().backward()
    (first_t * torch.tensor(w)).sum().backward()
    for x, t in zip(xs, ts):
        if t.requires_grad and t.grad is None:  # no gradient path in torch: none or zeros
            assert x.grad is None or not x.grad.numpy().any()
        elif t.requires_grad:
            _same(x.grad, t.grad, tol)
    params = dict(mod.named_parameters())
    for name, p in ref.named_parameters():
        _same(params[name].grad, p.grad, tol)
    return out, out_t


def _raises_like(fn_rg, fn_torch, match=None):
    """Both raise; ours is (a subclass of) torch's exception type."""
    with pytest.raises(Exception) as want:
        fn_torch()
    with pytest.raises(want.type, match=match):
        fn_rg()


# ---------------------------------------------------------------- activations

@pytest.mark.parametrize("num", [1, 3])
@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 5), (2, 3, 2, 2)])
def test_prelu_matches_torch(num, shape):
    mod, ref = nn.PReLU(num), torch.nn.PReLU(num).double()
    with torch.no_grad():
        ref.weight.copy_(torch.tensor(RNG.uniform(-0.5, 0.5, num)))
    assert repr(mod) == repr(ref).replace("PReLU", "PReLU")
    _twin(mod, ref, _x(*shape))


def test_prelu_scalar_inputs_gradcheck_and_errors():
    w = rg.tensor([0.3], requires_grad=True, dtype=rg.float64)
    for x in (_x(5), np.array(-1.5)):
        want = TF.prelu(torch.tensor(x), torch.tensor([0.3], dtype=torch.float64))
        _same(F.prelu(rg.tensor(x), w), want)
    _raises_like(lambda: F.prelu(rg.tensor(_x(2, 3)), rg.tensor([0.3], dtype=rg.float32)),
                 lambda: TF.prelu(torch.tensor(_x(2, 3)), torch.tensor([0.3])), "dtype")
    assert rg.gradcheck(F.prelu, (rg.tensor(_x(2, 3, 4), requires_grad=True),
                                  rg.tensor(_x(3), requires_grad=True)))
    assert nn.PReLU(2, init=0.1).weight.numpy().tolist() == [0.1, 0.1]
    x = _x(2, 3, 4)
    for w in (_x(4), _x(3, 1)):
        _raises_like(lambda w=w: F.prelu(rg.tensor(x), rg.tensor(w)),
                     lambda w=w: TF.prelu(torch.tensor(x), torch.tensor(w)), "prelu")
    _raises_like(lambda: F.prelu(rg.tensor([1, -2]), rg.tensor([1])),
                 lambda: TF.prelu(torch.tensor([1, -2]), torch.tensor([1])), "floating")


SPECIAL = np.array([np.nan, 0.0, -0.0, 0.5, -0.5, 0.3, -0.3, 1.0, -1.0, np.inf, -np.inf, 2.5])


@pytest.mark.parametrize("name", ["hardshrink", "softshrink"])
@pytest.mark.parametrize("lambd", [0.5, 0.0, 1.0])
def test_shrink_values_nans_bounds_and_gradients(name, lambd):
    x, t = rg.tensor(SPECIAL, requires_grad=True), torch.tensor(SPECIAL, requires_grad=True)
    y, yt = getattr(F, name)(x, lambd), getattr(TF, name)(t, lambd)
    np.testing.assert_array_equal(y.numpy(), yt.detach().numpy())  # NaN kept, bounds 0
    y.sum().backward()
    yt.sum().backward()  # (torch's gradient at NaN differs between its own kernels)
    np.testing.assert_array_equal(x.grad.numpy()[1:], t.grad.numpy()[1:])
    mod, ref = getattr(nn, name.capitalize())(lambd), getattr(torch.nn, name.capitalize())(lambd)
    assert repr(mod) == repr(ref)
    _twin(mod, ref, _x(3, 4), load=False)


def test_shrink_errors_like_torch():
    x = _x(3)
    _raises_like(lambda: F.softshrink(rg.tensor(x), -1.0),
                 lambda: TF.softshrink(torch.tensor(x), -1.0), "lambd")
    _same(F.hardshrink(rg.tensor(x), -1.0), TF.hardshrink(torch.tensor(x), -1.0))
    for name in ("hardshrink", "softshrink"):
        _raises_like(lambda name=name: getattr(F, name)(rg.tensor([1, 2])),
                     lambda name=name: getattr(TF, name)(torch.tensor([1, 2])))


def test_rrelu_eval_is_leaky_relu_with_the_mean_slope():
    mod, ref = nn.RReLU(0.1, 0.3), torch.nn.RReLU(0.1, 0.3)
    mod.eval()
    ref.eval()
    assert repr(mod) == repr(ref)
    _twin(mod, ref, _x(4, 5), load=False)
    x = rg.tensor(SPECIAL, requires_grad=True)
    t = torch.tensor(SPECIAL, requires_grad=True)
    np.testing.assert_array_equal(F.rrelu(x).detach().numpy(), TF.rrelu(t).detach().numpy())


def test_rrelu_training_draws_one_slope_per_negative_element():
    x = rg.tensor(-np.abs(_x(200, 50)) - 0.1, requires_grad=True)
    y = F.rrelu(x, 0.1, 0.3, training=True)
    slope = (y / x).detach().numpy()
    assert slope.min() >= 0.1 and slope.max() <= 0.3
    assert abs(slope.mean() - 0.2) < 0.003 and abs(slope.std() - 0.2 / 12 ** 0.5) < 0.003
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), slope)  # the gradient is each element's slope
    pos = rg.tensor(np.abs(_x(10)) + 0.1)
    np.testing.assert_array_equal(F.rrelu(pos, training=True).numpy(), pos.numpy())
    rg.manual_seed(3)
    a = F.rrelu(x, training=True)
    rg.manual_seed(3)
    np.testing.assert_array_equal(a.detach().numpy(), F.rrelu(x, training=True).detach().numpy())
    m = nn.RReLU()
    assert not np.array_equal(m(x).detach().numpy(), m.eval()(x).detach().numpy())


def test_rrelu_errors_like_torch():
    x = _x(3)
    for training in (True, False):
        _raises_like(lambda tr=training: F.rrelu(rg.tensor(x), 0.5, 0.1, tr),
                     lambda tr=training: TF.rrelu(torch.tensor(x), 0.5, 0.1, tr), "lower")
    _raises_like(lambda: F.rrelu(rg.tensor([1, 2])), lambda: TF.rrelu(torch.tensor([1, 2])))


INPLACE = [("relu_", ()), ("elu_", (0.7,)), ("celu_", (1.3,)), ("selu_", ()),
           ("leaky_relu_", (0.2,)), ("hardtanh_", (-0.5, 0.7)), ("threshold_", (0.1, -2.0)),
           ("rrelu_", (0.1, 0.3))]


@pytest.mark.parametrize("name,args", INPLACE)
def test_inplace_functions_write_into_their_input(name, args):
    a = _x(3, 4)
    x, t = rg.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    y, yt = x * 1.0, t * 1.0
    out, out_t = getattr(F, name)(y, *args), getattr(TF, name)(yt, *args)
    assert out is y and out_t is yt
    _same(y, yt)
    (y * y).sum().backward()
    (yt * yt).sum().backward()
    _same(x.grad, t.grad, tol=1e-7)  # torch's in-place backward reads the result: rounding
    _raises_like(lambda: getattr(F, name)(rg.tensor(a, requires_grad=True), *args),
                 lambda: getattr(TF, name)(torch.tensor(a, requires_grad=True), *args))


@pytest.mark.parametrize("cls,args", [("ReLU", ()), ("ELU", (0.5,)), ("CELU", (0.5,)),
                                      ("SELU", ()), ("LeakyReLU", (0.2,)),
                                      ("Hardtanh", (-0.5, 0.5)), ("ReLU6", ()),
                                      ("Threshold", (0.1, 3.0)), ("SiLU", ()), ("Mish", ()),
                                      ("Hardswish", ()), ("Hardsigmoid", ()), ("RReLU", ())])
def test_activation_modules_take_inplace(cls, args):
    mod, ref = getattr(nn, cls)(*args, inplace=True), getattr(torch.nn, cls)(*args, inplace=True)
    assert repr(mod) == repr(ref)
    mod.eval()
    ref.eval()
    a = _x(3, 4)
    x, t = rg.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    y, yt = x + 0.0, t + 0.0
    assert mod(y) is y and ref(yt) is yt
    _same(y, yt)
    y.sum().backward()
    yt.sum().backward()
    _same(x.grad, t.grad)


def test_softmax2d_and_implicit_softmax_dims():
    mod, ref = nn.Softmax2d(), torch.nn.Softmax2d()
    for shape in [(2, 3, 4, 5), (3, 4, 5)]:
        _twin(mod, ref, _x(*shape), load=False)
    _raises_like(lambda: mod(rg.tensor(_x(3, 4))), lambda: ref(torch.tensor(_x(3, 4))), "3D")
    for cls in ("Softmax", "LogSoftmax"):
        assert repr(getattr(nn, cls)(dim=1)) == repr(getattr(torch.nn, cls)(dim=1))
        for shape in [(3,), (2, 3), (2, 3, 4), (2, 3, 4, 5)]:
            with pytest.warns(UserWarning, match="Implicit dimension"):
                out = getattr(nn, cls)()(rg.tensor(_x(*shape)))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                want = getattr(torch.nn, cls)()(torch.tensor(out.numpy() * 0 + 1.0))
            assert out.shape == tuple(want.shape)
    a = _x(2, 3, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _same(F.softmax(rg.tensor(a)), TF.softmax(torch.tensor(a)))
        _same(F.log_softmax(rg.tensor(a), dtype=rg.float32), TF.log_softmax(
            torch.tensor(a), dtype=torch.float32), tol=1e-6)


def test_gumbel_softmax_samples_and_straight_through_gradient():
    logits = np.log(np.array([0.6, 0.3, 0.1]))
    x = rg.tensor(np.tile(logits, (4000, 1)), requires_grad=True)
    soft = F.gumbel_softmax(x, tau=0.5)
    np.testing.assert_allclose(soft.sum(-1).detach().numpy(), 1.0)
    freq = np.bincount(soft.detach().numpy().argmax(-1), minlength=3) / 4000
    np.testing.assert_allclose(freq, [0.6, 0.3, 0.1], atol=0.03)  # argmax ~ Categorical
    rg.manual_seed(5)
    soft = F.gumbel_softmax(x, tau=0.7)
    rg.manual_seed(5)
    hard = F.gumbel_softmax(x, tau=0.7, hard=True)
    h = hard.detach().numpy()
    np.testing.assert_allclose(h, np.eye(3)[soft.detach().numpy().argmax(-1)], atol=1e-12)
    w = rg.tensor(_x(4000, 3))
    g_soft = rg.autograd.grad((soft * w).sum(), x)[0]
    g_hard = rg.autograd.grad((hard * w).sum(), x)[0]
    np.testing.assert_allclose(g_hard.numpy(), g_soft.numpy(), atol=1e-12)
    d0 = F.gumbel_softmax(rg.tensor(_x(3, 5)), hard=True, dim=0).detach().numpy()
    np.testing.assert_allclose(d0.sum(0), 1.0)
    _raises_like(lambda: F.gumbel_softmax(rg.tensor([1, 2])),
                 lambda: TF.gumbel_softmax(torch.tensor([1, 2])))


# ---------------------------------------------------------------- dropout

DROPOUT_SHAPES = {"dropout": (4, 3, 2), "dropout1d": (4, 3, 2), "dropout2d": (4, 3, 2, 2),
                  "dropout3d": (4, 3, 2, 2, 2), "alpha_dropout": (4, 3, 2),
                  "feature_alpha_dropout": (4, 3, 2, 2)}


def test_dropout_modules_repr_state_and_eval_identity():
    for cls in ("Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout",
                "FeatureAlphaDropout"):
        mod, ref = getattr(nn, cls)(0.3, inplace=True), getattr(torch.nn, cls)(0.3, inplace=True)
        assert repr(mod) == repr(ref) and list(mod.state_dict()) == []
        fn = "".join("_" + c.lower() if c.isupper() else c for c in cls).lstrip("_")
        x = rg.tensor(_x(*DROPOUT_SHAPES[fn]))
        assert mod.eval()(x) is x
        mod.train()
        y = mod(x * 1.0)
        assert y.shape == x.shape and not np.array_equal(y.numpy(), x.numpy())
        _raises_like(lambda cls=cls: getattr(nn, cls)(1.5),
                     lambda cls=cls: getattr(torch.nn, cls)(1.5), "between 0 and 1")


def test_dropout_statistics_and_scaling():
    x = rg.tensor(np.ones((200, 100)), requires_grad=True)
    y = F.dropout(x, 0.3)
    v = y.detach().numpy()
    assert set(np.unique(v)) == {0.0, 1 / 0.7}
    assert abs((v == 0).mean() - 0.3) < 0.01
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), v)
    assert F.dropout(x, 0.3, training=False) is x
    np.testing.assert_array_equal(F.dropout(x, 1.0).detach().numpy(), 0.0)
    _raises_like(lambda: F.dropout(rg.tensor([1, 2]), 0.5),
                 lambda: TF.dropout(torch.tensor([1, 2]), 0.5))
    _raises_like(lambda: F.dropout(x, -0.1), lambda: TF.dropout(torch.ones(2), -0.1), "between")


@pytest.mark.parametrize("fn,shape,mask_shape", [
    ("dropout1d", (40, 30, 6), (40, 30, 1)), ("dropout1d", (1200, 6), (1200, 1)),
    ("dropout2d", (40, 30, 3, 2), (40, 30, 1, 1)), ("dropout2d", (40, 30, 6), (40, 30, 1)),
    ("dropout3d", (20, 60, 2, 2, 2), (20, 60, 1, 1, 1)), ("dropout3d", (1200, 2, 2, 2),
                                                          (1200, 1, 1, 1))])
def test_channel_dropout_zeros_whole_channels(fn, shape, mask_shape):
    x = rg.tensor(np.ones(shape))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        v = getattr(F, fn)(x, 0.4).numpy()
    lead = tuple(m for m in mask_shape if m != 1)  # the (sample, channel) dims
    flat = v.reshape(lead + (-1,))
    assert (flat == flat[..., :1]).all()  # one draw per channel
    assert abs((flat[..., 0] == 0).mean() - 0.4) < 0.05
    assert set(np.unique(v)) <= {0.0, 1 / 0.6}


def test_channel_dropout_dims_like_torch():
    _raises_like(lambda: F.dropout1d(rg.tensor(np.ones(3))), lambda: TF.dropout1d(torch.ones(3)),
                 "2D or 3D")
    _raises_like(lambda: F.dropout1d(rg.tensor(np.ones((1, 2, 3, 4)))),
                 lambda: TF.dropout1d(torch.ones(1, 2, 3, 4)), "2D or 3D")
    with pytest.warns(UserWarning, match="3D input to dropout2d"):
        F.dropout2d(rg.tensor(np.ones((2, 3, 4))))
    with pytest.warns(UserWarning, match="deprecated"):
        assert F.dropout2d(rg.tensor(np.ones((2, 3)))).shape == (2, 3)
    with pytest.warns(UserWarning, match="deprecated"):
        v = F.dropout3d(rg.tensor(np.ones((50, 2, 3))), 0.5).numpy()
    assert (v == v[:, :1, :1]).all()  # an unbatched 3-D input: channels along dim 0
    _raises_like(lambda: F.feature_alpha_dropout(rg.tensor(np.ones(3)), 0.5, True),
                 lambda: TF.feature_alpha_dropout(torch.ones(3), 0.5, True), "2 dimensions")


@pytest.mark.parametrize("fn", ["alpha_dropout", "feature_alpha_dropout"])
def test_alpha_dropout_keeps_mean_and_variance(fn):
    p, alpha = 0.2, 1.7580993408473766
    a = 1 / np.sqrt((alpha ** 2 * p + 1) * (1 - p))
    x = rg.tensor(_x(400, 300), requires_grad=True)
    y = getattr(F, fn)(x, p, training=True)
    v, xv = y.detach().numpy(), x.detach().numpy()
    kept = np.isclose(v, a * xv + alpha * a * p)
    dropped = np.isclose(v, -alpha * a * (1 - p))
    assert (kept | dropped).all() and abs(dropped.mean() - p) < 0.01
    assert abs(v.mean()) < 0.02 and abs(v.std() - 1) < 0.02
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.where(kept, a, 0.0))
    if fn == "feature_alpha_dropout":
        y2 = F.feature_alpha_dropout(rg.tensor(_x(50, 40, 6)), p, True).numpy()
        drop = np.isclose(y2, -alpha * a * (1 - p))
        assert (drop == drop[..., :1]).all()
    assert getattr(F, fn)(x, p) is x  # off unless training
    np.testing.assert_array_equal(getattr(F, fn)(x, 1.0, True).detach().numpy(), 0.0)


@pytest.mark.parametrize("fn", ["dropout", "dropout1d", "dropout2d", "dropout3d",
                                "alpha_dropout", "feature_alpha_dropout"])
def test_dropout_inplace_writes_into_the_input(fn):
    x = rg.tensor(np.ones(DROPOUT_SHAPES[fn]))
    rg.manual_seed(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = getattr(F, fn)(x, 0.5, True).numpy()
        rg.manual_seed(1)
        assert getattr(F, fn)(x, 0.5, True, inplace=True) is x
    np.testing.assert_array_equal(x.numpy(), want)


# ---------------------------------------------------------------- normalisation

@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("affine,track", [(False, False), (True, False), (True, True),
                                          (False, True)])
def test_instance_norm_trains_and_evaluates_like_torch(nd, affine, track):
    cls = f"InstanceNorm{nd}d"
    mod = getattr(nn, cls)(3, momentum=0.3, affine=affine, track_running_stats=track)
    ref = getattr(torch.nn, cls)(3, momentum=0.3, affine=affine,
                                 track_running_stats=track).double()
    if affine:
        with torch.no_grad():
            ref.weight.copy_(torch.tensor(_x(3)))
            ref.bias.copy_(torch.tensor(_x(3)))
    assert repr(mod) == repr(ref)
    shape = (2, 3) + (4, 3, 2)[:nd]
    _load(mod, ref)
    for _ in range(3):  # running statistics move the same way
        _twin(mod, ref, _x(*shape, scale=2.0) + 1.0, load=False)
        for name, b in ref.named_buffers():
            _same(dict(mod.named_buffers())[name], b, 1e-12)
    _twin(mod, ref, _x(*shape[1:]), load=False)  # unbatched
    mod.eval()
    ref.eval()
    _twin(mod, ref, _x(*shape), load=False)


def test_instance_norm_functional_and_errors_like_torch():
    x = _x(2, 3, 5)
    rm, rv = np.zeros(3), np.ones(3)
    rm_t, rv_t = torch.tensor(rm), torch.tensor(rv)
    out = F.instance_norm(rg.tensor(x), rg.from_numpy(rm), rg.from_numpy(rv), momentum=0.2)
    _same(out, TF.instance_norm(torch.tensor(x), rm_t, rv_t, momentum=0.2))
    np.testing.assert_allclose(rm, rm_t.numpy(), rtol=1e-12)  # updated in place
    np.testing.assert_allclose(rv, rv_t.numpy(), rtol=1e-12)
    _same(F.instance_norm(rg.tensor(x), rg.tensor(rm), rg.tensor(rv), use_input_stats=False),
          TF.instance_norm(torch.tensor(x), rm_t, rv_t, use_input_stats=False))
    assert rg.gradcheck(lambda a, w, b: F.instance_norm(a, weight=w, bias=b),
                        (rg.tensor(_x(2, 3, 4), requires_grad=True),
                         rg.tensor(_x(3), requires_grad=True),
                         rg.tensor(_x(3), requires_grad=True)))
    bad = [(lambda m: m(_x(2, 3, 1)), "spatial"),
           (lambda m: m(_x(2, 3, 4), np.zeros(4), np.ones(4)), "running_mean"),
           (lambda m: m(_x(2, 3, 4), use_input_stats=False), "running_mean"),
           (lambda m: m(_x(2, 3, 4).astype(np.int64)), None)]
    for call, match in bad:
        _raises_like(lambda call=call: call(lambda a, *s, **k: F.instance_norm(
            rg.tensor(a), *(rg.tensor(v) for v in s), **k)),
            lambda call=call: call(lambda a, *s, **k: TF.instance_norm(
                torch.tensor(a), *(torch.tensor(v) for v in s), **k)), match)
    for cls, shape in [("InstanceNorm1d", (2, 3, 4, 5)), ("InstanceNorm2d", (3, 4))]:
        a = _x(*shape)
        _raises_like(lambda c=cls, a=a: getattr(nn, c)(3)(rg.tensor(a)),
                     lambda c=cls, a=a: getattr(torch.nn, c)(3)(torch.tensor(a)), "input")
    _raises_like(lambda: nn.InstanceNorm1d(4, affine=True)(rg.tensor(_x(2, 3, 5))),
                 lambda: torch.nn.InstanceNorm1d(4, affine=True)(torch.tensor(_x(2, 3, 5))),
                 "num_features")
    with pytest.warns(UserWarning, match="num_features"):
        nn.InstanceNorm1d(4)(rg.tensor(_x(2, 3, 5)))


@pytest.mark.parametrize("size", [1, 2, 3, 4])
@pytest.mark.parametrize("shape", [(2, 5, 3), (2, 5, 3, 2), (1, 4, 2, 2, 3)])
def test_local_response_norm_matches_torch(size, shape):
    mod, ref = nn.LocalResponseNorm(size, 0.3, 0.7, 1.5), torch.nn.LocalResponseNorm(
        size, 0.3, 0.7, 1.5)
    assert repr(mod) == repr(ref)
    _twin(mod, ref, _x(*shape, scale=2.0), load=False)


def test_local_response_norm_dtypes_and_errors():
    with pytest.raises(NotImplementedError, match="int64"):  # torch's avg_pool: no int32
        F.local_response_norm(rg.tensor(np.arange(12, dtype=np.int32).reshape(1, 3, 4)), 2)
    assert F.local_response_norm(rg.tensor(np.ones((0, 3, 2))), 2).shape == (0, 3, 2)
    _raises_like(lambda: F.local_response_norm(rg.tensor(_x(2, 3)), 2),
                 lambda: TF.local_response_norm(torch.tensor(_x(2, 3)), 2), "3D")
    _raises_like(lambda: F.local_response_norm(rg.tensor(_x(1, 3, 2)), 0),
                 lambda: TF.local_response_norm(torch.tensor(_x(1, 3, 2)), 0), "size")


def test_norm_layers_take_bias_and_errors_are_torchs():
    for make in (lambda m: m.BatchNorm2d(3, bias=False), lambda m: m.GroupNorm(1, 3, bias=False),
                 lambda m: m.LayerNorm(3, bias=False), lambda m: m.BatchNorm1d(3, affine=False)):
        mod, ref = make(nn), make(torch.nn).double()
        assert repr(mod) == repr(ref)
        assert list(mod.state_dict()) == list(ref.state_dict())
    x = _x(2, 3, 4)
    cases = [(lambda f, t: f.group_norm(t(x), 2), "divisible"),
             (lambda f, t: f.group_norm(t(x), 3, t(np.ones(4))), "weight"),
             (lambda f, t: f.layer_norm(t(x), (3,)), "normalized_shape"),
             (lambda f, t: f.layer_norm(t(x), (4,), t(np.ones(3))), "weight"),
             (lambda f, t: f.batch_norm(t(x), t(np.zeros(4)), t(np.ones(4))), "running_mean"),
             (lambda f, t: f.batch_norm(t(x), None, None), "running_mean"),
             (lambda f, t: f.layer_norm(t(x.astype(np.int64)), (4,)), "floating")]
    for call, match in cases:
        _raises_like(lambda c=call: c(F, rg.tensor), lambda c=call: c(TF, torch.tensor), match)


# ---------------------------------------------------------------- distances

@pytest.mark.parametrize("p", [2.0, 1.0, 0.5, 3.0, -1.0, float("inf"), 0.0])
@pytest.mark.parametrize("keepdim", [False, True])
def test_pairwise_distance_matches_torch(p, keepdim):
    mod = nn.PairwiseDistance(p, 1e-3, keepdim)
    ref = torch.nn.PairwiseDistance(p, 1e-3, keepdim)
    assert repr(mod) == repr(ref)
    _twin(mod, ref, _x(4, 5), _x(4, 5), load=False)
    _twin(mod, ref, _x(3, 1, 5), _x(2, 5), load=False)  # broadcast
    _twin(mod, ref, _x(5), _x(5), load=False)


def test_pairwise_distance_dtypes_and_errors():
    rg.set_default_dtype(np.float32)
    a, b = np.arange(6).reshape(2, 3), np.ones((2, 3), dtype=np.int64)
    out, want = F.pairwise_distance(rg.tensor(a), rg.tensor(b)), TF.pairwise_distance(
        torch.tensor(a), torch.tensor(b))
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.numpy(), want.numpy(), rtol=1e-6)
    _raises_like(lambda: F.pairwise_distance(rg.tensor(_x(2, 3)), rg.tensor(_x(4))),
                 lambda: TF.pairwise_distance(torch.tensor(_x(2, 3)), torch.tensor(_x(4))),
                 "broadcast")


@pytest.mark.parametrize("p", [2.0, 1.0, 0.5, 3.0, float("inf"), 0.0])
def test_pdist_matches_torch(p):
    a = _x(5, 3)
    a[3] = a[1]  # a zero distance: its gradient is 0
    x, t = rg.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    y, yt = F.pdist(x, p), TF.pdist(t, p)
    _same(y, yt, 1e-12)
    w = _x(len(yt))
    (y * rg.tensor(w)).sum().backward()
    (yt * torch.tensor(w)).sum().backward()
    _same(x.grad, t.grad, 1e-10)


def test_pdist_ties_edges_and_errors():
    a = np.array([[1.0, 2.0], [2.0, 3.0], [0.0, 0.0]])  # p=inf ties: full gradient to each
    x, t = rg.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    F.pdist(x, float("inf")).sum().backward()
    TF.pdist(t, float("inf")).sum().backward()
    _same(x.grad, t.grad)
    assert F.pdist(rg.tensor(np.ones((1, 3)))).shape == (0,)
    for arg, p, match in [(_x(2, 3, 4), 2.0, "2-D"), (_x(2, 3), -1.0, "non-negative"),
                          (np.ones((2, 3), dtype=np.int64), 2.0, "floating")]:
        _raises_like(lambda a=arg, p=p: F.pdist(rg.tensor(a), p),
                     lambda a=arg, p=p: TF.pdist(torch.tensor(a), p), match)


def test_cosine_similarity_matches_torch_including_tiny_norms():
    mod, ref = nn.CosineSimilarity(dim=-1, eps=1e-3), torch.nn.CosineSimilarity(-1, 1e-3)
    a, b = _x(4, 5), _x(4, 5)
    a[0] *= 1e-5  # a norm below eps: clamped, the gradient still flows through the norm
    _twin(mod, ref, a, b, load=False)
    _twin(nn.CosineSimilarity(), torch.nn.CosineSimilarity(), _x(3, 4, 2), _x(4, 1), load=False)
    _raises_like(lambda: F.cosine_similarity(rg.tensor([[1, 2]]), rg.tensor([[3, 4]])),
                 lambda: TF.cosine_similarity(torch.tensor([[1, 2]]), torch.tensor([[3, 4]])))
    _raises_like(lambda: F.cosine_similarity(rg.tensor(_x(2, 3)), rg.tensor(_x(4, 3))),
                 lambda: TF.cosine_similarity(torch.tensor(_x(2, 3)), torch.tensor(_x(4, 3))))
    out = F.cosine_similarity(rg.tensor(np.ones((2, 3), np.float32)), rg.tensor(np.ones((2, 3))))
    assert out.dtype == np.float64


# ---------------------------------------------------------------- pooling

@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("p,k,s,ceil", [(2, 2, None, False), (3, 3, 2, True), (1.5, 2, 1, False),
                                        (float("inf"), 2, None, False),
                                        (-float("inf"), 2, 1, True)])
def test_lp_pool_matches_torch(nd, p, k, s, ceil):
    cls = f"LPPool{nd}d"
    mod, ref = getattr(nn, cls)(p, k, s, ceil), getattr(torch.nn, cls)(p, k, s, ceil)
    assert repr(mod) == repr(ref)
    shape = (2, 3) + (7, 5, 4)[:nd]
    a = np.abs(_x(*shape)) + 0.1 if p == 1.5 else _x(*shape)  # x^1.5 needs x >= 0
    _twin(mod, ref, a, load=False)


def test_lp_pool_zero_windows_and_unbatched():
    a = _x(2, 6)
    a[:, :2] = 0.0  # a window of zeros: torch's gradient there is 0, not nan
    _twin(nn.LPPool1d(2, 2), torch.nn.LPPool1d(2, 2), a, load=False)
    _twin(nn.LPPool2d(2, (2, 3)), torch.nn.LPPool2d(2, (2, 3)), _x(3, 4, 6), load=False)


@pytest.mark.parametrize("size", [2, (3, None, 2), (1, 2, 3)])
def test_adaptive_max_pool3d_matches_torch(size):
    mod, ref = nn.AdaptiveMaxPool3d(size, True), torch.nn.AdaptiveMaxPool3d(size, True)
    assert repr(mod) == repr(ref)
    _twin(mod, ref, _x(2, 3, 5, 4, 3), load=False)
    _twin(nn.AdaptiveMaxPool3d(size), torch.nn.AdaptiveMaxPool3d(size), _x(3, 5, 4, 3),
          load=False)


def test_pool_with_indices_always_return_indices():
    a = _x(2, 3, 6, 5, 4)
    for nd in (1, 2, 3):
        x = a.reshape((2, 3) + (6, 5, 4)[:nd] + (-1,))[..., 0] if nd < 3 else a
        for name, args in [(f"max_pool{nd}d_with_indices", (2,)),
                           (f"adaptive_max_pool{nd}d_with_indices", (3,))]:
            out, want = getattr(F, name)(rg.tensor(x), *args), getattr(TF, name)(
                torch.tensor(x), *args)
            assert isinstance(out, tuple) and len(out) == 2
            _same(out, want)
            assert not out[1].requires_grad and out[1].dtype == np.int64


# -------------------------------------------------------- bilinear, fold, shuffle, upsampling

@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("lead", [(4,), (2, 3), ()])
def test_bilinear_matches_torch(bias, lead):
    mod, ref = nn.Bilinear(3, 4, 5, bias), torch.nn.Bilinear(3, 4, 5, bias).double()
    assert repr(mod) == repr(ref) and list(mod.state_dict()) == list(ref.state_dict())
    assert mod.weight.shape == (5, 3, 4)
    _twin(mod, ref, _x(*lead, 3), _x(*lead, 4))


def test_bilinear_init_and_errors_like_torch():
    w = nn.Bilinear(4, 2, 300).weight.numpy()
    assert np.abs(w).max() <= 0.5 and np.abs(w).max() > 0.45  # uniform(+-1/sqrt(in1))
    _raises_like(lambda: nn.Bilinear(0, 2, 3), lambda: torch.nn.Bilinear(0, 2, 3), "in1")
    w, b = _x(5, 3, 4), _x(5)
    cases = [((_x(2, 2), _x(2, 4), w), "weight"), ((_x(2, 3), _x(3, 4), w), "batch"),
             ((_x(2, 3), _x(2, 4), w, _x(4)), "bias"), ((_x(2, 3), _x(2, 4), _x(3, 4)), None),
             ((_x(2, 3), _x(2, 4).astype(np.float32), w), "dtype")]
    for args, match in cases:
        _raises_like(lambda a=args: F.bilinear(*map(rg.tensor, a)),
                     lambda a=args: TF.bilinear(*map(torch.tensor, a)), match)
    got = F.bilinear(rg.tensor(np.ones((2, 3), np.int64)), rg.tensor(np.ones((2, 4), np.int64)),
                     rg.tensor(np.ones((5, 3, 4), np.int64)))
    assert got.dtype == np.int64 and (got.numpy() == 12).all()
    args = (_x(3), _x(4), w, b)  # unbatched
    _same(F.bilinear(*map(rg.tensor, args)), TF.bilinear(*map(torch.tensor, args)))


@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=(2, 3), dilation=2,
                                                           padding=1, stride=(1, 2))])
def test_fold_and_unfold_modules_match_torch(kw):
    mod, ref = nn.Unfold(**kw), torch.nn.Unfold(**kw)
    assert repr(mod) == repr(ref)
    cols, cols_t = _twin(mod, ref, _x(2, 3, 6, 7), load=False)
    mod, ref = nn.Fold((6, 7), **kw), torch.nn.Fold((6, 7), **kw)
    assert repr(mod) == repr(ref)
    _twin(mod, ref, cols_t.detach().numpy(), load=False)


def test_channel_shuffle_matches_torch():
    mod, ref = nn.ChannelShuffle(3), torch.nn.ChannelShuffle(3)
    assert repr(mod) == repr(ref)
    _twin(mod, ref, _x(2, 6, 4), load=False)
    _twin(mod, ref, _x(2, 6, 2, 3), load=False)
    a = np.arange(24).reshape(1, 6, 4)
    _same(F.native_channel_shuffle(rg.tensor(a), 2), TF.native_channel_shuffle(
        torch.tensor(a), 2))
    for shape, g, match in [((2, 3, 4), 2, "divisible"), ((2, 4), 2, "dims"),
                            ((2, 4, 3), 0, "positive"), ((2, 4, 3), -2, "positive")]:
        a = _x(*shape)
        _raises_like(lambda a=a, g=g: F.channel_shuffle(rg.tensor(a), g),
                     lambda a=a, g=g: TF.channel_shuffle(torch.tensor(a), g), match)


def test_upsampling_layers_and_functions_match_torch():
    for kw in (dict(scale_factor=2), dict(size=(5, 3))):
        for cls in ("UpsamplingNearest2d", "UpsamplingBilinear2d"):
            mod, ref = getattr(nn, cls)(**kw), getattr(torch.nn, cls)(**kw)
            assert repr(mod) == repr(ref)
            _twin(mod, ref, _x(2, 3, 4, 3), load=False)
        for fn in ("upsample_nearest", "upsample_bilinear"):
            a = _x(1, 2, 3, 4)
            with pytest.warns(UserWarning, match="deprecated"):
                out = getattr(F, fn)(rg.tensor(a), **kw)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                _same(out, getattr(TF, fn)(torch.tensor(a), **kw))
    assert repr(nn.Upsample(scale_factor=(2, 3))) == repr(torch.nn.Upsample(scale_factor=(2, 3)))
    with pytest.warns(UserWarning, match="deprecated"):
        F.upsample(rg.tensor(_x(1, 1, 2, 2)), scale_factor=2)


# ---------------------------------------------------------------- embeddings

def test_embedding_scale_grad_by_freq_and_max_norm_like_torch():
    idx = np.array([[1, 1, 2], [3, 1, 0]])
    for kw in (dict(scale_grad_by_freq=True), dict(scale_grad_by_freq=True, padding_idx=1),
               dict(max_norm=1.0, scale_grad_by_freq=True), dict(sparse=True)):
        mod, ref = nn.Embedding(5, 3, **kw), torch.nn.Embedding(5, 3, **kw).double()
        with torch.no_grad():
            ref.weight.mul_(3.0)
        assert repr(mod) == repr(ref)
        _load(mod, ref)
        out, out_t = mod(rg.tensor(idx)), ref(torch.tensor(idx))
        _same(out, out_t)
        _same(mod.weight.detach(), ref.weight.detach())  # max_norm renormalised in place
        w = _x(*out_t.shape)
        (out * rg.tensor(w)).sum().backward()
        (out_t * torch.tensor(w)).sum().backward()
        grad_t = ref.weight.grad.to_dense() if ref.weight.grad.is_sparse else ref.weight.grad
        _same(mod.weight.grad, grad_t)


BAG_CASES = [
    (np.array([1, 2, 4, 5, 4, 3, 2]), np.array([0, 3]), {}),
    (np.array([1, 2, 4, 5, 4, 3, 2]), np.array([0, 3, 3, 7]), {}),  # empty bags
    (np.array([1, 2, 4, 5, 4, 3, 2]), np.array([0, 3, 5, 7]), dict(include_last_offset=True)),
    (np.array([1, 2, 4, 5, 4, 3, 2]), np.array([0, 3]), dict(padding_idx=4)),
    (np.array([4, 4, 1, 2]), np.array([0, 2]), dict(padding_idx=-2)),  # a bag of padding
    (np.array([[1, 2, 0], [5, 5, 3]]), None, {}),
    (np.array([1, 1, 2]), np.array([0]), {}),  # a row twice in one bag
    (np.zeros(0, dtype=np.int64), np.array([0, 0]), {}),
]


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("case", range(len(BAG_CASES)))
def test_embedding_bag_matches_torch(mode, case):
    idx, offsets, kw = BAG_CASES[case]
    mod, ref = nn.EmbeddingBag(6, 3, mode=mode, **kw), torch.nn.EmbeddingBag(
        6, 3, mode=mode, **kw).double()
    assert repr(mod) == repr(ref)
    args = (idx,) if offsets is None else (idx, offsets)
    _twin(mod, ref, *args)


def test_embedding_bag_ties_nans_weights_and_frequency():
    w = np.array([[1.0, 5.0], [1.0, 2.0], [0.0, 7.0]])
    for idx in ([0, 1], [1, 0], [1, 2, 0]):  # equal maxima: the first one gets the gradient
        mod, ref = nn.EmbeddingBag(3, 2, mode="max"), torch.nn.EmbeddingBag(3, 2, mode="max")
        with torch.no_grad():
            ref.weight.copy_(torch.tensor(w))
        ref.double()
        _twin(mod, ref, np.array(idx), np.array([0]))
    nan = rg.tensor([[np.nan, 1.0], [2.0, 3.0]])
    for idx, want in (([0, 1], [np.nan, 3.0]), ([1, 0], [2.0, 3.0])):  # a NaN wins if first
        got = F.embedding_bag(rg.tensor(idx), nan, rg.tensor([0]), mode="max").numpy()
        np.testing.assert_array_equal(got[0], want)
    mod = nn.EmbeddingBag(6, 3, mode="sum")
    ref = torch.nn.EmbeddingBag(6, 3, mode="sum").double()
    _twin(mod, ref, np.array([1, 2, 4, 5, 4, 3, 2]), np.array([0, 3]), _x(7))  # per-sample
    w = rg.tensor(np.ones((4, 3)), requires_grad=True)  # index 1 twice, 3 once (pytorch#190063)
    F.embedding_bag(rg.tensor([1, 1, 3]), w, rg.tensor([0]), mode="sum",
                    scale_grad_by_freq=True).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy()[:, 0], [0.0, 1.0, 0.0, 1.0])
    w = rg.tensor(np.ones((4, 3)), requires_grad=True)
    F.embedding_bag(rg.tensor([3, 1, 1, 3, 3]), w, rg.tensor([0, 2]), mode="mean",
                    scale_grad_by_freq=True).sum().backward()
    np.testing.assert_allclose(w.grad.numpy()[:, 0], [0.0, (1 / 2 + 1 / 3) / 2, 0.0,
                                                   (1 / 2 + 2 / 3) / 3])


def test_embedding_bag_from_pretrained_and_errors_like_torch():
    w = _x(6, 3)
    mod = nn.EmbeddingBag.from_pretrained(rg.tensor(w), mode="sum")
    ref = torch.nn.EmbeddingBag.from_pretrained(torch.tensor(w), mode="sum")
    assert not mod.weight.requires_grad and repr(mod) == repr(ref)
    _same(mod(rg.tensor([[0, 5]])), ref(torch.tensor([[0, 5]])))
    i, o = np.array([1, 2, 4]), np.array([0, 2])
    cases = [
        (dict(input=i, offsets=np.array([1, 2])), "offsets\\[0\\]"),
        (dict(input=i, offsets=np.array([0, 9])), "offsets\\[-1\\]"),
        (dict(input=np.array([6]), offsets=np.array([0])), "range"),
        (dict(input=i, offsets=o, padding_idx=6), "padding_idx"),
        (dict(input=i.astype(np.float64), offsets=o), "integer"),
        (dict(input=i, offsets=o, per_sample_weights=np.ones(3)), "per_sample_weights"),
        (dict(input=i, offsets=o, mode="sum", per_sample_weights=np.ones(2)), "shape"),
        (dict(input=i.reshape(1, 3), offsets=o), "offsets has to be None"),
        (dict(input=i.reshape(1, 3, 1)), "1D or 2D"),
        (dict(input=i), "offsets"),
        (dict(input=i, offsets=o, mode="max", scale_grad_by_freq=True), "frequency"),
        (dict(input=i, offsets=o, mode="min"), "mode"),
    ]
    for kw, match in cases:
        def call(mod, t, kw=kw):
            args = {k: t(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
            return mod.embedding_bag(args.pop("input"), t(w), **args)
        _raises_like(lambda c=call: c(F, rg.tensor), lambda c=call: c(TF, torch.tensor), match)
    with pytest.raises(ValueError, match="include_last_offset"):  # torch: kernel-dependent
        F.embedding_bag(rg.tensor(i), rg.tensor(w), rg.tensor(o), include_last_offset=True)


# ---------------------------------------------------------------- lazy layers

LAZY = [("LazyLinear", (3,), (2, 5)), ("LazyConv1d", (4, 3), (2, 2, 6)),
        ("LazyConv2d", (4, 3), (2, 2, 5, 5)), ("LazyConv3d", (2, 2), (1, 2, 3, 3, 3)),
        ("LazyConvTranspose1d", (4, 3), (2, 2, 6)), ("LazyConvTranspose2d", (4, 2),
                                                     (1, 2, 3, 3)),
        ("LazyConvTranspose3d", (2, 2), (1, 2, 2, 2, 2)), ("LazyBatchNorm1d", (), (4, 3)),
        ("LazyBatchNorm2d", (), (2, 3, 2, 2)), ("LazyBatchNorm3d", (), (2, 3, 2, 2, 2)),
        ("LazyInstanceNorm1d", (), (2, 3, 4)), ("LazyInstanceNorm2d", (), (2, 3, 2, 2)),
        ("LazyInstanceNorm3d", (), (2, 3, 2, 2, 2))]


@pytest.mark.parametrize("name,args,shape", LAZY)
def test_lazy_layers_infer_their_input_size_like_torch(name, args, shape):
    mod, ref = getattr(nn, name)(*args), getattr(torch.nn, name)(*args).double()
    assert repr(mod) == repr(ref)
    assert list(mod.state_dict()) == list(ref.state_dict())
    assert mod.has_uninitialized_params() and ref.has_uninitialized_params()
    params = list(mod.parameters())  # an optimizer built now holds the trained objects
    a = _x(*shape)
    mod(rg.tensor(a))
    ref(torch.tensor(a))
    assert type(mod).__name__ == type(ref).__name__ == name[4:]
    assert repr(mod) == repr(ref)
    assert all(p is q for p, q in zip(params, mod.parameters()))
    assert [type(p) for p in mod.parameters()] == [nn.Parameter] * len(params)
    for n, p in mod.named_parameters():
        assert p.shape == tuple(ref.state_dict()[n].shape)
    _twin(mod, ref, a)  # loaded with torch's weights: now the eager layer


def test_lazy_layers_load_a_checkpoint_before_their_first_call():
    ref = torch.nn.Linear(5, 3).double()
    mod = nn.LazyLinear(3)
    mod.load_state_dict({k: v.numpy() for k, v in ref.state_dict().items()})
    assert mod.in_features == 5 and not mod.has_uninitialized_params()
    _twin(mod, ref, _x(2, 5), load=False)
    assert type(mod) is nn.Linear
    conv = nn.LazyConv2d(4, 3, groups=2)
    conv.load_state_dict({k: v.numpy() for k, v in torch.nn.Conv2d(6, 4, 3, groups=2)
                          .state_dict().items()})
    assert conv.in_channels == 6
    u = nn.UninitializedParameter()
    assert repr(u) == "<UninitializedParameter>" and u.requires_grad
    u.materialize((2, 3))
    assert type(u) is nn.Parameter and u.shape == (2, 3)
    b = nn.UninitializedBuffer()
    b.materialize(4)
    assert type(b) is rg.Tensor and b.shape == (4,) and not b.requires_grad
    with pytest.raises(RuntimeError, match="input"):
        nn.LazyConv2d(4, 3)(rg.tensor(_x(2, 5)))


# ---------------------------------------------------------------- torch.* spellings

def test_torch_top_level_layer_functions_take_atens_arguments():
    x, w, b, rm, rv = _x(4, 3, 5), _x(3), _x(3), _x(3), np.abs(_x(3)) + 0.5
    T = torch.tensor
    for training in (True, False):
        rm_r, rv_r, rm_t, rv_t = rg.tensor(rm.copy()), rg.tensor(rv.copy()), T(rm), T(rv)
        _same(rg.batch_norm(rg.tensor(x), rg.tensor(w), rg.tensor(b), rm_r, rv_r, training,
                            0.2, 1e-5, False),
              torch.batch_norm(T(x), T(w), T(b), rm_t, rv_t, training, 0.2, 1e-5, False))
        _same(rm_r, rm_t)
        _same(rg.instance_norm(rg.tensor(x), rg.tensor(w), None, rm_r, rv_r, training, 0.2,
                               1e-5, False),
              torch.instance_norm(T(x), T(w), None, rm_t, rv_t, training, 0.2, 1e-5, False))
        _same(rv_r, rv_t)
    _same(rg.layer_norm(rg.tensor(x), (5,)), torch.layer_norm(T(x), (5,)))
    _same(rg.group_norm(rg.tensor(x), 3, rg.tensor(w)), torch.group_norm(T(x), 3, T(w)))
    _same(rg.rms_norm(rg.tensor(x), (5,)), torch.rms_norm(T(x), (5,)))
    table, idx = _x(6, 2), np.array([[0, 5, 5], [1, 2, 5]])
    for pad in (-1, 5):
        wr, wt = rg.tensor(table, requires_grad=True), T(table, requires_grad=True)
        out, want = rg.embedding(wr, rg.tensor(idx), pad), torch.embedding(wt, T(idx), pad)
        _same(out, want)
        out.sum().backward()
        want.sum().backward()
        _same(wr.grad, wt.grad)
    for name in ("prelu", "bilinear", "pdist", "pairwise_distance", "cosine_similarity",
                 "channel_shuffle", "native_channel_shuffle", "hardshrink"):
        args = {"prelu": (x, w), "bilinear": (_x(2, 3), _x(2, 4), _x(5, 3, 4)),
                "pdist": (_x(4, 3),), "pairwise_distance": (_x(4, 3), _x(4, 3)),
                "cosine_similarity": (_x(4, 3), _x(4, 3)), "hardshrink": (x,),
                "channel_shuffle": (x, 3), "native_channel_shuffle": (x, 3)}[name]
        _same(getattr(rg, name)(*(rg.tensor(a) if isinstance(a, np.ndarray) else a
                                  for a in args)),
              getattr(torch, name)(*(T(a) if isinstance(a, np.ndarray) else a for a in args)))
    _same(rg.rrelu(rg.tensor(x)), torch.rrelu(T(x)))
    _same(rg.adaptive_max_pool1d(rg.tensor(x), 2), torch.adaptive_max_pool1d(T(x), 2))
    _same(rg.max_pool1d_with_indices(rg.tensor(x), 2), torch.max_pool1d_with_indices(T(x), 2))
    for name in ("relu_", "selu_", "celu_"):
        y = rg.tensor(x.copy())
        assert getattr(rg, name)(y) is y
        _same(y, getattr(torch, name)(T(x)))
    y = rg.tensor(x.copy())
    assert rg.threshold_(y, 0.1, 2.0) is y and rg.rrelu_(y) is y


def test_torch_top_level_dropout_family():
    x = rg.tensor(np.ones((40, 30, 4)))
    for name in ("dropout", "feature_dropout", "alpha_dropout", "feature_alpha_dropout"):
        assert getattr(rg, name)(x, 0.3, False) is x
        y = getattr(rg, name)(x, 0.3, True).numpy()
        assert y.shape == x.shape and not np.array_equal(y, x.numpy())
        if name.startswith("feature"):
            assert (y == y[..., :1]).all()
        z = rg.tensor(np.ones((40, 30, 4)))
        assert getattr(rg, name + "_")(z, 0.3, True) is z
        assert not np.array_equal(z.numpy(), x.numpy())
        _raises_like(lambda n=name: getattr(rg, n)(x, 1.5, True),
                     lambda n=name: getattr(torch, n)(torch.ones(2, 3), 1.5, True), "between")


# ---------------------------------------------------------------- fractional max pooling

@pytest.mark.parametrize("nd,shape,k,kw", [
    (2, (2, 3, 7, 9), (2, 3), dict(output_size=(4, 5))),
    (2, (3, 10, 6), 3, dict(output_ratio=0.5)),
    (2, (1, 1, 8, 8), 2, dict(output_size=(1, 3))),
    (3, (2, 2, 5, 6, 7), (2, 2, 3), dict(output_size=(3, 4, 3))),
    (3, (2, 5, 4, 4), 2, dict(output_ratio=(0.5, 0.5, 0.5)))])
def test_fractional_max_pool_matches_torch_for_the_same_samples(nd, shape, k, kw):
    samples = RNG.random(((shape[0] if len(shape) == nd + 2 else 1), shape[-nd - 1], nd))
    cls = f"FractionalMaxPool{nd}d"
    mod = getattr(nn, cls)(k, return_indices=True, _random_samples=rg.tensor(samples), **kw)
    ref = getattr(torch.nn, cls)(k, return_indices=True,
                                 _random_samples=torch.tensor(samples), **kw)
    assert repr(mod) == repr(ref) and list(mod.state_dict()) == list(ref.state_dict())
    _twin(mod, ref, _x(*shape), load=False)


def test_fractional_max_pool_float32_ties_random_windows_and_errors():
    a = np.round(_x(2, 3, 9, 9) * 2).astype(np.float32)  # ties: the first maximum, as torch
    s = RNG.random((2, 3, 2)).astype(np.float32)
    out = F.fractional_max_pool2d(rg.tensor(a), 3, (5, 4), return_indices=True,
                                  _random_samples=rg.tensor(s))
    want = TF.fractional_max_pool2d(torch.tensor(a), 3, (5, 4), return_indices=True,
                                    _random_samples=torch.tensor(s))
    _same(out, want)
    x = rg.tensor(_x(1, 1, 20, 20))
    a, b = F.fractional_max_pool2d(x, 2, 8), F.fractional_max_pool2d(x, 2, 8)
    assert a.shape == (1, 1, 8, 8) and not np.array_equal(a.numpy(), b.numpy())  # drawn anew
    cases = [(lambda f, t: f.fractional_max_pool2d(t(_x(1, 1, 4, 4)), 3, 3), "input"),
             (lambda f, t: f.fractional_max_pool3d(t(_x(1, 1, 4, 4, 4)), 2, 3), "input"),
             (lambda f, t: f.fractional_max_pool2d(t(_x(1, 1, 4, 4)), 2), "output")]
    for call, match in cases:
        _raises_like(lambda c=call: c(F, rg.tensor), lambda c=call: c(TF, torch.tensor), match)
    for kw in (dict(), dict(output_size=2, output_ratio=0.5), dict(output_ratio=1.5)):
        _raises_like(lambda kw=kw: nn.FractionalMaxPool2d(2, **kw),
                     lambda kw=kw: torch.nn.FractionalMaxPool2d(2, **kw))


@pytest.mark.parametrize("pad", [0, 1, 2, -1])
def test_conv_tbc_matches_torch(pad):
    x, w, b = _x(5, 2, 3), _x(3, 3, 4), _x(4)
    xs = [rg.tensor(a, requires_grad=True) for a in (x, w, b)]
    ts = [torch.tensor(a, requires_grad=True) for a in (x, w, b)]
    out, want = F.conv_tbc(*xs, pad), torch.conv_tbc(*ts, pad)
    _same(out, want)
    g = _x(*want.shape)
    (out * rg.tensor(g)).sum().backward()
    (want * torch.tensor(g)).sum().backward()
    for a, t in zip(xs, ts):
        _same(a.grad, t.grad)
    assert rg.conv_tbc is F.conv_tbc
    for args, match in [((_x(5, 2), w, b), "3 dims"), ((x, _x(3, 2, 4), b), "dim 1"),
                        ((x, w, _x(3)), "bias")]:
        _raises_like(lambda a=args: F.conv_tbc(*map(rg.tensor, a)),
                     lambda a=args: torch.conv_tbc(*map(torch.tensor, a)), match)


# ---------------------------------------------------------------- on a device

DEVICE_LAYERS = {
    "PReLU": (lambda: nn.PReLU(3), [(2, 3, 4)]),
    "RReLU": (lambda: nn.RReLU().eval(), [(3, 4)]),
    "Softshrink": (lambda: nn.Softshrink(), [(3, 4)]),
    "InstanceNorm2d": (lambda: nn.InstanceNorm2d(3, affine=True, track_running_stats=True),
                       [(2, 3, 2, 2)]),
    "LocalResponseNorm": (lambda: nn.LocalResponseNorm(3), [(2, 4, 3, 2)]),
    "PairwiseDistance": (lambda: nn.PairwiseDistance(), [(3, 4), (3, 4)]),
    "AdaptiveMaxPool3d": (lambda: nn.AdaptiveMaxPool3d(2), [(1, 2, 3, 3, 3)]),
    "LPPool2d": (lambda: nn.LPPool2d(2, 2), [(1, 2, 4, 4)]),
    "Bilinear": (lambda: nn.Bilinear(3, 4, 2), [(2, 3), (2, 4)]),
    "ChannelShuffle": (lambda: nn.ChannelShuffle(2), [(1, 4, 3)]),
    "UpsamplingBilinear2d": (lambda: nn.UpsamplingBilinear2d((3, 4)), [(1, 2, 2, 2)]),
    "EmbeddingBag": (lambda: nn.EmbeddingBag(5, 2, mode="max"), ["bags"]),
    "FractionalMaxPool2d": (lambda: nn.FractionalMaxPool2d(
        2, 3, _random_samples=rg.tensor([[[0.3, 0.7], [0.1, 0.5]]])), [(1, 2, 6, 6)]),
    "LazyLinear": (lambda: nn.LazyLinear(3), [(2, 4)]),
    "LazyBatchNorm1d": (lambda: nn.LazyBatchNorm1d(), [(4, 3)]),
}


@pytest.mark.parametrize("name", sorted(DEVICE_LAYERS))
def test_layers_run_on_a_stand_in_gpu_as_on_the_host(name):
    """On fake_device's CuPy stand-in (which refuses any silent host copy): the outputs and
    gradients of the host's twin."""
    import fake_device

    make, shapes = DEVICE_LAYERS[name]
    arrays = [np.array([[1, 2, 0], [4, 4, 3]]) if s == "bags" else _x(*s) for s in shapes]
    results, state = [], None
    fake_device.install()
    try:
        for device in ("cpu", "cuda"):
            mod = make().to(device)
            xs = [rg.tensor(a).to(device).requires_grad_(a.dtype.kind == "f") for a in arrays]
            mod(*xs)  # a first call (lazy layers take their sizes), then the host's weights
            if state is None:
                state = {k: v.numpy().copy() for k, v in mod.state_dict().items()}
            else:
                mod.load_state_dict(state)
            out = mod(*xs)
            assert out.device.startswith(device)
            out.sum().backward()
            results.append([out.cpu().numpy()] + [x.grad.cpu().numpy() for x in xs
                                                  if x.grad is not None]
                           + [p.grad.cpu().numpy() for p in mod.parameters()])
    finally:
        fake_device.uninstall()
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("which", ["instance_norm", "batch_norm"])
def test_batch_norm_kernels_with_eps_0_give_0_on_a_constant_channel(which, dtype):
    # PyTorch's batch-norm kernel (instance_norm; torch.batch_norm in training) takes the
    # inverse deviation as 0 where var + eps is 0: output and gradients 0 there, not NaN
    x = np.ones((4, 3, 5), dtype)
    x[:, 1] = np.arange(20).reshape(4, 5)
    x[1, 2] = np.arange(5)
    gy = np.random.default_rng(1).standard_normal(x.shape).astype(dtype)

    def run(lib, a, g):
        if which == "instance_norm":
            return lib.nn.functional.instance_norm(a, eps=0.0) * g
        return lib.batch_norm(a, None, None, None, None, True, 0.1, 0.0, False) * g

    tx = torch.tensor(x, requires_grad=True)
    t = run(torch, tx, torch.tensor(gy))
    (tg,) = torch.autograd.grad(t.sum(), tx, create_graph=True)
    (tgg,) = torch.autograd.grad((tg * tg).sum(), tx)
    rx = rg.tensor(x, requires_grad=True)
    r = run(rg, rx, rg.tensor(gy))
    (rgr,) = rg.autograd.grad(r.sum(), rx, create_graph=True)
    (rgg,) = rg.autograd.grad((rgr * rgr).sum(), rx)
    tol = 1e-10 if dtype == np.float64 else 2e-5
    assert not np.isnan(t.detach().numpy()).any()
    for a, b in ((r, t), (rgr, tg), (rgg, tgg)):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=tol, atol=tol)
    # forward mode and rg.jit take the same rule
    v = np.random.default_rng(2).standard_normal(x.shape).astype(dtype)
    _, tj = torch.func.jvp(lambda a: run(torch, a, torch.tensor(gy)), (torch.tensor(x),),
                           (torch.tensor(v),))
    _, rj = rg.func.jvp(lambda a: run(rg, a, rg.tensor(gy)), (rg.tensor(x),), (rg.tensor(v),))
    np.testing.assert_allclose(rj.numpy(), tj.numpy(), rtol=tol, atol=tol)
    step = rg.jit(lambda a: rg.autograd.grad(run(rg, a, rg.tensor(gy)).sum(), a)[0])
    for _ in range(2):
        np.testing.assert_allclose(step(rg.tensor(x, requires_grad=True)).numpy(),
                                   tg.detach().numpy(), rtol=tol, atol=tol)
