"""The text codegen writes for values and comments: literals of plain Python values,
numpy scalars and dtypes (no user object's ``repr``: other values are bound as constants),
and the one-line comment naming the user's source line over each block.
"""

from __future__ import annotations

import functools
import math
import os
from typing import Any

import numpy as np

#: numpy scalar types written inline, as ``np.<type>(<its Python value>)``
_NP_SCALARS = {t: f"np.{t.__name__}" for t in (
    np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
    np.uint64, np.float16, np.float32, np.float64, np.complex64, np.complex128)}
_PLAIN = (type(None), type(Ellipsis), bool, int, float, complex, str, bytes)
#: subclasses of these are written as their base value (an IntEnum as its int), taken by
#: the base's own conversion, which runs no code of the subclass
_TO_BASE = {int: int.__int__, float: float.__float__, str: str.__str__}
_MAX_INT_BITS = 64  # larger ints are bound: their text can be long (or over str's limit)


def _plain_literal(p: Any) -> str | None:
    """Source text for a value of a ``_PLAIN`` type (or a subclass in ``_TO_BASE``);
    None for anything else and for values better bound as constants."""
    tp = type(p)
    if tp not in _PLAIN:
        base = next((b for b in _TO_BASE if issubclass(tp, b)), None)
        if base is None or issubclass(tp, np.generic):  # (numpy's floats: _NP_SCALARS)
            return None
        p = _TO_BASE[base](p)
        tp = type(p)
        if tp is not base:
            return None
    if p is None or tp is bool or tp is str or tp is bytes:
        return repr(p)
    if p is Ellipsis:
        return "..."
    if tp is int:
        return repr(p) if p.bit_length() <= _MAX_INT_BITS else None
    if tp is float:
        return repr(p) if math.isfinite(p) else f"float('{p}')"
    # complex: not its repr, whose "(-0-0j)" loses the sign of the real zero
    return f"complex({_plain_literal(p.real)}, {_plain_literal(p.imag)})"


_NUMBER_CHARS = 8  # the longest number written in a name (0.03125, 1e-05)


def _number_hint(p: Any, dtype: np.dtype) -> str | None:
    """The name of a number of ``dtype`` that says its value (``f32_1``, ``f64_neg2``,
    ``f32_0_5``); None where the text is long (a reader would not see 1/3 in a name)."""
    if type(p) not in (bool, int, float):
        return None
    text = repr(p) if type(p) is bool else repr(float(p))
    if type(p) is not bool and float(p).is_integer() and abs(p) < 1e6 and text != "-0.0":
        text = repr(int(p))
    if len(text) > _NUMBER_CHARS:
        return None
    return f"{dtype.kind}{dtype.itemsize * 8}_" + text.replace("e-", "e_").replace(
        "-", "neg").replace(".", "_").replace("+", "")


def _dtype_literal(d: np.dtype) -> str | None:
    """``np.float32`` for a plain numpy dtype; None for others (byte-swapped, with
    metadata, structured, ...)."""
    t = getattr(np, d.name, None)
    ok = d.name.isidentifier() and isinstance(t, type) and d.metadata is None
    return f"np.{d.name}" if ok and np.dtype(t) == d else None


def _is_chain(p: Any) -> bool:
    return bool(p) and isinstance(p[0], tuple) and p[0] and hasattr(p[0][0], "forward")


@functools.lru_cache(maxsize=4096)
def _comment_text(src: Any, label: str | None) -> str:
    where = f"{os.path.basename(src.filename)}:{src.lineno}"
    text = f"# {label}: {src.text}  ({where})" if label else f"# {where}: {src.text}"
    return "".join(c if c.isprintable() else " " for c in text)  # one line, however read


def _comment(e: Any, backward: str | None) -> str | None:
    src = e.block.src if backward and e.block is not None else e.src
    return None if src is None else _comment_text(src, backward)
