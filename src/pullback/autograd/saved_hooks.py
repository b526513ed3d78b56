"""Saved-tensor hooks: ``pack`` what the graph saves for backward, ``unpack`` it there.

torch's ``torch.autograd.graph.saved_tensors_hooks(pack_hook, unpack_hook)``: while the
context is open in a thread, every tensor a new node of that thread saves (an op's
inputs and result, a custom Function's ``save_for_backward``) goes through
``pack_hook`` (run with grad disabled), and the node keeps what it returns instead of
the tensor. Backward calls ``unpack_hook`` on it and uses the tensor that comes back.
The innermost pair of hooks wins; a packed value is not version-checked (the hooks own
it). ``pullback.autograd.graph`` re-exports the public names.

>>> import pullback as pb
>>> from pullback.autograd.graph import saved_tensors_hooks
>>> x = pb.tensor([1., 2.], requires_grad=True)
>>> packed = []
>>> with saved_tensors_hooks(lambda t: packed.append(t.shape) or t.detach(), lambda p: p):
...     y = x.exp()
>>> y.sum().backward()
>>> packed, x.grad
([(2,)], tensor([2.7183, 7.3891]))
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Callable, Iterator

from .grad_mode import STATE, set_node_extra

Tensor: Any = None  # set by pullback.tensor (the class imports the autograd package)


class _Stack(threading.local):
    def __init__(self) -> None:
        self.hooks: list[tuple[Callable, Callable]] = []
        self.disabled: str | None = None  # disable_saved_tensors_hooks's message


_STACK = _Stack()
_ACTIVE = 0  # hook contexts open in any thread: new nodes are packed while it is not 0
_LOCK = threading.Lock()

UNPACK_NOT_TENSOR = ("Output of saved tensor unpack_hook expected to be a Tensor but got result "
                     "of type {typ}")


class saved_tensors_hooks:
    """Context manager: ``pack_hook(tensor)`` on every tensor saved for backward inside
    it, ``unpack_hook(packed)`` when backward needs it back (torch's signature)."""

    def __init__(self, pack_hook: Callable[[Any], Any],
                 unpack_hook: Callable[[Any], Any]) -> None:
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self) -> None:
        global _ACTIVE
        if _STACK.disabled is not None:
            raise RuntimeError(_STACK.disabled)
        _STACK.hooks.append((self.pack_hook, self.unpack_hook))
        with _LOCK:
            _ACTIVE += 1
            if _ACTIVE == 1:
                set_node_extra("saved_tensors_hooks", _pack_node)

    def __exit__(self, *exc: object) -> None:
        global _ACTIVE
        _STACK.hooks.pop()
        with _LOCK:
            _ACTIVE -= 1
            if _ACTIVE == 0:
                set_node_extra("saved_tensors_hooks", None)


class save_on_cpu(saved_tensors_hooks):
    """torch's context that moves saved tensors to CPU memory until backward. numpy
    arrays live in CPU memory already, so the hooks keep the tensor as it is (torch
    does the same for a tensor already on the CPU: ``tensor.cpu()`` is the tensor);
    they are real hooks all the same, so ``saved_tensors_hooks`` nested inside win and
    ``disable_saved_tensors_hooks`` refuses it. ``pin_memory`` and ``device_type`` are
    accepted and have nothing to do."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        super().__init__(_pack_to_cpu, _unpack_from_cpu)


def _pack_to_cpu(t: Any) -> tuple:
    return ("cpu", t)


def _unpack_from_cpu(packed: tuple) -> Any:
    return packed[1]


@contextlib.contextmanager
def disable_saved_tensors_hooks(error_message: str) -> Iterator[None]:
    """Inside it, entering ``saved_tensors_hooks`` raises ``RuntimeError(error_message)``."""
    prev = _STACK.disabled
    _STACK.disabled = error_message
    try:
        yield
    finally:
        _STACK.disabled = prev


def current() -> tuple[Callable, Callable] | None:
    """This thread's innermost (pack, unpack) pair, or None."""
    return _STACK.hooks[-1] if _ACTIVE and _STACK.hooks else None


def _pack_node(node: Any) -> None:
    hooks = current()
    if hooks is not None:
        node._pack_saved(hooks)


class PackedTensor:
    """What a node keeps of a saved tensor while hooks were on: ``pack_hook``'s result,
    the ``unpack_hook`` to call, and the tensor's place in the graph (so that, under
    create_graph, the unpacked value differentiates back to where the tensor came
    from, as torch rebuilds it)."""

    __slots__ = ("packed", "unpack_hook", "edge")

    def __init__(self, t: Any, hooks: tuple[Callable, Callable], edge: tuple | None) -> None:
        prev = STATE.grad_enabled
        STATE.grad_enabled = False  # torch runs pack hooks with grad disabled
        try:
            self.packed = hooks[0](t)
        finally:
            STATE.grad_enabled = prev
        self.unpack_hook = hooks[1]
        self.edge = edge  # (node, output_nr) the tensor's gradient flows into, or None

    def unpack(self, create_graph: bool) -> Any:
        t = self.unpack_hook(self.packed)
        if not isinstance(t, Tensor):
            raise TypeError(UNPACK_NOT_TENSOR.format(typ=type(t).__name__))
        if not create_graph:
            return t._data
        if self.edge is None:
            return t
        return with_history(t._data, self.edge)


class PackedOutput(PackedTensor):
    """A node's own result, packed: its history is the node itself."""

    __slots__ = ("output_nr",)

    def __init__(self, t: Any, hooks: tuple[Callable, Callable], output_nr: int) -> None:
        PackedTensor.__init__(self, t, hooks, None)
        self.output_nr = output_nr

    def unpack(self, create_graph: bool, node: Any = None) -> Any:  # type: ignore[override]
        t = self.unpack_hook(self.packed)
        if not isinstance(t, Tensor):
            raise TypeError(UNPACK_NOT_TENSOR.format(typ=type(t).__name__))
        if not create_graph:
            return t._data
        return with_history(t._data, (node, self.output_nr))


def with_history(data: Any, edge: tuple) -> Any:
    """A tensor holding ``data`` whose gradient flows into ``edge`` (a leaf's
    AccumulateGrad included: the gradient then reaches that leaf's ``.grad``)."""
    out = Tensor._make(data, grad_fn=edge[0])
    out._output_nr = edge[1]
    return out
