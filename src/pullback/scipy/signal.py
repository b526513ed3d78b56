"""``scipy.signal.convolve`` with derivatives: the N-dimensional convolution of two
arrays of the same number of dimensions, modes "full", "same" and "valid", computed
directly (``method`` is accepted and ignored: scipy's "fft" gives the same values to
rounding) as the op table's ``convolution`` (torch's, im2col and a product) of the
zero-padded first array with the flipped second, so that its gradient is a
correlation (the convolution's own rules).

>>> import pullback as pb
>>> from pullback.scipy import signal
>>> x = pb.tensor([1.0, 2.0, 3.0], dtype=pb.float64, requires_grad=True)
>>> signal.convolve(x, [1.0, -1.0])
tensor([ 1.,  1.,  1., -3.], dtype=pullback.float64, grad_fn=<SelectBackward0>)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ops.convolution import convolution
from ..ops.reshaping import flip_op
from ..ops.shape import reshape
from .special import _common, _float

__all__ = ["convolve"]


def _check(in1: Any, in2: Any, mode: str) -> bool:
    """scipy's checks; True when "valid" needs the operands swapped."""
    if np.ndim(in1) != np.ndim(in2):
        raise ValueError("in1 and in2 should have the same dimensionality")
    if mode not in ("full", "same", "valid"):
        raise ValueError("Acceptable mode flags are 'valid', 'same', or 'full'.")
    if mode != "valid":
        return False
    s1, s2 = np.shape(in1), np.shape(in2)
    if all(a >= b for a, b in zip(s1, s2)):
        return False
    if all(a <= b for a, b in zip(s1, s2)):
        return True
    raise ValueError("For 'valid' mode, one must be at least as large as the other in "
                     "every dimension")


def convolve(in1: Any, in2: Any, mode: str = "full", method: str = "auto") -> Any:
    """The N-dimensional convolution of ``in1`` and ``in2`` (scipy's), differentiable in
    both; "same" is the centre of "full" with ``in1``'s shape, "valid" the part where
    the smaller operand overlaps the larger completely.

    >>> convolve([1.0, 2.0, 3.0], [0.0, 1.0, 0.5], mode="same")
    array([1. , 2.5, 4. ])
    """
    in1, in2 = _common(_float(in1), _float(in2))
    swap = _check(in1, in2, mode)
    shape1 = np.shape(in1)
    if swap:
        in1, in2 = in2, in1
    d = np.ndim(in1)
    if d == 0:
        return in1 * in2
    if 0 in np.shape(in1) or 0 in np.shape(in2):
        return np.zeros(0, dtype=np.result_type(in1, in2))  # (scipy: an empty array)
    kernel = np.shape(in2)
    x = reshape(in1, (1, 1) + tuple(np.shape(in1)))
    w = reshape(flip_op(in2, dims=tuple(range(d))), (1, 1) + tuple(kernel))
    full = convolution(x, w, None, stride=(1,) * d, padding=tuple(k - 1 for k in kernel),
                       dilation=(1,) * d, transposed=False, output_padding=(0,) * d,
                       groups=1)[0, 0]
    if mode == "full":
        return full
    if mode == "same":
        shape = np.shape(full)
        starts = [(f - s) // 2 for f, s in zip(shape, shape1)]
        return full[tuple(slice(a, a + s) for a, s in zip(starts, shape1))]
    return full[tuple(slice(k - 1, n) for k, n in zip(kernel, np.shape(in1)))]
