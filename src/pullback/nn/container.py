"""Containers: ``Sequential``, ``ModuleList``, ``ModuleDict``, ``ParameterList``,
``ParameterDict``; what they hold is registered, so ``parameters()``, ``state_dict()``
and ``to()`` see it.

>>> import pullback as pb
>>> from pullback import nn
>>> net = nn.Sequential(nn.Linear(2, 3), nn.ReLU())
>>> net.append(nn.Linear(3, 1))[1:]
Sequential(
  (1): ReLU()
  (2): Linear(in_features=3, out_features=1, bias=True)
)
>>> nn.ModuleList([nn.Tanh() for _ in range(3)])
ModuleList(
  (0-2): 3 x Tanh()
)
"""

from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import Any, Iterator

from ..tensor import Tensor
from .module import Module, _addindent
from .parameter import Parameter
from .state_dict import typename


def _index(idx: Any, size: int) -> int:
    idx = operator.index(idx)
    if not -size <= idx < size:
        raise IndexError(f"index {idx} is out of range")
    return idx % size


def _renumber(module: Module) -> None:
    """Keys 0..n-1 again after a deletion (the order kept)."""
    module._modules = OrderedDict((str(i), m) for i, m in enumerate(module._modules.values()))


class Sequential(Module):
    """Modules called in order, each on the previous one's output."""

    def __init__(self, *args: Any) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for key, module in args[0].items():
                self.add_module(key, module)
        else:
            for idx, module in enumerate(args):
                self.add_module(str(idx), module)

    def __getitem__(self, idx: Any) -> Any:
        if isinstance(idx, slice):
            return type(self)(OrderedDict(list(self._modules.items())[idx]))
        return list(self._modules.values())[_index(idx, len(self))]

    def __setitem__(self, idx: int, module: Module) -> None:
        setattr(self, list(self._modules)[_index(idx, len(self))], module)

    def __delitem__(self, idx: Any) -> None:
        keys = list(self._modules)
        for key in keys[idx] if isinstance(idx, slice) else [keys[_index(idx, len(self))]]:
            delattr(self, key)
        _renumber(self)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __add__(self, other: Sequential) -> Sequential:
        if not isinstance(other, Sequential):
            raise ValueError("add operator supports only objects of Sequential class, but "
                             f"{type(other)} is given.")
        return Sequential(*self, *other)

    def append(self, module: Module) -> Sequential:
        self.add_module(str(len(self)), module)
        return self

    def extend(self, sequential: Iterable[Module]) -> Sequential:
        for layer in sequential:
            self.append(layer)
        return self

    def insert(self, index: int, module: Module) -> Sequential:
        if not isinstance(module, Module):
            raise AssertionError(f"module should be of type: {Module}")
        n = len(self)
        if not -n <= index <= n:
            raise IndexError(f"Index out of range: {index}")
        mods = list(self._modules.values())
        mods.insert(index % (n + 1) if index < 0 else index, module)
        self._modules = OrderedDict((str(i), m) for i, m in enumerate(mods))
        return self

    def pop(self, key: Any) -> Module:
        v = self[key]
        del self[key]
        return v

    def forward(self, input: Any) -> Any:
        for module in self._modules.values():
            input = module(input)
        return input


class ModuleList(Module):
    """A list of modules (not callable: index or iterate over it)."""

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, idx: Any) -> Any:
        if isinstance(idx, slice):
            return type(self)(list(self._modules.values())[idx])
        return self._modules[str(_index(idx, len(self)))]

    def __setitem__(self, idx: int, module: Module) -> None:
        setattr(self, str(_index(idx, len(self))), module)

    def __delitem__(self, idx: Any) -> None:
        for k in (range(len(self))[idx] if isinstance(idx, slice) else [_index(idx, len(self))]):
            delattr(self, str(k))
        _renumber(self)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __iadd__(self, modules: Iterable[Module]) -> ModuleList:
        return self.extend(modules)

    def __add__(self, other: Iterable[Module]) -> ModuleList:
        return ModuleList([*self, *other])

    def append(self, module: Module) -> ModuleList:
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        if not isinstance(modules, Iterable):
            raise TypeError("ModuleList.extend should be called with an iterable, but got "
                            + type(modules).__name__)
        for module in modules:
            self.append(module)
        return self

    def insert(self, index: int, module: Module) -> None:
        mods = list(self._modules.values())
        mods.insert(index, module)
        self._modules = OrderedDict()
        self.extend(mods)

    def pop(self, key: Any) -> Module:
        v = self[key]
        del self[key]
        return v

    def __repr__(self) -> str:
        """Runs of equal modules in one line, ``(0-2): 3 x Linear(...)``, as torch."""
        reprs = [repr(m) for m in self]
        if not reprs:
            return self._get_name() + "()"
        runs = [[0, 0, reprs[0]]]
        for i, r in enumerate(reprs[1:], 1):
            if r == runs[-1][2]:
                runs[-1][1] = i
            else:
                runs.append([i, i, r])
        lines = [_addindent(f"({a}): {r}" if a == b else f"({a}-{b}): {b - a + 1} x {r}", 2)
                 for a, b, r in runs]
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"


class ModuleDict(Module):
    """An ordered dict of modules by name."""

    def __init__(self, modules: Any = None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        delattr(self, key)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key: str) -> bool:
        return key in self._modules

    def clear(self) -> None:
        for key in list(self._modules):
            delattr(self, key)

    def pop(self, key: str) -> Module:
        v = self[key]
        del self[key]
        return v

    def keys(self) -> Any:
        return self._modules.keys()

    def items(self) -> Any:
        return self._modules.items()

    def values(self) -> Any:
        return self._modules.values()

    def update(self, modules: Any) -> None:
        for key, module in _pairs(modules, "ModuleDict"):
            self[key] = module


def _pairs(values: Any, owner: str) -> list:
    """(key, value) pairs from a mapping or an iterable of pairs, with torch's errors
    (a plain dict given to a ParameterDict is taken in sorted order, as torch does)."""
    if not isinstance(values, Iterable):
        name = "ParametersDict" if owner == "ParameterDict" else owner  # (torch's spelling)
        raise TypeError(f"{name}.update should be called with an iterable of key/value "
                        f"pairs, but got {type(values).__name__}")
    if isinstance(values, (OrderedDict, ModuleDict, ParameterDict)):
        return list(values.items())
    if isinstance(values, Mapping):
        return sorted(values.items()) if owner == "ParameterDict" else list(values.items())
    out = []
    for j, pair in enumerate(values):
        if not isinstance(pair, Iterable):
            raise TypeError(f"{owner} update sequence element #{j} should be Iterable; is"
                            + type(pair).__name__)
        if len(pair) != 2:
            raise ValueError(f"{owner} update sequence element #{j} has length {len(pair)}; "
                             "2 is required")
        out.append(tuple(pair))
    return out


def _param_line(key: Any, p: Any, type_name: str) -> str:
    if isinstance(p, Tensor):
        kind = "Parameter" if isinstance(p, Parameter) else "Tensor"
        size = "x".join(str(n) for n in p.shape)
        return f"  ({key}): {kind} containing: [{type_name} of size {size}]"
    return f"  ({key}): Object of type: {type(p).__name__}"


class ParameterList(Module):
    """A list of parameters (a Tensor appended becomes a Parameter)."""

    def __init__(self, values: Iterable[Any] | None = None) -> None:
        super().__init__()
        self._size = 0
        if values is not None:
            self.extend(values)

    def __getitem__(self, idx: Any) -> Any:
        if isinstance(idx, slice):
            return type(self)([self[i] for i in range(len(self))[idx]])
        return getattr(self, str(_index(idx, len(self))))

    def __setitem__(self, idx: int, param: Any) -> None:
        if isinstance(param, Tensor) and not isinstance(param, Parameter):
            param = Parameter(param)
        setattr(self, str(_index(idx, len(self))), param)

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[Any]:
        return iter([self[i] for i in range(len(self))])

    def __iadd__(self, values: Iterable[Any]) -> ParameterList:
        return self.extend(values)

    def append(self, value: Any) -> ParameterList:
        self._size += 1
        self[self._size - 1] = value
        return self

    def extend(self, values: Iterable[Any]) -> ParameterList:
        if not isinstance(values, Iterable) or isinstance(values, Tensor):
            raise TypeError("ParameterList.extend should be called with an iterable, but got "
                            + type(values).__name__)
        for value in values:
            self.append(value)
        return self

    def extra_repr(self) -> str:
        return "\n".join(_param_line(k, p, str(getattr(p, "dtype", "")))
                         for k, p in enumerate(self))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("ParameterList should not be called.")


class ParameterDict(Module):
    """An ordered dict of parameters by name (a Tensor stored becomes a Parameter)."""

    def __init__(self, parameters: Any = None) -> None:
        super().__init__()
        self._keys: dict = {}
        if parameters is not None:
            self.update(parameters)

    def _key(self, key: Any) -> str:
        if not isinstance(key, str):
            raise TypeError("Index given to ParameterDict cannot be used as a key as it is not "
                            f"a string (type is '{type(key).__name__}'). Open an issue on "
                            "github if you need non-string keys.")
        return key

    def __getitem__(self, key: str) -> Any:
        return getattr(self, self._key(key))

    def __setitem__(self, key: str, value: Any) -> None:
        self._keys[key] = None
        if isinstance(value, Tensor) and not isinstance(value, Parameter):
            value = Parameter(value)
        setattr(self, self._key(key), value)

    def __delitem__(self, key: str) -> None:
        del self._keys[key]
        delattr(self, self._key(key))

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __contains__(self, key: str) -> bool:
        return key in self._keys

    def keys(self) -> Any:
        return self._keys.keys()

    def items(self) -> Iterator[tuple]:
        return ((k, self[k]) for k in self._keys)

    def values(self) -> Iterator[Any]:
        return (self[k] for k in self._keys)

    def get(self, key: str, default: Any = None) -> Any:
        return self[key] if key in self else default

    def pop(self, key: str) -> Any:
        v = self[key]
        del self[key]
        return v

    def update(self, parameters: Any) -> None:
        for key, value in _pairs(parameters, "ParameterDict"):
            self[key] = value

    def extra_repr(self) -> str:
        return "\n".join(_param_line(k, p, typename(p)) for k, p in self.items())

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("ParameterDict should not be called.")


__all__ = ["ModuleDict", "ModuleList", "ParameterDict", "ParameterList", "Sequential"]
