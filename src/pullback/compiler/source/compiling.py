"""Compiling a rewritten function node back into a code object: in the user's file,
with the function's own ``from __future__`` flags, its free variables and the runtime
as a factory's arguments, and (a method) inside a class of its class's name.
"""

from __future__ import annotations
import __future__

import ast
import functools
import threading
import types
from typing import Any

import gast

from .nodes import RUNTIME_NAME, _at, _name

_FACTORY = "__pb_factory__"
#: the ``from __future__`` flags a code object carries (compiled again with its own)
_FUTURE = functools.reduce(lambda a, b: a | b, (getattr(__future__, f).compiler_flag
                                                for f in __future__.all_feature_names))
#: held while CPython turns source into AST objects or AST objects into code: the
#: depth counter it keeps while doing so is one per interpreter, not per thread, so
#: two threads converting at once (a thread switch inside a garbage collection)
#: fail with "SystemError: AST constructor recursion depth mismatch"
_AST_LOCK = threading.Lock()


def compile_function(node: Any, fn: types.FunctionType) -> types.CodeType:
    """The code of ``node``, compiled under the function's file name inside a factory
    whose arguments are the function's free variables and the runtime (and, for a
    method, inside a class of its class's name, so private names mangle as before
    and ``super()`` finds ``__class__``)."""
    code = fn.__code__
    cls = _class_name(getattr(code, "co_qualname", fn.__qualname__))
    inner = node if isinstance(node, gast.FunctionDef) else gast.Expr(value=node)
    if cls is not None:
        inner = gast.ClassDef(name=cls, bases=[], keywords=[], body=[inner],
                              decorator_list=[], type_params=[])
    names = [RUNTIME_NAME] + [n for n in code.co_freevars if cls is None or n != "__class__"]
    # the factory only gives the code its scopes (it never runs): the names its ``def``
    # and ``class`` bind stay global there, as they were where the function was defined
    bound = [n for n in (cls, getattr(node, "name", None)) if n is not None and n not in names]
    body = [gast.Global(names=bound)] if bound else []
    factory = gast.FunctionDef(
        name=_FACTORY, args=gast.arguments(args=[_name(n, gast.Param()) for n in names],
                                           posonlyargs=[], vararg=None, kwonlyargs=[],
                                           kw_defaults=[], kwarg=None, defaults=[]),
        body=[_at(b, node) for b in body] + [gast.copy_location(inner, node)],
        decorator_list=[], returns=None, type_comment=None, type_params=[])
    module = gast.Module(body=[gast.copy_location(factory, node)], type_ignores=[])
    tree = ast.fix_missing_locations(gast.gast_to_ast(module))
    with _AST_LOCK:
        module_code = compile(tree, code.co_filename, "exec",
                              flags=code.co_flags & _FUTURE, dont_inherit=True)
    new = _child(_child(module_code, _FACTORY), cls)
    new = _child(new, code.co_name)
    if hasattr(new, "co_qualname"):
        new = new.replace(co_qualname=code.co_qualname)
    return new


def _class_name(qualname: str) -> str | None:
    parts = qualname.split(".")
    return parts[-2] if len(parts) > 1 and parts[-2] != "<locals>" else None


def _child(code: types.CodeType, name: str | None) -> types.CodeType:
    if name is None:
        return code
    return next(c for c in code.co_consts if isinstance(c, types.CodeType) and c.co_name == name)


def codes_in(code: types.CodeType) -> list:
    found = [code]
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            found += codes_in(c)
    return found
