"""Bad input gets a clear exception naming the problem and the
shapes involved, never a wrong number, and the user's tensors are unchanged.

Every case builds its own inputs (leaves that require grad, non-leaves and
constants), snapshots them, runs the bad call, and checks the exception's
type, its message, and that nothing about the inputs changed: values, dtype,
shape, version, grad, grad_fn. Afterwards a backward through the inputs still
gives the right gradients.
"""

import re

import numpy as np
import pytest

import retrograd as rg
import retrograd.nn.functional as F


def _shape_pattern(shape):
    """A shape as it may be printed: '(2, 3)' or NumPy's '(2,3)'."""
    inner = r",\s*".join(str(s) for s in shape)
    return r"\(" + inner + (r",\)" if len(shape) == 1 else r"\)")


ORIGIN = {}  # id(tensor) -> (leaf, factor): each watched tensor is leaf * factor


def _leaf(*shape):
    t = rg.tensor(np.arange(1.0, 1.0 + np.prod(shape)).reshape(shape) / 7, requires_grad=True)
    ORIGIN[id(t)] = (t, 1.0)
    return t


def _scaled(leaf, factor):
    t = leaf * factor
    ORIGIN[id(t)] = (leaf, factor)
    return t


def _snapshot(t):
    return (t.numpy().copy(), t.dtype, t.shape, t._version, t.grad_fn, t.requires_grad,
            None if t.grad is None else t.grad.numpy().copy())


def _same(before, after):
    assert before[1:3] == after[1:3]
    np.testing.assert_array_equal(before[0], after[0])
    assert before[3] == after[3], "version changed"
    assert before[4] is after[4], "grad_fn changed"
    assert before[5] == after[5], "requires_grad changed"
    if before[6] is None:
        assert after[6] is None
    else:
        np.testing.assert_array_equal(before[6], after[6])


# Each case: (id, make() -> (tensors to watch, bad call), exception type, message patterns).
# A pattern that is a tuple stands for a shape.
def _two(f, sa, sb):
    def make():
        a, b = _leaf(*sa), _scaled(_leaf(*sb), 3.0)  # a leaf and a non-leaf
        return [a, b], lambda: f(a, b)
    return make


def _one(f, shape):
    def make():
        a = _scaled(_leaf(*shape), 2.0)
        return [a], lambda: f(a)
    return make


CASES = [
    # shape mismatches
    ("matmul", _two(rg.matmul, (2, 3), (2, 3)), ValueError, ["matmul", (2, 3), (2, 3)]),
    ("matmul-op", _two(lambda a, b: a @ b, (2, 3), (4,)), ValueError, [(2, 3), (4,)]),
    ("matmul-vec", _two(rg.matmul, (3,), (2, 4)), ValueError, [(3,), (2, 4)]),
    ("matmul-batch", _two(rg.matmul, (5, 2, 3), (4, 3, 2)), ValueError,
     [(5, 2, 3), (4, 3, 2)]),
    ("matmul-0d", _two(rg.matmul, (3,), ()), ValueError, ["dimension", (3,), ()]),
    ("cat", _two(lambda a, b: rg.cat([a, b]), (2, 3), (3, 2)), ValueError,
     ["cat", (2, 3), (3, 2)]),
    ("cat-ndim", _two(lambda a, b: rg.cat([a, b], 1), (2, 3), (2,)), ValueError,
     [(2, 3), (2,)]),
    ("stack", _two(lambda a, b: rg.stack([a, b]), (2,), (3,)), ValueError,
     ["stack", (2,), (3,)]),
    ("reshape", _one(lambda a: a.reshape(4, 2), (2, 3)), ValueError,
     ["reshape", (2, 3), (4, 2)]),
    ("reshape-two-minus-ones", _one(lambda a: a.reshape(-1, -1), (2, 3)), ValueError,
     [(2, 3)]),
    ("view", _one(lambda a: a.view(7), (2, 3)), ValueError, [(2, 3), (7,)]),
    ("expand", _one(lambda a: a.expand(4, 4), (2, 3)), ValueError,
     ["expand", (2, 3), (4, 4)]),
    ("expand-fewer-dims", _one(lambda a: a.expand(3), (2, 3)), ValueError, [(2, 3), (3,)]),
    ("add-broadcast", _two(lambda a, b: a + b, (2, 3), (3, 2)), ValueError,
     ["broadcast", (2, 3), (3, 2)]),
    ("mul-broadcast", _two(lambda a, b: b * a, (2, 3), (4,)), ValueError,
     ["broadcast", (2, 3), (4,)]),
    ("maximum-broadcast", _two(rg.maximum, (2,), (3,)), ValueError, [(2,), (3,)]),
    ("split-sizes", _one(lambda a: rg.split(a, [1, 3]), (5, 2)), ValueError,
     ["split", r"\[1, 3\]", "5"]),
    ("split-zero", _one(lambda a: a.split(0), (5, 2)), ValueError, ["split", "0"]),
    # bad dims
    ("sum-dim", _one(lambda a: a.sum(dim=5), (2, 3)), IndexError, ["sum", "5", "2 dim"]),
    ("mean-axis", _one(lambda a: a.mean(axis=-3), (2, 3)), IndexError, ["mean", "-3"]),
    ("max-repeated-dim", _one(lambda a: a.max(dim=(0, 0)), (2, 3)), ValueError,
     ["max", "repeats"]),
    ("var-dim", _one(lambda a: a.var(dim=4), (2, 3)), IndexError, ["var", "4"]),
    ("sum-float-dim", _one(lambda a: a.sum(dim=1.5), (2, 3)), TypeError, ["sum", "1.5"]),
    ("dim-and-axis", _one(lambda a: a.sum(dim=0, axis=0), (2, 3)), TypeError,
     ["dim", "axis"]),
    ("softmax-dim", _one(lambda a: a.softmax(dim=2), (2, 3)), IndexError, ["softmax", "2"]),
    ("transpose-dim", _one(lambda a: a.transpose(0, 2), (2, 3)), IndexError,
     ["transpose", "2"]),
    ("permute-dims", _one(lambda a: a.permute(0, 0), (2, 3)), ValueError,
     ["permute", r"\(0, 0\)", (2, 3)]),
    ("squeeze-dim", _one(lambda a: a.squeeze(3), (2, 1)), IndexError, ["squeeze", "3"]),
    ("unsqueeze-dim", _one(lambda a: a.unsqueeze(3), (2,)), IndexError, ["unsqueeze", "3"]),
    ("flatten-dim", _one(lambda a: a.flatten(0, 5), (2, 3)), IndexError, ["flatten", "5"]),
    ("cat-dim", _two(lambda a, b: rg.cat([a, b], dim=2), (2, 3), (2, 3)), IndexError,
     ["cat", "2"]),
    ("split-dim", _one(lambda a: a.split(1, dim=2), (2, 3)), IndexError, ["split", "2"]),
    # bad indices
    ("index-int", _one(lambda a: a[5], (2, 3)), IndexError, ["5", (2, 3)]),
    ("index-slice-int", _one(lambda a: a[:, 7], (2, 3)), IndexError, ["7", (2, 3)]),
    ("index-array", _one(lambda a: a[[0, 4]], (2, 3)), IndexError, ["4", (2, 3)]),
    ("index-negative", _one(lambda a: a[-3], (2, 3)), IndexError, ["-3", (2, 3)]),
    ("index-too-many", _one(lambda a: a[0, 0, 0], (2, 3)), IndexError, ["too many", (2, 3)]),
    ("index-bool-length", _one(lambda a: a[np.array([True, False, True])], (2, 3)), IndexError,
     ["boolean", (2, 3)]),
    ("index-float-tensor", _one(lambda a: a[rg.tensor([0.5])], (2, 3)), IndexError,
     ["integer or bool", "float32", (2, 3)]),
    # einsum
    ("einsum-count", _two(lambda a, b: rg.einsum("ij,jk,kl->il", a, b), (2, 3), (3, 4)),
     ValueError, ["ij,jk,kl->il", "3 operands", "2"]),
    ("einsum-rank", _two(lambda a, b: rg.einsum("ijk,jk->i", a, b), (2, 3), (3, 4)),
     ValueError, ["ijk", (2, 3)]),
    ("einsum-output", _one(lambda a: rg.einsum("ij->ik", a), (2, 3)), ValueError, ["k"]),
    ("einsum-sizes", _two(lambda a, b: rg.einsum("ij,jk->ik", a, b), (2, 3), (4, 5)),
     ValueError, [(2, 3), (4, 5)]),
    # convolution and pooling
    ("conv2d-channels", _two(F.conv2d, (1, 3, 5, 5), (4, 2, 3, 3)), ValueError,
     ["conv2d", "3 channels", (4, 2, 3, 3), "expects 2"]),
    ("conv2d-input-rank", _two(F.conv2d, (5, 5), (4, 3, 3, 3)), ValueError,
     ["conv2d", (5, 5)]),
    ("conv2d-kernel-too-big", _two(F.conv2d, (1, 3, 2, 2), (4, 3, 3, 3)), ValueError,
     ["conv2d", r"\(3, 3\)", (1, 3, 2, 2)]),
    ("max_pool2d-kernel", _one(lambda a: F.max_pool2d(a, 3), (1, 1, 2, 2)), ValueError,
     ["max_pool2d", (1, 1, 2, 2)]),
    # other bad arguments
    ("where-condition", _two(lambda a, b: rg.where(a, a, b), (2,), (2,)), TypeError,
     ["where", "bool", "float64"]),
    ("clamp-bound-type", _one(lambda a: a.clamp("0"), (2,)), TypeError,  # tensors are fine
     ["clamp", "min"]),
    ("max-empty", _one(lambda a: a[:0].max(), (2,)), RuntimeError, ["max", "empty", (0,)]),
    ("backward-gradient-shape", _one(lambda a: a.backward(rg.ones(3)), (2,)), RuntimeError,
     [(3,), (2,)]),
    ("backward-not-scalar", _one(lambda a: a.backward(), (2,)), RuntimeError,
     ["not a scalar", (2,)]),
    ("grad-outputs-count", _two(lambda a, b: rg.autograd.grad([a, b], [a], [rg.ones(2)]),
                                (2,), (2,)), ValueError, ["1 grad_outputs", "2 outputs"]),
]


def _inplace(f, shape=(2, 3), leaf=False, grad=True):
    def make():
        a = _leaf(*shape) if grad else rg.tensor(np.arange(6.0).reshape(shape))
        if not leaf and grad:
            a = _scaled(a, 1.5)
        return [a], lambda: f(a)
    return make


def _setitem(idx, value):
    def f(a):
        a[idx] = value
    return f


INPLACE_CASES = [
    ("add_-broadcast", _inplace(lambda a: a.add_(rg.ones(3, 2))), ValueError,
     ["broadcast", (2, 3), (3, 2)]),
    ("mul_-grows", _inplace(lambda a: a.mul_(rg.ones(4, 2, 3))), ValueError,
     [(2, 3), (4, 2, 3)]),
    ("copy_-shape", _inplace(lambda a: a.copy_(rg.ones(4))), ValueError,
     ["copy_", (4,), (2, 3)]),
    ("setitem-index", _inplace(_setitem(5, 1.0)), IndexError, ["5", (2, 3)]),
    ("setitem-value-shape", _inplace(_setitem(0, rg.ones(4))), ValueError, [(4,), (3,)]),
    ("leaf-add_", _inplace(lambda a: a.add_(1.0), leaf=True), RuntimeError,
     ["leaf", "in-place", (2, 3)]),
    ("leaf-setitem", _inplace(_setitem(0, 1.0), leaf=True), RuntimeError, ["leaf", "in-place"]),
    ("leaf-zero_", _inplace(lambda a: a.zero_(), leaf=True), RuntimeError, ["leaf", "in-place"]),
    ("leaf-view-mul_", _inplace(lambda a: a[0].mul_(2.0), leaf=True), RuntimeError,
     ["view", "in-place"]),
    ("expanded-view", _inplace(lambda a: a[0].expand(2, 3).add_(1.0), grad=False),
     RuntimeError, ["read-only", "clone"]),
]


def _check(make, exc, patterns):
    watched, call = make()
    before = [_snapshot(t) for t in watched]
    with pytest.raises(exc) as e:
        call()
    msg = str(e.value)
    for p in patterns:
        pat = _shape_pattern(p) if isinstance(p, tuple) else p  # strings are regexes
        assert re.search(pat, msg), f"{pat!r} not in message {msg!r}"
    for t, b in zip(watched, before):
        _same(b, _snapshot(t))
    return watched


@pytest.mark.parametrize("make,exc,patterns", [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_bad_input_raises_a_clear_error_and_changes_nothing(make, exc, patterns):
    watched = _check(make, exc, patterns)
    # the inputs still work: d/dleaf sum((leaf * c)^2) = 2 c^2 leaf
    for t in watched:
        leaf, c = ORIGIN.pop(id(t))
        g, = rg.autograd.grad((t * t).sum(), leaf)
        np.testing.assert_allclose(g.numpy(), 2 * c * c * leaf.numpy(), rtol=1e-12)


def test_int_tensor_in_place_float_op_raises_and_changes_nothing():
    i = rg.tensor([1, 2, 3])
    before = _snapshot(i)
    for call in (lambda: i.add_(1.5), lambda: i.div_(2), lambda: i.mul_(0.5)):
        with pytest.raises(TypeError, match="int64") as e:
            call()
        assert "float" in str(e.value)
        _same(before, _snapshot(i))


@pytest.mark.parametrize("make,exc,patterns", [c[1:] for c in INPLACE_CASES],
                         ids=[c[0] for c in INPLACE_CASES])
def test_bad_in_place_op_raises_a_clear_error_and_changes_nothing(make, exc, patterns):
    _check(make, exc, patterns)


@pytest.mark.parametrize("data", [[object()], "abc", [[1.0, 2.0], [3.0]]],
                         ids=["object", "string", "ragged"])
def test_bad_data_raises_type_or_value_error(data):
    with pytest.raises((TypeError, ValueError)):
        rg.tensor(data)


@pytest.mark.parametrize("shape", [(-1,), (2.5,), (2, -3)])
def test_bad_shape_for_creation_names_it(shape):
    with pytest.raises(ValueError, match=re.escape(str(shape[0]) if len(shape) == 1
                                                   else str(shape[1]))):
        rg.zeros(*shape)


def test_requires_grad_on_integer_tensor_names_the_dtype():
    t = rg.tensor([1, 2])
    with pytest.raises(TypeError, match="int64"):
        t.requires_grad_()
    assert not t.requires_grad


def test_gradcheck_error_names_the_input_and_element():
    x = rg.tensor([0.5, 1.0, 2.0], dtype=rg.float64, requires_grad=True)
    before = _snapshot(x)

    def wrong(t):  # the derivative is 2t, but detach hides the second factor
        return t * t.detach()

    with pytest.raises(rg.GradcheckError, match=r"input 0 \(shape \(3,\)\), element \(\d,\)"):
        rg.gradcheck(wrong, [x])
    _same(before, _snapshot(x))
