"""`rg.utils`: PyTorch's `torch.utils` names that ordinary training code imports:
`rg.utils.data` (Dataset, DataLoader, samplers, default_collate) and
`rg.utils.checkpoint` (activation checkpointing), `rg.utils.hooks` (RemovableHandle)
and `rg.utils._pytree` (tree_flatten, tree_map, ...), `rg.utils.benchmark` (Timer) and
`rg.utils.flop_counter` (FlopCounterMode)."""

from . import _pytree, benchmark, checkpoint, data, flop_counter, hooks

__all__ = ["benchmark", "checkpoint", "data", "flop_counter", "hooks", "_pytree"]
