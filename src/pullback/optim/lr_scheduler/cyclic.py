"""``CyclicLR``: the rate goes back and forth between ``base_lr`` and ``max_lr``
(Smith's cyclical learning rates), one step per batch, the amplitude kept
(``triangular``), halved each cycle (``triangular2``), shrunk by ``gamma`` each
iteration (``exp_range``) or scaled by the user's ``scale_fn``; momentum (or Adam's
beta1) the other way, as torch's.

>>> import pullback as pb
>>> opt = pb.optim.SGD([pb.zeros(1, requires_grad=True)], lr=1.0, momentum=0.9)
>>> sched = pb.optim.lr_scheduler.CyclicLR(opt, base_lr=0.1, max_lr=0.5, step_size_up=2,
...                                        mode="triangular2")
>>> rates = [sched.get_last_lr()[0]]
>>> for _ in range(6):
...     opt.step()
...     sched.step()
...     rates.append(round(sched.get_last_lr()[0], 3))
>>> rates
[0.1, 0.3, 0.5, 0.3, 0.1, 0.2, 0.3]
"""

from __future__ import annotations

import math
import types
from typing import Any, Callable

from ..optimizer import Optimizer
from .base import LRScheduler
from .cycles import CycledMomentum, _per_group

_MODES = ("triangular", "triangular2", "exp_range")


class CyclicLR(CycledMomentum, LRScheduler):
    """A triangle wave from ``base_lr`` up to ``max_lr`` in ``step_size_up`` steps and
    down in ``step_size_down`` (default: as many), its height times ``scale_fn(cycle)``
    or ``scale_fn(iteration)`` (``scale_mode``)."""

    def __init__(self, optimizer: Optimizer, base_lr: Any, max_lr: Any,
                 step_size_up: int = 2000, step_size_down: int | None = None,
                 mode: str = "triangular", gamma: float = 1.0,
                 scale_fn: Callable | None = None, scale_mode: str = "cycle",
                 cycle_momentum: bool = True, base_momentum: Any = 0.8,
                 max_momentum: Any = 0.9, last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        base_lrs = _per_group("base_lr", optimizer, base_lr)
        if last_epoch == -1:
            for lr, group in zip(base_lrs, optimizer.param_groups):
                group["lr"] = lr
        self.max_lrs = _per_group("max_lr", optimizer, max_lr)
        up = float(step_size_up)
        down = float(step_size_down) if step_size_down is not None else up
        self.total_size = up + down
        self.step_ratio = up / self.total_size
        if mode not in _MODES and scale_fn is None:
            raise ValueError("mode is invalid and scale_fn is None")
        self.mode, self.gamma = mode, gamma
        self._scale_fn_custom = scale_fn
        self.scale_mode = scale_mode
        self._init_scale_mode()
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self._momenta(base_momentum, max_momentum, last_epoch)
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs

    def _init_scale_mode(self) -> None:
        """A built-in mode fixes what its scale is a function of."""
        if self._scale_fn_custom is None and self.mode in _MODES:
            self.scale_mode = "iterations" if self.mode == "exp_range" else "cycle"

    def _momenta(self, base: Any, top: Any, last_epoch: int) -> None:
        self._use_momentum(self.optimizer)
        self.base_momentums = _per_group("base_momentum", self.optimizer, base)
        self.max_momentums = _per_group("max_momentum", self.optimizer, top)
        if last_epoch == -1:
            self._start_momenta(self.optimizer, self.max_momentums, self.base_momentums)

    def scale_fn(self, x: float) -> float:
        """The height's scale at cycle (or iteration) ``x``."""
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        if self.mode == "triangular":
            return 1.0
        if self.mode == "triangular2":
            return 1 / (2.0 ** (x - 1))
        return self.gamma ** x

    def get_lr(self) -> list:
        """This batch's rates (and, with ``cycle_momentum``, the groups' momenta set)."""
        self._warn_direct()
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle
        if x <= self.step_ratio:
            height = x / self.step_ratio
        else:
            height = (x - 1) / (self.step_ratio - 1)
        scale = self.scale_fn(cycle if self.scale_mode == "cycle" else self.last_epoch)
        lrs = [base + (top - base) * height * scale
               for base, top in zip(self.base_lrs, self.max_lrs)]
        if self.cycle_momentum:
            for group, lo, hi in zip(self.optimizer.param_groups, self.base_momentums,
                                     self.max_momentums):
                self._set_momentum(group, hi - (hi - lo) * height * scale)
        return lrs

    def state_dict(self) -> dict:
        """As torch's: a custom ``scale_fn`` saved only as a callable object's
        attributes (a function or lambda is not saved)."""
        state = super().state_dict()
        fn = state.pop("_scale_fn_custom")
        keep = fn is not None and not isinstance(fn, types.FunctionType)
        state["_scale_fn_custom"] = fn.__dict__.copy() if keep else None
        return state

    def load_state_dict(self, state_dict: dict) -> None:
        state = dict(state_dict)
        fn = state.pop("_scale_fn_custom")
        super().load_state_dict(state)
        if fn is not None:
            self._scale_fn_custom.__dict__.update(fn)
        self._init_scale_mode()


__all__ = ["CyclicLR"]
