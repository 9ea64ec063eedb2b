"""`rg.utils`: PyTorch's `torch.utils` names that ordinary training code imports:
`rg.utils.data` (Dataset, DataLoader, samplers, default_collate) and
`rg.utils.checkpoint` (activation checkpointing), `rg.utils.hooks` (RemovableHandle)
and `rg.utils._pytree` (tree_flatten, tree_map, ...), `rg.utils.benchmark` (Timer),
`rg.utils.flop_counter` (FlopCounterMode), `rg.utils.dlpack` (to_dlpack, from_dlpack),
`rg.utils.deterministic` (fill_uninitialized_memory) and `rg.utils.weak` (weak
references by identity)."""

from . import _pytree, benchmark, checkpoint, data, deterministic, dlpack, flop_counter, hooks, weak

__all__ = ["benchmark", "checkpoint", "data", "deterministic", "dlpack", "flop_counter", "hooks",
           "weak", "_pytree"]
