"""The compiler's runtime side: IR, tracer, cache and the front doors.

The passes themselves live in ``pullback.transforms`` (top-level ``transforms/``).
"""

from .compiled import CompiledFunction, compile
from .grad import grad, value_and_grad, vjp
from .inspect import Inspection, inspect
from .tracer import TraceError
from pullback.transforms.codegen import set_dump_dir

__all__ = ["compile", "grad", "value_and_grad", "vjp", "CompiledFunction", "TraceError",
           "inspect", "Inspection", "set_dump_dir"]
