"""Gaps found by running PyTorch's OpInfo error inputs (the exception each bad call
raises) and reference inputs (larger samples with extremal values) over ops a-z against
retrograd, each rebuilt here by hand and compared with torch computed in the test."""

import numpy as np
import pytest
import torch
from port_compare import as_np

import retrograd as rg


def close(a, b, tol: float = 1e-10) -> None:
    """retrograd's `a` equals torch's `b`: shape, dtype, NaN and inf places exactly, the
    finite values to `tol` relative to the largest finite |b|."""
    a, b = as_np(a), as_np(b)
    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, a.dtype, b.shape, b.dtype)
    if a.dtype.kind in "biu":
        np.testing.assert_array_equal(a, b)
        return
    fin = np.isfinite(b)
    np.testing.assert_array_equal(a[~fin], b[~fin])  # NaN equals NaN here
    s = max(np.abs(b[fin]).max(initial=0.0), 1e-30)
    np.testing.assert_allclose(a[fin], b[fin], rtol=tol, atol=tol * s)


def _r(t: torch.Tensor) -> rg.Tensor:
    """The same values in retrograd, requiring grad when `t` does."""
    out = rg.tensor(t.detach().numpy().copy())
    return out.requires_grad_(True) if t.requires_grad else out


# ---------------------------------------------------------------- mvlgamma

@pytest.mark.parametrize("p", [1, 3])
def test_mvlgamma_takes_x_below_its_old_domain(p):
    """torch 2.13 computes sum lgamma(x - j/2) for any x (inf at the poles, NaN for NaN)
    where it used to refuse x <= (p - 1) / 2; values and gradients as torch's."""
    x = torch.tensor([-2.5, -0.7, 0.0, 0.3, 0.9, 1.0, 2.6, float("nan")], dtype=torch.float64,
                     requires_grad=True)
    e = torch.mvlgamma(x, p)
    a = rg.mvlgamma(_r(x), p)
    close(a, e)
    close(rg.special.multigammaln(_r(x), p), torch.special.multigammaln(x, p))
    g = torch.linspace(-1, 1, 8, dtype=torch.float64)
    (ge,) = torch.autograd.grad(e, x, g)
    rx = _r(x)
    (ga,) = rg.autograd.grad(rg.mvlgamma(rx, p), rx, _r(g))
    close(ga, ge)


# ---------------------------------------------------------------- local_response_norm

@pytest.mark.parametrize("shape", [(2, 6, 3), (1, 5, 3, 4)])
def test_local_response_norm_of_int64_as_torch(shape):
    """torch takes an int64 input (its avg_pool averages the integer squares with integer
    division) and gives the default float dtype; retrograd refused it."""
    x = torch.randint(-9, 10, shape, generator=torch.Generator().manual_seed(0))
    for size in (2, 3):
        e = torch.nn.functional.local_response_norm(x, size, alpha=0.3, beta=0.6, k=1.5)
        a = rg.nn.functional.local_response_norm(_r(x), size, alpha=0.3, beta=0.6, k=1.5)
        close(a, e, 1e-6)
    xi = torch.ones(1, 3, 2, dtype=torch.int32)
    with pytest.raises(NotImplementedError):
        torch.nn.functional.local_response_norm(xi, 2)
    with pytest.raises(NotImplementedError):
        rg.nn.functional.local_response_norm(_r(xi), 2)


# ---------------------------------------------------------------- out= dtypes

OUT_SAME_DTYPE = {  # torch's kernels that write only into an out of the result's dtype
    "aminmax": lambda m, x, **o: m.aminmax(x, dim=0, **o),
    "sort": lambda m, x, **o: m.sort(x, 1, **o),
    "topk": lambda m, x, **o: m.topk(x, 2, **o),
    "kthvalue": lambda m, x, **o: m.kthvalue(x, 2, **o),
    "mode": lambda m, x, **o: m.mode(x, 1, **o),
    "cummax": lambda m, x, **o: m.cummax(x, 1, **o),
    "cummin": lambda m, x, **o: m.cummin(x, 0, **o),
    "logcumsumexp": lambda m, x, **o: m.logcumsumexp(x, 1, **o),
    "tril": lambda m, x, **o: m.tril(x, **o),
    "triu": lambda m, x, **o: m.triu(x, 1, **o),
    "frexp": lambda m, x, **o: m.frexp(x, **o),
    "renorm": lambda m, x, **o: m.renorm(x, 2, 0, 1.0, **o),
    "quantile": lambda m, x, **o: m.quantile(x, 0.3, dim=1, **o),
    "take": lambda m, x, **o: m.take(x, m.tensor([0, 5]), **o),
    "take_along_dim": lambda m, x, **o: m.take_along_dim(x, m.tensor([[0], [2], [1]]), 1, **o),
    "qr": lambda m, x, **o: m.qr(x, **o),
    "addmv": lambda m, x, **o: m.addmv(x[:, 0], x, x[0], **o),
    "baddbmm": lambda m, x, **o: m.baddbmm(x[None], x[None], x[None], **o),
    "float_power": lambda m, x, **o: m.float_power(x, 2, **o),
}


def _outs(m, res, dt):
    """Empty out tensors for `res`: `dt` for floating fields, the index fields' own."""
    if isinstance(res, tuple):
        return tuple(_outs(m, r, dt) for r in res)
    return m.empty(0, dtype=dt if str(res.dtype).split(".")[-1][0] in "fc" else res.dtype)


@pytest.mark.parametrize("name", sorted(OUT_SAME_DTYPE))
def test_out_of_another_dtype_is_refused_as_torch(name):
    """An `out=` of another floating dtype than the result's: torch raises RuntimeError for
    these kernels (no cast); retrograd cast the result into it. An out of the result's
    dtype still works, with torch's values."""
    fn = OUT_SAME_DTYPE[name]
    x = torch.randn(3, 3, generator=torch.Generator().manual_seed(3)).abs() + 0.5
    e, a = fn(torch, x), fn(rg, _r(x))
    other = torch.float32 if name == "float_power" else torch.float64
    with pytest.raises(RuntimeError):
        fn(torch, x, out=_outs(torch, e, other))
    with pytest.raises(RuntimeError):
        fn(rg, _r(x), out=_outs(rg, a, getattr(rg, str(other)[6:])))
    got = fn(rg, _r(x), out=_outs(rg, a, a[0].dtype if isinstance(a, tuple) else a.dtype))
    ref = fn(torch, x, out=_outs(torch, e, e[0].dtype if isinstance(e, tuple) else e.dtype))
    for g, r in zip(got if isinstance(got, tuple) else (got,),
                    ref if isinstance(ref, tuple) else (ref,)):
        close(g, r, 1e-5)


@pytest.mark.parametrize("name", ["lerp", "addcmul", "addcdiv"])
def test_out_on_float16_in_float32_functions(name):
    """lerp/addcmul/addcdiv (float16 computed in float32) took no out=: their wrapper's
    (*args, **kwargs) hid that from the out= binding. torch casts into a float64 out."""
    x = torch.randn(4, generator=torch.Generator().manual_seed(1)).abs() + 0.5
    args = (x, x * 2, 0.25) if name == "lerp" else (x, x * 2, x + 1)
    e = getattr(torch, name)(*args, out=torch.empty(4, dtype=torch.float64))
    ra = tuple(_r(v) if isinstance(v, torch.Tensor) else v for v in args)
    o = rg.empty(4, dtype=rg.float64)
    a = getattr(rg, name)(*ra, out=o)
    assert a is o
    close(a, e)


def _raise_type(call):
    """The exception a call raises (None when it returns)."""
    try:
        call()
    except Exception as exc:  # noqa: BLE001
        return exc
    return None


# ---------------------------------------------------------------- cross, conv biases

@pytest.mark.parametrize("shapes", [((5, 3), (5, 1)), ((1, 3), (4, 1))])
def test_cross_does_not_broadcast_along_its_dim(shapes):
    """A length-1 cross dimension broadcast to 3 gave zeros; torch refuses it (the other
    dimensions still broadcast)."""
    a, b = torch.ones(shapes[0]), torch.ones(shapes[1])
    for call in (lambda m, x, y: m.linalg.cross(x, y), lambda m, x, y: m.cross(x, y, dim=1)):
        assert isinstance(_raise_type(lambda c=call: c(torch, a, b)), RuntimeError)
        assert isinstance(_raise_type(lambda c=call: c(rg, _r(a), _r(b))), RuntimeError)
    x, y = torch.randn(4, 3, dtype=torch.float64), torch.randn(1, 3, dtype=torch.float64)
    close(rg.linalg.cross(_r(x), _r(y)), torch.linalg.cross(x, y))


@pytest.mark.parametrize("name", ["conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d"])
@pytest.mark.parametrize("dts", [("float32", "float64"), ("float64", "float32"),
                                 ("int64", "float64"), ("float32", "int64"),
                                 ("float16", "float32")])
@pytest.mark.parametrize("batch", [1, 3])
def test_conv_bias_of_another_dtype_as_torch(name, dts, batch):
    """conv refuses a bias of another dtype than the input (retrograd promoted the result
    to it); conv_transpose refuses it for float16 and for batched float32 (torch's mkldnn
    path) and otherwise adds it in place, in the input's dtype."""
    nd = int(name[-2])
    g = torch.Generator().manual_seed(0)
    x = (torch.randn((batch, 2) + (4,) * nd, generator=g) * 3).to(getattr(torch, dts[0]))
    w = (torch.randn((2, 2) + (2,) * nd, generator=g) * 3).to(x.dtype)
    b = (torch.randn(2, generator=g) * 3).to(getattr(torch, dts[1]))
    tf, rf = getattr(torch.nn.functional, name), getattr(rg.nn.functional, name)
    te = _raise_type(lambda: tf(x, w, b))
    if te is None and dts == ("float16", "float32") and name.startswith("conv_transpose"):
        # torch's own answer depends on the CPU: where its mkldnn kernels take float16
        # (the AVX-512 hosts) it refuses, elsewhere (AVX2) it adds the bias in float16.
        # retrograd refuses on every host, as conv does.
        te = RuntimeError("torch's refusal on AVX-512 hosts")
    if te is not None:
        assert isinstance(_raise_type(lambda: rf(_r(x), _r(w), _r(b))), type(te))
        return
    close(rf(_r(x), _r(w), _r(b)), tf(x, w, b), 1e-6)


# ---------------------------------------------------------------- arange

@pytest.mark.parametrize("args", [(0, float("inf"), 2), (-float("inf"), 1, 2), (0, float("nan")),
                                  (0, 5, float("nan")), (0, 1e300, 1e-300), (0, 5, float("inf")),
                                  (5, 0, -float("inf")), (0, 5, -float("inf"))])
def test_arange_of_non_finite_bounds_and_steps(args):
    """Infinite/NaN bounds, a NaN step and a length past int64 raise torch's RuntimeError
    (NumPy's ValueError before); an infinite step gives torch's empty result (NumPy's one
    element)."""
    te = _raise_type(lambda: torch.arange(*args))
    if te is not None:
        assert isinstance(_raise_type(lambda: rg.arange(*args)), type(te))
    else:
        close(rg.arange(*args), torch.arange(*args))
    te = _raise_type(lambda: torch.arange(*args, dtype=torch.int64))
    if te is not None:
        assert isinstance(_raise_type(lambda: rg.arange(*args, dtype=rg.int64)), type(te))
    else:
        close(rg.arange(*args, dtype=rg.int64), torch.arange(*args, dtype=torch.int64))


# ---------------------------------------------------------------- gather

@pytest.mark.parametrize("shapes", [((5,), (2, 0)), ((3, 4), (0,)), ((3, 4), (0, 7, 2))])
def test_gather_with_an_empty_index_of_another_rank(shapes):
    """torch checks no shapes for an empty index: the result is empty, of the index's
    shape, with a zero gradient; retrograd refused the rank."""
    x = torch.ones(shapes[0], dtype=torch.float64, requires_grad=True)
    idx = torch.zeros(shapes[1], dtype=torch.int64)
    e = torch.gather(x, 0, idx)
    rx = _r(x)
    a = rg.gather(rx, 0, _r(idx))
    close(a, e)
    close(rg.autograd.grad(a.sum(), rx)[0], torch.autograd.grad(e.sum(), x)[0])


# ---------------------------------------------------------------- matrix_exp

def test_matrix_exp_float32_rounded_once():
    """float32 matrix_exp of OpInfo's reference matrices (entries up to 9): SciPy's
    single-precision expm was ~1e-6 of the largest entry off torch's float64 result
    (torch's float32 is within 6e-7); computed in double and rounded now."""
    g = torch.Generator().manual_seed(0)
    for shape in ((5, 5), (3, 5, 5)):
        x = torch.rand(shape, generator=g) * 18 - 9
        ref = torch.matrix_exp(x.double())
        a = rg.matrix_exp(_r(x))
        assert a.dtype == rg.float32
        scale = float(ref.abs().max())
        np.testing.assert_allclose(a.numpy(), ref.numpy(), rtol=0, atol=1e-7 * scale)


# ---------------------------------------------------------------- whole programs

def _alexnet_block(nn):
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.LocalResponseNorm(3),
                         nn.MaxPool2d(2), nn.ConvTranspose2d(8, 4, 2, stride=2), nn.Tanh(),
                         nn.Flatten(), nn.Linear(4 * 8 * 8, 5))


def test_program_lrn_conv_block_trains_as_torch():
    """An AlexNet-style block (conv, LRN, pool, transposed conv, linear) in float64: loss,
    every gradient and three SGD-with-momentum steps as torch's."""
    torch.manual_seed(0)
    tm = _alexnet_block(torch.nn).double()
    rm = _alexnet_block(rg.nn).to(rg.float64)
    rm.load_state_dict({k: _r(v) for k, v in tm.state_dict().items()})
    x = torch.randn(4, 3, 8, 8, dtype=torch.float64)
    y = torch.tensor([0, 3, 1, 4])
    ro = rg.optim.SGD(rm.parameters(), lr=0.05, momentum=0.9)
    bufs = [None] * len(list(tm.parameters()))  # torch.optim.SGD's update by hand (its
    for _ in range(3):                           # first import alone takes seconds)
        tm.zero_grad()
        ro.zero_grad()
        le = torch.nn.functional.cross_entropy(tm(x), y)
        la = rg.nn.functional.cross_entropy(rm(_r(x)), _r(y))
        le.backward()
        la.backward()
        close(la, le.detach())
        for p, q in zip(tm.parameters(), rm.parameters()):
            close(q.grad, p.grad, 1e-9)
        with torch.no_grad():
            for i, p in enumerate(tm.parameters()):
                bufs[i] = p.grad.clone() if bufs[i] is None else bufs[i].mul_(0.9).add_(p.grad)
                p.add_(bufs[i], alpha=-0.05)
        ro.step()
    for p, q in zip(tm.parameters(), rm.parameters()):
        close(q.detach(), p.detach(), 1e-9)


def test_program_preallocated_outputs_as_torch():
    """Code that reuses buffers through out=: an EMA with lerp(out=), per-row top-k and sort
    into preallocated pairs, a running aminmax; the same buffers and values as torch's."""
    g = torch.Generator().manual_seed(1)
    xs = [torch.randn(6, 5, generator=g) for _ in range(3)]
    bufs = {}
    for m, conv in ((torch, lambda t: t), (rg, _r)):
        ema = m.zeros(6, 5)
        vals, idx = m.empty(0), m.empty(0, dtype=m.int64)
        sv, si = m.empty(0), m.empty(0, dtype=m.int64)
        lo, hi = m.empty(0), m.empty(0)
        for x in xs:
            x = conv(x)
            m.lerp(ema, x, 0.1, out=ema)
            m.topk(ema, 2, dim=1, out=(vals, idx))
            m.sort(x, dim=0, descending=True, out=(sv, si))
            m.aminmax(ema, dim=1, out=(lo, hi))
        bufs[m.__name__] = (ema, vals, idx, sv, si, lo, hi)
    for a, e in zip(bufs["retrograd"], bufs["torch"]):
        close(a, e, 1e-6)


# ---------------------------------------------------------------- out= overlapping an input

@pytest.mark.parametrize("name", ["kthvalue", "cross", "outer", "kron"])
def test_out_overlapping_the_input_is_refused(name):
    """torch refuses an out= that is the input for these kernels; retrograd wrote (resized)
    the input through it."""
    calls = {"kthvalue": lambda m, x: m.kthvalue(x, 2, out=(x, m.empty(0, dtype=m.int64))),
             "cross": lambda m, x: m.cross(x, x.flip(0), dim=0, out=x),
             "outer": lambda m, x: m.outer(x, x, out=x),
             "kron": lambda m, x: m.kron(x, x, out=x)}
    x = torch.tensor([1.0, 2.0, 4.0])
    assert isinstance(_raise_type(lambda: calls[name](torch, x.clone())), RuntimeError)
    rx = _r(x)
    assert isinstance(_raise_type(lambda: calls[name](rg, rx)), RuntimeError)
    close(rx, x)  # left as it was


def test_index_add_out_is_its_input():
    """index_add(x, ..., out=x) is torch's in-place form and works; an out overlapping the
    source is still refused."""
    res = {}
    for m in (torch, rg):
        x = m.ones(3, 4)
        src = m.arange(8.0).reshape(2, 4)
        assert m.index_add(x, 0, m.tensor([0, 2]), src, alpha=2, out=x) is x
        res[m.__name__] = x
        y = m.ones(3, 4)
        assert isinstance(_raise_type(lambda m=m, y=y: m.index_add(y, 0, m.tensor([0, 2]), y[:2],
                                                               out=y)), RuntimeError)
    close(res["retrograd"], res["torch"])


_POLYS = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
          "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
          "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
          "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
          "laguerre_polynomial_l", "legendre_polynomial_p"]


@pytest.mark.parametrize("name", _POLYS)
def test_orthogonal_polynomials_take_torchs_shortcuts_and_huge_degrees(name):
    """OpInfo's reference sample has degrees up to 1e7: the recurrence up to the largest
    degree over the whole array took 74 s. torch takes closed forms for the Chebyshev kinds
    (|x| < 1 past degree 6 or 8), edge values at x = +-1, and leaves its loop at NaN
    (overflowing Hermite values); so do we, with its values. (A NaN x is left out: torch's
    loop is then skipped and returns an uninitialised value.)"""
    xs = np.array([-2, -1, -0.9999999999, -0.7, -0.3, 0, 1e-300, 0.2, 0.5, 0.99,
                   0.9999999999, 1, 1.5, 2, np.inf, -np.inf])
    ns = [-2, 0, 1, 2, 5, 6, 7, 8, 9, 10, 12, 25, 40]
    if not name.startswith(("laguerre", "legendre")):  # those loop to n in torch as well
        ns += [1e5, 1e7]
    X, N = np.meshgrid(xs, np.array(ns, dtype=np.float64))
    r = getattr(rg.special, name)(rg.tensor(X), rg.tensor(N)).numpy()
    t = getattr(torch.special, name)(torch.tensor(X), torch.tensor(N)).numpy()
    # at degree 1e7, acos's last bit (NumPy's against the C library's) moves n * acos(x)
    tol = np.where(N > 1e6, 1e-7, 1e-9)
    assert np.all(np.isclose(r, t, rtol=1e-9, atol=0, equal_nan=True)
                  | (np.abs(r - t) <= tol * np.maximum(1, np.abs(t)))), name
