"""The Tensor: a numpy array with torch's autograd attributes.

>>> import pullback as pb
>>> x = pb.tensor([1., 2.], requires_grad=True)
>>> y = (x * x).sum()
>>> y
tensor(5., grad_fn=<SumBackward0>)
>>> y.backward()
>>> x.grad
tensor([2., 4.])
"""

from __future__ import annotations

import warnings
import weakref
from typing import Any, Callable

import numpy as np

from . import dtypes
from .autograd import edges, messages, record, transform_scopes
from .autograd import graph as _graph
from .autograd.backward import backward as _backward
from .autograd.edges import VersionCounter
from .autograd.grad_mode import STATE
from .autograd.graph import HookDict, RemovableHandle
from .autograd.record import apply, notify_concrete
from .devices import DeviceMethods
from .format import format_tensor
from .ops import elementwise as _ew
from .ops import linalg as _linalg
from .ops import shape as _shape
from .ops import subscripts as _subscripts
from .ops.table import bindings
from .ops.table.methods import ValueMethods
from .ops.table.registry import OpDef, Public, dispatcher, subscribe
from .tensor_methods import TensorMethods


class Tensor(TensorMethods, DeviceMethods, ValueMethods):
    # Fields every op reads are slots; the rarely set ones are class-level defaults that
    # an instance overrides in its own dict only when it sets them (an op's result then
    # costs six attribute writes, not fifteen).
    __slots__ = ("_data", "_requires_grad", "_grad_fn", "_output_nr", "_vc", "_base",
                 "__weakref__", "__dict__")
    _grad: Tensor | None = None
    _view_chain: tuple = ()  # ((op, params), ...) from the base, for views
    _view_no_grad = False    # a view taken under no_grad (torch's CreationMeta)
    _multi_view = False      # an output of split & co., or a view of one (MULTI_OUTPUT_NODE)
    _view_version = 0        # the version counter value when the view's grad_fn was set
    _retains_grad = False
    _hooks: HookDict | None = None           # a leaf's tensor hooks (non-leaves: on grad_fn)
    _post_acc_hooks: HookDict | None = None
    _accumulator: Any = None  # weakref to the leaf's AccumulateGrad
    _is_inference = False
    _fw_tangent: Tensor | None = None  # forward mode's tangent (autograd/forward_ad.py)
    _stale_view_refused = True  # torch's refusal of a write into a view taken before its
    # base came to require grad (numpy's face, whose views have no such rule, says False)

    _pb_dispatch = dispatcher(1)(apply)
    __array_priority__ = 1000

    def __init__(self, data: Any = None, *, dtype: Any = None, requires_grad: bool = False):
        _init(self, as_array(data if data is not None else [], dtype), None)
        if requires_grad:
            self.requires_grad_(True)

    @classmethod
    def _make(cls, data: np.ndarray, grad_fn: Any = None, requires_grad: bool = False,
              vc: VersionCounter | None = None) -> Tensor:
        t = object.__new__(cls)
        _init(t, data, grad_fn)
        if requires_grad:
            t._requires_grad = True
        if vc is not None:
            t._vc = vc
        return t

    # ------------------------------------------------ the operators programs use most
    # With no IR value among the operands (a tracer's Vars dispatch first) these go
    # straight to the recorder, past the op table's generic dispatch.
    def __add__(self, other: Any) -> Tensor:
        if type(other) in _PLAIN:
            return apply(_ew.add_op, (self, other), {})
        return _ew.add_op(self, other)

    def __sub__(self, other: Any) -> Tensor:
        if type(other) in _PLAIN:
            return apply(_ew.sub_op, (self, other), {})
        return _ew.sub_op(self, other)

    def __mul__(self, other: Any) -> Tensor:
        if type(other) in _PLAIN:
            return apply(_ew.mul, (self, other), {})
        return _ew.mul(self, other)

    def __matmul__(self, other: Any) -> Tensor:
        if (type(other) is Tensor and self._data.ndim == 2 and other._data.ndim == 2
                and self._data.dtype == other._data.dtype
                and self._data.shape[1] == other._data.shape[0]):
            return apply(_linalg.mm_op, (self, other), {})  # what matmul picks for 2-d x 2-d
        return ValueMethods.__matmul__(self, other)

    def __getitem__(self, idx: Any) -> Tensor:
        if type(idx) is int:  # x[i]: always a select (what api.getitem would pick)
            return apply(_subscripts.select, (self,), {"index": idx})
        return TensorMethods.__getitem__(self, idx)

    # ------------------------------------------------------------ basic attributes
    @property
    def data(self) -> Tensor:
        """The same storage without autograd history or the version counter."""
        t = Tensor._make(self._data)
        if record.TRACING:
            _traced_detach(self, t)
        return t

    @data.setter
    def data(self, value: Tensor) -> None:
        self._data = value._data if isinstance(value, Tensor) else np.asarray(value)

    @property
    def shape(self) -> tuple:
        return self._data.shape

    def size(self, dim: int | None = None, *, axis: int | None = None) -> Any:
        if axis is not None:  # torch's name for dim, numpy's
            dim = axis
        return self._data.shape if dim is None else self._data.shape[dim]

    @property
    def dtype(self) -> dtypes.dtype:
        return dtypes.as_dtype(self._data.dtype)

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def dim(self) -> int:
        return self._data.ndim

    def numel(self) -> int:
        return int(self._data.size)

    def __len__(self) -> int:
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return len(self._data)

    def item(self) -> Any:
        return self._scalar_value("item")

    def _scalar_value(self, how: str | None) -> Any:
        """The one element as a Python number: ``item()``, ``float()``, ``complex()``
        (``how``; refused inside a functional transform when it drops a gradient) or
        ``int()`` and an index (``how`` None: their derivative is zero anyway)."""
        if self._data.size != 1:
            raise RuntimeError(f"a Tensor with {self._data.size} elements cannot be converted "
                               "to Scalar")
        if how is not None and (transform_scopes.TRANSFORMING or record.TRACING):
            transform_scopes.check_conversion(self, how)
        if how in ("float", "complex") and self._requires_grad and STATE.grad_enabled:
            messages.warn_once(messages.SCALAR_CONVERSION, stacklevel=4)  # (as torch's)
        notify_concrete(self, "item")
        return self._data.item()

    def tolist(self) -> Any:
        if transform_scopes.TRANSFORMING or record.TRACING:
            transform_scopes.check_conversion(self, "tolist")
        notify_concrete(self, "tolist")
        return self._data.tolist()

    def numpy(self, *, force: bool = False) -> np.ndarray:
        if self._requires_grad and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                               "tensor.detach().numpy() instead.")
        notify_concrete(self, "numpy")
        return self._data

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        if self._requires_grad:  # the array would silently drop the gradient: refuse, as torch
            # (a library function converting its arguments may say who asks: pullback.scipy)
            who = "".join(explain() for explain in ARRAY_REFUSED)
            raise RuntimeError(who + "Can't call numpy() on Tensor that requires grad. Use "
                               "tensor.detach().numpy() instead.")
        notify_concrete(self, "__array__")
        a = self._data
        return a if dtype is None else a.astype(dtype, copy=False)

    def __format__(self, spec: str) -> str:
        """A format spec on one value formats the number (``f"{loss:.3f}"``), as torch's
        and numpy's; an empty one is ``str``."""
        if spec and self._data.ndim == 0:
            return format(self.item(), spec)
        return object.__format__(self, spec)

    def __reduce_ex__(self, protocol: Any) -> Any:
        """Pickling and ``copy.deepcopy`` read the values: a trace guards them (or, on a
        long loop's stand-in, traces again), as ``numpy()``."""
        notify_concrete(self, "numpy")
        return super().__reduce_ex__(protocol)

    def __repr__(self) -> str:
        notify_concrete(self, "repr")  # (a trace holding a stand-in of it is made again)
        return format_tensor(self)

    def __bool__(self) -> bool:
        if self._data.size != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        notify_concrete(self, "bool")
        return bool(self._data)

    def __float__(self) -> float:
        return float(self._scalar_value("float"))

    def __complex__(self) -> complex:
        return complex(self._scalar_value("complex"))

    def __int__(self) -> int:
        return int(self._scalar_value(None))

    def __index__(self) -> int:
        if self._data.dtype.kind not in "iub" or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an "
                            "index")
        return int(self._scalar_value(None))

    def __hash__(self) -> int:
        return id(self)

    # --------------------------------------------------------------- autograd state
    def _fresh(self) -> Any:
        """This tensor's grad_fn, renewed first if it is a view whose base was
        modified in place since (see edges.refresh_view)."""
        if self._base is not None and self._view_version != self._vc.value:
            edges.refresh_view(self)
        return self._grad_fn

    @property
    def requires_grad(self) -> bool:
        if self._base is not None:
            if self._multi_view:  # (torch reads it without renewing the view's grad_fn)
                return self._requires_grad or self._base._requires_grad
            self._fresh()
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, flag: bool) -> None:
        if type(flag) is not bool:
            raise RuntimeError("requires_grad must be a bool")
        if self._fresh() is not None:
            raise RuntimeError(messages.NONLEAF_REQUIRES_GRAD_OFF if not flag
                               else messages.NONLEAF_REQUIRES_GRAD)
        self._set_requires_grad(flag, messages.FLOAT_ONLY_SETTER)

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        if type(requires_grad) is not bool:
            raise TypeError("requires_grad_(): argument 'requires_grad' (position 1) must be "
                            f"bool, not {_type_name(requires_grad)}")
        if self._fresh() is not None:
            if not requires_grad:
                raise RuntimeError(messages.NONLEAF_REQUIRES_GRAD_OFF)
            return self
        self._set_requires_grad(requires_grad, messages.FLOAT_ONLY_METHOD)
        return self

    def _set_requires_grad(self, flag: bool, float_only_message: str) -> None:
        flag = bool(flag)
        if flag and not dtypes.is_differentiable(self._data.dtype):
            raise RuntimeError(float_only_message)
        if flag and self._is_inference and not STATE.inference:
            raise RuntimeError(messages.INFERENCE_REQUIRES_GRAD)
        self._requires_grad = flag

    @property
    def grad_fn(self) -> Any:
        return self._fresh()

    @property
    def is_leaf(self) -> bool:
        return self._fresh() is None

    @property
    def output_nr(self) -> int:
        return self._output_nr

    @property
    def _version(self) -> int:
        return self._vc.value

    @property
    def grad(self) -> Tensor | None:
        if self._fresh() is not None and not self._retains_grad:
            warnings.warn(messages.NONLEAF_GRAD_ACCESS, UserWarning, stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value: Tensor | None) -> None:
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(messages.GRAD_TYPE.format(typ=type(value).__name__))
            if value.shape != self.shape:
                raise RuntimeError(messages.GRAD_SIZE.format(
                    g=messages.size_str(value.shape), t=messages.size_str(self.shape)))
            if value._data.dtype != self._data.dtype:
                raise RuntimeError(messages.GRAD_DTYPE.format(
                    g=dtypes.as_dtype(value._data.dtype)._cpp,
                    t=dtypes.as_dtype(self._data.dtype)._scalar_name))
        self._grad = value

    @grad.deleter
    def grad(self) -> None:
        self._grad = None

    @property
    def retains_grad(self) -> bool:
        return self._retains_grad

    @retains_grad.setter
    def retains_grad(self, value: bool) -> None:
        raise AttributeError(messages.RETAINS_GRAD_READONLY)

    def retain_grad(self) -> None:
        _refuse_while_tracing("retain_grad()")
        if not self.requires_grad:
            raise RuntimeError(messages.RETAIN_NO_GRAD)
        if self._grad_fn is None or self._retains_grad:
            return
        node = self._grad_fn
        _graph.note_hooks()
        if node._retained is None:
            node._retained = {}
        node._retained[self._output_nr] = weakref.ref(self)
        self._retains_grad = True

    @property
    def is_inference(self) -> Callable[[], bool]:
        return lambda: self._is_inference

    # ---------------------------------------------------------------- hooks
    def register_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(grad)`` runs when this tensor's gradient is computed; a returned
        tensor replaces the gradient."""
        _refuse_while_tracing("register_hook()")
        if not self.requires_grad:
            raise RuntimeError(messages.HOOK_NO_GRAD)
        if self._grad_fn is None:
            if self._hooks is None:
                self._hooks = HookDict()
            return self._hooks.add(hook)
        return self._grad_fn.add_tensor_hook(self._output_nr, hook)

    def register_post_accumulate_grad_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(tensor)`` runs on a leaf after its ``.grad`` was accumulated."""
        _refuse_while_tracing("register_post_accumulate_grad_hook()")
        if not self.requires_grad:
            raise RuntimeError(messages.HOOK_NO_GRAD)
        if self._grad_fn is not None:
            raise RuntimeError(messages.POST_ACC_NONLEAF)
        if self._post_acc_hooks is None:
            self._post_acc_hooks = HookDict()
        return self._post_acc_hooks.add(hook)

    # -------------------------------------------------------- graph manipulation
    def detach(self) -> Tensor:
        """A leaf that shares storage and the version counter, with no history."""
        t = Tensor._make(self._data, vc=self._vc)
        if self._is_inference:
            t._is_inference = True
        if record.TRACING:
            _traced_detach(self, t)
        return t

    def detach_(self) -> Tensor:
        if self._base is not None:
            raise RuntimeError(messages.DETACH_VIEW_INPLACE)
        self._grad_fn = None
        self._output_nr = 0
        self._requires_grad = False
        for hook in record.trace_hooks():  # a tracer: from here on, the value without history
            hook(_shape.detach, (self,), {}, self, inplace=True)
        return self

    def backward(self, gradient: Any = None, retain_graph: bool | None = None,
                 create_graph: bool = False, inputs: Any = None) -> None:
        """Accumulate this tensor's gradient into the leaves' ``.grad``."""
        _backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    def _is_view(self) -> bool:
        return self._base is not None


def as_array(data: Any, dtype: Any = None) -> np.ndarray:
    """A fresh numpy array with torch's dtype defaults (Python floats -> float32)."""
    npd = dtypes.to_numpy_dtype(dtype)
    if isinstance(data, Tensor):
        notify_concrete(data, "tensor")  # a guard when traced: the copy is a constant
        return np.array(data._data, dtype=npd)
    if isinstance(data, np.ndarray):
        return np.array(data, dtype=npd)
    if isinstance(data, (list, tuple)) and any(isinstance(d, Tensor) for d in _flat(data)):
        data = [d._data if isinstance(d, Tensor) else d for d in data]
    a = np.array(data, dtype=npd) if not isinstance(data, (str, bytes)) else None
    if a is None or a.dtype.kind in "USOV":
        _refuse_data(data)
    if npd is None and a.dtype == np.float64 and not isinstance(data, np.generic):
        a = a.astype(dtypes.default_float.np)
    if npd is None and a.dtype.kind == "c" and a.dtype != np.complex64:
        a = a.astype(np.complex64)
    return a


def _refuse_data(data: Any) -> None:
    """torch's errors for data that holds no numbers (``tensor("abc")``, ``tensor(None)``):
    named after the first value that is not one."""
    leaves = _flat(data) if isinstance(data, (list, tuple)) else [data]
    for v in leaves:
        if isinstance(v, (str, bytes)):
            raise TypeError(f"new(): invalid data type '{type(v).__name__}'")
        if not isinstance(v, (int, float, complex, np.generic, np.ndarray)):
            raise RuntimeError(f"Could not infer dtype of {type(v).__name__}")
    raise RuntimeError(f"Could not infer dtype of {type(data).__name__}")


def _flat(seq):
    for s in seq:
        if isinstance(s, (list, tuple)):
            yield from _flat(s)
        else:
            yield s


#: called when __array__ refuses a Tensor that requires grad: each returns "" or a
#: sentence naming the function that converts it (a registration point for pullback.scipy)
ARRAY_REFUSED: list = []
_PLAIN = frozenset({Tensor, float, int})


def _type_name(v: Any) -> str:
    """How torch's argument parser names a Python value's type ('int', 'numpy.bool')."""
    t = type(v)
    return t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__name__}"


def _init(t: Tensor, data: np.ndarray, grad_fn: Any) -> None:
    """The per-instance fields of a new tensor (the others keep their class defaults)."""
    t._data = data
    t._grad_fn = grad_fn
    t._requires_grad = grad_fn is not None
    t._output_nr = 0
    t._vc = VersionCounter()
    t._base = None
    if STATE.inference:
        t._is_inference = True


def result_tensor(value: Any) -> Tensor:
    """``Tensor._make(np.asarray(value))`` in one frame (the fields ``_init`` sets, kept in
    step with it): a compiled function's result on the cache's hot path, a leaf without
    history that has its own version counter."""
    t = object.__new__(Tensor)
    t._data = np.asarray(value)
    t._grad_fn = None
    t._requires_grad = False
    t._output_nr = 0
    t._vc = VersionCounter()
    t._base = None
    if STATE.inference:
        t._is_inference = True
    return t


def _traced_detach(src: Tensor, t: Tensor) -> None:
    """Tell the tracer that ``t`` is ``src`` with the gradient stopped."""
    for hook in record.trace_hooks():
        hook(_shape.detach, (src,), {}, t)


def _refuse_while_tracing(what: str) -> None:
    """Hooks would not run in compiled code: refuse them inside a traced function."""
    if record.trace_hooks():
        raise RuntimeError(f"{what} inside a function being compiled is not supported: the "
                           "generated backward would not run it. Register hooks on the "
                           "compiled function's outputs or inputs instead.")


def _install(entry: Public) -> None:
    """``Tensor.<name>`` of a primitive: with only Tensors and numbers among the operands
    (no IR value, which dispatches first) it goes straight to the recorder."""
    if isinstance(entry.fn, OpDef):
        for name in entry.methods:
            setattr(Tensor, name, bindings.torch_aliases(
                bindings.method(entry.fn, name, apply, _PLAIN), f"Tensor.{name}"))


def _check(entry: Public) -> None:
    """New methods may not replace Tensor's own attributes (``grad``, ``backward``...)."""
    for name in entry.methods + ((entry.inplace,) if entry.inplace else ()):
        if hasattr(Tensor, name):
            raise ValueError(f"Tensor.{name} exists already; choose another method name")


subscribe(_install, _check)
record.use_tensor_class(Tensor)
