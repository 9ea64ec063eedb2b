"""`rg.nn.utils`: gradient clipping (`clip_grad_norm_`, `clip_grad_value_`, in
`clip_grad`) and `rg.nn.utils.rnn`, variable-length sequences (`PackedSequence`,
`pack_padded_sequence`, ...). Also, in modules of their own: `parameters_to_vector`/
`vector_to_parameters`, the BatchNorm fusions, `skip_init`, `parametrize` and
`parametrizations`, the old `weight_norm`/`spectral_norm` hooks,
`stateless.functional_call`, and `convert_conv2d_weight_memory_format` (a no-op: one
memory format here).
"""

from __future__ import annotations

from . import (
    clip_grad,
    convert_parameters,
    fusion,
    init,
    parametrizations,
    parametrize,
    prune,
    rnn,
    stateless,
)
from .clip_grad import (
    clip_grad_norm,
    clip_grad_norm_,
    clip_grad_value_,
    clip_grads_with_norm_,
    get_total_norm,
)
from .convert_parameters import parameters_to_vector, vector_to_parameters
from .fusion import (
    fuse_conv_bn_eval,
    fuse_conv_bn_weights,
    fuse_linear_bn_eval,
    fuse_linear_bn_weights,
)
from .init import skip_init
from .spectral_norm import remove_spectral_norm, spectral_norm
from .weight_norm import remove_weight_norm, weight_norm

__all__ = ["clip_grad_norm_", "clip_grad_value_", "get_total_norm", "clip_grads_with_norm_",
           "rnn", "clip_grad_norm", "parameters_to_vector", "vector_to_parameters",
           "fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval",
           "fuse_linear_bn_weights", "skip_init", "weight_norm", "remove_weight_norm",
           "spectral_norm", "remove_spectral_norm", "convert_parameters", "fusion", "init",
           "parametrize", "parametrizations", "stateless", "clip_grad",
           "convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"]


def convert_conv2d_weight_memory_format(module, memory_format):
    """`module` unchanged: retrograd has one memory format (see `rg.layouts`), so there
    is nothing to convert. Like `torch.nn.utils.convert_conv2d_weight_memory_format`."""
    from ...layouts import check_keywords
    check_keywords("convert_conv2d_weight_memory_format", memory_format_=memory_format)
    return module


def convert_conv3d_weight_memory_format(module, memory_format):
    """`module` unchanged (see `convert_conv2d_weight_memory_format`)."""
    from ...layouts import check_keywords
    check_keywords("convert_conv3d_weight_memory_format", memory_format_=memory_format)
    return module
