"""Gaps found by sweeping PyTorch's old-style nn module test database
(`torch.testing._internal.common_nn.module_tests + get_new_module_tests()`, 234 entries; the
184 that are not losses nor `*_no_reduce*`): each module built in torch and in rg.nn from
the entry's constructor (its torch functionals mapped to rg's), torch's state_dict loaded
into rg, then forward values, dtypes and shapes, float64 gradients of a random cotangent
for the input and every parameter, and double backward (with respect to the input, the
parameters and the cotangent) where the entry's check_gradgrad is not False; also float32,
eval mode, pickling, reprs, forward-mode tangents, int64 convolutions, and each entry's
input reshaped (unbatched, an extra batch dim, one more channel or column, an emptied last
dim) for torch's values or exception types. Found: CrossMapLRN2d missing from rg.nn,
Unflatten's repr, and (from the emptied inputs) GLU, interpolate and conv on empty inputs.

PyTorch's CrossMapLRN2d (a Python autograd.Function ported from Lua Torch) has a forward
whose channel windows keep channel 0 from channel (size + 1) // 2 on, and a hand-written
backward that is not the derivative of that forward (it fails gradcheck; it is off by
1e-6 relative on the database's own entry). rg matches the forward and gives the exact
derivative, checked here against finite differences of torch's forward and against
torch's backward where that one is right."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import torch
from port_compare import close

import retrograd as rg


def _pair(shape, seed: int = 0, dtype=np.float64):
    """The same values as a torch and a retrograd tensor, both requiring grad."""
    x = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return (torch.tensor(x, requires_grad=True), rg.tensor(x.copy(), requires_grad=True))


# (channels, size, alpha, beta, k): the database's entry, windows cut at both channel
# ends, the cases where PyTorch's windows keep channel 0, even sizes, size 1
_CASES = [(3, 5, 5e-3, 1e-3, 2.0), (3, 5, 0.5, 0.75, 2.0), (8, 5, 0.5, 0.75, 1.0),
          (8, 3, 1e-4, 0.75, 1.0), (7, 4, 0.3, 0.6, 1.5), (6, 2, 0.5, 0.75, 1.0),
          (5, 1, 0.5, 0.75, 1.0), (1, 5, 0.5, 0.75, 1.0), (4, 9, 1.0, 0.5, 0.5)]


@pytest.mark.parametrize("c,size,alpha,beta,k", _CASES)
def test_cross_map_lrn2d_values_match_torch(c, size, alpha, beta, k):
    """Forward values, dtype and shape as torch.nn.CrossMapLRN2d's, window quirk included."""
    xt, xr = _pair((2, c, 3, 4))
    close(rg.nn.CrossMapLRN2d(size, alpha, beta, k)(xr),
          torch.nn.CrossMapLRN2d(size, alpha, beta, k)(xt), tol=1e-12)


def test_cross_map_lrn2d_float32_and_empty_batch():
    """float32 stays float32 (values to float32 rounding: PyTorch sums its windows by a
    running add and subtract); an empty batch gives an empty result, as torch's."""
    xt, xr = _pair((2, 6, 5, 5), 1, np.float32)
    tm, rm = torch.nn.CrossMapLRN2d(3, 0.5, 0.75, 1.0), rg.nn.CrossMapLRN2d(3, 0.5, 0.75, 1.0)
    close(rm(xr), tm(xt), tol=1e-5)
    close(rm(rg.zeros(0, 6, 2, 2)), tm(torch.zeros(0, 6, 2, 2)))


def _numeric_grad(size, alpha, beta, k, x: np.ndarray, cot: np.ndarray) -> np.ndarray:
    """d(sum(cot * torch_forward(x)))/dx by central differences of torch's forward."""
    m = torch.nn.CrossMapLRN2d(size, alpha, beta, k)
    f = lambda a: float((m(torch.tensor(a)) * torch.tensor(cot)).sum())  # noqa: E731
    g, eps = np.zeros_like(x), 1e-6
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        g[i] = (f(x + d) - f(x - d)) / (2 * eps)
    return g


@pytest.mark.parametrize("c,size,alpha,beta,k", [_CASES[0], _CASES[1], _CASES[2], _CASES[4]])
def test_cross_map_lrn2d_gradient_is_the_derivative_of_torchs_forward(c, size, alpha, beta, k):
    """The input gradient equals central differences of torch's forward values (where
    torch's own backward differs from them: its windows are shifted by one channel)."""
    xt, xr = _pair((2, c, 2, 2), 2)
    cot = np.random.default_rng(3).standard_normal(xt.shape)
    (g,) = rg.autograd.grad(rg.nn.CrossMapLRN2d(size, alpha, beta, k)(xr), xr, rg.tensor(cot))
    close(g, _numeric_grad(size, alpha, beta, k, xt.detach().numpy(), cot), tol=1e-7)


@pytest.mark.parametrize("c,size", [(1, 3), (1, 5), (2, 4), (3, 6)])
def test_cross_map_lrn2d_gradient_matches_torch_where_torchs_backward_is_right(c, size):
    """Where torch's backward passes its own gradcheck (few channels for the size), the
    gradients agree to rounding."""
    xt, xr = _pair((3, c, 4, 4), 4)
    cot = np.random.default_rng(5).standard_normal(xt.shape)
    yt = torch.nn.CrossMapLRN2d(size, 0.5, 0.75, 1.0)(xt)
    yr = rg.nn.CrossMapLRN2d(size, 0.5, 0.75, 1.0)(xr)
    close(rg.autograd.grad(yr, xr, rg.tensor(cot))[0],
          # a scalar, not grad_outputs: torch's first grad_outputs imports sympy (a second)
          torch.autograd.grad((yt * torch.tensor(cot)).sum(), xt)[0], tol=1e-10)


def test_cross_map_lrn2d_double_backward():
    """The gradient is itself differentiable (torch's CrossMapLRN2d has no double backward:
    the database marks check_gradgrad=False), checked by finite differences."""
    _, xr = _pair((1, 5, 2, 2), 6)
    m = rg.nn.CrossMapLRN2d(3, 0.5, 0.75, 1.0)
    assert rg.autograd.gradgradcheck(m, (xr,))


def test_cross_map_lrn2d_module_surface():
    """repr, pickling, the torch.nn.modules.normalization path, no parameters or state."""
    tm, rm = torch.nn.CrossMapLRN2d(5, 5e-3, 1e-3, 2), rg.nn.CrossMapLRN2d(5, 5e-3, 1e-3, 2)
    assert repr(rm) == repr(tm)
    assert repr(rg.nn.CrossMapLRN2d(3)) == repr(torch.nn.CrossMapLRN2d(3))
    assert rg.nn.modules.normalization.CrossMapLRN2d is rg.nn.CrossMapLRN2d
    assert list(rm.state_dict()) == list(tm.state_dict()) == []
    xt, xr = _pair((2, 3, 6, 6))
    close(pickle.loads(pickle.dumps(rm))(xr), tm(xt), tol=1e-12)


@pytest.mark.parametrize("make,exc", [
    (lambda lib: lib.nn.CrossMapLRN2d(3)(lib.ones(3, 2, 2)), ValueError),      # not 4-D
    (lambda lib: lib.nn.CrossMapLRN2d(3)(lib.ones(1, 2, 2, 2, 2)), ValueError),
    (lambda lib: lib.nn.CrossMapLRN2d(3)(lib.ones(1, 3, 2, 2, dtype=lib.int64)), RuntimeError),
    (lambda lib: lib.nn.CrossMapLRN2d(3)(lib.ones(1, 0, 2, 2)), IndexError),    # no channels
    (lambda lib: lib.nn.CrossMapLRN2d(0)(lib.ones(1, 3, 2, 2)), ZeroDivisionError),
])
def test_cross_map_lrn2d_refuses_what_torch_refuses(make, exc):
    """The exception types torch raises."""
    for lib in (torch, rg):
        with pytest.raises(exc):
            make(lib)


def test_cross_map_lrn2d_runs_on_a_stand_in_gpu_as_on_the_host():
    """On fake_device's CuPy stand-in (which refuses any silent host copy): the window
    matrix is made on the input's device; outputs and gradients are the host's."""
    import fake_device

    x = np.random.default_rng(7).standard_normal((2, 6, 3, 3))
    results = []
    fake_device.install()
    try:
        for device in ("cpu", "cuda"):
            xr = rg.tensor(x).to(device).requires_grad_()
            out = rg.nn.CrossMapLRN2d(3, 0.5, 0.75, 1.0)(xr)
            assert out.device.startswith(device)
            out.sum().backward()
            results.append((out.cpu().numpy(), xr.grad.cpu().numpy()))
    finally:
        fake_device.uninstall()
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


# ------------------------------------------------------------------------------ Unflatten

@pytest.mark.parametrize("size", [[2, 2], [2, -1]])
def test_unflatten_keeps_its_size_as_given(size):
    """`unflattened_size` and the repr show the size as passed (a list stays a list), as
    torch's (database entry 'Unflatten_no_batch_dim' passes a torch.Size)."""
    tm, rm = torch.nn.Unflatten(-2, size), rg.nn.Unflatten(-2, size)
    assert repr(rm) == repr(tm)
    assert type(rm.unflattened_size) is type(tm.unflattened_size)
    xt, xr = _pair((3, 4, 5))
    close(rm(xr), tm(xt))


# ----------------------------------------------------- empty inputs (the entries' shapes, emptied)

@pytest.mark.parametrize("shape,dim", [((0,), -1), ((0, 3), 0), ((3, 0), -1), ((2, 0, 4), 1)])
def test_glu_halves_an_empty_dimension(shape, dim):
    """GLU of an empty halving dimension is empty, as torch's (it raised: split's chunk
    size was 0)."""
    xt, xr = _pair(shape)
    yt, yr = torch.nn.GLU(dim)(xt), rg.nn.GLU(dim)(xr)
    close(yr, yt)
    close(rg.autograd.grad(yr.sum(), xr)[0], torch.autograd.grad(yt.sum(), xt)[0])


@pytest.mark.parametrize("mode,shape", [("nearest", (2, 0, 4)), ("linear", (2, 0, 4)),
                                        ("bilinear", (2, 0, 4, 4)), ("bicubic", (1, 0, 3, 3)),
                                        ("nearest-exact", (2, 0, 4, 4)),
                                        ("trilinear", (2, 0, 3, 3, 3))])
def test_interpolate_refuses_zero_channels_with_samples(mode, shape):
    """torch's upsampling kernels take an empty batch but refuse zero channels (rg gave an
    empty result); an empty batch still gives one, and 1-D and 2-D 'area' take both."""
    size = (5,) * (len(shape) - 2)
    for lib in (torch, rg):
        with pytest.raises(RuntimeError):
            lib.nn.functional.interpolate(lib.zeros(*shape), size=size, mode=mode)
    empty = (0, 2) + shape[2:]
    close(rg.nn.functional.interpolate(rg.zeros(*empty), size=size, mode=mode),
          torch.nn.functional.interpolate(torch.zeros(*empty), size=size, mode=mode))
    if len(shape) < 5:  # (torch's 3-D area, adaptive_avg_pool3d, refuses zero channels)
        close(rg.nn.functional.interpolate(rg.zeros(*shape), size=size, mode="area"),
              torch.nn.functional.interpolate(torch.zeros(*shape), size=size, mode="area"))


@pytest.mark.parametrize("fn,shape,wshape,pad", [
    ("conv2d", (2, 2, 4, 0), (3, 2, 3, 3), 2), ("conv2d", (2, 2, 0, 0), (3, 2, 3, 3), 2),
    ("conv1d", (3, 0), (4, 3, 1), 1), ("conv3d", (1, 2, 4, 4, 0), (3, 2, 3, 3, 3), 2),
    ("conv_transpose2d", (2, 2, 4, 0), (2, 3, 3, 3), 0),
    ("conv_transpose1d", (1, 3, 0), (3, 3, 3), 0)])
def test_conv_refuses_an_input_emptied_by_a_spatial_dimension(fn, shape, wshape, pad):
    """torch refuses an empty input with samples and channels ('Only zero batch or zero
    channel inputs are supported'), where rg returned a result of padding and bias; an
    empty batch still gives an empty result (checked for conv)."""
    bias = wshape[1] if "transpose" in fn else wshape[0]
    for lib in (torch, rg):
        f = getattr(lib.nn.functional, fn)
        with pytest.raises(RuntimeError):
            f(lib.zeros(*shape), lib.zeros(*wshape), lib.zeros(bias), padding=pad)
    if "transpose" in fn:  # (its first call loads compiled kernels: a third of a second)
        return
    empty = (0,) + shape[1:] if len(shape) == len(wshape) else (0,) + shape
    empty = empty[:2] + (4,) * (len(wshape) - 2)
    close(getattr(rg.nn.functional, fn)(rg.zeros(*empty), rg.zeros(*wshape), rg.zeros(bias),
                                        padding=pad),
          getattr(torch.nn.functional, fn)(torch.zeros(*empty), torch.zeros(*wshape),
                                           torch.zeros(bias), padding=pad))
