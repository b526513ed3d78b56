"""numpy's functions that write into an argument, on Tensors: recorded as the in-place
writes they are.

numpy reaches a Tensor through its protocols (``numpy_interop``); a function that
writes into its argument returns ``None`` (or the argument), so no result would tell
that the argument changed. Each is therefore given here as an in-place op on the
target, through ``record.apply_inplace`` (torch's leaf, view and version-counter rules,
and the tracer's SSA form under ``pb.compile``, ``pb.grad`` and the forward-mode doors),
built from the op table's ops:

=========================================  ============================================
numpy                                       recorded as
=========================================  ============================================
``ufunc.at(a, indices, b)``                 ``add``/``subtract``: ``index_add`` of the
                                            flattened ``a`` (repeats add up); any other
                                            ufunc the table maps: one gather, ufunc and
                                            ``index_put`` per repeat (numpy's order);
                                            then ``a.copy_(new)``
``np.copyto(dst, src, casting, where)``     ``dst.copy_(src)``, or of ``where(mask,
                                            src, dst)``
``np.fill_diagonal(a, val, wrap)``          ``index_put`` at the diagonal's positions
``np.put(a, ind, v, mode)``                 ``index_put`` at ``ind`` (wrapped/clipped)
``np.put_along_axis(arr, ind, v, axis)``    ``index_put`` at ``take_along_axis``'s
                                            positions
``np.putmask(a, mask, values)``             ``index_put`` where ``mask`` holds
``np.place(arr, mask, vals)``               ``index_put`` where ``mask`` holds
``np.nan_to_num(x, copy=False)``            ``x.nan_to_num_()``
``out=`` of a ufunc or function             its result, then ``out.copy_(result)``
=========================================  ============================================

numpy's own function first runs on a copy of the target's data: its errors are numpy's
and a function the table cannot map still computes numpy's value where no gradient is
needed. A value written twice at one position keeps the last write, as numpy does, and
so does its gradient (``write_flat``). Writing a value that needs a gradient, or any
traced value, into a numpy array is refused: numpy's array cannot carry it. Any other
function reached through the protocols gets read-only views of the Tensors' data
(``numpy_interop._fallback``), so a write this table does not know is an error, never
lost.

>>> import numpy as np, pullback as pb
>>> x = pb.tensor([1., 2., 3.], requires_grad=True)
>>> y = x * 1
>>> np.add.at(y, [0, 0, 2], x)
>>> y
tensor([4., 2., 6.], grad_fn=<CopyBackwards>)
>>> y.sum().backward()
>>> x.grad
tensor([2., 2., 2.])
"""

from __future__ import annotations

import linecache
import os
import re
import sys
from typing import Any, Callable

import numpy as np

from . import numpy_interop
from .autograd import messages, record
from .autograd.grad_mode import STATE
from .ops.elementwise import clone
from .ops.elementwise import where as where_op
from .ops.indexing import index_add_op
from .ops.pointwise import nan_to_num
from .ops.shape import expand, reshape
from .ops.subscripts import take_index
from .ops.table.args import Unsupported
from .ops.writes import copy, index_put
from .tensor import ARRAY_REFUSED, Tensor
from .user_code import is_user_file

_MISSING = object()


# ------------------------------------------------------------------- helpers
def _static(x: Any) -> Any:
    """An index, mask or position argument as numpy data (a Tensor's value is guarded
    by a trace, as any index tensor's is)."""
    if isinstance(x, tuple):
        return tuple(_static(i) for i in x)
    if isinstance(x, Tensor):
        record.notify_concrete(x, "index")
        return x._data
    if isinstance(x, list):
        return np.asarray([_static(i) for i in x])
    return x


def _data(x: Any) -> Any:
    """The numpy value of ``x`` for numpy's checks (read without a guard)."""
    return x._data if isinstance(x, Tensor) else x


def _needs_grad(*values: Any) -> bool:
    return STATE.grad_enabled and any(numpy_interop._needs_grad(v) for v in values)


def _tracing(*values: Any) -> bool:
    """A trace is open in this thread and a Tensor is among ``values``."""
    return bool(record.trace_hooks()) and any(isinstance(v, Tensor) for v in values)


def _into_array(name: str, arg: str, values: tuple) -> None:
    """Refuse writing a value that needs a gradient, or a traced one, into a numpy
    array (``arg`` of ``name``)."""
    if _needs_grad(*values) or _tracing(*values):
        raise TypeError(f"{name} writes into its argument '{arg}', a numpy array, a value "
                        "that needs a gradient or is traced; numpy's array cannot carry it. "
                        "Make the array in the function (np.zeros, np.empty, np.copy...) or "
                        "write into a Tensor")


def _inplace(name: str | None, arg: str, op: Any, args: tuple, params: dict) -> Any:
    """``record.apply_inplace``, its errors told that ``name`` wrote into ``arg``."""
    try:
        return record.apply_inplace(op, args, params)
    except Exception as e:
        if name is not None:
            e.add_note(f"(raised by {name} writing into its argument '{arg}')")
        raise


def _fresh(v: Any, target: Tensor) -> Any:
    """``v`` as an in-place op's operand: a copy when it is a view (it may read the
    target's memory, which numpy allows and torch's in-place ops refuse)."""
    if isinstance(v, Tensor) and (v._base is not None or v is target):
        return clone(v)
    return v


def _broadcast_flat(v: Any, shape: tuple) -> Any:
    """``v`` broadcast to ``shape``, flattened."""
    if isinstance(v, Tensor):
        if tuple(v.shape) != shape:
            v = expand(v, shape=shape)
        return reshape(v, (-1,))
    return np.broadcast_to(np.asarray(v), shape).reshape(-1)


def _recycled(v: Any, take: np.ndarray) -> Any:
    """``v.flat[take]`` (numpy's ``put``/``place`` repeat a short value)."""
    if isinstance(v, Tensor):
        flat = reshape(v, (-1,))
        if take.size == flat.shape[0] and (take == np.arange(take.size)).all():
            return flat
        return take_index(flat, index=(take,))
    return np.asarray(v).reshape(-1)[take]


def _pick(v: Any, keep: np.ndarray) -> Any:
    return take_index(v, index=(keep,)) if isinstance(v, Tensor) else v[keep]


def last_writers(pos: np.ndarray) -> np.ndarray | None:
    """The indices of the last occurrence of each position in ``pos`` (None when every
    position occurs once): numpy's assignment keeps the last write."""
    if np.unique(pos).size == pos.size:
        return None
    first_reversed = np.unique(pos[::-1], return_index=True)[1]
    return np.sort(pos.size - 1 - first_reversed)


def write_flat(name: str | None, arg: str, a: Tensor, pos: np.ndarray, vals: Any) -> None:
    """``a.flat[pos] = vals`` in place, numpy's way: where ``pos`` repeats, the last
    write wins, in the value and in the gradient (the earlier writers get none)."""
    keep = last_writers(pos)
    if keep is not None:
        pos, vals = pos[keep], _pick(vals, keep)
    if a.ndim == 0:
        index, vals = (), (reshape(vals, ()) if isinstance(vals, Tensor) else vals.reshape(()))
    else:
        index = np.unravel_index(pos, a.shape)
    _inplace(name, arg, index_put, (a, _fresh(vals, a)), {"index": index})


def assign(a: Tensor, index: Any, value: Any) -> None:
    """``a[index] = value`` by an advanced index that repeats positions, with numpy's
    semantics (the numpy face's ``__setitem__``): the last write wins, and its gradient
    with it."""
    ref = np.array(a._data, copy=True)
    ref[index] = _data(value)  # numpy's errors
    pos = np.arange(a._data.size).reshape(a._data.shape)[index]
    write_flat(None, "", a, pos.reshape(-1), _broadcast_flat(value, pos.shape))


def repeats_positions(a: Tensor, index: Any) -> bool:
    """Whether an advanced index names some element of ``a`` more than once."""
    try:
        pos = np.arange(a._data.size).reshape(a._data.shape)[index]
    except (IndexError, ValueError, TypeError):
        return False  # (the assignment raises numpy's error)
    return np.unique(pos).size != np.size(pos)


# ------------------------------------------------------------------ ufunc.at
def _ranks(pos: np.ndarray) -> np.ndarray:
    """For each entry of ``pos``, how many earlier entries name the same position."""
    order = np.argsort(pos, kind="stable")
    s = pos[order]
    starts = np.flatnonzero(np.r_[True, s[1:] != s[:-1]]) if s.size else s
    first = np.repeat(starts, np.diff(np.r_[starts, s.size]))
    ranks = np.empty_like(pos)
    ranks[order] = np.arange(s.size) - first
    return ranks


def _rounds(fn: Callable, flat: Any, pos: np.ndarray, b: Any) -> Any:
    """``flat`` after ``fn`` applied at ``pos`` with ``b``'s values (None: unary), in
    numpy's order: the k-th occurrence of a position is applied in round k."""
    ranks = _ranks(pos)
    for r in range(int(ranks.max()) + 1 if pos.size else 0):
        sel = np.flatnonzero(ranks == r)
        p = (pos[sel],)
        cur = take_index(flat, index=p)
        out = fn(cur) if b is None else fn(cur, _pick(b, sel))
        flat = index_put(flat, out, index=p)
    return flat


def ufunc_at(ufunc: np.ufunc, a: Any, indices: Any, b: Any = _MISSING) -> None:
    """``ufunc.at(a, indices, b)`` with a Tensor among its operands."""
    name = f"numpy.{ufunc.__name__}.at"
    index = _static(indices)
    operands = (a,) if b is _MISSING else (a, b)
    extra = () if b is _MISSING else (_data(b),)
    if not isinstance(a, Tensor):
        _into_array(name, "a", operands)
        ufunc.at(a, index, *extra)
        return None
    ref = np.array(a._data, copy=True)
    ufunc.at(ref, index, *extra)  # numpy's errors and value
    fn = numpy_interop.UFUNCS.get(ufunc)
    pos = np.asarray(np.arange(a._data.size).reshape(a._data.shape)[index])
    flat = reshape(clone(a), (-1,))
    bb = None if b is _MISSING else _broadcast_flat(b, pos.shape)
    pos = pos.reshape(-1)
    try:
        if fn is None:
            raise Unsupported
        if bb is not None and (ufunc is np.add or ufunc is np.subtract
                               and a._data.dtype.kind in "fc"):
            alpha = 1 if ufunc is np.add else -1
            new = index_add_op(flat, pos, bb, dim=0, alpha=alpha)
        else:
            new = _rounds(fn, flat, pos, bb)
    except Unsupported:
        if _needs_grad(*operands):
            raise TypeError(messages.NUMPY_NOT_DIFFERENTIABLE.format(
                name=name, hint="")) from None
        # no gradient: numpy's value, its operands guarded by a trace
        numpy_interop._unwrap(operands)
        new = ref
    _inplace(name, "a", copy, (a, reshape(new, a._data.shape)), {})
    return None


# -------------------------------------------------------------- the functions
def _traced_mask(mask: Any) -> bool:
    """A boolean Tensor mask: taken as a traced operand of ``where`` (no guard on it)."""
    return isinstance(mask, Tensor) and mask._data.dtype == np.bool_


def _copyto(dst: Any, src: Any, casting: str = "same_kind", where: Any = True) -> None:
    name = "numpy.copyto"
    if not isinstance(dst, Tensor):
        _into_array(name, "dst", (src,))
        np.copyto(dst, _data(src), casting=casting, where=_static(where))
        return None
    np.copyto(np.array(dst._data, copy=True), _data(src), casting=casting, where=_data(where))
    src = _fresh(src if isinstance(src, Tensor) else np.asarray(src), dst)
    mask = where if _traced_mask(where) else _static(where)
    if not isinstance(mask, Tensor) and np.all(mask):
        _inplace(name, "dst", copy, (dst, src), {})
    else:
        _inplace(name, "dst", copy, (dst, where_op(mask, src, clone(dst))), {})
    return None


def _target(name: str, arg: str, a: Any, values: tuple, run: Callable) -> bool:
    """Whether ``a`` is a Tensor to write into; a numpy array is written by ``run`` (if
    no value written needs a gradient or is traced)."""
    if isinstance(a, Tensor):
        return True
    _into_array(name, arg, values)
    run()
    return False


def _fill_diagonal(a: Any, val: Any, wrap: bool = False) -> None:
    name = "numpy.fill_diagonal"
    if not _target(name, "a", a, (val,), lambda: np.fill_diagonal(a, _data(val), wrap)):
        return None
    np.fill_diagonal(np.array(a._data, copy=True), _data(val), wrap)  # numpy's errors
    shape = a._data.shape
    if len(shape) == 2:
        step, end = shape[1] + 1, None if wrap else shape[1] * shape[1]
    else:
        step, end = 1 + int(np.cumprod(shape[:-1]).sum()), None
    pos = np.arange(a._data.size)[:end:step]
    write_flat(name, "a", a, pos, _recycled(val, np.arange(pos.size) % max(np.size(
        _data(val)), 1)))
    return None


def _put(a: Any, ind: Any, v: Any, mode: str = "raise") -> None:
    name = "numpy.put"
    ind = _static(ind)
    if not _target(name, "a", a, (v,), lambda: np.put(a, ind, _data(v), mode)):
        return None
    np.put(np.array(a._data, copy=True), ind, _data(v), mode)  # numpy's errors
    n, pos = a._data.size, np.asarray(ind, np.intp).reshape(-1)
    if np.size(_data(v)) == 0 or n == 0:
        return None
    pos = np.clip(pos, 0, n - 1) if mode == "clip" else pos % n
    write_flat(name, "a", a, pos, _recycled(v, np.arange(pos.size) % np.size(_data(v))))
    return None


def _put_along_axis(arr: Any, indices: Any, values: Any, axis: Any) -> None:
    name = "numpy.put_along_axis"
    indices = _static(indices)
    if not _target(name, "arr", arr, (values,),
                   lambda: np.put_along_axis(arr, indices, _data(values), axis)):
        return None
    np.put_along_axis(np.array(arr._data, copy=True), indices, _data(values), axis)
    grid = np.arange(arr._data.size).reshape(arr._data.shape)
    pos = np.take_along_axis(grid.reshape(-1) if axis is None else grid, indices,
                             0 if axis is None else axis)
    write_flat(name, "arr", arr, pos.reshape(-1), _broadcast_flat(values, pos.shape))
    return None


def _masked(name: str, arg: str, a: Any, mask: Any, values: Any, numpy_fn: Callable,
            by_position: bool) -> None:
    """``putmask`` (``by_position``: the value at position ``n`` of ``a``, repeated) and
    ``place`` (the values in order, repeated)."""
    mask = _static(mask)
    if not _target(name, arg, a, (values,), lambda: numpy_fn(a, mask, _data(values))):
        return None
    numpy_fn(np.array(a._data, copy=True), mask, _data(values))  # numpy's errors
    pos = np.flatnonzero(mask)
    size = np.size(_data(values))
    if pos.size == 0 or size == 0:
        return None
    take = (pos if by_position else np.arange(pos.size)) % size
    write_flat(name, arg, a, pos, _recycled(values, take))
    return None


def _putmask(a: Any, mask: Any, values: Any) -> None:
    name = "numpy.putmask"
    if not (isinstance(a, Tensor) and _traced_mask(mask)):
        return _masked(name, "a", a, mask, values, np.putmask, True)
    np.putmask(np.array(a._data, copy=True), mask._data, _data(values))  # numpy's errors
    size = np.size(_data(values))
    if size == 0:
        return None
    # the value at each position n is values.flat[n % size], whatever the mask: a traced
    # mask selects with ``where`` (no guard on it)
    full = _recycled(values, np.arange(a._data.size) % size)
    full = reshape(full, a._data.shape) if isinstance(full, Tensor) else full.reshape(
        a._data.shape)
    new = where_op(reshape(mask, a._data.shape), full, clone(a))
    _inplace(name, "a", copy, (a, new), {})
    return None


def _place(arr: Any, mask: Any, vals: Any) -> None:
    return _masked("numpy.place", "arr", arr, mask, vals, np.place, False)


def _nan_to_num(x: Any, copy: bool = True, nan: float = 0.0, posinf: Any = None,
                neginf: Any = None) -> Any:
    if copy or not isinstance(x, Tensor) or x._data.dtype.kind not in "fc":
        raise Unsupported  # (the table's function, or numpy's)
    return _inplace("numpy.nan_to_num", "x", nan_to_num, (x,),
                    {"nan": nan, "posinf": posinf, "neginf": neginf})


#: numpy function -> its form writing into a Tensor
WRITERS: dict = {np.copyto: _copyto, np.fill_diagonal: _fill_diagonal, np.put: _put,
                 np.put_along_axis: _put_along_axis, np.putmask: _putmask, np.place: _place,
                 np.nan_to_num: _nan_to_num}

numpy_interop.WRITERS.update(WRITERS)
numpy_interop.UFUNC_METHODS["at"] = ufunc_at


_BUILDS = re.compile(r"\b(np|numpy)\.(as)?array\(\s*[\[(]")  # of a list or tuple
_LEXSORT = re.compile(r"\b(np|numpy)\.lexsort\(\s*\[")  # (numpy reads a list as one array)
_WRITES = re.compile(r"^[\w.]+\[.*\]\s*[-+*/%@|&^]?=[^=]")


def _eager_build_refusal() -> str:
    """The sentence ``Tensor.__array__`` puts before its refusal when the user's own line
    makes numpy read a Tensor that requires grad: ``np.array([x, 0.0])`` or a write into
    a numpy buffer (``buf[t] = x``), the two ways eager numpy code meets it (pb.grad's
    source pass rewrites both, so the same function runs there)."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__", "").startswith("pullback"):
        frame = frame.f_back
    if frame is None or not is_user_file(frame.f_code.co_filename):
        return ""  # (numpy's or scipy's own code: their callers are named elsewhere)
    text = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
    if _LEXSORT.search(text):
        return (f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno} ({text}): "
                "np.lexsort reads a list of keys as one numpy array, which would drop "
                "their gradient (its result, an index array, has none). Pass the keys as "
                "a tuple, np.lexsort((a, b)), which numpy hands to pullback, or detach "
                "them. ")
    if _BUILDS.search(text):
        what = "np.array(...) copies the Tensor's values into a new numpy array"
    elif _WRITES.match(text):
        what = "writing the Tensor into a numpy array keeps only its values"
    else:
        return ""  # (np.asarray(x) and the like: torch's sentence says it all)
    where = f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno} ({text})"
    return (f"{where}: {what}, which would drop its gradient. On Tensors, build arrays with "
            "np.stack or np.concatenate and buffers with np.zeros_like(x) (both make "
            "Tensors), or differentiate the function with pb.grad or pb.compile, whose "
            "source pass rewrites np.array([...]) and writes into numpy buffers. ")


ARRAY_REFUSED.append(_eager_build_refusal)
