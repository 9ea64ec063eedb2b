"""Differential-fuzz findings (round 3: linalg, fft, special, views, promotion), each
checked against torch computed here."""
import math

import numpy as np
import pytest

import retrograd as rg

torch = pytest.importorskip("torch")


def _pair(a, requires_grad=False):
    a = np.array(a)
    t = torch.tensor(a, requires_grad=requires_grad)
    r = rg.tensor(a.copy(), requires_grad=requires_grad)
    return t, r


def _close(t, r, atol=1e-6):
    assert str(t.dtype).replace("torch.", "") == str(np.dtype(r.dtype))
    assert tuple(t.shape) == tuple(r.shape)
    np.testing.assert_allclose(r.detach().numpy(), t.detach().resolve_conj().numpy(),
                               rtol=1e-5, atol=atol)


def _raises_as_torch(fn_t, fn_r):
    with pytest.raises(Exception) as et:
        fn_t()
    base = next(c for c in type(et.value).__mro__ if c.__module__ == "builtins")
    with pytest.raises(base):
        fn_r()


# ------------------------------------------------------------------ linalg on empty matrices

@pytest.mark.parametrize("shape", [(0, 0), (2, 0, 0), (0, 3), (3, 0), (2, 0, 3)])
@pytest.mark.parametrize("dtype", ["float64", "complex128"])
@pytest.mark.parametrize("fn", ["svdvals", "svd", "eigvalsh", "eigh", "eigvals", "eig"])
def test_decompositions_of_empty_matrices(shape, dtype, fn):
    if fn.startswith("eig") and shape[-1] != shape[-2]:
        return
    t, r = _pair(np.zeros(shape, dtype), requires_grad=True)
    ot, orr = getattr(torch.linalg, fn)(t), getattr(rg.linalg, fn)(r)
    ot = ot if isinstance(ot, tuple) else (ot,)
    orr = orr if isinstance(orr, tuple) else (orr,)
    assert [tuple(x.shape) for x in ot] == [tuple(x.shape) for x in orr]
    gr = rg.autograd.grad([x.abs().sum() for x in orr], r, allow_unused=True)[0]
    gt = torch.autograd.grad([x.abs().sum() for x in ot], t, allow_unused=True)[0]
    assert tuple(gr.shape) == tuple(gt.shape)


@pytest.mark.parametrize("shape", [(0, 0), (2, 0, 0), (0, 3), (3, 0)])
@pytest.mark.parametrize("ord", ["fro", "nuc", 2, -2, 1, -1, math.inf, -math.inf])
def test_matrix_norm_of_empty_matrices(shape, ord):
    t, r = _pair(np.zeros(shape, "float32"), requires_grad=True)
    try:
        ot = torch.linalg.matrix_norm(t, ord)
    except Exception:
        _raises_as_torch(lambda: torch.linalg.matrix_norm(t, ord),
                         lambda: rg.linalg.matrix_norm(r, ord))
        return
    orr = rg.linalg.matrix_norm(r, ord)
    _close(ot, orr)
    assert orr.requires_grad == ot.requires_grad


@pytest.mark.parametrize("shape", [(0, 0), (2, 0, 0), (0, 2, 2), (0, 3), (3, 0)])
@pytest.mark.parametrize("p", [None, "fro", "nuc", 2, -2, 1, -1, math.inf, -math.inf])
def test_cond_of_empty_matrices(shape, p):
    t, r = _pair(np.zeros(shape, "float64"), requires_grad=True)
    try:
        ot = torch.linalg.cond(t, p)
    except Exception:
        _raises_as_torch(lambda: torch.linalg.cond(t, p), lambda: rg.linalg.cond(r, p))
        return
    orr = rg.linalg.cond(r, p)
    _close(ot, orr)
    assert orr.requires_grad == ot.requires_grad


def test_complex_det_gradient_of_singular_matrix():
    a = np.array([[1.0, 2, 3], [4, 5, 6], [7, 8, 9]]) * (1 + 0.5j)
    t, r = _pair(a, requires_grad=True)
    c = np.array(1 - 2j)
    gt, = torch.autograd.grad(torch.linalg.det(t), t, grad_outputs=torch.tensor(c))
    gr, = rg.autograd.grad(rg.linalg.det(r), r, grad_outputs=rg.tensor(c))
    _close(gt, gr, atol=1e-9)


def test_vector_norm_checks_input_and_dtype_as_torch():
    cases = [(np.array([1, 2]), None), (np.array([1, 2]), "float64"),
             (np.array([1.0, 2.0], "float32"), "complex64"),
             (np.array([1.0, 2.0], "float64"), "float32"),
             (np.array([1j, 2.0], "complex64"), "float64"),
             (np.array([1j, 2.0], "complex128"), "complex64")]
    for a, dt in cases:
        t, r = _pair(a)
        _raises_as_torch(
            lambda t=t, dt=dt: torch.linalg.vector_norm(t, dtype=dt and getattr(torch, dt)),
            lambda r=r, dt=dt: rg.linalg.vector_norm(r, dtype=dt and getattr(rg, dt)))
    t, r = _pair(np.array([1j, 2.0], "complex64"))
    _close(torch.linalg.vector_norm(t, dtype=torch.complex128),
           rg.linalg.vector_norm(r, dtype=rg.complex128))
    t, r = _pair(np.eye(2))
    _raises_as_torch(lambda: torch.linalg.matrix_norm(t, dtype=torch.complex64),
                     lambda: rg.linalg.matrix_norm(r, dtype=rg.complex64))


@pytest.mark.parametrize("fn", ["det", "inv", "solve", "cholesky", "qr", "eigh", "eigvals",
                                "svdvals", "pinv", "lstsq", "lu", "lu_factor", "tensorinv",
                                "householder_product", "vander", "mnorm_nuc", "mnorm_2",
                                "norm_2", "matrix_rank", "solve_triangular", "slogdet"])
def test_float16_refused_by_lapack_functions_as_torch(fn):
    calls = {"solve": lambda L, a: L.linalg.solve(a, a), "lstsq": lambda L, a: L.linalg.lstsq(a, a),
             "tensorinv": lambda L, a: L.linalg.tensorinv(a, ind=1),
             "householder_product": lambda L, a: L.linalg.householder_product(a, a[0]),
             "vander": lambda L, a: L.linalg.vander(a[0]),
             "mnorm_nuc": lambda L, a: L.linalg.matrix_norm(a, "nuc"),
             "mnorm_2": lambda L, a: L.linalg.matrix_norm(a, 2),
             "norm_2": lambda L, a: L.linalg.norm(a, 2),
             "solve_triangular": lambda L, a: L.linalg.solve_triangular(a, a, upper=True)}
    f = calls.get(fn, lambda L, a: getattr(L.linalg, fn)(a))
    t, r = _pair(np.eye(3, dtype="float16") * 2)
    _raises_as_torch(lambda: f(torch, t), lambda: f(rg, r))


@pytest.mark.parametrize("fn", ["matrix_exp", "mnorm_fro", "mnorm_1", "mnorm_inf", "norm",
                                "vector_norm", "matrix_power"])
def test_float16_kept_where_torch_takes_it(fn):
    calls = {"mnorm_fro": lambda L, a: L.linalg.matrix_norm(a),
             "mnorm_1": lambda L, a: L.linalg.matrix_norm(a, 1),
             "mnorm_inf": lambda L, a: L.linalg.matrix_norm(a, math.inf),
             "matrix_power": lambda L, a: L.linalg.matrix_power(a, 3)}
    f = calls.get(fn, lambda L, a: getattr(L.linalg, fn)(a))
    t, r = _pair(np.eye(3, dtype="float16") * 0.5 + 0.1)
    ot, orr = f(torch, t), f(rg, r)
    assert str(orr.dtype) == "float16"
    if fn == "matrix_exp":  # torch's float16 matrix_exp is inaccurate: the dtype only
        return
    np.testing.assert_allclose(orr.numpy().astype("float64"),
                               ot.numpy().astype("float64"), rtol=2e-2, atol=2e-3)


def test_vander_refuses_bool_and_cross_needs_equal_ranks():
    t, r = _pair(np.array([True, False]))
    _raises_as_torch(lambda: torch.linalg.vander(t), lambda: rg.linalg.vander(r))
    (ta, ra), (tb, rb) = _pair(np.ones((2, 3))), _pair(np.ones(3))
    _raises_as_torch(lambda: torch.linalg.cross(ta, tb), lambda: rg.linalg.cross(ra, rb))
    _raises_as_torch(lambda: torch.cross(ta, tb, dim=1), lambda: rg.cross(ra, rb, dim=1))


@pytest.mark.parametrize("shape,dim", [((3, 4), None), ((2, 3, 4), (0, 2)), ((3, 4), (0, 1)),
                                       ((2, 3, 4), None), ((3, 4), 1)])
@pytest.mark.parametrize("keepdim", [False, True])
def test_torch_norm_nuc(shape, dim, keepdim):
    a = np.random.default_rng(0).standard_normal(shape)
    t, r = _pair(a, requires_grad=True)
    try:
        ot = torch.norm(t, "nuc", dim=dim, keepdim=keepdim)
    except Exception:
        _raises_as_torch(lambda: torch.norm(t, "nuc", dim=dim, keepdim=keepdim),
                         lambda: rg.norm(r, "nuc", dim=dim, keepdim=keepdim))
        return
    orr = rg.norm(r, "nuc", dim=dim, keepdim=keepdim)
    _close(ot, orr, atol=1e-9)
    _close(torch.autograd.grad(ot.sum(), t)[0], rg.autograd.grad(orr.sum(), r)[0], atol=1e-9)


def test_householder_product_without_reflectors_keeps_the_batch():
    a = np.random.default_rng(0).standard_normal((2, 3, 3))
    t, r = _pair(a, requires_grad=True)
    ot = torch.linalg.householder_product(t, torch.zeros(2, 0, dtype=t.dtype))
    orr = rg.linalg.householder_product(r, rg.zeros(2, 0, dtype=r.dtype))
    _close(ot, orr)
    assert orr.requires_grad == ot.requires_grad


# ------------------------------------------------------------------ fft errors

@pytest.mark.parametrize("call", [
    lambda L, x: L.fft.rfft(x.to(L.complex64)), lambda L, x: L.fft.ihfft(x.to(L.complex64)),
    lambda L, x: L.fft.rfftn(x.to(L.complex64)), lambda L, x: L.fft.fft(x[:0]),
    lambda L, x: L.fft.rfft(x[:0]), lambda L, x: L.fft.fftn(x[:0]),
    lambda L, x: L.fft.ifft2(x.reshape(2, 3)[:, :0]),
    lambda L, x: L.fft.fftn(x, s=(3, 4)), lambda L, x: L.fft.irfftn(x, s=(3, 4)),
    lambda L, x: L.fft.fftfreq(4, dtype=L.int64), lambda L, x: L.fft.rfftfreq(4, dtype=L.int64),
    lambda L, x: L.fft.fftfreq(4, dtype=L.complex64), lambda L, x: L.fft.fftfreq(-1)])
def test_fft_errors_as_torch(call):
    t, r = _pair(np.arange(6.0))
    _raises_as_torch(lambda: call(torch, t), lambda: call(rg, r))


# ------------------------------------------------------------------ special

_SPECIAL_OUT = ["airy_ai", "bessel_j0", "bessel_y1", "entr", "erfcx", "i0e", "i1", "i1e",
                "log_ndtr", "modified_bessel_k0", "ndtr", "ndtri", "spherical_bessel_j0",
                "scaled_modified_bessel_k1", "xlog1py", "zeta", "logsumexp",
                "chebyshev_polynomial_t", "hermite_polynomial_h", "legendre_polynomial_p"]


@pytest.mark.parametrize("name", _SPECIAL_OUT)
def test_special_functions_take_out(name):
    x = np.array([0.3, 0.6, 0.9])
    args = {"logsumexp": lambda L, a: (a, 0)}.get(
        name, (lambda L, a: (a,)) if name not in ("xlog1py", "zeta") and "polynomial" not in name
        else (lambda L, a: (a, a + 1)))
    t, r = _pair(x)
    ot, orr = torch.empty(0, dtype=torch.float64), rg.empty(0, dtype=rg.float64)
    rt = getattr(torch.special, name)(*args(torch, t), out=ot)
    rr = getattr(rg.special, name)(*args(rg, r), out=orr)
    assert rr is orr and rt is ot
    _close(ot, orr, atol=1e-7)


@pytest.mark.parametrize("call", [
    lambda L, z: L.special.erf(z), lambda L, z: L.special.erfc(z),
    lambda L, z: L.special.erfinv(z), lambda L, z: L.erf(z), lambda L, z: L.special.i0e(z),
    lambda L, z: L.special.ndtr(z), lambda L, z: L.special.digamma(z),
    lambda L, z: L.special.log_ndtr(z), lambda L, z: L.floor(z)])
def test_special_complex_input_refused_as_torch(call):
    t, r = _pair(np.array([0.5 + 1j]))
    _raises_as_torch(lambda: call(torch, t), lambda: call(rg, r))


# ------------------------------------------------------------------ views and in-place

@pytest.mark.parametrize("view", ["b[[0, 2]]", "b.t().reshape(12)", "b[b > 1]", "b.mT.flatten()"])
@pytest.mark.parametrize("write", ["v.add_(1)", "v.squeeze_()", "v.unsqueeze_(0)", "v[0] = 1.0",
                                   "v.mul_(v)"])
def test_writes_into_copies_leave_the_base_version_alone(view, write):
    """A copy made by a view op (advanced indexing, a reshape of a strided tensor) does not
    share its base's memory, so writing into it must not make the base's saved values stale
    (was: 'modified by an inplace operation' at backward, torch gives the gradient)."""
    a = np.arange(12.0).reshape(3, 4) / 10 + 0.1
    res = []
    for L in (torch, rg):
        x = L.tensor(a, requires_grad=True)
        b = x.exp()
        ns = {"b": b}
        exec(f"v = {view}", ns)
        exec(write, ns)
        (b * 2).sum().backward()
        res.append(x.grad)
    _close(res[0], res[1], atol=1e-12)


# ------------------------------------------------------------------ promotion and dtype errors

@pytest.mark.parametrize("call", [
    lambda L, a: a < 1 + 2j, lambda L, a: a >= 2, lambda L, a: L.lt(a, a),
    lambda L, a: a.real.to(L.float32) > a, lambda L, a: L.maximum(a, a),
    lambda L, a: a // 2, lambda L, a: a % 2, lambda L, a: L.fmod(a, 2),
    lambda L, a: L.clamp(a.real, min=1 + 2j), lambda L, a: a.real.clone().clamp_(min=1j),
    lambda L, a: L.fmax(a, a)])
def test_complex_operands_refused_as_torch(call):
    t, r = _pair(np.array([1 + 1j, -2 + 0j, 0.5j], "complex64"))
    _raises_as_torch(lambda: call(torch, t), lambda: call(rg, r))


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "float32", "bool"])
@pytest.mark.parametrize("value", [1 + 2j, 2 + 0j, 2.7, -1.5, 1e10, math.inf, math.nan, 300, -129])
def test_fill_value_checks_as_torch(dtype, value):
    t, r = _pair(np.zeros(2, dtype))
    try:
        ot = t.clone().fill_(value)
    except Exception:
        _raises_as_torch(lambda: t.clone().fill_(value), lambda: r.clone().fill_(value))
        return
    _close(ot, r.clone().fill_(value))


@pytest.mark.parametrize("view,shape,write,base_write", [
    ("b[1:][:, ::2]", (2, 2), "v[...] = w", "b.div_(2)"),
    ("b.t()", (4, 3), "v.mul_(w)", "b.floor_()"),
    ("b[:, 1:3]", (3, 2), "v.addcmul_(w, w, value=0.5)", "b.clamp_(min=-0.5, max=0.5)"),
    ("b[0]", (4,), "v.copy_(w)", "b.mul_(3)"),
    ("b.view(12)[2:8]", (6,), "v += w", "b.exp_()")])
def test_view_of_plain_tensor_follows_later_writes_to_its_base(view, shape, write, base_write):
    """b does not require grad; a write of w into its view v gives b (and v) a history; a
    later in-place op on b must reach v's history too (was: v kept the old one, a silently
    wrong gradient for w)."""
    rng = np.random.default_rng(0)
    a, wv, c = rng.standard_normal((3, 4)), rng.standard_normal(shape), rng.standard_normal((3, 4))
    res = []
    for L in (torch, rg):
        b = L.tensor(a.copy())
        w = L.tensor(wv.copy(), requires_grad=True)
        ns = {"b": b, "w": w}
        exec(f"v = {view}", ns)
        exec(write, ns)
        exec(base_write, ns)
        loss = (b * L.tensor(c)).sum() + (ns["v"].reshape(-1) * 0.5).sum()
        loss.backward()
        res.append(w.grad)
    _close(res[0], res[1], atol=1e-12)


@pytest.mark.parametrize("shape_op", ["b.t_()", "b.unsqueeze_(0)", "b.transpose_(0, 1)",
                                      "b.squeeze_()"])
@pytest.mark.parametrize("view,write", [("b.view(12)", "v.mul_(w)"), ("b[1]", "v.add_(w)"),
                                        ("b[:, 1:3]", "v.copy_(w * 2)"),
                                        ("b.view(12)", "v.sub_(w, alpha=0.5)")])
def test_write_through_a_view_taken_before_an_in_place_shape_change(shape_op, view, write):
    """v = view of b; b.t_() (b itself now a transposed view); a write through v must
    use the memory layout v was taken from (was: b's new one, scrambling b's values)."""
    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 4))
    wshape = {"b.view(12)": (12,), "b[1]": (4,), "b[:, 1:3]": (3, 2)}[view]
    wv = rng.standard_normal(wshape)
    res = []
    for L in (torch, rg):
        x = L.tensor(a.copy(), requires_grad=True)
        w = L.tensor(wv.copy(), requires_grad=True)
        ns = {"b": x * 1.5, "w": w}
        exec(f"v = {view}", ns)
        exec(shape_op, ns)
        exec(write, ns)
        b, v = ns["b"], ns["v"]
        loss = (b.reshape(-1) * L.arange(12.0)).sum() + (v * 0.5).sum()
        gx, gw = L.autograd.grad(loss, (x, w))
        res.append((b, v, gx, gw))
    for t, r in zip(*res):
        _close(t, r, atol=1e-10)


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "float16"])
@pytest.mark.parametrize("alpha", [300, -300, 10**10, 70000.0, 2])
@pytest.mark.parametrize("fn", ["add", "sub"])
def test_alpha_must_fit_the_result_dtype(dtype, alpha, fn):
    t, r = _pair(np.ones(2, dtype))
    try:
        ot = getattr(torch, fn)(t, t, alpha=alpha)
    except Exception:
        _raises_as_torch(lambda: getattr(torch, fn)(t, t, alpha=alpha),
                         lambda: getattr(rg, fn)(r, r, alpha=alpha))
        return
    _close(ot, getattr(rg, fn)(r, r, alpha=alpha))


@pytest.mark.parametrize("view", ["b[0]", "b.view(2, 6)[1]", "b.t()", "b[::2]", "b.movedim(0, 1)",
                                  "b.tensor_split(2, 0)[0]", "b.unflatten(1, (2, 2))"])
@pytest.mark.parametrize("write", ["b.fill_(ws)", "b.masked_fill_(b < 0, ws)", "b.mul_(ws)",
                                   "b[1] = ws"])
def test_views_of_a_plain_tensor_get_its_new_history(view, write):
    """v is taken from b while b has no history; a write into b itself gives b one (ws
    requires grad): v's gradient flows to ws too, as torch regenerates v's grad_fn (was:
    v stayed a constant, a silently missing gradient)."""
    rng = np.random.default_rng(2)
    a, c = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    res = []
    for L in (torch, rg):
        b = L.tensor(a.copy())
        ws = L.tensor(0.7, requires_grad=True)
        ns = {"b": b, "ws": ws}
        exec(f"v = {view}", ns)
        exec(write, ns)
        v = ns["v"]
        assert v.requires_grad
        loss = (b * L.tensor(c)).sum() + (v.reshape(-1) * L.arange(v.numel())).sum()
        loss.backward()
        res.append((v, ws.grad))
    for t, r in zip(*res):
        _close(t, r, atol=1e-10)


@pytest.mark.parametrize("call", [lambda v: v.t_(), lambda v: v.squeeze_(),
                                  lambda v: v.unsqueeze_(0), lambda v: v.transpose_(0, 1)])
def test_in_place_shape_change_of_a_view_of_a_grad_leaf_refused(call):
    t, r = _pair(np.ones((3, 4)), requires_grad=True)
    _raises_as_torch(lambda: call(t[:, 1:3]), lambda: call(r[:, 1:3]))
    with torch.no_grad():
        ot = call(t[:, 1:3])
    with rg.no_grad():
        orr = call(r[:, 1:3])
    assert tuple(ot.shape) == tuple(orr.shape)
