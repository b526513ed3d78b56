"""``make_dot``: the autograd graph behind a tensor as Graphviz DOT, in the spirit of
torchviz: grad_fn nodes by name, leaves (blue) by parameter name and shape, the
output (green); ``show_saved`` adds what each node saved (orange). A compiled
region's ``CompiledFunctionBackward`` is drawn as a cluster of the ops it computes.

>>> import pullback as pb
>>> w = pb.ones(3, requires_grad=True)
>>> dot = pb.viz.make_dot((w * 2).sum(), params={"w": w})
>>> print(dot)
digraph {
  graph [rankdir=BT size="12,12"]
  node [align=left fontname=monospace fontsize=10 height=0.2 ranksep=0.1 shape=box style=filled]
  n0 [label="()" fillcolor=darkolivegreen1]
  n1 [label="SumBackward0" fillcolor=lightgrey]
  n2 [label="MulBackward0" fillcolor=lightgrey]
  n3 [label="w\\n(3,)" fillcolor=lightblue]
  n3 -> n2
  n2 -> n1
  n1 -> n0
}
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from typing import Any

from ..autograd.graph import Node
from ..compiler.compiled import CompiledNode
from ..tensor import Tensor

_MISSING_DOT = (
    "pb.viz: rendering needs Graphviz's `dot` program, which is not on PATH. Install "
    "Graphviz (apt-get install graphviz, brew install graphviz, conda install graphviz, or "
    "https://graphviz.org/download/), or write the DOT source with .save(path) and render "
    "it elsewhere.")
_MAX_REGION_OPS = 200  # ops drawn inside one compiled region's cluster


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _shape(shape: tuple) -> str:
    return "(" + ", ".join(str(n) for n in shape) + ("," if len(shape) == 1 else "") + ")"


class Digraph:
    """DOT source (``.source``, ``str()``); ``save(path)`` writes it, ``render(path)``
    runs Graphviz's ``dot`` to make an SVG, PNG or PDF (the path's suffix)."""

    def __init__(self, lines: list) -> None:
        self.lines = lines

    @property
    def source(self) -> str:
        return "\n".join(self.lines) + "\n"

    def __str__(self) -> str:
        return self.source.rstrip("\n")

    def save(self, path: str | os.PathLike) -> str:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(self.source)
        return os.fspath(path)

    def render(self, path: str | os.PathLike, format: str | None = None) -> str:
        """``dot -T<format> -o path`` on the source; the format defaults to the
        path's suffix (svg, png, pdf...). Raises RuntimeError naming what to install
        when Graphviz is missing."""
        exe = shutil.which("dot")
        if exe is None:
            raise RuntimeError(_MISSING_DOT)
        path = os.fspath(path)
        fmt = format or os.path.splitext(path)[1].lstrip(".") or "svg"
        with tempfile.NamedTemporaryFile("w", suffix=".gv", delete=False,
                                         encoding="utf-8") as fh:
            fh.write(self.source)
        try:
            subprocess.run([exe, f"-T{fmt}", "-o", path, fh.name], check=True,
                           capture_output=True, timeout=120)
        except subprocess.CalledProcessError as e:
            raise RuntimeError(f"pb.viz: dot failed: {e.stderr.decode(errors='replace')}") \
                from None
        finally:
            os.unlink(fh.name)
        return path


class _Drawer:
    def __init__(self, params: dict | None, show_saved: bool) -> None:
        self.names = {id(t): name for name, t in (params or {}).items()}
        self.show_saved = show_saved
        self.lines = ["digraph {", '  graph [rankdir=BT size="12,12"]',
                      "  node [align=left fontname=monospace fontsize=10 height=0.2 "
                      "ranksep=0.1 shape=box style=filled]"]
        self.ids: dict = {}  # id of a node, tensor or IR value -> its DOT id
        self.regions: dict = {}  # id of a CompiledNode -> {output_nr: DOT id}

    def new(self, key: Any, label: str, color: str, indent: str = "  ") -> str:
        name = f"n{len(self.ids)}"
        self.ids[key] = name
        self.lines.append(f"{indent}{name} [label={_quote(label)} fillcolor={color}]")
        return name

    def edge(self, a: str, b: str, style: str = "") -> None:
        self.lines.append(f"  {a} -> {b}" + (f" [style={style}]" if style else ""))

    def tensor_label(self, t: Tensor) -> str:
        name = self.names.get(id(t))
        return (name + "\n" if name else "") + _shape(tuple(t.shape))

    def source_of(self, node: Any, nr: int) -> str | None:
        """The DOT id that the gradient edge ``(node, nr)`` comes from, drawn now."""
        if node is None:
            return None
        if isinstance(node, CompiledNode):
            return self.region(node)[nr]
        if id(node) not in self.ids:
            self.draw(node)
        return self.ids[id(node)]

    def draw(self, node: Node) -> None:
        """A node (a leaf's variable for AccumulateGrad), its saved values, its inputs."""
        variable = getattr(node, "variable", None)
        if isinstance(variable, Tensor):
            self.new(id(node), self.tensor_label(variable), "lightblue")
            return
        me = self.new(id(node), node.name(), "lightgrey")
        if self.show_saved:
            self.saved(node, me)
        for nxt, nr in node.next_functions:
            src = self.source_of(nxt, nr)
            if src is not None:
                self.edge(src, me)

    def saved(self, node: Node, me: str) -> None:
        for attr in sorted(a for a in dir(node) if a.startswith("_saved_")):
            try:
                value = getattr(node, attr)
            except (AttributeError, RuntimeError):  # not saved by this node, or freed
                continue
            if value is None:
                continue
            label = attr[len("_saved_"):]
            if isinstance(value, Tensor):
                s = self.new((id(node), attr), f"{label}\n{_shape(tuple(value.shape))}",
                             "orange")
            else:
                s = self.new((id(node), attr), f"{label}: {value!r}"[:60], "orange")
            self.edge(s, me, "dotted")

    def region(self, node: CompiledNode) -> dict:
        """A compiled region as a cluster: its inputs, its forward ops, and the values
        it returns (DOT ids by output number)."""
        if id(node) in self.regions:
            return self.regions[id(node)]
        graph = node.variant.traced.graph
        k = len(self.regions)
        self.regions[id(node)] = outputs = {}
        body = [f"  subgraph cluster_{k} {{",
                f"    label={_quote('CompiledFunctionBackward: ' + graph.name)}",
                "    style=dashed color=grey40"]
        self.lines, outer = body, self.lines
        for var in graph.inputs:
            self.new(("var", var.id, k), f"{var.name or 'input'}\n{_shape(var.shape)}",
                     "lightyellow", "    ")
        for j, e in enumerate(graph.eqns[:_MAX_REGION_OPS]):
            # (a loop's equation has several outputs: one box, which each of them names)
            outs = [e.out] if e.out is not None else list(e.outs)
            shapes = " ".join(_shape(o.shape) for o in outs)
            me = self.new(("var", outs[0].id, k) if outs else ("eqn", j, k),
                          f"{e.op.name}\n{shapes}", "white", "    ")
            for o in outs[1:]:
                self.ids[("var", o.id, k)] = me
            for v in e.inputs:
                src = self.ids.get(("var", getattr(v, "id", None), k))
                if src is not None:
                    self.lines.append(f"    {src} -> {me}")
        if len(graph.eqns) > _MAX_REGION_OPS:
            self.new(("more", k), f"... {len(graph.eqns) - _MAX_REGION_OPS} more ops",
                     "white", "    ")
        elif not graph.eqns and node.variant.disk is not None:  # (kept without its ops)
            self.new(("more", k), "ops not kept: read from the persistent cache\n"
                     "(pb.compiler.inspect traces them)", "white", "    ")
        body.append("  }")
        self.lines = outer + body
        for nr, v in enumerate(graph.outputs):
            outputs[nr] = self.ids.get(("var", v.id, k)) or self.ids.get(("more", k))
        for (nxt, nr), var in zip(node.next_functions, graph.inputs):
            src = self.source_of(nxt, nr)
            if src is not None:
                self.edge(src, self.ids[("var", var.id, k)])
        return outputs


def make_dot(tensor: Any, params: dict | None = None, show_saved: bool = False) -> Digraph:
    """The autograd graph of ``tensor`` (or of a tuple of tensors) as DOT. ``params``
    maps names to leaves (``dict(model.named_parameters())``) to label them."""
    roots = tensor if isinstance(tensor, (tuple, list)) else (tensor,)
    drawer = _Drawer(params, show_saved)
    for t in roots:
        if not isinstance(t, Tensor):
            raise TypeError(f"make_dot: expected a Tensor, got {type(t).__name__}")
        out = drawer.new(("root", id(t)), drawer.tensor_label(t), "darkolivegreen1")
        src = drawer.source_of(t.grad_fn, t.output_nr)
        if src is not None:
            drawer.edge(src, out)
    drawer.lines.append("}")
    return Digraph(drawer.lines)


__all__ = ["Digraph", "make_dot"]
