"""``Module.state_dict`` and ``load_state_dict``, with torch's keys, checks and errors.

>>> import pullback as pb
>>> from pullback import nn
>>> lin = nn.Linear(2, 3)
>>> list(lin.state_dict())
['weight', 'bias']
>>> nn.Linear(2, 3).load_state_dict(lin.state_dict())
<All keys matched successfully>
>>> nn.Linear(2, 3, bias=False).load_state_dict(lin.state_dict())
Traceback (most recent call last):
  ...
RuntimeError: Error(s) in loading state_dict for Linear:
	Unexpected key(s) in state_dict: "bias". 
"""  # noqa: W291 (torch's message ends with a space)

from __future__ import annotations

from collections import OrderedDict, namedtuple
from collections.abc import Mapping
from typing import Any

from ..autograd.grad_mode import no_grad
from ..autograd.messages import legacy_type, torch_size
from ..tensor import Tensor


def typename(obj: Any) -> str:
    """torch.typename: 'torch.FloatTensor' for a float32 Tensor, else the qualified
    name of the type (builtins unqualified)."""
    if isinstance(obj, Tensor):
        return legacy_type(obj._data.dtype)
    t = obj if isinstance(obj, type) else type(obj)
    module = t.__module__
    return t.__qualname__ if module in ("builtins", None) else f"{module}.{t.__qualname__}"


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What ``load_state_dict`` returns (torch's repr when everything matched)."""

    __slots__ = ()

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


class StateDictMixin:
    """The state dict methods of ``Module`` (it keeps ``_parameters``, ``_buffers``,
    ``_non_persistent_buffers_set`` and ``_modules``)."""

    def _local_state(self) -> dict:
        """Parameters and persistent buffers of this module alone, Nones left out."""
        d = self.__dict__
        out = {k: v for k, v in d["_parameters"].items() if v is not None}
        out.update((k, v) for k, v in d["_buffers"].items()
                   if v is not None and k not in d["_non_persistent_buffers_set"])
        return out

    def state_dict(self, *, destination: Any = None, prefix: str = "",
                   keep_vars: bool = False) -> OrderedDict:
        """Every parameter and persistent buffer by dotted name (detached unless
        ``keep_vars``): this module's first, then each child's."""
        out = OrderedDict() if destination is None else destination
        for name, value in self._local_state().items():
            out[prefix + name] = value if keep_vars else value.detach()
        for name, child in self.__dict__["_modules"].items():
            if child is not None:
                child.state_dict(destination=out, prefix=prefix + name + ".",
                                 keep_vars=keep_vars)
        return out

    def load_state_dict(self, state_dict: Mapping, strict: bool = True,
                        assign: bool = False) -> _IncompatibleKeys:
        """Copy tensors from ``state_dict`` into the parameters and buffers (in place,
        or ``assign`` them); with ``strict``, missing or unexpected keys raise."""
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing: list = []
        unexpected: list = []
        errors: list = []
        for prefix, module in _prefixed_modules(self):
            module._load_local(state_dict, prefix, assign, missing, unexpected, errors)
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected)))
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in missing)))
        if errors:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                type(self).__name__, "\n\t".join(errors)))
        return _IncompatibleKeys(missing, unexpected)

    def _load_local(self, state_dict: Mapping, prefix: str, assign: bool, missing: list,
                    unexpected: list, errors: list) -> None:
        local = self._local_state()
        for name, param in local.items():
            key = prefix + name
            if key not in state_dict:
                missing.append(key)
                continue
            value = state_dict[key]
            if not isinstance(value, Tensor):
                errors.append(f'While copying the parameter named "{key}", expected '
                              "torch.Tensor or Tensor-like object from checkpoint but "
                              f"received {type(value)}")
                continue
            if param.ndim == 0 and value.ndim == 1:
                value = value[0]
            if value.shape != param.shape:
                errors.append(f"size mismatch for {key}: copying a param with shape "
                              f"{torch_size(value.shape)} from checkpoint, the shape in "
                              f"current model is {torch_size(param.shape)}.")
                continue
            with no_grad():
                if assign:
                    self._assign(name, param, value)
                else:
                    param.copy_(value)
        modules = self.__dict__["_modules"]
        for key in state_dict:
            if key.startswith(prefix):
                head, dot, _ = key[len(prefix):].partition(".")
                if (head not in modules) if dot else (head not in local):
                    unexpected.append(key)

    def _assign(self, name: str, param: Tensor, value: Tensor) -> None:
        if name in self.__dict__["_parameters"]:
            cls = type(param)
            value = value if isinstance(value, cls) else cls(value, param.requires_grad)
            value.requires_grad_(param.requires_grad)
        setattr(self, name, value)


def _prefixed_modules(module: Any, prefix: str = "") -> list:
    out = [(prefix, module)]
    for name, child in module.__dict__["_modules"].items():
        if child is not None:
            out += _prefixed_modules(child, prefix + name + ".")
    return out


__all__ = ["StateDictMixin", "typename"]
