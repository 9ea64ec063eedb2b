"""`rg.functional`: the names `torch.functional` holds (code imports them from there as
well as from the top level); the same functions as `rg.<name>`."""

from __future__ import annotations

from .api.indexing import meshgrid
from .api.linalg import einsum
from .api.matrices import block_diag, cartesian_prod
from .api.norms import cdist, norm
from .api.numpy_style import atleast_1d, atleast_2d, atleast_3d
from .api.sets import unique, unique_consecutive
from .api.shape import split
from .api.spectral import istft, stft
from .api.torch_misc import unravel_index
from .api.torch_names import broadcast_shapes, broadcast_tensors
from .linalg import tensordot
from .linalg_aliases import chain_matmul, lu, pca_lowrank, svd_lowrank

__all__ = ["atleast_1d", "atleast_2d", "atleast_3d", "broadcast_shapes", "broadcast_tensors",
           "cartesian_prod", "block_diag", "cdist", "chain_matmul", "einsum", "istft", "lu",
           "norm", "meshgrid", "pca_lowrank", "split", "stft", "svd_lowrank", "tensordot",
           "unique", "unique_consecutive", "unravel_index"]
