"""rg.func.vmap over the whole public functional API: for every public function of rg, F,
linalg, fft and special (the example arguments of the jit audit), every distribution method
and every nn layer's forward, `vmap(f)` over a batch of 3 equals a Python loop of `f` over
the batch elements, stacked (values; and per-example gradients, `vmap(grad(f))`), whether
every tensor argument is batched or only some are (in_dims None for the others); or it
refuses with an error that names vmap. Never a silent mismatch: library code that read a
batched tensor's values in Python would see one batch element only."""

from __future__ import annotations

import numpy as np
import pytest
from test_jit_audit import (
    CASES,
    DISTRIBUTIONS,
    INVALID,
    LAYERS,
    METHODS,
    Case,
    _dist_case,
    _draws,
    _leaves,
    _loss_of,
)

import retrograd as rg
from retrograd.nn import functional as F

SEEDS = (21, 22, 23)  # the batch: one draw of every argument per seed
RANDOM = "random numbers"
VALUES = "reads the values of a batched tensor"

INPLACE = "in-place"

# Functions that refuse under vmap ("key" for every way of batching, "key@mode" for one),
# with what the error says.
REFUSES = {
    # random numbers would be shared by the batch
    "rg.rand_like": RANDOM, "rg.randn_like": RANDOM, "rg.randint_like": RANDOM,
    "rg.multinomial": RANDOM, "F.dropout[train]": RANDOM, "F.dropout1d": RANDOM,
    "F.feature_alpha_dropout": RANDOM, "F.scaled_dot_product_attention[dropout]": RANDOM,
    # the result's shape (or a Python result) depends on each batch element's values
    "rg.masked_select@all": VALUES, "rg.masked_select@last": VALUES,
    "rg.masked_select[broadcast]@all": VALUES, "rg.masked_select[broadcast]@last": VALUES,
    "rg.nonzero": VALUES, "rg.nonzero[as_tuple]": VALUES, "rg.nonzero[0d]": VALUES,
    "rg.repeat_interleave[tensor]@all": VALUES, "rg.repeat_interleave[tensor]@last": VALUES,
    "F.one_hot[infer]": VALUES, "rg.allclose": VALUES, "rg.allclose[near]": VALUES,
    # values computed outside the op table
    # per batch element (one vmap level), but not requiring grad nor nested
    "linalg.qr[complete]@requires_grad": VALUES, "linalg.qr[complete]@nested": VALUES,
    "rg.svd_lowrank": RANDOM, "rg.pca_lowrank": RANDOM,
    "rg.addmv_": INPLACE,
    # running statistics (and max_norm's rows) are updated in place with batched values
    "F.batch_norm[train]@all": "running_mean=None", "F.batch_norm[train]@first": "eval mode",
    "F.embedding[max_norm]": INPLACE,
}
REFUSES.update({  # reductions, sets and index writes: lengths that depend on the values
    "rg.unique": VALUES, "rg.unique_consecutive": VALUES,
    "rg.index_put_": INPLACE,
    # per batch element, as torch.func.vmap's fallback: these draws give unequal counts
    "rg.argwhere": "results differ in shape",
})
REFUSES.update({  # more layers (test_layers_more.py): random draws, in-place forms, statistics
    **{k: RANDOM for k in [
        "F.rrelu[train]", "F.gumbel_softmax", "rg.dropout[train]", "rg.alpha_dropout",
        "F.fractional_max_pool2d[random]",
        "rg.alpha_dropout_", "rg.feature_alpha_dropout", "rg.feature_alpha_dropout_",
        "rg.feature_dropout", "rg.feature_dropout_"]},
    **{f"F.{n}": INPLACE for n in [
        "relu_", "elu_", "celu_", "selu_", "leaky_relu_", "hardtanh_", "threshold_", "rrelu_"]},
    "F.instance_norm[stats]": "running_mean=None",
})
REFUSES.update({  # view copies and the torch_misc additions that read values in Python
    "rg.cond@all": VALUES, "rg.cond@first": VALUES, "rg.cond@requires_grad": VALUES,
    "rg.to_dlpack": VALUES,
})
REFUSES.update({  # torch.sin_ and its kin (api/inplace_functions.py): in-place writes
    f"rg.{n}": INPLACE for n in __import__("retrograd.api.inplace_functions",
                                           fromlist=["NAMES"]).NAMES})
REFUSES.update({  # PyTorch's spellings (api/torch_names.py), draws from tensors, attention
    **{k: RANDOM for k in ["rg.bernoulli", "rg.bernoulli[p]", "rg.normal", "rg.normal[mean]",
                           "rg.poisson", "F.multi_head_attention_forward[dropout]"]},
    "rg.equal": VALUES, "rg.equal[near]": VALUES, "rg.is_nonzero": VALUES,
    "rg.add[out]": INPLACE, "rg.mul[out]": INPLACE,  # a write into `out`, as torch's vmap
})
REFUSES["rg.binomial"] = RANDOM  # api/rng_extras.py
REFUSES.update({k: VALUES for k in [  # api/segment_reduce.py: lengths read in Python
    "rg.segment_reduce@all", "rg.segment_reduce@last", "rg.segment_reduce[offsets]@all",
    "rg.segment_reduce[offsets]@last"]})
REFUSES["rg.embedding_renorm_"] = VALUES  # reads indices and rows in Python
REFUSES.update({"F.grouped_mm[offs]@all": VALUES,  # api/grouped_mm.py: offs read in Python
                "F.grouped_mm[offs]@last": VALUES})
REFUSES.update({"rg.while_loop@all": VALUES, "rg.while_loop@first": VALUES,
                "rg.while_loop@requires_grad": VALUES})  # the loop's count per element
REFUSES["rg.native_dropout[train]"] = RANDOM  # api/native_norms.py
REFUSES.update({  # api/linalg_ldl.py: LAPACK through SciPy on the values, no op; inside
    # vmap once per batch element (forward.per_element), unless an input requires grad
    "linalg.ldl_factor@requires_grad": VALUES, "linalg.ldl_factor_ex@requires_grad": VALUES,
    "linalg.ldl_solve@requires_grad": VALUES,
})


def _refusal(key: str, mode: str) -> str | None:
    if f"{key}@{mode}" in REFUSES:  # "@requires_grad": refuses only then
        return REFUSES[f"{key}@{mode}"]
    mode = "all" if mode == "requires_grad" else mode
    return REFUSES.get(f"{key}@{mode}", REFUSES.get(key))


# ---------------------------------------------------------------- the check

def _flat(fn):
    """`fn` with its outputs flattened to a tuple of leaves."""
    return lambda *xs: tuple(_leaves(fn(*xs)))


def _stacked(rows: list[tuple], what: str) -> list:
    """The loop's results, leaf by leaf: tensors stacked along a new axis 0; a Python
    value must be the same for every batch element (else vmap could not return it)."""
    out = []
    for k, col in enumerate(zip(*rows)):
        if isinstance(col[0], rg.Tensor):
            if any(c.shape != col[0].shape for c in col):  # no batched tensor holds these
                out.append(_Differs(k))
            else:
                out.append(np.stack([c.data for c in col]))
        else:
            out.append(col[0] if all(c == col[0] for c in col) else _Differs(k))
    return out


class _Differs:
    """A Python result that differs between batch elements, or tensors whose shapes do:
    vmap must refuse."""

    def __init__(self, k: int) -> None:
        self.k = k


def _compare(got: tuple, want: list, what: str) -> None:
    assert len(got) == len(want), f"{what}: {len(got)} outputs, the loop gives {len(want)}"
    for k, (g, w) in enumerate(zip(got, want)):
        where = f"{what}: output {k}"
        assert not isinstance(w, _Differs), \
            f"{where} differs in value or shape per batch element; vmap returned {g!r}"
        if not isinstance(w, np.ndarray):
            assert g == w, where
            continue
        assert isinstance(g, rg.Tensor), f"{where}: {type(g).__name__}, not a Tensor"
        assert g.shape == w.shape, f"{where}: shape {g.shape}, the loop's is {w.shape}"
        assert g.dtype == w.dtype, f"{where}: dtype {g.dtype}, the loop's is {w.dtype}"
        if w.dtype.kind in "fc":
            np.testing.assert_allclose(g.data, w, rtol=1e-7, atol=1e-10, equal_nan=True,
                                       err_msg=where)
        else:
            np.testing.assert_array_equal(g.data, w, err_msg=where)


RAISES = "raises in eager mode too"


def _vmap_or_refuse(fn, in_dims, batched: list, per_element: list[list], what: str):
    """vmap(fn) on the batched arguments against the loop of fn over `per_element`: True
    if equal, the refusal's message if vmap raised naming itself, RAISES if the loop
    raised (and vmap raised the same kind of error)."""
    flat = _flat(fn)
    rows = []
    try:
        for args in per_element:
            rows.append(flat(*args))
    except Exception as e:  # noqa: BLE001 - not defined here in eager mode: vmap raises too
        with pytest.raises(type(e)):
            rg.func.vmap(flat, in_dims=in_dims)(*batched)
        return RAISES
    want = _stacked(rows, what)
    python = (bool, int, float, str, np.dtype)  # the same for every batch element
    out_dims = tuple(None if w is None or isinstance(w, python) else 0 for w in want)
    try:
        if all(d == 0 for d in out_dims):  # the result as fn gives it (named tuples, nesting)
            got = tuple(_leaves(rg.func.vmap(fn, in_dims=in_dims)(*batched)))
        else:
            got = rg.func.vmap(flat, in_dims=in_dims, out_dims=out_dims)(*batched)
    except Exception as e:  # noqa: BLE001 - the message decides
        if "vmap" not in str(e):
            raise AssertionError(f"{what}: vmap raised an error that does not name vmap: "
                                 f"{type(e).__name__}: {e}") from e
        return str(e)
    _compare(got, want, what)
    return True


def _modes(n: int) -> dict:
    """Which arguments are batched: all (also requiring grad, where floating: library code
    takes other routes then); and for several, only the first, only the last."""
    modes = {"all": (True,) * n, "requires_grad": (True,) * n}
    if n > 1:
        modes["first"] = (True,) + (False,) * (n - 1)
        modes["last"] = (False,) * (n - 1) + (True,)
    return modes


def _arguments(draws: list[list[np.ndarray]], which: tuple, diff=()):
    """(in_dims, batched arguments, per-element argument lists) for a batch of draws; an
    argument not batched takes the first draw's value."""
    in_dims = tuple(0 if b else None for b in which)
    batched = [rg.tensor(np.stack([d[k] for d in draws]) if b else draws[0][k].copy(),
                         requires_grad=k in diff) for k, b in enumerate(which)]
    per = [[rg.tensor((d if b else draws[0])[k].copy(), requires_grad=k in diff)
            for k, b in enumerate(which)] for d in draws]
    return in_dims, batched, per


def _check(key: str, case: Case, refusal: str | None, mode: str) -> None:
    draws = _draws(case, SEEDS)
    which = _modes(len(case.gens))[mode]
    floats = tuple(k for k, a in enumerate(draws[0]) if a.dtype.kind == "f")
    in_dims, batched, per = _arguments(draws, which, floats if mode == "requires_grad" else ())
    got = _vmap_or_refuse(case.fn, in_dims, batched, per, f"{key} [{mode}]")
    if got is RAISES:
        return
    if refusal == INPLACE and got is True:  # a write into a batched tensor that is no view:
        refusal = None  # batched as torch.vmap does (equal to the loop, checked above)
    if refusal is not None:
        assert got is not True, f"{key}: expected to refuse under vmap"
        assert refusal in got, f"{key}: refused saying {got}"
        return
    assert got is True, f"{key} [{mode}]: refused under vmap: {got}"
    diff = case.grad if isinstance(case.grad, tuple) else tuple(
        k for k, a in enumerate(draws[0]) if a.dtype.kind == "f" and case.grad)
    if not diff or mode != "all":
        return
    outs = _leaves(case.fn(*per[0]))
    rng = np.random.default_rng(5)
    weights = [rg.tensor(rng.standard_normal(o.shape + ((2,) if o.dtype.kind == "c" else ())))
               if isinstance(o, rg.Tensor) and o.dtype.kind in "fc" else None for o in outs]
    if not any(w is not None for w in weights):
        return
    g = rg.func.grad(_loss_of(case.fn, weights), argnums=diff)
    got = _vmap_or_refuse(g, in_dims, batched, per, f"{key} [per-example gradients]")
    assert got is True, f"{key}: the values batch but the gradients refuse: {got}"


def _case_modes():
    for key in sorted(CASES):
        case = CASES[key]
        floats = any(a.dtype.kind == "f" for a in _draws(case, SEEDS[:1])[0])
        for mode in _modes(len(case.gens)):
            if mode != "requires_grad" or floats:
                yield key, mode


@pytest.mark.parametrize(("key", "mode"), list(_case_modes()))
def test_vmap_of_each_public_function_equals_a_loop_or_refuses(key, mode):
    rg.set_default_dtype(np.float64)
    _check(key, CASES[key], _refusal(key, mode), mode)


def test_every_refusal_names_a_case():
    names = {f"{k}@{m}" for k, m in _case_modes()} | set(CASES) | {f"{k}@nested"
                                                                      for k in NESTED}
    assert not set(REFUSES) - names


# ---------------------------------------------------------------- distributions

@pytest.mark.parametrize("method", sorted(METHODS))
@pytest.mark.parametrize("name", sorted(DISTRIBUTIONS))
def test_vmap_of_each_distribution_method_equals_a_loop_or_refuses(name, method):
    """Parameters and values batched together."""
    rg.set_default_dtype(np.float64)
    case = _dist_case(name, method)
    try:
        case.fn(*[rg.tensor(a) for a in _draws(case, SEEDS[:1])[0]])
    except NotImplementedError:
        return  # not defined for this distribution in eager mode either
    _check(f"{name}.{method}", case, RANDOM if method in ("sample", "rsample") else None,
           "all")


# ---------------------------------------------------------------- nn layers

LAYER_REFUSES = {  # (layer, mode) -> what the error says
    ("Dropout", "train"): RANDOM,
    **{(n, "train"): "track_running_stats=False"
       for n in ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm"]},
    ("Embedding[max_norm]", "train"): INPLACE, ("Embedding[max_norm]", "eval"): INPLACE,
}
LAYER_REFUSES.update({  # more layers (test_layers_more.py)
    **{(n, "train"): RANDOM for n in ["RReLU", "Dropout1d", "Dropout2d", "Dropout3d",
                                      "AlphaDropout", "FeatureAlphaDropout"]},
    ("FractionalMaxPool2d", "train"): RANDOM, ("FractionalMaxPool2d", "eval"): RANDOM,
    **{(n, "train"): "track_running_stats=False" for n in [
        "InstanceNorm2d", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d",
        "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d"]},
})


@pytest.mark.parametrize("mode", ["train", "eval"])
@pytest.mark.parametrize("key", sorted(LAYERS))
def test_vmap_of_each_layer_forward_equals_a_loop_or_refuses(key, mode):
    """The layer's parameters are shared by the batch (closed over); its inputs batched."""
    make, gens = LAYERS[key]
    rg.set_default_dtype(np.float64)
    rg.manual_seed(0)
    layer = make()
    getattr(layer, mode)()
    for b in layer.buffers():  # running statistics: the loop must not move them between calls
        b.requires_grad = False
    draws = _draws(Case(None, *gens), SEEDS)
    state = [b.data.copy() for b in layer.buffers()]

    def fn(*xs):
        for b, s in zip(layer.buffers(), state):
            b.data[...] = s
        return layer(*xs)

    in_dims, batched, per = _arguments(draws, (True,) * len(gens))
    refusal = LAYER_REFUSES.get((key, mode), LAYER_REFUSES.get((key.split("[")[0], mode)))
    got = _vmap_or_refuse(fn, in_dims, batched, per, f"{key} [{mode}]")
    if refusal is not None and not (refusal == INPLACE and got is True):
        assert got is not True and refusal in got, f"{key} [{mode}]: {got}"
    else:
        assert got is True, f"{key} [{mode}]: refused under vmap: {got}"


# ---------------------------------------------------------------- invalid values

def _t(*values, **kw):
    return rg.tensor(np.array(*values, **kw))


D = rg.distributions
INVALID_MORE = {  # valid in the first batch element, invalid in the second
    "F.max_unpool1d": (lambda x, i: F.max_unpool1d(x, i, 2), [_t([[[1.0, 2.0]]]),
                                                            _t([[[0, 3]]])],
                       [_t([[[1.0, 2.0]]]), _t([[[0, 4]]])], IndexError),
    "rg.index_select": (lambda x, i: rg.index_select(x, 0, i), [_t([1.0, 2.0]), _t([1])],
                        [_t([1.0, 2.0]), _t([-1])], IndexError),
    "F.cross_entropy[nd]": (F.cross_entropy, [_t(np.ones((2, 3, 1))), _t([[0], [1]])],
                            [_t(np.ones((2, 3, 1))), _t([[0], [3]])], IndexError),
    "Normal(scale)": (lambda m, s: D.Normal(m, s).log_prob(m), [_t([0.0]), _t([1.0])],
                      [_t([0.0]), _t([-1.0])], ValueError),
    "Exponential.log_prob": (lambda r, v: D.Exponential(r).log_prob(v), [_t([1.0]), _t([1.0])],
                             [_t([1.0]), _t([-1.0])], ValueError),
    "Uniform.log_prob": (lambda lo, v: D.Uniform(lo, lo + 1).log_prob(v),
                         [_t([0.0]), _t([0.5])], [_t([0.0]), _t([1.5])], ValueError),
    "Uniform(low)": (lambda lo, hi: D.Uniform(lo, hi).mean, [_t([0.0]), _t([0.5])],
                     [_t([1.0]), _t([0.5])], ValueError),
    "Categorical.log_prob": (lambda p, v: D.Categorical(probs=p).log_prob(v),
                             [_t([0.5, 0.5]), _t(1)], [_t([0.5, 0.5]), _t(2)], ValueError),
    "Dirichlet": (lambda a, v: D.Dirichlet(a).log_prob(v), [_t([1.0, 2.0]), _t([0.5, 0.5])],
                  [_t([-1.0, 2.0]), _t([0.5, 0.5])], ValueError),
    "nn.utils.get_total_norm": (
        lambda g: rg.nn.utils.get_total_norm([g], error_if_nonfinite=True), [_t([1.0, 2.0])],
        [_t([np.inf, 2.0])], RuntimeError),
}


@pytest.mark.parametrize("nested", [False, True])
@pytest.mark.parametrize("key", sorted(set(INVALID) | set(INVALID_MORE)))
def test_vmap_over_an_invalid_batch_element_raises_as_the_loop_does(key, nested):
    """Checks of the values (ranges, supports, labels) must see every batch element, not
    only the one a batched tensor's `.data` holds (nested: the last of a 2 x 2 batch)."""
    fn, good, bad, error = {**INVALID, **INVALID_MORE}[key]
    fn(*good)
    with pytest.raises(error):
        fn(*bad)
    if nested:
        batch = [rg.tensor(np.stack([g.data, g.data, g.data, b.data]).reshape(
            (2, 2) + g.shape)) for g, b in zip(good, bad)]
        f = rg.func.vmap(rg.func.vmap(fn))
    else:
        batch = [rg.tensor(np.stack([g.data, b.data])) for g, b in zip(good, bad)]
        f = rg.func.vmap(fn)
    with pytest.raises(Exception) as e:  # noqa: PT011 - which one is checked below
        f(*batch)
    assert isinstance(e.value, error) or "vmap" in str(e.value), \
        f"{key}: {type(e.value).__name__}: {e.value}"


# ---------------------------------------------------------------- conversions and copies

CONVERSIONS = {
    "long": lambda x: (x * 3).long(), "int": lambda x: (x * 3).int(),
    "bool": lambda x: (x > 0).bool() & (x * 0 == 0).bool(), "to": lambda x: x.to(np.int64),
    "astype": lambda x: x.astype(np.int32), "float": lambda x: x.float(),
    "double": lambda x: (x * 2).double(), "clone": lambda x: x.clone(),
    "detach": lambda x: x.detach() * 2, "tensor": lambda x: rg.tensor(x) + 1,
    "tensor[dtype]": lambda x: rg.tensor(x, dtype=np.float32),
    "Tensor": lambda x: rg.Tensor(x * 2),
}


@pytest.mark.parametrize("requires_grad", [False, True])
@pytest.mark.parametrize("name", sorted(CONVERSIONS))
def test_vmap_of_conversions_and_copies_keeps_the_batch(name, requires_grad):
    """A dtype conversion or a copy of a batched tensor is batched (whether or not the
    tensor requires grad: a different route each)."""
    case = Case(CONVERSIONS[name], lambda rng: rng.uniform(-3.0, 3.0, (4,)))
    draws = _draws(case, SEEDS)
    in_dims, batched, per = _arguments(draws, (True,), (0,) if requires_grad else ())
    assert _vmap_or_refuse(case.fn, in_dims, batched, per, name) is True


# ---------------------------------------------------------------- nested vmap

NESTED = [  # a sample: routes by ops for batched values, checks, refusals, fallback loops
    "rg.interp", "rg.interp[sides]", "F.nll_loss[weight]", "F.cross_entropy[nd]",
    "F.cross_entropy[ignore]", "F.embedding", "F.max_unpool2d", "rg.gather", "rg.sort",
    "rg.masked_select", "rg.nonzero", "rg.allclose", "linalg.qr[complete]", "rg.kthvalue",
    "linalg.lstsq", "F.binary_cross_entropy", "rg.repeat_interleave[tensor]", "rg.median",
    "F.one_hot", "special.multigammaln", "rg.cdist", "F.layer_norm",
]


@pytest.mark.parametrize("key", NESTED)
def test_nested_vmap_equals_a_double_loop_or_refuses(key):
    """vmap(vmap(f)) over a 2 x 2 batch: every value read and check sees all four elements."""
    rg.set_default_dtype(np.float64)
    case = CASES[key]
    draws = _draws(case, (31, 32, 33, 34))
    n = len(case.gens)
    batched = [rg.tensor(np.stack([d[k] for d in draws]).reshape((2, 2) + draws[0][k].shape))
               for k in range(n)]
    rows = [_flat(case.fn)(*[rg.tensor(a.copy()) for a in d]) for d in draws]
    want = _stacked(rows, key)
    refusal = REFUSES.get(f"{key}@nested") or _refusal(key, "all")
    try:
        got = tuple(_leaves(rg.func.vmap(rg.func.vmap(case.fn))(*batched)))
    except Exception as e:  # noqa: BLE001 - the message decides
        assert refusal is not None and refusal in str(e), f"{key}: {type(e).__name__}: {e}"
        return
    assert refusal is None, f"{key}: expected to refuse under vmap"
    got = tuple(g.reshape((4,) + g.shape[2:]) if isinstance(g, rg.Tensor) else g for g in got)
    _compare(got, want, f"{key} [nested]")
