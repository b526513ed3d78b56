"""``RMSprop`` (centered, momentum, weight decay, ``maximize``) and ``Adagrad``
(lr decay, initial accumulator, weight decay, ``maximize``), step for step as torch's.

>>> import pullback as pb
>>> w = pb.tensor([1.0], requires_grad=True)
>>> opt = pb.optim.Adagrad([w], lr=0.5)
>>> (w * w).sum().backward()
>>> opt.step()
>>> w
tensor([0.5000], requires_grad=True)
"""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np

from .optimizer import Optimizer, coupled_gradient
from .sgd import _refuse


def _check(**values: float) -> None:
    for name, v in values.items():
        if not 0.0 <= v:
            label = {"lr": "learning rate", "eps": "epsilon value"}.get(name, f"{name} value")
            raise ValueError(f"Invalid {label}: {v}")


class RMSprop(Optimizer):
    """Divides the gradient by a running root mean square of it (``centered``:
    minus the running mean's square); ``momentum`` keeps a buffer of those steps."""

    def __init__(self, params: Iterable, lr: float = 1e-2, alpha: float = 0.99,
                 eps: float = 1e-8, weight_decay: float = 0, momentum: float = 0,
                 centered: bool = False, capturable: bool = False, foreach: Any = None,
                 maximize: bool = False, differentiable: bool = False) -> None:
        _check(lr=lr, eps=eps, momentum=momentum, weight_decay=weight_decay, alpha=alpha)
        _refuse(capturable=capturable, differentiable=differentiable)
        super().__init__(params, {
            "lr": lr, "momentum": momentum, "alpha": alpha, "eps": eps, "centered": centered,
            "weight_decay": weight_decay, "capturable": capturable, "foreach": foreach,
            "maximize": maximize, "differentiable": differentiable})

    def _state_init(self, group: dict) -> dict:
        names = {"square_avg": 0.0}
        if group["momentum"] > 0:
            names["momentum_buffer"] = 0.0
        if group["centered"]:
            names["grad_avg"] = 0.0
        return names

    def _update(self, group: dict, p: np.ndarray, g: np.ndarray, state: dict, step: float,
                first: bool) -> None:
        alpha = group["alpha"]
        g = coupled_gradient(group, p, g)
        sq = state["square_avg"]
        sq *= alpha
        sq += (1 - alpha) * g * g
        if group["centered"]:
            ga = state["grad_avg"]
            ga += (g - ga) * (1 - alpha)
            avg = sq + (-1 * ga) * ga
            np.sqrt(avg, out=avg)
        else:
            avg = np.sqrt(sq)
        avg += group["eps"]
        if group["momentum"] > 0:
            buf = state["momentum_buffer"]
            buf *= group["momentum"]
            buf += g / avg
            p -= group["lr"] * buf
        else:
            p += -group["lr"] * g / avg


class Adagrad(Optimizer):
    """Divides the gradient by the root of the sum of its squares so far; the rate
    decays as ``lr / (1 + (t - 1) * lr_decay)``. Its state exists from the start."""

    _step_dependent = True
    _state_at_start = True

    def __init__(self, params: Iterable, lr: float = 1e-2, lr_decay: float = 0,
                 weight_decay: float = 0, initial_accumulator_value: float = 0,
                 eps: float = 1e-10, foreach: Any = None, *, maximize: bool = False,
                 differentiable: bool = False, fused: Any = None) -> None:
        _check(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
               initial_accumulator_value=initial_accumulator_value, eps=eps)
        _refuse(differentiable=differentiable, fused=fused)
        super().__init__(params, {
            "lr": lr, "lr_decay": lr_decay, "eps": eps, "weight_decay": weight_decay,
            "initial_accumulator_value": initial_accumulator_value, "foreach": foreach,
            "maximize": maximize, "differentiable": differentiable, "fused": fused})

    def _state_init(self, group: dict) -> dict:
        return {"sum": group["initial_accumulator_value"]}

    def _update(self, group: dict, p: np.ndarray, g: np.ndarray, state: dict, step: float,
                first: bool) -> None:
        g = coupled_gradient(group, p, g)
        clr = group["lr"] / (1 + (step - 1) * group["lr_decay"])
        acc = state["sum"]
        acc += g * g
        std = np.sqrt(acc)
        std += group["eps"]
        p += -clr * g / std


__all__ = ["Adagrad", "RMSprop"]
