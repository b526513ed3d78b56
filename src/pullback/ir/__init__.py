"""The IR: values and equations (graph.py) with their one printer, the builder that
records ops on IR values (builder.py), the verifier, an interpreter, and every naming
convention of generated code (naming.py)."""

from .builder import (Builder, emit_zeros, is_zeros, large_values_as_shapes, shapes_only,
                      squashed)
from .graph import (Eqn, Graph, Var, current, every_eqn, format_eqn, format_graph, last_uses,
                    type_str)
from .interpret import evaluate
from .naming import GRAD_PREFIX, Namespace, grad_of
from . import naming
from .verify import IRError, verify

__all__ = ["Builder", "Eqn", "GRAD_PREFIX", "Graph", "IRError", "Namespace", "Var", "current",
           "emit_zeros", "every_eqn", "is_zeros", "large_values_as_shapes",
           "shapes_only", "squashed", "evaluate", "format_eqn",
           "grad_of", "format_graph", "last_uses", "type_str", "verify"]
