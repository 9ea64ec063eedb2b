"""rg.fx.wrap (torch.fx's leaf marker, called at import by model code) and the refusal of
FX graphs."""

import pytest
import torch

import retrograd as rg


def _leaf(x):
    return x + 1


WRAPPED = (rg.fx.wrap(_leaf), torch.fx.wrap(_leaf), rg.fx.wrap("_leaf"))  # module level


def test_wrap_returns_its_argument_like_torch():
    assert WRAPPED[0] is _leaf and WRAPPED[1] is _leaf and WRAPPED[2] == "_leaf"


def test_wrap_inside_a_function_is_refused_like_torch():
    with pytest.raises(NotImplementedError, match="top level"):
        torch.fx.wrap(_leaf)
    with pytest.raises(NotImplementedError, match="top level"):
        rg.fx.wrap(_leaf)


def test_symbolic_trace_is_refused_naming_jit():
    with pytest.raises(NotImplementedError, match="rg.jit"):
        rg.fx.symbolic_trace(rg.nn.Linear(2, 2))
