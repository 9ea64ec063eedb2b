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
