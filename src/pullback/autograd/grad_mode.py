"""Grad modes: no_grad, enable_grad, set_grad_enabled, inference_mode.

The mode is thread-local, as in torch: a new thread starts with grad enabled.

>>> import pullback as pb
>>> x = pb.ones(2, requires_grad=True)
>>> with pb.no_grad():
...     y = x * 2
>>> y.requires_grad, pb.is_grad_enabled()
(False, True)
"""

from __future__ import annotations

import functools
import inspect
import threading
from typing import Any, Callable


class _ModeState(threading.local):
    def __init__(self) -> None:
        self.grad_enabled = True
        self.inference = False


STATE = _ModeState()


def is_grad_enabled() -> bool:
    """Whether ops record a graph in this thread."""
    return STATE.grad_enabled


def is_inference_mode_enabled() -> bool:
    return STATE.inference


class _DecoratorContext:
    """A context manager that also works as a decorator (with or without parentheses)."""

    def __new__(cls, orig_func=None, *args, **kwargs):
        if cls is not set_grad_enabled and callable(orig_func) and not args and not kwargs:
            return cls()(orig_func)  # bare @no_grad
        return super().__new__(cls)

    def clone(self):
        return self.__class__()

    def __call__(self, func: Callable) -> Callable:
        if inspect.isgeneratorfunction(func):
            return self._wrap_generator(func)

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self.clone():
                return func(*args, **kwargs)

        return wrapper

    def _wrap_generator(self, func: Callable) -> Callable:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any):
            gen = func(*args, **kwargs)
            try:
                with self.clone():
                    value = gen.send(None)
                while True:
                    try:
                        sent = yield value
                    except GeneratorExit:
                        with self.clone():
                            gen.close()
                        raise
                    except BaseException as e:  # forward throw() into the generator
                        with self.clone():
                            value = gen.throw(e)
                    else:
                        with self.clone():
                            value = gen.send(sent)
            except StopIteration as e:
                return e.value

        return wrapper


class _GradSwitch(_DecoratorContext):
    """Grad mode set to ``_enabled`` inside the block, the previous mode restored after."""

    _enabled: bool

    def __init__(self, orig_func=None) -> None:
        self.prev = None

    def __enter__(self) -> None:
        self.prev = STATE.grad_enabled
        STATE.grad_enabled = self._enabled

    def __exit__(self, *exc: object) -> None:
        STATE.grad_enabled = self.prev


class no_grad(_GradSwitch):
    """Disable graph recording: results of ops are leaves with requires_grad=False."""

    _enabled = False


class enable_grad(_GradSwitch):
    """Enable graph recording, e.g. inside a no_grad block."""

    _enabled = True


class set_grad_enabled(_DecoratorContext):
    """Set grad mode; as a plain call it persists, as a context it is restored on exit."""

    def __init__(self, mode: bool) -> None:
        self.prev = STATE.grad_enabled
        self.mode = bool(mode)
        STATE.grad_enabled = self.mode

    def clone(self):
        return self.__class__(self.mode)

    def __call__(self, func: Callable) -> Callable:
        STATE.grad_enabled = self.prev  # used as a decorator: undo the eager switch
        return super().__call__(func)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: object) -> None:
        STATE.grad_enabled = self.prev


class inference_mode(_DecoratorContext):
    """Like no_grad, and tensors made inside are inference tensors."""

    def __init__(self, mode: Any = True) -> None:
        if callable(mode):  # @inference_mode without parentheses handled by __new__
            mode = True
        self.mode = bool(mode)
        self.prev = None

    def clone(self):
        return self.__class__(self.mode)

    def __enter__(self) -> None:
        self.prev = (STATE.grad_enabled, STATE.inference)
        STATE.grad_enabled = not self.mode  # torch: inference_mode(False) enables grad
        STATE.inference = self.mode

    def __exit__(self, *exc: object) -> None:
        STATE.grad_enabled, STATE.inference = self.prev


# ------------------------------------------------------------- modes that touch every node
# Anomaly mode (the forward traceback of each node) and saved-tensor hooks (pack what a
# node saves) both do work when a node is made. Almost always neither is on: the op hot
# path then pays one check of a plain module global (``record.EXTRAS``, ``edges.EXTRAS``),
# kept in step by the listeners below, and nothing else.
_NODE_EXTRAS: dict[str, Callable] = {}  # name -> fn(node), run on every new node
_EXTRAS_LISTENERS: list[Callable] = []


def set_node_extra(name: str, fn: Callable | None) -> None:
    """Run ``fn(node)`` on every node made from now on (None: stop running ``name``)."""
    if fn is None:
        _NODE_EXTRAS.pop(name, None)
    else:
        _NODE_EXTRAS[name] = fn
    on = bool(_NODE_EXTRAS)
    for listener in _EXTRAS_LISTENERS:
        listener(on)


def on_node_extras(listener: Callable) -> None:
    """``listener(on)`` now and whenever some extra starts or the last one stops."""
    _EXTRAS_LISTENERS.append(listener)
    listener(bool(_NODE_EXTRAS))


def new_node(node: Any) -> None:
    """The extras' work on a node just made (callers check that some extra is on)."""
    for fn in list(_NODE_EXTRAS.values()):
        fn(node)
