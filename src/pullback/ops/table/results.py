"""What an op with several outputs returns, and how its declaration names them.

``defop(..., outputs=("values", "indices"))`` declares an op with two named outputs:
its result is a named tuple, printed as torch prints its ``torch.return_types``::

    >>> Sort = return_type("sort", ("values", "indices"))
    >>> Sort([3.0, 1.0], [0, 1])
    pullback.return_types.sort(
    values=[3.0, 1.0],
    indices=[0, 1])

``outputs=tuple`` declares an op whose result is a tuple of any length (split, unbind).
``uses`` may name an output (``uses=("indices",)``): nodes save that output only.
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

_TYPES: dict = {}


def return_type(name: str, fields: tuple) -> type:
    """The named-tuple type ``pullback.return_types.<name>`` (one per name and fields)."""
    cls = _TYPES.get((name, fields))
    if cls is None:
        base = namedtuple(name, fields)
        cls = _TYPES[name, fields] = type(name, (base,), {
            "__slots__": (), "__repr__": _repr, "__module__": "pullback.return_types"})
    return cls


def _repr(self: Any) -> str:
    items = ",\n".join(f"{k}={v!r}" for k, v in zip(self._fields, self))
    return f"pullback.return_types.{type(self).__name__}(\n{items})"


def result_type(name: str, outputs: Any) -> Any:
    """None for one output; ``tuple`` for any number; else the named-tuple type of the
    declared names (a tuple of names, or a type made by ``return_type``)."""
    if outputs is None or outputs is tuple:
        return outputs
    if isinstance(outputs, type):
        return outputs
    return return_type(name, tuple(outputs))


def output_names(result: Any) -> tuple:
    """The declared output names (none for a tuple of any length)."""
    return tuple(getattr(result, "_fields", ()))


class AllInputs(frozenset):
    """A variadic op's ``uses`` naming its list: every input position is in it."""

    __slots__ = ()

    def __contains__(self, x: object) -> bool:
        return type(x) is int or frozenset.__contains__(self, x)

    def __bool__(self) -> bool:
        return True

    def __or__(self, other: Any) -> AllInputs:
        return AllInputs(frozenset.__or__(self, other))

    def __repr__(self) -> str:
        return f"AllInputs({set(self) or ''})"


def pack(result: Any, values: list) -> Any:
    """The op's result from its outputs: a tuple, or its named tuple."""
    return tuple(values) if result is tuple else result(*values)
