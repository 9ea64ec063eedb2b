"""`rg.utils`: PyTorch's `torch.utils` names that ordinary training code imports:
`rg.utils.data` (Dataset, DataLoader, samplers, default_collate) and
`rg.utils.checkpoint` (activation checkpointing)."""

from . import checkpoint, data

__all__ = ["checkpoint", "data"]
