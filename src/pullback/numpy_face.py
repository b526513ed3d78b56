"""The numpy face: what a function traced with numpy arrays sees.

``pb.grad(f)(x)`` runs ``f`` on a traced value. Called with a Tensor, ``f`` gets a
Tensor (torch's names: ``x.sum(dim=0)``, ``x.size()``); called with an ndarray or a
Python float, it gets a ``NumpyTensor``: a Tensor whose names are ndarray's
(``x.sum(axis=0)``, ``x.size``, ``x.astype(np.float32)``), so that numpy code runs
as it is. The front doors choose the face argument by argument (``compiler/trace.py:
proxy``); a value computed from numpy-face values is numpy-face, and a plain Tensor
among an op's operands wins, as a ``torch.Tensor`` does over an ndarray.

>>> import numpy as np, pullback as pb
>>> def f(x):
...     return x.astype(np.float64).ravel().var(ddof=1) * x.size
>>> pb.value_and_grad(f)(np.array([1., 2., 3.]))
(np.float64(3.0), array([-3.,  0.,  3.]))

An ndarray method that is numpy's function of the same name with the array first
(``x.sum(axis=0)`` is ``np.sum(x, axis=0)``) calls that function, and numpy's protocol
brings it to the op table's numpy-signature implementation (``numpy=`` in
``pullback.ops``, numpy_interop.FUNCTIONS): there is no second implementation here. A
function the table lacks (``np.prod``, ``np.cumsum``, ``np.round``) runs on the values
where no gradient is needed and raises numpy_interop's "not differentiable" error
where one is; once the table gains it, the method is differentiable too.
"""

from __future__ import annotations

import sys
from typing import Any, Callable

import numpy as np

from . import dtypes, numpy_inplace, numpy_interop
from .autograd.record import apply, notify_concrete
from .ops import OpDef, Public, subscribe
from .ops import elementwise as ew
from .ops.joining import stack_op
from .ops.subscripts import basic_index_kind
from .ops.table.methods import ValueMethods
from .ops.table.registry import dispatcher
from .tensor import ARRAY_REFUSED, Tensor
from .tensor_methods import TensorMethods, _index


def _apply(op: Any, args: tuple, params: dict) -> Any:
    """An op with numpy-face values and no plain Tensor among its operands."""
    if any(type(a) in (list, tuple) for a in args):
        args = tuple(map(_as_array, args))
    if op.promote is not None:
        args = _numpy_operands(op, args, params)
    return to_face(apply(op, args, params))  # (several results: each of them)


def _as_array(v: Any) -> Any:
    """A list operand that holds Tensors (a list argument's traced leaves, ``[x, 2.0] *
    y``) as numpy reads a list, ``np.asarray``, but a differentiable stack (where
    ``np.asarray`` would ask each Tensor for its values); any other operand as it is."""
    if type(v) not in (list, tuple):
        return v
    items = list(map(_as_array, v))
    if not any(isinstance(x, Tensor) for x in items):
        return v
    return stack_op(*[x if isinstance(x, Tensor) else np.asarray(x) for x in items], dim=0)


def _numpy_operands(op: Any, args: tuple, params: dict) -> tuple:
    """numpy's dtypes where torch's differ: integers (or booleans) with a Python float
    give float64, not the default float dtype, and so does a true division of integers
    (``x.astype(int) * 0.1``, ``np.arange(3) / 7``); with a Python complex, complex128.
    The Python number becomes a numpy scalar of that dtype (integers: one operand is
    cast)."""
    where = [i for i in op.promote if type(i) is int and i < len(args)]
    if any(getattr(args[i], "_python_float", False) for i in where):
        args = _weakly(args, where)
    kinds = [_kind(args[i]) for i in where]
    if not kinds or any(k in "fc" for k in kinds if k is not None):
        return _strong_scalars(args, where)  # (a float or complex array sets the dtype,
        # as in torch, but for a wider 0-d one)
    out = list(args)
    for i, k in zip(where, kinds):
        v = args[i]
        if k is None and isinstance(v, float):
            out[i] = np.float64(v)
        elif k is None and isinstance(v, complex):
            out[i] = np.complex128(v)
    if op.to_float and all(type(out[i]) is not np.float64 for i in where):
        first = next((i for i in where if isinstance(out[i], Tensor)), None)
        if first is not None:
            out[first] = ew.cast(out[first], dtype=np.dtype(np.float64))
    return tuple(out)


def _weakly(args: tuple, where: list) -> tuple:
    """The operands with each traced Python float (``to_python_float``) cast to the dtype
    numpy gives a Python float beside the other operands (weak: ``float32 array * t`` is
    float32); beside Python numbers and Python floats alone it stays float64."""
    others = [args[i] for i in where if not getattr(args[i], "_python_float", False)]
    dtypes_ = [v._data.dtype if isinstance(v, Tensor) else getattr(v, "dtype", v)
               for v in others]
    if not any(isinstance(d, np.dtype) for d in dtypes_):
        return args
    target = np.result_type(*dtypes_, 0.0)
    if target == np.float64:
        return args
    return tuple(ew.cast(a, dtype=target) if i in where and getattr(a, "_python_float", False)
                 else a
                 for i, a in enumerate(args))


def _strong_scalars(args: tuple, where: list) -> tuple:
    """The operands with the float arrays cast up to a wider float 0-d operand's dtype:
    numpy 2's rule (``float32 array + np.sin(t)``, a float64 scalar, is float64), where
    torch keeps the array's dtype."""
    scalars = [d for i in where if (d := _scalar_float(args[i])) is not None]
    if not scalars:
        return args
    arrays = {i: a._data.dtype for i in where if isinstance(a := args[i], Tensor)
              and a._data.ndim > 0 and a._data.dtype.kind == "f"}
    wide = max(scalars, key=lambda d: d.itemsize)
    if not arrays or all(d.itemsize >= wide.itemsize for d in arrays.values()):
        return args
    return tuple(ew.cast(a, dtype=wide) if i in arrays and arrays[i].itemsize < wide.itemsize
                 else a for i, a in enumerate(args))


def _scalar_float(v: Any) -> np.dtype | None:
    """The dtype of a 0-d float operand numpy does not take as weak (a Tensor, a numpy
    scalar or 0-d array: not a Python float), else None."""
    if isinstance(v, Tensor):
        d = v._data
    elif isinstance(v, (np.floating, np.ndarray)):
        d = np.asarray(v)
    else:
        return None
    return d.dtype if d.ndim == 0 and d.dtype.kind == "f" else None


def _kind(v: Any) -> str | None:
    """numpy's dtype kind of an operand; None for a Python number."""
    if isinstance(v, Tensor):
        return v._data.dtype.kind
    d = getattr(v, "dtype", None)
    return None if d is None else np.dtype(d).kind


def _numpy_only(values: Any) -> bool:
    """A numpy-face value among ``values`` and no plain Tensor (which would win)."""
    kinds = {type(v) for v in values}
    return NumpyTensor in kinds and Tensor not in kinds


def to_face(x: Any) -> Any:
    """``x`` with its plain Tensors (also inside tuples and lists) made numpy-face, in
    place. Only for Tensors just made, which nothing else holds."""
    if type(x) is Tensor:
        x.__class__ = NumpyTensor
    elif isinstance(x, (tuple, list)):
        for y in x:
            to_face(y)
    return x


def to_tensor_face(x: Any) -> Any:
    """A numpy-face result given back as ``pb.compile`` gives its results: a Tensor
    (in place; for values the call made, which nothing else holds)."""
    if type(x) is NumpyTensor:
        x.__class__ = Tensor
    return x


def adopt(result: Any, operands: Any) -> Any:
    """``result``, a Tensor just made of ``operands`` without going through the op
    table's dispatch (``record.apply``), on their face."""
    return to_face(result) if _numpy_only(operands) else result


def face_like(value: Any, like: Any) -> Any:
    """``value``, a Tensor just made for argument ``like``, on ``like``'s face."""
    return to_face(value) if type(like) is NumpyTensor else value


def _faced(result: Any, inputs: tuple, outs: tuple) -> Any:
    """A ufunc's result on the face of its operands: a new array even where pullback's
    function returns its argument (``np.conjugate`` of reals), the ``out=`` arrays
    themselves where given."""
    if outs or not _numpy_only(inputs):
        return result
    if any(result is x for x in inputs):
        return np.copy(result)
    return to_face(result)


class NumpyTensor(Tensor):
    """A Tensor with ndarray's names: what a function traced with numpy arrays sees
    (see the module). torch's names that ndarray lacks (``exp``, ``detach``,
    ``requires_grad``...) stay, as extras."""

    __slots__ = ()
    _python_float = False  # (a traced Python float: to_python_float)
    _stale_view_refused = False  # (numpy: a row taken before the array is written into
    # takes values that need a gradient as well as after)

    # an op whose operands hold this and no plain Tensor (priority 1) makes one
    _pb_dispatch = dispatcher(0)(_apply)

    # Tensor's shortcuts to the recorder would make plain Tensors: the dispatching forms
    __add__ = ValueMethods.__add__
    __sub__ = ValueMethods.__sub__
    __mul__ = ValueMethods.__mul__
    __matmul__ = ValueMethods.__matmul__
    __getitem__ = TensorMethods.__getitem__

    def __setitem__(self, idx: Any, value: Any) -> None:
        """numpy's assignment: where an advanced index names an element more than once,
        the last write wins, and so does its gradient (torch's face keeps torch's)."""
        idx = _index(idx)
        if _overlaps(self, value):  # (numpy reads the value as it was: y[1:] = y[:-1])
            value = value.copy()
        if basic_index_kind(idx) is None and numpy_inplace.repeats_positions(self, idx):
            numpy_inplace.assign(self, idx, value)
        else:
            TensorMethods.__setitem__(self, idx, value)

    # numpy's augmented assignments: in place (a view's base sees the write), reading an
    # operand that overlaps the target as it was before the write
    def __iadd__(self, other: Any) -> Any:
        return _augmented(np.add, TensorMethods.__iadd__, self, other)

    def __isub__(self, other: Any) -> Any:
        return _augmented(np.subtract, TensorMethods.__isub__, self, other)

    def __imul__(self, other: Any) -> Any:
        return _augmented(np.multiply, TensorMethods.__imul__, self, other)

    def __itruediv__(self, other: Any) -> Any:
        return _augmented(np.true_divide, TensorMethods.__itruediv__, self, other)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        out = numpy_interop.array_ufunc(ufunc, method, inputs, kwargs)
        return _faced(out, inputs, kwargs.get("out") or ())

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        """``np.array(v, dtype=int)`` (or bool) in code the source pass did not convert:
        numpy's cast, whose gradient is zero, read as a guard; other dtypes: Tensor's."""
        if dtype is not None and np.dtype(dtype).kind in "biu":
            notify_concrete(self, "__array__")
            return self._data.astype(dtype)
        return Tensor.__array__(self, dtype, copy)

    def __array_function__(self, func, types, args, kwargs):
        out = numpy_interop.array_function(func, types, args, kwargs)
        return out if out is NotImplemented or Tensor in types else to_face(out)

    # ------------------------------------------------------------- attributes
    @property
    def size(self) -> int:
        return int(self._data.size)

    @property
    def dtype(self) -> np.dtype:
        return self._data.dtype

    @property
    def itemsize(self) -> int:
        return self._data.itemsize

    @property
    def nbytes(self) -> int:
        return int(self._data.nbytes)

    @property
    def imag(self) -> Any:
        if self._data.dtype.kind == "c":
            return ew.imag(self)
        return np.zeros_like(self)  # numpy's zeros, with no gradient to the real value

    data = property(lambda self: to_face(Tensor.data.fget(self)), Tensor.data.fset,
                    doc="torch's: the same storage, detached (not ndarray's buffer)")

    def detach(self) -> Tensor:
        return to_face(Tensor.detach(self))

    # ------------------------------------------- methods numpy spells its own way
    def reshape(self, *shape: Any, order: str = "C", copy: Any = None) -> Any:
        if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
            shape = shape[0]
        if copy is None:
            return np.reshape(self, shape, order=order)
        return np.reshape(self, shape, order=order, copy=copy)

    def transpose(self, *axes: Any) -> Any:
        if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
            axes = axes[0]
        return np.transpose(self, axes or None)

    def flatten(self, order: str = "C") -> Any:
        return np.copy(np.ravel(self, order))  # always a copy, as numpy's

    def copy(self, order: str = "C") -> Any:
        return np.copy(self, order)

    def conj(self) -> Any:
        if self._data.dtype.kind != "c":
            return self  # numpy's method returns a real array itself (np.conjugate: a copy)
        return np.conjugate(self)

    conjugate = conj

    def astype(self, dtype: Any, order: str = "K", casting: str = "unsafe",
               subok: bool = True, copy: bool = True) -> Any:
        npd = dtypes.to_numpy_dtype(dtype)
        if not np.can_cast(self._data.dtype, npd, casting):
            raise TypeError(f"Cannot cast array data from {self._data.dtype!r} to {npd!r} "
                            f"according to the rule {casting!r}")
        if npd != self._data.dtype:
            return ew.cast(self, dtype=npd)
        return ew.clone(self) if copy else self

    def view(self, dtype: Any = None, type: Any = None) -> Any:
        if type is None and (dtype is None or dtypes.to_numpy_dtype(dtype) == self.dtype):
            return self[...]
        raise TypeError("ndarray.view() with another dtype or type is not supported on a "
                        "value pullback traces: it reinterprets memory")

    def item(self, *args: Any) -> Any:
        if not args:
            if self._data.size != 1:
                raise ValueError("can only convert an array of size 1 to a Python scalar")
            return Tensor.item(self)
        index = args[0] if len(args) == 1 else args
        n = self._data.size
        if isinstance(index, (int, np.integer)):
            if not -n <= index < n:
                raise IndexError(f"index {index} is out of bounds for size {n}")
            index = np.unravel_index(int(index) % n, self._data.shape)
        return Tensor.item(self[tuple(int(i) for i in index)])

    def fill(self, value: Any) -> None:
        self[...] = value  # in place: traced on local values, refused on arguments

    def put(self, indices: Any, values: Any, mode: str = "raise") -> None:
        np.put(self, indices, values, mode)  # in place, as fill

    def __len__(self) -> int:
        if not self._data.ndim:
            raise TypeError("len() of unsized object")
        return self._data.shape[0]

    def __iter__(self) -> Any:
        if not self._data.ndim:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self._data.shape[0]))

    def __contains__(self, value: Any) -> bool:
        return bool((self == value).any())

    def __bool__(self) -> bool:
        if self._data.size != 1:
            raise ValueError(
                "The truth value of an empty array is ambiguous. Use `array.size > 0` to "
                "check that an array is not empty." if not self._data.size else
                "The truth value of an array with more than one element is ambiguous. Use "
                "a.any() or a.all()")
        return Tensor.__bool__(self)

    def _scalar(self, kind: Callable, how: str | None) -> Any:
        if self._data.ndim:
            raise TypeError("only 0-dimensional arrays can be converted to Python scalars")
        return kind(self._scalar_value(how))

    def __float__(self) -> float:
        return self._scalar(float, "float")

    def __int__(self) -> int:
        return self._scalar(int, None)

    def __complex__(self) -> complex:
        return self._scalar(complex, "complex")

    def __round__(self, ndigits: int | None = None) -> Any:
        """numpy's scalar's: ``round(v)`` a Python int (like ``int()``, a guard: its
        derivative is zero wherever it has one), ``round(v, n)`` a 0-d value rounded to
        ``n`` decimals (``np.round``, with a zero gradient); an array has no round()."""
        if self._data.ndim:
            raise TypeError("type numpy.ndarray doesn't define __round__ method")
        if ndigits is None:
            return round(self._scalar_value(None))
        return np.round(self, ndigits)

    def __copy__(self) -> Any:
        return self.copy()

    def __deepcopy__(self, memo: dict) -> Any:
        return self.copy()

    def __repr__(self) -> str:
        notify_concrete(self, "repr")  # (a trace holding a stand-in of it is made again)
        return repr(self._data)

    def __str__(self) -> str:
        notify_concrete(self, "repr")
        return str(self._data)

    # bitwise on integers, as numpy's (pullback's operators are the logical ones, the
    # same on booleans)
    def __and__(self, other: Any) -> Any:
        return _bitwise(np.bitwise_and, ValueMethods.__and__, self, other)

    def __rand__(self, other: Any) -> Any:
        return _bitwise(np.bitwise_and, ValueMethods.__and__, self, other)

    def __or__(self, other: Any) -> Any:
        return _bitwise(np.bitwise_or, ValueMethods.__or__, self, other)

    def __ror__(self, other: Any) -> Any:
        return _bitwise(np.bitwise_or, ValueMethods.__or__, self, other)

    def __invert__(self) -> Any:
        return ew.logical_not(self) if _bools(self) else np.invert(self)

    def __getattr__(self, name: str) -> Any:
        """An ndarray name the face does not have, said so (only for names not found)."""
        if name in _NDARRAY:
            raise _unsupported(name)
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def sort(self, axis: int = -1, kind: Any = None, order: Any = None) -> None:
        """ndarray.sort sorts in place, as fill writes (torch's returns values and
        indices: the torch face keeps that)."""
        if order is not None:
            raise ValueError("Cannot specify order when the array has no fields.")
        self[...] = np.sort(self, axis=axis, kind=kind)


def _unsupported(name: str) -> AttributeError:
    hint = (f"; np.{name}(x), which returns a new array, may stand in for it"
            if callable(getattr(np, name, None)) else "")
    return AttributeError(f"ndarray.{name} is not supported on a value pullback traces "
                          f"(the numpy face: in place, or reads memory){hint}")


def _bools(*values: Any) -> bool:
    """Whether every value is boolean (a Python bool, or an array or Tensor of bools)."""
    return all(isinstance(v, (bool, np.bool_))
               or getattr(getattr(v, "_data", v), "dtype", None) == np.bool_ for v in values)


def _bitwise(ufunc: np.ufunc, logical: Callable, x: Any, y: Any) -> Any:
    return logical(x, y) if _bools(x, y) else ufunc(x, y)


def _overlaps(target: Tensor, value: Any) -> bool:
    """Whether ``value`` is a Tensor whose memory meets ``target``'s, not as the same
    array (torch refuses such a write; numpy reads the value as it was before it)."""
    return isinstance(value, Tensor) and value._data is not target._data \
        and np.may_share_memory(value._data, target._data)


#: ids of the traced stand-ins of Python numbers (a traced call's float arguments, kept by
#: ``compiler/trace.py`` while it traces): a number is immutable, so ``t += 0.1`` on one
#: (``t = t0``, the argument) binds ``t`` to a new value, as Python does
NUMBERS: set = set()


def _augmented(ufunc: np.ufunc, inplace: Callable, target: Any, other: Any) -> Any:
    """``target op= other`` as numpy does it: Tensor's in-place op, or, when ``other``
    overlaps ``target``, ``ufunc(target, other, out=target)`` (the result, then copied in);
    on a Python number's stand-in, a new value."""
    if target._python_float:
        return _PYTHON_OPS[ufunc](target, other)
    if id(target) in NUMBERS:
        return ufunc(target, other)
    if not _overlaps(target, other):
        return inplace(target, other)
    ufunc(target, other, out=target)
    return target


def _in_place(ufunc: np.ufunc) -> Callable:
    def method(self: Any, other: Any) -> Any:
        if self._python_float and ufunc is np.power:
            return self ** other
        if id(self) in NUMBERS:
            return ufunc(self, other)
        ufunc(self, other, out=self)
        return self
    return method


def _reflected(ufunc: np.ufunc) -> tuple:
    return (lambda self, other: ufunc(self, other)), (lambda self, other: ufunc(other, self))


# operators numpy has and pullback's values lack: numpy's ufuncs (differentiable once the
# op table maps them)
NumpyTensor.__floordiv__, NumpyTensor.__rfloordiv__ = _reflected(np.floor_divide)
NumpyTensor.__mod__, NumpyTensor.__rmod__ = _reflected(np.remainder)
NumpyTensor.__xor__, NumpyTensor.__rxor__ = _reflected(np.bitwise_xor)
# augmented assignments writing in place, as ndarray's (else Python rebinds the name)
for _name, _ufunc in (("pow", np.power), ("mod", np.remainder), ("floordiv", np.floor_divide),
                      ("and", np.bitwise_and), ("or", np.bitwise_or), ("xor", np.bitwise_xor),
                      ("lshift", np.left_shift), ("rshift", np.right_shift)):
    setattr(NumpyTensor, f"__i{_name}__", _in_place(_ufunc))

#: ndarray methods that are numpy's function of that name with the array first
FUNCTION_METHODS = ("all", "any", "argmax", "argmin", "argsort", "clip", "cumprod", "cumsum",
                    "diagonal", "dot", "max", "mean", "min", "nonzero", "prod", "ravel",
                    "repeat", "round", "searchsorted", "squeeze", "std", "sum", "swapaxes",
                    "take", "trace", "var")


def _calling(name: str) -> Callable:
    fn = getattr(np, name)

    def method(self, *args, **kwargs):
        return fn(self, *args, **kwargs)

    method.__name__, method.__qualname__ = name, f"NumpyTensor.{name}"
    method.__doc__ = f"``np.{name}(x, ...)``, as ``ndarray.{name}``."
    return method


for _name in FUNCTION_METHODS:
    setattr(NumpyTensor, _name, _calling(_name))



# -------------------------------------------------------- traced Python floats
# A traced Python float (``_python_float``: a float argument beside narrower float
# arrays, a loop's time ``t += dt``) computes as Python does, in float64, with Python
# numbers and other Python floats; where it meets an array it is numpy's weak scalar
# (``float32 array * t`` is float32: ``_weakly``), and a numpy function of it is a
# float64 numpy scalar (``np.sin(t)``). It is immutable, as a number: ``t += dt``
# binds a new value.

def _python_arithmetic(form: str) -> Callable:
    base = getattr(ValueMethods, form)
    if form == "__rtruediv__":  # (Python's other / t, not torch's reciprocal(t) * other)
        base = lambda self, other: ew.div(other, self)  # noqa: E731

    def method(self: Any, other: Any) -> Any:
        out = base(self, other)
        if self._python_float and (type(other) in (int, float) or getattr(
                other, "_python_float", False)):
            to_python_float(out)
        return out
    method.__name__ = form
    return method


for _name in ("add", "sub", "mul", "truediv", "pow"):
    for _form in (f"__{_name}__", f"__r{_name}__"):
        setattr(NumpyTensor, _form, _python_arithmetic(_form))


def _negative(self: Any) -> Any:
    out = ValueMethods.__neg__(self)
    return to_python_float(out) if self._python_float else out


NumpyTensor.__neg__ = _negative


#: the operator ``t op= x`` is on a traced Python float, by the ufunc of its array form
_PYTHON_OPS = {np.add: NumpyTensor.__add__, np.subtract: NumpyTensor.__sub__,
               np.multiply: NumpyTensor.__mul__, np.true_divide: NumpyTensor.__truediv__}


def to_python_float(t: Any) -> Any:
    """A numpy-face float64 number made a traced Python float (in place: just made)."""
    if type(t) is NumpyTensor and t._data.dtype == np.float64 and t._data.ndim == 0:
        t._python_float = True
    return t


_NDARRAY = frozenset(dir(np.ndarray))
#: the names the face gives numpy's meaning; an op table method of the same name
#: (torch's) does not replace them
NUMPY_NAMES = frozenset(NumpyTensor.__dict__) - {"__module__", "__doc__", "__slots__"}


def _install(entry: Public) -> None:
    """torch's methods of a primitive, in their dispatching form (``Tensor``'s own go
    straight to the recorder and would make plain Tensors)."""
    if isinstance(entry.fn, OpDef):
        for name in entry.methods:
            if name not in NUMPY_NAMES:
                setattr(NumpyTensor, name, getattr(ValueMethods, name))


subscribe(_install)


def _vectorize_refusal() -> str:
    """The sentence ``Tensor.__array__`` puts before its refusal when ``np.vectorize`` is
    the caller: it turns its arguments into arrays and calls the function on one Python
    number at a time, so no gradient could reach the Tensor (the error would otherwise
    only say numpy() was refused, with no word of np.vectorize)."""
    frame = sys._getframe(2)
    while frame is not None:
        if isinstance(frame.f_locals.get("self"), np.vectorize):
            return ("np.vectorize converts its arguments to numpy arrays and calls the "
                    "function on one number at a time, which would drop the gradient: write "
                    "the function with array operations (they take the whole Tensor), or map "
                    "it over the first axis with pb.vmap(f), or pass x.detach() when no "
                    "gradient is needed. ")
        frame = frame.f_back
    return ""


ARRAY_REFUSED.append(_vectorize_refusal)
