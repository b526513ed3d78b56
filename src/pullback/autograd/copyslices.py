"""CopySlices: the node a base gets when it is written through one of its views.

Backward of a write ``view <- f(view, others)`` into ``base``: the view's region of
the incoming gradient goes through f's rules, the rest passes to the old base.
"""

from __future__ import annotations

from typing import Any

from ..ops.registry import Meta
from ..ops.shape import view_chain, view_scatter
from .graph import Node, OpNode, node_class
from .record import grad_edge


class CopySlices(Node):
    __slots__ = ("inner", "chain")
    _qualname = "torch::autograd::CopySlices"

    def __init__(self, base_edge: tuple, inner: OpNode, chain: tuple, base_data: Any) -> None:
        Node.__init__(self, (base_edge,) + inner._edges[1:])
        self.inner = inner
        self.chain = chain

    def apply(self, grads: list, needs: list, create_graph: bool) -> list:
        g = grads[0]
        g_view = view_chain(g, chain=self.chain)
        inner = self.inner.apply([g_view], [True] + list(needs[1:]), create_graph)
        g_old = inner[0]
        g_base = None
        if needs[0]:
            g_base = view_scatter(g, 0 if g_old is None else g_old, chain=self.chain)
        return [g_base] + inner[1:]

    def release(self) -> None:
        self.inner.release()


def view_node(base: Any, chain: tuple) -> OpNode:
    """The grad_fn of a view after its base was rebased (torch: AsStridedBackward0)."""
    op = view_chain
    if op.node_cls is None:
        op.node_cls = node_class(op.grad_fn)
    return op.node_cls(op, (grad_edge(base),), {"chain": chain},
                       (Meta(base._data.shape, base._data.dtype),), None)
