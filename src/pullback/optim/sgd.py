"""``SGD``: stochastic gradient descent with momentum, dampening, Nesterov momentum,
weight decay and ``maximize``, step for step as torch's.

>>> import pullback as pb
>>> w = pb.tensor([1.0], requires_grad=True)
>>> opt = pb.optim.SGD([w], lr=0.1, momentum=0.9)
>>> for _ in range(2):
...     opt.zero_grad()
...     (w * w).sum().backward()
...     opt.step()
>>> w, opt.state[w]["momentum_buffer"]
(tensor([0.4600], requires_grad=True), tensor([3.4000]))
"""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np

from .optimizer import Optimizer, coupled_gradient


class SGD(Optimizer):
    """``p -= lr * d`` where ``d`` is the gradient (plus ``weight_decay * p``), or its
    momentum buffer ``b = momentum * b + (1 - dampening) * d`` (Nesterov: ``d +
    momentum * b``)."""

    _state_step = False

    def __init__(self, params: Iterable, lr: float = 1e-3, momentum: float = 0,
                 dampening: float = 0, weight_decay: float = 0, nesterov: bool = False, *,
                 maximize: bool = False, foreach: Any = None, differentiable: bool = False,
                 fused: Any = None) -> None:
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        _refuse(differentiable=differentiable, fused=fused)
        super().__init__(params, {"lr": lr, "momentum": momentum, "dampening": dampening,
                                  "weight_decay": weight_decay, "nesterov": nesterov,
                                  "maximize": maximize, "foreach": foreach,
                                  "differentiable": differentiable, "fused": fused})

    def _state_init(self, group: dict) -> dict:
        return {"momentum_buffer": None} if group["momentum"] != 0 else {}

    def _update(self, group: dict, p: np.ndarray, g: np.ndarray, state: dict, step: float,
                first: bool) -> None:
        g = coupled_gradient(group, p, g)
        momentum = group["momentum"]
        if momentum != 0:
            buf = state["momentum_buffer"]
            if first:
                np.copyto(buf, g)
            else:
                buf *= momentum
                buf += (1 - group["dampening"]) * g
            g = g + momentum * buf if group["nesterov"] else buf
        p -= group["lr"] * g


def _refuse(**options: Any) -> None:
    """torch's options that pullback's optimizers do not have (a CUDA kernel, a
    differentiable update) must stay off."""
    for name, value in options.items():
        if value:
            raise ValueError(f"{name}=True is not supported by pullback's optimizers")


__all__ = ["SGD"]
