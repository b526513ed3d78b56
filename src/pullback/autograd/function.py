"""Custom autograd Functions: ``class F(pb.autograd.Function)`` with static ``forward``
and ``backward``, applied with ``F.apply(...)``, as in torch.

The node a Function records is its context: ``ctx`` in ``forward`` and ``backward`` is
the ``<Class>Backward`` node itself (a ``BackwardCFunction``), as in torch, so
``y.grad_fn.saved_tensors`` and ``ctx.saved_tensors`` are the same thing. The engine
runs it like any node, through ``apply``: it materializes missing output gradients,
calls the user's ``backward`` in the engine's grad mode (so a backward written with
pullback ops is differentiable under ``create_graph``), and checks what came back with
torch's messages. Inside a trace (``pb.compile``, ``pb.grad``) ``apply`` records one
opaque step instead (``function_ir.py``).

>>> import pullback as pb
>>> class Exp(pb.autograd.Function):
...     @staticmethod
...     def forward(ctx, x):
...         r = x.exp()
...         ctx.save_for_backward(r)
...         return r
...     @staticmethod
...     def backward(ctx, g):
...         (r,) = ctx.saved_tensors
...         return g * r
>>> x = pb.tensor([0., 1.], requires_grad=True)
>>> y = Exp.apply(x)
>>> y
tensor([1.0000, 2.7183], grad_fn=<ExpBackward>)
>>> y.sum().backward(); x.grad
tensor([1.0000, 2.7183])
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import warnings
from typing import Any, Callable

import numpy as np

from .. import dtypes
from ..ops import fit_to
from . import edges, forward_ad, messages, profiler, record, transform_scopes
from .grad_mode import STATE
from .graph import Node, SavedOutput, SavedTensor
from .saved_hooks import PackedOutput, PackedTensor, current
from .transform_scopes import transform_scope

INSTANTIATED = ("{cls} should not be instantiated. Methods on autograd functions are all static, "
                "so you should invoke them on the class itself. Instantiating an autograd function "
                "will raise an error in a future version of PyTorch.")
LEGACY_CALL = ("Legacy autograd function with non-static forward method is deprecated. Please use "
               "new-style autograd function with static forward method. (Example: "
               "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)")
NO_FORWARD = "You must implement the forward function for custom autograd.Function."
NO_BACKWARD = ("You must implement either the backward or vjp method for your custom "
               "autograd.Function to use it with backward mode AD.")
NO_JVP = ("You must implement the jvp function for custom autograd.Function to use it with "
          "forward mode AD.")
BOTH_BACKWARDS = ("Implementing both 'backward' and 'vjp' for a custom Function is not allowed. "
                  "You should only implement one of them.")
SAVE_NOT_TENSOR = ("save_for_backward can only save variables, but argument {i} is of type "
                   "{typ}")
GRAD_COUNT = "function {name} returned an incorrect number of gradients (expected {n}, got {m})"
GRAD_FOR_NON_TENSOR = ("function {name} returned a gradient different than None at position {i}, "
                       "but the corresponding forward input was not a Variable")
GRAD_NOT_TENSOR = "expected Variable or None (got {typ})"
GRAD_SHAPE = ("Function {name} returned an invalid gradient at index {i} - got {got} but "
              "expected shape compatible with {expected}")
GRAD_COMPLEX = ("Expected isFloatingType(grad.scalar_type()) || (input_is_complex == "
                "grad_is_complex) to be true, but got false.  (Could this error message be "
                "improved?  If so, please report an enhancement request to PyTorch.)")
LEAF_MODIFIED = "a leaf Variable that requires grad has been used in an in-place operation."
NOT_CALLABLE = "'{name}' object is not callable"
TWICE = ("trying to differentiate twice a function that was marked with "
         "@once_differentiable")

#: set by function_ir: how ``apply`` records a Function inside a trace
traced_apply: Callable | None = None
#: set by the compiler (``compiler/source/traced_values.check_function_args``): ``check(cls, args,
#: kwargs)`` refuses, inside a front door (``pb.grad``, ``pb.compile``...), traced
#: values that ``apply`` would not track (inside lists, tuples, dicts, or keywords)
check_args: Callable | None = None


class BackwardCFunction(Node):
    """The node of a custom Function's call, and its ``ctx``: ``<Class>Backward``.

    One edge per tensor argument of ``apply`` (torch's ``next_functions``); one output
    per value ``forward`` returned. User attributes live in the instance dict."""

    _forward_cls: Any = None

    def __init__(self) -> None:
        Node.__init__(self, ())
        self.to_save: tuple | None = None
        self.dirty_tensors: tuple | None = None
        self.non_differentiable: tuple | None = None
        self.materialize_grads = True
        self.needs_input_grad: tuple = ()
        self._saved: tuple | None = None  # SavedTensor, SavedOutput, packed, or None
        self._tensor_args: tuple = ()  # positions of the tensor arguments
        self._input_meta: tuple = ()  # per tensor argument: (shape, dtype)
        self._n_args = 0
        self._outputs: tuple = ()  # per output: (shape, dtype) of a tensor, None otherwise
        self._dirty = False  # forward modified an input in place (mark_dirty)

    # --- the ctx API ------------------------------------------------------------------
    def save_for_backward(self, *tensors: Any) -> None:
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, record.Tensor):
                raise TypeError(SAVE_NOT_TENSOR.format(i=i, typ=type(t).__name__))
        self.to_save = tensors

    def mark_dirty(self, *tensors: Any) -> None:
        self.dirty_tensors = tensors

    def mark_non_differentiable(self, *tensors: Any) -> None:
        self.non_differentiable = tensors

    def set_materialize_grads(self, value: bool) -> None:
        self.materialize_grads = bool(value)

    @property
    def saved_tensors(self) -> tuple:
        if self._freed:
            raise RuntimeError(messages.SECOND_BACKWARD)
        if self._saved is None:  # (inside forward: nothing is saved before it returns)
            return ()
        # as torch, the tensors themselves, with their history, whatever the grad mode
        return tuple(None if s is None else
                     s.unpack(True, self) if type(s) in _OUTPUTS else s.unpack(True)
                     for s in self._saved)

    # --- the node API -----------------------------------------------------------------
    @property
    def num_outputs(self) -> int:
        return len(self._outputs)

    def __call__(self, *grads: Any) -> Any:
        raise TypeError(NOT_CALLABLE.format(name=type(self).__name__))

    def release(self) -> None:
        if self._saved is not None:
            self._freed = True
            self._saved = None

    def _pack_saved(self, hooks: tuple) -> None:
        """Saved-tensor hooks: ``save_for_backward`` packs when forward returns."""

    def apply(self, grads: list, needs: list, create_graph: bool) -> list:
        fn = backward_fn(self._forward_cls)
        gs = [_grad_in(g, meta, self.materialize_grads)
              for g, meta in zip(grads, self._outputs)]
        with (transform_scope(None) if transform_scopes.TRANSFORMING
              else contextlib.nullcontext()):
            result = fn(self, *gs)
        return self.check_grads(result, create_graph, [e[0] is not None for e in self._edges])

    def check_grads(self, result: Any, create_graph: bool, wanted: list) -> list:
        """What ``backward`` returned, checked as torch checks it: one gradient per
        argument (extra trailing Nones dropped), None for non-tensor arguments, a Tensor
        or None for tensor ones, summed to the input's shape when it broadcasts to it,
        cast to its dtype. One entry per tensor argument (None where ``wanted`` says no
        gradient is wanted): arrays, or Tensors under create_graph."""
        if not isinstance(result, tuple):
            result = (result,)
        n = self._n_args
        if len(result) > n and all(g is None for g in result[n:]):
            result = result[:n]
        if len(result) != n:
            raise RuntimeError(GRAD_COUNT.format(name=self.name(), n=n, m=len(result)))
        tensor_args = set(self._tensor_args)
        for i, g in enumerate(result):
            if i not in tensor_args and g is not None:
                raise RuntimeError(GRAD_FOR_NON_TENSOR.format(name=self.name(), i=i + 1))
        out = []
        for k, (i, want) in enumerate(zip(self._tensor_args, wanted)):
            g = result[i]
            if g is not None and not isinstance(g, record.Tensor):
                raise RuntimeError(GRAD_NOT_TENSOR.format(typ=type(g).__name__))
            out.append(self._fit(g, k, create_graph) if g is not None and want else None)
        return out

    def _fit(self, g: Any, k: int, create_graph: bool) -> Any:
        shape, dtype = self._input_meta[k]
        if tuple(g.shape) != shape:
            try:
                ok = np.broadcast_shapes(shape, tuple(g.shape)) == tuple(g.shape)
            except ValueError:
                ok = False
            if not ok:
                raise RuntimeError(GRAD_SHAPE.format(
                    name=self.name(), i=k, got=messages.size_str(g.shape),
                    expected=messages.size_str(shape)))
        gd = g._data.dtype
        if gd.kind != "f" and (gd.kind == "c") != (dtype.kind == "c"):
            raise RuntimeError(GRAD_COMPLEX)
        if not create_graph:
            g = g._data
        return fit_to(g, _Like(shape, dtype))


#: torch's name for the ctx type (its ctx is the node too)
FunctionCtx = BackwardCFunction

_OUTPUTS = frozenset({SavedOutput, PackedOutput})


class _Like:
    """The shape and dtype a gradient is fitted to (``ops.fit_to``'s ``like``)."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape: tuple, dtype: np.dtype) -> None:
        self.shape, self.dtype = shape, dtype


def _as_tensor(v: Any) -> Any:
    return v if isinstance(v, record.Tensor) else record.Tensor._make(v)


def _grad_in(g: Any, meta: tuple | None, materialize: bool) -> Any:
    """An output's gradient as ``backward`` receives it: a Tensor, zeros for a tensor
    output no gradient reached (unless materialization is off), else None."""
    if g is None:
        if meta is None or not materialize:
            return None
        return record.Tensor._make(np.zeros(meta[0], meta[1]))
    return _as_tensor(g)


def backward_fn(cls: type) -> Callable:
    """The user's ``backward`` (or ``vjp``) of Function ``cls``."""
    has_backward = cls.backward is not Function.backward
    has_vjp = cls.vjp is not Function.vjp
    if has_backward and has_vjp:
        raise RuntimeError(BOTH_BACKWARDS)
    return cls.vjp if has_vjp else cls.backward


class Function:
    """Base class of custom autograd Functions (torch's ``torch.autograd.Function``)."""

    _backward_cls: type = BackwardCFunction

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._backward_cls = type(cls.__name__ + "Backward", (BackwardCFunction,),
                                 {"_forward_cls": cls, "__module__": __name__})

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        warnings.warn(INSTANTIATED.format(cls=type(self)), DeprecationWarning, stacklevel=2)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(LEGACY_CALL)

    @staticmethod
    def forward(*args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(NO_FORWARD)

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple, output: Any) -> Any:
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx: Any, *grad_outputs: Any) -> Any:
        raise NotImplementedError(NO_BACKWARD)

    @staticmethod
    def vjp(ctx: Any, *grad_outputs: Any) -> Any:
        raise NotImplementedError(NO_BACKWARD)

    @staticmethod
    def jvp(ctx: Any, *grad_inputs: Any) -> Any:
        raise NotImplementedError(NO_JVP)

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        if has_setup_context(cls):
            args, kwargs = _bind_defaults(cls.forward, args, kwargs)
        if check_args is not None:
            check_args(cls, args, kwargs)
        if traced_apply is not None and record.TRACING and record.trace_hooks():
            return traced_apply(cls, args, kwargs)
        if record.PROFILING:  # a range named after the class, as torch's
            with profiler.function_range(cls, args) as rng:
                rng.made = call_function(cls, args, kwargs)[1]
            return rng.made
        return call_function(cls, args, kwargs)[1]


def has_setup_context(cls: type) -> bool:
    return cls.setup_context is not Function.setup_context


def _bind_defaults(fn: Callable, args: tuple, kwargs: dict) -> tuple:
    """torch binds ``apply``'s arguments to forward's signature when setup_context is
    used: keywords and defaults become positional (``setup_context`` sees them all)."""
    bound = _signature(fn).bind(*args, **kwargs)
    bound.apply_defaults()
    return bound.args, bound.kwargs


@functools.lru_cache(maxsize=1024)
def _signature(fn: Callable) -> inspect.Signature:
    return inspect.signature(fn)


def call_function(cls: type, args: tuple, kwargs: dict,
                  needs: tuple | None = None) -> tuple:
    """Run Function ``cls`` on ``args``: ``(ctx, what apply returns)``. ``needs`` (the
    compiler's, fixed when it traced) stands for the arguments' requires_grad."""
    Tensor = record.Tensor
    ctx = cls._backward_cls()
    tensor_args = tuple(i for i, a in enumerate(args) if isinstance(a, Tensor))
    if needs is None:
        needs = tuple(isinstance(a, Tensor) and a.requires_grad for a in args)
    ctx.needs_input_grad = needs
    ctx._tensor_args = tensor_args
    ctx._n_args = len(args)
    executable = STATE.grad_enabled and any(needs[i] for i in tensor_args)
    dual = forward_ad.has_tangents(args)  # forward mode: the Function's jvp gives them
    prev = STATE.grad_enabled
    STATE.grad_enabled = False  # forward (and setup_context) run with grad disabled
    try:  # (its own derivative: converting its inputs to numbers cuts nothing)
        with forward_ad.paused() if dual else contextlib.nullcontext(), \
                (transform_scope(None) if transform_scopes.TRANSFORMING
                 else contextlib.nullcontext()):
            if has_setup_context(cls):
                output = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, output)
            else:
                output = cls.forward(ctx, *args, **kwargs)
    finally:
        STATE.grad_enabled = prev
    if executable:
        ctx._edges = tuple(edges.grad_edge(args[i]) for i in tensor_args)
    ctx._input_meta = tuple((args[i]._data.shape, args[i]._data.dtype) for i in tensor_args)
    result = _wrap_outputs(ctx, args, tensor_args, output, executable)
    _save(ctx, result if isinstance(result, tuple) else (result,))
    if dual:
        forward_ad.function_jvp(cls, ctx, args, result)
    ctx.to_save = ctx.dirty_tensors = ctx.non_differentiable = None
    return ctx, result


def _wrap_outputs(ctx: Any, args: tuple, tensor_args: tuple, output: Any,
                  executable: bool) -> Any:
    """torch's ``_wrap_outputs``: give each tensor output its history (the node, at its
    position), a view of an input returned as it is, a new history for a dirty input."""
    Tensor = record.Tensor
    is_tuple = isinstance(output, tuple)
    outs = output if is_tuple else (output,)
    inputs = {id(args[i]): args[i] for i in tensor_args}
    dirty = {id(t) for t in (ctx.dirty_tensors or ())}
    nondiff = {id(t) for t in (ctx.non_differentiable or ())}
    done: dict = {}  # id of a forward result -> the tensor apply returns for it
    result = []
    metas = []
    for nr, o in enumerate(outs):
        if not isinstance(o, Tensor):
            result.append(o)
            metas.append(None)
            continue
        metas.append((o._data.shape, o._data.dtype))
        is_input = id(o) in inputs
        diff = executable and id(o) not in nondiff and dtypes.is_differentiable(o._data.dtype)
        w = done.get(id(o))
        if w is None:
            w = _wrap_one(ctx, o, nr, is_input, id(o) in dirty, diff)
            done[id(o)] = w
        elif diff:  # the same tensor returned again: the last position is its history
            w._output_nr = nr
        result.append(w)
    ctx._outputs = tuple(metas)
    ctx._dirty = bool(dirty)
    if dirty:
        for t in ctx.dirty_tensors:
            t._vc.value += 1  # torch bumps the version of what mark_dirty names
    return tuple(result) if is_tuple else result[0]


def _wrap_one(ctx: Any, o: Any, nr: int, is_input: bool, is_dirty: bool, diff: bool) -> Any:
    Tensor = record.Tensor
    if not diff:
        if not o._requires_grad:
            return _view_of(o) if is_input and not is_dirty else o
        if is_input:
            return o.detach()
        o._grad_fn, o._requires_grad = None, False
        return o
    if is_dirty:
        if o._grad_fn is None and o._requires_grad:
            raise RuntimeError(LEAF_MODIFIED)
        if o._base is not None:
            raise RuntimeError("a custom Function that marks a view dirty (mark_dirty) is not "
                               "supported by pullback: clone() the view before the Function")
        edges.set_grad_fn(o, ctx)
        o._output_nr = nr
        o._requires_grad = True
        return o
    w = _view_of(o) if is_input else o
    if w is o and (o._grad_fn is not None or o._requires_grad):
        w = Tensor._make(o._data, vc=o._vc)  # a result with history of its own: an alias
    w._grad_fn, w._output_nr, w._requires_grad = ctx, nr, True
    return w


def _view_of(t: Any) -> Any:
    """``t.view_as(t)`` made with grad disabled (torch's ``_view_as_self_with_no_grad``)."""
    prev = STATE.grad_enabled
    STATE.grad_enabled = False
    try:
        return t.view_as(t)
    finally:
        STATE.grad_enabled = prev


def _save(ctx: Any, outputs: tuple) -> None:
    """What ``save_for_backward`` named, kept with version checks (a result of this
    Function as a saved output of its node), or packed by saved-tensor hooks."""
    to_save = ctx.to_save
    if to_save is None:
        ctx._saved = ()
        return
    Tensor = record.Tensor
    hooks = current()
    out_nr = {id(o): nr for nr, o in enumerate(outputs) if isinstance(o, Tensor)}
    saved = []
    for t in to_save:
        if t is None:
            saved.append(None)
        elif id(t) in out_nr and t._grad_fn is ctx:
            saved.append(PackedOutput(t, hooks, out_nr[id(t)]) if hooks else SavedOutput(t))
        elif hooks:
            saved.append(PackedTensor(t, hooks, edges.grad_edge(t)
                                      if t._requires_grad or t._grad_fn is not None else None))
        else:
            if t._is_inference:
                raise RuntimeError(messages.INFERENCE_SAVE)
            saved.append(SavedTensor(t))
    ctx._saved = tuple(saved)


def once_differentiable(fn: Callable) -> Callable:
    """Decorate a ``backward`` that is not itself differentiable: it runs with grad
    disabled, and under ``create_graph`` its results lead to a node that raises if a
    second backward reaches it."""

    @functools.wraps(fn)
    def wrapper(ctx: Any, *args: Any, **kwargs: Any) -> Any:
        prev = STATE.grad_enabled
        STATE.grad_enabled = False
        try:
            outputs = fn(ctx, *args, **kwargs)
        finally:
            STATE.grad_enabled = prev
        if not STATE.grad_enabled:
            return outputs
        if not any(isinstance(a, record.Tensor) and a.requires_grad for a in args):
            return outputs
        outs = outputs if isinstance(outputs, tuple) else (outputs,)
        fakes = [None if o is None else o.detach().requires_grad_() for o in outs]
        err = Error(TWICE, tuple(edges.grad_edge(f) if f is not None else (None, 0)
                                 for f in fakes))
        wrapped = []
        for nr, f in enumerate(fakes):
            if f is None:
                wrapped.append(None)
                continue
            w = record.Tensor._make(f._data, grad_fn=err)
            w._output_nr = nr
            wrapped.append(w)
        return tuple(wrapped) if isinstance(outputs, tuple) else wrapped[0]

    return wrapper


class Error(Node):
    """torch's DelayedError node: running it raises ``message``."""

    __slots__ = ("message", "n_out")
    _qualname = "torch::autograd::Error"

    def __init__(self, message: str, edges: tuple) -> None:
        Node.__init__(self, edges)
        self.message = message
        self.n_out = len(edges)

    @property
    def num_outputs(self) -> int:
        return self.n_out

    def apply(self, grads: list, needs: list, create_graph: bool) -> list:
        raise RuntimeError(self.message)


__all__ = ["Function", "BackwardCFunction", "FunctionCtx", "once_differentiable"]
