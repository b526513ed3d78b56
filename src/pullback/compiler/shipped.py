"""What an exported module calls besides numpy, shipped with it as source: the helpers
of ``pullback.ops.runtime`` it calls as ``rt.<name>``, the ops it calls as ``ops.<name>``
(no numpy template: each op's forward), and every function they read, as pullback
defines them (plain numpy), collected by walking the names their code reads.

>>> import pullback as pb
>>> print(shipped(["median_all"], None).splitlines()[-1])
ops = types.SimpleNamespace(median_all=_lower_median)
>>> print(shipped([], None, ["log_softmax"]).splitlines()[-1])
rt = types.SimpleNamespace(log_softmax=log_softmax)
"""

from __future__ import annotations

import ast
import dis
import fractions
import inspect
import textwrap
import types
from typing import Any, Callable

import numpy as np

from ..ops import OPS, runtime
from .user_lines import def_line


class ExportError(TypeError):
    """What generated code reads cannot be written into a standalone module (an op's
    forward reading a random generator, a Python object with no literal)."""


def shipped(names: list, fn: Callable | None, helpers: list = ()) -> str:
    """The source defining ``ops.<name>`` for each of ``names``, ``rt.<name>`` for each
    of ``helpers``, and what they read."""
    defined = _Defined()  # name in the module -> its source
    spaces = []
    for space, chosen, of in (("rt", helpers, lambda n: getattr(runtime, n)),
                              ("ops", names, lambda n: OPS[n].forward)):
        binding = [f"{name}={_define(of(name), defined, fn, name)}" for name in chosen]
        if binding:
            spaces.append(f"{space} = types.SimpleNamespace({', '.join(binding)})")
    return "\n\n\n".join([*defined.values(), *spaces])


def _define(obj: Any, defined: dict, fn: Callable | None, op: str) -> str:
    """The module-level name ``obj`` gets (defining it, and what it reads, first)."""
    if isinstance(obj, np.ufunc) or _of_numpy(obj):
        return f"np.{obj.__name__}"
    if not isinstance(obj, types.FunctionType):
        raise _error(fn, op, obj)
    if id(obj) in defined.names:
        return defined.names[id(obj)]
    name = obj.__name__ if obj.__name__ != "<lambda>" else f"_{op}_forward"
    while name in defined:  # (another function of that name: a kernel's wrapper)
        name = "_" + name
    defined.names[id(obj)] = name
    defined[name] = ""  # (a recursion reads it as defined)
    source = _source(obj, name, fn, op)
    for free in _globals_read(obj):
        value = obj.__globals__.get(free)
        if value is None or free in ("np", "math") or isinstance(value, types.ModuleType):
            _check_module(value, free, fn, op)
            continue
        text = _literal(value)
        if text is not None:  # (once, above all that read it; another value: here)
            line = f"{free} = {text}"
            if defined.setdefault(free, line) != line:
                source = line + "\n" + source
        elif isinstance(value, (types.FunctionType, np.ufunc)) or _of_numpy(value):
            got = _define(value, defined, fn, op)
            if got != free:
                source = f"{free} = {got}\n" + source
        else:
            raise _error(fn, op, value)
    if obj.__closure__:
        source = _closure(obj, name, source, defined, fn, op)
    defined.pop(name)
    defined[name] = source
    return name


def _of_numpy(obj: Any) -> bool:
    """Whether ``obj`` is numpy's function of its name (``np.transpose``: a dispatcher,
    no Python function)."""
    return getattr(np, getattr(obj, "__name__", ""), None) is obj


class _Defined(dict):
    """The module's definitions in order (name -> source), and the name each function
    got (``names``: id -> name; two functions of one ``__name__`` get two names)."""

    def __init__(self) -> None:
        super().__init__()
        self.names: dict[int, str] = {}


def _closure(obj: types.FunctionType, name: str, source: str, defined: dict,
             fn: Callable | None, op: str) -> str:
    """A function made inside another (a kernel's chunked wrapper) as a factory of its
    free variables, called with them: ``name = _make_name(kernel=_erf)``."""
    values = []
    for free, cell in zip(obj.__code__.co_freevars, obj.__closure__):
        value = cell.cell_contents
        text = _literal(value)
        if text is None and isinstance(value, (types.FunctionType, np.ufunc)):
            text = _define(value, defined, fn, op)
        if text is None:
            raise _error(fn, op, value)
        values.append(f"{free}={text}")
    inner = obj.__code__.co_name
    return (f"def _make_{name}({', '.join(obj.__code__.co_freevars)}):\n"
            + textwrap.indent(source, "    ") + f"\n    return {inner}\n\n\n"
            f"{name} = _make_{name}({', '.join(values)})")


def _source(obj: types.FunctionType, name: str, fn: Callable | None, op: str) -> str:
    text = textwrap.dedent(inspect.getsource(obj))
    if obj.__name__ != "<lambda>":  # (without its decorators: their result is the caller's)
        text = text[text.index("def "):].rstrip() if text.startswith("@") else text.rstrip()
        code = obj.__code__.co_name  # (the name its def line gives, as renamed: name)
        return text if code == obj.__name__ == name or obj.__closure__ else \
            text.replace(f"def {code}(", f"def {name}(", 1)
    lambdas = [n for n in ast.walk(ast.parse(_statement(text))) if isinstance(n, ast.Lambda)]
    if len(lambdas) > 1:  # (an op's statement: its forward's and its rules' lambdas)
        params = obj.__code__.co_varnames[:obj.__code__.co_argcount]
        lambdas = [n for n in lambdas if n.lineno == 1 and  # (text starts at its line)
                   tuple(a.arg for a in n.args.args) == params]
    if len(lambdas) != 1:
        raise _error(fn, op, obj)
    lam = lambdas[0]
    args = ast.unparse(lam.args)
    return f"def {name}({args}):\n    return {ast.unparse(lam.body)}"


def _statement(text: str) -> str:
    """The first complete statement of ``text`` (a lambda's source is the lines of the
    statement it stands in, which may go on after it)."""
    lines = text.splitlines()
    for k in range(1, len(lines) + 1):
        chunk = "\n".join(lines[:k])
        try:
            ast.parse(chunk)
        except SyntaxError:
            continue
        return chunk
    return text


def _literal(value: Any) -> str | None:
    """Python source for a plain value (numbers, fractions, strings, numpy dtypes and
    containers of them), or None."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return repr(value)
    if isinstance(value, np.dtype):
        return f"np.dtype({value.name!r})"
    if isinstance(value, fractions.Fraction):  # (the exported module imports fractions)
        return f"fractions.Fraction({value.numerator}, {value.denominator})"
    if isinstance(value, (tuple, list, set, frozenset)):
        items = [_literal(v) for v in value]
        if any(i is None for i in items):
            return None
        inner = ", ".join(items) + ("," if isinstance(value, tuple) and len(items) == 1 else "")
        return {tuple: f"({inner})", list: f"[{inner}]"}.get(type(value),
                                                               f"{type(value).__name__}([{inner}])")
    if isinstance(value, dict):
        pairs = [(_literal(k), _literal(v)) for k, v in value.items()]
        if any(k is None or v is None for k, v in pairs):
            return None
        return "{" + ", ".join(f"{k}: {v}" for k, v in pairs) + "}"
    return None


def _globals_read(obj: types.FunctionType) -> list:
    """The module-level names ``obj`` (and the functions nested in it) load."""
    names: list = []
    stack = [obj.__code__]
    while stack:
        code = stack.pop()
        for ins in dis.get_instructions(code):
            if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME") and ins.argval not in names \
                    and ins.argval in obj.__globals__:
                names.append(ins.argval)
        stack += [c for c in code.co_consts if isinstance(c, types.CodeType)]
    return names


def _check_module(value: Any, name: str, fn: Callable | None, op: str) -> None:
    if value is np or name == "np" or (isinstance(value, types.ModuleType) and
                                      value.__name__ in ("math", "numpy")):
        return
    if value is None:
        return
    raise _error(fn, op, value)


def _error(fn: Callable | None, op: str, what: Any) -> ExportError:
    where = f"the code generated for {def_line(fn)}" if fn is not None else "an export"
    return ExportError(f"export: {where} calls pullback's {op}, whose numpy forward reads "
                         f"{getattr(what, '__name__', type(what).__name__)}, which cannot be "
                         "shipped as source")


__all__ = ["shipped", "ExportError"]
