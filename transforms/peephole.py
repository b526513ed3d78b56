"""peephole: local rewrites that remove work the VJP rules leave behind.

- ``t(t(x))`` and a transpose of the same transpose are ``x``; so are ``x ** 1``
  (the power rule leaves it for squares) and ``x * 1``, also where 1 is the all-ones
  output gradient ``pb.grad`` seeds with (``ones``), or that seed expanded;
- an elementwise op whose input is ``expand(s)`` to the op's own result shape, while
  another input already has that shape, takes ``s`` itself: numpy broadcasts it with
  no filled array (the rules of sum and mean expand their gradient this way);
- a reshape (unsqueeze, squeeze, view) of a reshape, its result not returned, is one
  reshape of the first's input, or that input where it has the shape already (vmap's
  rules leave such chains);
- a copy of a constant (a tensor the function made, ``pb.tensor(...)``, ``pb.zeros``)
  is the constant itself unless it is returned or viewed: in-place writes into it are
  new values in the IR, so nothing writes into it;
- a negation the gradient of a difference leaves goes into what reads it, exactly:
  ``x + (-z)`` is ``x - z``, and ``(-z) * c`` of a float ``z`` and a number ``c`` is
  ``z * (-c)`` (one operation fewer a loop's step, where the operations are scalars);
- ``dst.copy_(src)`` as a new value (``copy``, which reads ``dst`` for its shape alone)
  is the number ``src`` of dst's dtype for a 0-d ``dst`` (``R[0, 0] = 0.0`` reads no
  ``R[0, 0]`` first), and ``src`` itself where it has dst's shape and dtype, is made by
  an equation of the function (not an argument, a constant or a view) and nothing else
  reads it (the table a loop wrote, copied back into the user's array: no copy).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pullback.ir import Eqn, Graph, Var, last_uses
from pullback.ops import OPS

from .inplace import owned


def _undo_transpose(e: Eqn, made: dict) -> Var | None:
    """x when ``e`` transposes back a transpose of x."""
    a = e.inputs[0]
    src = made.get(a.id) if isinstance(a, Var) else None
    if src is None or src.op.name != e.op.name:
        return None
    if e.op.name == "t" or (e.op.name == "transpose" and src.params == e.params):
        return src.inputs[0]
    return None


#: ops that only reshape (generated code writes each as ``.reshape(...)``)
RESHAPES = ("reshape", "view", "reshape_alias", "unsqueeze", "squeeze", "squeeze_all",
            "squeeze_dims")


def _reshaped(e: Eqn, made: dict, returned: set) -> Eqn | Var:
    """For a reshape whose result is not returned: one reshape of the input of the
    reshape it reads, or that input itself where the shape is already its own."""
    if e.out.id in returned:
        return e
    a = e.inputs[0]
    src = made.get(a.id) if isinstance(a, Var) else None
    if src is not None and src.op.name in RESHAPES:
        a = src.inputs[0]
        e = Eqn(OPS["reshape"], (a,), e.out, {"shape": e.out.shape}, e.src, e.block,
                e.nograd, e.keeps_history)
    if isinstance(a, Var) and a.shape == e.out.shape and a.dtype == e.out.dtype:
        return a
    return e


def _identity(e: Eqn, ones: set) -> Var | None:
    """x for ``x ** 1`` and ``x * 1`` (same shape and dtype as the result), where 1 is a
    literal or a value in ``ones`` (ids of all-ones arrays)."""
    if e.op.name == "pow_scalar" and e.params.get("exponent") == 1:
        x = e.inputs[0]
    elif e.op.name == "mul" and len(e.inputs) == 2:
        one = [(type(a) in (int, float) and a == 1) or (isinstance(a, Var) and a.id in ones)
               for a in e.inputs]
        if not any(one):
            return None
        x = e.inputs[1] if one[0] else e.inputs[0]
    else:
        return None
    same = isinstance(x, Var) and x.shape == e.out.shape and x.dtype == e.out.dtype
    return x if same else None


def _negation_moved(e: Eqn, made: dict) -> Eqn:
    """``x - z`` for ``x + (-z)`` (either order) of values; ``z * (-c)`` for ``(-z) * c``
    of a float ``z`` and a number ``c``: both exact. ``e`` itself otherwise."""
    if e.op.name not in ("add", "mul") or len(e.inputs) != 2 or e.params:
        return e
    for k in (0, 1):
        a, other = e.inputs[k], e.inputs[1 - k]
        src = made.get(a.id) if isinstance(a, Var) else None
        if src is None or src.op.name != "neg" or not isinstance(src.inputs[0], Var):
            continue
        z = src.inputs[0]
        if e.op.name == "add" and isinstance(other, Var) and np.dtype(z.dtype).kind != "b":
            return Eqn(OPS["sub"], (other, z), e.out, {}, e.src, e.block, e.nograd,
                       e.keeps_history)
        if e.op.name == "mul" and type(other) in (int, float) and \
                np.dtype(z.dtype).kind in "fc":
            return Eqn(OPS["mul"], (z, -other), e.out, {}, e.src, e.block, e.nograd,
                       e.keeps_history)
    return e


def _unexpand(e: Eqn, made: dict) -> tuple:
    shape = e.out.shape
    full = [isinstance(a, Var) and a.shape == shape and
            (made.get(a.id) is None or made[a.id].op.name != "expand") for a in e.inputs]
    if not any(full):
        return e.inputs
    inputs = []
    for a in e.inputs:
        src = made.get(a.id) if isinstance(a, Var) else None
        if src is not None and src.op.name == "expand" and a.shape == shape \
                and src.inputs[0].dtype == a.dtype:
            a = src.inputs[0]
        inputs.append(a)
    return tuple(inputs)


def _constant(e: Eqn, consts: set, shared: set) -> Any:
    """c for a ``clone`` of the constant c (a Var, or a 0-d array written inline, such
    as a nested gradient's seed) whose result is neither returned nor viewed."""
    x = e.inputs[0] if e.op.name == "clone" else None
    if e.out is None or e.out.id in shared:
        return None
    if (isinstance(x, Var) and x.id in consts) or (type(x) is np.ndarray and x.ndim == 0):
        return x
    return None


def _copied(e: Eqn, made: dict, uses: dict, dst_read_later: bool) -> Any:
    """What ``copy(dst, src)`` may be replaced by (see the module's docstring), or None.
    ``src`` itself only where its buffer is its own: a fresh array, or the carry of a
    loop that started from ``dst`` (a fresh array nothing reads after the copy)."""
    dst, src = e.inputs
    if not isinstance(dst, Var):
        return None
    if dst.shape == () and type(src) in (int, float, bool):
        return np.dtype(dst.dtype).type(src)
    q = made.get(src.id) if isinstance(src, Var) else None
    if q is None or uses.get(src.id) != 1 or src.shape != dst.shape \
            or src.dtype != dst.dtype:
        return None
    if owned(q):
        return src
    if q.op.name not in ("scan", "while") or dst_read_later or made.get(dst.id) is None \
            or not owned(made[dst.id]):
        return None
    k = next(k for k, v in enumerate(q.outs) if v is src)
    return src if k < q.params["n_carry"] and q.inputs[k] is dst else None


def _uses(graph: Graph) -> dict:
    """Value id -> how many times equations read it (an output or a guard counts two)."""
    uses: dict[int, int] = {}
    for e in graph.eqns:
        for a in e.inputs:
            if type(a) is Var:
                uses[a.id] = uses.get(a.id, 0) + 1
    for v in list(graph.outputs) + list(graph.guards):
        if isinstance(v, Var):
            uses[v.id] = uses.get(v.id, 0) + 2
    return uses


def peephole(graph: Graph, ones: tuple = ()) -> Graph:
    """The rewrites above; ``ones``: inputs known to be all ones (gradient seeds)."""
    ones = {v.id for v in ones}
    made: dict[int, Eqn] = {}
    alias: dict[int, Var] = {}
    eqns = []
    consts = {v.id for v in graph.consts}
    returned = {v.id for v in graph.outputs if isinstance(v, Var)}
    shared = {v.id for v in graph.outputs if isinstance(v, Var)} | {v.id for v in graph.guards} | {
        a.id for e in graph.eqns if e.op.aliases for a in e.inputs if isinstance(a, Var)}
    expanded: set = set()  # ids of expand results (_unexpand reads only those)
    uses = every = last = None  # (made when a copy is met: most graphs have none)
    for n, e in enumerate(graph.eqns):
        if alias and any(type(a) is Var and a.id in alias for a in e.inputs):
            e = e.replace(inputs=tuple(alias.get(a.id, a) if isinstance(a, Var) else a
                                       for a in e.inputs))
        name = e.op.name
        if name == "copy" and e.out.id not in returned \
                and all(g is not e.out for g in graph.guards):
            if uses is None:
                uses, last = _uses(graph), last_uses(graph)
                every = {v.id: q for q in graph.eqns for v in q.outs}  # (value -> maker)
            dst = e.inputs[0]
            x = _copied(e, every, uses, type(dst) is Var and last.get(dst.id, -1) > n)
            if x is not None:
                alias[e.out.id] = x
                continue
        if name == "clone":
            x = _constant(e, consts, shared)
            if x is not None:
                alias[e.out.id] = x
                continue
        if name in RESHAPES:
            r = _reshaped(e, made, returned)
            if isinstance(r, Var):
                alias[e.out.id] = r
                continue
            e = r
        elif name == "t" or name == "transpose":
            x = _undo_transpose(e, made)
            if x is not None:
                alias[e.out.id] = x
                continue
        if expanded and e.op.elementwise and len(e.inputs) > 1 and \
                any(type(a) is Var and a.id in expanded for a in e.inputs):
            inputs = _unexpand(e, made)
            if any(a is not b for a, b in zip(inputs, e.inputs)):
                e = e.replace(inputs=inputs)
        if name == "add" or name == "mul":
            e = _negation_moved(e, made)
            name = e.op.name
        if name == "mul" or name == "pow_scalar":
            x = _identity(e, ones)
            if x is not None:
                alias[e.out.id] = x
                continue
        if (name in RESHAPES or name == "expand") and isinstance(e.inputs[0], Var) \
                and e.inputs[0].id in ones:
            ones.add(e.out.id)
        if e.out is not None:  # (the rewrites above read single-output producers)
            made[e.out.id] = e
            if name == "expand":
                expanded.add(e.out.id)
        eqns.append(e)
    outputs = [alias.get(v.id, v) if isinstance(v, Var) else v for v in graph.outputs]
    guards = [alias.get(v.id, v) for v in graph.guards]
    return graph.replace(eqns=eqns, outputs=outputs, guards=guards)


def lean_cross_entropy(graph: Graph) -> Graph:
    """Cross-entropy's backward as the hand-written one: where nll_loss's gradient ``d``
    (one value per row: rows, classes, no class weights) meets log_softmax's rule,
    ``d - exp(logp) * d.sum(1, keepdim)``, and nothing else reads those values, one
    ``softmax_nll_backward(g, target, logp)``: softmax minus the target's one, scaled,
    with the same values; and ``softmax(x)`` for ``exp(log_softmax(x))`` read nowhere
    else. Run after adjoint: the op has no VJP rule."""
    made = {e.out.id: e for e in graph.eqns if e.out is not None}
    uses: dict[int, int] = {}
    for e in graph.eqns:
        for a in e.inputs:
            if isinstance(a, Var):
                uses[a.id] = uses.get(a.id, 0) + 1
    for v in list(graph.outputs) + list(graph.guards):
        if isinstance(v, Var):
            uses[v.id] = uses.get(v.id, 0) + 2
    eqns = [_softmax_nll(e, made, uses) or _softmax(e, made, uses) or e for e in graph.eqns]
    return graph.replace(eqns=eqns)


def _softmax(e: Eqn, made: dict, uses: dict) -> Eqn | None:
    """``softmax(x)`` for ``exp(log_softmax(x))`` that nothing else reads: log_softmax's
    rule leaves it where the loss's value is not computed (an HVP's inner gradient)."""
    ls = _only(e.inputs[0], "log_softmax", made, uses) if e.op.name == "exp" else None
    if ls is None or ls.out.dtype != e.out.dtype:
        return None
    return Eqn(OPS["softmax"], ls.inputs, e.out, dict(ls.params), e.src, e.block, e.nograd,
               e.keeps_history)


def _only(v: object, op: str, made: dict, uses: dict, n: int = 1) -> Eqn | None:
    """The equation of op ``op`` making ``v``, when ``n`` equations read ``v``."""
    e = made.get(v.id) if isinstance(v, Var) else None
    return e if e is not None and e.op.name == op and uses.get(v.id) == n else None


def _softmax_nll(e: Eqn, made: dict, uses: dict) -> Eqn | None:
    if e.op.name != "sub":
        return None
    d, m = e.inputs
    nll, mul = _only(d, "nll_backward", made, uses, 2), _only(m, "mul", made, uses)
    if nll is None or mul is None:
        return None
    g, target, weight = nll.inputs
    p = nll.params
    if weight is not None or len(p["shape"]) != 2 or p["reduction"] == "none" or \
            0 <= p["ignore_index"] < p["shape"][1] or not isinstance(g, Var) or g.shape != ():
        return None
    ex, s = mul.inputs if _only(mul.inputs[0], "exp", made, uses) else mul.inputs[::-1]
    ex, s = _only(ex, "exp", made, uses), _only(s, "sum_dim", made, uses)
    if ex is None or s is None or s.inputs[0] is not d or not s.params.get("keepdim") or \
            s.params.get("dim") not in (1, -1, (1,), (-1,)):
        return None
    logp = ex.inputs[0]
    if not isinstance(logp, Var) or logp.shape != e.out.shape or not target.shape or \
            target.shape[0] != logp.shape[0]:
        return None
    return Eqn(OPS["softmax_nll_backward"], (g, target, logp), e.out,
               {"ignore_index": p["ignore_index"], "reduction": p["reduction"]}, e.src,
               e.block, e.nograd, e.keeps_history)
