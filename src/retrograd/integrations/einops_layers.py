"""einops' layers as `rg.nn` modules: `Rearrange`, `Reduce` and `EinMix`, the
counterparts of `einops.layers.torch`'s, built on einops' own framework-neutral layer
mixins (`einops.layers.RearrangeMixin`, `ReduceMixin`, `_EinmixMixin`), which apply
einops' recipes through the backend of `retrograd.integrations.einops` (registered when
`import retrograd` has run, as it has before this module). Importing this module
imports einops.

    from retrograd.integrations.einops_layers import Rearrange, Reduce, EinMix
    head = rg.nn.Sequential(Reduce("b c h w -> b c", "mean"), rg.nn.Linear(c, k))
"""

from __future__ import annotations

from einops.layers import RearrangeMixin, ReduceMixin
from einops.layers._einmix import _EinmixMixin

from ..api.linalg import einsum
from ..creation import empty
from ..nn.module import Module, Parameter

__all__ = ["EinMix", "Rearrange", "Reduce"]


class Rearrange(RearrangeMixin, Module):
    """`einops.rearrange(input, pattern, **axes_lengths)` as a module."""

    def forward(self, input):
        return self._apply_recipe(input)


class Reduce(ReduceMixin, Module):
    """`einops.reduce(input, pattern, reduction, **axes_lengths)` as a module."""

    def forward(self, input):
        return self._apply_recipe(input)


class EinMix(_EinmixMixin, Module):
    """einsum of the input with a learned weight (and an optional bias added), with
    einops rearranges before and after: einops' `EinMix`. The weight and bias start
    uniform in +-sqrt(3 / fan_in) and +-sqrt(1 / fan_in)."""

    def _create_parameters(self, weight_shape, weight_bound, bias_shape, bias_bound):
        self.weight = Parameter(empty(weight_shape).uniform_(-weight_bound, weight_bound))
        self.bias = (None if bias_shape is None
                     else Parameter(empty(bias_shape).uniform_(-bias_bound, bias_bound)))

    def _create_rearrange_layers(self, pre_reshape_pattern, pre_reshape_lengths,
                                 post_reshape_pattern, post_reshape_lengths):
        self.pre_rearrange = (None if pre_reshape_pattern is None
                              else Rearrange(pre_reshape_pattern, **(pre_reshape_lengths or {})))
        self.post_rearrange = (None if post_reshape_pattern is None
                               else Rearrange(post_reshape_pattern, **(post_reshape_lengths or {})))

    def forward(self, input):
        if self.pre_rearrange is not None:
            input = self.pre_rearrange(input)
        out = einsum(self.einsum_pattern, input, self.weight)
        if self.bias is not None:
            out = out + self.bias
        if self.post_rearrange is not None:
            out = self.post_rearrange(out)
        return out
