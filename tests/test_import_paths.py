"""PyTorch's import spellings that ported code uses, each importing retrograd's
counterpart: `torch.cpu` (and `torch.cpu.amp`), `torch.types`, `torch.nn.common_types`,
`torch.autograd.gradcheck` as a module, `torch.GradScaler`, the per-optimizer modules
(`torch.optim.adam`), `torch.autograd.variable` and `torch.functional`."""

import importlib
import warnings

import pytest
import torch
import torch.cpu
import torch.nn.common_types

import retrograd as rg

IMPORTS = [
    ("autograd.gradcheck", "gradcheck"), ("autograd.gradcheck", "gradgradcheck"),
    ("cpu.amp", "autocast"), ("cpu.amp", "GradScaler"), ("types", "Number"),
    ("types", "Device"), ("nn.common_types", "_size_2_t"), ("nn.common_types", "_ratio_any_t"),
    ("nn.parameter", "Parameter"), ("optim.optimizer", "Optimizer"),
    ("utils.data.dataloader", "default_collate"), ("autograd.function", "once_differentiable"),
    ("autograd.variable", "Variable"), ("functional", "einsum"),
]

# torch.optim's per-optimizer modules, each with its class
OPTIM_MODULES = {"sgd": "SGD", "adam": "Adam", "adamw": "AdamW", "rmsprop": "RMSprop",
                 "adagrad": "Adagrad", "adamax": "Adamax", "nadam": "NAdam", "radam": "RAdam",
                 "adadelta": "Adadelta", "rprop": "Rprop", "asgd": "ASGD", "lbfgs": "LBFGS",
                 "sparse_adam": "SparseAdam"}


@pytest.mark.parametrize("module", sorted(OPTIM_MODULES))
def test_optim_submodule_holds_its_optimizer(module):
    cls = OPTIM_MODULES[module]
    assert getattr(importlib.import_module("torch.optim." + module), cls) is \
        getattr(torch.optim, cls)
    mod = importlib.import_module("retrograd.optim." + module)
    assert getattr(mod, cls) is getattr(rg.optim, cls)
    assert getattr(rg.optim, module) is mod
    assert mod.Optimizer is rg.optim.Optimizer


def test_functional_holds_torch_functional_names():
    import torch.functional
    for name in torch.functional.__all__:
        assert getattr(rg.functional, name) is getattr(rg, name), name
    a, b = rg.tensor([[1.0, 2.0]]), rg.tensor([[3.0], [4.0]])
    assert float(rg.functional.einsum("ij,jk->ik", a, b)) == 11.0


@pytest.mark.parametrize(("module", "name"), IMPORTS)
def test_torch_import_spelling_imports(module, name):
    getattr(importlib.import_module("torch." + module), name)  # the spelling is torch's
    assert getattr(importlib.import_module("retrograd." + module), name) is not None


def test_autograd_gradcheck_stays_the_function():
    from retrograd.autograd.gradcheck import gradcheck
    assert rg.autograd.gradcheck is gradcheck is rg.gradcheck
    x = rg.tensor([0.3, -1.2], dtype=rg.float64, requires_grad=True)
    assert gradcheck(lambda t: (t * t).sin(), (x,))


def test_common_types_names_match_torch():
    def aliases(m):
        return {n for n in dir(m) if n.startswith(("_size", "_ratio"))}
    want, got = aliases(torch.nn.common_types), aliases(rg.nn.common_types)
    assert got == want


def test_cpu_device_queries_match_torch():
    for name in ("is_available", "device_count", "current_device", "is_initialized"):
        assert getattr(rg.cpu, name)() == getattr(torch.cpu, name)(), name
    rg.cpu.synchronize()
    rg.cpu.set_device("cpu")
    with rg.cpu.stream(rg.cpu.current_stream()):
        assert rg.cpu.Event().query() and rg.cpu.current_stream().query()


def test_cpu_grad_scaler_state_matches_torch():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        want = torch.cpu.amp.GradScaler(init_scale=128.0, growth_interval=7)
    got = rg.cpu.amp.GradScaler(init_scale=128.0, growth_interval=7)
    assert got.state_dict() == want.state_dict()
    assert got.is_enabled() == want.is_enabled()
    assert rg.GradScaler is rg.amp.GradScaler


def test_cpu_autocast_disabled_is_silent_and_enabled_warns_and_disables():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with rg.cpu.amp.autocast(enabled=False):
            y = rg.ones(2, dtype=rg.float32) * 2
    assert y.dtype == rg.float32
    with pytest.warns(UserWarning, match="Disabling autocast"):
        ctx = rg.cpu.amp.autocast()
    with ctx:
        y = rg.ones(2, dtype=rg.float32) @ rg.ones(2, dtype=rg.float32)
    assert y.dtype == rg.float32 and not rg.is_autocast_enabled()


def test_compiler_names_leave_functions_unchanged():
    def f(x):
        return x * 2
    for name in ("is_compiling", "is_dynamo_compiling", "is_exporting"):
        assert getattr(rg.compiler, name)() is getattr(torch.compiler, name)() is False
    assert rg.compiler.disable(f) is f and rg.compiler.disable()(f) is f
    assert rg.compiler.disable(f, recursive=False) is f
    assert rg.compiler.allow_in_graph(f) is f and rg.compiler.assume_constant_result(f) is f
    assert rg.compiler.compile(f) is f
    with rg.compiler.set_stance("force_eager"):
        assert rg.compiler.set_stance("default")(f) is f
    rg.compiler.reset()
    rg.compiler.cudagraph_mark_step_begin()


def test_functionalize_keeps_results_and_input_mutations():
    def f(x):
        y = x * 2
        y.add_(1)
        x.mul_(3)
        return y

    xs = rg.tensor([1.0, -2.0])
    tx = torch.tensor([1.0, -2.0])
    got, want = rg.func.functionalize(f)(xs), torch.func.functionalize(f)(tx)
    assert got.tolist() == want.tolist() and xs.tolist() == tx.tolist()
    x = rg.tensor([0.5, 2.0], dtype=rg.float64)
    g = rg.func.grad(lambda t: rg.func.functionalize(f)(t.clone()).sum())(x)
    assert g.tolist() == [2.0, 2.0]
    with pytest.raises(RuntimeError, match="remove"):
        rg.func.functionalize(f, remove="views")


def test_torch_jit_eager_names_return_their_argument():
    class Net(rg.nn.Module):
        scale: rg.jit.Final[float]

        def __init__(self):
            super().__init__()
            self.scale = 2.0
            self.lin = rg.nn.Linear(3, 2)

        def forward(self, x):
            return self.lin(x) * self.scale

    rg.manual_seed(0)
    net = Net()
    x = rg.randn(4, 3)
    for made in (rg.jit.script(net), rg.jit.trace(net, (x,)), rg.jit.freeze(net),
                 rg.jit.optimize_for_inference(net), rg.jit.trace_module(net, {"forward": x})):
        assert made is net
    assert rg.jit.wait(rg.jit.fork(net, x)).tolist() == net(x).tolist()
    for name in ("save", "load"):
        with pytest.raises(NotImplementedError, match="TorchScript"):
            getattr(rg.jit, name)(net if name == "save" else "m.pt", "m.pt") if name == "save" \
                else rg.jit.load("m.pt")
    with pytest.raises(TypeError, match="callable"):
        rg.jit.trace(3, ())


@pytest.mark.parametrize("make", [lambda lib: lib.nn.Linear(3, 2), lambda lib: lib.nn.ReLU(),
                                  lambda lib: lib.nn.LayerNorm(3), lambda lib: lib.nn.Identity(),
                                  lambda lib: lib.nn.Sequential(lib.nn.Linear(3, 3))])
def test_layers_take_their_input_by_torchs_keyword(make):
    import numpy as np
    x = np.random.default_rng(0).standard_normal((2, 3))
    ours, ref = make(rg).double(), make(torch).double()
    ref.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()})
    got, want = ours(input=rg.tensor(x)), ref(input=torch.tensor(x))
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-12)


def test_user_module_keeps_pythons_keyword_rules():
    class M(rg.nn.Module):
        def forward(self, x):
            return x

    with pytest.raises(TypeError, match="input"):
        M()(input=rg.ones(1))
