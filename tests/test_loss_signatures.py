"""mse_loss, cross_entropy, nll_loss and binary_cross_entropy_with_logits of rg.nn.functional
have PyTorch 2.13's signatures (the deprecated size_average/reduce included), so calls in
torch's positional order give torch's values and gradients; plus F.linear_cross_entropy."""

import inspect
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import retrograd as rg
import retrograd.nn.functional as F

NAMES = ["mse_loss", "cross_entropy", "nll_loss", "binary_cross_entropy_with_logits",
         "linear_cross_entropy"]


def _params(fn):
    return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]


@pytest.mark.parametrize("name", NAMES)
def test_signature_equals_torch(name):
    assert _params(getattr(F, name)) == _params(getattr(TF, name))
    assert name in F.__all__


def _rng(seed=0):
    return np.random.default_rng(seed)


def _cases():
    """(name, our args, torch args) built from the same float64 arrays, positional in
    torch's order."""
    r = _rng(1)
    x, y = r.standard_normal((4, 3)), r.standard_normal((4, 3))
    labels = np.array([0, 2, 1, 2])
    w_cls = r.uniform(0.5, 2.0, 3)
    w_el = r.uniform(0.5, 2.0, (4, 3))
    t01 = r.uniform(0, 1, (4, 3))
    pw = r.uniform(0.5, 2.0, 3)
    lp = np.log(np.exp(x) / np.exp(x).sum(1, keepdims=True))
    return [
        ("mse_loss", (x, y, None, None, "sum")),
        ("mse_loss", (x, y, None, None, "mean", w_el)),
        ("mse_loss", (x, y, None, None, "none", w_el)),
        ("cross_entropy", (x, labels, w_cls, None, 1, None, "mean", 0.2)),
        ("cross_entropy", (x, labels, None, None, -100, None, "none", 0.0)),
        ("cross_entropy", (x, labels, None, None, -100, None, "sum", 0.1)),
        ("cross_entropy", (x, t01, w_cls, None, -100, None, "mean", 0.1)),
        ("nll_loss", (lp, labels, w_cls, None, 2, None, "mean")),
        ("nll_loss", (lp, labels, None, None, -100, None, "none")),
        ("binary_cross_entropy_with_logits", (x, t01, w_el, None, None, "mean", pw)),
        ("binary_cross_entropy_with_logits", (x, t01, None, None, None, "none", None)),
    ]


def _both(args):
    """Our tensors and torch's: input and a float target require grad (class weights do
    not: torch's losses refuse a gradient for them), class indices are int64."""
    ours, theirs = [], []
    for i, a in enumerate(args):
        if isinstance(a, np.ndarray):
            if a.dtype.kind == "f":
                ours.append(rg.tensor(a, requires_grad=i < 2))
                theirs.append(torch.tensor(a, requires_grad=i < 2))
            else:
                ours.append(rg.tensor(a.astype(np.int64)))
                theirs.append(torch.tensor(a.astype(np.int64)))
        else:
            ours.append(a)
            theirs.append(a)
    return ours, theirs


@pytest.mark.parametrize("case", range(len(_cases())))
def test_positional_calls_in_torch_order_match_torch_values_and_grads(case):
    name, args = _cases()[case]
    ours, theirs = _both(args)
    out, ref = getattr(F, name)(*ours), getattr(TF, name)(*theirs)
    assert out.shape == tuple(ref.shape) and str(out.dtype) == "float64"
    np.testing.assert_allclose(out.numpy(), ref.detach().numpy(), rtol=1e-10, atol=1e-12)
    g = np.random.default_rng(case).standard_normal(tuple(ref.shape))
    out.backward(rg.tensor(g))
    ref.backward(torch.tensor(g))
    for a, b in zip(ours, theirs):
        if isinstance(b, torch.Tensor) and b.requires_grad:
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("case", [0, 1, 3, 7, 9])
def test_gradcheck(case):
    name, args = _cases()[case]
    ours, _ = _both(args)
    fn = getattr(F, name)
    diff = [i for i, a in enumerate(ours) if isinstance(a, rg.Tensor) and a.requires_grad]

    def f(*xs):
        full = list(ours)
        for i, v in zip(diff, xs):
            full[i] = v
        return fn(*full)

    assert rg.gradcheck(f, tuple(ours[i] for i in diff))


LEGACY = [(None, None), (True, None), (False, None), (None, True), (None, False),
          (True, True), (False, True), (True, False), (False, False)]


def _legacy_args(name, sa, red):
    r = _rng(2)
    x = r.standard_normal((4, 3))
    if name == "mse_loss":
        return (x, r.standard_normal((4, 3)), sa, red)
    if name == "binary_cross_entropy_with_logits":
        return (x, r.uniform(0, 1, (4, 3)), None, sa, red)
    labels = np.array([0, 2, 1, 1])
    if name == "nll_loss":
        x = x - np.log(np.exp(x).sum(1, keepdims=True))
    return (x, labels, None, sa, -100, red)


@pytest.mark.parametrize("name", NAMES[:4])
@pytest.mark.parametrize("sa,red", LEGACY)
def test_size_average_and_reduce_as_torch_with_its_warning(name, sa, red):
    ours, theirs = _both(_legacy_args(name, sa, red))
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        out = getattr(F, name)(*ours, reduction="none")
    with warnings.catch_warnings(record=True) as want:
        warnings.simplefilter("always")
        ref = getattr(TF, name)(*theirs, reduction="none")
    assert out.shape == tuple(ref.shape)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-10)
    deprecation = [str(w.message) for w in want if "size_average" in str(w.message)]
    assert [str(w.message) for w in got if "size_average" in str(w.message)] == deprecation
    assert bool(deprecation) == (sa is not None or red is not None)


@pytest.mark.parametrize("name", NAMES[:4])
def test_a_string_for_size_average_is_refused(name):
    # PyTorch reads F.mse_loss(x, y, 'sum') as size_average=True, i.e. 'mean'; refused here
    ours, _ = _both(_legacy_args(name, None, None))
    ours = list(ours)
    ours[2 if name == "mse_loss" else 3] = "sum"
    with pytest.raises(TypeError, match="size_average"):
        getattr(F, name)(*ours)


def _raises_like_torch(name, ours, theirs, kw=None, match=None):
    kw = kw or {}
    with pytest.raises(Exception) as want:
        getattr(TF, name)(*theirs, **kw)
    with pytest.raises(want.type, match=match):
        getattr(F, name)(*ours, **kw)


ERRORS = [
    ("mse_loss", lambda r: (r.standard_normal((4, 3)), r.standard_normal(5)), {}, r"\(4, 3\)"),
    ("mse_loss", lambda r: (r.standard_normal((4, 3)), r.standard_normal((4, 3))),
     {"reduction": "bad"}, "reduction"),
    ("mse_loss", lambda r: (r.standard_normal((4, 3)), r.standard_normal((4, 3)),
                            None, None, "mean", np.ones(3)), {}, "weight"),
    ("mse_loss", lambda r: (np.ones(3, np.int64), np.ones(3, np.int64)), {}, "floating"),
    ("cross_entropy", lambda r: (r.standard_normal((4, 3)), np.array([0, 1, 2, 1])),
     {"reduction": "bad"}, "reduction"),
    ("cross_entropy", lambda r: (r.standard_normal((4, 3)), np.array([0, 1, 7, 1])), {}, "7"),
    ("cross_entropy", lambda r: (r.standard_normal((4, 3)), np.array([0, 1, 2, 1])),
     {"label_smoothing": 1.5}, "label_smoothing"),
    ("cross_entropy", lambda r: (r.standard_normal((4, 3)), r.standard_normal(4)), {},
     "int64"),
    ("cross_entropy", lambda r: (r.standard_normal((4, 3)), np.array([0, 1, 2, 1]),
                                 np.ones(4)), {}, "weight"),
    ("nll_loss", lambda r: (r.standard_normal((4, 3)), np.array([0, 1, 2, 1])),
     {"reduction": "bad"}, "reduction"),
    ("nll_loss", lambda r: (r.standard_normal((4, 3)), np.array([0, 1, 9, 1])), {}, "9"),
    ("nll_loss", lambda r: (r.standard_normal((4, 3)), np.array([0, 1])), {}, r"\(4, 3\)"),
    ("nll_loss", lambda r: (r.standard_normal((4, 3)), r.standard_normal(4)), {}, "int64"),
    ("nll_loss", lambda r: (r.standard_normal((4, 3)), np.array([0, 1, 2, 1]), np.ones(2)),
     {}, "weight"),
    ("binary_cross_entropy_with_logits",
     lambda r: (r.standard_normal((4, 3)), r.uniform(0, 1, 3)), {}, r"\(4, 3\)"),
    ("binary_cross_entropy_with_logits",
     lambda r: (r.standard_normal((4, 3)), r.uniform(0, 1, (4, 3))), {"reduction": "bad"},
     "reduction"),
    ("binary_cross_entropy_with_logits",
     lambda r: (r.standard_normal((4, 3)), r.uniform(0, 1, (4, 3)), np.ones(5)), {}, "weight"),
    ("binary_cross_entropy_with_logits",
     lambda r: (r.standard_normal((4, 3)), np.ones((4, 3), np.int64)), {}, "target"),
]


@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_errors_as_torch(case):
    name, make, kw, match = ERRORS[case]
    args = make(_rng(3))
    ours = [rg.tensor(a) if isinstance(a, np.ndarray) else a for a in args]
    theirs = [torch.tensor(a) if isinstance(a, np.ndarray) else a for a in args]
    _raises_like_torch(name, ours, theirs, kw, match)


def test_rg_binary_cross_entropy_with_logits_keeps_atens_signature_and_values():
    r = _rng(4)
    x, t, w, pw = (r.standard_normal((4, 3)), r.uniform(0, 1, (4, 3)), r.uniform(0, 1, 3),
                   r.uniform(0.5, 2, 3))
    for red in (0, 1, 2):
        out = rg.binary_cross_entropy_with_logits(*map(rg.tensor, (x, t, w, pw)), red)
        ref = torch.binary_cross_entropy_with_logits(*map(torch.tensor, (x, t, w, pw)), red)
        np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-10)
    with pytest.raises(RuntimeError):
        torch.binary_cross_entropy_with_logits(torch.tensor(x), torch.ones(4, 3).long())
    with pytest.raises(RuntimeError, match="target"):
        rg.binary_cross_entropy_with_logits(rg.tensor(x), rg.ones(4, 3, dtype=rg.int64))


@pytest.mark.parametrize("kw,wshape,tshape", [
    ({}, (5, 3), (4,)),
    ({"linear_bias": True, "ignore_index": 1, "label_smoothing": 0.1}, (5, 3), (4,)),
    ({"reduction": "none"}, (5, 2, 3), (4, 2)),
    ({"weight": True}, (5, 3), (4, 5)),
])
def test_linear_cross_entropy_matches_torch(kw, wshape, tshape):
    r = _rng(5)
    x, lw = r.standard_normal((4, 3)), r.standard_normal(wshape)
    tgt = r.uniform(0, 1, tshape) if tshape == (4, wshape[0]) else r.integers(0, 5, tshape)
    extra = {"linear_bias": r.standard_normal(wshape[:-1]), "weight": r.uniform(0.5, 2, 5)}
    kw = {k: (extra[k] if v is True else v) for k, v in kw.items()}
    ours, theirs = _both([x, lw, tgt])
    ok = {k: rg.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
    tk = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
    out, ref = F.linear_cross_entropy(*ours, **ok), TF.linear_cross_entropy(*theirs, **tk)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-10)
    out.sum().backward()
    ref.sum().backward()
    for a, b in zip(ours[:2], theirs[:2]):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_linear_cross_entropy_errors_as_torch():
    r = _rng(6)
    x, lw = r.standard_normal((4, 3)), r.standard_normal((5, 2))
    _raises_like_torch("linear_cross_entropy", [rg.tensor(x), rg.tensor(lw), rg.zeros(4)],
                       [torch.tensor(x), torch.tensor(lw), torch.zeros(4)], match=r"\(5, 2\)")
    probs = r.uniform(0, 1, (4, 5))
    lw = r.standard_normal((5, 3))
    _raises_like_torch("linear_cross_entropy", [rg.tensor(x), rg.tensor(lw), rg.tensor(probs)],
                       [torch.tensor(x), torch.tensor(lw), torch.tensor(probs)],
                       {"ignore_index": 0}, match="ignore_index")
