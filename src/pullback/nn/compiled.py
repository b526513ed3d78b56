"""``pb.compile(module)``: the module's call (hooks included) traced and run as
generated code, with the module's parameters read afresh on every call.

The parameters and buffers are tensors the trace captured: generated code reads
their arrays on each call, so an optimizer's in-place step keeps the variant, and
``.backward()`` through the output fills their ``.grad``. The module's own guard
(``Module._pb_capture_guard``, ``state.py``) retraces when the module changes:
another parameter object, ``train()``/``eval()``, a new submodule or hook, a dtype.

>>> import pullback as pb
>>> from pullback import nn
>>> pb.manual_seed(0)
>>> model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
>>> fast = pb.compile(model)
>>> x = pb.randn(8, 3)
>>> import numpy as np
>>> np.allclose(fast(x).detach().numpy(), model(x).detach().numpy())
True
>>> fast(x).sum().backward()
>>> model[0].weight.grad.shape, fast(x).grad_fn.name()
((4, 3), 'CompiledFunctionBackward')
>>> len(list(fast.parameters())), fast.cache.info.misses
(4, 1)
"""

from __future__ import annotations

from typing import Any

from ..compiler.compiled import CompiledFunction
from ..compiler.trace_names import capture_names


class CompiledModule(CompiledFunction):
    """A compiled module: calls run ``module(*args)`` as generated code (``forward``
    names the trace and binds keyword arguments). Other attributes are the module's
    (``parameters()``, ``train()``, ``state_dict()``...), as with torch.compile's
    wrapper; ``module`` is the module itself."""

    def __init__(self, module: Any, maxsize: int | None = None) -> None:
        super().__init__(module.forward, maxsize, target=module)
        self.__dict__["module"] = module

    def build(self, args: tuple) -> Any:
        """Trace with the parameters and buffers named after their dotted names
        (``layer0_weight`` for ``0.weight``) in the generated code."""
        module = self.__dict__["module"]
        named = list(module.named_parameters()) + list(module.named_buffers())
        with capture_names({id(t): _identifier(n) for n, t in named}):
            return super().build(args)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.__dict__["module"], name)

    def __repr__(self) -> str:
        return f"CompiledModule({self.__dict__['module']!r})"


def _identifier(dotted: str) -> str:
    name = dotted.replace(".", "_")
    return "layer" + name if name[:1].isdigit() else name


__all__ = ["CompiledModule"]
