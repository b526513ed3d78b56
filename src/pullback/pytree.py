"""Pytrees: nested tuples, lists, dicts, namedtuples (and registered classes) of leaves.

The transforms take and return them as JAX does: arguments, outputs, gradients and
cotangents keep the structure and the container types the user passed.

>>> import pullback as pb
>>> leaves, treedef = pb.tree_flatten({"w": [1.0, 2.0], "b": (3.0, None)})
>>> leaves
[3.0, 1.0, 2.0]
>>> treedef
PyTreeDef({'b': (*, None), 'w': [*, *]})
>>> pb.tree_unflatten(treedef, [x * 10 for x in leaves])
{'b': (30.0, None), 'w': [10.0, 20.0]}
>>> pb.tree_map(lambda a, b: a + b, (1, [2]), (10, [20]))
(11, [22])

Dicts are flattened in sorted key order and rebuilt in that order, as JAX does, so two
dicts with the same keys have the same structure whatever order they were built in.
``None`` is an empty container, not a leaf. Walks are iterative: depth is unbounded.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Callable, Iterable, NamedTuple


class _Kind(NamedTuple):
    """How a container type flattens: ``flatten(x) -> (children, aux)`` and
    ``unflatten(aux, children) -> x``; ``aux`` must be hashable."""

    flatten: Callable
    unflatten: Callable


_KINDS: dict[type, _Kind] = {}


def register_pytree_node(cls: type, flatten: Callable, unflatten: Callable) -> None:
    """Let instances of ``cls`` be containers: ``flatten(x) -> (children, aux)``,
    ``unflatten(aux, children) -> x`` (``aux``: hashable data kept in the structure).

    >>> class Pair:
    ...     def __init__(self, a, b): self.a, self.b = a, b
    >>> register_pytree_node(Pair, lambda p: ((p.a, p.b), None), lambda _, c: Pair(*c))
    >>> tree_leaves(Pair(1, [2, 3]))
    [1, 2, 3]
    """
    if cls in _KINDS:
        raise ValueError(f"{cls.__name__} is registered as a pytree node already")
    _KINDS[cls] = _Kind(flatten, unflatten)


def _dict_flatten(d: dict) -> tuple:
    keys = sorted(d)
    return [d[k] for k in keys], tuple(keys)


register_pytree_node(tuple, lambda t: (t, None), lambda _, c: tuple(c))
register_pytree_node(list, lambda x: (x, None), lambda _, c: list(c))
register_pytree_node(dict, _dict_flatten, lambda keys, c: dict(zip(keys, c)))
register_pytree_node(OrderedDict, lambda d: (list(d.values()), tuple(d)),
                     lambda keys, c: OrderedDict(zip(keys, c)))
register_pytree_node(type(None), lambda _: ((), None), lambda _, c: None)


def _kind_of(x: Any) -> tuple[type, _Kind] | None:
    cls = type(x)
    kind = _KINDS.get(cls)
    if kind is not None:
        return cls, kind
    if issubclass(cls, tuple) and hasattr(cls, "_fields"):  # a namedtuple
        return cls, _Kind(lambda t: (tuple(t), None), lambda _, c, cls=cls: cls(*c))
    return None


class PyTreeDef:
    """The structure of a pytree: hashable and comparable (usable in cache keys)."""

    __slots__ = ("node", "aux", "children", "num_leaves", "_key")

    def __init__(self, node: type | None, aux: Any, children: tuple) -> None:
        self.node = node  # None for a leaf
        self.aux = aux
        self.children = children
        self.num_leaves = 1 if node is None else sum(c.num_leaves for c in children)
        self._key = (node, aux, tuple(c._key for c in children))

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, PyTreeDef) and self._key == other._key

    def __hash__(self) -> int:
        return hash(self._key)

    def __repr__(self) -> str:
        return f"PyTreeDef({_show(self)})"


def _show(d: PyTreeDef) -> str:
    if d.node is None:
        return "*"
    inner = [_show(c) for c in d.children]
    if d.node is type(None):
        return "None"
    if d.node in (dict, OrderedDict):
        return "{" + ", ".join(f"{k!r}: {v}" for k, v in zip(d.aux, inner)) + "}"
    if d.node is list:
        return "[" + ", ".join(inner) + "]"
    if d.node is tuple:
        return "(" + ", ".join(inner) + ("," if len(inner) == 1 else "") + ")"
    return f"{d.node.__name__}(" + ", ".join(inner) + ")"


def tree_flatten(tree: Any, is_leaf: Callable | None = None) -> tuple[list, PyTreeDef]:
    """The leaves of ``tree`` in order, and its structure."""
    leaves: list = []
    # post-order construction of the structure, iteratively: (value, done?) entries
    stack: list = [(tree, False)]
    built: list = []
    while stack:
        x, done = stack.pop()
        if done:
            cls, aux, n = x
            children = tuple(built[len(built) - n:]) if n else ()
            del built[len(built) - n:]
            built.append(PyTreeDef(cls, aux, children))
            continue
        found = None if is_leaf is not None and is_leaf(x) else _kind_of(x)
        if found is None:
            leaves.append(x)
            built.append(PyTreeDef(None, None, ()))
            continue
        cls, kind = found
        children, aux = kind.flatten(x)
        children = list(children)
        stack.append(((cls, aux, len(children)), True))
        stack.extend((c, False) for c in reversed(children))
    return leaves, built[0]


def tree_unflatten(treedef: PyTreeDef, leaves: Iterable) -> Any:
    """The pytree of structure ``treedef`` holding ``leaves`` in order."""
    leaves = list(leaves)
    if len(leaves) != treedef.num_leaves:
        raise ValueError(f"tree_unflatten: the structure has {treedef.num_leaves} leaves, "
                         f"got {len(leaves)}")
    it = iter(leaves)
    stack: list = [(treedef, False)]
    out: list = []
    while stack:
        d, done = stack.pop()
        if d.node is None:
            out.append(next(it))
        elif done:
            n = len(d.children)
            children = out[len(out) - n:] if n else []
            del out[len(out) - n:]
            out.append(_rebuild(d, children))
        else:
            stack.append((d, True))
            stack.extend((c, False) for c in reversed(d.children))
    return out[0]


def _rebuild(d: PyTreeDef, children: list) -> Any:
    kind = _KINDS.get(d.node)
    if kind is None:  # a namedtuple
        return d.node(*children)
    return kind.unflatten(d.aux, children)


def tree_leaves(tree: Any, is_leaf: Callable | None = None) -> list:
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree: Any, is_leaf: Callable | None = None) -> PyTreeDef:
    return tree_flatten(tree, is_leaf)[1]


def tree_map(f: Callable, tree: Any, *rest: Any, is_leaf: Callable | None = None) -> Any:
    """``f`` applied leaf by leaf; ``rest`` must have ``tree``'s structure."""
    leaves, treedef = tree_flatten(tree, is_leaf)
    others = []
    for r in rest:
        r_leaves, r_def = tree_flatten(r, is_leaf)
        if r_def != treedef:
            raise ValueError(f"tree_map: structures differ: {treedef} and {r_def}")
        others.append(r_leaves)
    return tree_unflatten(treedef, [f(*xs) for xs in zip(leaves, *others)])
