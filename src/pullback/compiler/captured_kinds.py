"""What kind of value a captured value is, for the captured-value walk (``captured.py``):
a class, module or object of the user's (entered for the attributes the code names), an
object guarding its own state (``_pb_capture_guard``), or a scalar (guarded by value).
"""

from __future__ import annotations

import builtins
import functools
import sys
import types
from typing import Any, Callable

import numpy as np

from ..user_code import is_user_file

_SCALARS = (bool, int, float, complex, str, bytes, type(None), np.generic, np.dtype)
_NOT_OBJECTS = (type, types.ModuleType, types.FunctionType, types.MethodType,
                types.BuiltinFunctionType, functools.partial)

#: ``Py_TPFLAGS_HEAPTYPE``: a class made at run time, not one built into Python
_HEAPTYPE = 1 << 9


def _user_type(cls: type) -> bool:
    """A class of the user's: from a user module, ``__main__`` (a script, a notebook, a
    prompt) or code run without a module (``exec``, a doctest). A ``class`` statement
    run by ``exec`` in globals without ``__name__`` is filed under ``builtins``: a class
    made at run time that ``builtins`` does not hold is the user's (its attributes are
    guarded like any other user object's)."""
    if getattr(cls, "__module__", None) == "builtins":
        return bool(getattr(cls, "__flags__", 0) & _HEAPTYPE) and \
            getattr(builtins, cls.__name__, None) is not cls
    module = sys.modules.get(getattr(cls, "__module__", None) or "")
    if module is None or module.__name__ == "__main__":
        return True
    name = getattr(module, "__file__", None)
    return isinstance(name, str) and is_user_file(name)


def _user_module(m: types.ModuleType) -> bool:
    """A module of the user's files, or one made at run time (``types.ModuleType``,
    with no file and not built into Python)."""
    name = getattr(m, "__file__", None)
    if name is None:
        return getattr(m, "__spec__", None) is None and \
            m.__name__ not in sys.builtin_module_names
    return isinstance(name, str) and is_user_file(name)


def _own_guard(v: Any) -> Callable | None:
    """``type(v)._pb_capture_guard``: ``f(v) -> (check, calls)``, a check of ``v``'s
    state (true while it is what the trace saw) and the functions ``v`` runs when
    called (followed for what they capture); None for other objects."""
    return getattr(type(v), "_pb_capture_guard", None)


def _user_object(v: Any) -> bool:
    """An object whose attributes are the user's state: of a user class, or a
    ``SimpleNamespace`` (a common bag of settings)."""
    return (not isinstance(v, _NOT_OBJECTS) and isinstance(getattr(v, "__dict__", None), dict)
            and (type(v) is types.SimpleNamespace or _user_type(type(v))))
