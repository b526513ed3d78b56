"""Printing tensors the way torch prints them.

>>> import pullback as pb
>>> pb.tensor([1.0, 2.5])
tensor([1.0000, 2.5000])
>>> pb.tensor([[1, 2], [3, 4]])
tensor([[1, 2],
        [3, 4]])
>>> pb.tensor(3.0, dtype=pb.float64, requires_grad=True)
tensor(3., dtype=pullback.float64, requires_grad=True)
"""

from __future__ import annotations

from typing import Any

import numpy as np

_DEFAULT_DTYPES = (np.dtype(np.float32), np.dtype(np.int64), np.dtype(np.bool_))
PRECISION = 4


def _float_formatter(data: np.ndarray):
    finite = data[np.isfinite(data)]
    integral = finite.size == 0 or bool(np.all(finite == np.round(finite)))
    big = finite.size and (np.max(np.abs(finite)) >= 1e8 or
                           (np.min(np.abs(finite[finite != 0])) < 1e-4 if np.any(finite) else False))
    if big:
        fmt = lambda v: f"{v:.{PRECISION}e}"
    elif integral:
        fmt = lambda v: f"{v:.0f}." if np.isfinite(v) else str(v)
    else:
        fmt = lambda v: f"{v:.{PRECISION}f}" if np.isfinite(v) else str(v)
    width = max((len(fmt(v)) for v in data.flat), default=0)
    return lambda v: fmt(v).rjust(width)


def format_array(data: np.ndarray, prefix: str = "tensor(") -> str:
    if data.dtype.kind == "f":
        formatter = {"float_kind": _float_formatter(data.astype(np.float64))}
    else:
        formatter = None
    if data.size == 0:
        return f"[]" if data.ndim == 1 else f"size={list(data.shape)}"
    return np.array2string(data, separator=", ", prefix=prefix, formatter=formatter,
                           max_line_width=80, threshold=1000)


def format_tensor(t: Any) -> str:
    body = format_array(t._data)
    suffix = []
    if t._data.dtype not in _DEFAULT_DTYPES:
        suffix.append(f"dtype=pullback.{t.dtype.name}")
    if t._grad_fn is not None:
        suffix.append(f"grad_fn=<{t._grad_fn.name().split('::')[-1]}>")
    elif t._requires_grad:
        suffix.append("requires_grad=True")
    return "tensor(" + ", ".join([body] + suffix) + ")"
