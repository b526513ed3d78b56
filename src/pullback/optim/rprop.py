"""``Rprop`` (a step per coordinate that grows while the gradient keeps its sign and
shrinks when it flips, the gradient's size ignored) and ``ASGD`` (SGD with a decaying
rate, keeping the average of its iterates in ``ax``), step for step as torch's.

>>> import pullback as pb
>>> w = pb.tensor([1.0, -1.0], requires_grad=True)
>>> opt = pb.optim.Rprop([w], lr=0.1)
>>> for _ in range(2):
...     opt.zero_grad()
...     (w * w).sum().backward()
...     opt.step()
>>> w, opt.state[w]["step_size"]
(tensor([ 0.7800, -0.7800], requires_grad=True), tensor([0.1200, 0.1200]))
"""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np

from ..tensor import Tensor
from .optimizer import Optimizer, coupled_gradient
from .sgd import _refuse


class Rprop(Optimizer):
    """Each coordinate's step size times ``etas[1]`` when its gradient kept its sign,
    times ``etas[0]`` (and no move this step) when it flipped, within
    ``step_sizes``; ``p -= sign(g) * step_size``."""

    def __init__(self, params: Iterable, lr: float = 1e-2, etas: tuple = (0.5, 1.2),
                 step_sizes: tuple = (1e-6, 50), *, capturable: bool = False,
                 foreach: Any = None, maximize: bool = False,
                 differentiable: bool = False) -> None:
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        _refuse(capturable=capturable, differentiable=differentiable)
        super().__init__(params, {
            "lr": lr, "etas": etas, "step_sizes": step_sizes, "foreach": foreach,
            "maximize": maximize, "differentiable": differentiable,
            "capturable": capturable})

    def _state_init(self, group: dict) -> dict:
        return {"prev": 0.0, "step_size": group["lr"]}

    def _update(self, group: dict, p: np.ndarray, g: np.ndarray, state: dict, step: float,
                first: bool) -> None:
        (shrink, grow), (smallest, largest) = group["etas"], group["step_sizes"]
        g = -g if group["maximize"] else g
        prev, size = state["prev"], state["step_size"]
        agreement = np.sign(g * prev)
        factor = np.where(agreement > 0, grow, np.where(agreement < 0, shrink, 1.0))
        size *= factor.astype(size.dtype, copy=False)
        np.clip(size, smallest, largest, out=size)
        g = np.where(factor == shrink, 0, g).astype(p.dtype, copy=False)
        p -= np.sign(g) * size
        np.copyto(prev, g)


class ASGD(Optimizer):
    """``p = p * (1 - lambd * eta) - eta * g`` with ``eta = lr / (1 + lambd * lr * t)
    ** alpha`` (torch keeps it, and ``mu``, in float32), ``ax`` the running average of
    ``p`` from step ``t0`` on (before it, ``p`` itself). ``eta`` is computed from the
    step count and the group's current ``lr`` (torch's from the ``lr`` of the step
    before: the same unless a scheduler changes ``lr``)."""

    _step_dependent = True

    def __init__(self, params: Iterable, lr: float = 1e-2, lambd: float = 1e-4,
                 alpha: float = 0.75, t0: float = 1e6, weight_decay: float = 0,
                 foreach: Any = None, maximize: bool = False, differentiable: bool = False,
                 capturable: bool = False) -> None:
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        _refuse(capturable=capturable, differentiable=differentiable)
        super().__init__(params, {
            "lr": lr, "lambd": lambd, "alpha": alpha, "t0": t0,
            "weight_decay": weight_decay, "foreach": foreach, "maximize": maximize,
            "differentiable": differentiable, "capturable": capturable})

    def _state_init(self, group: dict) -> dict:
        return {"ax": 0.0}

    def _update(self, group: dict, p: np.ndarray, g: np.ndarray, state: dict, step: float,
                first: bool) -> None:
        g = coupled_gradient(group, p, g)
        eta, mu = _eta_mu(group, step - 1)
        p *= 1 - group["lambd"] * eta
        p += -eta * g
        ax = state["ax"]
        if mu != 1:
            ax += (p - ax) * mu
        else:
            np.copyto(ax, p)

    def state_dict(self) -> dict:
        """torch's: each parameter's ``eta`` and ``mu`` after its ``step`` (functions of
        the step count here, so loading them takes them from the step)."""
        out = super().state_dict()
        group_of = {i: g for g in out["param_groups"] for i in g["params"]}
        for k, s in out["state"].items():
            if "step" in s:
                eta, mu = _eta_mu(group_of[k], float(s["step"]))
                out["state"][k] = {"step": s["step"],
                                   "eta": Tensor._make(np.array(eta, np.float32)),
                                   "mu": Tensor._make(np.array(mu, np.float32)), "ax": s["ax"]}
        return out


def _eta_mu(group: dict, t: float) -> tuple:
    """ASGD's rate and averaging weight after ``t`` steps, rounded to float32 as torch
    keeps them (as Python floats)."""
    lr, lambd = group["lr"], group["lambd"]
    if t == 0:
        return float(np.float32(lr)), 1.0
    eta = lr / ((1 + lambd * lr * t) ** group["alpha"])
    return float(np.float32(eta)), float(np.float32(1 / max(1, t - group["t0"])))


__all__ = ["ASGD", "Rprop"]
