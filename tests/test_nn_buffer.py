"""`nn.Buffer` and the `nn.parameter` path, side by side with torch."""

import numpy as np
import torch

import retrograd as rg
import retrograd.nn.parameter as rg_parameter
from retrograd import nn


def _build(lib, mod):
    class M(mod.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = mod.nn.Linear(2, 2)
            self.kept = mod.nn.Buffer(mod.ones(2))
            self.scratch = mod.nn.Buffer(mod.zeros(3), persistent=False)

    return M()


def test_assigning_a_buffer_registers_it_as_torch_does():
    m, t = _build("rg", rg), _build("torch", torch)
    assert sorted(m.state_dict()) == sorted(t.state_dict())
    assert [n for n, _ in m.named_buffers()] == [n for n, _ in t.named_buffers()]
    assert type(m.kept) is rg.Tensor and type(t.kept) is torch.Tensor  # a plain tensor kept
    assert not m.kept.requires_grad and not t.kept.requires_grad
    m.kept = rg.zeros(2)
    t.kept = torch.zeros(2)
    for (n1, b1), (n2, b2) in zip(m.named_buffers(), t.named_buffers()):
        assert n1 == n2
        np.testing.assert_array_equal(b1.numpy(), b2.numpy())


def test_buffer_shares_its_tensor_and_defaults_to_persistent():
    x = rg.ones(3)
    b = nn.Buffer(x)
    assert b.persistent is True and nn.Buffer(x, persistent=False).persistent is False
    x.data[0] = 5.0
    assert b.data[0] == 5.0
    assert nn.Buffer().shape == torch.nn.Buffer().shape == (0,)


def test_the_parameter_module_path_exists_as_in_torch():
    for name in ("Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer"):
        assert hasattr(torch.nn.parameter, name) and hasattr(rg_parameter, name)
    assert rg_parameter.Parameter is nn.Parameter and rg_parameter.Buffer is nn.Buffer
