"""PyTorch semantics that ported vision and sequence code met, each against torch:
interpolate's dimensions that keep their size, view() on tensors it cannot view, .grad
assignment checks, mixed dtypes in layers, relu's second derivative and NaN gradient,
error classes, index dtypes and optimizer groups."""

import numpy as np
import pytest
import torch

import retrograd as rg
import retrograd.nn.functional as F

INTERP = [("nearest", 1), ("nearest", 2), ("nearest", 3), ("nearest-exact", 2), ("linear", 1),
          ("bilinear", 2), ("trilinear", 3), ("bicubic", 2)]


@pytest.mark.parametrize("mode, nd", INTERP)
@pytest.mark.parametrize("align_corners", [None, False, True])
@pytest.mark.parametrize("which", [0, 1])
def test_interpolate_dimension_that_keeps_its_size_matches_torch(mode, nd, align_corners,
                                                                 which):
    """A scale_factor near 1 that leaves a size unchanged (floor(6 * 1.02) = 6): PyTorch
    copies that dimension for 2-d nearest and the linear modes, and resamples it for the
    others; values as torch's. Gradients as torch's, except where torch's own are not the
    adjoint of its forward (1-d and 3-d nearest: its backward copies the dimension its
    forward resampled): there, and everywhere, the gradient must be the forward's adjoint
    (interpolate is linear: <seed, f(v)> = <grad, v>)."""
    if "nearest" in mode and align_corners is not None:
        return
    rng = np.random.default_rng(nd)
    x = rng.standard_normal((2, 3) + (6, 7, 5)[:nd])
    sf = [1.5, 0.7, 1.3][:nd]
    sf[which % nd] = 1.02
    kw = {} if align_corners is None else {"align_corners": align_corners}
    seed = None
    got = []
    for lib in (torch, rg):
        t = lib.tensor(x, requires_grad=True)
        y = lib.nn.functional.interpolate(t, scale_factor=tuple(sf), mode=mode, **kw)
        if seed is None:
            seed = rng.standard_normal(tuple(y.shape))
        (y * lib.tensor(seed)).sum().backward()
        got.append((y.detach().numpy(), t.grad.numpy()))
    (ty, tg), (gy, gg) = got
    assert ty.shape == gy.shape
    np.testing.assert_allclose(gy, ty, rtol=1e-12, atol=1e-12)
    if not (mode == "nearest" and nd != 2):
        np.testing.assert_allclose(gg, tg, rtol=1e-12, atol=1e-12)
    v = rng.standard_normal(x.shape)
    fv = F.interpolate(rg.tensor(v), scale_factor=tuple(sf), mode=mode, **kw).numpy()
    np.testing.assert_allclose((seed * fv).sum(), (gg * v).sum(), rtol=1e-12)


VIEWS = [((2, 3), lambda t: t.t(), (-1,)),
         ((2, 3, 4), lambda t: t.permute(0, 2, 1), (8, 3)),
         ((2, 3, 4), lambda t: t[:, :2], (4, 4)),
         ((1, 3, 4), lambda t: t.expand(5, 3, 4), (15, 4)),
         ((2, 3, 4), lambda t: t.permute(0, 2, 1), (2, 4, 3)),
         ((2, 3, 4), lambda t: t[:, :2], (2, 2, 2, 2)),
         ((2, 3, 4), lambda t: t.transpose(1, 2)[:, :, :1], (2, 4)),
         ((2, 1, 4), lambda t: t.transpose(0, 1), (8,)),
         ((0, 3), lambda t: t.t(), (-1,)),
         ((), lambda t: t, (1, 1)),
         ((4, 6), lambda t: t[:, ::2], (4, 3, 1)),
         ((4, 6), lambda t: t[:, ::2], (12,)),
         ((1, 3, 4), lambda t: t.expand(5, 3, 4), (5, 12)),
         ((3, 4), lambda t: t.t(), (4, 1, 3))]


@pytest.mark.parametrize("shape, make, new", VIEWS)
def test_view_refuses_what_torch_refuses_and_shares_memory_otherwise(shape, make, new):
    """view() is a view or a RuntimeError, as in PyTorch (it was a reshape, so a copy where
    no view exists, and writes through it never reached the tensor)."""
    n = int(np.prod(shape))
    ours = make(rg.arange(float(n)).reshape(shape))
    theirs = make(torch.arange(float(n)).reshape(shape))
    try:
        want = theirs.view(new)
    except RuntimeError:
        with pytest.raises(RuntimeError, match="view size is not compatible"):
            ours.view(new)
        with pytest.raises(RuntimeError, match="view size is not compatible"):
            ours.view_as(rg.zeros(tuple(theirs.reshape(new).shape)))
        return
    got = ours.view(new)
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    if n:  # the view shares the tensor's memory: a write through it reaches the tensor
        assert np.shares_memory(got.numpy(), ours.numpy())
        if ours.numpy().flags.writeable:  # (not an expand's read-only view)
            with rg.no_grad():
                got.fill_(-1.0)
            assert (ours.numpy() == -1).all()
    assert rg.view_copy(ours.contiguous(), new).shape == got.shape


def test_view_copy_takes_any_layout_as_torch():
    x = rg.arange(6.0).reshape(2, 3).t()
    want = torch.view_copy(torch.arange(6.0).reshape(2, 3).t(), (-1,))
    np.testing.assert_array_equal(rg.view_copy(x, (-1,)).numpy(), want.numpy())


@pytest.mark.parametrize("make, error", [
    (lambda L, p: L.tensor([1.0]), RuntimeError),                       # another size
    (lambda L, p: L.ones(2, 3, dtype=L.float64), RuntimeError),          # another dtype
    (lambda L, p: L.ones(2, 3, dtype=L.int64), RuntimeError),
    (lambda L, p: 3.0, TypeError),                                       # not a tensor
    (lambda L, p: p, RuntimeError)])                                     # itself
def test_grad_assignment_is_checked_as_torch_checks_it(make, error):
    """A .grad of another size or dtype was taken, and optimizers then broadcast it over
    the parameter (SGD moved every element by the one value)."""
    for L in (torch, rg):
        p = L.nn.Parameter(L.ones(2, 3))
        with pytest.raises(error):
            p.grad = make(L, p)
        assert p.grad is None
    p = rg.nn.Parameter(rg.ones(2, 3))
    p.grad = rg.full((2, 3), 0.5)
    rg.optim.SGD([p], lr=1.0).step()
    np.testing.assert_array_equal(p.detach().numpy(), np.full((2, 3), 0.5, np.float32))
    p.grad = None
    assert p.grad is None


@pytest.mark.parametrize("in_dims", [(0, 0), (0, None), (None, 0)])
def test_vmap_of_clamp_with_tensor_bounds_matches_torch(in_dims):
    """clamp's masks were computed from one sample's values inside vmap, so every sample
    was clamped where the first one was."""
    p = np.array([[0.5, 2.0], [3.0, -1.0], [-4.0, 0.7]])
    q = np.array([[1.0, 0.0], [0.2, 0.1], [2.0, -3.0]])
    x = p if in_dims[0] == 0 else p[0]
    b = q if in_dims[1] == 0 else q[1]
    got, want = [], []
    for L, out in ((torch, want), (rg, got)):
        f = L.func.vmap(lambda a, lo, L=L: L.clamp(a, min=lo, max=lo + 1.0), in_dims=in_dims)
        out.append(f(L.tensor(x), L.tensor(b)).numpy())
        f = L.func.vmap(lambda a, hi, L=L: L.clip(a, max=hi), in_dims=in_dims)
        out.append(f(L.tensor(x), L.tensor(b)).numpy())
        g = L.func.vmap(L.func.grad(lambda a, lo, L=L: L.clamp(a, min=lo, max=lo + 1.0).sum()),
                        in_dims=in_dims)
        out.append(g(L.tensor(x), L.tensor(b)).numpy())
    for a, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(a, w)


def test_vmap_refuses_a_custom_function_on_a_batched_input():
    """Its jvp carried the batch as if the Function were linear: x**3 gave 3 x0**2 x."""
    class Cube(rg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return 3 * x ** 2 * g

        @staticmethod
        def jvp(ctx, t):
            x, = ctx.saved_tensors
            return 3 * x ** 2 * t

    x = rg.tensor([0.5, 1.5, -2.0])
    with pytest.raises(RuntimeError, match="cannot run inside rg.func.vmap"):
        rg.func.vmap(Cube.apply)(x)
    c = rg.tensor(2.0)  # an unbatched input is fine
    np.testing.assert_allclose(rg.func.vmap(lambda a: a * Cube.apply(c))(x).numpy(),
                               8 * x.numpy())
    np.testing.assert_allclose(rg.func.jvp(Cube.apply, (x,), (rg.ones(3),))[1].numpy(),
                               3 * x.numpy() ** 2)


def _mixed_cases(L):
    F_ = L.nn.functional
    x32, w32 = L.ones(2, 4), L.ones(4)
    x64, w64 = x32.double(), w32.double()
    seq = x64.reshape(2, 1, 4)
    return {
        "linear": lambda: F_.linear(x64, L.ones(3, 4)),
        "linear bias": lambda: F_.linear(x32, L.ones(3, 4), L.ones(3).double()),
        "Linear int": lambda: L.nn.Linear(4, 3)(L.ones(2, 4, dtype=L.int64)),
        "Linear": lambda: L.nn.Linear(4, 3)(x64),
        "layer_norm": lambda: F_.layer_norm(x64, (4,), w32, w32),
        "layer_norm weight": lambda: F_.layer_norm(x32, (4,), w64, w64),
        "group_norm": lambda: F_.group_norm(x64.reshape(2, 4, 1), 2, w32, w32),
        "batch_norm": lambda: F_.batch_norm(x64.reshape(2, 4, 1), L.zeros(4), L.ones(4), w32,
                                            w32, training=True),
        "batch_norm stats": lambda: F_.batch_norm(x32.reshape(2, 4, 1), L.zeros(4).double(),
                                                  L.ones(4).double(), w32, w32, training=True),
        "instance_norm": lambda: F_.instance_norm(
            x64.reshape(2, 4, 1).expand(2, 4, 3).contiguous(), weight=w32, bias=w32),
        "GRU": lambda: L.nn.GRU(4, 3)(seq),
        "LSTM": lambda: L.nn.LSTM(4, 3)(seq),
        "RNN": lambda: L.nn.RNN(4, 3)(seq),
        "GRUCell": lambda: L.nn.GRUCell(4, 3)(x64),
        "LSTMCell": lambda: L.nn.LSTMCell(4, 3)(x64),
        "MultiheadAttention": lambda: L.nn.MultiheadAttention(4, 1)(seq, seq, seq),
        "BatchNorm1d": lambda: L.nn.BatchNorm1d(4)(x64),
        "LayerNorm": lambda: L.nn.LayerNorm(4)(x64),
    }


@pytest.mark.parametrize("name", sorted(_mixed_cases(torch)))
def test_layers_refuse_an_input_of_another_dtype_as_torch(name):
    """They promoted it: a float64 image through a float32 model ran partly in float64."""
    with pytest.raises((RuntimeError, ValueError)):
        _mixed_cases(torch)[name]()
    with pytest.raises(RuntimeError):
        _mixed_cases(rg)[name]()


@pytest.mark.parametrize("fn", ["layer_norm", "group_norm", "batch_norm", "instance_norm",
                                "rms_norm"])
def test_norms_allowed_mixtures_keep_the_input_dtype_as_torch(fn):
    """float16 input with float32 parameters (PyTorch's CPU norms take it), and rms_norm
    with any parameter dtype: the result has the input's dtype and torch's values."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 4, 3))
    w, b = rng.standard_normal(4), rng.standard_normal(4)
    cases = [(np.float16, np.float32)] + ([(np.float32, np.float64), (np.float64, np.float32)]
                                          if fn == "rms_norm" else [])
    for xd, pd in cases:
        outs = []
        for L in (torch, rg):
            F_ = L.nn.functional
            xt = L.tensor(x.astype(xd))
            wt, bt = L.tensor(w.astype(pd)), L.tensor(b.astype(pd))
            if fn == "layer_norm":
                out = F_.layer_norm(xt.transpose(1, 2), (4,), wt, bt)
            elif fn == "group_norm":
                out = F_.group_norm(xt, 2, wt, bt)
            elif fn == "batch_norm":
                out = F_.batch_norm(xt, L.zeros(4), L.ones(4), wt, bt, training=True)
            elif fn == "instance_norm":
                out = F_.instance_norm(xt, weight=wt, bias=bt)
            else:
                out = F_.rms_norm(xt.transpose(1, 2), (4,), wt)
            outs.append((str(out.dtype).replace("torch.", ""), out.detach().float().numpy()))
        assert outs[0][0] == outs[1][0] == np.dtype(xd).name
        np.testing.assert_allclose(outs[1][1], outs[0][1], rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("name", ["relu", "leaky_relu", "hardtanh", "relu6"])
def test_piecewise_linear_activations_second_order_and_nan_as_torch(name):
    """The gradient at NaN passes (PyTorch's backward tests `x <= 0`, false for NaN), and
    under create_graph the gradient stays connected to x with a zero second derivative (it
    was cut off: a gradient penalty gave None, not zeros, to the parameters before it)."""
    x = np.array([1.0, -2.0, 0.5, np.nan, -1.0, 0.0, 6.0, 7.0])
    got = []
    for L in (torch, rg):
        t = L.tensor(x, requires_grad=True)
        g, = L.autograd.grad(getattr(L.nn.functional, name)(t).sum(), t, create_graph=True)
        assert g.requires_grad
        (g ** 2).sum().backward()
        got.append((g.detach().numpy(), t.grad.numpy()))
    keep = slice(None)
    if name in ("hardtanh", "relu6"):  # torch's own NaN gradient depends on the element's
        keep = ~np.isnan(x)            # place (its vector loop gives 0, its tail 1; ours 1)
        assert got[1][0][3] == 1.0
    np.testing.assert_array_equal(got[1][0][keep], got[0][0][keep])
    np.testing.assert_array_equal(got[1][1], got[0][1])


def test_atan2_gradient_at_the_origin_is_torchs_zero():
    got = []
    for L in (torch, rg):
        y = L.tensor([0.0, 0.0, 1.0, 2.0], requires_grad=True)
        x = L.tensor([0.0, 1.0, 0.0, -3.0], requires_grad=True)
        L.atan2(y, x).sum().backward()
        got.append((y.grad.numpy(), x.grad.numpy()))
    for a, b in zip(got[1], got[0], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6)
        assert np.isfinite(a).all()


ERRORS = {
    "conv2d channels": lambda L: L.nn.Conv2d(3, 2, 3)(L.zeros(1, 4, 5, 5)),
    "conv2d kernel too large": lambda L: L.nn.Conv2d(1, 1, 7)(L.zeros(1, 1, 5, 5)),
    "batch_norm channels": lambda L: L.nn.BatchNorm2d(3)(L.zeros(2, 4, 3, 3)),
    "max_pool empty": lambda L: L.nn.functional.max_pool2d(L.zeros(1, 1, 2, 2), 3),
    "one_hot too large": lambda L: L.nn.functional.one_hot(L.tensor([1, 5]), 4),
    "one_hot negative": lambda L: L.nn.functional.one_hot(L.tensor([-1, 2]), 4),
    "arange step 0": lambda L: L.arange(0, 5, 0),
    "linspace negative steps": lambda L: L.linspace(0, 1, -2),
    "cdist columns": lambda L: L.cdist(L.zeros(3, 2), L.zeros(4, 3)),
    "diff negative n": lambda L: L.diff(L.zeros(4), n=-1),
    "sdpa heads": lambda L: L.nn.functional.scaled_dot_product_attention(
        L.zeros(1, 4, 3, 2), L.zeros(1, 3, 3, 2), L.zeros(1, 3, 3, 2)),
    "pad odd": lambda L: L.nn.functional.pad(L.zeros(2, 3), (1,)),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_argument_errors_are_runtime_errors_as_in_torch(name):
    """Ported code catches `except RuntimeError`; retrograd's argument errors are also
    ValueErrors (for Python code), but were only that."""
    with pytest.raises(RuntimeError):
        ERRORS[name](torch)
    with pytest.raises(RuntimeError):
        ERRORS[name](rg)


def test_distribution_modes_at_their_edges_as_torch():
    """Beta's mode was (a - 1) / (a + b - 2) everywhere: -1/3 for Beta(0.5, 3), outside the
    support; Bernoulli's at p = 1/2 is NaN (no single mode)."""
    a = [0.5, 3.0, 0.5, 2.0, 1.0, 1.0]
    b = [3.0, 0.5, 0.5, 2.0, 1.0, 3.0]
    c = [[0.5, 0.3, 0.2], [2.0, 3.0, 0.5], [0.5, 0.5, 2.0]]
    got = []
    for L in (torch, rg):
        D = L.distributions
        got.append([D.Beta(L.tensor(a), L.tensor(b)).mode.numpy(),
                    D.Bernoulli(probs=L.tensor([0.5, 0.2, 0.7])).mode.numpy(),
                    D.Dirichlet(L.tensor(c)).mode.numpy()])
    for x, y in zip(got[1], got[0], strict=True):
        np.testing.assert_allclose(x, y, rtol=1e-6, equal_nan=True)


def test_sinc_derivatives_at_zero_are_the_series():
    """sinc'(0) = 0 came from a constant, so sinc''(0) was 0 (it is -pi^2/3; torch: NaN)."""
    x = rg.tensor([0.0, 1e-3], dtype=rg.float64, requires_grad=True)
    d = [rg.sinc(x).sum()]
    for _ in range(4):
        d.append(rg.autograd.grad(d[-1].sum(), x, create_graph=True)[0])
    want = [0.0, -np.pi ** 2 / 3, 0.0, np.pi ** 4 / 5]
    for k, w in enumerate(want, 1):
        np.testing.assert_allclose(d[k].detach().numpy()[0], w, atol=1e-12)
        np.testing.assert_allclose(d[k].detach().numpy()[0], d[k].detach().numpy()[1],
                                   rtol=1e-3, atol=0.05)  # continuous through 0


INDEX_DTYPES = {
    "one_hot int32": lambda L: L.nn.functional.one_hot(L.tensor([1, 3]).int(), 4),
    "one_hot float": lambda L: L.nn.functional.one_hot(L.tensor([1.0, 3.0]), 4),
    "cross_entropy int32": lambda L: L.nn.functional.cross_entropy(L.zeros(2, 3),
                                                                   L.tensor([0, 2]).int()),
    "cross_entropy 3-d uint8": lambda L: L.nn.functional.cross_entropy(
        L.zeros(2, 3, 4), L.zeros(2, 4, dtype=L.uint8)),
    "nll_loss int16": lambda L: L.nn.functional.nll_loss(L.zeros(2, 3),
                                                         L.tensor([0, 2]).short()),
    "multinomial int": lambda L: L.multinomial(L.tensor([[1, 2]]), 1),
}


@pytest.mark.parametrize("name", sorted(INDEX_DTYPES))
def test_index_and_weight_dtypes_torch_refuses_are_refused(name):
    with pytest.raises(RuntimeError):
        INDEX_DTYPES[name](torch)
    with pytest.raises(RuntimeError):
        INDEX_DTYPES[name](rg)


def test_uint8_class_targets_and_only_inputs_are_taken_as_torch_takes_them():
    for L in (torch, rg):
        loss = L.nn.functional.cross_entropy(L.zeros(2, 3), L.tensor([0, 2]).byte())
        np.testing.assert_allclose(float(loss), np.log(3.0), rtol=1e-6)
        x = L.tensor([1.0, 2.0], requires_grad=True)
        g, = L.autograd.grad((x * x).sum(), x, only_inputs=True)
        np.testing.assert_allclose(g.numpy(), [2.0, 4.0])


def test_backward_checks_only_the_values_the_needed_rules_read():
    """A weight changed in place after a linear layer or a product ran on an input that
    needs no gradient: the weight's gradient reads only that input, so torch computes it,
    and so does retrograd now (it refused: every input of the op was checked)."""
    for L in (torch, rg):
        w = L.nn.Parameter(L.ones(3, 2))
        y = L.nn.functional.linear(L.ones(1, 2), w)
        a = L.ones(2, 2, requires_grad=True)
        z = a @ L.full((2, 2), 2.0)
        with L.no_grad():
            w.mul_(2)
            a.mul_(3)
        y.sum().backward()
        z.sum().backward()
        np.testing.assert_array_equal(w.grad.numpy(), np.ones((3, 2)))
        np.testing.assert_array_equal(a.grad.numpy(), np.full((2, 2), 4.0))
        x = L.ones(1, 2, requires_grad=True)  # x's gradient reads w: refused
        w2 = L.nn.Parameter(L.ones(3, 2))
        y = L.nn.functional.linear(x, w2)
        with L.no_grad():
            w2.mul_(2)
        with pytest.raises(RuntimeError, match="modified by an in.?place operation"):
            y.sum().backward()


OPTIMIZERS = ["Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam",
              "ASGD", "Rprop", "Adafactor"]


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_optimizer_groups_and_step_state_as_torch(name):
    """param_groups carry torch's keys (foreach, differentiable, capturable, fused where torch
    has them, and the constructors take them), and the step count is a 0-d tensor of the
    default dtype (float32) even for a float64 parameter, as torch's; values stay equal."""
    got = []
    for L in (torch, rg):
        p = L.nn.Parameter(L.ones(3, dtype=L.float64))
        opt = getattr(L.optim, name)([p], foreach=None)
        for k in range(3):
            p.grad = L.full((3,), 0.5 + k, dtype=L.float64)
            opt.step()
        st = opt.state[p]
        got.append((sorted(opt.param_groups[0]), str(st["step"].dtype).split(".")[-1],
                    float(st["step"]), p.detach().numpy().copy()))
    (tk, td, ts, tv), (rk, rd, rs, rv) = got
    assert rk == tk and rd == td == "float32" and rs == ts == 3.0
    np.testing.assert_allclose(rv, tv, rtol=1e-12)


@pytest.mark.parametrize("dim", [None, 0, 1])
def test_prod_with_zeros_second_order_hessian_and_vmap_as_torch(dim):
    """prod's gradient where x has zeros was an op without derivatives (double backward
    and hessian refused), and under vmap it took the zero test from one sample (a sample
    with a zero got NaN); now a composition of cumprods, right everywhere."""
    X = np.array([[1.0, 0.0, 3.0], [2.0, 0.0, 0.0], [1.0, 2.0, 3.0]])
    seed = np.arange(1.0, 10.0).reshape(3, 3)
    got = []
    for L in (torch, rg):
        def f(v, L=L):
            return (L.prod(v) if dim is None else L.prod(v, dim)).sum()
        x = L.tensor(X, requires_grad=True)
        g, = L.autograd.grad(f(x), x, create_graph=True)
        h, = L.autograd.grad((g * L.tensor(seed)).sum(), x)
        hess = L.func.hessian(f)(L.tensor(X))
        per_row = L.func.vmap(L.func.grad(L.prod))(L.tensor(X))
        got.append([g.detach().numpy(), h.numpy(), hess.numpy(), per_row.numpy()])
    for a, b in zip(got[1], got[0], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_numpy_warnings_from_inside_ops_are_not_shown_but_the_users_are():
    """torch computes log(0) = -inf and 1/0 = inf silently; NumPy's RuntimeWarnings raised
    on retrograd's lines are filtered from the import on, a user's own NumPy calls still
    warn. (In a fresh interpreter: pytest's own warning capture resets filters.)"""
    import subprocess
    import sys
    code = ("import numpy as np, retrograd as rg\n"
            "x = rg.tensor([0.0, 1.0, 4.0], requires_grad=True)\n"
            "y = rg.log(x) + x / 0.0 + rg.sqrt(x - 2.0)\n"
            "y.sum().backward()\n"
            "assert float(rg.log(rg.zeros(1))[0]) == -np.inf\n"
            "np.log(np.zeros(1))  # the user's own: warns\n")
    r = subprocess.run([sys.executable, "-W", "default", "-c", code], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    warned = [line for line in r.stderr.splitlines() if "RuntimeWarning" in line]
    assert len(warned) == 1 and warned[0].startswith("<string>:6"), r.stderr


@pytest.mark.parametrize("A", [[[1.0, 2.0], [2.0, 4.0]], [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0],
                                                          [7.0, 8.0, 9.0]],
                               [[0.0, 0.0], [0.0, 0.0]], [[2.0, 1.0], [1.0, 3.0]]])
def test_det_gradient_of_a_singular_matrix_is_the_adjugate(A):
    """det's backward inverted A, so a singular A raised 'linalg.inv: ... singular'; the
    gradient is adj(A)^T (the cofactors), finite differences agree (PyTorch gives 0)."""
    a = rg.tensor(A, dtype=rg.float64, requires_grad=True)
    rg.linalg.det(a).backward()
    An = np.array(A)
    num = np.zeros_like(An)
    for i, j in np.ndindex(An.shape):
        e = np.zeros_like(An)
        e[i, j] = 1e-6
        num[i, j] = (np.linalg.det(An + e) - np.linalg.det(An - e)) / 2e-6
    np.testing.assert_allclose(a.grad.numpy(), num, atol=1e-6)
    b = rg.tensor(np.stack([np.eye(len(A)), An]), requires_grad=True)  # a batch, mixed
    rg.linalg.det(b).sum().backward()
    np.testing.assert_allclose(b.grad.numpy()[1], num, atol=1e-6)
    np.testing.assert_allclose(b.grad.numpy()[0], np.eye(len(A)), atol=1e-12)


def test_std_var_positional_overloads_and_integer_dtype_arguments_as_torch():
    """std/var's third positional is `unbiased` (it was read as keepdim), var(x, True) is the
    unbiased flag; sum/prod/cumsum/cumprod with an integer dtype= give that dtype (NumPy
    widened int32 to int64)."""
    x = np.random.default_rng(0).standard_normal((2, 3))
    got = []
    for L in (torch, rg):
        t = L.tensor(x)
        i = L.tensor([1, 2, 3], dtype=L.int32)
        vals = [L.std(t, 1, True), L.std(t, 1, False, True), L.var(t, False), t.std(1, True),
                L.std_mean(t, 1, False, True)[0], L.var_mean(t, 1, True, True)[0]]
        ints = [i.sum(dtype=L.int32), i.cumsum(0, dtype=L.int32), i.prod(dtype=L.int16),
                L.cumprod(i, 0, dtype=L.int8), i.sum(), L.tensor([True, True]).sum(),
                L.tensor([True, False]).cumsum(0)]
        got.append(([(v.numpy(), tuple(v.shape)) for v in vals],
                    [(v.numpy(), str(v.dtype).split(".")[-1]) for v in ints]))
    for (a, sa), (b, sb) in zip(got[1][0], got[0][0], strict=True):
        assert sa == sb
        np.testing.assert_allclose(a, b, rtol=1e-12)
    for (a, da), (b, db) in zip(got[1][1], got[0][1], strict=True):
        assert da == db
        np.testing.assert_array_equal(a, b)


def test_integer_index_views_nested_list_indices_and_empty_norm_dims_as_torch():
    """x[2] (all ints) is a 0-d view, so writes through it reach x and x's writes show in
    it (it was a copy); a list holding lists is read as a tuple of indices, as torch does
    (NumPy's reading gave another shape); norm over dim=() reduces every dimension."""
    got = []
    for T in (torch, rg):
        y = T.arange(6.0)
        v = y[2]
        v.fill_(9)
        z = T.arange(6.0).reshape(2, 3)
        z[0, 1].mul_(10)
        z[1][2].fill_(-1)
        w = T.arange(6.0)
        u = w[2]
        w.fill_(7)
        q = T.arange(4.0)
        q.unbind()[0].fill_(5)
        x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
        a = (x * 1)[1]
        (a * a).backward()
        n = T.arange(10).reshape(5, 2)
        shapes = [tuple(n[[[0, 1], [1, 0]]].shape), tuple(n[[[0, 1]]].shape),
                  tuple(n[[[0], [1]]].shape), tuple(n[[0, 1]].shape)]
        s = T.zeros(3, 3)
        s[[[0, 1], [1, 2]]] = 5.0
        m = T.tensor([[3.0, 4.0], [1.0, 2.0]])
        got.append([y.tolist(), z.tolist(), float(u), q.tolist(), x.grad.tolist(), shapes,
                    s.tolist(), float(T.norm(m, dim=())), tuple(T.norm(m, dim=[]).shape)])
    assert got[1] == got[0]


WRITES = {
    "mask put float into int": lambda T: T.zeros(5, dtype=T.int64).__setitem__(
        T.tensor([True, False, True, False, True]), T.tensor([1.5, 2.5, 3.5])),
    "index put float into int": lambda T: T.zeros(5, dtype=T.int64).__setitem__(
        T.tensor([0, 1]), T.tensor([1.5, 2.5])),
    "mask put float64 into float32": lambda T: T.zeros(5).__setitem__(
        T.tensor([True, False, True, False, True]), T.tensor([1.0, 2.0, 3.0], dtype=T.float64)),
    "masked_fill overflow": lambda T: T.zeros(3, dtype=T.uint8).masked_fill(
        T.tensor([True, False, True]), 300),
    "index_fill overflow": lambda T: T.zeros(3, dtype=T.int8).index_fill(0, T.tensor([0]), 300),
}


@pytest.mark.parametrize("name", sorted(WRITES))
def test_writes_torch_refuses_are_refused_not_cast_or_wrapped(name):
    """An advanced-index write of a tensor of another dtype was cast (1.5 -> 1), a fill
    value out of the dtype's range wrapped (300 -> 44); torch refuses both."""
    with pytest.raises(RuntimeError):
        WRITES[name](torch)
    with pytest.raises(RuntimeError):
        WRITES[name](rg)


def test_writes_torch_casts_are_cast():
    for T in (torch, rg):
        y = T.zeros(5, dtype=T.int64)
        y[0:2] = T.tensor([1.5, 2.5])  # a basic index: copy_ casts
        y[T.tensor([True, False, False, False, True])] = 7.9  # a number: cast
        y[T.tensor([False, False, True, False, False])] = T.tensor(3.5)  # 0-d under a mask
        z = T.zeros(3, dtype=T.int8).masked_fill(T.tensor([True, False, True]), -128)
        assert y.tolist() == [7, 2, 3, 0, 7] and z.tolist() == [-128, 0, -128]
        with pytest.raises(RuntimeError):  # but an integer index wants the dtype, 0-d too
            y[T.tensor([2])] = T.tensor(3.5)


def test_grad_aux_comes_back_detached_and_arange_refuses_a_wrong_step_sign():
    for L in (torch, rg):
        g, aux = L.func.grad(lambda x, L=L: ((x * x).sum(), {"y": x * 2}), has_aux=True)(
            L.tensor([1.0, 2.0]))
        assert g.tolist() == [2.0, 4.0] and not aux["y"].requires_grad
        with pytest.raises(RuntimeError):
            L.arange(0, -1, 0.3)
        assert L.arange(5, 5, 1).shape == (0,) and L.arange(3, 0, -1).tolist() == [3, 2, 1]


@pytest.mark.parametrize("dtype", ["int64", "uint8"])
def test_inplace_integer_power_to_a_negative_exponent_is_refused(dtype):
    """uint8 **= -1 gave [0, 0] (NumPy's), int64 a ValueError; torch refuses both."""
    for L in (torch, rg):
        y = L.tensor([2, 250], dtype=getattr(L, dtype))
        with pytest.raises(RuntimeError):
            y **= -1
        y **= 2
        assert y.tolist() == ([4, 62500] if dtype == "int64" else [4, 36])


@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
@pytest.mark.parametrize("shape, kw", [((2, 1, 5, 7), {"scale_factor": 1.5}),
                                       ((2, 1, 5, 7), {"size": (9, 4)}),
                                       ((1, 2, 6), {"scale_factor": 1.7}),
                                       ((1, 1, 3, 4, 5), {"scale_factor": 2.0})])
def test_interpolate_resizes_uint8_masks_with_the_nearest_modes_as_torch(mode, shape, kw):
    """A segmentation mask (uint8) resized with a nearest mode: torch's values and dtype (it
    was refused as not floating); the interpolating modes on uint8 stay refused here."""
    x = np.random.default_rng(len(shape)).integers(0, 255, shape).astype(np.uint8)
    want = torch.nn.functional.interpolate(torch.tensor(x), mode=mode, **kw).numpy()
    got = F.interpolate(rg.tensor(x), mode=mode, **kw).numpy()
    assert got.dtype == want.dtype == np.uint8
    np.testing.assert_array_equal(got, want)
    with pytest.raises(NotImplementedError):  # (a TypeError too)
        torch.nn.functional.interpolate(torch.tensor(x).long(), mode=mode, **kw)
    with pytest.raises(NotImplementedError, match="floating point"):
        F.interpolate(rg.tensor(x).long(), mode=mode, **kw)
