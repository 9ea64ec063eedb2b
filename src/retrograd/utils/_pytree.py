"""`rg.utils._pytree`: nested containers flattened to their leaves and rebuilt, with
`torch.utils._pytree`'s names (`tree_flatten`, `tree_unflatten`, `tree_map`, ...).

Library code written for PyTorch maps functions over nested arguments with these.
The containers are tuples, lists, dicts (keys kept in insertion order), OrderedDicts,
defaultdicts, namedtuples and the types given to `register_pytree_node`; anything else,
None included, is a leaf (as in torch.utils._pytree).
"""

from __future__ import annotations

from collections import OrderedDict, defaultdict
from collections.abc import Callable
from typing import Any

__all__ = ["TreeSpec", "LeafSpec", "tree_flatten", "tree_unflatten", "tree_leaves",
           "tree_structure", "tree_map", "tree_map_only", "tree_all", "tree_any",
           "register_pytree_node", "tree_is_leaf", "tree_iter", "tree_map_",
           "tree_map_only_", "tree_all_only", "tree_any_only"]

_NODES: dict[type, tuple[Callable, Callable]] = {}  # type -> (flatten_fn, unflatten_fn)


def register_pytree_node(cls: type, flatten_fn: Callable, unflatten_fn: Callable, *,
                         serialized_type_name: str | None = None,
                         to_dumpable_context=None, from_dumpable_context=None,
                         flatten_with_keys_fn=None) -> None:
    """Make instances of `cls` containers: `flatten_fn(node) -> (children, context)` and
    `unflatten_fn(children, context) -> node`, as torch's."""
    if cls in _NODES or cls in (tuple, list, dict, OrderedDict, defaultdict):
        raise ValueError(f"{cls} is already registered as pytree node.")
    _NODES[cls] = (flatten_fn, unflatten_fn)


_register_pytree_node = register_pytree_node  # (the older, private spelling)


def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


class TreeSpec:
    """The shape of a tree without its leaves: the node type, its context (dict keys,
    a namedtuple's class) and the children's specs."""

    def __init__(self, type: Any, context: Any, children_specs: list) -> None:  # noqa: A002
        self.type = type
        self.context = context
        self.children_specs = children_specs
        self.num_leaves = sum(c.num_leaves for c in children_specs)
        self.num_nodes = 1 + sum(c.num_nodes for c in children_specs)
        self.num_children = len(children_specs)

    def is_leaf(self) -> bool:
        return False

    def unflatten(self, leaves) -> Any:
        """The tree of this shape holding `leaves` in order."""
        return tree_unflatten(leaves, self)

    def _build(self, it):
        kids = [c._build(it) for c in self.children_specs]
        t = self.type
        if t is dict or t is OrderedDict:
            return t(zip(self.context, kids))
        if t is defaultdict:
            factory, keys = self.context
            return defaultdict(factory, zip(keys, kids))
        if t is list:
            return kids
        if t is tuple:
            return tuple(kids)
        if t in _NODES:
            return _NODES[t][1](kids, self.context)
        return t(*kids)  # a namedtuple

    def __eq__(self, other) -> bool:
        return (isinstance(other, TreeSpec) and self.type is other.type
                and self.context == other.context
                and self.children_specs == other.children_specs)

    def __repr__(self) -> str:
        name = getattr(self.type, "__name__", repr(self.type))
        return f"TreeSpec({name}, {self.context!r}, {self.children_specs!r})"


class LeafSpec(TreeSpec):
    """The spec of one leaf."""

    def __init__(self) -> None:
        super().__init__(None, None, [])
        self.num_leaves, self.num_nodes = 1, 1

    def is_leaf(self) -> bool:
        return True

    def _build(self, it):
        return next(it)

    def __eq__(self, other) -> bool:
        return isinstance(other, LeafSpec)

    def __repr__(self) -> str:
        return "*"


def _children(node) -> tuple[Any, Any, list] | None:
    """(type, context, children) of a container node, or None for a leaf."""
    custom = _NODES.get(type(node))
    if custom is not None:
        kids, context = custom[0](node)
        return type(node), context, list(kids)
    if isinstance(node, defaultdict):
        return defaultdict, [node.default_factory, list(node)], list(node.values())
    if isinstance(node, OrderedDict):
        return OrderedDict, list(node), list(node.values())
    if type(node) is dict:
        return dict, list(node), list(node.values())
    if _is_namedtuple(node):
        return type(node), None, list(node)
    if type(node) in (tuple, list):
        return type(node), None, list(node)
    return None


def _spec(node, leaves: list) -> TreeSpec:
    parts = _children(node)
    if parts is None:
        leaves.append(node)
        return LeafSpec()
    t, context, kids = parts
    return TreeSpec(t, context, [_spec(k, leaves) for k in kids])


def tree_flatten(tree) -> tuple[list, TreeSpec]:
    """(the leaves in order, the tree's spec)."""
    leaves: list = []
    return leaves, _spec(tree, leaves)


def tree_unflatten(leaves, treespec: TreeSpec) -> Any:
    """The tree of `treespec`'s shape holding `leaves`; their number must match."""
    if not isinstance(treespec, TreeSpec):
        raise TypeError(f"tree_unflatten(leaves, treespec): expected a TreeSpec, got "
                        f"{type(treespec).__name__}")
    leaves = list(leaves)
    if len(leaves) != treespec.num_leaves:
        raise ValueError(f"treespec.unflatten(leaves): `leaves` has length {len(leaves)} but "
                         f"the spec refers to a pytree that holds {treespec.num_leaves} items")
    return treespec._build(iter(leaves))


def tree_leaves(tree) -> list:
    """The leaves in order."""
    return tree_flatten(tree)[0]


def tree_structure(tree) -> TreeSpec:
    """The tree's spec."""
    return tree_flatten(tree)[1]


def tree_map(func: Callable, tree, *rests) -> Any:
    """The same tree with `func(leaf, *matching leaves of rests)` at every leaf; the other
    trees must have the same structure."""
    leaves, spec = tree_flatten(tree)
    others = []
    for r in rests:
        rl, rs = tree_flatten(r)
        if rs != spec:
            raise ValueError(f"tree_map: the trees have different structures: {spec} and {rs}")
        others.append(rl)
    return tree_unflatten([func(*xs) for xs in zip(leaves, *others)], spec)


def tree_map_only(type_or_types, func: Callable, tree) -> Any:
    """`tree_map` applying `func` only to leaves of the given type(s); others unchanged."""
    return tree_map(lambda x: func(x) if isinstance(x, type_or_types) else x, tree)


def tree_all(pred: Callable, tree) -> bool:
    """Whether `pred` holds for every leaf."""
    return all(pred(x) for x in tree_leaves(tree))


def tree_any(pred: Callable, tree) -> bool:
    """Whether `pred` holds for some leaf."""
    return any(pred(x) for x in tree_leaves(tree))


def tree_is_leaf(tree) -> bool:
    """Whether `tree` is a leaf (not a container this module knows)."""
    return _children(tree) is None


def tree_iter(tree):
    """The leaves, one at a time."""
    return iter(tree_leaves(tree))


def tree_map_(func: Callable, tree, *rests) -> Any:
    """Call `func` on every leaf (with the matching leaves of `rests`) for its effect;
    returns `tree` itself."""
    tree_map(func, tree, *rests)
    return tree


def tree_map_only_(type_or_types, func: Callable, tree) -> Any:
    """`tree_map_` on the leaves of the given type(s) only."""
    for x in tree_leaves(tree):
        if isinstance(x, type_or_types):
            func(x)
    return tree


def tree_all_only(type_or_types, pred: Callable, tree) -> bool:
    """Whether `pred` holds for every leaf of the given type(s)."""
    return all(pred(x) for x in tree_leaves(tree) if isinstance(x, type_or_types))


def tree_any_only(type_or_types, pred: Callable, tree) -> bool:
    """Whether `pred` holds for some leaf of the given type(s)."""
    return any(pred(x) for x in tree_leaves(tree) if isinstance(x, type_or_types))
