"""The 0-d float values a loop's body reads from outside, read as numbers: numpy's
arithmetic on a 0-d array costs ~1.3 us an operation, on its scalar ~0.05 us, so a
scalar Kalman filter whose parameters are 0-d arrays ran twice as slow as the same
loop on numbers. Such a value is made a number once before the loop::

    a_1 = np.float64(a)
    for i in range(200):
        mean_pred = a_1 * mean

The dtype's constructor, not ``a[()]``: a traced Python float is an argument of the
generated code too (``a[()]`` fails on it), taken as the traced dtype's number, as the
trace computed with it (a 0-d array of that dtype). Left as they are: results of
ufuncs (numbers already), values a nested loop reads that its outer loop made numbers
(``a_1`` again), values a body returns as they are (a carry's next value keeps its
type), and code for Dask's and CuPy's arrays (``inplace.disabled()``: a number of
theirs would be computed now)."""

from __future__ import annotations

from typing import Any

import numpy as np

from pullback.ir import Var

from . import inplace
from .codegen_loop_facts import loop_facts
from .codegen_text import _dtype_literal


def numbers_read(em: Any, e: Any, inner: tuple, outer: tuple, graphs: tuple) -> list[str]:
    """Name the inputs ``inner`` of the region graphs ``graphs`` (loop ``e``'s body and
    condition), which read ``outer`` from outside, as numbers where they are 0-d float
    arrays; return the lines making those numbers (one per value and graph around:
    a second loop after the first reads its ``a_1``)."""
    if inplace.is_disabled():
        return []
    facts = loop_facts(em)
    read = {a.id for g in graphs for q in g.eqns for a in q.inputs if type(a) is Var}
    returned = {v.id for g in graphs for v in g.outputs if type(v) is Var}
    known = em.read_numbers
    lines = []
    for bv, ov in zip(inner, outer):
        number = _dtype_literal(np.dtype(ov.dtype)) if type(ov) is Var else None
        if number is None or ov.shape != () or np.dtype(ov.dtype).kind not in "fc" \
                or bv.id not in read or bv.id in returned:
            continue
        made = facts.made.get(ov.id)
        if made is not None and isinstance(made.op.forward, np.ufunc) \
                or ("numbers", ov.id) in known:
            continue  # (a ufunc's result on numbers is one; an outer loop made it one)
        key = (facts.home.get(id(e)), ov.id)
        name = known.get(key)
        if name is None:
            name = known[key] = em.ns.fresh(em.name(ov))
            lines.append(f"{name} = {number}({em.literal(ov)})")
        em.names[bv.id] = name
        known["numbers", bv.id] = name
    return lines


def fixed_numbers(region: Any, b_carry: tuple, dead: list) -> dict:
    """Carry index -> its dtype's constructor, for the 0-d float carries a step passes
    on unchanged and whose last value nothing reads (``dead``, per carry): started as
    numbers (``g_nll = np.float64(g_out)``: the seed, a 0-d array, is the cotangent of
    a running sum's start, read by every step of the reverse loop). No Dask or CuPy
    code (as ``numbers_read``)."""
    if inplace.is_disabled():
        return {}
    found = {}
    for k, (bv, new, gone) in enumerate(zip(b_carry, region.outputs, dead)):
        number = _dtype_literal(np.dtype(bv.dtype))
        if new is bv and gone and number and bv.shape == () and bv.dtype.kind in "fc":
            found[k] = number
    return found
