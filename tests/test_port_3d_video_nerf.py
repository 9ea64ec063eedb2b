"""3-D, video and neural rendering written in plain PyTorch (C3D/R(2+1)D-style video
nets, a 3-D UNet with Dice loss and sliding-window inference, NeRF volume rendering and
hierarchical sampling, a multiresolution hash encoding, point-cloud voxelisation, an SDF
with an eikonal term, camera math, 5-D grid_sample), run on torch and on retrograd from
the same inputs and weights and compared in float64."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from port_compare import close, close_grads

import retrograd as rg


def _copy_weights(tm, rm) -> None:
    """Load the torch module's state into the retrograd one."""
    rm.load_state_dict({k: rg.tensor(v.detach().numpy().copy()) for k, v in tm.state_dict().items()})


# --------------------------------------------------------------- max_unpool index errors

@pytest.mark.parametrize("nd", [2, 3])
def test_max_unpool_out_of_range_index_is_runtime_error(nd):
    """MaxUnpool with an output size too small for the pooled indices (a 7-wide input
    pooled by 2 and unpooled to 6): torch raises RuntimeError ('Found an invalid max
    index'), so code catching RuntimeError must catch it here too."""
    x = np.random.default_rng(0).standard_normal((1, 2) + (7,) * nd)
    for T in (torch, rg):
        pool = getattr(T.nn.functional, f"max_pool{nd}d")
        unpool = getattr(T.nn.functional, f"max_unpool{nd}d")
        p, i = pool(T.tensor(x), 2, return_indices=True)
        i = i.clone()
        i.view(-1)[0] = 7 ** nd - 1  # the last input position lies past a 6-wide output
        with pytest.raises(RuntimeError):
            unpool(p, i, 2)
