"""``Adadelta`` (a step scaled by the ratio of running root mean squares of the
updates and of the gradients) and ``Adamax`` (Adam with the infinity norm), step for
step as torch's.

>>> import pullback as pb
>>> w = pb.tensor([1.0, -1.0], requires_grad=True)
>>> opt = pb.optim.Adamax([w], lr=0.1)
>>> (w * w).sum().backward()
>>> opt.step()
>>> w, list(opt.state[w])
(tensor([ 0.9000, -0.9000], requires_grad=True), ['step', 'exp_avg', 'exp_inf'])
"""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np

from .adam import _check_adam_args
from .optimizer import Optimizer, coupled_gradient
from .sgd import _refuse


class Adadelta(Optimizer):
    """``delta = sqrt(acc_delta + eps) / sqrt(square_avg + eps) * g``, both averages
    running with ``rho``; ``p -= lr * delta``."""

    def __init__(self, params: Iterable, lr: float = 1.0, rho: float = 0.9,
                 eps: float = 1e-6, weight_decay: float = 0, foreach: Any = None, *,
                 capturable: bool = False, maximize: bool = False,
                 differentiable: bool = False) -> None:
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        _refuse(capturable=capturable, differentiable=differentiable)
        super().__init__(params, {
            "lr": lr, "rho": rho, "eps": eps, "weight_decay": weight_decay,
            "maximize": maximize, "capturable": capturable, "foreach": foreach,
            "differentiable": differentiable})

    def _state_init(self, group: dict) -> dict:
        return {"square_avg": 0.0, "acc_delta": 0.0}

    def _update(self, group: dict, p: np.ndarray, g: np.ndarray, state: dict, step: float,
                first: bool) -> None:
        rho, eps = group["rho"], group["eps"]
        g = coupled_gradient(group, p, g)
        sq, acc = state["square_avg"], state["acc_delta"]
        sq *= rho
        sq += (1 - rho) * g * g
        delta = np.sqrt(acc + eps)
        delta /= np.sqrt(sq + eps)
        delta *= g
        acc *= rho
        acc += (1 - rho) * delta * delta
        p += -group["lr"] * delta


class Adamax(Optimizer):
    """Adam whose second moment is a decaying maximum of ``|g|``: ``u = max(beta2 *
    u, |g| + eps)``; ``p -= lr / (1 - beta1**t) * m / u``."""

    _step_dependent = True

    def __init__(self, params: Iterable, lr: float = 2e-3, betas: tuple = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, foreach: Any = None, *,
                 maximize: bool = False, differentiable: bool = False,
                 capturable: bool = False) -> None:
        _check_adam_args(lr, betas, eps, weight_decay)
        _refuse(capturable=capturable, differentiable=differentiable)
        super().__init__(params, {
            "lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
            "foreach": foreach, "maximize": maximize, "differentiable": differentiable,
            "capturable": capturable})

    def _state_init(self, group: dict) -> dict:
        return {"exp_avg": 0.0, "exp_inf": 0.0}

    def _update(self, group: dict, p: np.ndarray, g: np.ndarray, state: dict, step: float,
                first: bool) -> None:
        beta1, beta2 = group["betas"]
        g = coupled_gradient(group, p, g)
        m, u = state["exp_avg"], state["exp_inf"]
        m += (g - m) * (1 - beta1)  # torch's lerp_(g, 1 - beta1)
        u *= beta2
        np.maximum(u, np.abs(g) + group["eps"], out=u)
        p += -(group["lr"] / (1 - beta1 ** step)) * (m / u)


__all__ = ["Adadelta", "Adamax"]
