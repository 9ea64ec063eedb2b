"""`nn.modules`: PyTorch's module paths (`torch.nn.modules.loss._Loss`, ...), so code that
imports layers or their bases from there runs; every class is retrograd.nn's own."""

from . import (  # noqa: F401
    activation,
    adaptive,
    batchnorm,
    channelshuffle,
    container,
    conv,
    distance,
    dropout,
    flatten,
    fold,
    instancenorm,
    lazy,
    linear,
    loss,
    module,
    normalization,
    padding,
    pixelshuffle,
    pooling,
    rnn,
    sparse,
    transformer,
    upsampling,
    utils,
)
from .linear import NonDynamicallyQuantizableLinear  # noqa: F401
