"""pullback.viz: pictures of autograd graphs (``make_dot``, Graphviz DOT) and of
compiled functions (``compiled_html``, the generated forward and backward side by
side)."""

from .dot import Digraph, make_dot
from .page import compiled_html

__all__ = ["Digraph", "compiled_html", "make_dot"]
