"""Devices, checked on a CPU: a stand-in GPU that follows CuPy's rules (fake_device.py)
plays "cuda", so any op, rule or layer that would silently copy data to the host, or
make a host array where a device one belongs, fails here.

Every op with samples runs forward and backward on the stand-in and must equal the
same on the host; a subset also to second order. Then devices and transfers, nn
layers, a training step and `rg.jit` of a step.
"""

from __future__ import annotations

import subprocess
import sys

import fake_device
import numpy as np
import pytest

import retrograd as rg
from retrograd import devices, ops
from retrograd.cli.check import cases
from retrograd.engine import apply
from retrograd.ops.samples import SAMPLES

FakeArray = fake_device.FakeArray


@pytest.fixture(autouse=True)
def stand_in_gpu():
    fake_device.install()
    yield
    fake_device.uninstall()


def _to_dev(x):
    """A sample's input moved to the device: Tensors (leaves keep requires_grad), arrays
    inside attributes (index arrays) too."""
    if isinstance(x, rg.Tensor):
        t = rg.Tensor._wrap(devices.to(x.data, "cuda"))
        return t.requires_grad_(True) if x.requires_grad else t
    if isinstance(x, np.ndarray):
        return devices.to(x, "cuda")
    if isinstance(x, tuple):
        return tuple(_to_dev(v) for v in x)
    if isinstance(x, list):
        return [_to_dev(v) for v in x]
    return x


def _host(x):
    return devices.host(x.data if isinstance(x, rg.Tensor) else x)


def _run(name, inputs, attrs, seed):
    """(output, gradients of the differentiable inputs) for one sample."""
    op = ops.OPS[name]
    out = apply(op, *inputs, **attrs)
    diff = [x for x in inputs if isinstance(x, rg.Tensor) and x.requires_grad]
    if not diff or not out.requires_grad:
        return out, []
    v = np.random.default_rng(seed).standard_normal(out.shape).astype(out.dtype)
    v = rg.Tensor(v) if isinstance(out.data, np.ndarray) else rg.tensor(v, device="cuda")
    grads = rg.autograd.grad(out, diff, v, allow_unused=True)
    return out, grads


def _device_attrs(name, attrs):
    if name == "to_device":  # the sample's host->host move, made a device->device one
        return dict(attrs, device="cuda:0", src="cuda:0")
    return {k: _to_dev(v) for k, v in attrs.items()}


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_every_op_runs_on_the_device_as_on_the_host(name):
    for k, (inputs, attrs) in enumerate(cases(name, seed=4)):
        out, grads = _run(name, inputs, attrs, k)
        dinputs = [_to_dev(x) for x in inputs]
        dout, dgrads = _run(name, dinputs, _device_attrs(name, attrs), k)
        assert isinstance(dout.data, FakeArray), f"{name}: the result left the device"
        assert dout.device == "cuda:0" and dout.dtype == out.dtype and dout.shape == out.shape
        np.testing.assert_allclose(_host(dout), _host(out), rtol=1e-12, atol=1e-14)
        assert len(dgrads) == len(grads)
        for g, dg in zip(grads, dgrads):
            if g is None:
                assert dg is None
                continue
            assert isinstance(dg.data, FakeArray), f"{name}: a gradient left the device"
            np.testing.assert_allclose(_host(dg), _host(g), rtol=1e-12, atol=1e-14)


SECOND_ORDER = ["exp", "tanh", "sigmoid", "mul", "div", "pow", "matmul", "sum", "logsumexp",
                "softmax", "log_softmax", "linear", "cross_entropy", "getitem", "unfold",
                "standardize", "gelu", "einsum", "solve", "gather"]


@pytest.mark.parametrize("name", [n for n in SECOND_ORDER if n in SAMPLES])
def test_second_derivatives_on_the_device_equal_the_host(name):
    for inputs, attrs in cases(name, seed=5):
        results = []
        for ins, at in ((inputs, attrs), ([_to_dev(x) for x in inputs],
                                          _device_attrs(name, attrs))):
            out = apply(ops.OPS[name], *ins, **at)
            diff = [x for x in ins if isinstance(x, rg.Tensor) and x.requires_grad]
            gs = rg.autograd.grad(out.sum(), diff, create_graph=True)
            total = sum((g * g).sum() for g in gs if g.requires_grad)
            if not isinstance(total, rg.Tensor):
                results.append(None)
                continue
            hs = rg.autograd.grad(total, diff, allow_unused=True)
            results.append([None if h is None else h for h in hs])
        host, dev = results
        if host is None:
            assert dev is None
            continue
        for h, d in zip(host, dev):
            assert (h is None) == (d is None)
            if h is not None:
                assert isinstance(d.data, FakeArray)
                np.testing.assert_allclose(_host(d), _host(h), rtol=1e-10, atol=1e-12)


def test_the_stand_in_catches_a_planted_host_call(monkeypatch):
    x = rg.randn(3, 4, device="cuda", requires_grad=True)
    monkeypatch.setattr(ops.OPS["exp"], "forward", lambda a: np.exp(np.asarray(a)))
    with pytest.raises(fake_device.HostConversionError):
        x.exp()
    monkeypatch.setattr(ops.OPS["exp"], "forward", lambda a: np.exp(a) + np.zeros(a.shape))
    with pytest.raises(fake_device.HostConversionError):
        x.exp()
    # a host array made inside a backward rule is caught too
    tanh = ops.OPS["tanh"]
    monkeypatch.setattr(tanh, "vjps", (lambda m, g, out, a: g * np.ones(a.shape),))
    y = x.tanh().sum()
    with pytest.raises(fake_device.HostConversionError):
        y.backward()


# ---------------------------------------------------------------- devices and transfers

def test_device_of_tensors_and_transfers():
    t = rg.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert t.device == "cpu" and t.device.type == "cpu" and not t.is_cuda
    d = t.to("cuda")
    assert d.device == "cuda:0" and d.device.type == "cuda" and d.device.index == 0
    assert isinstance(d.data, FakeArray) and d.is_cuda
    assert t.cuda().device == "cuda:0" and d.cpu().device == "cpu"
    assert d.cuda() is d and t.cpu() is t and t.to("cpu") is t
    np.testing.assert_array_equal(d.cpu().numpy(), t.numpy())
    both = t.to("cuda", rg.float64)
    assert both.device == "cuda:0" and both.dtype == np.float64
    assert t.to(device="cuda", dtype="float64").dtype == np.float64
    assert t.to(both).device == "cuda:0" and t.to(both).dtype == np.float64
    assert both.to(t).device == "cpu" and both.to(t).dtype == np.float32
    assert t.to(rg.device("cuda:0")).device == "cuda:0"
    assert d.to("float64").device == "cuda:0"
    with pytest.raises(RuntimeError, match="cuda:3"):
        t.to("cuda:3")
    with pytest.raises(ValueError, match="invalid device"):
        t.to("cuda:x")
    assert "device='cuda:0'" in repr(d)


def test_numpy_of_a_device_tensor_says_to_call_cpu_and_items_copy_one_value():
    d = rg.tensor([1.5, 2.5], device="cuda")
    with pytest.raises(TypeError, match=r"\.cpu\(\)"):
        d.numpy()
    with pytest.raises(TypeError, match=r"\.cpu\(\)"):
        np.asarray(d)
    assert d[1].item() == 2.5 and float(d[0]) == 1.5 and d.tolist() == [1.5, 2.5]
    assert int(rg.tensor(3, device="cuda")) == 3


def test_mixing_devices_names_both_and_the_op():
    a = rg.ones(3, device="cuda")
    b = rg.ones(3)
    for f, name in ((lambda: a + b, "add"), (lambda: b * a, "mul"),
                    (lambda: rg.maximum(a, b), "maximum"), (lambda: a @ b, "matmul"),
                    (lambda: rg.cat([a, b]), "cat")):
        with pytest.raises(RuntimeError, match=r"cuda:0.*cpu|cpu.*cuda:0") as e:
            f()
        assert f"'{name}'" in str(e.value)


def test_creation_functions_take_a_device():
    made = [rg.zeros(2, 3, device="cuda"), rg.ones(2, device="cuda"),
            rg.full((2,), 7.0, device="cuda"), rg.empty(2, device="cuda"),
            rg.arange(5, device="cuda"), rg.linspace(0, 1, 5, device="cuda"),
            rg.linspace(0, 10, 4, dtype=rg.int64, device="cuda"), rg.eye(3, device="cuda"),
            rg.rand(2, device="cuda"), rg.randn(2, device="cuda"),
            rg.randint(0, 5, (3,), device="cuda"), rg.randperm(4, device="cuda"),
            rg.tensor([1.0, 2.0], device="cuda")]
    base = rg.ones(2, 2, device="cuda")
    made += [rg.zeros_like(base), rg.ones_like(base), rg.full_like(base, 2.0),
             rg.empty_like(base), rg.rand_like(base), rg.randn_like(base),
             rg.randint_like(base, 4)]
    for t in made:
        assert isinstance(t.data, FakeArray) and t.device == "cuda:0"
    assert rg.zeros_like(base, device="cpu").device == "cpu"
    np.testing.assert_array_equal(rg.arange(5, device="cuda").cpu().numpy(), np.arange(5))
    np.testing.assert_array_equal(rg.eye(3, device="cuda").cpu().numpy(), np.eye(3))
    np.testing.assert_array_equal(
        rg.linspace(0, 10, 4, dtype=rg.int64, device="cuda").cpu().numpy(),
        rg.linspace(0, 10, 4, dtype=rg.int64).numpy())


def test_the_device_generator_is_seeded_by_manual_seed():
    rg.manual_seed(3)
    a = rg.randn(5, device="cuda").cpu().numpy()
    rg.manual_seed(3)
    b = rg.randn(5, device="cuda").cpu().numpy()
    rg.manual_seed(4)
    c = rg.randn(5, device="cuda").cpu().numpy()
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)
    rg.cuda.manual_seed(9)
    d = rg.rand(4, device="cuda").cpu().numpy()
    rg.cuda.manual_seed(9)
    np.testing.assert_array_equal(d, rg.rand(4, device="cuda").cpu().numpy())


def test_gradients_flow_back_across_a_transfer():
    x = rg.tensor([0.5, -1.0, 2.0], requires_grad=True)
    y = (x.to("cuda") * 3.0).tanh().sum()
    y.backward()
    assert x.grad.device == "cpu"
    np.testing.assert_allclose(x.grad.numpy(), 3 * (1 - np.tanh(3 * x.numpy()) ** 2),
                               rtol=1e-6)


def test_hooks_accumulation_retain_grad_and_anomaly_on_the_device():
    x = rg.tensor([1.0, 2.0], device="cuda", requires_grad=True)
    seen = []
    x.register_hook(lambda g: seen.append(g.device) or g * 2)
    h = x * x
    h.retain_grad()
    h.sum().backward()
    (x * 3.0).sum().backward()
    assert seen == ["cuda:0", "cuda:0"]
    np.testing.assert_allclose(x.grad.cpu().numpy(), [2 * 2 + 6, 2 * 4 + 6])
    assert h.grad.device == "cuda:0"
    with rg.autograd.detect_anomaly():
        z = rg.tensor([0.0], device="cuda", requires_grad=True)
        with pytest.raises(RuntimeError, match="nan|inf"):
            z.sqrt().log().sum().backward()


def test_in_place_ops_and_indexing_on_the_device():
    d = rg.zeros(4, device="cuda")
    d[1] = 5.0
    d[[2, 3]] = rg.tensor([1.0, 2.0])
    d += 1
    d.mul_(2.0)
    idx = rg.tensor([3, 0], device="cuda")
    np.testing.assert_array_equal(d[idx].cpu().numpy(), [6.0, 2.0])
    np.testing.assert_array_equal(d.cpu().numpy(), [2.0, 12.0, 4.0, 6.0])
    m = d > 3
    assert isinstance(d[m].data, FakeArray)


def test_func_transforms_on_the_device():
    x = rg.tensor([0.3, -0.2, 0.9], dtype=rg.float64)
    f = lambda t: (t.sin() * t).sum()  # noqa: E731
    g_host = rg.func.grad(f)(x).numpy()
    g_dev = rg.func.grad(f)(x.to("cuda"))
    assert g_dev.device == "cuda:0"
    np.testing.assert_allclose(g_dev.cpu().numpy(), g_host, rtol=1e-12)
    J = rg.func.jacrev(lambda t: t.exp() * t)(x.to("cuda"))
    np.testing.assert_allclose(J.cpu().numpy(), rg.func.jacrev(lambda t: t.exp() * t)(x).numpy(),
                               rtol=1e-12)
    H = rg.func.hessian(f)(x.to("cuda"))
    np.testing.assert_allclose(H.cpu().numpy(), rg.func.hessian(f)(x).numpy(), rtol=1e-12)


def test_cupy_is_not_imported_by_cpu_work():
    code = ("import sys, retrograd as rg; x = rg.randn(3, requires_grad=True); "
            "(x * x).sum().backward(); rg.cuda.manual_seed(0); "
            "assert 'cupy' not in sys.modules, 'cupy imported'")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_cuda_is_available_never_raises():
    code = ("import retrograd as rg; print(rg.cuda.is_available(), rg.cuda.device_count())")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True).stdout.split()
    assert out[0] in ("True", "False") and int(out[1]) >= 0
    if out[0] == "False":  # asking for the device then fails with a clear message
        r = subprocess.run([sys.executable, "-c", "import retrograd as rg; rg.zeros(2, "
                            "device='cuda')"], capture_output=True, text=True)
        assert r.returncode != 0 and "RuntimeError" in r.stderr and "CuPy" in r.stderr
