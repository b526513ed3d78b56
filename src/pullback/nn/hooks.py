"""Module forward hooks: the tables they live in and the call that runs them.

A table is a dict from handle id to hook, in the order hooks run; ``remove()`` on a
handle takes the hook out (a change of module state, as adding one is).
"""

from __future__ import annotations

from typing import Any, Callable

from ..autograd.graph import RemovableHandle
from . import state
from .backward_hooks import BackwardHook


class HookTable(dict):
    """Hooks by handle id; ``kwargs`` and ``always`` hold the ids registered with
    ``with_kwargs=True`` and ``always_call=True``."""

    __slots__ = ("__weakref__", "kwargs", "always")

    def __init__(self) -> None:
        super().__init__()
        self.kwargs: set = set()
        self.always: set = set()

    def add(self, hook: Callable, prepend: bool = False, with_kwargs: bool = False,
            always_call: bool = False) -> RemovableHandle:
        if not callable(hook):
            raise TypeError(f"hook must be callable, got {type(hook).__name__}")
        handle = RemovableHandle(self)
        items = list(self.items())
        self.clear()
        self.update([(handle.id, hook)] + items if prepend else items + [(handle.id, hook)])
        if with_kwargs:
            self.kwargs.add(handle.id)
        if always_call:
            self.always.add(handle.id)
        state.changed()
        return handle

    def pop(self, key: Any, *default: Any) -> Any:
        self.kwargs.discard(key)
        self.always.discard(key)
        state.changed()
        return dict.pop(self, key, *default)

    def __reduce__(self) -> Any:  # (deepcopy: a model copied keeps its hooks)
        return (_table, (list(self.items()), set(self.kwargs), set(self.always)))


def _table(items: list, kwargs: set, always: set) -> HookTable:
    t = HookTable()
    t.update(items)
    t.kwargs, t.always = kwargs, always
    return t


def call_with_hooks(module: Any, args: tuple, kwargs: dict) -> Any:
    """``module(*args, **kwargs)`` with its forward pre-hooks and hooks, as torch runs
    them: a pre-hook may replace the arguments, a hook the result."""
    pre = module._forward_pre_hooks
    for hid, hook in list(pre.items()):
        if hid in pre.kwargs:
            new = hook(module, args, kwargs)
            if new is not None:
                if not (isinstance(new, tuple) and len(new) == 2):
                    raise RuntimeError("forward pre-hook must return None or a tuple of "
                                       f"(new_args, new_kwargs), but got {new}.")
                args, kwargs = new
        else:
            new = hook(module, args)
            if new is not None:
                args = new if isinstance(new, tuple) else (new,)
    post = module._forward_hooks
    d = module.__dict__
    bw = None
    if d.get("_backward_hooks") or d.get("_backward_pre_hooks"):
        bw = BackwardHook(module, d.get("_backward_hooks", {}), d.get("_backward_pre_hooks", {}))
        args = bw.setup_input_hook(args)
    try:
        result = module.forward(*args, **kwargs)
    except Exception:
        for hid, hook in list(post.items()):
            if hid in post.always:
                _run_post(post, hid, hook, module, args, kwargs, None)
        raise
    for hid, hook in list(post.items()):
        new = _run_post(post, hid, hook, module, args, kwargs, result)
        if new is not None:
            result = new
    return result if bw is None else bw.setup_output_hook(result)


def _run_post(post: HookTable, hid: int, hook: Callable, module: Any, args: tuple,
              kwargs: dict, result: Any) -> Any:
    if hid in post.kwargs:
        return hook(module, args, kwargs, result)
    return hook(module, args, result)


__all__ = ["HookTable", "call_with_hooks"]
