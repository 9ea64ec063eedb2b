"""dtype edge cases found different from torch by a differential fuzzer: complex to bool,
uint8 all/any, isin across int and float, div_ with rounding_mode, integer **= with
negative exponents, negative Python ints into unsigned tensors, reductions over a
non-empty dim of an empty tensor. Each is run under torch and retrograd."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import retrograd as rg

CASES = {
    "complex to bool": lambda L: L.tensor([1j, 0j, 1e-30j, 2 + 0j]).bool(),
    "complex .to(bool)": lambda L: L.tensor([1j, 0j]).to(L.bool),
    "uint8 all": lambda L: L.tensor([1, 2], dtype=L.uint8).all(),
    "uint8 any dim": lambda L: L.tensor([[1, 0], [0, 0]], dtype=L.uint8).any(dim=1),
    "isin int in float": lambda L: L.isin(L.tensor([16777217, 3]), L.tensor([16777216.0])),
    "isin float in int": lambda L: L.isin(L.tensor([2.5, 3.0]), L.tensor([3])),
    "div_ floor": lambda L: L.tensor([7, -7]).div_(2, rounding_mode="floor"),
    "div_ trunc float": lambda L: L.tensor([7.0, -7.0]).div_(2, rounding_mode="trunc"),
    "ipow int tensor": lambda L: _ipow(L),
    "uint8 from -1": lambda L: L.tensor([255, -1], dtype=L.uint8),
    "full uint8 -1": lambda L: L.full((2,), -1, dtype=L.uint8),
    "fill_ uint8 -255": lambda L: L.zeros(2, dtype=L.uint8).fill_(-255),
    "max over a non-empty dim of an empty tensor": lambda L: L.zeros(2, 0).max(0)[1],
    "amin over a non-empty dim": lambda L: L.zeros(3, 0, 2).amin(2),
    "where uint8 with -1": lambda L: L.where(L.tensor([True, False]),
                                             L.zeros(2, dtype=L.uint8), -1),
    "float16 fill_ inf": lambda L: L.zeros(2, dtype=L.float16).fill_(float("inf")),
}


def _ipow(L):
    x = L.tensor([2, 3, 1, -1])
    x **= L.tensor([-1, 2, -3, -3])
    return x


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_torch(name):
    t, r = CASES[name](torch), CASES[name](rg)
    assert str(r.dtype) == str(t.dtype).replace("torch.", "")
    assert tuple(r.shape) == tuple(t.shape)
    np.testing.assert_array_equal(r.numpy(), t.numpy())


OVERFLOWS = {
    "uint8 from -256": lambda L: L.tensor([-256], dtype=L.uint8),
    "int8 from 200": lambda L: L.tensor([200], dtype=L.int8),
    "full uint8 300": lambda L: L.full((2,), 300, dtype=L.uint8),
    "fill_ uint8 -256": lambda L: L.zeros(2, dtype=L.uint8).fill_(-256),
    "where int8 with 300": lambda L: L.where(L.tensor([True, False]), L.zeros(2, dtype=L.int8),
                                             300),
    "int8 ** 300": lambda L: L.tensor([1, 2], dtype=L.int8) ** 300,
    "int8.pow(300)": lambda L: L.tensor([1, 2], dtype=L.int8).pow(300),
    "float16 fill_ 1e5": lambda L: L.zeros(2, dtype=L.float16).fill_(1e5),
    "float16 full 1e5": lambda L: L.full((2,), 1e5, dtype=L.float16),
}


@pytest.mark.parametrize("name", sorted(OVERFLOWS))
def test_out_of_range_ints_are_refused_as_torch_refuses_them(name):
    with pytest.raises(RuntimeError, match="without overflow"):
        OVERFLOWS[name](torch)
    with pytest.raises(RuntimeError, match="without overflow"):
        OVERFLOWS[name](rg)
