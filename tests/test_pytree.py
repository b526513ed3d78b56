"""Pytrees: flatten, unflatten and map over nested containers, as JAX's tree_util."""

from __future__ import annotations

from collections import OrderedDict, namedtuple

import pytest

import pullback as pb

Point = namedtuple("Point", ["x", "y"])


@pytest.mark.parametrize("tree", [
    1.0, (), [], {}, None, (1,), [1, (2, 3)], {"b": 1, "a": [2, {"c": 3}]},
    Point(1, [2, 3]), OrderedDict([("z", 1), ("a", 2)]), ((None, 1), [None]),
])
def test_round_trip_keeps_types_and_order(tree):
    leaves, treedef = pb.tree_flatten(tree)
    back = pb.tree_unflatten(treedef, leaves)
    assert back == tree and type(back) is type(tree)
    assert treedef.num_leaves == len(leaves)
    assert pb.tree_structure(back) == treedef and hash(pb.tree_structure(back)) == hash(treedef)


def test_dicts_flatten_in_sorted_key_order_like_jax():
    assert pb.tree_leaves({"b": 2, "a": 1}) == [1, 2]
    assert pb.tree_structure({"b": 2, "a": 1}) == pb.tree_structure({"a": 0, "b": 0})
    assert pb.tree_structure([1, 2]) != pb.tree_structure((1, 2))


def test_tree_map_over_several_trees_and_mismatch():
    assert pb.tree_map(lambda a, b: a * b, {"w": [2, 3]}, {"w": [10, 10]}) == {"w": [20, 30]}
    with pytest.raises(ValueError, match="structures differ"):
        pb.tree_map(lambda a, b: a, [1, 2], [1, 2, 3])
    with pytest.raises(ValueError, match="has 2 leaves, got 3"):
        pb.tree_unflatten(pb.tree_structure([1, 2]), [1, 2, 3])


def test_is_leaf_and_registered_classes():
    assert pb.tree_leaves([[1, 2], [3]], is_leaf=lambda x: isinstance(x, list) and
                          len(x) == 1) == [1, 2, [3]]

    class Box:
        def __init__(self, v):
            self.v = v

    pb.register_pytree_node(Box, lambda b: ((b.v,), "box"), lambda aux, c: Box(*c))
    out = pb.tree_map(lambda v: v + 1, [Box(1), Box({"k": 2})])
    assert out[0].v == 2 and out[1].v == {"k": 3}
    with pytest.raises(ValueError, match="registered"):
        pb.register_pytree_node(Box, lambda b: ((), None), lambda aux, c: Box(0))


def test_deep_trees_do_not_recurse():
    tree = 0
    for _ in range(20_000):
        tree = [tree]
    leaves, treedef = pb.tree_flatten(tree)
    assert leaves == [0] and pb.tree_unflatten(treedef, [5])  # no RecursionError
