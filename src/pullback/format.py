"""Printing tensors the way torch prints them (a port of torch/_tensor_str.py's rules:
one width per tensor, integer/fixed/scientific mode chosen from the nonzero finite
values, summarisation past ``threshold`` elements, suffixes wrapped at ``linewidth``).

>>> import pullback as pb
>>> pb.tensor([1.0, 2.5])
tensor([1.0000, 2.5000])
>>> pb.tensor([[1, 2], [3, 4]])
tensor([[1, 2],
        [3, 4]])
>>> pb.tensor(3.0, dtype=pb.float64, requires_grad=True)
tensor(3., dtype=pullback.float64, requires_grad=True)
>>> pb.tensor([1e-5, 1.0])
tensor([1.0000e-05, 1.0000e+00])
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass
class PrintOptions:
    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: bool | None = None


PRINT_OPTS = PrintOptions()
_DEFAULT_DTYPES = (np.dtype(np.float32), np.dtype(np.complex64), np.dtype(np.int64),
                   np.dtype(np.bool_))


def set_printoptions(precision: int | None = None, threshold: float | None = None,
                     edgeitems: int | None = None, linewidth: int | None = None,
                     profile: str | None = None, sci_mode: bool | None = None) -> None:
    """torch.set_printoptions: ``profile`` is 'default', 'short' or 'full'."""
    if profile is not None:
        short = profile == "short"
        PRINT_OPTS.precision = 2 if short else 4
        PRINT_OPTS.threshold = math.inf if profile == "full" else 1000
        PRINT_OPTS.edgeitems = 2 if short else 3
        PRINT_OPTS.linewidth = 80
    for name, value in (("precision", precision), ("threshold", threshold),
                        ("edgeitems", edgeitems), ("linewidth", linewidth)):
        if value is not None:
            setattr(PRINT_OPTS, name, value)
    PRINT_OPTS.sci_mode = sci_mode


class _Formatter:
    """One element width and mode for a whole (real) array."""

    def __init__(self, data: np.ndarray) -> None:
        self.floating = data.dtype.kind == "f"
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        flat = data.reshape(-1)
        if not self.floating:
            for v in flat.tolist():
                self.max_width = max(self.max_width, len(f"{v}"))
            return
        vals = flat[np.isfinite(flat) & (flat != 0)].astype(np.float64)
        if vals.size == 0:
            return
        mags = np.abs(vals)
        lo, hi = float(mags.min()), float(mags.max())
        self.int_mode = bool(np.all(vals == np.ceil(vals)))
        auto = hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4
        self.sci_mode = auto if PRINT_OPTS.sci_mode is None else PRINT_OPTS.sci_mode
        p = PRINT_OPTS.precision
        for v in vals.tolist():
            if self.sci_mode:
                width = len(f"{v:.{p}e}")
            elif self.int_mode:
                width = len(f"{v:.0f}") + 1
            else:
                width = len(f"{v:.{p}f}")
            self.max_width = max(self.max_width, width)

    def format(self, value: Any) -> str:
        p = PRINT_OPTS.precision
        if not self.floating:
            ret = f"{value}"
        elif self.sci_mode:
            ret = f"{value:{self.max_width}.{p}e}"
        elif self.int_mode:
            ret = f"{value:.0f}"
            if not (math.isinf(value) or math.isnan(value)):
                ret += "."
        else:
            ret = f"{value:.{p}f}"
        return (self.max_width - len(ret)) * " " + ret


def _element(value: Any, f1: _Formatter, f2: _Formatter | None) -> str:
    if f2 is None:
        return f1.format(value)
    real = f1.format(value.real)
    imag = (f2.format(value.imag) + "j").lstrip()
    return real + imag if imag[0] in "+-" else real + "+" + imag


def _vector(data: np.ndarray, indent: int, summarize: bool, f1: _Formatter,
            f2: _Formatter | None) -> str:
    width = f1.max_width + 2 + (0 if f2 is None else f2.max_width + 1)
    per_line = max(1, math.floor((PRINT_OPTS.linewidth - indent) / width))
    edge = PRINT_OPTS.edgeitems
    if summarize and not edge:
        items = ["..."]
    elif summarize and data.shape[0] > 2 * edge:
        items = ([_element(v, f1, f2) for v in data[:edge].tolist()] + [" ..."]
                 + [_element(v, f1, f2) for v in data[-edge:].tolist()])
    else:
        items = [_element(v, f1, f2) for v in data.tolist()]
    lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
    return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"


def _nested(data: np.ndarray, indent: int, summarize: bool, f1: _Formatter,
            f2: _Formatter | None) -> str:
    if data.ndim == 0:
        return _element(data.item(), f1, f2)
    if data.ndim == 1:
        return _vector(data, indent, summarize, f1, f2)
    edge, n = PRINT_OPTS.edgeitems, data.shape[0]
    if summarize and n > 2 * edge:
        rows = ([_nested(data[i], indent + 1, summarize, f1, f2) for i in range(edge)]
                + ["..."]
                + [_nested(data[i], indent + 1, summarize, f1, f2) for i in range(n - edge, n)])
    else:
        rows = [_nested(data[i], indent + 1, summarize, f1, f2) for i in range(n)]
    return "[" + ("," + "\n" * (data.ndim - 1) + " " * (indent + 1)).join(rows) + "]"


def _summarized(data: np.ndarray) -> np.ndarray:
    """Only the edge items of every dimension (what summarised printing shows)."""
    edge = PRINT_OPTS.edgeitems
    if data.ndim == 0:
        return data
    if data.ndim == 1:
        return np.concatenate((data[:edge], data[-edge:])) if data.shape[0] > 2 * edge else data
    if not edge:
        return data.reshape((0,) * data.ndim)
    if data.shape[0] > 2 * edge:
        rows = list(range(edge)) + list(range(data.shape[0] - edge, data.shape[0]))
    else:
        rows = range(data.shape[0])
    return np.stack([_summarized(data[i]) for i in rows])


def format_array(data: np.ndarray, indent: int = 7) -> str:
    """The bracketed body of a tensor's repr (``indent`` is the column it starts at)."""
    if data.size == 0:
        return "[]"
    summarize = data.size > PRINT_OPTS.threshold
    shown = _summarized(data) if summarize else data
    if data.dtype.kind == "c":
        f1, f2 = _Formatter(shown.real), _Formatter(shown.imag)
    else:
        f1, f2 = _Formatter(shown), None
    return _nested(data, indent, summarize, f1, f2)


def _add_suffixes(text: str, suffixes: list, indent: int) -> str:
    parts = [text]
    last_line = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if last_line + len(suffix) + 2 > PRINT_OPTS.linewidth:
            parts.append(",\n" + " " * indent + suffix)
            last_line = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last_line += len(suffix) + 2
    parts.append(")")
    return "".join(parts)


def format_tensor(t: Any) -> str:
    """``repr(t)``: torch's text with ``pullback.`` dtype names."""
    prefix = "tensor("
    data = t._data
    suffixes = []
    if data.size == 0:
        if data.ndim != 1:
            suffixes.append(f"size={tuple(data.shape)}")
        if data.dtype != np.float32:
            suffixes.append(f"dtype=pullback.{t.dtype.name}")
        body = "[]"
    else:
        if not PRINT_OPTS.edgeitems:
            suffixes.append(f"size={tuple(data.shape)}")
        if data.dtype not in _DEFAULT_DTYPES:
            suffixes.append(f"dtype=pullback.{t.dtype.name}")
        body = format_array(data, len(prefix))
    try:
        grad_fn = t._fresh()
        name = None if grad_fn is None else type(grad_fn).__name__
    except RuntimeError:  # a stale no_grad view: torch prints it this way
        name = "Invalid"
    if name is not None:
        suffixes.append(f"grad_fn=<{name}>")
    elif t._requires_grad:
        suffixes.append("requires_grad=True")
    if t._fw_tangent is not None:  # a dual tensor (autograd/forward_ad.py)
        suffixes.append(f"tangent={format_tensor(t._fw_tangent)}")
    return _add_suffixes(prefix + body, suffixes, len(prefix))
