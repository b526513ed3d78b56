"""transforms/inplace.py: which buffers an out= rewrite may write into."""

from __future__ import annotations

import numpy as np
from pullback.transforms.codegen import generate
from pullback.transforms.inplace import IntoOp, inplace

from pullback.ir import Builder, Graph, Var


def _vars(**values) -> list:
    return [Var(np.shape(a), np.float64, np.asarray(a, np.float64), name=n)
            for n, a in values.items()]


def test_the_result_of_an_out_rewrite_is_not_written_into_while_viewed():
    """``v0 = x * 2 + 1`` is written into x * 2's buffer; ``v0`` is then viewed, so
    ``v0 * c1`` (v0's last use) must not be written into it before the view is read."""
    x, c1, c2 = _vars(x=[1.0, 2.0], c1=[1.0, 10.0], c2=[100.0, 1000.0])
    with Builder() as b:
        v0 = x * 2 + 1
        v6 = v0[:]
        out = (v0 * c1).sum() + (v6 * c2).sum()
    graph = inplace(Graph([x, c1, c2], b.eqns, [out]))
    into = [e.op.name for e in graph.eqns if isinstance(e.op, IntoOp)]
    assert into == ["add_into"]  # x * 2 is v0's buffer; nothing writes into v0
    fn = generate(graph, "f").fn
    assert fn(np.array([1.0, 2.0]), np.array([1.0, 10.0]), np.array([100.0, 1000.0])) == (5353.0,)


def test_an_unviewed_out_result_is_written_into_again():
    """The chain (x * 2 + 1) * 3 reuses one buffer when nothing views it."""
    x, = _vars(x=[1.0, 2.0])
    with Builder() as b:
        out = ((x * 2 + 1) * 3).sum()
    graph = inplace(Graph([x], b.eqns, [out]))
    assert [e.op.name for e in graph.eqns if isinstance(e.op, IntoOp)] == ["add_into",
                                                                           "mul_into"]
