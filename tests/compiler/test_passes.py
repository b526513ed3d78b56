"""Passes on small hand-built graphs: inplace (which buffers an out= rewrite may write
into), adjoint (equations that keep their target's history), peephole (constants)."""

from __future__ import annotations

import numpy as np
from pullback.transforms.adjoint import active_vars, adjoint
from pullback.transforms.codegen import generate
from pullback.transforms.cse import cse
from pullback.transforms.dce import dce
from pullback.transforms.inplace import IntoOp, inplace
from pullback.transforms.peephole import peephole

from pullback.ir import Builder, Graph, Var
from pullback.ir.interpret import evaluate
from pullback.ops import OPS
from pullback.ops.splitting import split_op, unbind_op


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


def _no_grad_exp(x: Var) -> Graph:
    """v = x * 2; v.exp_() under no_grad (its equation keeps v's history); (v * v).sum()."""
    with Builder() as b:
        v = x * 2
        v_1 = v.exp()
        out = (v_1 * v_1).sum()
    write = b.eqns[1]
    write.nograd = write.keeps_history = True
    return Graph([x], b.eqns, [out])


def test_the_gradient_of_a_write_that_keeps_history_goes_to_the_old_value():
    x, = _vars(x=[0.5, -0.25])
    graph = _no_grad_exp(x)
    assert graph.eqns[1].out.id in active_vars(graph, [x])
    joint = adjoint(graph, [x], [Var((), np.float64, np.array(1.0), name="g")])
    _, grad = evaluate(joint, [np.array([0.5, -0.25]), np.array(1.0)])
    np.testing.assert_allclose(grad, 2 * 2 * np.exp([1.0, -0.5]))  # d/dv (e^v)^2 * 2, no e^v
    assert "keeps the history of" in str(graph)


def test_a_write_under_no_grad_without_kept_history_stops_the_gradient():
    x, = _vars(x=[0.5, -0.25])
    graph = _no_grad_exp(x)
    graph.eqns[1].keeps_history = False
    assert graph.eqns[1].out.id not in active_vars(graph, [x])


def test_a_copy_of_a_constant_is_the_constant_unless_returned_or_viewed():
    x, = _vars(x=[1.0, 2.0])
    with Builder() as b:
        c = b.const(np.array([3.0, 4.0]))
        read, kept, viewed = (OPS["clone"](c) for _ in range(3))
        out = (x * read).sum() + viewed[:1].sum()
    graph = peephole(Graph([x], b.eqns, [out, kept], b.consts))
    clones = [e.out for e in graph.eqns if e.op.name == "clone"]
    assert clones == [kept, viewed]
    mul = next(e for e in graph.eqns if e.op.name == "mul")
    assert mul.inputs[0] is x and mul.inputs[1] is c


def test_equal_multi_output_equations_merge_and_live_while_any_output_does():
    """cse renames every output of a repeated split; dce keeps a split one of whose
    pieces is read and drops an unbind none of whose pieces is."""
    x, = _vars(x=[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    with Builder() as b:
        a0, a1 = split_op(x, dim=1, split_size=2)
        _, c1 = split_op(x, dim=1, split_size=2)
        unbind_op(x, dim=0)
        out = (a1 * c1).sum()
    graph = dce(cse(Graph([x], b.eqns, [out])))
    assert [e.op.name for e in graph.eqns] == ["split", "mul", "sum_all"]
    split, mul = graph.eqns[:2]
    assert mul.inputs[0] is mul.inputs[1] is split.outs[1]
    assert evaluate(graph, [np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])]) == [45.0]
    source = generate(graph, "f").source
    assert "_, t0 = np.split(x, [2], axis=1)" in source
