"""transpose: an op's VJP rules transposed into its JVP, the ``derive`` of ``apply_jvp``.

``ops/table/jvp.py: apply_jvp`` takes an op's tangent from its declared JVP rules, or
from its VJP rules when the Jacobian is diagonal and real; for every other op it asks
its caller to transpose the VJP rules. ``transpose_rules`` does that on IR values, and
both callers use it: the compiler's tangent pass (``tangent.py``) and eager forward mode
(``autograd/forward_ad.py``, on IR mirrors of its Tensors). It lives here, not beside
``apply_jvp`` in the op table, because it needs the IR and the adjoint pass, two layers
above the table.

>>> import numpy as np
>>> from pullback.ir import Builder, Graph, Var
>>> from pullback.ops import OPS
>>> x = Var((3,), np.float64, np.ones(3), name="x")
>>> t = Var((3,), np.float64, np.zeros(3), name="t")
>>> with Builder() as b:
...     y = x.cumsum(0)
...     ty = transpose_rules(OPS["cumsum"], [t], y, (x,), {"dim": 0})
>>> print(Graph([x, t], b.eqns, [ty]))
{ lambda x:f64[3] t:f64[3] .
  let t0:f64[3] = cumsum[dim=0] x
      t1:f64[3] = zeros[shape=(3,) dtype=float64]
      t2:f64[3] = cumsum[dim=0 reverse=True] t1
      t3:f64[3] = cumsum[dim=0 reverse=False] t
  in (t3) }
"""

from __future__ import annotations

from typing import Any

from pullback.ir import Builder, Graph, Var, current, emit_zeros
from pullback.ops import vjp_per_input
from pullback.ops.elementwise import zeros_like
from pullback.ops.table.results import pack

from .adjoint import adjoint


def transpose_rules(op: Any, tangents: list, out: Any, inputs: tuple, params: dict) -> Any:
    """``sum_i J_i t_i`` for the inputs with a tangent, on IR values, into the active
    builder: the VJP rules run on a dummy cotangent ``u`` (zeros), and the adjoint pass
    differentiates ``sum_i <vjp_i(u), t_i>`` with respect to ``u``. A list, one per
    output, for an op with several outputs (None for its integer outputs)."""
    outer = current()
    outs = list(out) if op.multi else [out]
    # (not known zeros: a rule may skip the work of a cotangent known to be zero)
    us = [_dummy(o, _run_time_shapes(op, params)) if o.dtype.kind in "fc" else None
          for o in outs]
    g = pack(op.result, us) if op.multi else us[0]
    with Builder() as b:
        b.src, b.block = outer.src, outer.block
        gs = vjp_per_input(op, g, out, inputs, params, [t is not None for t in tangents])
    pairs = [(gi, t) for gi, t in zip(gs, tangents) if isinstance(gi, Var) and t is not None]
    wrt = [u for u in us if u is not None]
    adj = adjoint(Graph(wrt, b.eqns, [gi for gi, _ in pairs], b.consts), wrt,
                  [t for _, t in pairs])
    outer.eqns += adj.eqns
    outer.consts.update(adj.consts)
    cts = iter(adj.outputs[len(pairs):])
    result = [None if u is None else _or_zeros(next(cts), u) for u in us]
    return result if op.multi else result[0]


def _run_time_shapes(op: Any, params: dict) -> bool:
    """Whether the op's outputs have a length known only when it runs: a while loop's
    saved steps, a scan as long as one."""
    return op.name == "while" or op.name == "scan" and params.get("length") is None


def _dummy(o: Var, run_time: bool) -> Var:
    """The dummy cotangent of the output ``o``: zeros of its shape, read from ``o`` when
    it runs where the traced shape holds only for the trace (a while loop's saved steps:
    a fixed shape there made every other trip count fail with an IndexError)."""
    return zeros_like(o) if run_time else emit_zeros(tuple(o.shape), o.dtype, known=False)


def _or_zeros(ct: Any, u: Var) -> Any:
    return emit_zeros(tuple(u.shape), u.dtype) if ct is None else ct
