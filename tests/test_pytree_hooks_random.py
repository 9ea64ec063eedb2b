"""rg.utils._pytree and rg.utils.hooks against torch's, and the rg.random module."""

from collections import OrderedDict, defaultdict, namedtuple

import numpy as np
import pytest
import torch
import torch.utils._pytree as tpt
from torch.utils.hooks import RemovableHandle as TorchHandle

import retrograd as rg
from retrograd.utils import _pytree as pt
from retrograd.utils.hooks import RemovableHandle

P = namedtuple("P", "a b")
TREES = [
    {"x": [1, (2, 3)], "y": None, "z": P(4, {"k": 5}), "o": OrderedDict(q=6)},
    [1, [2, [3, [4]]]], (), 7, None, defaultdict(list, a=1, b=[2, 3]), [{}, [], ()],
]


@pytest.mark.parametrize("tree", TREES)
def test_flatten_unflatten_map_like_torch(tree):
    leaves, spec = pt.tree_flatten(tree)
    tleaves, tspec = tpt.tree_flatten(tree)
    assert leaves == tleaves and spec.num_leaves == tspec.num_leaves
    assert pt.tree_leaves(tree) == tpt.tree_leaves(tree)
    scaled = [v * 10 if isinstance(v, int) else v for v in leaves]
    assert pt.tree_unflatten(scaled, spec) == tpt.tree_unflatten(scaled, tspec)
    assert spec.unflatten(leaves) == tree
    f = lambda v: -v if isinstance(v, int) else v  # noqa: E731
    assert pt.tree_map(f, tree) == tpt.tree_map(f, tree)
    assert pt.tree_map_only(int, lambda v: v + 1, tree) == tpt.tree_map_only(
        int, lambda v: v + 1, tree)
    assert pt.tree_structure(tree) == spec
    pred = lambda v: v is None or isinstance(v, int)  # noqa: E731
    assert pt.tree_all(pred, tree) == tpt.tree_all(pred, tree)
    assert pt.tree_any(lambda v: v == 3, tree) == tpt.tree_any(lambda v: v == 3, tree)


def test_map_over_several_trees_and_errors():
    a, b = {"p": [1, 2], "q": 3}, {"p": [10, 20], "q": 30}
    assert pt.tree_map(lambda x, y: x + y, a, b) == tpt.tree_map(lambda x, y: x + y, a, b)
    with pytest.raises(ValueError):
        pt.tree_map(lambda x, y: x, a, {"p": [1], "q": 3})
    leaves, spec = pt.tree_flatten(a)
    with pytest.raises(ValueError):
        pt.tree_unflatten(leaves[:-1], spec)
    t = {"w": rg.ones(2), "b": [rg.zeros(3)]}
    doubled = pt.tree_map(lambda v: v * 2, t)
    assert doubled["w"].tolist() == [2.0, 2.0] and doubled["b"][0].shape == (3,)


def test_removable_handle_like_torch():
    for Handle in (RemovableHandle, TorchHandle):
        hooks = OrderedDict()
        h1, h2 = Handle(hooks), Handle(hooks)
        assert h1.id != h2.id
        hooks[h1.id], hooks[h2.id] = "a", "b"
        h1.remove()
        h1.remove()
        assert list(hooks.values()) == ["b"]
        with h2:
            pass
        assert not hooks
    extra, hooks = OrderedDict(), OrderedDict()
    h = RemovableHandle(hooks, extra_dict=extra)
    hooks[h.id] = extra[h.id] = 1
    h.remove()
    assert not hooks and not extra


def test_random_module_like_torch_random():
    for name in ("manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state",
                 "fork_rng", "Generator", "default_generator"):
        assert hasattr(rg.random, name) and hasattr(torch.random, name), name
    rg.random.manual_seed(4)
    assert rg.random.initial_seed() == 4
    before = rg.rand(3)
    rg.random.manual_seed(4)
    with rg.random.fork_rng():
        rg.rand(5)  # draws inside do not move the stream outside
    np.testing.assert_array_equal(rg.rand(3).data, before.data)
    rg.random.manual_seed(4)
    with rg.random.fork_rng(enabled=False):
        rg.rand(5)
    assert not np.array_equal(rg.rand(3).data, before.data)
