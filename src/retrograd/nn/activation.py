"""Activation modules: `ReLU`, `Tanh`, `Sigmoid`, `Softmax`, `LogSoftmax`."""

from __future__ import annotations

from .. import ops
from ..engine import apply1
from ..tensor import Tensor
from . import functional as F
from .module import Module

__all__ = ["ReLU", "Tanh", "Sigmoid", "Softmax", "LogSoftmax"]


class ReLU(Module):
    def forward(self, x):
        return apply1(ops.relu, x) if x.__class__ is Tensor else F.relu(x)


class Tanh(Module):
    def forward(self, x):
        return F.tanh(x)


class Sigmoid(Module):
    def forward(self, x):
        return F.sigmoid(x)


class Softmax(Module):
    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return F.softmax(x, self.dim)


class LogSoftmax(Softmax):
    def forward(self, x):
        return F.log_softmax(x, self.dim)
