"""Writing region equations (regions.py) as Python control flow: a scan is a ``for``
loop with its body once, as a reader would write it by hand::

    h = h0
    ys = np.empty((50, 4), np.float32)
    for i in range(50):
        x = xs[i]
        t0 = h @ w
        h_1 = np.tanh(t0 + x)
        ys[i] = h_1
        h = h_1

The body's values take their own names; its inputs from outside are the outer
values' names, so nothing is copied in. Stacked outputs nothing reads are not kept.
"""

from __future__ import annotations

from typing import Any, Callable

from pullback.ir import Var

from .regions import scan_parts

INDENT = "    "


def _live(em: Any, v: Var, last: dict) -> bool:
    return v.id in last or v.id in em.guards


def _emit_scan(em: Any, e: Any, last: dict) -> list[str]:
    p = e.params
    body, n_carry, n_xs, length = p["body"], p["n_carry"], p["n_xs"], p["length"]
    carries, xs, consts = scan_parts(e.inputs, n_carry, n_xs)
    b_carry, b_x, b_k = scan_parts(body.inputs, n_carry, n_xs)
    n_y = len(body.outputs) - n_carry
    last_carry, ys, saved = e.outs[:n_carry], e.outs[n_carry:n_carry + n_y], \
        e.outs[n_carry + n_y:]
    for bv, outer in zip(b_k, consts):  # the body reads the outer values by their names
        em.names[bv.id] = em.literal(outer)
    for v, value in body.consts.items():
        em.names[v.id] = em.bind(value)
    lines = [f"{em.name(bv)} = {em.literal(c)}" for bv, c in zip(b_carry, carries)]
    stacked = [(v, bv) for v, bv in zip(ys, body.outputs[n_carry:]) if _live(em, v, last)]
    saves = [(v, bv) for v, bv in zip(saved, b_carry) if _live(em, v, last)]
    if length == 0:  # (the carries stay as they came in)
        lines += [f"{em.name(v)} = np.empty({em.literal(v.shape)}, {em.literal(v.dtype)})"
                  for v, _ in stacked + saves]
    else:
        lines += _loop(em, e, body, stacked, saves)
    lines += [f"{em.name(v)} = {em.name(bv)}" for v, bv in zip(last_carry, b_carry)
              if _live(em, v, last)]
    return lines


def _loop(em: Any, e: Any, body: Any, stacked: list, saves: list) -> list[str]:
    """The ``for`` loop: per-step outputs gathered in lists and stacked after it (code
    that a trace of its own can follow, as a nested transform's does)."""
    p = e.params
    n_carry, n_xs, length = p["n_carry"], p["n_xs"], p["length"]
    _, xs, _ = scan_parts(e.inputs, n_carry, n_xs)
    b_carry, b_x, _ = scan_parts(body.inputs, n_carry, n_xs)
    i = em.ns.fresh("i")
    steps = f"range({length} - 1, -1, -1)" if p["reverse"] else f"range({length})"
    lines = [f"{em.name(v)} = []" for v, _ in stacked + saves]
    inner = [f"{em.name(bv)} = {em.literal(x)}[{i}]" for bv, x in zip(b_x, xs)]
    inner += [f"{em.name(v)}.append({em.name(bv)})" for v, bv in saves]
    inner += em.statements(body, free=False)
    inner += [f"{em.name(v)}.append({em.literal(bv)})" for v, bv in stacked]
    news = [em.literal(o) for o in body.outputs[:n_carry]]
    olds = [em.name(bv) for bv in b_carry]
    if news != olds:
        inner.append(f"{', '.join(olds)} = {', '.join(news)}")
    lines.append(f"for {i} in {steps}:")
    lines += [INDENT + line for line in inner or ["pass"]]
    order = "[::-1]" if p["reverse"] else ""
    lines += [f"{em.name(v)} = np.stack({em.name(v)}{order})" for v, _ in stacked + saves]
    return lines


#: op name -> the function writing its equation as statements
REGIONS: dict[str, Callable] = {"scan": _emit_scan}
