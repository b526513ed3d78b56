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


class no_grad(_DecoratorContext):
    """Disable graph recording: results of ops are leaves with requires_grad=False."""

    def __init__(self, orig_func=None) -> None:
        self.prev = None

    def __enter__(self) -> None:
        self.prev = STATE.grad_enabled
        STATE.grad_enabled = False

    def __exit__(self, *exc: object) -> None:
        STATE.grad_enabled = self.prev


class enable_grad(_DecoratorContext):
    """Enable graph recording, e.g. inside a no_grad block."""

    def __init__(self, orig_func=None) -> None:
        self.prev = None

    def __enter__(self) -> None:
        self.prev = STATE.grad_enabled
        STATE.grad_enabled = True

    def __exit__(self, *exc: object) -> None:
        STATE.grad_enabled = self.prev


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
