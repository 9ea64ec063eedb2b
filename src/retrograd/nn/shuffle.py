"""`ChannelShuffle`: the channels of (N, C, *), in `groups` groups, interleaved (as in
ShuffleNet), a thin call into `F.channel_shuffle`."""

from __future__ import annotations

from . import functional as F
from .module import Module

__all__ = ["ChannelShuffle"]


class ChannelShuffle(Module):
    """Interleave the `groups` groups of channels of (N, C, *). Like
    `torch.nn.ChannelShuffle`."""

    def __init__(self, groups: int) -> None:
        super().__init__()
        self.groups = groups

    def forward(self, input):
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"
