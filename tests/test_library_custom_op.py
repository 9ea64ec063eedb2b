"""`rg.library.custom_op` against `torch.library.custom_op`: the same program, written once
for a library `L`, run in both."""

import numpy as np
import pytest

import retrograd as rg

torch = pytest.importorskip("torch")

_COUNT = iter(range(10 ** 6))


def _define(L, with_autograd=True):
    """A NumPy-bodied sine and a two-output op with a float argument, in a fresh namespace
    (torch's registrations are global: each call names its own)."""
    ns = f"rgtest{next(_COUNT)}"

    @L.library.custom_op(f"{ns}::numpy_sin", mutates_args=())
    def numpy_sin(x: L.Tensor) -> L.Tensor:
        return L.from_numpy(np.sin(x.detach().numpy()))

    @L.library.custom_op(f"{ns}::scale_shift", mutates_args=())
    def scale_shift(x: L.Tensor, k: float = 2.0) -> tuple[L.Tensor, L.Tensor]:
        return x * k, x + k

    if with_autograd:
        def setup_context(ctx, inputs, output):
            x, = inputs
            ctx.save_for_backward(x)

        def backward(ctx, grad):
            x, = ctx.saved_tensors
            return grad * x.cos()

        numpy_sin.register_autograd(backward, setup_context=setup_context)

        def setup2(ctx, inputs, output):
            ctx.k = inputs[1]

        def backward2(ctx, ga, gb):
            return ga * ctx.k + gb, None

        L.library.register_autograd(f"{ns}::scale_shift", backward2, setup_context=setup2)

        @numpy_sin.register_fake
        def _(x):
            return L.empty_like(x)
    return ns, numpy_sin, scale_shift


def _run(L):
    ns, numpy_sin, scale_shift = _define(L)
    x = L.tensor(np.linspace(-1.0, 2.0, 5), requires_grad=True)
    y = numpy_sin(x)
    a, b = scale_shift(y, k=3.0)
    c, d = getattr(L.ops, ns).scale_shift(x, 0.5)
    loss = (a * b).sum() + (c ** 2).sum() + d.sum()
    loss.backward()
    return [y, a, b, c, d, loss, x.grad]


def test_values_and_gradients_match_torch():
    for got, want in zip(_run(rg), _run(torch)):
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-14)


def test_backward_without_registered_autograd_raises_as_torch():
    for L in (torch, rg):
        _, numpy_sin, _ = _define(L, with_autograd=False)
        x = L.ones(3, requires_grad=True)
        y = numpy_sin(x)
        assert y.requires_grad
        with pytest.raises(RuntimeError, match="no autograd formula was registered"):
            y.sum().backward()
        with L.no_grad():
            assert not numpy_sin(x).requires_grad


def test_mutated_argument_and_aliasing_output():
    versions = []
    for L in (torch, rg):
        ns = f"rgtest{next(_COUNT)}"

        @L.library.custom_op(f"{ns}::add_into", mutates_args={"a"})
        def add_into(a: L.Tensor, b: L.Tensor) -> None:
            a.add_(b)

        t = L.zeros(2)
        add_into(t, L.ones(2))
        versions.append((t.tolist(), t._version))

        @L.library.custom_op(f"{ns}::same", mutates_args=())
        def same(x: L.Tensor) -> L.Tensor:
            return x

        with pytest.raises(RuntimeError, match="alias"):
            same(L.ones(2))
    assert versions[0] == versions[1]


def test_definition_errors_as_torch():
    for L in (torch, rg):
        with pytest.raises(ValueError, match="type annotation"):
            @L.library.custom_op(f"rgtest{next(_COUNT)}::bad", mutates_args=())
            def bad(x):
                return x
    with pytest.raises(ValueError, match="namespace::op"):
        rg.library.custom_op("no_namespace", mutates_args=())
    with pytest.raises(ValueError, match="taken"):
        rg.library.custom_op("sum::f", lambda x: x, mutates_args=(),
                             schema="(Tensor x) -> Tensor")
