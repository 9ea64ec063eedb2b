"""`rg.nn`: modules with PyTorch's habits.

This file only re-exports; each kind of module lives in the file named for it:

    module.py      Module (registration, traversal, modes, state_dict) and Parameter
    containers.py  Sequential, ModuleList
    linear.py      Linear, Identity
    conv.py        Conv2d
    pooling.py     MaxPool2d, AvgPool2d
    flatten.py     Flatten
    dropout.py     Dropout
    activation.py  ReLU, Tanh, Sigmoid, Softmax, LogSoftmax
    loss.py        MSELoss, CrossEntropyLoss, NLLLoss, BCEWithLogitsLoss
    functional.py  the functions the modules call (`rg.nn.functional`, `F`)
    init.py        weight initialisation (`rg.nn.init`)

A new layer goes in the file of its kind (or a new file named for it) and its
name is added here.
"""

from . import functional, init
from .activation import LogSoftmax, ReLU, Sigmoid, Softmax, Tanh
from .containers import ModuleList, Sequential
from .conv import Conv2d
from .dropout import Dropout
from .flatten import Flatten
from .linear import Identity, Linear
from .loss import BCEWithLogitsLoss, CrossEntropyLoss, MSELoss, NLLLoss
from .module import Module, Parameter
from .pooling import AvgPool2d, MaxPool2d

__all__ = [
    "Parameter", "Module", "Sequential", "ModuleList", "Identity", "Linear", "Conv2d",
    "MaxPool2d", "AvgPool2d", "Flatten", "Dropout", "ReLU", "Tanh", "Sigmoid", "Softmax",
    "LogSoftmax", "MSELoss", "CrossEntropyLoss", "NLLLoss", "BCEWithLogitsLoss", "functional",
    "init",
]
