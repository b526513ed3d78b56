"""``parameters_to_vector`` and ``vector_to_parameters``: all parameters as one flat
vector and back, as torch.nn.utils has them.

>>> import pullback as pb
>>> m = pb.nn.Linear(2, 1)
>>> v = pb.nn.utils.parameters_to_vector(m.parameters())
>>> v.shape
(3,)
>>> pb.nn.utils.vector_to_parameters(pb.zeros(3), m.parameters())
>>> float(m.weight.abs().sum() + m.bias.abs().sum())
0.0
"""

from __future__ import annotations

from typing import Iterable

from ...autograd.grad_mode import no_grad
from ...ops.joining import cat
from ...tensor import Tensor


def _check(value: object, what: str) -> None:
    if not isinstance(value, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(value).__name__}"
                        if what == "vec" else
                        f"expected Tensor of parameters, but got: {type(value).__name__}")


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """The parameters flattened and joined in order (the gradient flows back to each)."""
    return cat([p.reshape(-1) for p in parameters])


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Copy consecutive slices of ``vec`` into the parameters, in order."""
    _check(vec, "vec")
    start = 0
    with no_grad():
        for p in parameters:
            n = p.numel()
            p.copy_(vec[start:start + n].reshape(p.shape))
            start += n
