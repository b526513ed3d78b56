"""Schedules that restart or cycle (``CosineAnnealingWarmRestarts``, ``OneCycleLR``)
and the schedulers that combine others (``SequentialLR``, ``ChainedScheduler``), with
torch's formulas and torch's errors.

>>> import pullback as pb
>>> opt = pb.optim.SGD([pb.zeros(1, requires_grad=True)], lr=1.0)
>>> S = pb.optim.lr_scheduler
>>> sched = S.SequentialLR(opt, [S.ConstantLR(opt, factor=0.5, total_iters=2),
...                              S.ExponentialLR(opt, gamma=0.5)], milestones=[2])
>>> rates = [sched.get_last_lr()[0]]
>>> for _ in range(4):
...     opt.step()
...     sched.step()
...     rates.append(sched.get_last_lr()[0])
>>> rates
[0.5, 0.5, 1.0, 0.5, 0.25]
"""

from __future__ import annotations

import math
from bisect import bisect_right
from typing import Any, Sequence

from ..optimizer import Optimizer
from .base import LRScheduler, _lrs
from .plateau import ReduceLROnPlateau


class CosineAnnealingWarmRestarts(LRScheduler):
    """Half a cosine from the initial rate down to ``eta_min`` over ``T_0`` epochs, then
    again from the top over ``T_0 * T_mult``, and so on (SGDR)."""

    def __init__(self, optimizer: Optimizer, T_0: int, T_mult: int = 1, eta_min: float = 0.0,
                 last_epoch: int = -1) -> None:
        if T_0 <= 0 or not isinstance(T_0, int):
            raise ValueError(f"Expected positive integer T_0, but got {T_0}")
        if T_mult < 1 or not isinstance(T_mult, int):
            raise ValueError(f"Expected integer T_mult >= 1, but got {T_mult}")
        if not isinstance(eta_min, (float, int)):
            raise ValueError(f"Expected float or int eta_min, but got {eta_min} of type "
                             f"{type(eta_min)}")
        self.T_0, self.T_i, self.T_mult, self.eta_min = T_0, T_0, T_mult, eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        self._warn_direct()
        phase = (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2
        return [self.eta_min + (base - self.eta_min) * phase for base in self.base_lrs]

    def step(self, epoch: float | None = None) -> None:
        """The next epoch, or ``epoch`` (a fraction of one too: ``step(epoch + i / n)``
        inside an epoch of n batches)."""
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur += 1
            if self.T_cur >= self.T_i:
                self.T_cur, self.T_i = self.T_cur % self.T_i, self.T_i * self.T_mult
        elif epoch < 0:
            raise ValueError(f"Expected non-negative epoch, but got {epoch}")
        elif epoch >= self.T_0 and self.T_mult == 1:
            self.T_cur = epoch % self.T_0
        elif epoch >= self.T_0:
            n = int(math.log(epoch / self.T_0 * (self.T_mult - 1) + 1, self.T_mult))
            self.T_cur = epoch - self.T_0 * (self.T_mult ** n - 1) / (self.T_mult - 1)
            self.T_i = self.T_0 * self.T_mult ** n
        else:
            self.T_i, self.T_cur = self.T_0, epoch
        self.last_epoch = math.floor(epoch)
        self._in_step = True
        try:
            values = self.get_lr()
        finally:
            self._in_step = False
        for group, lr in zip(self.optimizer.param_groups, values):
            group["lr"] = lr
        self._last_lr = _lrs(self.optimizer)


def _check_schedulers(kind: str, optimizer: Optimizer, schedulers: Sequence) -> None:
    """torch's checks of the schedulers SequentialLR and ChainedScheduler combine."""
    for k, s in enumerate(schedulers):
        if not hasattr(s, "optimizer"):
            raise TypeError(f"{kind} at index {k} should have `optimizer` as its attribute.")
        if isinstance(s, ReduceLROnPlateau):
            raise ValueError(f"{kind} does not support `ReduceLROnPlateau` scheduler as it "
                             "requires additional kwargs to be specified when calling `step`, "
                             f"but got one at index {k} in the given schedulers sequence.")
        if optimizer != s.optimizer:
            raise ValueError(f"{kind} expects all schedulers to belong to the same optimizer, "
                             f"but got scheduler {type(s).__name__} at index {k} has "
                             f"{s.optimizer}, which is different from "
                             f"{type(optimizer).__name__}.")


class _Combined(LRScheduler):
    """What SequentialLR and ChainedScheduler share: their schedulers' state dicts."""

    _schedulers: Sequence

    def state_dict(self) -> dict:
        out = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "_schedulers")}
        out["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return out

    def load_state_dict(self, state_dict: dict) -> None:
        state = dict(state_dict)
        saved = state.pop("_schedulers")
        self.__dict__.update(state)
        for s, d in zip(self._schedulers, saved):
            s.load_state_dict(d)


class SequentialLR(_Combined):
    """One scheduler until the first milestone, the next until the second, ..."""

    def __init__(self, optimizer: Optimizer, schedulers: list, milestones: list,
                 last_epoch: int = -1) -> None:
        kind = type(self).__name__
        if len(schedulers) < 1:
            raise ValueError(f"{kind} expects at least one scheduler, but got no scheduler.")
        _check_schedulers(kind, optimizer, schedulers)
        if len(milestones) != len(schedulers) - 1:
            raise ValueError("Sequential Schedulers expects number of schedulers provided to be "
                             "one more than the number of milestone points, but got number of "
                             f"schedulers {len(schedulers)} and the number of milestones to be "
                             f"equal to {len(milestones)}")
        self._schedulers, self._milestones = schedulers, milestones
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        for group in optimizer.param_groups:  # undo the steps the schedulers took
            group["lr"] = group["initial_lr"]
        for s in schedulers:
            _undo_step(s)
        first = schedulers[bisect_right(milestones, 0)]
        first._initial_step()
        self._last_lr = first.get_last_lr()

    def step(self) -> None:  # type: ignore[override]
        self.last_epoch += 1
        k = bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[k]
        if k > 0 and self._milestones[k - 1] == self.last_epoch:
            scheduler._update_lr(0)
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()


def _undo_step(s: Any) -> None:
    """One epoch back, for ``s`` and the schedulers it combines."""
    if hasattr(s, "_schedulers"):
        for inner in s._schedulers:
            _undo_step(inner)
    elif hasattr(s, "last_epoch"):
        s.last_epoch -= 1


class ChainedScheduler(_Combined):
    """Every scheduler's step, one after another, at each step."""

    def __init__(self, schedulers: Sequence, optimizer: Optimizer | None = None) -> None:
        kind = type(self).__name__
        if len(schedulers) < 1:
            raise ValueError(f"{kind} expects at least one scheduler to be chained, but got no "
                             "scheduler.")
        optimizer = optimizer or schedulers[0].optimizer
        _check_schedulers(kind, optimizer, schedulers)
        self._schedulers, self.optimizer = schedulers, optimizer
        self._last_lr = _lrs(schedulers[-1].optimizer)

    def step(self) -> None:  # type: ignore[override]
        for s in self._schedulers:
            s.step()
        self._last_lr = _lrs(self._schedulers[-1].optimizer)


class CycledMomentum:
    """What OneCycleLR and CyclicLR share: the momentum (or Adam's beta1) cycled with the
    learning rate, between each group's ``base_momentum`` and ``max_momentum``."""

    def _use_momentum(self, optimizer: Optimizer) -> None:
        if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
            raise ValueError("optimizer must support momentum or beta1 with `cycle_momentum` "
                             "option enabled")
        self.use_beta1 = "betas" in optimizer.defaults

    def _start_momenta(self, optimizer: Optimizer, highs: list, lows: list) -> None:
        for hi, lo, group in zip(highs, lows, optimizer.param_groups):
            self._set_momentum(group, hi)
            group["max_momentum"], group["base_momentum"] = hi, lo

    def _set_momentum(self, group: dict, value: float) -> None:
        if self.use_beta1:
            group["betas"] = (value, *group["betas"][1:])
        else:
            group["momentum"] = value


class OneCycleLR(CycledMomentum, LRScheduler):
    """The 1cycle policy: up from ``max_lr / div_factor`` to ``max_lr``, then down to
    ``initial_lr / final_div_factor`` (a third phase with ``three_phase``), momentum (or
    Adam's beta1) the other way; one step per batch, ``total_steps`` of them."""

    def __init__(self, optimizer: Optimizer, max_lr: Any, total_steps: int | None = None,
                 epochs: int | None = None, steps_per_epoch: int | None = None,
                 pct_start: float = 0.3, anneal_strategy: str = "cos",
                 cycle_momentum: bool = True, base_momentum: Any = 0.85,
                 max_momentum: Any = 0.95, div_factor: float = 25.0,
                 final_div_factor: float = 1e4, three_phase: bool = False,
                 last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        self.total_steps = _total_steps(total_steps, epochs, steps_per_epoch)
        self._phases = _phases(pct_start, self.total_steps, three_phase)
        if pct_start < 0 or pct_start > 1 or not isinstance(pct_start, float):
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError("anneal_strategy must be one of 'cos' or 'linear', instead got "
                             f"{anneal_strategy}")
        self._anneal = _cos if anneal_strategy == "cos" else _linear
        if last_epoch == -1:
            for group, top in zip(optimizer.param_groups, _per_group("max_lr", optimizer, max_lr)):
                group["initial_lr"] = top / div_factor
                group["max_lr"] = top
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self._momenta(optimizer, base_momentum, max_momentum, last_epoch)
        super().__init__(optimizer, last_epoch)

    def _momenta(self, optimizer: Optimizer, base: Any, top: Any, last_epoch: int) -> None:
        self._use_momentum(optimizer)
        if last_epoch == -1:
            self._start_momenta(optimizer, _per_group("max_momentum", optimizer, top),
                                _per_group("base_momentum", optimizer, base))

    def get_lr(self) -> list:
        self._warn_direct()
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(f"Tried to step {step} times. The specified number of total "
                             f"steps is {self.total_steps}")
        lrs = []
        for group in self.optimizer.param_groups:
            start = 0.0
            for k, (end, lr_from, lr_to, m_from, m_to) in enumerate(self._phases):
                if step <= end or k == len(self._phases) - 1:
                    pct = (step - start) / (end - start)
                    lrs.append(self._anneal(group[lr_from], group[lr_to], pct))
                    if self.cycle_momentum:
                        self._set_momentum(group, self._anneal(group[m_from], group[m_to], pct))
                    break
                start = end
        return lrs


def _total_steps(total_steps: int | None, epochs: int | None,
                 steps_per_epoch: int | None) -> int:
    if total_steps is not None:
        if total_steps <= 0 or not isinstance(total_steps, int):
            raise ValueError(f"Expected positive integer total_steps, but got {total_steps}")
        return total_steps
    if epochs is None or steps_per_epoch is None:
        raise ValueError("You must define either total_steps OR (epochs AND steps_per_epoch)")
    if not isinstance(epochs, int) or epochs <= 0:
        raise ValueError(f"Expected positive integer epochs, but got {epochs}")
    if not isinstance(steps_per_epoch, int) or steps_per_epoch <= 0:
        raise ValueError(f"Expected positive integer steps_per_epoch, but got {steps_per_epoch}")
    return epochs * steps_per_epoch


def _phases(pct: float, total: int, three: bool) -> list:
    """(last step, lr from, lr to, momentum from, momentum to) per phase."""
    up = (float(pct * total) - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum")
    if three:
        return [up, (float(2 * pct * total) - 2, "max_lr", "initial_lr", "base_momentum",
                     "max_momentum"),
                (total - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum")]
    return [up, (total - 1, "max_lr", "min_lr", "base_momentum", "max_momentum")]


def _per_group(name: str, optimizer: Optimizer, value: Any) -> list:
    """One value per parameter group (a list or tuple must have one per group)."""
    groups = optimizer.param_groups
    if isinstance(value, (list, tuple)):
        if len(value) != len(groups):
            raise ValueError(f"{name} must have the same length as optimizer.param_groups. "
                             f"{name} has {len(value)} values, param_groups has "
                             f"{len(groups)}.")
        return list(value)
    return [value] * len(groups)


def _cos(start: float, end: float, pct: float) -> float:
    return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)


def _linear(start: float, end: float, pct: float) -> float:
    return (end - start) * pct + start
