"""One counter for every change of any module's state, and the guard compiled code
keeps on a module it captured.

A trace of code that calls a module bakes in what the module held then: which
submodules, parameters and buffers (by identity, dtype and shape), their
``requires_grad``, ``training``, hyperparameters and hooks. ``Module.__setattr__``,
``__delattr__``, ``register_*``, hooks (added or removed), ``train``/``eval``, ``to``
and a Parameter's ``requires_grad``/``data`` setters call ``changed()``. The guard
(``ModuleGuard``) compares one int while nothing changed anywhere; after a change it
compares the module's ``signature()`` with the one it recorded, so a change elsewhere
(another model, ``train()`` and back) costs one walk, not a retrace. An optimizer's
step writes into parameters' arrays in place and changes nothing here.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

import numpy as np

from .. import dtypes


class _State:
    version = 0


STATE = _State()
_LOCK = threading.Lock()


def changed() -> None:
    """Some module's state changed (see the module docstring)."""
    with _LOCK:
        STATE.version += 1


class ModuleGuard:
    """``guard()`` is true while ``module`` holds what it held when the guard was made
    (``signature`` computes what it holds)."""

    __slots__ = ("module", "signature", "expected", "version")

    def __init__(self, module: Any, signature: Callable[[Any], tuple],
                 expected: tuple | None = None) -> None:
        """``expected``: ``signature(module)`` when the caller has it already."""
        self.module = module
        self.signature = signature
        self.version = STATE.version
        self.expected = signature(module) if expected is None else expected

    def __call__(self) -> bool:
        if self.version == STATE.version:
            return True
        now = STATE.version
        if self.signature(self.module) != self.expected:
            return False
        self.version = now
        return True


def signature(module: Any) -> tuple:
    """What a trace of code calling ``module`` depends on, in a comparable form: every
    submodule's ``module_signature``, depth first."""
    return tuple(map(module_signature, module.modules()))


def module_signature(m: Any) -> tuple:
    """One module's part of ``signature``: its identity, type, ``training``, hooks,
    children and its parameters and buffers (identity, dtype, shape, requires_grad);
    for a module whose ``forward`` is pullback's (``Linear``, ``Softmax``...), its
    attributes too (the hyperparameters that code reads). A user's ``forward`` is
    followed by the captured-value walk, which guards the attributes it reads, and only
    those (a step counter kept on the model does not retrace)."""
    d = m.__dict__
    attrs = tuple((k, v if isinstance(v, _SCALARS) or _scalar_tuple(v) else id(v))
                  for k, v in d.items() if not k.startswith("_")) \
        if library_forward(type(m)) else (("training", d["training"]),)
    tensors = tuple((k, None if t is None else (id(t), t._data.dtype, t._data.shape,
                                                t._requires_grad))
                    for table in ("_parameters", "_buffers") for k, t in d[table].items())
    children = tuple((k, id(c)) for k, c in d["_modules"].items())
    hooks = (tuple(d["_forward_pre_hooks"].items()), tuple(d["_forward_hooks"].items()),
             tuple(d["_non_persistent_buffers_set"]),
             tuple(d.get("_backward_pre_hooks", {}).items()),
             tuple(d.get("_backward_hooks", {}).items()))
    return (id(m), type(m), attrs, tensors, children, hooks)


def library_forward(cls: type) -> bool:
    """Whether ``cls.forward`` is pullback's own (no user code runs in it)."""
    return getattr(cls.forward, "__module__", "").startswith("pullback.")


_SCALARS = (bool, int, float, complex, str, bytes, type(None), np.dtype, dtypes.dtype)


def _scalar_tuple(v: Any) -> bool:
    return isinstance(v, tuple) and all(isinstance(x, _SCALARS) for x in v)


__all__ = ["ModuleGuard", "STATE", "changed", "signature", "module_signature",
           "library_forward"]
