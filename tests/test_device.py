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


def test_a_host_scalar_tensor_meets_a_device_tensor_as_in_pytorch():
    s = rg.tensor(2.0, requires_grad=True)
    d = rg.tensor([1.0, 3.0], device="cuda", requires_grad=True)
    out = (d * s + s).sum()
    assert out.device == "cuda:0"
    out.backward()
    assert s.grad.device == "cpu" and float(s.grad) == 6.0
    assert d.grad.device == "cuda:0"


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


# ---------------------------------------------------------------- nn, training, jit

def _same_module(make, x, dtype=np.float64):
    """A layer's output and parameter gradients on the host and on the device."""
    rg.manual_seed(0)
    host = make().to(dtype)
    rg.manual_seed(0)
    dev = make().to(dtype).to("cuda")
    for p in dev.parameters():
        assert isinstance(p.data, FakeArray) and p.is_leaf
    xh = rg.tensor(x, dtype=dtype)
    outs = []
    for m, xi in ((host, xh), (dev, xh.to("cuda"))):
        out = m(xi)
        (out * out).sum().backward()
        outs.append((out, [p.grad for p in m.parameters()]))
    (oh, gh), (od, gd) = outs
    assert od.device == "cuda:0"
    np.testing.assert_allclose(_host(od), _host(oh), rtol=1e-10, atol=1e-12)
    for a, b in zip(gh, gd):
        assert b.device == "cuda:0"
        np.testing.assert_allclose(_host(b), _host(a), rtol=1e-10, atol=1e-12)


NN_CASES = {
    "linear": (lambda: rg.nn.Linear(5, 3), (4, 5)),
    "conv2d": (lambda: rg.nn.Conv2d(2, 3, 3, padding=1), (2, 2, 6, 6)),
    "conv_stride": (lambda: rg.nn.Conv2d(2, 3, 3, stride=2), (1, 2, 7, 7)),
    "maxpool": (lambda: rg.nn.Sequential(rg.nn.Conv2d(1, 2, 3), rg.nn.MaxPool2d(2)),
                (2, 1, 6, 6)),
    "layernorm": (lambda: rg.nn.LayerNorm(6), (3, 6)),
    "batchnorm": (lambda: rg.nn.BatchNorm1d(4), (5, 4)),
    "embedding_mlp": (lambda: rg.nn.Sequential(rg.nn.Linear(4, 8), rg.nn.GELU(),
                                               rg.nn.Linear(8, 2), rg.nn.Tanh()), (3, 4)),
    "lstm": (lambda: _First(rg.nn.LSTM(3, 4, batch_first=True)), (2, 5, 3)),
    "attention": (lambda: rg.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0,
                                                        batch_first=True), (2, 3, 8)),
}


class _First(rg.nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, x):
        return self.inner(x)[0]


@pytest.mark.parametrize("case", sorted(NN_CASES))
def test_nn_layers_on_the_device_equal_the_host(case):
    make, shape = NN_CASES[case]
    x = np.random.default_rng(1).standard_normal(shape)
    _same_module(make, x)


def test_module_to_moves_buffers_and_state_dicts_round_trip(tmp_path):
    bn = rg.nn.BatchNorm1d(3).to("cuda")
    assert bn.running_mean.device == "cuda:0"
    bn(rg.randn(4, 3, device="cuda"))
    assert isinstance(bn.running_mean.data, FakeArray)
    rg.save(bn.state_dict(), tmp_path / "bn.ckpt")
    back = rg.load(tmp_path / "bn.ckpt")
    assert back["running_mean"].device == "cpu"
    np.testing.assert_array_equal(back["running_mean"].numpy(), bn.running_mean.cpu().numpy())
    on_dev = rg.load(tmp_path / "bn.ckpt", map_location="cuda")
    assert on_dev["running_var"].device == "cuda:0"
    fresh = rg.nn.BatchNorm1d(3).cuda()
    fresh.load_state_dict(back)
    assert fresh.running_mean.device == "cuda:0"
    np.testing.assert_array_equal(fresh.running_mean.cpu().numpy(), back["running_mean"].numpy())
    assert bn.cpu().running_mean.device == "cpu"


def _digits_step_losses(model_name, device, steps=3, jit=False):
    from retrograd.cli.digits import build_model

    rng = np.random.default_rng(0)
    X = rng.random((16, 64)).astype(np.float32)
    if model_name == "cnn":
        X = X.reshape(16, 1, 8, 8)
    y = rng.integers(0, 10, 16)
    rg.manual_seed(0)
    model = build_model(model_name).to(device)
    opt = rg.optim.Adam(model.parameters(), lr=1e-2)
    xb = rg.tensor(X, device=device)
    yb = rg.tensor(y, device=device)

    def step(xb, yb):
        loss = rg.nn.functional.cross_entropy(model(xb), yb, label_smoothing=0.1)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    run = rg.jit(step) if jit else step
    losses = [run(xb, yb) for _ in range(steps)]
    for p in model.parameters():
        assert p.device == device
        for v in opt.state.get(p, {}).values():
            if isinstance(v, rg.Tensor) and v.ndim:
                assert v.device == device, "optimizer state off the parameter's device"
    return [float(v.item()) for v in losses], [_host(p).copy() for p in model.parameters()]


@pytest.mark.parametrize("model_name", ["mlp", "cnn"])
def test_a_training_step_on_the_device_equals_the_host(model_name):
    lh, ph = _digits_step_losses(model_name, "cpu")
    ld, pd = _digits_step_losses(model_name, "cuda:0")
    np.testing.assert_allclose(ld, lh, rtol=1e-5)
    for a, b in zip(ph, pd):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("model_name", ["mlp", "cnn"])
def test_a_jitted_step_on_the_device_equals_eager(model_name):
    le, pe = _digits_step_losses(model_name, "cuda:0", steps=4)
    lj, pj = _digits_step_losses(model_name, "cuda:0", steps=4, jit=True)
    np.testing.assert_allclose(lj, le, rtol=1e-5)
    for a, b in zip(pe, pj):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-6)


def test_dropout_draws_on_the_device():
    x = rg.ones(1000, device="cuda")
    rg.manual_seed(1)
    y = rg.nn.functional.dropout(x, 0.5, training=True)
    assert isinstance(y.data, FakeArray)
    assert 300 < int((y > 0).sum().item()) < 700


@pytest.mark.parametrize("model_name", ["mlp", "cnn"])
def test_retrograd_train_on_the_device(tmp_path, capsys, model_name):
    import json

    from retrograd.cli import main

    runs = {}
    for device in ("cpu", "cuda"):
        out = tmp_path / device
        assert main(["train", "--model", model_name, "--epochs", "1", "--batch-size", "128",
                     "--device", device, "--out", str(out)]) == 0
        runs[device] = json.loads((out / "metrics.json").read_text())
    dev, host = runs["cuda"], runs["cpu"]
    assert dev["checkpoint_test_accuracy"] == dev["test_accuracy"]
    assert dev["test_accuracy"] == pytest.approx(host["test_accuracy"], abs=0.02)
    np.testing.assert_allclose(dev["history"][-1]["train_loss"],
                               host["history"][-1]["train_loss"], rtol=1e-3)
    assert "test accuracy" in capsys.readouterr().out


def test_retrograd_train_device_flag_errors(tmp_path, capsys):
    from retrograd.cli import main

    assert main(["train", "--device", "tpu", "--out", str(tmp_path / "x")]) == 2
    fake_device.uninstall()  # no GPU now: asking for cuda is a usage error
    assert main(["train", "--device", "cuda", "--out", str(tmp_path / "y")]) == 2
    err = capsys.readouterr().err
    assert "tpu" in err and "cuda is not available" in err


@pytest.mark.parametrize("model_name", ["bigram", "mlp", "rnn", "gru", "transformer"])
def test_retrograd_train_names_on_the_device(tmp_path, capsys, model_name):
    """The names task follows --device like digits: the same losses as on the host."""
    import json

    from retrograd.cli import main

    data = tmp_path / "names.txt"
    data.write_text("\n".join(["anna", "emma", "olivia", "ava", "isabella", "sophia", "mia",
                               "amelia", "harper", "evelyn", "abigail", "emily"] * 5) + "\n")
    runs = {}
    for device in ("cpu", "cuda"):
        out = tmp_path / device
        assert main(["train", "--task", "names", "--model", model_name, "--steps", "6",
                     "--batch-size", "8", "--data", str(data), "--device", device,
                     "--out", str(out)]) == 0
        runs[device] = json.loads((out / "metrics.json").read_text())
    np.testing.assert_allclose(runs["cuda"]["test_loss"], runs["cpu"]["test_loss"], rtol=1e-4)
    np.testing.assert_allclose(runs["cuda"]["history"][-1]["train_loss"],
                               runs["cpu"]["history"][-1]["train_loss"], rtol=1e-4)
    capsys.readouterr()
