"""Every loss of torch.nn / torch.nn.functional / torch.* against PyTorch: values, dtypes and
shapes in float32 and float64 for each reduction, float64 gradients of every input that
requires grad (and against finite differences), the modules and their weight buffers,
the deprecated size_average/reduce, and bad input raising PyTorch's exception type with
a message naming the shapes. CTC has its own section (padded and concatenated targets,
zero_infinity, impossible alignments, lengths, rg.jit)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import retrograd as rg
import retrograd.nn.functional as F
from retrograd.jit import JitError

warnings.filterwarnings("ignore", message=".*reduction: 'mean' divides the total loss.*")
warnings.filterwarnings("ignore", message="kl_div: reduction='mean'")

REDUCTIONS = ("none", "mean", "sum")


def fl(*shape, lo=-2.0, hi=2.0):
    return lambda rng: rng.uniform(lo, hi, shape)


def pos(*shape):
    return fl(*shape, lo=0.2, hi=2.0)


def unit(*shape):
    return fl(*shape, lo=0.05, hi=0.95)


def signs(*shape):
    return lambda rng: np.where(rng.random(shape) < 0.5, -1.0, 1.0)


def ints(*shape, lo=0, hi=4):
    return lambda rng: rng.integers(lo, hi, shape)


def fixed(value):
    return lambda rng: np.asarray(value)


class Case:
    """`call(F, *tensors, reduction)` works on retrograd's F and torch's alike; `diff`: the
    inputs to differentiate (default: every floating one)."""

    def __init__(self, call, *gens, diff=None):
        self.call, self.gens, self.diff = call, gens, diff


def _red(name, **kw):
    return lambda mod, *xs, r: getattr(mod, name)(*xs, reduction=r, **kw)


X, Y = fl(3, 4), fl(3, 4)
CASES = {
    "l1_loss": Case(_red("l1_loss"), X, Y),
    "l1_loss[weight]": Case(lambda m, x, y, w, r: m.l1_loss(x, y, reduction=r, weight=w),
                            X, Y, pos(3, 4)),
    "smooth_l1_loss": Case(_red("smooth_l1_loss", beta=0.7), X, Y),
    "smooth_l1_loss[beta0]": Case(_red("smooth_l1_loss", beta=0.0), X, Y),
    "huber_loss": Case(_red("huber_loss", delta=0.6), X, Y),
    "huber_loss[weight]": Case(lambda m, x, y, w, r: m.huber_loss(x, y, r, 0.6, w),
                               X, Y, pos(3, 4)),
    "kl_div": Case(_red("kl_div"), X, unit(3, 4)),
    "kl_div[zeros]": Case(_red("kl_div"), fl(2, 2), fixed([[0.0, 0.5], [0.25, 0.0]])),
    "kl_div[log_target]": Case(_red("kl_div", log_target=True), X, Y),
    "kl_div[broadcast]": Case(_red("kl_div"), X, unit(1, 4)),
    "binary_cross_entropy": Case(_red("binary_cross_entropy"), unit(3, 4), unit(3, 4)),
    "binary_cross_entropy[weight]": Case(
        lambda m, x, y, w, r: m.binary_cross_entropy(x, y, w, reduction=r), unit(3, 4),
        unit(3, 4), pos(4), diff=(0, 1)),
    "binary_cross_entropy[edges]": Case(_red("binary_cross_entropy"),
                                        fixed([0.0, 1.0, 1e-9, 1 - 1e-9, 0.5]),
                                        fixed([0.0, 1.0, 0.0, 1.0, 0.3]), diff=()),
    "gaussian_nll_loss": Case(_red("gaussian_nll_loss"), X, Y, pos(3, 4)),
    "gaussian_nll_loss[short]": Case(_red("gaussian_nll_loss", full=True), X, Y, pos(3)),
    "gaussian_nll_loss[column]": Case(_red("gaussian_nll_loss", eps=0.5), X, Y, pos(3, 1)),
    "gaussian_nll_loss[clamped]": Case(_red("gaussian_nll_loss", eps=0.1), X, Y,
                                       fl(3, 4, lo=0.0, hi=0.2)),
    "gaussian_nll_loss[broadcast]": Case(_red("gaussian_nll_loss"), X, fl(1, 4), pos(3, 4)),
    "poisson_nll_loss": Case(_red("poisson_nll_loss"), X, fl(3, 4, lo=0.0, hi=4.0)),
    "poisson_nll_loss[full]": Case(_red("poisson_nll_loss", full=True), X,
                                   fl(3, 4, lo=0.0, hi=4.0)),
    "poisson_nll_loss[rate]": Case(_red("poisson_nll_loss", log_input=False, eps=0.01),
                                   pos(3, 4), fl(3, 4, lo=0.0, hi=4.0)),
    "poisson_nll_loss[broadcast]": Case(_red("poisson_nll_loss"), X, pos(4)),
    "margin_ranking_loss": Case(_red("margin_ranking_loss", margin=0.3), fl(5), fl(5),
                                signs(5)),
    "margin_ranking_loss[broadcast]": Case(_red("margin_ranking_loss"), X, fl(3, 1),
                                           signs(3, 4)),
    "hinge_embedding_loss": Case(_red("hinge_embedding_loss", margin=0.5), X, signs(3, 4),
                                 diff=(0,)),
    "hinge_embedding_loss[broadcast]": Case(_red("hinge_embedding_loss"), X, signs(3, 1),
                                            diff=(0,)),
    "hinge_embedding_loss[other targets]": Case(_red("hinge_embedding_loss"), fl(4),
                                                fixed([0.0, 1.0, -1.0, 2.0]), diff=(0,)),
    "soft_margin_loss": Case(_red("soft_margin_loss"), X, signs(3, 4), diff=(0,)),
    "soft_margin_loss[broadcast]": Case(_red("soft_margin_loss"), X, signs(3, 1), diff=(0,)),
    "multilabel_soft_margin_loss": Case(_red("multilabel_soft_margin_loss"), X, unit(3, 4)),
    "multilabel_soft_margin_loss[weight]": Case(
        lambda m, x, y, w, r: m.multilabel_soft_margin_loss(x, y, w, reduction=r), X,
        unit(3, 4), pos(4)),
    "multilabel_soft_margin_loss[1d]": Case(_red("multilabel_soft_margin_loss"), fl(4),
                                            unit(4)),
    "cosine_embedding_loss": Case(_red("cosine_embedding_loss", margin=0.2), X, Y, signs(3),
                                  diff=(0, 1)),
    "cosine_embedding_loss[1d]": Case(_red("cosine_embedding_loss"), fl(4), fl(4),
                                      fixed(-1.0), diff=(0, 1)),
    "cosine_embedding_loss[int target]": Case(_red("cosine_embedding_loss"), X, Y,
                                              fixed([1, 0, -1])),
    "multi_margin_loss": Case(_red("multi_margin_loss"), X, ints(3)),
    "multi_margin_loss[p2 weight]": Case(
        lambda m, x, y, w, r: m.multi_margin_loss(x, y, 2, 0.7, w, reduction=r), X, ints(3),
        pos(4), diff=(0,)),
    "multi_margin_loss[1d]": Case(_red("multi_margin_loss"), fl(4), fixed(2)),
    "multi_margin_loss[1d, 1 target]": Case(_red("multi_margin_loss"), fl(4), fixed([1])),
    "multilabel_margin_loss": Case(_red("multilabel_margin_loss"), fl(4, 5),
                                   fixed([[3, 0, -1, 1, 2], [0, 1, 2, 3, 4],
                                          [1, 1, -1, 2, -1], [-1, 2, 3, 0, 0]])),
    "multilabel_margin_loss[1d]": Case(_red("multilabel_margin_loss"), fl(4),
                                       fixed([2, 0, -1, 3])),
    "triplet_margin_loss": Case(_red("triplet_margin_loss"), X, Y, fl(3, 4)),
    "triplet_margin_loss[swap p1]": Case(_red("triplet_margin_loss", p=1, swap=True,
                                              margin=2.0), X, Y, fl(3, 4)),
    "triplet_margin_loss[p inf]": Case(_red("triplet_margin_loss", p=float("inf")), X, Y,
                                       fl(3, 4)),
    "triplet_margin_loss[p 1.5, eps]": Case(_red("triplet_margin_loss", p=1.5, eps=0.1), X,
                                            Y, fl(3, 4)),
    "triplet_margin_loss[p -1]": Case(_red("triplet_margin_loss", p=-1.0, margin=3.0), X, Y,
                                      fl(3, 4)),
    "triplet_margin_loss[1d]": Case(_red("triplet_margin_loss", margin=3.0), fl(4), fl(4),
                                    fl(4)),
    "triplet_margin_loss[broadcast]": Case(_red("triplet_margin_loss", margin=3.0), X, fl(1, 4),
                                           fl(3, 4)),
    "triplet_margin_with_distance_loss": Case(
        _red("triplet_margin_with_distance_loss", margin=2.0), X, Y, fl(3, 4)),
    "triplet_margin_with_distance_loss[custom swap]": Case(
        _red("triplet_margin_with_distance_loss", swap=True, margin=2.0,
             distance_function=lambda a, b: ((a - b) ** 2).sum(-1)), X, Y, fl(3, 4)),
}


def _tensors(lib, arrays, diff):
    mk = rg.tensor if lib is rg else torch.tensor
    return [mk(a, requires_grad=k in diff) for k, a in enumerate(arrays)]


def _draw(case, dtype, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for g in case.gens:
        a = np.asarray(g(rng))
        out.append(a.astype(dtype) if a.dtype.kind == "f" else a)
    return out


def _diff(case, arrays):
    if case.diff is not None:
        return case.diff
    return tuple(k for k, a in enumerate(arrays) if a.dtype.kind == "f")


def _same(out, ref, rtol, atol=0.0):
    assert isinstance(out, rg.Tensor)
    assert out.shape == tuple(ref.shape)
    assert str(out.dtype) == str(ref.dtype).replace("torch.", "")
    np.testing.assert_allclose(out.numpy(), ref.detach().numpy(), rtol=rtol, atol=atol)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("key", sorted(CASES))
def test_functional_matches_torch_in_float32_and_float64(key, reduction):
    case = CASES[key]
    for dtype, rtol, atol in ((np.float32, 2e-5, 1e-6), (np.float64, 1e-10, 1e-12)):
        arrays = _draw(case, dtype)
        out = case.call(F, *_tensors(rg, arrays, ()), r=reduction)
        ref = case.call(TF, *_tensors(torch, arrays, ()), r=reduction)
        _same(out, ref, rtol, atol)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("key", sorted(CASES))
def test_functional_gradients_match_torch(key, reduction):
    case = CASES[key]
    arrays = _draw(case, np.float64, seed=1)
    diff = _diff(case, arrays)
    if not diff:
        return
    xs, ts = _tensors(rg, arrays, diff), _tensors(torch, arrays, diff)
    out, ref = case.call(F, *xs, r=reduction), case.call(TF, *ts, r=reduction)
    w = np.random.default_rng(2).standard_normal(tuple(ref.shape))
    (out * rg.tensor(w)).sum().backward()
    (ref * torch.tensor(w)).sum().backward()
    for k in diff:
        assert ts[k].grad is not None, f"{key}: torch has no gradient for input {k}"
        np.testing.assert_allclose(xs[k].grad.numpy(), ts[k].grad.numpy(), rtol=1e-8,
                                   atol=1e-10, err_msg=f"{key}: input {k}")


@pytest.mark.parametrize("key", ["l1_loss[weight]", "smooth_l1_loss", "kl_div[log_target]",
                                 "gaussian_nll_loss[short]", "poisson_nll_loss[full]",
                                 "multilabel_soft_margin_loss[weight]", "cosine_embedding_loss",
                                 "multi_margin_loss[p2 weight]", "multilabel_margin_loss",
                                 "triplet_margin_loss[swap p1]", "binary_cross_entropy"])
def test_gradients_match_finite_differences(key):
    case = CASES[key]
    arrays = _draw(case, np.float64, seed=3)
    diff = _diff(case, arrays)
    xs = _tensors(rg, arrays, diff)
    assert rg.gradcheck(lambda *d: case.call(F, *[d[diff.index(k)] if k in diff else x
                                                  for k, x in enumerate(xs)], r="sum"),
                        tuple(xs[k] for k in diff))


def test_empty_batches_reduce_as_torch():
    for name, target in (("multi_margin_loss", np.zeros(0, np.int64)),
                         ("multilabel_margin_loss", np.zeros((0, 4), np.int64))):
        for r in ("none",):
            out = getattr(F, name)(rg.zeros(0, 4, dtype=rg.float64), rg.tensor(target),
                                   reduction=r)
            ref = getattr(TF, name)(torch.zeros(0, 4, dtype=torch.float64),
                                    torch.tensor(target), reduction=r)
            _same(out, ref, 0)
        # 'mean' and 'sum' of no samples: 0 (PyTorch's kernel returns its uninitialised
        # output there, 0 or a denormal)
        for r in ("mean", "sum"):
            out = getattr(F, name)(rg.zeros(0, 4), rg.tensor(target), reduction=r)
            assert out.shape == () and out.item() == 0.0


def test_soft_margin_loss_does_not_overflow():
    x, y = np.array([-100.0, 100.0, 3.0], np.float32), np.array([1.0, -1.0, 1.0], np.float32)
    out = F.soft_margin_loss(rg.tensor(x), rg.tensor(y), reduction="none").numpy()
    ref = TF.soft_margin_loss(torch.tensor(x), torch.tensor(y), reduction="none").numpy()
    assert np.isinf(ref[:2]).all()  # PyTorch's kernel overflows in float32
    np.testing.assert_allclose(out, [100.0, 100.0, ref[2]], rtol=1e-6)


# ---------------------------------------------------------------- the modules

def _modules():
    """(name, constructor kwargs, input generators, inputs to differentiate)."""
    w4 = np.linspace(0.5, 2.0, 4)
    return [
        ("L1Loss", {}, [X, Y], (0, 1)),
        ("MSELoss", {"reduction": "sum"}, [X, Y], (0, 1)),
        ("SmoothL1Loss", {"beta": 0.5}, [X, Y], (0, 1)),
        ("HuberLoss", {"delta": 0.5, "reduction": "none"}, [X, Y], (0, 1)),
        ("KLDivLoss", {"reduction": "batchmean", "log_target": True}, [X, Y], (0, 1)),
        ("BCELoss", {"weight": w4}, [unit(3, 4), unit(3, 4)], (0, 1)),
        ("BCEWithLogitsLoss", {"weight": w4, "pos_weight": w4[::-1].copy()},
         [X, unit(3, 4)], (0,)),
        ("NLLLoss", {"weight": w4, "ignore_index": 1}, [X, ints(3)], (0,)),
        ("NLLLoss2d", {}, [fl(2, 4, 2, 2), ints(2, 2, 2)], (0,)),
        ("CrossEntropyLoss", {"weight": w4, "label_smoothing": 0.1}, [X, ints(3)], (0,)),
        ("GaussianNLLLoss", {"full": True, "eps": 0.1}, [X, Y, pos(3, 1)], (0, 1, 2)),
        ("PoissonNLLLoss", {"log_input": False, "full": True}, [pos(3, 4), pos(3, 4)], (0,)),
        ("HingeEmbeddingLoss", {"margin": 0.5}, [X, signs(3, 4)], (0,)),
        ("SoftMarginLoss", {"reduction": "sum"}, [X, signs(3, 4)], (0,)),
        ("MultiLabelSoftMarginLoss", {"weight": w4}, [X, unit(3, 4)], (0,)),
        ("CosineEmbeddingLoss", {"margin": 0.1}, [X, Y, signs(3)], (0, 1)),
        ("MarginRankingLoss", {"margin": 0.1}, [fl(5), fl(5), signs(5)], (0, 1)),
        ("MultiMarginLoss", {"p": 2, "margin": 0.5, "weight": w4}, [X, ints(3)], (0,)),
        ("MultiLabelMarginLoss", {}, [X, fixed([[1, -1, 0, 0], [3, 2, 1, 0], [0, 0, 2, -1]])],
         (0,)),
        ("TripletMarginLoss", {"margin": 2.0, "p": 1, "swap": True}, [X, Y, fl(3, 4)],
         (0, 1, 2)),
        ("TripletMarginWithDistanceLoss", {"margin": 2.0, "swap": True}, [X, Y, fl(3, 4)],
         (0, 1, 2)),
    ]


@pytest.mark.parametrize("name,kwargs,gens,diff", _modules(), ids=lambda v: str(v)[:30])
def test_modules_match_torch_and_keep_weight_buffers(name, kwargs, gens, diff):
    rng = np.random.default_rng(4)
    arrays = [np.asarray(g(rng)) for g in gens]
    mod = getattr(rg.nn, name)(**{k: rg.tensor(v) if isinstance(v, np.ndarray) else v
                                  for k, v in kwargs.items()})
    ref_mod = getattr(torch.nn, name)(**{k: torch.tensor(v) if isinstance(v, np.ndarray)
                                         else v for k, v in kwargs.items()})
    xs, ts = _tensors(rg, arrays, diff), _tensors(torch, arrays, diff)
    out, ref = mod(*xs), ref_mod(*ts)
    _same(out, ref, 1e-10, 1e-12)
    w = np.random.default_rng(5).standard_normal(tuple(ref.shape))
    (out * rg.tensor(w)).sum().backward()
    (ref * torch.tensor(w)).sum().backward()
    for k in diff:
        np.testing.assert_allclose(xs[k].grad.numpy(), ts[k].grad.numpy(), rtol=1e-8,
                                   atol=1e-10, err_msg=f"{name}: input {k}")
    assert set(mod.state_dict()) == set(ref_mod.state_dict())
    assert mod.reduction == ref_mod.reduction


def test_module_constructors_check_as_torch():
    for make in (lambda nn: nn.MultiMarginLoss(p=3), lambda nn: nn.TripletMarginLoss(margin=0),
                 lambda nn: nn.TripletMarginWithDistanceLoss(margin=-1.0)):
        with pytest.raises(ValueError):
            make(torch.nn)
        with pytest.raises(ValueError):
            make(rg.nn)
    with pytest.raises(TypeError):
        torch.nn.HuberLoss(delta="1")
    with pytest.raises(TypeError, match="delta"):
        rg.nn.HuberLoss(delta="1")


@pytest.mark.parametrize("size_average,reduce", [(False, None), (None, False), (True, True),
                                                 (False, False)])
def test_deprecated_size_average_and_reduce_as_torch(size_average, reduce):
    x, y = np.random.default_rng(6).standard_normal((2, 3, 4))
    with pytest.warns(UserWarning, match="size_average and reduce"):
        mod = rg.nn.L1Loss(size_average, reduce)
    with pytest.warns(UserWarning):
        ref_mod = torch.nn.L1Loss(size_average, reduce)
    assert mod.reduction == ref_mod.reduction
    with pytest.warns(UserWarning):
        out = F.smooth_l1_loss(rg.tensor(x), rg.tensor(y), size_average, reduce)
    with pytest.warns(UserWarning):
        ref = TF.smooth_l1_loss(torch.tensor(x), torch.tensor(y), size_average, reduce)
    _same(out, ref, 1e-12)


def test_a_reduction_string_in_size_average_is_refused():
    with pytest.raises(TypeError, match="size_average.*reduction=..."):
        rg.nn.MSELoss("sum")
    with pytest.raises(TypeError, match="reduce"):
        F.l1_loss(rg.ones(2), rg.ones(2), None, "none")


# ---------------------------------------------------------------- torch.* spellings

def _top():
    """name -> (input generators, extra positional arguments to try)."""
    u, s = unit(3, 4), signs(3, 4)
    return {
        "binary_cross_entropy_with_logits": ([X, u, pos(4), pos(3, 4)], [(), (1,), (2,)]),
        "cosine_embedding_loss": ([X, Y, signs(3)], [(), (0.3,), (0.3, 2)]),
        "hinge_embedding_loss": ([X, s], [(), (0.5,), (0.5, 1)]),
        "kl_div": ([X, u], [(), (1,), (2,)]),
        "margin_ranking_loss": ([X, Y, signs(3, 1)], [(), (0.2,), (0.2, 2)]),
        "poisson_nll_loss": ([X, pos(3, 4)], [(True, True, 1e-8, 0), (False, False, 0.1, 1)]),
        "triplet_margin_loss": ([X, Y, fl(3, 4)], [(), (0.0,), (1.0, 1.0, 1e-6, True, 2)]),
    }


@pytest.mark.parametrize("name", sorted(_top()))
def test_torch_spellings_match_torch(name):
    gens, extras = _top()[name]
    arrays = [np.asarray(g(np.random.default_rng(7))) for g in gens]
    for extra in extras:  # torch has no gradient for the weights of bce_with_logits
        diff = (0, 1) if name == "binary_cross_entropy_with_logits" else tuple(
            range(len(arrays)))
        xs, ts = _tensors(rg, arrays, diff), _tensors(torch, arrays, diff)
        out, ref = getattr(rg, name)(*xs, *extra), getattr(torch, name)(*ts, *extra)
        _same(out, ref, 1e-10, 1e-12)
        w = np.random.default_rng(8).standard_normal(tuple(ref.shape))
        (out * rg.tensor(w)).sum().backward()
        (ref * torch.tensor(w)).sum().backward()
        for x, t in zip(xs, ts):
            if t.grad is not None:
                np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-8,
                                           atol=1e-10)
    assert rg.kl_div(xs[0], xs[1], reduction="sum").shape == ()  # names accepted too
    with pytest.raises(ValueError, match="reduction"):
        getattr(rg, name)(*xs, **({"log_input": True, "full": False, "eps": 1e-8}
                                  if name == "poisson_nll_loss" else {}), reduction=5)


# ---------------------------------------------------------------- bad input

def _arr(*shape, dtype=np.float64):
    return np.random.default_rng(9).uniform(0.1, 0.9, shape).astype(dtype)


BAD = {  # name -> (call on a library's F, arrays); PyTorch raises, and so must we
    "l1_loss[shapes]": (lambda m, a, b: m.l1_loss(a, b), [_arr(3, 4), _arr(2, 4)]),
    "kl_div[shapes]": (lambda m, a, b: m.kl_div(a, b), [_arr(3, 4), _arr(2, 4)]),
    "kl_div[int]": (lambda m, a, b: m.kl_div(a, b), [np.ones((2, 2), np.int64), _arr(2, 2)]),
    "smooth_l1_loss[beta]": (lambda m, a, b: m.smooth_l1_loss(a, b, beta=-1.0),
                             [_arr(3), _arr(3)]),
    "huber_loss[delta]": (lambda m, a, b: m.huber_loss(a, b, delta=0.0), [_arr(3), _arr(3)]),
    "huber_loss[weight]": (lambda m, a, b, w: m.huber_loss(a, b, weight=w),
                           [_arr(3, 4), _arr(3, 4), _arr(4)]),
    "l1_loss[weight]": (lambda m, a, b, w: m.l1_loss(a, b, weight=w),
                        [_arr(3, 4), _arr(3, 4), _arr(3)]),
    "binary_cross_entropy[shapes]": (lambda m, a, b: m.binary_cross_entropy(a, b),
                                     [_arr(3, 1), _arr(3)]),
    "binary_cross_entropy[input]": (lambda m, a, b: m.binary_cross_entropy(a, b),
                                    [_arr(3) + 1, _arr(3)]),
    "binary_cross_entropy[target]": (lambda m, a, b: m.binary_cross_entropy(a, b),
                                     [_arr(3), _arr(3) - 1]),
    "binary_cross_entropy[weight]": (lambda m, a, b, w: m.binary_cross_entropy(a, b, w),
                                     [_arr(2, 3), _arr(2, 3), _arr(2)]),
    "gaussian_nll_loss[var size]": (lambda m, a, b, v: m.gaussian_nll_loss(a, b, v),
                                    [_arr(3, 4), _arr(3, 4), _arr(2)]),
    "gaussian_nll_loss[negative var]": (lambda m, a, b, v: m.gaussian_nll_loss(a, b, -v),
                                        [_arr(3, 4), _arr(3, 4), _arr(3, 4)]),
    "gaussian_nll_loss[0-d var]": (lambda m, a, b, v: m.gaussian_nll_loss(a, b, v),
                                   [_arr(3, 4), _arr(3, 4), _arr()]),
    "poisson_nll_loss[shapes]": (lambda m, a, b: m.poisson_nll_loss(a, b),
                                 [_arr(3, 4), _arr(2, 4)]),
    "margin_ranking_loss[dims]": (lambda m, a, b, c: m.margin_ranking_loss(a, b, c),
                                  [_arr(3, 4), _arr(3, 4), _arr(3)]),
    "margin_ranking_loss[shapes]": (lambda m, a, b, c: m.margin_ranking_loss(a, b, c),
                                    [_arr(3), _arr(2), _arr(3)]),
    "hinge_embedding_loss[shapes]": (lambda m, a, b: m.hinge_embedding_loss(a, b),
                                     [_arr(3, 4), _arr(3)]),
    "soft_margin_loss[shapes]": (lambda m, a, b: m.soft_margin_loss(a, b),
                                 [_arr(3, 1), _arr(3, 4)]),
    "multilabel_soft_margin_loss[0-d]": (lambda m, a, b: m.multilabel_soft_margin_loss(a, b),
                                         [_arr(), _arr()]),
    "cosine_embedding_loss[target]": (lambda m, a, b, c: m.cosine_embedding_loss(a, b, c),
                                      [_arr(3, 4), _arr(3, 4), _arr(2)]),
    "cosine_embedding_loss[2-d target]": (lambda m, a, b, c: m.cosine_embedding_loss(a, b, c),
                                          [_arr(3, 4), _arr(3, 4), _arr(3, 1)]),
    "cosine_embedding_loss[dims]": (lambda m, a, b, c: m.cosine_embedding_loss(a, b, c),
                                    [_arr(4), _arr(4), _arr(1)]),
    "multi_margin_loss[range]": (lambda m, a, b: m.multi_margin_loss(a, b),
                                 [_arr(3, 4), np.array([0, 4, 1])]),
    "multi_margin_loss[negative]": (lambda m, a, b: m.multi_margin_loss(a, b),
                                    [_arr(3, 4), np.array([0, -1, 1])]),
    "multi_margin_loss[target size]": (lambda m, a, b: m.multi_margin_loss(a, b),
                                       [_arr(3, 4), np.array([0, 1])]),
    "multi_margin_loss[float target]": (lambda m, a, b: m.multi_margin_loss(a, b),
                                        [_arr(3, 4), _arr(3)]),
    "multi_margin_loss[3-d]": (lambda m, a, b: m.multi_margin_loss(a, b),
                               [_arr(1, 3, 4), np.array([0, 1, 2])]),
    "multi_margin_loss[p]": (lambda m, a, b: m.multi_margin_loss(a, b, p=3),
                             [_arr(3, 4), np.array([0, 1, 2])]),
    "multi_margin_loss[weight]": (lambda m, a, b, w: m.multi_margin_loss(a, b, weight=w),
                                  [_arr(3, 4), np.array([0, 1, 2]), _arr(3)]),
    "multi_margin_loss[int input]": (lambda m, a, b: m.multi_margin_loss(a, b),
                                     [np.ones((3, 4), np.int64), np.array([0, 1, 2])]),
    "multilabel_margin_loss[range]": (lambda m, a, b: m.multilabel_margin_loss(a, b),
                                      [_arr(2, 3), np.array([[0, 3, -1], [0, 1, 2]])]),
    "multilabel_margin_loss[below -1]": (lambda m, a, b: m.multilabel_margin_loss(a, b),
                                         [_arr(2, 3), np.array([[0, -2, -1], [0, 1, 2]])]),
    "multilabel_margin_loss[shapes]": (lambda m, a, b: m.multilabel_margin_loss(a, b),
                                       [_arr(2, 3), np.array([[0, 1], [0, 1]])]),
    "triplet_margin_loss[dims]": (lambda m, a, b, c: m.triplet_margin_loss(a, b, c),
                                  [_arr(3, 4), _arr(4), _arr(3, 4)]),
    "triplet_margin_loss[shapes]": (lambda m, a, b, c: m.triplet_margin_loss(a, b, c),
                                    [_arr(3, 4), _arr(2, 4), _arr(3, 4)]),
    "triplet_margin_loss[margin]": (lambda m, a, b, c: m.triplet_margin_loss(a, b, c, 0.0),
                                    [_arr(3, 4), _arr(3, 4), _arr(3, 4)]),
    "triplet_margin_with_distance_loss[dims]": (
        lambda m, a, b, c: m.triplet_margin_with_distance_loss(a, b, c),
        [_arr(3, 4), _arr(4), _arr(3, 4)]),
}


@pytest.mark.parametrize("key", sorted(BAD))
def test_bad_input_raises_torch_exception_type(key):
    call, arrays = BAD[key]
    with pytest.raises(Exception) as ref:
        call(TF, *_tensors(torch, arrays, ()))
    with pytest.raises(type(ref.value)) as got:
        call(F, *_tensors(rg, arrays, ()))
    shapes = {tuple(a.shape) for a in arrays if a.ndim}
    if "shapes" in key or "dims" in key:  # the message names the shapes involved
        for s in shapes:
            assert str(s) in str(got.value), f"{key}: {got.value}"


@pytest.mark.parametrize("name", [n for n in F.__all__ if n.endswith("_loss") or n in (
    "kl_div", "binary_cross_entropy")])
def test_an_invalid_reduction_raises_value_error(name):
    x = rg.tensor(_arr(3, 4))
    args = {
        "cross_entropy": (x, rg.tensor([0, 1, 2])), "nll_loss": (x, rg.tensor([0, 1, 2])),
        "multi_margin_loss": (x, rg.tensor([0, 1, 2])),
        "multilabel_margin_loss": (x, rg.tensor([[0, -1, 0, 0]] * 3)),
        "gaussian_nll_loss": (x, x, x), "cosine_embedding_loss": (x, x, rg.ones(3)),
        "margin_ranking_loss": (x, x, x), "triplet_margin_loss": (x, x, x),
        "triplet_margin_with_distance_loss": (x, x, x),
        "ctc_loss": (x.reshape(3, 1, 4), rg.tensor([[1]]), [3], [1]),
    }.get(name, (x, x))
    with pytest.raises(ValueError, match="reduction"):
        getattr(F, name)(*args, reduction="average")


def test_targets_checked_by_an_op_on_every_jit_replay():
    j = rg.jit(lambda x, y: F.multi_margin_loss(x, y))
    x = rg.tensor(_arr(3, 4))
    j(x, rg.tensor([0, 1, 2]))
    with pytest.raises(ValueError, match="target out of range"):
        j(x, rg.tensor([0, 1, 7]))


# ---------------------------------------------------------------- CTC

T, N, C = 6, 3, 5
PADDED = np.array([[1, 2, 2], [1, 1, 4], [3, 4, 4]])
CONCAT = np.array([1, 2, 2, 1, 1, 3])
IL, TL = np.array([6, 4, 3]), np.array([3, 2, 1])


def _ctc_pair(z, targets, il, tl, dtype=np.float64, raw=False, weighted=True, **kw):
    """Our loss and PyTorch's of log_softmax(z) (or z itself when `raw`), with the
    gradients of a random weighted sum (or the plain sum) with respect to z."""
    def run(lib, mk, tensor_of):
        x = mk(z.astype(dtype), requires_grad=True)
        lp = x if raw else lib.log_softmax(x, -1)
        lens = [tensor_of(v) if isinstance(v, np.ndarray) else v for v in (il, tl)]
        fn = F.ctc_loss if lib is rg else TF.ctc_loss
        out = fn(lp, tensor_of(targets), *lens, **kw)
        return x, out
    x, out = run(rg, rg.tensor, rg.tensor)
    t, ref = run(torch, torch.tensor, torch.tensor)
    w = np.random.default_rng(10).standard_normal(tuple(ref.shape))
    w = w if weighted else np.ones_like(w)
    (out * rg.tensor(w.astype(dtype))).sum().backward()
    (ref * torch.tensor(w.astype(dtype))).sum().backward()
    return out, ref, x.grad.numpy(), t.grad.numpy()


def _z(*shape, seed=11):
    return np.random.default_rng(seed).standard_normal(shape)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("targets", ["padded", "concatenated", "lists"])
def test_ctc_matches_torch(targets, reduction):
    y = CONCAT if targets == "concatenated" else PADDED
    il, tl = (IL.tolist(), tuple(TL.tolist())) if targets == "lists" else (IL, TL)
    for dtype, rtol in ((np.float32, 1e-5), (np.float64, 1e-11)):
        out, ref, g, gt = _ctc_pair(_z(T, N, C), y, il, tl, dtype, reduction=reduction)
        _same(out, ref, rtol, rtol)
        np.testing.assert_allclose(g, gt, rtol=100 * rtol, atol=100 * rtol)


@pytest.mark.parametrize("blank", [0, 2, 4])
def test_ctc_blank_and_repeats_match_torch(blank):
    y = np.array([[1, 1, 3], [3, 3, 1], [1, 3, 1]])
    y[y == blank] = (blank + 2) % C
    out, ref, g, gt = _ctc_pair(_z(T, N, C, seed=12), y, np.array([6, 6, 5]),
                                np.array([3, 2, 3]), blank=blank, reduction="none")
    _same(out, ref, 1e-11)
    np.testing.assert_allclose(g, gt, rtol=1e-9, atol=1e-12)


def test_ctc_unbatched_matches_torch():
    for y, reduction in ((PADDED[0], "none"), (PADDED[0, :2], "mean"),
                         (PADDED[0, :0], "sum"), (PADDED[:1], "mean")):
        out, ref, g, gt = _ctc_pair(_z(T, C, seed=13), y, np.array(5), np.array(y.shape[-1]),
                                    reduction=reduction)
        _same(out, ref, 1e-11)
        np.testing.assert_allclose(g, gt, rtol=1e-9, atol=1e-12)


def test_ctc_impossible_alignments_and_empty_lengths_as_torch():
    y = np.array([[1, 1, 1], [2, 3, 4], [1, 2, 3]])
    il, tl = np.array([4, 0, 0]), np.array([3, 0, 2])  # 1,1,1 needs 5 frames
    out, ref, g, gt = _ctc_pair(_z(T, N, C, seed=14), y, il, tl, reduction="none")
    _same(out, ref, 1e-11)
    assert np.isinf(out.numpy()[[0, 2]]).all() and out.numpy()[1] == 0
    np.testing.assert_array_equal(np.isnan(g), np.isnan(gt))  # NaN at the frames < il
    np.testing.assert_allclose(g, gt, rtol=1e-9, atol=1e-12)
    for reduction in REDUCTIONS:
        out, ref, g, gt = _ctc_pair(_z(T, N, C, seed=14), y, il, tl, reduction=reduction,
                                    zero_infinity=True)
        _same(out, ref, 1e-11)
        np.testing.assert_allclose(g, gt, rtol=1e-9, atol=1e-12)
        assert np.isfinite(g).all()


def test_ctc_gradient_is_the_derivative_and_differs_from_torch_by_exp_log_probs():
    """PyTorch's gradient with respect to log_probs is exp(log_probs) - posterior (the
    gradient with respect to the logits of a log_softmax); ours is the derivative,
    -posterior. Through log_softmax the two agree (tested above)."""
    z = np.log(np.random.default_rng(15).dirichlet(np.ones(C), (T, N)))
    _, _, g, gt = _ctc_pair(z, PADDED, IL, TL, raw=True, weighted=False, reduction="sum")
    frames = (np.arange(T)[:, None] < IL)[..., None]
    np.testing.assert_allclose(gt - g, np.exp(z) * frames, rtol=1e-9, atol=1e-12)
    lp = rg.tensor(z[:4, :2], requires_grad=True)
    assert rg.gradcheck(lambda a: F.ctc_loss(a, rg.tensor(PADDED[:2]), [4, 3], [3, 2],
                                             reduction="none"), (lp,))
    # differentiable once, as in PyTorch (whose double backward is not implemented)
    small = rg.tensor(z[:3, :1, :3], requires_grad=True)
    g, = rg.autograd.grad(F.ctc_loss(small, rg.tensor([[1]]), [3], [1]), [small],
                          create_graph=True)
    with pytest.raises(RuntimeError, match="ctc_posterior"):
        g.sum().backward()
    small_t = torch.tensor(z[:3, :1, :3], requires_grad=True)
    gt, = torch.autograd.grad(TF.ctc_loss(small_t, torch.tensor([[1]]), [3], [1]), [small_t],
                              create_graph=True)
    with pytest.raises(RuntimeError):
        gt.sum().backward()


def test_ctc_module_and_torch_spelling():
    z, zt = rg.tensor(_z(T, N, C), requires_grad=True), torch.tensor(_z(T, N, C),
                                                                     requires_grad=True)
    lp, ref_lp = rg.log_softmax(z, -1), torch.log_softmax(zt, -1)
    args, ref_args = (rg.tensor(PADDED), rg.tensor(IL), rg.tensor(TL)), (
        torch.tensor(PADDED), torch.tensor(IL), torch.tensor(TL))
    out = rg.nn.CTCLoss(reduction="sum", zero_infinity=True)(lp, *args)
    ref = torch.nn.CTCLoss(reduction="sum", zero_infinity=True)(ref_lp, *ref_args)
    _same(out, ref, 1e-11)
    out.backward()
    ref.backward()
    np.testing.assert_allclose(z.grad.numpy(), zt.grad.numpy(), rtol=1e-9, atol=1e-12)
    _same(rg.ctc_loss(lp, *args), torch.ctc_loss(ref_lp, *ref_args), 1e-11)  # 'none'
    _same(rg.ctc_loss(lp, *args, 0, 1), torch.ctc_loss(ref_lp, *ref_args, 0, 1), 1e-11)


def test_ctc_replays_under_jit_with_other_lengths_and_refuses_concatenated_targets():
    j = rg.jit(lambda lp, y, il, tl: F.ctc_loss(lp, y, il, tl, reduction="none"))
    lp = rg.log_softmax(rg.tensor(_z(T, N, C)), -1)
    for il, tl in ((IL, TL), (np.array([3, 6, 5]), np.array([1, 3, 0]))):
        got = j(lp, rg.tensor(PADDED), rg.tensor(il), rg.tensor(tl))
        want = F.ctc_loss(lp, rg.tensor(PADDED), rg.tensor(il), rg.tensor(tl),
                          reduction="none")
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)
    assert j.trace_count == 1
    with pytest.raises(ValueError, match="input_lengths"):
        j(lp, rg.tensor(PADDED), rg.tensor([7, 1, 1]), rg.tensor(TL))
    with pytest.raises(JitError, match="padded"):
        rg.jit(lambda lp, y: F.ctc_loss(lp, y, IL.tolist(), TL.tolist()))(lp, rg.tensor(CONCAT))


def _ctc_bad():
    lp = _z(T, N, C)
    return {  # torch raises RuntimeError (NotImplementedError for integer log_probs)
        "input_lengths > T": (lp, PADDED, np.array([7, 4, 3]), TL),
        "negative input_lengths": (lp, PADDED, np.array([-1, 4, 3]), TL),
        "target_lengths > S": (lp, PADDED, IL, np.array([4, 2, 1])),
        "negative target_lengths": (lp, PADDED, IL, np.array([-1, 2, 1])),
        "input_lengths size": (lp, PADDED, np.array([6, 4]), TL),
        "target_lengths size": (lp, PADDED, IL, np.array([3, 2])),
        "unbatched target size": (lp[:, 0], PADDED[0], np.array(6), np.array(2)),
        "float lengths": (lp, PADDED, IL.astype(np.float64), TL),
        "targets batch": (lp, PADDED[:2], IL, TL),
        "concatenated size": (lp, CONCAT[:5], IL, TL),
        "3-d targets": (lp, PADDED[..., None], IL, TL),
        "4-d log_probs": (lp[None], PADDED, IL, TL),
        "empty batch": (lp[:, :0], PADDED[:0], IL[:0], TL[:0]),
        "integer log_probs": (lp.astype(np.int64), PADDED, IL, TL),
    }


@pytest.mark.parametrize("key", sorted(_ctc_bad()))
def test_ctc_bad_input_raises_torch_exception_type(key):
    lp, y, il, tl = _ctc_bad()[key]

    def call(lib, mk, fn):
        lens = [mk(np.asarray(v)) if isinstance(v, np.ndarray) else v for v in (il, tl)]
        return fn(mk(lp), mk(y), *lens)
    with pytest.raises(Exception) as ref:
        call(torch, torch.tensor, TF.ctc_loss)
    with pytest.raises(type(ref.value)):
        call(rg, rg.tensor, F.ctc_loss)


def test_ctc_refuses_what_torch_computes_silently():
    """PyTorch reads out-of-range labels from arbitrary memory and documents that a target
    may not hold the blank (its gradient is then wrong); both are refused here."""
    lp = rg.tensor(_z(T, N, C))
    with pytest.raises(IndexError, match="got 5"):
        F.ctc_loss(lp, rg.tensor([[1, 5, 2], [1, 1, 1], [2, 2, 2]]), IL, TL)
    with pytest.raises(RuntimeError, match="blank"):
        F.ctc_loss(lp, rg.tensor([[1, 0, 2], [1, 1, 1], [2, 2, 2]]), IL, TL)
    with pytest.raises(RuntimeError, match="blank must be in label range"):
        F.ctc_loss(lp, rg.tensor(PADDED), IL, TL, blank=C)
    # padding past each target length is never read, whatever it holds
    y = PADDED.copy()
    y[2, 1:] = [-7, 99]
    np.testing.assert_allclose(F.ctc_loss(lp, rg.tensor(y), IL, TL, reduction="none").numpy(),
                               F.ctc_loss(lp, rg.tensor(PADDED), IL, TL,
                                          reduction="none").numpy())


# ---------------------------------------------------------------- layers with a loss

def _copy_params(mod, ref) -> None:
    mod.load_state_dict({k: rg.tensor(v.detach().numpy()) for k, v in ref.state_dict().items()})


def _grads_match(mod, ref) -> None:
    for (k, p), (k2, q) in zip(sorted(mod.named_parameters()), sorted(ref.named_parameters())):
        assert k == k2
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-9, atol=1e-12,
                                   err_msg=k)


@pytest.mark.parametrize("kwargs,x_shape,y_shape", [
    ({}, (5, 6), (5,)),
    ({"bias": True, "out_features": (2, 3), "label_smoothing": 0.1}, (5, 6), (5, 2, 3)),
    ({"bias": True, "ignore_index": 1, "reduction": "none"}, (6,), ()),
    ({"reduction": "sum", "weight": np.array([1.0, 2.0, 0.5, 1.5])}, (5, 6), (5,)),
])
def test_linear_cross_entropy_loss_matches_torch(kwargs, x_shape, y_shape):
    torch.manual_seed(0)
    t_kw = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    r_kw = {k: rg.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    ref = torch.nn.LinearCrossEntropyLoss(6, 4, **t_kw).double()
    mod = rg.nn.LinearCrossEntropyLoss(6, 4, dtype=rg.float64, **r_kw)
    _copy_params(mod, ref)
    rng = np.random.default_rng(16)
    x, y = rng.standard_normal(x_shape), rng.integers(0, 4, y_shape)
    xr, xt = rg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, want = mod(xr, rg.tensor(y)), ref(xt, torch.tensor(y))
    _same(out, want, 1e-10, 1e-12)
    out.sum().backward()
    want.sum().backward()
    np.testing.assert_allclose(xr.grad.numpy(), xt.grad.numpy(), rtol=1e-9, atol=1e-12)
    _grads_match(mod, ref)
    with pytest.raises(RuntimeError):
        rg.nn.LinearCrossEntropyLoss(6, 4, weight=rg.ones(3))
    with pytest.raises(RuntimeError):
        mod(rg.tensor(rng.standard_normal((5, 7))), rg.tensor(y))


def test_adaptive_log_softmax_with_loss_matches_torch():
    torch.manual_seed(0)
    ref = torch.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 6], div_value=2.0,
                                              head_bias=True).double()
    mod = rg.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 6], div_value=2.0, head_bias=True,
                                           dtype=rg.float64)
    _copy_params(mod, ref)
    rng = np.random.default_rng(17)
    x, y = rng.standard_normal((6, 8)), np.array([0, 4, 9, 2, 7, 5])
    xr, xt = rg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, want = mod(xr, rg.tensor(y)), ref(xt, torch.tensor(y))
    _same(out.output, want.output, 1e-10, 1e-12)
    _same(out.loss, want.loss, 1e-10, 1e-12)
    out.loss.backward()
    want.loss.backward()
    np.testing.assert_allclose(xr.grad.numpy(), xt.grad.numpy(), rtol=1e-9, atol=1e-12)
    _grads_match(mod, ref)
    _same(mod.log_prob(rg.tensor(x)), ref.log_prob(torch.tensor(x)), 1e-10, 1e-12)
    _same(mod.predict(rg.tensor(x)), ref.predict(torch.tensor(x)), 0)
    one, one_t = mod(rg.tensor(x[1]), rg.tensor(y[1])), ref(torch.tensor(x[1]),
                                                           torch.tensor(y[1]))
    _same(one.output, one_t.output, 1e-10, 1e-12)
    for bad in (np.array([0, 10, 1, 1, 1, 1]), np.array([0, -1, 1, 1, 1, 1])):
        with pytest.raises(RuntimeError):
            ref(torch.tensor(x), torch.tensor(bad))
        with pytest.raises(RuntimeError, match="target values"):
            mod(rg.tensor(x), rg.tensor(bad))
    with pytest.raises(RuntimeError):
        mod(rg.tensor(x), rg.tensor(y[:3]))
    with pytest.raises(ValueError):
        rg.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [6, 3])
