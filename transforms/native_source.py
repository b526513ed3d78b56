"""The statements of a native loop's equations (``native_loops.py``; ``native_body.py``
writes the loop around them): plain loops over the elements of each equation.

Shapes are static, so every equation is written as plain loops over its elements: a
run of elementwise equations of one shape shares a loop nest (``Nest``), where values
read nowhere else are scalars; a product sums each element in a register; other
temporaries are buffers the caller makes once per call. ``_lines`` returns None for an
equation it does not write (the scan then stays a Python loop).
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

from pullback.ir import Eqn, Var

FLOATS = (np.dtype(np.float32), np.dtype(np.float64))

#: op name -> one element of its result ({0}, {1}, {2}: its operands' elements)
ELEMENTWISE = {
    "add": "{0} + {1}", "sub": "{0} - {1}", "rsub": "{1} - {0}", "mul": "{0} * {1}",
    "div": "{0} / {1}", "neg": "-{0}", "gt": "{0} > {1}", "lt": "{0} < {1}",
    "ge": "{0} >= {1}", "le": "{0} <= {1}", "where": "({1} if {0} else {2})",
    "tanh": "math.tanh({0})", "exp": "math.exp({0})", "log": "math.log({0})",
    "sin": "math.sin({0})", "cos": "math.cos({0})", "sqrt": "math.sqrt({0})",
    "abs": "abs({0})", "log1p": "math.log1p({0})", "expm1": "math.expm1({0})",
    "reciprocal": "1.0 / {0}", "sigmoid": "1.0 / (1.0 + math.exp(-{0}))",
    "relu": "({0} if not {0} < 0.0 else 0.0)",  # (NaN stays NaN, as np.maximum keeps it)
    "maximum": "({0} if {0} >= {1} or {0} != {0} else {1})",  # (NaN wins, as in numpy)
    "minimum": "({0} if {0} <= {1} or {0} != {0} else {1})",
    "eq": "{0} == {1}", "ne": "{0} != {1}",
    "expand": "{0}", "clone": "{0}"}
#: the item ops that write: ``x[i, j] = v`` and ``x[i, j] += v``
UPDATES = {"item_put": "=", "item_add": "+="}
#: ops that only add or drop axes of length one: copies, element by element
REGRID = ("unsqueeze", "squeeze", "squeeze_all", "squeeze_dims", "reshape", "view",
          "reshape_alias")


def _lines(e: Eqn, out: str, a: list) -> list[str] | None:
    """Statements computing ``e`` into ``out`` from operands ``a`` (names or numbers),
    as loops over its static shape; None: not written natively."""
    name, shape = e.op.name, e.out.shape
    if name in ELEMENTWISE and (name in ("expand", "clone") or not e.params):
        ops = [x if type(v) is not Var else _at(x, v.shape, shape)
               for x, v in zip(a, e.inputs)]
        return _fill(out, e.out, ELEMENTWISE[name].format(*ops))
    if name in UPDATES:
        x = e.inputs[0]
        if len(e.params["where"]) != len(x.shape) or np.ndim(e.inputs[-1]) != 0:
            return None  # (a whole row's write: not written natively)
        copy = _fill(out, e.out, _at(a[0], x.shape, shape))
        got = _update(e, out, a, out)
        return None if got is None else copy + got
    if name == "zeros":
        return _zeros(out, e.out)
    if name in REGRID:
        at = _regrid(a[0], e.inputs[0].shape, shape)
        return None if at is None else _fill(out, e.out, at)
    if name == "mm" and all(len(v.shape) == 2 for v in e.inputs):
        return _matmul(out, e.out, a, e.inputs[0].shape[1])
    if name == "index_select" and math.prod(np.shape(e.inputs[1])) == 1:
        return _take(out, e.out, a, e.inputs[0].shape, e.params["dim"], np.ndim(e.inputs[1]))
    if name == "item":
        return _item(out, e, a)
    if name == "select" and _picks(e.params["index"], e.inputs[0].shape):
        picks = [str(k % n) for k, n in zip(e.params["index"], e.inputs[0].shape)]
        return _fill(out, e.out, f"{a[0]}[{', '.join(picks + _idx(len(shape)))}]")
    if name == "t" and len(shape) == 2:
        return [f"{out} = {a[0]}.T"]
    x = e.inputs[0] if e.inputs else None
    if name == "sum_all":
        return _reduce(out, e.out, a[0], x.shape, [None] * len(x.shape))
    if name == "sum_to":
        lead = len(x.shape) - len(shape)
        where = [None if j < lead or shape[j - lead] != n else j - lead
                 for j, n in enumerate(x.shape)]
        return _reduce(out, e.out, a[0], x.shape, where)
    if name == "sum_dim":
        dims = {d % len(x.shape) for d in e.params["dim"]} if x.shape else set()
        kept = [j for j in range(len(x.shape)) if j not in dims]
        where = [kept.index(j) if j in kept else None for j in range(len(x.shape))]
        if e.params["keepdim"]:
            where = [None if j in dims else j for j in range(len(x.shape))]
        return _reduce(out, e.out, a[0], x.shape, where)
    return None


def _picks(index: Any, shape: tuple) -> bool:
    """An index of ints only, each within its axis (``x[2, -1]``)."""
    return type(index) is tuple and len(index) <= len(shape) and all(
        type(k) is int and -n <= k < n for k, n in zip(index, shape))


def _index(e: Eqn, ints: list, tag: str) -> tuple | None:
    """The lines checking the index of an item op (ops/items.py: an int for every axis
    it names, the traced ones among the operands ``ints``: numpy's wrap of a negative
    index, its IndexError out of range) and its parts (None: an axis taken whole)."""
    it, lines, parts = iter(ints), [], []
    for d, (w, n) in enumerate(zip(e.params["where"], e.inputs[0].shape)):
        if type(w) is slice:
            return None
        if w is not None:  # (a static index the trace already checked)
            parts.append(str(w % n))
            continue
        k = f"k{d}_{tag}"
        lines += [f"{k} = {next(it)}", f"if {k} < -{n} or {k} >= {n}:",
                  f"    raise IndexError('index out of bounds for axis {d} with size {n}')",
                  f"if {k} < 0:", f"    {k} += {n}"]
        parts.append(k)
    return lines, parts


def _item(out: str, e: Eqn, a: list) -> list | None:
    """``x[i, 2]``: its element (or the sub-array it names, element by element)."""
    got = _index(e, a[1:], out)
    if got is None:
        return None
    lines, parts = got
    return lines + _fill(out, e.out, f"{a[0]}[{', '.join(parts + _idx(len(e.out.shape)))}]")


def _update(e: Eqn, target: str, a: list, tag: str) -> list | None:
    """``target[i, j] = v`` (item_put) or ``+= v`` (item_add), in place."""
    got = _index(e, a[1:-1], tag)
    if got is None:
        return None
    lines, parts = got
    return lines + [f"{target}[{', '.join(parts)}] {UPDATES[e.op.name]} {a[-1]}"]


def _take(out: str, v: Var, a: list, shape: tuple, dim: int, kept: int) -> list:
    """``np.take(x, k, axis=dim)`` for one index ``k`` (a step's counter; ``kept``: 1
    when it is a vector of one, whose axis the result keeps): numpy's wrap of a
    negative index, its IndexError out of range."""
    d, n = dim % len(shape), shape[dim % len(shape)]
    k = f"k_{out}"
    idx = [f"j{j}" for j in range(d)] + [k] + [f"j{j}" for j in range(d + kept, len(v.shape))]
    first = f"{a[1]}[0]" if kept and re.fullmatch(r"[A-Za-z_][\w\[\]]*", a[1]) else a[1]
    return [f"{k} = {first}", f"if {k} < -{n} or {k} >= {n}:",
            f"    raise IndexError('index out of bounds for axis {d} with size {n}')",
            f"if {k} < 0:", f"    {k} += {n}"] + _fill(out, v, f"{a[0]}[{', '.join(idx)}]")


def _idx(rank: int) -> list[str]:
    return [f"j{d}" for d in range(rank)]


def _at(x: str, shape: tuple, out: tuple) -> str:
    """Operand ``x`` of ``shape`` at the element the loops over ``out`` stand on
    (numpy's broadcasting: axes aligned on the right, an axis of one stays at 0)."""
    if not shape:
        return x
    lead = len(out) - len(shape)
    idx = ["0" if n == 1 and out[lead + k] != 1 else f"j{lead + k}"
           for k, n in enumerate(shape)]
    return f"{x}[{', '.join(idx)}]"


def _regrid(x: str, shape: tuple, out: tuple) -> str | None:
    """``x`` of ``shape`` at the element of ``out`` the loops stand on, when the two
    differ only by axes of length one (None otherwise)."""
    if not shape:
        return x
    mine = [d for d, n in enumerate(out) if n != 1]
    theirs = [d for d, n in enumerate(shape) if n != 1]
    if [out[d] for d in mine] != [shape[d] for d in theirs]:
        return None
    idx = ["0"] * len(shape)
    for d, k in zip(theirs, mine):
        idx[d] = f"j{k}"
    return f"{x}[{', '.join(idx)}]"


def _loops(shape: tuple, inner: list[str]) -> list[str]:
    """``for j0 in range(n0): for j1 ...: inner``, indented."""
    heads = ["    " * d + f"for j{d} in range({n}):" for d, n in enumerate(shape)]
    return heads + ["    " * len(shape) + line for line in inner]


def _zero(v: Var) -> str:
    """A scalar zero of ``v``'s dtype."""
    if v.dtype.kind in "bi":
        return "False" if v.dtype.kind == "b" else "0"
    return "0.0" if v.dtype == np.float64 else f"np.{v.dtype.name}(0.0)"


def _zeros(out: str, v: Var) -> list[str]:
    """``out`` (a buffer the caller made, or a scalar) set to zeros."""
    return _fill(out, v, _zero(v))


def _fill(out: str, v: Var, element: str) -> list:
    """``out`` element by element: a ``Nest``, which joins its neighbours of the same
    shape (one loop nest computes a run of elementwise equations)."""
    if v.shape == ():
        return [f"{out} = {element}"]
    return [Nest(v.shape, f"{out}[{', '.join(_idx(len(v.shape)))}] = {element}")]


class Nest:
    """One statement run at every element of ``shape``. Consecutive nests of one
    shape become one loop nest: each statement reads the values before it at its own
    element (same shape) or at one whose indices are smaller (an axis of one, index
    0), both computed already, and no nest writes a value that was read before it."""

    __slots__ = ("shape", "line")

    def __init__(self, shape: tuple, line: str) -> None:
        self.shape, self.line = shape, line


def _render(items: list) -> tuple[list[str], set]:
    """Lines and nests as lines, each run of nests of one shape as one loop nest; and
    the temporaries that became scalars (``_registers``)."""
    runs: list = []
    for item in items:
        if type(item) is Nest and runs and type(runs[-1]) is list and \
                runs[-1][0].shape == item.shape:
            runs[-1].append(item)
        else:
            runs.append([item] if type(item) is Nest else item)
    gone: set = set()
    lines: list[str] = []
    for k, run in enumerate(runs):
        if type(run) is not list:
            lines.append(run)
            continue
        others = " ".join(r if type(r) is str else " ".join(n.line for n in r)
                          for r in runs[:k] + runs[k + 1:])
        inner, here = _registers([n.line for n in run], run[0].shape, others)
        gone |= here
        lines += _loops(run[0].shape, inner)
    return lines, gone


def _registers(inner: list[str], shape: tuple, others: str) -> tuple[list[str], set]:
    """A temporary written and read only in this nest, at its own element, becomes a
    scalar (no buffer, no store)."""
    at = f"[{', '.join(_idx(len(shape)))}]"
    gone = set()
    for line in inner:
        name = line.split("[", 1)[0]
        if not (re.fullmatch(r"t\d+", name) and line.startswith(name + at + " = ")):
            continue
        text = "\n".join(inner)
        if re.search(rf"\b{name}\b", others) or \
                len(re.findall(rf"\b{name}\b", text)) != text.count(name + at):
            continue
        inner = [re.sub(rf"\b{re.escape(name + at)}", "v_" + name, x) for x in inner]
        gone.add(name)
    return inner, gone


def _matmul(out: str, v: Var, a: list, k: int) -> list[str]:
    """``a @ b`` for 2-D operands, each element a sum over ``k`` in a register (five
    times quicker here than adding rows of ``b`` into the result, which numba cannot
    prove does not overlap ``b``)."""
    n, m = v.shape
    return [f"for j0 in range({n}):", f"    for j1 in range({m}):",
            f"        acc = {_zero(v)}", f"        for j2 in range({k}):",
            f"            acc += {a[0]}[j0, j2] * {a[1]}[j2, j1]",
            f"        {out}[j0, j1] = acc"]


def _reduce(out: str, v: Var, x: str, shape: tuple, where: list) -> list[str]:
    """A sum of ``x`` into ``out``: input axis ``d`` goes to the result's axis
    ``where[d]`` (None: summed over)."""
    if not shape:
        return [f"{out} = {x}"]
    to = ["0"] * len(v.shape)
    for d, w in enumerate(where):
        if w is not None:
            to[w] = f"j{d}"
    target = f"{out}[{', '.join(to)}]" if v.shape else out
    return _zeros(out, v) + _loops(shape, [
        f"{target} += {x}[{', '.join(_idx(len(shape)))}]"])


def _copy(to: str, x: str, shape: tuple) -> list[str]:
    idx = ", ".join(_idx(len(shape)))
    return _loops(shape, [f"{to}[{idx}] = {x}[{idx}]"])


def _store(stack: str, x: str, shape: tuple, step: str = "step") -> list:
    """``stack[step] = x``, element by element (numba compiles a slice assignment's
    checks slowly)."""
    idx = ", ".join(_idx(len(shape)))
    return [Nest(shape, f"{stack}[{step}, {idx}] = {x}[{idx}]")] if shape else \
        [f"{stack}[{step}] = {x}"]


def _operand(a: Any, e: Eqn, names: dict) -> str:
    """A Var's name; a number as a scalar of the equation's float dtype (so that a
    float32 loop stays float32, as numpy keeps it)."""
    if type(a) is Var:
        return names[a.id]
    dtype = e.out.dtype if e.out.dtype in FLOATS else np.dtype(np.float64)
    if isinstance(a, (bool, np.bool_)):
        return repr(bool(a))
    if isinstance(a, (int, np.integer)) and e.out.dtype.kind == "i":
        return repr(int(a))
    return _number(float(a), dtype)


def _number(x: float, dtype: np.dtype) -> str:
    text = repr(x) if math.isfinite(x) else ("np.inf" if x > 0 else "-np.inf") \
        if not math.isnan(x) else "np.nan"
    return text if dtype == np.float64 else f"np.{dtype.name}({text})"
