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
    """``p = p * (1 - lambd * eta) - eta * g``, where ``eta`` (``lr`` at first) becomes
    ``lr / (1 + lambd * lr * t) ** alpha`` after step t; ``ax`` is the running average
    of ``p`` from step ``t0`` on (before it, ``p`` itself), weighted by ``mu = 1 /
    max(1, t - t0)``. Each parameter keeps its ``eta`` and ``mu`` (in float32, as torch
    keeps them) in arrays of its size, so a rate a scheduler changes takes effect as in
    torch; its state dict has them as torch's scalars."""

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
        return {"eta": float(np.float32(group["lr"])), "mu": 1.0, "ax": 0.0}

    def _update(self, group: dict, p: np.ndarray, g: np.ndarray, state: dict, step: float,
                first: bool) -> None:
        if p.size == 0:
            return
        lr, lambd = group["lr"], group["lambd"]
        g = coupled_gradient(group, p, g)
        eta, mu = float(state["eta"][0]), float(state["mu"][0])  # (one value per block)
        p *= 1 - lambd * eta
        p += -eta * g
        ax = state["ax"]
        if mu != 1:
            ax += (p - ax) * mu
        else:
            np.copyto(ax, p)
        state["eta"][...] = np.float32(lr / ((1 + lambd * lr * step) ** group["alpha"]))
        state["mu"][...] = np.float32(1 / max(1, step - group["t0"]))

    def state_dict(self) -> dict:
        """torch's: ``eta`` and ``mu`` as float32 scalars."""
        out = super().state_dict()
        for s in out["state"].values():
            for name in ("eta", "mu"):
                if name in s:
                    value = np.ravel(s[name]._data).real
                    s[name] = Tensor._make(np.array(value[0] if value.size else 1.0,
                                                    np.float32))
        return out

    def _load_param_state(self, param: Tensor, value: dict) -> None:
        value = dict(value)
        for name in ("eta", "mu"):
            if name in value:
                x = float(value[name])
                fill = complex(x, x) if param._data.dtype.kind == "c" else x
                value[name] = np.full(param._data.shape, fill, param._data.dtype)
        super()._load_param_state(param, value)


__all__ = ["ASGD", "Rprop"]
