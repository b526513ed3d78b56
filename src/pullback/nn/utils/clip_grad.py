"""``clip_grad_norm_`` and ``clip_grad_value_``, as torch's: they rescale (or clamp) the
``.grad`` of the given tensors in place, outside autograd.

>>> import pullback as pb
>>> w = pb.nn.Parameter(pb.ones(4))
>>> w.grad = pb.full((4,), 3.0)
>>> pb.nn.utils.clip_grad_norm_([w], max_norm=1.0)
tensor(6.)
>>> round(float(w.grad.norm()), 4)
1.0
"""

from __future__ import annotations

import math
from typing import Iterable

import numpy as np

from ...autograd.grad_mode import no_grad
from ...tensor import Tensor


def _grads(parameters: Tensor | Iterable[Tensor]) -> list[Tensor]:
    params = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    return [p.grad for p in params if p.grad is not None]


def _norm(a: np.ndarray, p: float) -> np.ndarray:
    a = np.abs(a.ravel())
    if p == math.inf:
        return a.max() if a.size else np.zeros((), a.dtype)
    if p == 0:
        return np.asarray(np.count_nonzero(a), a.dtype)
    return np.asarray(np.sum(a ** p) ** (1.0 / p), a.dtype)


def clip_grad_norm_(parameters: Tensor | Iterable[Tensor], max_norm: float,
                    norm_type: float | str = 2.0, error_if_nonfinite: bool = False,
                    foreach: bool | None = None) -> Tensor:
    """Scale the gradients so that their total ``norm_type``-norm (the norm of the
    per-tensor norms) is at most ``max_norm``; return the total norm before clipping.
    Every gradient is multiplied by ``min(1, max_norm / (total + 1e-6))``, as torch does;
    ``foreach`` (a CUDA speed option) is accepted and ignored."""
    p = float(norm_type)
    grads = _grads(parameters)
    if not grads:
        return Tensor._make(np.zeros((), np.float32))
    norms = np.stack([_norm(g._data, p) for g in grads])
    total = _norm(norms, p)
    if error_if_nonfinite and not np.isfinite(total):
        raise RuntimeError(f"The total norm of order {p} for gradients from `parameters` is "
                           "non-finite, so it cannot be clipped. To disable this error and "
                           "scale the gradients by the non-finite norm anyway, set "
                           "`error_if_nonfinite=False`")
    coef = min(np.asarray(max_norm, total.dtype) / (total + np.asarray(1e-6, total.dtype)), 1.0)
    with no_grad():
        for g in grads:
            g.mul_(float(coef))
    return Tensor._make(np.asarray(total))


def clip_grad_value_(parameters: Tensor | Iterable[Tensor], clip_value: float,
                     foreach: bool | None = None) -> None:
    """Clamp every gradient into ``[-clip_value, clip_value]`` in place."""
    clip = float(clip_value)
    with no_grad():
        for g in _grads(parameters):
            g.clamp_(-clip, clip)
