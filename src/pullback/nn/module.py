"""``Module``: torch.nn.Module's registration, traversal, modes, hooks and repr.

>>> import pullback as pb
>>> from pullback import nn
>>> class TwoLayer(nn.Module):
...     def __init__(self):
...         super().__init__()
...         self.hidden = nn.Linear(3, 4)
...         self.out = nn.Linear(4, 2)
...         self.register_buffer("calls", pb.zeros(()))
...     def forward(self, x):
...         return self.out(self.hidden(x).relu())
>>> net = TwoLayer()
>>> net
TwoLayer(
  (hidden): Linear(in_features=3, out_features=4, bias=True)
  (out): Linear(in_features=4, out_features=2, bias=True)
)
>>> [name for name, _ in net.named_parameters()]
['hidden.weight', 'hidden.bias', 'out.weight', 'out.bias']
>>> net(pb.ones(5, 3)).shape, net.eval().training, net.hidden.training
((5, 2), False, False)
"""

from __future__ import annotations

from typing import Any, Callable, Iterator

import numpy as np

from .. import devices, dtypes
from ..autograd.grad_mode import no_grad
from ..autograd.graph import RemovableHandle
from ..tensor import Tensor
from . import state
from .compiled import CompiledModule
from .hooks import HookTable, call_with_hooks
from .parameter import Parameter
from .state import signature
from .state_dict import StateDictMixin, typename


class Module(StateDictMixin):
    """Base class of every layer. Assigning a ``Parameter``, a ``Module`` or (to a
    registered buffer's name) a Tensor registers it, as in torch."""

    training: bool

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if args or kwargs:
            extra = next(iter(kwargs), None)
            raise TypeError(f"{type(self).__name__}.__init__() got an unexpected keyword "
                            f"argument '{extra}'" if extra else
                            f"{type(self).__name__}.__init__() takes 1 positional argument "
                            f"but {len(args) + 1} were given")
        d = self.__dict__
        d["training"] = True
        d["_parameters"] = {}
        d["_buffers"] = {}
        d["_non_persistent_buffers_set"] = set()
        d["_modules"] = {}
        d["_forward_pre_hooks"] = HookTable()
        d["_forward_hooks"] = HookTable()
        d["_backward_hooks"] = HookTable()
        d["_backward_pre_hooks"] = HookTable()
        state.changed()

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required '
                                  '"forward" function')

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        d = self.__dict__
        if (self._forward_hooks or self._forward_pre_hooks or d.get("_backward_hooks")
                or d.get("_backward_pre_hooks")):
            return call_with_hooks(self, args, kwargs)
        return self.forward(*args, **kwargs)

    # ------------------------------------------------------------ attributes
    def __getattr__(self, name: str) -> Any:
        d = self.__dict__
        for table in ("_parameters", "_buffers", "_modules"):
            if table in d and name in d[table]:
                return d[table][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name: str, value: Any) -> None:
        d = self.__dict__
        params, modules, buffers = d.get("_parameters"), d.get("_modules"), d.get("_buffers")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._drop(name, d, buffers, modules)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{typename(value)}' as parameter '{name}' "
                                "(torch.nn.Parameter or None expected)")
            self.register_parameter(name, value)
        elif isinstance(value, Module):
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._drop(name, d, params, buffers)
            modules[name] = value
        elif modules is not None and name in modules:
            if value is not None:
                raise TypeError(f"cannot assign '{typename(value)}' as child module '{name}' "
                                "(torch.nn.Module or None expected)")
            modules[name] = value
        elif buffers is not None and name in buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{typename(value)}' as buffer '{name}' "
                                "(torch.nn.Buffer, torch.Tensor or None expected)")
            buffers[name] = value
        else:
            object.__setattr__(self, name, value)
        state.changed()

    def _drop(self, name: str, *tables: Any) -> None:
        for t in tables:
            if t is not None and name in t:
                del t[name]
        self._non_persistent_buffers_set.discard(name)

    def __delattr__(self, name: str) -> None:
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            object.__delattr__(self, name)
        state.changed()

    def __dir__(self) -> list:
        return sorted(set(dir(type(self))) | set(self.__dict__) | set(self._parameters)
                      | set(self._modules) | set(self._buffers))

    # ----------------------------------------------------------- registration
    def _check_name(self, kind: str, name: Any, table: str) -> None:
        if table not in self.__dict__:
            raise AttributeError(f"cannot assign {kind} before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {typename(name)}")
        if "." in name:
            raise KeyError(f'{kind} name can\'t contain "."')
        if name == "":
            raise KeyError(f'{kind} name can\'t be empty string ""')
        if hasattr(self, name) and name not in self.__dict__[table]:
            raise KeyError(f"attribute '{name}' already exists")

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """A tensor the module keeps and saves (``persistent``) but does not train."""
        self._check_name("buffer", name, "_buffers")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{typename(tensor)}' object to buffer '{name}' "
                            "(torch Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)
        state.changed()

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Add a parameter (or None: a slot that holds none, as a Linear without bias)."""
        self._check_name("parameter", name, "_parameters")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{typename(param)}' object to parameter '{name}' "
                            "(torch.nn.Parameter or None required)")
        if param is not None and param.grad_fn is not None:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model "
                             f"parameters must be created explicitly. To express '{name}' as "
                             "a function of another Tensor, compute the value in the "
                             "forward() method.")
        self._parameters[name] = param
        state.changed()

    def add_module(self, name: str, module: Module | None) -> None:
        """Add a child module (``self.name = module`` does the same)."""
        if not isinstance(module, Module) and module is not None:
            raise TypeError(f"{typename(module)} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {typename(name)}")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        self._modules[name] = module
        state.changed()

    register_module = add_module

    def get_submodule(self, target: str) -> Module:
        """The submodule at a dotted path (``"encoder.0"``); ``""`` is the module."""
        mod = self
        for item in target.split(".") if target else ():
            if item not in mod._modules:
                raise AttributeError(f"{mod._get_name()} has no attribute `{item}`")
            mod = mod._modules[item]
        return mod

    def get_parameter(self, target: str) -> Parameter:
        path, _, name = target.rpartition(".")
        mod = self.get_submodule(path)
        if name not in mod._parameters:
            raise AttributeError(f"{mod._get_name()} has no parameter `{name}`")
        return mod._parameters[name]

    # -------------------------------------------------------------- traversal
    def named_modules(self, memo: set | None = None, prefix: str = "",
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Module]]:
        """(dotted name, module) for this module and every submodule, depth first."""
        memo = set() if memo is None else memo
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, child in self._modules.items():
            if child is not None:
                sub = prefix + ("." if prefix else "") + name
                yield from child.named_modules(memo, sub, remove_duplicate)

    def modules(self) -> Iterator[Module]:
        for _, m in self.named_modules():
            yield m

    def named_children(self) -> Iterator[tuple[str, Module]]:
        seen = set()
        for name, child in self._modules.items():
            if child is not None and id(child) not in seen:
                seen.add(id(child))
                yield name, child

    def children(self) -> Iterator[Module]:
        for _, child in self.named_children():
            yield child

    def _named_members(self, table: str, prefix: str, recurse: bool,
                       remove_duplicate: bool) -> Iterator[tuple[str, Any]]:
        seen = set()
        mods = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) \
            if recurse else [(prefix, self)]
        for mod_prefix, mod in mods:
            for name, value in mod.__dict__[table].items():
                if value is None or (remove_duplicate and id(value) in seen):
                    continue
                seen.add(id(value))
                yield mod_prefix + ("." if mod_prefix else "") + name, value

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator[tuple[str, Parameter]]:
        """(dotted name, parameter), each parameter once (shared ones too)."""
        return self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Tensor]]:
        return self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    # ------------------------------------------------------ modes and helpers
    def train(self, mode: bool = True) -> Module:
        """Training mode for this module and its submodules (``eval()``: off)."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        for m in self.modules():
            m.__dict__["training"] = mode
        state.changed()
        return self

    def eval(self) -> Module:
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        """Freeze (False) or unfreeze every parameter."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset every parameter's ``.grad``: to None (the default), or to zeros."""
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                g = p.grad
                if g.grad_fn is not None:
                    g.detach_()
                else:
                    g.requires_grad_(False)
                g.zero_()

    def apply(self, fn: Callable[[Module], Any]) -> Module:
        """``fn`` on every submodule (children first), then on this module."""
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    def to(self, *args: Any, **kwargs: Any) -> Module:
        """``to(dtype)``: floating parameters and buffers (and grads) cast in place of
        their data (the Parameter objects stay); a device (``"cpu"``) is accepted."""
        dtype = kwargs.pop("dtype", None)
        devices.check(kwargs.pop("device", None))
        for a in args:
            if isinstance(a, Tensor):
                dtype = a.dtype
            elif isinstance(a, (str, devices.device)):
                devices.check(a)  # the CPU, or torch's CPU build's AssertionError
            else:
                dtype = a
        kwargs.pop("non_blocking", None)
        if kwargs:
            raise TypeError(f"to() got an unexpected keyword argument '{next(iter(kwargs))}'")
        if dtype is None:
            return self
        np_dtype = dtypes.to_numpy_dtype(dtype)
        if np_dtype.kind not in "fc":
            raise TypeError("nn.Module.to only accepts floating point or complex dtypes, but "
                            f"got desired dtype={dtypes.as_dtype(np_dtype)}")
        return self._cast(lambda d: np_dtype if d.kind == np_dtype.kind or
                          (d.kind == "f" and np_dtype.kind == "c") else d)

    def double(self) -> Module:
        return self._cast(lambda d: np.dtype(np.float64) if d.kind == "f" else d)

    def float(self) -> Module:
        return self._cast(lambda d: np.dtype(np.float32) if d.kind == "f" else d)

    def half(self) -> Module:
        return self._cast(lambda d: np.dtype(np.float16) if d.kind == "f" else d)

    def cpu(self) -> Module:
        return self

    def cuda(self, device: Any = None) -> Module:
        """torch's CPU build: ``AssertionError: Torch not compiled with CUDA enabled``."""
        raise AssertionError(devices.NO_CUDA)

    def _cast(self, target: Callable[[np.dtype], np.dtype]) -> Module:
        with no_grad():
            for t in list(self.parameters()) + list(self.buffers()):
                for x in (t, t._grad):
                    if x is not None and target(x._data.dtype) != x._data.dtype:
                        x._data = x._data.astype(target(x._data.dtype))
        state.changed()
        return self

    # ------------------------------------------------------------------ hooks
    def register_forward_pre_hook(self, hook: Callable, *, prepend: bool = False,
                                  with_kwargs: bool = False) -> RemovableHandle:
        """``hook(module, args)`` before ``forward``; a result replaces the arguments."""
        return self._forward_pre_hooks.add(hook, prepend, with_kwargs)

    def register_forward_hook(self, hook: Callable, *, prepend: bool = False,
                              with_kwargs: bool = False,
                              always_call: bool = False) -> RemovableHandle:
        """``hook(module, args, output)`` after ``forward``; a result replaces the output."""
        return self._forward_hooks.add(hook, prepend, with_kwargs, always_call)

    def register_full_backward_pre_hook(self, hook: Callable, prepend: bool = False
                                        ) -> RemovableHandle:
        """``hook(module, grad_output)`` when the gradients of the module's outputs are
        known; a tuple returned replaces ``grad_output`` (nn/backward_hooks.py)."""
        return self.__dict__.setdefault("_backward_pre_hooks", HookTable()).add(hook, prepend)

    def register_full_backward_hook(self, hook: Callable, prepend: bool = False
                                    ) -> RemovableHandle:
        """``hook(module, grad_input, grad_output)`` when the gradients of the module's
        positional inputs are known (None for an argument that is not a tensor or needs no
        gradient); a tuple returned replaces ``grad_input``."""
        return self.__dict__.setdefault("_backward_hooks", HookTable()).add(hook, prepend)

    # ------------------------------------------------------------------- repr
    def _get_name(self) -> str:
        return type(self).__name__

    def extra_repr(self) -> str:
        """The text inside the parentheses of this module's repr line."""
        return ""

    def __repr__(self) -> str:
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [f"({key}): " + _addindent(repr(m), 2)
                       for key, m in self._modules.items()]
        lines = extra_lines + child_lines
        main = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main += extra_lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"

    # --------------------------------------------- compiling and guards on modules
    def _pb_compile(self, maxsize: int | None = None) -> Any:
        """``pb.compile(module)`` (see compiled.py)."""
        return CompiledModule(self, maxsize)

    def _pb_capture_guard(self) -> tuple:
        """For compiled code that captured this module: a check that it holds what it
        held when traced, and the functions it calls (followed for what they capture)."""
        calls = []
        for m in self.modules():
            calls.append(m.forward)
            calls += list(m._forward_pre_hooks.values()) + list(m._forward_hooks.values())
            for table in ("_backward_pre_hooks", "_backward_hooks"):
                calls += list(m.__dict__.get(table, {}).values())
        return state.ModuleGuard(self, signature), calls


def _addindent(text: str, spaces: int) -> str:
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    return lines[0] + "\n" + "\n".join(" " * spaces + ln if ln.strip() else ""
                                       for ln in lines[1:])


__all__ = ["Module", "signature"]
