"""`rg.optim`: optimizers with PyTorch's maths, defaults and state layout, and
`rg.optim.lr_scheduler`.

    optimizer.py     Optimizer (parameter groups, state, state_dict), SGD, Adam, AdamW
    adaptive.py      RMSprop, Adagrad, Adamax, NAdam
    first_order.py   RAdam, Adadelta, Rprop, ASGD
    second_order.py  LBFGS (closure-based, optional strong-Wolfe line search)
    factored.py      Adafactor
    orthogonal.py    Muon (Newton-Schulz orthogonalised momentum, bfloat16 rounding as torch)
    sparse.py        SparseAdam (constructor and checks; dense gradients are refused)
    lr_scheduler.py  StepLR, MultiStepLR, ExponentialLR, CosineAnnealingLR, LinearLR,
                     OneCycleLR, LambdaLR, SequentialLR, ReduceLROnPlateau, ConstantLR,
                     MultiplicativeLR, PolynomialLR, CosineAnnealingWarmRestarts, CyclicLR,
                     ChainedScheduler
    swa_utils.py     AveragedModel (SWA / EMA weight averaging), update_bn, SWALR

torch's per-optimizer module names (`from torch.optim.adam import Adam`) are registered
as small modules holding that class and `Optimizer`.
"""

import sys as _sys
import types as _types

from . import lr_scheduler, swa_utils
from .adaptive import Adagrad, Adamax, NAdam, RMSprop
from .factored import Adafactor
from .first_order import ASGD, Adadelta, RAdam, Rprop
from .optimizer import SGD, Adam, AdamW, Optimizer, required
from .orthogonal import Muon
from .second_order import LBFGS
from .sparse import SparseAdam

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adamax", "NAdam",
           "RAdam", "Adadelta", "Rprop", "ASGD", "LBFGS", "Adafactor", "Muon", "SparseAdam",
           "lr_scheduler", "swa_utils"]


_SUBMODULES = {"sgd": "SGD", "adam": "Adam", "adamw": "AdamW", "rmsprop": "RMSprop",
               "adagrad": "Adagrad", "adamax": "Adamax", "nadam": "NAdam", "radam": "RAdam",
               "adadelta": "Adadelta", "rprop": "Rprop", "asgd": "ASGD", "lbfgs": "LBFGS",
               "sparse_adam": "SparseAdam"}


def _register_submodules() -> None:
    here = globals()
    for name, cls in _SUBMODULES.items():
        mod = _types.ModuleType(f"{__name__}.{name}")
        mod.__all__ = [cls]
        setattr(mod, cls, here[cls])
        mod.Optimizer = Optimizer
        _sys.modules[mod.__name__] = mod
        here[name] = mod


_register_submodules()
