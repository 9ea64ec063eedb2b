"""`rg.random`: the global random stream's controls under `torch.random`'s names:
`manual_seed`, `seed`, `initial_seed`, `get_rng_state`, `set_rng_state`, `fork_rng`,
`Generator` and `default_generator`."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from .api.rng import get_rng_state, initial_seed, seed, set_rng_state
from .creation import default_generator, manual_seed
from .generator import Generator

__all__ = ["manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state",
           "fork_rng", "Generator", "default_generator"]


@contextlib.contextmanager
def fork_rng(devices=None, enabled: bool = True, _caller: str = "fork_rng",
             _devices_kw: str = "devices", device_type: str | None = None) -> Iterator[None]:
    """Draws inside the block leave the global host stream where it was: its state is
    saved on entry and restored on exit (unless `enabled` is False). Like
    `torch.random.fork_rng`; device streams are left alone, as `devices=[]` does."""
    if not enabled:
        yield
        return
    saved = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(saved)
