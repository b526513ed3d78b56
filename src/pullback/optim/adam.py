"""``Adam`` and ``AdamW`` (amsgrad, weight decay, ``maximize``), and Adam's variants
``NAdam`` (Nesterov momentum with momentum decay) and ``RAdam`` (the variance of the
adaptive rate rectified), step for step as torch's.

>>> import pullback as pb
>>> w = pb.tensor([1.0, -1.0], requires_grad=True)
>>> opt = pb.optim.Adam([w], lr=0.1)
>>> (w * w).sum().backward()
>>> opt.step()
>>> w, opt.state[w]["step"]
(tensor([ 0.9000, -0.9000], requires_grad=True), tensor(1.))
"""

from __future__ import annotations

import threading
from typing import Any, Iterable

import numpy as np

from ..tensor import Tensor
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
        _check_adam_args(lr, betas, eps, weight_decay)
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
        lr, (beta1, beta2) = group["lr"], group["betas"]
        g, m, v = moments(group, p, g, state)
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


def _check_adam_args(lr: float, betas: tuple, eps: float, weight_decay: float) -> None:
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")
    if not 0.0 <= eps:
        raise ValueError(f"Invalid epsilon value: {eps}")
    for i in (0, 1):
        if not 0.0 <= betas[i] < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {betas[i]}")
    if not 0.0 <= weight_decay:
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")


def moments(group: dict, p: np.ndarray, g: np.ndarray, state: dict) -> tuple:
    """Adam's step before its update (NAdam's and RAdam's too): the weight decay
    (coupled into the gradient, or decoupled into ``p``), then the two moving averages
    in place; returns (the gradient used, the averages)."""
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
    return g, m, v


class _AdamVariant(Optimizer):
    """What NAdam and RAdam share with Adam: its state."""

    _step_dependent = True

    def _state_init(self, group: dict) -> dict:
        return {"exp_avg": 0.0, "exp_avg_sq": 0.0}

class NAdam(_AdamVariant):
    """Adam with Nesterov momentum whose coefficient ``mu_t = beta1 * (1 - 0.5 *
    0.96 ** (t * momentum_decay))`` warms up; ``p -= lr * ((1 - mu_t) / (1 - prod mu) *
    g + mu_{t+1} / (1 - prod mu * mu_{t+1}) * m) / (sqrt(v / (1 - b2**t)) + eps)``."""

    def __init__(self, params: Iterable, lr: float = 2e-3, betas: tuple = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, momentum_decay: float = 4e-3,
                 decoupled_weight_decay: bool = False, *, foreach: Any = None,
                 maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        _check_adam_args(lr, betas, eps, weight_decay)
        if not 0.0 <= momentum_decay:
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        _refuse(capturable=capturable, differentiable=differentiable)
        super().__init__(params, {
            "lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay,
            "momentum_decay": momentum_decay, "decoupled_weight_decay": decoupled_weight_decay,
            "maximize": maximize, "foreach": foreach, "capturable": capturable,
            "differentiable": differentiable})

    def _update(self, group: dict, p: np.ndarray, g: np.ndarray, state: dict, step: float,
                first: bool) -> None:
        g, m, v = moments(group, p, g, state)
        lr, (beta1, beta2), decay = group["lr"], group["betas"], group["momentum_decay"]
        product = float(_mu_product(beta1, decay, step))
        denom = np.sqrt(v / (1 - beta2 ** step))
        denom += group["eps"]
        p += -lr * (1.0 - _mu(beta1, decay, step)) / (1.0 - product) * g / denom
        mu_next = _mu(beta1, decay, step + 1)
        p += -lr * mu_next / (1.0 - product * mu_next) * m / denom

    def state_dict(self) -> dict:
        """torch's: each parameter's ``mu_product`` after its ``step`` (a function of the
        step count here, so loading one takes it from the step)."""
        out = super().state_dict()
        group_of = {i: g for g in out["param_groups"] for i in g["params"]}
        for k, s in out["state"].items():
            if "step" in s:
                g = group_of[k]
                mu = _mu_product(g["betas"][0], g["momentum_decay"], float(s["step"]))
                out["state"][k] = {"step": s["step"], "mu_product": Tensor._make(mu),
                                   **{n: v for n, v in s.items() if n != "step"}}
        return out


def _mu(beta1: float, decay: float, t: float) -> float:
    """NAdam's momentum coefficient at step ``t``."""
    return beta1 * (1.0 - 0.5 * 0.96 ** (t * decay))


_PRODUCTS: dict = {}  # (beta1, momentum_decay) -> the products at steps 0, 1, 2, ...
_PRODUCTS_LOCK = threading.Lock()


def _mu_product(beta1: float, decay: float, step: float) -> np.ndarray:
    """The product of the coefficients up to ``step``, in float32 as torch keeps it
    (each step's product computed once per pair of options)."""
    with _PRODUCTS_LOCK:
        products = _PRODUCTS.setdefault((beta1, decay), [np.ones((), np.float32)])
        while len(products) <= int(step):
            products.append(products[-1] * np.float32(_mu(beta1, decay, len(products))))
        return products[int(step)]


class RAdam(_AdamVariant):
    """Adam whose adaptive rate is used only once the variance of its estimate is
    bounded (``rho_t > 5``), rectified by ``sqrt((rho_t-4)(rho_t-2) rho_inf /
    ((rho_inf-4)(rho_inf-2) rho_t))``; before that, momentum SGD with bias correction."""

    def __init__(self, params: Iterable, lr: float = 1e-3, betas: tuple = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0,
                 decoupled_weight_decay: bool = False, *, foreach: Any = None,
                 maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        _check_adam_args(lr, betas, eps, weight_decay)
        _refuse(capturable=capturable, differentiable=differentiable)
        super().__init__(params, {
            "lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay,
            "maximize": maximize, "foreach": foreach, "capturable": capturable,
            "decoupled_weight_decay": decoupled_weight_decay,
            "differentiable": differentiable})

    def _update(self, group: dict, p: np.ndarray, g: np.ndarray, state: dict, step: float,
                first: bool) -> None:
        g, m, v = moments(group, p, g, state)
        lr, (beta1, beta2) = group["lr"], group["betas"]
        bc1, bc2 = 1 - beta1 ** step, 1 - beta2 ** step
        rho_inf = 2 / (1 - beta2) - 1
        rho = rho_inf - 2 * step * beta2 ** step / bc2
        if rho > 5.0:
            rect = ((rho - 4) * (rho - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho)) ** 0.5
            p -= m / bc1 * lr * (bc2 ** 0.5 / (np.sqrt(v) + group["eps"])) * rect
        else:
            p -= m / bc1 * lr


__all__ = ["Adam", "AdamW", "NAdam", "RAdam"]
