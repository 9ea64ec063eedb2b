"""PyTorch's `torch.nn.modules.channelshuffle` path: its layers, re-exported from retrograd.nn."""

from ..shuffle import (  # noqa: F401
    ChannelShuffle,
)

__all__ = [
    "ChannelShuffle",
]
