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

import functools
from typing import Any

from ..compiler.captured import own_guards
from ..compiler.compiled import CompiledFunction
from ..compiler.disk_variants import NotPortable, describe, literal
from ..compiler.trace_names import capture_names
from .state import ModuleGuard, library_forward, module_signature, signature


class CompiledModule(CompiledFunction):
    """A compiled module: calls run ``module(*args)`` as generated code (``forward``
    names the trace and binds keyword arguments). Other attributes are the module's
    (``parameters()``, ``train()``, ``state_dict()``...), as with torch.compile's
    wrapper; ``module`` is the module itself."""

    def __init__(self, module: Any, maxsize: int | None = None) -> None:
        super().__init__(module.forward, maxsize, target=module)
        self.__dict__["module"] = module

    def traced_variant(self, args: tuple) -> Any:
        """Trace with the parameters and buffers named after their dotted names
        (``layer0_weight`` for ``0.weight``) in the generated code."""
        module = self.__dict__["module"]
        named = list(module.named_parameters()) + list(module.named_buffers())
        with capture_names({id(t): _identifier(n) for n, t in named}):
            return super().traced_variant(args)

    def described(self) -> tuple[Any, dict, Any, Any]:
        """The module for the persistent cache (``CompiledFunction.described``): its
        tensors by dotted name, its guard (which the description covers) and, for a
        module whose every ``forward`` is pullback's, called as ``module(...)``, the
        walk's result made from the module's guard alone (``own_guards``; the guard's
        signature taken in the description's walk of the module tree)."""
        module = self.__dict__["module"]
        tables: tuple = ({}, {})  # (named_parameters' and named_buffers', from one walk)
        signatures: list = []
        paths: dict = {}
        said = portable(module, tables, signatures, paths)
        own = functools.partial(_own, module, paths)
        fn = self.fn
        guards = None
        if getattr(fn, "__self__", None) is module and fn.__func__ is type(module).forward \
                and len(signatures) == len(said):  # (every module's forward pullback's)
            guards = lambda compiled: own_guards(  # noqa: E731
                module, ModuleGuard(module, signature, tuple(signatures)), fn.__func__,
                compiled)
        return said, tables[0] | tables[1], own, guards

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.__dict__["module"], name)

    def __repr__(self) -> str:
        return f"CompiledModule({self.__dict__['module']!r})"


def _own(module: Any, paths: dict, v: Any) -> list | None:
    """``v`` (a bound value of the captured-value walk) as the key describes it: the
    module, one of its submodules by its dotted name (a user's ``Block`` in a
    ``ModuleList``), a guard of either, or a submodule's table of submodules,
    parameters or buffers (``block._modules``, which ``block.lin`` reads); None for
    anything else. ``paths``: ``portable``'s."""
    m = v.module if type(v) is ModuleGuard else v
    if m is module:
        return ["this module"]
    path = paths.get(id(m))
    return None if path is None else ["this module", *path]


def portable(module: Any, tables: tuple | None = None, signatures: list | None = None,
             paths: dict | None = None) -> list:
    """What a trace of ``module`` depends on (``signature``'s), in plain values that
    hold in another process; ``NotPortable`` for a hook or a value that is not plain.
    ``tables``: two dicts filled as ``named_parameters()`` and ``named_buffers()`` do
    (each tensor under its first dotted name); ``signatures``: a list given the modules'
    ``module_signature`` (together: ``signature(module)``) while every module's forward
    is pullback's (the walk makes a user module's guard: it is not taken twice);
    ``paths``: a dict given id -> [dotted name] of each submodule, and -> [dotted name,
    table] of its tables of submodules, parameters and buffers (which ``_own`` names)."""
    out, tables = [], tables or ({}, {})
    seen: tuple = (set(), set())
    paths = {} if paths is None else paths
    for name, m in module.named_modules():
        paths[id(m)] = [name]
        for table in ("_modules", "_parameters", "_buffers"):
            paths.setdefault(id(m.__dict__[table]), [name, table])
        for table, found, ids in zip(("_parameters", "_buffers"), tables, seen):
            for k, t in m.__dict__[table].items():
                if t is not None and id(t) not in ids:
                    ids.add(id(t))
                    found[name + "." + k if name else k] = t
        d = m.__dict__
        if any(d.get(table) for table in _HOOKS):
            raise NotPortable("a hook")
        library = library_forward(type(m))
        attrs = [(k, literal(v)) for k, v in d.items() if not k.startswith("_")] \
            if library else [("training", literal(d["training"]))]
        tensors = [[k, None if t is None else [t._data.dtype.str, list(t._data.shape),
                                               t._requires_grad, type(t).__name__]]
                   for table in ("_parameters", "_buffers") for k, t in d[table].items()]
        out.append([name, describe(type(m)), attrs, tensors, list(d["_modules"]),
                    sorted(d["_non_persistent_buffers_set"])])
        if signatures is not None and library and len(signatures) == len(out) - 1:
            signatures.append(module_signature(m))
    return out


_HOOKS = ("_forward_pre_hooks", "_forward_hooks", "_backward_pre_hooks", "_backward_hooks")


def _identifier(dotted: str) -> str:
    name = dotted.replace(".", "_")
    return "layer" + name if name[:1].isdigit() else name


__all__ = ["CompiledModule", "portable"]
