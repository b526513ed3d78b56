"""``Adam`` and ``AdamW`` (amsgrad, weight decay, ``maximize``), step for step as
torch's.

>>> import pullback as pb
>>> w = pb.tensor([1.0, -1.0], requires_grad=True)
>>> opt = pb.optim.Adam([w], lr=0.1)
>>> (w * w).sum().backward()
>>> opt.step()
>>> w, opt.state[w]["step"]
(tensor([ 0.9000, -0.9000], requires_grad=True), tensor(1.))
"""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np

from .optimizer import Optimizer
from .sgd import _refuse


class Adam(Optimizer):
    """Moving averages of the gradient and its square, bias-corrected:
    ``p -= lr / (1 - b1**t) * m / (sqrt(v) / sqrt(1 - b2**t) + eps)``."""

    _step_dependent = True

    def __init__(self, params: Iterable, lr: float = 1e-3, betas: tuple = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, amsgrad: bool = False, *,
                 foreach: Any = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False, fused: Any = None,
                 decoupled_weight_decay: bool = False) -> None:
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        for i in (0, 1):
            if not 0.0 <= betas[i] < 1.0:
                raise ValueError(f"Invalid beta parameter at index {i}: {betas[i]}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        _refuse(capturable=capturable, differentiable=differentiable, fused=fused)
        super().__init__(params, {
            "lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay,
            "amsgrad": amsgrad, "maximize": maximize, "foreach": foreach,
            "capturable": capturable, "differentiable": differentiable, "fused": fused,
            "decoupled_weight_decay": decoupled_weight_decay})

    def _state_init(self, group: dict) -> dict:
        names = {"exp_avg": 0.0, "exp_avg_sq": 0.0}
        if group["amsgrad"]:
            names["max_exp_avg_sq"] = 0.0
        return names

    def _update(self, group: dict, p: np.ndarray, g: np.ndarray, state: dict, step: float,
                first: bool) -> None:
        lr, (beta1, beta2), wd = group["lr"], group["betas"], group["weight_decay"]
        if group["maximize"]:
            g = -g
        if wd != 0:
            if group["decoupled_weight_decay"]:
                p *= 1 - lr * wd
            else:
                g = g + wd * p
        m, v = state["exp_avg"], state["exp_avg_sq"]
        m += (g - m) * (1 - beta1)  # torch's lerp_(g, 1 - beta1)
        v *= beta2
        v += (1 - beta2) * g * g
        step_size = lr / (1 - beta1 ** step)
        bc2_sqrt = (1 - beta2 ** step) ** 0.5
        if group["amsgrad"]:
            v = np.maximum(state["max_exp_avg_sq"], v, out=state["max_exp_avg_sq"])
        denom = np.sqrt(v)
        denom /= bc2_sqrt
        denom += group["eps"]
        p += -step_size * m / denom


class AdamW(Adam):
    """Adam with decoupled weight decay (``p *= 1 - lr * weight_decay`` first)."""

    def __init__(self, params: Iterable, lr: float = 1e-3, betas: tuple = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 1e-2, amsgrad: bool = False, *,
                 maximize: bool = False, foreach: Any = None, capturable: bool = False,
                 differentiable: bool = False, fused: Any = None) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach,
                         maximize=maximize, capturable=capturable,
                         differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)


__all__ = ["Adam", "AdamW"]
