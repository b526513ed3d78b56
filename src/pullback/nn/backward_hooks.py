"""Module backward hooks (``register_full_backward_hook``,
``register_full_backward_pre_hook``), run as torch runs them: the module's tensor inputs
and its outputs pass through identity custom Functions; the outputs' one sees the
gradients of the outputs (``grad_output``: the pre-hooks may replace them), the inputs'
one the gradients of the inputs (``grad_input``: the hooks may replace them).

>>> import pullback as pb
>>> lin = pb.nn.Linear(3, 2)
>>> seen = []
>>> _ = lin.register_full_backward_hook(
...     lambda m, gi, go: seen.append((gi[0].shape, go[0].shape)))
>>> lin(pb.ones(4, 3, requires_grad=True)).sum().backward()
>>> seen
[((4, 3), (4, 2))]
"""

from __future__ import annotations

import warnings
from typing import Any, Callable

from ..autograd.function import Function
from ..autograd.grad_mode import is_grad_enabled
from ..tensor import Tensor

NO_INPUT_GRADS = (
    "Full backward hook is firing when gradients are computed with respect to module outputs "
    "since no inputs require gradients. See https://docs.pytorch.org/docs/main/generated/"
    "torch.nn.Module.html#torch.nn.Module.register_full_backward_hook for more details.")


def _replaced(hooks: dict, call: Callable, grads: tuple, who: str, what: str) -> tuple:
    """``grads`` through each hook in turn (``call(hook, grads)``): a result that is not
    None replaces them and must be as long."""
    for hook in list(hooks.values()):
        new = call(hook, grads)
        if new is None:
            continue
        if len(new) != len(grads):
            raise RuntimeError(f"{who} returned an invalid number of {what}, got {len(new)}, "
                               f"but expected {len(grads)}")
        grads = tuple(new)
    return grads


class BackwardHook:
    """One call's hooks: the module, its hook tables, where its tensor inputs sit among
    its arguments, and the gradients of its outputs once the backward reached them."""

    def __init__(self, module: Any, hooks: dict, pre_hooks: dict) -> None:
        self.module, self.hooks, self.pre_hooks = module, hooks, pre_hooks
        self.n_inputs = 0
        self.input_index: list | None = None
        self.grad_outputs: tuple | None = None

    def setup_input_hook(self, args: tuple) -> tuple:
        self.n_inputs = len(args)
        index = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        if not (is_grad_enabled() and any(args[i].requires_grad for i in index)):
            return args
        self.input_index = index
        new = BackwardHookFunction.apply(self, False, *(args[i] for i in index))
        out = list(args)
        for i, t in zip(index, new):
            out[i] = t
        return tuple(out)

    def setup_output_hook(self, result: Any) -> Any:
        outs = result if isinstance(result, tuple) else (result,)
        index = [i for i, o in enumerate(outs) if isinstance(o, Tensor)]
        if not (is_grad_enabled() and any(outs[i].requires_grad for i in index)):
            return result
        new = BackwardHookFunction.apply(self, True, *(outs[i] for i in index))
        wrapped = list(outs)
        for i, t in zip(index, new):
            wrapped[i] = t
        return tuple(wrapped) if isinstance(result, tuple) else wrapped[0]

    def on_output_grads(self, grads: tuple) -> tuple:
        """The pre-hooks, then (no input requiring grad) the hooks with grad_input None."""
        grads = _replaced(self.pre_hooks, lambda hook, g: hook(self.module, g), grads,
                          "Backward pre hook", "grad_output")
        self.grad_outputs = grads
        if self.input_index is None:
            if self.hooks:
                warnings.warn(NO_INPUT_GRADS, UserWarning, stacklevel=2)
            none = (None,) * self.n_inputs
            for hook in list(self.hooks.values()):
                new = hook(self.module, none, grads)
                if new is not None and not (isinstance(new, tuple)
                                            and all(g is None for g in new)):
                    raise RuntimeError("Backward hook for Modules where no input requires "
                                       "gradient should always return None or None for all "
                                       "gradients.")
            self.grad_outputs = None
        return grads

    def on_input_grads(self, grads: tuple) -> tuple:
        """The hooks with (grad_input, grad_output); a result replaces grad_input."""
        packed = [None] * self.n_inputs
        for i, g in zip(self.input_index, grads):
            packed[i] = g
        grad_input = _replaced(self.hooks,
                               lambda hook, g: hook(self.module, g, self.grad_outputs),
                               tuple(packed), "Backward hook", "grad_input")
        self.grad_outputs = None
        return tuple(grad_input[i] for i in self.input_index)


class BackwardHookFunction(Function):
    """The identity, whose backward calls the module's hooks (torch's class of the name)."""

    @staticmethod
    def forward(ctx: Any, hook: BackwardHook, is_output: bool, *tensors: Tensor) -> tuple:
        ctx.hook, ctx.is_output = hook, is_output
        ctx.mark_non_differentiable(*[t for t in tensors if not t.requires_grad])
        return tensors

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> tuple:
        hook = ctx.hook
        out = hook.on_output_grads(grads) if ctx.is_output else hook.on_input_grads(grads)
        return (None, None) + tuple(out)
