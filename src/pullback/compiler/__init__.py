"""The compiler's runtime side: tracer, cache, front doors, and the replay of eager
graphs as generated code (registered with the engine on import).

The IR lives in ``pullback.ir``; the passes in ``pullback.transforms`` (top-level
``transforms/``).
"""

from . import profiled, replay  # (registered with the profiler and the engine on import)
from .compiled import CompiledFunction, compile
from .grad import grad, value_and_grad
from .vjp import vjp
from .forward import jvp, linearize
from .jacobians import hessian, jacfwd, jacrev
from .vmap import vmap
from .export import ExportError, export
from .inspection import Inspection, inspect
from .user_lines import TraceError
from .conversions import ConversionError, stop_gradient
from .cache import reset
from pullback.transforms.codegen import set_dump_dir

__all__ = ["compile", "grad", "value_and_grad", "vjp", "jvp", "linearize", "jacfwd", "jacrev",
           "hessian", "vmap", "export", "ExportError", "CompiledFunction", "TraceError",
           "ConversionError", "stop_gradient",
           "inspect", "Inspection", "reset", "set_dump_dir"]
