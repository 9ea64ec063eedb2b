"""rg.utils._pytree.register_pytree_node and the helpers beside it, against
torch.utils._pytree: a registered class is a container for flatten/unflatten/map, inside
dicts and lists too; double registration raises as torch's."""

import dataclasses

import pytest
import torch.utils._pytree as TP

import retrograd as rg
import retrograd.utils._pytree as RP


@dataclasses.dataclass
class Point:
    x: object
    y: object
    tag: str = "p"


def _register(mod):
    mod.register_pytree_node(
        Point, lambda p: ([p.x, p.y], p.tag), lambda kids, tag: Point(kids[0], kids[1], tag))


_register(TP)
_register(RP)


def test_registered_class_flattens_maps_and_rebuilds_as_torch():
    tree = {"a": Point(1, [2, 3], "q"), "b": (Point(4, 5), 6)}
    want_leaves, want_spec = TP.tree_flatten(tree)
    got_leaves, got_spec = RP.tree_flatten(tree)
    assert got_leaves == want_leaves == [1, 2, 3, 4, 5, 6]
    assert RP.tree_unflatten(got_leaves, got_spec) == TP.tree_unflatten(want_leaves, want_spec)
    assert RP.tree_map(lambda v: v * 10, tree) == TP.tree_map(lambda v: v * 10, tree)
    assert RP.tree_is_leaf(Point(1, 2)) is TP.tree_is_leaf(Point(1, 2)) is False
    assert RP.tree_is_leaf(3) is TP.tree_is_leaf(3) is True
    assert list(RP.tree_iter(tree)) == list(TP.tree_iter(tree))


def test_in_place_maps_and_typed_predicates():
    ts = {"w": rg.zeros(2), "n": 3, "p": Point(rg.zeros(1), "s")}
    assert RP.tree_map_only_(rg.Tensor, lambda t: t.add_(1.0), ts) is ts
    assert ts["w"].tolist() == [1.0, 1.0] and ts["p"].x.tolist() == [1.0]
    assert RP.tree_all_only(rg.Tensor, lambda t: bool((t == 1).all()), ts)
    assert not RP.tree_any_only(int, lambda v: v > 5, ts)
    seen = []
    assert RP.tree_map_(seen.append, [1, (2, 3)]) == [1, (2, 3)] and seen == [1, 2, 3]


def test_registering_twice_raises_as_torch():
    with pytest.raises(ValueError, match="already registered"):
        _register(TP)
    with pytest.raises(ValueError, match="already registered"):
        _register(RP)
