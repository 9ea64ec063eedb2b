"""Gradient fuzzing against PyTorch at the points where derivatives are defined by
convention (ties, zeros, breakpoints, singular matrices): first and second derivatives
and forward mode, each compared with torch computed here, NaN-aware."""

import numpy as np
import pytest

import retrograd as rg

torch = pytest.importorskip("torch")
tfunc = pytest.importorskip("torch.func")


def _np(t):
    return None if t is None else t.detach().numpy()


def _same(a, b, tol=1e-10):
    a, b = _np(a), _np(b)
    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, b.shape, a.dtype, b.dtype)
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol, equal_nan=True)


def _grads(lib, fn, arrays, create_graph=False, seed=0):
    """Values, first derivatives of a random projection of fn's output and (with
    create_graph) second derivatives of a random projection of those, in one library."""
    rng = np.random.default_rng(seed)
    xs = [lib.tensor(a, requires_grad=True) for a in arrays]
    out = fn(lib, *xs)
    v = lib.tensor(rng.standard_normal(tuple(out.shape)))
    gs = lib.autograd.grad((out * v).sum(), xs, create_graph=create_graph, allow_unused=True)
    gs = [lib.zeros_like(x) if g is None else g for x, g in zip(xs, gs)]
    if not create_graph:
        return out, gs, None
    w = [lib.tensor(rng.standard_normal(tuple(g.shape))) for g in gs]
    gg = lib.autograd.grad(sum((g * u).sum() for g, u in zip(gs, w) if g.requires_grad), xs,
                           allow_unused=True)
    return out, gs, gg


def _check(fn, *arrays, second=True):
    """fn(lib, *tensors) agrees between the libraries: value, gradient, second
    derivatives (where torch's are finite) and the jvp."""
    arrays = [np.asarray(a, dtype=np.float64) for a in arrays]
    ro, rg1, rg2 = _grads(rg, fn, arrays, second)
    to, tg1, tg2 = _grads(torch, fn, arrays, second)
    _same(ro, to)
    for a, b in zip(rg1, tg1):
        _same(a, b)
    if second:
        for a, b in zip(rg2, tg2):
            if b is not None:
                fin = np.isfinite(_np(b))
                if a is None:
                    assert not _np(b)[fin].any()
                else:
                    np.testing.assert_allclose(_np(a)[fin], _np(b)[fin], rtol=1e-9, atol=1e-9)
    trng = np.random.default_rng(1)
    tans = [trng.standard_normal(a.shape) for a in arrays]
    _, rt = rg.func.jvp(lambda *x: fn(rg, *x), tuple(rg.tensor(a) for a in arrays),
                        tuple(rg.tensor(t) for t in tans))
    _, tt = tfunc.jvp(lambda *x: fn(torch, *x), tuple(torch.tensor(a) for a in arrays),
                      tuple(torch.tensor(t) for t in tans))
    _same(rt, tt)


# ---------------------------------------------------------------- det of singular matrices

@pytest.mark.parametrize("a", [
    [[1.0, 2.0], [2.0, 4.0]],
    [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]],
    [[[1.0, 2.0], [2.0, 4.0]], [[2.0, 1.0], [0.5, 3.0]]],
])
def test_det_singular_create_graph_and_jvp(a):
    """Under create_graph the gradient of det at a singular matrix is torch's adjugate
    (it raised LinAlgError), differentiable again; the jvp there is torch's 0."""
    _check(lambda L, x: L.linalg.det(x), a)


# ---------------------------------------------------------------- std_mean of constant data

@pytest.mark.parametrize("correction", [0, 1])
def test_std_mean_zero_std_gradient(correction):
    """std_mean's std has std's zero gradient where it is 0 (it was NaN)."""
    _check(lambda L, x: L.stack(L.std_mean(x, correction=correction)), [2.0, 2.0, 2.0])
    _check(lambda L, x: L.std_mean(x, 1, correction=correction)[0], [[3.0, 3.0], [1.0, 4.0]])


# ---------------------------------------------------------------- clamp with tensor bounds

_TIE = [[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0], [-1.0, 5.0, -1.0, 5.0]]


@pytest.mark.parametrize("fn", [
    lambda L, x, a, b: x.clamp(a, b),  # min == max: below it, no one gets the gradient
    lambda L, x, a, b: L.clamp(x, min=a * 0.5, max=b * 1.5),
    lambda L, x, a, b: L.clamp(x, min=b, max=a * 0.5),  # min > max: all to max
    lambda L, x, a, b: L.clamp(x, min=a),  # ties: the bound's tangent in forward mode
    lambda L, x, a, b: L.clamp(x, max=b) + x.clamp_max(b) * 0,
])
def test_clamp_tensor_bounds_at_ties(fn):
    """Tensor bounds: torch's reverse rule (min gets nothing when min == max) and its
    forward rule (which takes the bound's tangent at a tie) both."""
    _check(fn, _TIE, [[2.0]], [2.0, 2.0, 3.0, 2.0], second=False)


# ---------------------------------------------------------------- activations' kinks

_KINKS = [-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0, 3.0, 6.0, -3.0, 20.0, -20.0]


@pytest.mark.parametrize("fn", [
    lambda L, x: L.nn.functional.elu(x),
    lambda L, x: L.nn.functional.elu(x, 2.0),
    lambda L, x: L.nn.functional.celu(x, 0.5),
    lambda L, x: L.nn.functional.selu(x),
    lambda L, x: L.nn.functional.softplus(x, beta=1.0, threshold=1.0),
    lambda L, x: L.nn.functional.softplus(x, beta=2.0, threshold=4.0),
])
def test_activation_second_derivative_at_kink(fn):
    """elu's family has second derivative 0 at x = 0, softplus 0 at beta x = threshold
    (torch's double-backward masks x < 0 and beta x < threshold)."""
    _check(fn, _KINKS)


def test_atan2_jvp_at_origin():
    """atan2's reverse mode gives 0 at (0, 0), its forward mode NaN, as torch's."""
    _check(lambda L, y, x: L.atan2(y, x), [0.0, 0.0, 1.0, -0.0], [0.0, 1.0, 0.0, 0.0],
           second=False)


def test_cdist_inf_ties_get_whole_gradient():
    """cdist p=inf: each coordinate tied for the largest |difference| gets the whole
    gradient (vector_norm's amax split it)."""
    x1 = [[0.0, 0.0], [1.0, 1.0], [0.0, 0.0], [2.0, -1.0]]
    x2 = [[0.0, 0.0], [1.0, 1.0], [-1.0, 2.0]]
    ro, rgs, _ = _grads(rg, lambda L, a, b: L.cdist(a, b, p=float("inf")),
                        [np.array(x1), np.array(x2)])
    to, tgs, _ = _grads(torch, lambda L, a, b: L.cdist(a, b, p=float("inf")),
                        [np.array(x1), np.array(x2)])
    _same(ro, to)
    for a, b in zip(rgs, tgs):
        _same(a, b)


# ---------------------------------------------------------------- losses, norms, scans

@pytest.mark.parametrize("fn", [
    lambda L, x, y: L.nn.functional.smooth_l1_loss(x, y, beta=1.0, reduction="none"),
    lambda L, x, y: L.nn.functional.smooth_l1_loss(x, y, beta=0.5),
    lambda L, x, y: L.nn.functional.huber_loss(x, y, delta=1.0, reduction="none"),
    lambda L, x, y: L.nn.functional.huber_loss(x, y, delta=0.5, reduction="sum"),
])
def test_smooth_l1_huber_second_derivative_at_zero_and_beta(fn):
    """The quadratic part's second derivative is 1/beta (1 for huber) at d = 0 too (it was
    0, from |d|'s sign'(0)), and 0 at |d| = beta, as torch's double backward."""
    _check(fn, [0.0, 1.0, -1.0, 2.0, 0.5, -0.5, 0.25], [0.0, 0.0, 0.0, 1.0, 1.5, 0.5, 0.25])


@pytest.mark.parametrize("ord", [2, -2, 1, -1, float("inf"), -float("inf")])
@pytest.mark.parametrize("a", [np.eye(3), np.zeros((2, 2)), [[1.0, 1.0], [1.0, 1.0]],
                               [[1.0, -2.0, 0.0], [2.0, 1.0, 3.0]]])
def test_matrix_norm_ties_share_gradient(ord, a):
    """matrix_norm's max/min over singular values or column/row sums is torch's amax/amin:
    tied ones share the gradient (max(dim) gave it all to the first)."""
    _check(lambda L, x: L.linalg.matrix_norm(x, ord), a, second=False)


def test_logcumsumexp_jvp_after_minus_inf_prefix():
    """logcumsumexp's tangent is 0 where the prefix is all -inf (it was NaN), as torch's."""
    _check(lambda L, x: L.logcumsumexp(x, 0), [-np.inf, -np.inf, 0.0, -np.inf, 1.0],
           second=False)


# ---------------------------------------------------------------- kthvalue among ties

def test_kthvalue_index_among_ties_is_torchs():
    """Among tied entries kthvalue reports torch's pick (its quickselect's), so the
    gradient lands on the same entry; checked on random tie-heavy rows with NaNs."""
    rng = np.random.default_rng(1)
    for _ in range(60):
        shape = tuple(int(s) for s in rng.integers(1, 7, rng.integers(1, 4)))
        x = rng.integers(0, 3, shape).astype(np.float64)
        if rng.random() < 0.3:
            x.ravel()[rng.integers(0, x.size, 2)] = np.nan
        d = int(rng.integers(-len(shape), len(shape)))
        k = int(rng.integers(1, shape[d] + 1))
        t, r = torch.kthvalue(torch.tensor(x), k, d), rg.kthvalue(rg.tensor(x), k, d)
        np.testing.assert_array_equal(r.indices.numpy(), t.indices.numpy())
        np.testing.assert_array_equal(r.values.numpy(), t.values.numpy())
    _check(lambda L, x: L.kthvalue(x, 2, 1)[0], _TIE, second=False)
    _check(lambda L, x: L.kthvalue(x, 3)[0], [1.0, 3.0, 3.0, 0.0, 3.0], second=False)


def test_topk_order_among_ties_is_torchs():
    """Among tied entries topk lists torch's order (its libstdc++ nth_element / sort /
    partial_sort, replayed on the tied rows), so values, indices and gradients match;
    random tie-heavy rows with NaNs, both directions, short and long rows (k * 64 <= n
    takes torch's partial_sort path)."""
    rng = np.random.default_rng(3)
    for trial in range(60):
        n = int(rng.integers(1, 300 if trial % 4 == 0 else 12))
        shape = (int(rng.integers(1, 4)), n)
        x = rng.integers(0, int(rng.integers(1, 5)), shape).astype(np.float64)
        if rng.random() < 0.3:
            x.ravel()[rng.integers(0, x.size, 3)] = np.nan
        k = int(rng.integers(0, n + 1)) if trial % 2 else int(rng.integers(0, n // 64 + 2))
        k = min(k, n)
        largest = bool(trial % 3)
        t = torch.topk(torch.tensor(x), k, 1, largest)
        r = rg.topk(rg.tensor(x), k, 1, largest)
        np.testing.assert_array_equal(r.indices.numpy(), t.indices.numpy())
        np.testing.assert_array_equal(r.values.numpy(), t.values.numpy())
    _check(lambda L, x: x.topk(2, 1)[0], _TIE, second=False)
    _check(lambda L, x: x.topk(2, 1, largest=False)[0], _TIE, second=False)


# ---------------------------------------------------------------- pow's special exponents

@pytest.mark.parametrize("e", [3.0, -2.0, -0.5, 0.5, 2.0, -1.0])
def test_pow_special_exponents_bitwise_and_signed_zero(e):
    """x ** 3, -2, -0.5 as torch computes them (x*x*x, 1/(x*x), 1/sqrt): the same bits,
    -0 ** -0.5 = -inf, and the gradient of x ** 0.5 at -0 is -inf, as torch's."""
    x = np.concatenate([[0.0, -0.0, 1.0], np.random.default_rng(0).uniform(0.1, 10, 2000)])
    for dt in (np.float64, np.float32):
        t = (torch.tensor(x.astype(dt)) ** e).numpy()
        r = (rg.tensor(x.astype(dt)) ** e).numpy()
        if e != 0.5:  # torch's own sqrt is not NumPy's to the bit
            np.testing.assert_array_equal(r, t)
        np.testing.assert_array_equal(np.signbit(r[:3]), np.signbit(t[:3]))
    _check(lambda L, x: x ** e, [0.5, 1.0, 2.0, 3.5], second=True)
    xr, xt = rg.tensor([-0.0, 0.0], requires_grad=True), torch.tensor([-0.0, 0.0],
                                                                       requires_grad=True)
    (xr ** e).sum().backward()
    (xt ** e).sum().backward()
    np.testing.assert_array_equal(xr.grad.numpy(), xt.grad.numpy())


@pytest.mark.parametrize("e", [3.0, -2.0, -0.5])
def test_pow_special_exponents_under_jit(e):
    """rg.jit may write x ** e into x's dying buffer: the replay gives eager's value."""
    f = rg.jit(lambda x: ((x * 1.0) ** e + (x + 1.0) ** e).sum())
    x = rg.tensor(np.linspace(0.1, 2.0, 8))
    want = ((x * 1.0) ** e + (x + 1.0) ** e).sum().item()
    for _ in range(3):
        assert f(x).item() == pytest.approx(want, rel=1e-14)


# ---------------------------------------------------------------- whole programs

def _params_to(rm, tm):
    """Copy the torch module's parameters into the retrograd one (same names)."""
    rm.load_state_dict({k: rg.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})


def _same_step(losses, rm, tm):
    """After one step in each library: the same loss, and the same parameters (by name)."""
    assert losses[1] == pytest.approx(losses[0], rel=1e-10, abs=1e-12)
    for (k, p), (_, q) in zip(rm.named_parameters(), tm.named_parameters(), strict=True):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-9,
                                   atol=1e-12, err_msg=k)


def _kmax_net(L, seed=0):
    nn = L.nn

    class KMaxNet(nn.Module):
        """Conv + ReLU + max pool with tied windows, k-max pooling (topk in input order),
        a k-th value feature, then a linear classifier."""

        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(1, 3, 3, padding=1)
            self.fc = nn.Linear(3 * 3 + 3, 4)

        def forward(self, x):
            h = nn.functional.max_pool2d(nn.functional.relu(self.conv(x)), 2)
            flat = h.flatten(2)
            top = flat.topk(3, dim=2)
            kmax = flat.gather(2, top.indices.sort(dim=2).values)
            kth = flat.kthvalue(2, dim=2).values
            return self.fc(L.cat([kmax.flatten(1), kth], 1))

    return KMaxNet()


def test_program_kmax_pooling_training_matches_torch():
    """Integer images (ties in every pool window and among the top k), conv weights rounded
    so activations tie too; 4 SGD+momentum steps on cross-entropy with label smoothing."""
    torch.manual_seed(0)
    tm = _kmax_net(torch).double()
    with torch.no_grad():
        for p in tm.parameters():
            p.copy_((p * 4).round() / 4)
    rm = _kmax_net(rg).to(rg.float64)
    _params_to(rm, tm)
    x = np.random.default_rng(0).integers(0, 3, (6, 1, 6, 6)).astype(np.float64)
    y = np.array([0, 1, 2, 3, 0, 1])
    to = torch.optim.SGD(tm.parameters(), lr=0.1, momentum=0.9)
    ro = rg.optim.SGD(rm.parameters(), lr=0.1, momentum=0.9)
    for _ in range(4):
        losses = []
        for L, m, opt in ((torch, tm, to), (rg, rm, ro)):
            opt.zero_grad()
            loss = L.nn.functional.cross_entropy(m(L.tensor(x)), L.tensor(y), label_smoothing=0.1)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        _same_step(losses, rm, tm)


def test_program_gradient_penalty_robust_regression_matches_torch():
    """A critic with ELU / softplus(threshold) / PReLU-free kinks scored by a smooth-L1
    loss whose residuals start at exactly 0 and +-beta, plus a gradient penalty through
    create_graph (second derivatives at the kinks); 3 Adam steps."""
    def critic(L):
        nn = L.nn
        return nn.Sequential(nn.Linear(3, 5), nn.ELU(), nn.Linear(5, 4), nn.Softplus(1.0, 1.0),
                             nn.Linear(4, 1))

    torch.manual_seed(1)
    tm = critic(torch).double()
    with torch.no_grad():
        for p in tm.parameters():
            p.copy_((p * 4).round() / 4)
    rm = critic(rg).to(rg.float64)
    _params_to(rm, tm)
    x = np.random.default_rng(2).integers(-2, 3, (8, 3)).astype(np.float64)
    with torch.no_grad():
        y0 = tm(torch.tensor(x)).numpy()[:, 0]
    target = y0 + np.array([0.0, 1.0, -1.0, 0.0, 0.5, -2.0, 0.0, 1.0])  # residuals 0, +-beta
    to = torch.optim.Adam(tm.parameters(), lr=0.01)
    ro = rg.optim.Adam(rm.parameters(), lr=0.01)
    for _ in range(3):
        losses = []
        for L, m, opt in ((torch, tm, to), (rg, rm, ro)):
            opt.zero_grad()
            xi = L.tensor(x, requires_grad=True)
            out = m(xi)[:, 0]
            fit = L.nn.functional.smooth_l1_loss(out, L.tensor(target), beta=1.0)
            (g,) = L.autograd.grad(out.sum(), xi, create_graph=True)
            gp = L.nn.functional.smooth_l1_loss(g.norm(dim=1), L.ones(8, dtype=L.float64))
            loss = fit + 10.0 * gp
            loss.backward()
            opt.step()
            losses.append(loss.item())
        _same_step(losses, rm, tm)


def test_program_forward_mode_at_conventions_matches_torch():
    """One function through the conventions fixed here (clamp with tensor bounds at ties,
    atan2 at the origin, logcumsumexp after -inf, matrix norms with tied singular values,
    det of a singular matrix), its jvp compared with torch.func.jvp."""
    def f(L, x, lo, a):
        c = L.clamp(x, min=lo, max=lo + 1.0)
        t = L.atan2(c, x * 0.0)
        s = L.logcumsumexp(L.cat([L.full((2,), float("-inf"), dtype=x.dtype), x]), 0)
        n = L.linalg.matrix_norm(a, 2) + L.linalg.matrix_norm(a, -1) + L.linalg.det(a)
        return L.cat([c, L.nan_to_num(t, nan=7.0), s, n.reshape(1)])

    x = np.array([0.0, 1.0, 1.0, 2.0, -1.0])
    lo = np.array([0.0, 1.0, 0.0, 1.0, -1.0])
    a = np.eye(3)
    a[2, 2] = 0.0
    tans = [np.random.default_rng(k).standard_normal(v.shape) for k, v in enumerate((x, lo, a))]
    _, rt = rg.func.jvp(lambda *v: f(rg, *v), tuple(rg.tensor(v) for v in (x, lo, a)),
                        tuple(rg.tensor(t) for t in tans))
    _, tt = tfunc.jvp(lambda *v: f(torch, *v), tuple(torch.tensor(v) for v in (x, lo, a)),
                      tuple(torch.tensor(t) for t in tans))
    _same(rt, tt)


def test_bce_second_derivative_at_saturated_probabilities():
    """binary_cross_entropy's second derivatives are torch's formulas: 0 (not 1e12-scale)
    where the probability sits at its target 0 or 1, and torch's eps placement near them."""
    x = [0.0, 1.0, 0.5, 0.3, 1e-7, 1 - 1e-7, 0.9]
    t = [0.0, 1.0, 1.0, 0.2, 0.0, 1.0, 0.4]
    _check(lambda L, a, b: L.nn.functional.binary_cross_entropy(a, b, reduction="none"), x, t)


def test_fmax_forward_mode_at_ties():
    """fmax on a tie: reverse mode gives x the gradient, forward mode takes y's tangent
    (torch's rules); NaNs as torch."""
    _check(lambda L, x, y: L.fmax(x, y), [1.0, 2.0, np.nan, 3.0, np.nan, 0.5],
           [1.0, 1.0, 1.0, np.nan, np.nan, 0.5], second=False)
