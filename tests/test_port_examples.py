"""Patterns from pytorch/examples (mnist, dcgan, word_language_model, ...) that failed or
differed when the scripts were run with retrograd in place of torch; each is reproduced
here, small, and checked against PyTorch."""

import importlib
import inspect
import pkgutil

import numpy as np
import pytest
import torch
import torch.nn.modules as torch_modules

import retrograd as rg
import retrograd.nn as nn
import retrograd.nn.functional as F

RNG = np.random.default_rng(0)


def _load(mod, ref) -> None:
    """Copy `ref`'s parameters and buffers into `mod`."""
    mod.load_state_dict({k: v.detach().numpy() for k, v in ref.state_dict().items()})


def _close(got, want, tol=1e-5) -> None:
    np.testing.assert_allclose(got.detach().numpy() if hasattr(got, "detach") else got,
                               want.detach().numpy(), rtol=tol, atol=tol)


# ---------------------------------------------------------------- device selection

def test_accelerator_device_choice_like_torch():
    """`device = torch.accelerator.current_accelerator() if torch.accelerator.is_available()
    else torch.device("cpu")` (every example's start)."""
    assert rg.accelerator.is_available() == rg.cuda.is_available()
    if not rg.cuda.is_available() and not torch.accelerator.is_available():
        assert rg.accelerator.current_accelerator() is torch.accelerator.current_accelerator()
        assert rg.accelerator.device_count() == torch.accelerator.device_count()
        for fn, args in (("current_device_index", ()), ("set_device_index", (0,)),
                         ("synchronize", ())):
            with pytest.raises(RuntimeError) as want:
                getattr(torch.accelerator, fn)(*args)
            with pytest.raises(RuntimeError) as got:
                getattr(rg.accelerator, fn)(*args)
            assert str(got.value) == str(want.value)
    dev = rg.accelerator.current_accelerator() if rg.accelerator.is_available() \
        else rg.device("cpu")
    assert nn.Linear(2, 2).to(dev)(rg.ones(1, 2).to(dev)).shape == (1, 2)
    with rg.accelerator.device_index(None):
        pass


def test_backends_flags_like_torch():
    """`torch.backends.cudnn.benchmark = True` and `torch.backends.mps.is_available()`."""
    import retrograd.backends.cudnn as cudnn
    tc = torch.backends.cudnn
    assert (cudnn.enabled, cudnn.benchmark, cudnn.deterministic) == \
        (tc.enabled, tc.benchmark, tc.deterministic)
    if not torch.cuda.is_available():
        assert cudnn.is_available() == tc.is_available()
        assert cudnn.version() == tc.version()
        assert rg.backends.cuda.is_built() == torch.backends.cuda.is_built()
    assert rg.backends.mps.is_available() == torch.backends.mps.is_available()
    assert rg.backends.mps.is_built() == torch.backends.mps.is_built()
    old = cudnn.benchmark
    try:
        cudnn.benchmark = True
        assert rg.backends.cudnn.benchmark is True
    finally:
        cudnn.benchmark = old


# ---------------------------------------------------------------- module paths

def _torch_module_paths():
    """(submodule, class name) for every public class torch.nn.modules.<sub> defines that
    retrograd.nn has too."""
    out = []
    for info in pkgutil.iter_modules(torch_modules.__path__):
        if info.name.startswith("_"):
            continue
        m = importlib.import_module("torch.nn.modules." + info.name)
        for name, v in vars(m).items():
            if inspect.isclass(v) and v.__module__ == m.__name__ and not name.startswith("_") \
                    and hasattr(nn, name):
                out.append((info.name, name))
    return out


@pytest.mark.parametrize("sub,name", _torch_module_paths())
def test_nn_modules_paths(sub, name):
    """`torch.nn.modules.linear.Linear` and kin (word_language_model's safe_globals list)."""
    mod = importlib.import_module("retrograd.nn.modules." + sub)
    assert getattr(mod, name) is getattr(nn, name)


def test_nn_modules_private_bases_and_utils():
    from torch.nn.modules import utils as tu

    from retrograd.nn.modules import batchnorm, conv, dropout, linear, loss, pooling, utils
    assert isinstance(nn.MSELoss(), loss._Loss)
    assert isinstance(nn.CrossEntropyLoss(), loss._WeightedLoss)
    assert isinstance(nn.BatchNorm2d(3), batchnorm._BatchNorm)
    assert isinstance(nn.Conv2d(1, 1, 1), conv._ConvNd)
    assert isinstance(nn.ConvTranspose2d(1, 1, 1), conv._ConvTransposeNd)
    assert isinstance(nn.Dropout(), dropout._DropoutNd)
    assert isinstance(nn.MaxPool2d(2), pooling._MaxPoolNd)
    assert isinstance(nn.AvgPool2d(2), pooling._AvgPoolNd)
    q = linear.NonDynamicallyQuantizableLinear(3, 2)
    assert isinstance(q, nn.Linear) and q(rg.ones(1, 3)).shape == (1, 2)
    for x in (3, (1, 2), [4, 5, 6]):
        for n in ("_single", "_pair", "_triple", "_quadruple"):
            assert getattr(utils, n)(x) == getattr(tu, n)(x)
    assert utils._reverse_repeat_tuple((1, 2), 2) == tu._reverse_repeat_tuple((1, 2), 2)


def test_serialization_safe_globals_like_torch():
    """`with torch.serialization.safe_globals([...]): model = torch.load(f)`."""
    from retrograd import serialization as s
    before = s.get_safe_globals()
    with s.safe_globals([nn.Linear, F.relu]):
        assert s.get_safe_globals()[-2:] == [nn.Linear, F.relu]
    assert s.get_safe_globals() == before
    s.add_safe_globals([nn.Dropout])
    assert nn.Dropout in s.get_safe_globals()
    s.clear_safe_globals()
    assert s.get_safe_globals() == []
    for fn in ("safe_globals", "add_safe_globals", "get_safe_globals", "clear_safe_globals"):
        assert hasattr(torch.serialization, fn)


def test_onnx_importable_and_export_refuses():
    import retrograd.onnx as onnx
    assert onnx.is_in_onnx_export() == torch.onnx.is_in_onnx_export()
    with pytest.raises(NotImplementedError, match="ONNX"):
        onnx.export(nn.Linear(2, 2), (rg.ones(1, 2),), "/nonexistent/model.onnx")


# ---------------------------------------------------------------- nn.parallel (dcgan)

def test_data_parallel_runs_the_module_like_torch_on_cpu():
    t = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Tanh())
    r = nn.Sequential(nn.Linear(4, 3), nn.Tanh())
    _load(r, t)
    x = RNG.standard_normal((5, 4)).astype(np.float32)
    tp, rp = torch.nn.DataParallel(t), nn.DataParallel(r)
    assert list(rp.state_dict()) == list(tp.state_dict())
    _close(rp(rg.tensor(x)), tp(torch.tensor(x)))
    if not torch.cuda.is_available() and not rg.cuda.is_available():
        with pytest.raises(RuntimeError) as want:
            torch.nn.parallel.data_parallel(t, torch.tensor(x))
        with pytest.raises(RuntimeError) as got:
            nn.parallel.data_parallel(r, rg.tensor(x))
        assert str(got.value) == str(want.value)


# ---------------------------------------------------------------- in place after a layer

def _inplace_after(fn_rg, fn_t, *shapes, ints=None):
    xs = [RNG.standard_normal(s).astype(np.float32) for s in shapes]
    rs = [rg.tensor(x, requires_grad=True) for x in xs]
    ts = [torch.tensor(x, requires_grad=True) for x in xs]
    if ints is not None:
        rs.insert(0, rg.tensor(ints))
        ts.insert(0, torch.tensor(ints))
    yr, yt = fn_rg(*rs), fn_t(*ts)
    F.leaky_relu(yr, 0.2, inplace=True)
    torch.nn.functional.leaky_relu(yt, 0.2, inplace=True)
    _close(yr, yt)
    c = RNG.standard_normal(tuple(yt.shape)).astype(np.float32)
    (yr * rg.tensor(c)).sum().backward()
    (yt * torch.tensor(c)).sum().backward()
    for r, t in zip(rs, ts):
        if t.requires_grad:
            _close(r.grad, t.grad, 1e-4)


TF = torch.nn.functional


@pytest.mark.parametrize("case", [
    "conv1d", "conv2d", "conv2d_big", "conv3d", "pixel_shuffle", "pixel_unshuffle", "unfold",
    "group_norm", "embedding"])
def test_inplace_activation_after_layer_like_torch(case):
    """dcgan's `nn.Conv2d(..., bias=False), nn.LeakyReLU(0.2, inplace=True)`: the layer's
    result is a new tensor in PyTorch, so the in-place activation must work (and give
    PyTorch's gradients), not be refused as a write into a view."""
    if case == "conv1d":
        _inplace_after(lambda x, w: F.conv1d(x, w), lambda x, w: TF.conv1d(x, w),
                       (2, 3, 9), (4, 3, 3))
    elif case == "conv2d":
        _inplace_after(lambda x, w: F.conv2d(x, w, stride=2, padding=1),
                       lambda x, w: TF.conv2d(x, w, stride=2, padding=1), (2, 3, 8, 8),
                       (4, 3, 4, 4))
    elif case == "conv2d_big":  # the shifted-copies path for large unit-stride inputs
        _inplace_after(lambda x, w: F.conv2d(x, w, padding=1),
                       lambda x, w: TF.conv2d(x, w, padding=1), (2, 8, 48, 48), (4, 8, 3, 3))
    elif case == "conv3d":
        _inplace_after(lambda x, w: F.conv3d(x, w), lambda x, w: TF.conv3d(x, w),
                       (1, 2, 5, 5, 5), (3, 2, 2, 2, 2))
    elif case == "pixel_shuffle":
        _inplace_after(lambda x: F.pixel_shuffle(x, 2), lambda x: TF.pixel_shuffle(x, 2),
                       (2, 8, 3, 3))
    elif case == "pixel_unshuffle":
        _inplace_after(lambda x: F.pixel_unshuffle(x, 2), lambda x: TF.pixel_unshuffle(x, 2),
                       (2, 2, 4, 4))
    elif case == "unfold":
        _inplace_after(lambda x: F.unfold(x, 2), lambda x: TF.unfold(x, 2), (2, 3, 4, 4))
    elif case == "group_norm":
        _inplace_after(lambda x: F.group_norm(x, 2), lambda x: TF.group_norm(x, 2),
                       (2, 4, 3, 3))
    else:
        _inplace_after(lambda i, w: F.embedding(i, w), lambda i, w: TF.embedding(i, w),
                       (5, 3), ints=np.array([[0, 2, 4], [1, 1, 3]]))


def test_dcgan_discriminator_step_like_torch():
    """dcgan's discriminator (bias-free convolutions, in-place LeakyReLU, BatchNorm,
    Sigmoid, BCELoss) and one Adam step, from the same weights."""
    def build(m):
        return m.Sequential(
            m.Conv2d(3, 4, 4, 2, 1, bias=False), m.LeakyReLU(0.2, inplace=True),
            m.Conv2d(4, 8, 4, 2, 1, bias=False), m.BatchNorm2d(8),
            m.LeakyReLU(0.2, inplace=True), m.Conv2d(8, 1, 4, 1, 0, bias=False), m.Sigmoid())
    t, r = build(torch.nn), build(nn)
    _load(r, t)
    ot = torch.optim.Adam(t.parameters(), lr=2e-4, betas=(0.5, 0.999))
    orr = rg.optim.Adam(r.parameters(), lr=2e-4, betas=(0.5, 0.999))
    x = RNG.uniform(-1, 1, (4, 3, 16, 16)).astype(np.float32)
    lt = torch.nn.BCELoss()(t(torch.tensor(x)).view(-1, 1).squeeze(1), torch.full((4,), 1.0))
    lr_ = nn.BCELoss()(r(rg.tensor(x)).view(-1, 1).squeeze(1), rg.full((4,), 1.0))
    _close(lr_, lt)
    lt.backward()
    lr_.backward()
    ot.step()
    orr.step()
    for (_, pt), (_, pr) in zip(t.named_parameters(), r.named_parameters()):
        _close(pr.grad, pt.grad, 1e-4)
        _close(pr, pt, 1e-5)


# ---------------------------------------------------------------- regression, gat, gcn

@pytest.mark.parametrize("value", [1.5, -3, True])
@pytest.mark.parametrize("spec", ["", "+.2f", "8.3f", ".3e", "5"])
def test_format_of_a_0d_tensor_like_torch(value, spec):
    """regression's `'{:+.2f}'.format(w)` over a tensor's elements."""
    assert format(rg.tensor(value), spec) == format(torch.tensor(value), spec)


def test_format_of_a_tensor_with_a_spec_refuses_like_torch():
    with pytest.raises(TypeError):
        format(torch.tensor([1.0, 2.0]), ".2f")
    with pytest.raises(TypeError):
        format(rg.tensor([1.0, 2.0]), ".2f")


def test_tensor_sizes_constructor_like_torch():
    """gcn's `nn.Parameter(torch.Tensor(input_dim, output_dim))` (then an init)."""
    for dims in [(2, 3), (4, 1, 2)]:
        r, t = rg.Tensor(*dims), torch.Tensor(*dims)
        assert r.shape == tuple(t.shape) and r.dtype == rg.float32
    assert rg.Tensor().shape == tuple(torch.Tensor().shape)
    p = nn.Parameter(rg.Tensor(3, 2))
    nn.init.xavier_normal_(p)
    assert p.requires_grad and p.shape == (3, 2)
    with pytest.raises(TypeError):
        rg.Tensor(2, 3, -1)


@pytest.mark.parametrize("fn", ["zeros", "ones", "empty", "rand", "randn"])
def test_creation_size_keyword_like_torch(fn):
    """gat's `torch.empty(size=(in_features, n_hidden * n_heads))`."""
    for size in [(2, 3), [4], ()]:
        assert getattr(rg, fn)(size=size).shape == tuple(getattr(torch, fn)(size=size).shape)
    with pytest.raises(TypeError):
        getattr(torch, fn)(2, size=(2,))
    with pytest.raises(TypeError):
        getattr(rg, fn)(2, size=(2,))


def test_sparse_coo_tensor_dense_values_and_gradient_like_torch():
    idx = np.array([[0, 1, 1, 0], [2, 0, 0, 2]])
    v = RNG.standard_normal(4).astype(np.float32)
    vr, vt = rg.tensor(v, requires_grad=True), torch.tensor(v, requires_grad=True)
    sr, st = rg.sparse_coo_tensor(idx, vr, (2, 3)), torch.sparse_coo_tensor(idx, vt, (2, 3))
    _close(sr, st.to_dense())
    assert sr.dtype == rg.float32
    c = RNG.standard_normal((2, 3)).astype(np.float32)
    (sr * rg.tensor(c)).sum().backward()
    (st.to_dense() * torch.tensor(c)).sum().backward()
    _close(vr.grad, vt.grad)
    assert rg.sparse_coo_tensor(idx, [1.0, 2.0, 3.0, 4.0]).shape == \
        tuple(torch.sparse_coo_tensor(idx, [1.0, 2.0, 3.0, 4.0]).shape)
    ri = rg.sparse_coo_tensor(rg.tensor(idx), rg.ones(4), (2, 3), dtype=rg.int64)
    ti = torch.sparse_coo_tensor(torch.tensor(idx), torch.ones(4), (2, 3), dtype=torch.int64)
    assert ri.dtype == rg.int64
    np.testing.assert_array_equal(ri.numpy(), ti.to_dense().numpy())
    with pytest.raises(ValueError):
        rg.sparse_coo_tensor(idx, rg.ones(4), (1, 3))  # index 1 out of range
    with pytest.raises(ValueError):
        rg.sparse_coo_tensor(idx, rg.ones(3), (2, 3))  # 4 indices, 3 values


def test_gcn_normalised_adjacency_and_spmm_like_torch():
    """gcn's load_cora and GraphConv: eye + sparse adjacency, degree scaling with
    diag(...).to_sparse(), `torch.spmm(adj, x @ W)`, gradients to W."""
    edges = np.array([[0, 1], [1, 2], [3, 0], [2, 3], [1, 0]])
    n = 4
    w = RNG.standard_normal((3, 2)).astype(np.float32)
    x = RNG.standard_normal((n, 3)).astype(np.float32)
    out = {}
    for lib in (torch, rg):
        adj = lib.sparse_coo_tensor(edges.T, lib.ones(len(edges)), (n, n), dtype=lib.int64)
        adj = lib.eye(n) + adj
        deg = lib.sqrt(1 / lib.sum(adj, dim=1))
        deg = lib.diag(deg).to_sparse()
        adj = (deg @ adj @ deg).to_sparse()
        feats = lib.tensor(x).to_sparse()
        W = lib.tensor(w, requires_grad=True)
        y = lib.spmm(adj, lib.mm(feats, W))
        y.pow(2).sum().backward()
        out[lib] = (y, W.grad)
    _close(out[rg][0], out[torch][0])
    _close(out[rg][1], out[torch][1])


# ---------------------------------------------------------------- forward_forward, minGPT

def _positional_params(fn):
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return [p.name for p in inspect.signature(fn).parameters.values()
            if p.kind in kinds and p.name != "self"]


def _layers_with_device():
    out = []
    for name in nn.__all__:
        ours, theirs = getattr(nn, name), getattr(torch.nn, name, None)
        if inspect.isclass(ours) and inspect.isclass(theirs):
            try:
                params = inspect.signature(theirs.__init__).parameters
            except (TypeError, ValueError):
                continue
            if "device" in params:
                out.append(name)
    return out


@pytest.mark.parametrize("name", _layers_with_device())
def test_layer_constructors_take_device_like_torch(name):
    """minGPT's `nn.Linear(n, n, device=device, dtype=dtype)`; forward_forward's
    `super().__init__(in_features, out_features, bias, device, dtype)`: `device` sits
    where PyTorch puts it."""
    ours, theirs = getattr(nn, name), getattr(torch.nn, name)
    assert "device" in inspect.signature(ours.__init__).parameters
    pt = _positional_params(theirs.__init__)
    if not any(p.kind == p.VAR_POSITIONAL for p in inspect.signature(theirs.__init__).parameters
               .values()):
        assert _positional_params(ours.__init__)[:len(pt)] == pt


def test_layers_built_with_device_and_dtype_positionally_like_torch():
    t = torch.nn.Linear(4, 3, True, "cpu", torch.float64)
    r = nn.Linear(4, 3, True, "cpu", rg.float64)
    assert r.weight.dtype == rg.float64 and str(r.weight.device) == "cpu"
    _load(r, t)
    x = RNG.standard_normal((2, 4))
    _close(r(rg.tensor(x)), t(torch.tensor(x)))
    for build in (lambda m, **k: m.Conv2d(1, 2, 3, **k), lambda m, **k: m.LSTM(3, 4, **k),
                  lambda m, **k: m.MultiheadAttention(4, 2, **k),
                  lambda m, **k: m.Embedding(5, 2, **k), lambda m, **k: m.LayerNorm(3, **k),
                  lambda m, **k: m.TransformerEncoderLayer(4, 2, 8, **k),
                  lambda m, **k: m.BatchNorm2d(3, **k), lambda m, **k: m.GRUCell(2, 3, **k)):
        tm = build(torch.nn, device="cpu", dtype=torch.float64)
        rm = build(nn, device="cpu", dtype=rg.float64)
        assert list(rm.state_dict()) == list(tm.state_dict())
        assert all(p.dtype == rg.float64 for p in rm.parameters())


def test_lazy_layers_still_build_after_the_device_argument():
    """The lazy layers pass dtype on to the eager ones: by keyword now."""
    assert nn.LazyLinear(3)(rg.ones(2, 5)).shape == (2, 3)
    assert nn.LazyConv2d(2, 3)(rg.ones(1, 1, 5, 5)).shape == (1, 2, 3, 3)
    assert nn.LazyInstanceNorm2d()(rg.ones(1, 3, 4, 4)).shape == (1, 3, 4, 4)
    assert nn.InstanceNorm2d(3, affine=True).weight.shape == (3,)
    assert nn.RNNCell(2, 3)(rg.ones(1, 2)).shape == (1, 3)


def test_randint_high_with_size_keyword_like_torch():
    """forward_forward's `torch.randint(len(allowed_indices), size=(1,))`."""
    for args, kw in [((10,), {"size": (3,)}), ((3, 5), {"size": (2,)}), ((4, (2,)), {}),
                     ((), {"high": 4, "size": (2,)})]:
        r, t = rg.randint(*args, **kw), torch.randint(*args, **kw)
        assert r.shape == tuple(t.shape) and r.dtype == rg.int64
    drawn = rg.randint(3, 5, size=(50,)).numpy()
    assert ((drawn >= 3) & (drawn < 5)).all()
    for args, kw in [((), {"size": (2,)}), ((3,), {})]:
        with pytest.raises(TypeError):
            torch.randint(*args, **kw)
        with pytest.raises(TypeError):
            rg.randint(*args, **kw)


def test_type_as_a_tensors_data_array():
    """language_translation's `torch.ones(1, 1).type_as(src.data)`: retrograd's `.data` is
    the array, so type_as takes it as the tensor it belongs to."""
    src_r, src_t = rg.tensor([[3, 4]]), torch.tensor([[3, 4]])
    r = rg.ones(1, 1).type_as(src_r.data).fill_(7)
    t = torch.ones(1, 1).type_as(src_t.data).fill_(7)
    assert r.dtype == rg.int64 and t.dtype == torch.int64
    np.testing.assert_array_equal(r.numpy(), t.numpy())
    with pytest.raises(TypeError):
        rg.ones(1).type_as([1, 2])


def test_printed_models_like_torch():
    """dcgan prints its networks; word_language_model's transformer holds attention whose
    output projection PyTorch names NonDynamicallyQuantizableLinear."""
    def dcgan_g(m):
        return m.Sequential(m.ConvTranspose2d(16, 32, 4, 1, 0, bias=False), m.BatchNorm2d(32),
                            m.ReLU(True), m.ConvTranspose2d(32, 3, 4, 2, 1, bias=False),
                            m.Tanh())

    def dcgan_d(m):
        return m.Sequential(m.Conv2d(3, 8, 4, 2, 1, bias=False), m.LeakyReLU(0.2, inplace=True),
                            m.Conv2d(8, 1, 4, 1, 0, bias=False), m.Sigmoid())

    def attention(m):
        return m.ModuleList([m.MultiheadAttention(4, 2), m.TransformerEncoderLayer(4, 2, 8)])

    for build in (dcgan_g, dcgan_d, attention):
        assert repr(build(nn)) == repr(build(torch.nn))
