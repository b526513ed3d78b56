"""Op cases of the ops that take a list (cat, stack, einsum) or return several values
(split, unbind, max/min along a dim, sort, topk): ``case.fn`` returns a tuple for the
latter, and the tests compare and differentiate every output (``case_types.outputs``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pullback.ir import Builder, Graph, Var
from pullback.ops import OPS

from .case_types import A, Case, _c

NAN = float("nan")
F32 = np.dtype(np.float32)


def _cat(*shapes: Any, dim: int, **kw: Any) -> Case:
    return _c("cat", *[s if not isinstance(s, tuple) else A(s) for s in shapes],
              p={"dim": dim}, torch=lambda T, *xs: T.cat(xs, dim), **kw)


def _stack(*shapes: Any, dim: int) -> Case:
    return _c("stack", *[A(s) for s in shapes], p={"dim": dim},
              torch=lambda T, *xs: T.stack(xs, dim))


def _einsum(eq: str, *shapes: tuple, optimize: bool = False) -> Case:
    return _c("einsum", *[A(s) for s in shapes], p={"equation": eq, "optimize": optimize},
              torch=lambda T, *xs: T.einsum(eq, *xs), torch_name=False)  # torch: no node


_V34 = [[0.5, -1.25, 2.0, 0.125], [1.5, 0.25, -0.75, 1.0], [-0.25, 0.875, 0.375, 1.25]]
_V234 = (np.arange(24.0).reshape(2, 3, 4) * 7 % 24 / 4 - 3).tolist()  # no ties
_NAN_ROWS = [[1.0, NAN, 3.0], [NAN, NAN, 0.0], [2.0, 2.0, 1.0]]
_TIES = [[1.0, 3.0, 1.0, 2.0], [0.5, 0.5, 0.5, -1.0]]
_PICKS = [[0, 2], [1, 1], [3, 0]]
_PLACES = [[0, 2], [1, 3], [3, 0]]  # distinct per row, as a selection's indices are

JOIN_CASES = [
    _cat((2, 3), (1, 3), dim=0),
    _cat((2, 1), (2, 3), (2, 0), dim=1),  # a size-0 piece
    _cat((3,), dim=0),
    _cat((2, 3), A((2, 3), grad=False), dim=1, tag="const"),
    _cat((2, 3), A((2, 3), "int"), dim=0, tag="int"),  # torch's dtype: float, not double
    _cat((0, 3), (0, 3), dim=1),
    _cat((2, 3), (0,), (1, 3), dim=0, tag="legacy"),  # a 1-d empty: left out, as torch does
    _cat((0,), (0,), dim=0),
    _stack((2, 3), (2, 3), dim=0),
    _stack((2, 3), (2, 3), (2, 3), dim=2),
    _stack((), (), dim=0),
    _stack((0, 3), (0, 3), dim=1),
    _einsum("ij,jk->ik", (2, 3), (3, 4)),
    _einsum("ij->ji", (2, 3)),
    _einsum("ij->", (2, 3)),
    _einsum("ii->i", (3, 3)),
    _einsum("iij->j", (2, 2, 3)),
    _einsum("ij,ij->i", (2, 1), (2, 3)),  # a broadcast size-1 subscript
    _einsum("bij,bjk->bik", (2, 3, 4), (2, 4, 1)),
    _einsum("i,j->ij", (3,), (4,)),
    _einsum("ij,jk,kl->il", (2, 3), (3, 4), (4, 2), optimize=True),
    _einsum("i,i->", (0,), (0,)),
]

SPLIT_CASES = [
    _c("split", A((5, 3)), p={"dim": 0, "split_size": 2}, torch=lambda T, x: x.split(2, 0)),
    _c("split", A((2, 3)), p={"dim": 1, "split_size": 3}, torch=lambda T, x: x.split(3, 1)),
    _c("split", A((2, 3)), p={"dim": 1, "split_size": 1}, torch=lambda T, x: x.split(1, 1)),
    _c("split", A((0, 3)), p={"dim": 0, "split_size": 0}, torch=lambda T, x: x.split(0, 0)),
    _c("split_with_sizes", A((2, 5)), p={"dim": 1, "split_sizes": (2, 0, 3)},
       torch=lambda T, x: x.split([2, 0, 3], 1)),
    _c("split_with_sizes", A((4,)), p={"dim": 0, "split_sizes": (4,)},
       torch=lambda T, x: x.split([4], 0)),
    _c("unbind", A((3, 2)), p={"dim": 0}, torch=lambda T, x: x.unbind(0)),
    _c("unbind", A((2, 3, 2)), p={"dim": 1}, torch=lambda T, x: x.unbind(1)),
    _c("unbind", A((1, 4)), p={"dim": 0}, torch=lambda T, x: x.unbind(0)),
    _c("unbind", A((2, 6)), p={"dim": 1}, torch=lambda T, x: x.unbind(1)),  # > 4 pieces
]

SELECT_CASES = [
    _c("sort", A(values=_V34), p={"dim": 1, "descending": False},
       torch=lambda T, x: x.sort(1)),
    _c("sort", A(values=_V234), p={"dim": 0, "descending": True},
       torch=lambda T, x: x.sort(0, descending=True)),
    _c("sort", A(values=_NAN_ROWS), p={"dim": 1, "descending": True}, tag="nan", fd=False,
       torch=lambda T, x: x.sort(dim=1, descending=True, stable=True), torch_name=False),
    _c("sort", A(values=1.5), p={"dim": None, "descending": False},
       torch=lambda T, x: x.sort(0)),
    _c("sort", A((0, 3)), p={"dim": 1, "descending": False}, torch=lambda T, x: x.sort(1)),
    _c("sort_stable", A(values=_TIES), p={"dim": 1, "descending": True}, fd=False,
       torch=lambda T, x: x.sort(dim=1, descending=True, stable=True)),
    _c("sort_stable", A(values=_TIES), p={"dim": 1, "descending": False}, fd=False,
       torch=lambda T, x: x.sort(dim=1, stable=True)),
    _c("sort_stable", A((3, 4)), p={"dim": 0, "descending": False},
       torch=lambda T, x: x.sort(dim=0, stable=True)),
    _c("topk", A(values=_V34), p={"k": 2, "dim": 1, "largest": True},
       torch=lambda T, x: x.topk(2, 1)),
    _c("topk", A(values=_V34), p={"k": 3, "dim": 0, "largest": False},
       torch=lambda T, x: x.topk(3, 0, largest=False)),
    _c("topk", A(values=_V34), p={"k": 0, "dim": 1, "largest": True},
       torch=lambda T, x: x.topk(0, 1)),
    _c("topk", A(values=2.0), p={"k": 1, "dim": None, "largest": True},
       torch=lambda T, x: x.topk(1)),
    _c("take_along", A((3, 4)), A(values=_PICKS, domain="int"), p={"dim": 1},
       torch=lambda T, x, i: T.gather(x, 1, i)),
    _c("take_along", A((3, 4)), A(values=[[0, 0, 2, 2]], domain="int"), p={"dim": 0},
       tag="repeats", torch=lambda T, x, i: T.gather(x, 0, i)),
    _c("put_along", A((3, 2)), A(values=_PLACES, domain="int"), p={"dim": 1, "shape": (3, 4)},
       torch=lambda T, g, i: T.zeros(3, 4, dtype=g.dtype).scatter(1, i, g)),
]

def _scan_body() -> Graph:
    """One step of a tanh recurrence: (c, x, w) -> (tanh(c * w + x), c * x)."""
    c, x, w = (Var((3,), np.float64, np.ones(3), name=n) for n in "cxw")
    with Builder() as b:
        h, y = OPS["tanh"](c * w + x), c * x
    return Graph([c, x, w], b.eqns, [h, y], b.consts)


_BODY = _scan_body()


def _numpy_scan(c: Any, xs: Any, w: Any, reverse: bool) -> tuple:
    """The loop written out: last carry, outputs, the carries each step started from."""
    ys, saved = [None] * len(xs), [None] * len(xs)
    for i in range(len(xs) - 1, -1, -1) if reverse else range(len(xs)):
        saved[i], ys[i] = c, c * xs[i]
        c = np.tanh(c * w + xs[i])
    return c, np.stack(ys), np.stack(saved)


def _scan(reverse: bool) -> Case:
    """torch has no loop op: numpy's loop is the reference, finite differences check it."""
    return _c("scan", A((3,)), A((4, 3)), A((3,)), p={
        "body": _BODY, "length": 4, "n_carry": 1, "n_xs": 1, "reverse": reverse},
        reference=lambda c, xs, w: _numpy_scan(c, xs, w, reverse),
        tag="reverse" if reverse else "")


def _graph(n_in: int, make: Any, values: tuple = ()) -> Graph:
    """A region's graph of ``n_in`` float64 [2] inputs: ``make(*inputs) -> outputs``."""
    ins = [Var((2,), np.float64, np.array(v) if v is not None else np.ones(2))
           for v in (values or (None,) * n_in)]
    with Builder() as b:
        outs = make(*ins)
    return Graph(ins, b.eqns, list(outs), b.consts)


# while c.sum() > 1: c = c * w  (c = [4, 2], w = [0.5, 0.8]: three steps)
_WHILE = {"cond": _graph(2, lambda c, w: [c.sum() > 1.0]),
          "body": _graph(2, lambda c, w: [c * w]), "n_carry": 1}


def _numpy_while(c: Any, w: Any) -> tuple:
    saved = []
    while c.sum() > 1.0:
        saved.append(c)
        c = c * w
    return c, np.int64(len(saved)), np.stack(saved)


# branch 0: x * w, branch 1: sin(x) + w
_BRANCHES = (_graph(2, lambda x, w: [x * w]), _graph(2, lambda x, w: [OPS["sin"](x) + w]))


def _switch(index: int) -> Case:
    return _c("switch", A((), "int", values=index), A((2,)), A((2,)),
              p={"branches": _BRANCHES}, tag=f"branch{index}",
              reference=lambda k, x, w: ((x * w,) if k == 0 else (np.sin(x) + w,)))


MULTI_CASES = JOIN_CASES + SPLIT_CASES + SELECT_CASES + [_scan(False), _scan(True)] + [
    _c("while", A(values=[4.0, 2.0]), A(values=[0.5, 0.8]), p=_WHILE,
       reference=_numpy_while),
    _switch(0), _switch(1),

    _c("zeros", p={"shape": (2, 3), "dtype": F32}, reference=lambda: np.zeros((2, 3), F32)),
]
