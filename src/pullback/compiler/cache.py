"""The trace cache: key -> compiled variants, bounded (LRU), with counters.

The key is the function's arguments reduced to what the generated code depends on:
each tensor's shape, dtype and requires_grad, the grad mode, and non-tensor
arguments by value (they must be hashable). Guards inside a variant cover the rest.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..autograd.grad_mode import STATE
from ..tensor import Tensor


@dataclass
class CacheInfo:
    hits: int = 0
    misses: int = 0
    recompiles: int = 0
    fallbacks: int = 0
    size: int = 0


class UnhashableArgument(TypeError):
    pass


def arg_key(a: Any) -> Any:
    if type(a) is Tensor:
        d = a._data
        return (d.shape, d.dtype.char, a._requires_grad)
    if type(a) is np.ndarray:
        return ("nd", a.shape, a.dtype.char)
    if isinstance(a, (list, tuple)):
        return (type(a).__name__,) + tuple(arg_key(x) for x in a)
    if isinstance(a, dict):
        return ("dict",) + tuple((k, arg_key(v)) for k, v in sorted(a.items()))
    if isinstance(a, float):
        return ("f",)  # Python floats are traced as values, not baked in
    try:
        hash(a)
    except TypeError:
        raise UnhashableArgument(type(a).__name__) from None
    return (type(a).__name__, a)


def call_key(args: tuple) -> tuple:
    return (STATE.grad_enabled, *[arg_key(a) for a in args])


@dataclass
class Cache:
    maxsize: int = 64
    entries: OrderedDict = field(default_factory=OrderedDict)
    info: CacheInfo = field(default_factory=CacheInfo)

    def get(self, key: tuple) -> list | None:
        variants = self.entries.get(key)
        if variants is not None:
            self.entries.move_to_end(key)
        return variants

    def hit(self, key: tuple) -> None:
        """Count a hit and mark the key as the most recently used."""
        self.info.hits += 1
        self.entries.move_to_end(key)

    def add(self, key: tuple, variant: Any) -> None:
        self.entries.setdefault(key, []).append(variant)
        self.entries.move_to_end(key)
        while len(self.entries) > self.maxsize:
            self.entries.popitem(last=False)
        self.info.size = sum(len(v) for v in self.entries.values())

    def variants(self) -> list:
        return [v for vs in self.entries.values() for v in vs]
