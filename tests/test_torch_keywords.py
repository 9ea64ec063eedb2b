"""Arguments spelled by keyword as PyTorch names them (`torch.sum(input=x)`,
`torch.linalg.pinv(A, rcond=...)`, `torch.cdist(..., compute_mode=...)`,
`torch.save(obj, f=...)`): each call runs in both libraries and gives the same result."""

import io

import numpy as np
import pytest

import retrograd as rg

torch = pytest.importorskip("torch")

_A = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])
_B = np.array([[1.0, 2.0], [0.5, -1.0], [3.0, 0.25]])

# (expression, with `L` for the library and `A`/`B` for its tensors)
CALLS = [
    "L.exp(input=A)", "L.log(input=A)", "L.log1p(input=A)", "L.sqrt(input=A)",
    "L.abs(input=A)", "L.sin(input=A)", "L.cos(input=A)", "L.tan(input=A)",
    "L.tanh(input=A)", "L.sigmoid(input=A)", "L.relu(input=A - 1)", "L.sign(input=A - 1)",
    "L.sum(input=A, dim=0)", "L.mean(input=A, dim=1, keepdim=True)", "L.var(input=A, dim=0)",
    "L.std(input=A)", "L.prod(input=A, dim=1)", "L.logsumexp(input=A, dim=0)",
    "L.softmax(input=A, dim=0)", "L.log_softmax(input=A, dim=1)",
    "L.argmax(input=A, dim=0)", "L.argmin(input=A)",
    "L.broadcast_to(input=A[0], size=(2, 3))",
    "L.swapaxes(input=B, axis0=0, axis1=1)", "L.swapdims(input=B, dim0=1, dim1=0)",
    "L.hstack(tensors=[A, B])", "L.vstack(tensors=[A, A])", "L.dstack(tensors=[A, A])",
    "L.column_stack(tensors=[A, B])", "L.row_stack(tensors=[A, A])",
    "L.diff(input=A, dim=0)", "L.ravel(input=A)", "L.rot90(input=B, k=1, dims=[0, 1])",
    "L.trace(input=A)", "L.zeros_like(input=A)", "L.ones_like(input=A)",
    "L.full_like(input=A, fill_value=2.5)", "L.empty_like(input=A).shape",
    "L.cholesky_solve(input=B, input2=L.linalg.cholesky(A))",
    "L.triangular_solve(input=B, A=L.triu(A)).solution",
    "L.linalg.cholesky(input=A)", "L.linalg.cond(input=A)", "L.linalg.eigh(input=A)[0]",
    "L.linalg.eigvalsh(input=A)", "L.linalg.eigvals(input=A).real.sort().values",
    "L.linalg.matrix_exp(input=A / 4)", "L.linalg.matrix_norm(input=A)",
    "L.linalg.matrix_power(input=A, n=3)", "L.linalg.matrix_rank(input=A)",
    "L.linalg.norm(input=A)", "L.linalg.vector_norm(input=A, ord=3)", "L.linalg.pinv(input=A)",
    "L.linalg.solve_triangular(input=L.triu(A), B=B, upper=True)",
    "L.linalg.lstsq(input=A, b=B).solution",
    "L.linalg.householder_product(input=A, tau=B[:, 0])",
    "L.linalg.tensorsolve(input=A, other=B[:, 0])",
    "L.special.expit(input=A)", "L.special.log1p(input=A)",
    "L.special.logsumexp(input=A, dim=1)", "L.nn.functional.one_hot(input=L.arange(3))",
    "A.where(A > 1, other=0.0)",
    # PyTorch's older single tolerances: rcond (relative, atol 0) and tol (absolute)
    "L.linalg.pinv(S, 0.1)", "L.linalg.pinv(S, rcond=0.1)", "L.linalg.pinv(S, 0.1, True)",
    "L.linalg.matrix_rank(S, 0.25)", "L.linalg.matrix_rank(S, tol=0.1)",
    "L.linalg.matrix_rank(S, 0.5, False)",
    "L.linalg.svdvals(A, driver=None)", "L.linalg.svd(A, driver=None)[1]",
]


def _args(lib):
    s = np.diag([3.0, 1.0, 0.2])  # singular values on either side of the tolerances
    q = np.linalg.qr(_B @ _B.T + np.eye(3))[0]
    return {"L": lib, "A": lib.tensor(_A), "B": lib.tensor(_B), "S": lib.tensor(q @ s @ q.T)}


@pytest.mark.parametrize("call", CALLS)
def test_keyword_spelling_matches_torch(call):
    want = eval(call, _args(torch))
    got = eval(call, _args(rg))
    if isinstance(want, torch.Size):
        assert tuple(got) == tuple(want)
        return
    assert str(got.dtype).replace("rg.", "").split(".")[-1] \
        == str(want.dtype).split(".")[-1], call
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-10, atol=1e-12, err_msg=call)


@pytest.mark.parametrize("call", [
    "L.linalg.pinv(S, 0.1, atol=0.5)", "L.linalg.pinv(S, rcond=0.1, rtol=0.5)",
    "L.linalg.svd(A, driver='gesvd')", "L.linalg.svdvals(A, driver='gesvd')",
    "L.cdist(B, B, compute_mode='fast')",
])
def test_refused_as_torch_refuses(call):
    with pytest.raises(Exception) as want:
        eval(call, _args(torch))
    with pytest.raises(Exception) as got:
        eval(call, _args(rg))
    assert isinstance(got.value, type(want.value)) or issubclass(type(want.value),
                                                                 type(got.value))


_MODES = ["use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
          "donot_use_mm_for_euclid_dist"]


@pytest.mark.parametrize("mode", _MODES)
@pytest.mark.parametrize("rows", [(4, 6), (30, 5), (3, 40)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cdist_compute_mode_values_and_gradients(mode, rows, dtype):
    rng = np.random.default_rng(sum(rows))
    a, b = rng.normal(size=(2, rows[0], 4)).astype(dtype), rng.normal(size=(rows[1], 4))
    b = b.astype(dtype)
    g = rng.normal(size=(2, rows[0], rows[1])).astype(dtype)
    ta, tb = (torch.tensor(v, requires_grad=True) for v in (a, b))
    want = torch.cdist(ta, tb, compute_mode=mode)
    want.backward(torch.tensor(g))
    ra, rb = (rg.tensor(v, requires_grad=True) for v in (a, b))
    got = rg.cdist(ra, rb, compute_mode=mode)
    got.backward(rg.tensor(g))
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == "float32" else dict(rtol=1e-12, atol=1e-12)
    assert got.shape == tuple(want.shape) and str(got.dtype).endswith(dtype)
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), **tol)
    np.testing.assert_allclose(ra.grad.numpy(), ta.grad.numpy(), **tol)
    np.testing.assert_allclose(rb.grad.numpy(), tb.grad.numpy(), **tol)


def test_cdist_large_sets_round_as_torch():
    """Beyond 25 rows PyTorch takes |a|^2 - 2ab + |b|^2 from one product, so two points
    0.01 apart at 1000 from the origin are 0 apart in float32; the difference formula
    would say 0.01."""
    a = np.zeros((26, 2), np.float32)
    a[:, 0] = 1000.0
    b = a.copy()
    b[:, 1] = 0.01
    want = torch.cdist(torch.tensor(a), torch.tensor(b)).numpy()
    got = rg.cdist(rg.tensor(a), rg.tensor(b)).numpy()
    np.testing.assert_array_equal(got, want)
    exact = rg.cdist(rg.tensor(a), rg.tensor(b), compute_mode="donot_use_mm_for_euclid_dist")
    np.testing.assert_allclose(exact.numpy(), torch.cdist(
        torch.tensor(a), torch.tensor(b), compute_mode="donot_use_mm_for_euclid_dist").numpy())


def test_cdist_second_derivative_by_product():
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=(30, 3)), rng.normal(size=(4, 3))
    ta, tb = (torch.tensor(v, requires_grad=True) for v in (a, b))
    ga, = torch.autograd.grad(torch.cdist(ta, tb).sum(), ta, create_graph=True)
    want, = torch.autograd.grad((ga ** 2).sum(), tb)
    ra, rb = (rg.tensor(v, requires_grad=True) for v in (a, b))
    ha, = rg.autograd.grad(rg.cdist(ra, rb).sum(), ra, create_graph=True)
    got, = rg.autograd.grad((ha ** 2).sum(), rb)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-10, atol=1e-10)


def test_save_and_load_take_f_by_keyword(tmp_path):
    state = {"w": rg.tensor([1.0, 2.0])}
    buf = io.BytesIO()
    rg.save(state, f=buf)
    buf.seek(0)
    assert rg.load(f=buf)["w"].tolist() == [1.0, 2.0]
    rg.save(state, f=tmp_path / "c.pt")
    assert rg.load(tmp_path / "c.pt", weights_only=True)["w"].tolist() == [1.0, 2.0]
    with pytest.raises(TypeError, match="'f'"):
        rg.load()
    with pytest.raises(TypeError, match="twice"):
        rg.save(state, tmp_path / "d.pt", f=tmp_path / "d.pt")


SPLITS = [
    "L.tensor_split(V, sections=3)", "L.tensor_split(V, indices=[1, 3])",
    "L.tensor_split(V, tensor_indices_or_sections=L.tensor(2))",
    "L.tensor_split(V, L.tensor([1, 4]))", "V.tensor_split(sections=2, dim=0)",
    "V.hsplit(sections=2)", "V.hsplit(indices=[1])", "L.vsplit(A, sections=3)",
    "L.dsplit(A.reshape(1, 3, 3), indices=[1])",
    "(L.max(V, other=V.flip(0)),)", "(V.min(other=V.flip(0)),)",
]


@pytest.mark.parametrize("call", SPLITS)
def test_split_and_extreme_keywords_match_torch(call):
    def run(lib):
        args = _args(lib)
        args["V"] = lib.tensor([1.0, 5.0, 3.0, 4.0, 0.5, 2.0])
        return eval(call, args)
    want, got = run(torch), run(rg)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.numpy(), w.numpy())


@pytest.mark.parametrize("call", [
    "L.max(V, dim=0, other=V)", "L.tensor_split(V, 2, sections=2)", "L.tensor_split(V)",
    "L.tensor_split(V, L.tensor([1.0, 2.0]))",
])
def test_split_and_extreme_misuse_refused(call):
    for lib in (torch, rg):
        with pytest.raises((TypeError, RuntimeError)):
            eval(call, {"L": lib, "V": lib.tensor([1.0, 5.0, 3.0, 4.0])})


def _module_classes():
    import inspect
    for name in sorted(dir(torch.nn)):
        cls = getattr(torch.nn, name)
        if name.startswith("_") or not inspect.isclass(cls) or not hasattr(cls, "forward") \
                or not hasattr(rg.nn, name):
            continue
        yield name


@pytest.mark.parametrize("name", list(_module_classes()))
def test_module_forward_takes_torch_argument_names(name):
    """`layer(input=x)` (and every other forward argument by its PyTorch name) binds."""
    import inspect
    try:
        want = inspect.signature(getattr(torch.nn, name).forward)
    except (TypeError, ValueError):
        pytest.skip("torch's forward has no Python signature")
    got = inspect.signature(getattr(rg.nn, name).forward)
    if any(p.kind == p.VAR_KEYWORD for p in got.parameters.values()):
        return
    names = [p for p, v in want.parameters.items() if v.kind not in (v.VAR_POSITIONAL,
                                                                      v.VAR_KEYWORD)]
    assert [n for n in names if n not in got.parameters] == [], name


@pytest.mark.parametrize("make,shape", [
    ("L.nn.ReLU()", (2, 3)), ("L.nn.Softmax(dim=1)", (2, 3)), ("L.nn.MaxPool2d(2)", (1, 1, 4, 4)),
    ("L.nn.Upsample(scale_factor=2)", (1, 1, 2, 2)), ("L.nn.ZeroPad2d(1)", (1, 1, 2, 2)),
    ("L.nn.Sequential(L.nn.Tanh(), L.nn.SiLU())", (2, 3)), ("L.nn.GroupNorm(1, 2)", (2, 2, 3)),
    ("L.nn.InstanceNorm1d(2)", (2, 2, 3)),
])
def test_module_called_with_input_keyword(make, shape):
    x = np.linspace(-1.0, 1.0, int(np.prod(shape)), dtype=np.float32).reshape(shape)
    want = eval(make, {"L": torch})(input=torch.tensor(x))
    got = eval(make, {"L": rg})(input=rg.tensor(x))
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("call", [
    "np.sqrt(T)", "np.exp(T)", "np.maximum(T, 2.0)", "np.add.reduce(T)", "np.isnan(T)",
    "np.float64(2.0) * T", "np.float32(3.0) - T", "np.int64(2) ** T", "T * np.float64(2.0)",
    "np.float64(2.5) < T", "np.float64(4.0) == T",
])
def test_numpy_ufuncs_on_tensors_as_torch(call):
    """An operator with a NumPy scalar on the left is the tensor's operator; any other ufunc
    works on the values and wraps the result as a Tensor (bools as uint8), as PyTorch's
    `__array_wrap__` does."""
    want = eval(call, {"np": np, "T": torch.tensor([1.0, 4.0, 9.0])})
    got = eval(call, {"np": np, "T": rg.tensor([1.0, 4.0, 9.0])})
    assert isinstance(got, rg.Tensor) == isinstance(want, torch.Tensor), call
    w = want.numpy() if isinstance(want, torch.Tensor) else np.asarray(want)
    g = got.numpy() if isinstance(got, rg.Tensor) else np.asarray(got)
    np.testing.assert_allclose(g, w, rtol=1e-6)
    assert g.dtype == w.dtype, call


def test_numpy_ufunc_on_a_tensor_that_requires_grad_is_refused_as_torch():
    for L in (torch, rg):
        with pytest.raises(RuntimeError, match="requires grad"):
            np.sqrt(L.tensor([1.0, 4.0], requires_grad=True))
    a = np.zeros(2)
    a += rg.tensor([1.0, 2.0])
    np.testing.assert_array_equal(a, [1.0, 2.0])


def test_swapaxes_takes_torch_and_numpy_names():
    x = np.arange(24.0).reshape(2, 3, 4)
    want = np.swapaxes(x, axis1=0, axis2=2)
    np.testing.assert_array_equal(rg.swapaxes(rg.tensor(x), axis1=0, axis2=2).numpy(), want)
    np.testing.assert_array_equal(rg.swapaxes(rg.tensor(x), 0, axis2=2).numpy(), want)
    np.testing.assert_array_equal(rg.tensor(x).swapaxes(axis0=0, axis1=2).numpy(), want)
    with pytest.raises(TypeError):
        rg.swapaxes(rg.tensor(x), 0, 1, axis2=2)


def test_a_tensor_assigned_to_data_is_refused_clearly():
    """`.data` is a NumPy array here (SPEC): a Tensor put there is named when an op meets
    it, never computed with."""
    t = rg.zeros(2)
    t.data = rg.ones(2)
    for use in (lambda: t + 1, lambda: t * rg.zeros(2, requires_grad=True), lambda: t.sum()):
        with pytest.raises(TypeError, match=r"\.data holds a Tensor"):
            use()


@pytest.mark.parametrize("call", [
    "rg.zeros(2, dtype=np.str_)", "rg.ones(2, dtype=object)", "rg.empty(2, dtype='S3')",
    "rg.full((2,), 1, dtype='datetime64[s]')", "rg.ones(2).to(np.str_)",
    "rg.ones(2).astype('timedelta64[s]')",
])
def test_dtypes_torch_has_not_are_refused(call):
    """A string, bytes, object or date dtype is no tensor dtype: TypeError, as torch's
    `dtype must be torch.dtype`."""
    with pytest.raises(TypeError, match="tensor dtype"):
        eval(call, {"rg": rg, "np": np})


def _python_functions(module_path):
    import inspect
    tmod, rmod = torch, rg
    for part in module_path.split("."):
        tmod, rmod = getattr(tmod, part), getattr(rmod, part)
    for name in sorted(dir(tmod)):
        tf = getattr(tmod, name)
        if name.startswith("_") or inspect.isclass(tf) or not callable(tf) \
                or not hasattr(rmod, name):
            continue
        try:
            inspect.signature(tf)
        except (TypeError, ValueError):
            continue
        yield f"{module_path}.{name}"


_SIGNATURE_GAPS = {"nn.functional.normalize": {"out"}}  # out= of a Python-level function


@pytest.mark.parametrize("path", [p for m in ("nn.init", "nn.utils", "nn.functional")
                                  for p in _python_functions(m)])
def test_python_level_functions_take_torch_argument_names(path):
    """Every argument name of PyTorch's Python-level functions (nn.init, nn.utils,
    nn.functional) binds here too."""
    import inspect
    tf, rf = torch, rg
    for part in path.split("."):
        tf, rf = getattr(tf, part), getattr(rf, part)
    got = inspect.signature(rf).parameters
    if any(p.kind == p.VAR_KEYWORD for p in got.values()):
        return
    want = [n for n, p in inspect.signature(tf).parameters.items()
            if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    assert set(want) - set(got) - _SIGNATURE_GAPS.get(path, set()) == set(), path
