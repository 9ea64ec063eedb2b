"""The "meta" device: shapes and dtypes without data, as far as retrograd supports it. The
model-ensembling recipe (`copy.deepcopy(model).to("meta")` run by functional_call on stacked
real parameters under vmap) matches torch; creation, `.to(dtype)`, repr and `to_empty` work;
anything needing values is refused with MetaDataError, never given made-up values."""

import copy

import numpy as np
import pytest
import torch

import retrograd as rg
from retrograd.meta import MetaDataError


def _ensemble(lib):
    rng = np.random.default_rng(0)

    class Net(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1, self.fc2 = lib.nn.Linear(4, 8), lib.nn.Linear(8, 3)

        def forward(self, x):
            return self.fc2(lib.nn.functional.relu(self.fc1(x)))

    models = [Net().double() for _ in range(3)]
    for m in models:
        for p in m.parameters():
            with lib.no_grad():
                p.copy_(lib.tensor(rng.standard_normal(tuple(p.shape))))
    params, buffers = lib.func.stack_module_state(models)
    base = copy.deepcopy(models[0]).to("meta")
    assert all(p.device.type == "meta" for p in base.parameters())

    def fmodel(params, buffers, x):
        return lib.func.functional_call(base, (params, buffers), (x,))

    x = lib.tensor(rng.standard_normal((5, 4)))
    return lib.func.vmap(fmodel, in_dims=(0, 0, None))(params, buffers, x).detach().numpy()


def test_model_ensembling_recipe_matches_torch():
    np.testing.assert_allclose(_ensemble(rg), _ensemble(torch), rtol=1e-12, atol=1e-14)


def test_meta_tensors_have_shape_dtype_device_and_no_values():
    for lib in (rg, torch):
        x = lib.empty(2, 3, device="meta")
        assert tuple(x.shape) == (2, 3) and str(x.device) == "meta" and x.device.type == "meta"
        assert str(x.to(lib.float64).dtype).endswith("float64")
        assert lib.zeros(4, device="meta").device.type == "meta"
    x = rg.empty(2, 3, device="meta")
    assert "device='meta'" in repr(x) and "size=(2, 3)" in repr(x)
    for bad in (lambda: x + 1, lambda: x.sum(), lambda: x.cpu(), lambda: x.numpy(),
                lambda: x.tolist(), lambda: x[0], lambda: rg.tensor([1.0]) * x):
        with pytest.raises((MetaDataError, RuntimeError, TypeError)):
            bad()


def test_layers_on_meta_and_to_empty():
    lin = rg.nn.Linear(3, 2, device="meta")
    t = torch.nn.Linear(3, 2, device="meta")
    assert lin.weight.device.type == t.weight.device.type == "meta"
    real = lin.to_empty(device="cpu")
    assert real.weight.device == "cpu" and real.weight.shape == (2, 3)
    with pytest.raises(MetaDataError):
        rg.nn.Linear(3, 2).to("meta")(rg.ones(1, 3).to("meta"))


def test_device_context_manager_cpu_only():
    with rg.device("cpu"):
        assert rg.ones(2).device == "cpu"
    with pytest.raises(RuntimeError, match="default"):
        with rg.device("meta"):
            pass
