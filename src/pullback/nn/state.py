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

    def __init__(self, module: Any, signature: Callable[[Any], tuple]) -> None:
        self.module = module
        self.signature = signature
        self.version = STATE.version
        self.expected = signature(module)

    def __call__(self) -> bool:
        if self.version == STATE.version:
            return True
        now = STATE.version
        if self.signature(self.module) != self.expected:
            return False
        self.version = now
        return True


__all__ = ["ModuleGuard", "STATE", "changed"]
