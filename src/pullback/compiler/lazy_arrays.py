"""Arrays of other libraries as traced arguments: Dask's (chunked, lazy) and CuPy's.

Such an argument is traced like an ndarray, by its shape and dtype: the tracer runs on
a stand-in ndarray of that shape and dtype (a broadcast of one element, which holds no
memory), and the generated code, plain numpy code, runs on the arguments themselves:
numpy's protocols (``__array_ufunc__``, ``__array_function__``) send ``np.tanh(X)``
and ``X @ w`` to Dask, so the generated forward and backward build a Dask graph that
Dask's schedulers run. Nothing here imports dask or cupy: an array is recognized by
the module its type comes from (``array_libraries``), and dask is imported only to
compute results the user asked for (``config.dask_compute``).

>>> kind_of_array(np.ones(2)) is None
True
>>> stand_in_for(np.ones((3, 2), np.float32)).strides
(0, 0)
"""

from __future__ import annotations

import dis
import functools
import math
import sys
import types
import weakref
from contextlib import ExitStack, nullcontext
from contextvars import ContextVar
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from pullback.transforms.inplace import disabled as no_writes_into_buffers

from ..array_libraries import LIBRARIES, kind_of_array
from ..ir import Graph, every_eqn, large_values_as_shapes
from ..ops.table.other_arrays import building_code_for_them
from ..ops.table.quiet import quietly
from ..pytree import tree_leaves
from ..settings import config
from .lazy_runtime import RT, DaskLinalg, for_dask

#: values the trace computes with at least this many elements are kept by shape only
#: (the trace runs on stand-ins: their values are never read, and data-sized ones would
#: each take the memory a Dask array is chunked to avoid)
LARGE = 1 << 16

#: generated code with a loop or at least this many lines, over Dask arrays of fewer than
#: ``LARGE`` elements together, runs as one Dask task (``one_task``)
LONG = 200

#: True while generated code runs on numpy's arrays as one Dask task (or on stand-ins for
#: its results' shapes): ``DaskNumpy``'s array makers are numpy's there
ON_NUMPY: ContextVar = ContextVar("pullback_dask_on_numpy", default=False)

#: the front doors (as their messages name them) whose generated code runs on the library's
#: arrays (their results stay its arrays); jacrev, jacfwd, hessian and vmap refuse them
LAZY_DOORS = ("grad", "value_and_grad", "grad_and_value", "vjp", "jvp", "linearize", "compile")

#: what a refused door or an eager path says (the doors that take the arrays)
TAKEN_BY = ("pb.grad, pb.value_and_grad, pb.vjp, pb.jvp, pb.linearize and pb.compile "
            "take them")


def arg_key(a: Any) -> tuple:
    """The cache key of such an array: its library and type, shape and dtype (a shape
    with unknown sizes, NaN, never matches: the call traces and ``check_call`` names it)."""
    return (kind_of_array(a), type(a).__qualname__, a.shape, np.dtype(a.dtype).char)


def stand_in_for(a: Any) -> np.ndarray:
    """An ndarray of ``a``'s shape and dtype the tracer runs on (one element, broadcast:
    it costs no memory whatever the shape). Ones, not zeros, so that a log or a division
    traced on it stays finite."""
    return np.broadcast_to(np.ones((), np.dtype(a.dtype)), a.shape)


def traced_as(a: Any) -> Any:
    """What the tracer runs on for argument ``a``: a stand-in for Dask's and CuPy's
    arrays, ``a`` itself otherwise."""
    return a if kind_of_array(a) is None else stand_in_for(a)


def kinds_in(args: tuple) -> set:
    """The libraries (``"dask"``, ``"cupy"``) whose arrays are among a call's arguments
    (none while neither is imported: the arguments are not flattened, which a first
    call did three times)."""
    if not any(name in sys.modules for name in LIBRARIES):
        return set()
    return {k for k in map(kind_of_array, tree_leaves(list(args))) if k is not None}


def check_call(how: str, where: str, args: tuple, names: list) -> str | None:
    """Refuse what the generated code cannot run on: Dask arrays with unknown chunk sizes
    (NaN in ``.chunks``: after boolean indexing, say) and arrays of two libraries in one
    call. Dask aligns any other chunkings of the same shapes itself (it rechunks, as
    ``dask.array.core.unify_chunks`` does), so those are not refused. Returns the
    library of the call's arrays (None: numpy's)."""
    found: dict = {}
    for name, a in _named_leaves(args, names):
        kind = kind_of_array(a)
        if kind is None:
            continue
        found.setdefault(kind, []).append(name)
        if kind == "dask" and any(math.isnan(n) for n in a.shape):
            raise ValueError(f"{how}: {where}: argument {name!r} is a Dask array with "
                             f"unknown chunk sizes (shape {a.shape}); call "
                             f"{name}.compute_chunk_sizes() first (or give the sizes "
                             "when you make it), so that its shape is known")
    if found and how not in LAZY_DOORS:
        given = ", ".join(n for v in found.values() for n in v)
        raise TypeError(f"{how}: {where}: {next(iter(found))} arrays ({given}) are not "
                        f"arguments of {how}, which would compute them into numpy arrays "
                        f"(a Jacobian or a batch is built element by element); {TAKEN_BY}")
    if len(found) > 1:
        listed = "; ".join(f"{k}: {', '.join(v)}" for k, v in sorted(found.items()))
        raise TypeError(f"{how}: {where} got arrays of different libraries ({listed}); "
                        "pass arrays of one library (move them with dask.array.from_array "
                        "or cupy.asarray first)")
    return next(iter(found), None)


def _named_leaves(args: tuple, names: list) -> Iterator[tuple]:
    for name, a in zip(names, args):
        leaves = tree_leaves(a)
        if len(leaves) == 1 and leaves[0] is a:
            yield name, a
        else:
            for k, x in enumerate(leaves):
                yield f"{name}[{k}]", x


def finish(values: list) -> list:
    """The generated code's results, computed together in one pass over the graph when
    ``config.dask_compute`` asks for it (nothing computed twice), else lazy as they are."""
    if not config.dask_compute:
        return values
    lazy = [i for i, v in enumerate(values) if kind_of_array(v) == "dask"]
    if not lazy:
        return values
    import dask  # (an optional dependency: only a call with Dask arrays gets here)

    done = dask.compute(*[values[i] for i in lazy])
    values = list(values)
    for i, v in zip(lazy, done):
        values[i] = v
    return values


def one_task(fn: Callable, arrays: Sequence, graph: Graph) -> Callable:
    """``fn`` (generated code from ``graph``, or from its adjoint) as it is, or, when it
    loops or is long (``LONG`` lines or more), draws and prints nothing (``graph``'s
    equations are pure: a run on stand-ins and a run at compute time would draw twice,
    out of order) and the Dask arrays among ``arrays`` are small (fewer than ``LARGE``
    elements together), ``fn`` run as one Dask task.

    Statement by statement, generated code over Dask arrays adds a task per statement
    (a millisecond each to build): a loop over the elements of a Dask array (a Kalman
    filter's observations, a scan), rolled or unrolled, makes a chain of thousands of
    0-d tasks, each depending on the last, that Dask's blockwise fusion nests one call
    deep per task: computing it raised RecursionError from about 250 of them (50 steps
    of a scalar Kalman filter's gradient). As one task, the code runs on numpy's arrays,
    the arguments' computed values (they fit in memory: they are small), and its results
    are Dask arrays of the shapes and dtypes a run on stand-ins gives (nothing computed
    now). Large arrays stay chunked, statement by statement: a task per statement and
    chunk, as Dask's own code over them makes (docs/design.md, "Dask: loops").
    """
    dask_sizes = [a.size for a in arrays if kind_of_array(a) == "dask"]
    if not dask_sizes or sum(dask_sizes) >= LARGE or not _long(fn.__code__) or \
            not _pure(fn.__code__, graph):
        return fn
    return functools.partial(_as_one_task, fn)


#: generated code -> whether the graph it was generated from is pure
_PURE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _pure(code: types.CodeType, graph: Graph) -> bool:
    pure = _PURE.get(code)
    if pure is None:  # (once per generated function: a walk over the equations)
        pure = _PURE[code] = all(e.op.pure for e in every_eqn(graph))
    return pure


@functools.lru_cache(maxsize=64)
def _long(code: types.CodeType) -> bool:
    """Whether generated code has a loop (a rolled loop of the traced function's) or
    ``LONG`` lines or more."""
    return len({line for *_, line in code.co_lines()}) >= LONG or \
        any(i.opname == "FOR_ITER" for i in dis.get_instructions(code))


def _as_one_task(fn: Callable, *arrays: Any) -> Any:
    import dask  # (an optional dependency: only a call with Dask arrays gets here)
    import dask.array as da

    try:  # shapes and dtypes of the results (stand-ins: no memory, nothing computed)
        shapes = on_numpy(fn, *[traced_as(a) for a in arrays])
    except Exception:  # (the stand-ins' values were read): statement by statement
        return fn(*arrays)
    if not isinstance(shapes, (tuple, list)) or not all(
            r is None or isinstance(r, (np.ndarray, np.generic, float)) for r in shapes):
        return fn(*arrays)
    task = dask.delayed(quietly, nout=len(shapes))(on_numpy, fn, *arrays)
    return [None if r is None else
            da.from_delayed(task[k], np.shape(r), dtype=np.result_type(r))
            for k, r in enumerate(shapes)]


def on_numpy(fn: Callable, *arrays: Any) -> Any:
    """``fn(*arrays)``, generated code for Dask arrays, run on numpy's (``ON_NUMPY``)."""
    token = ON_NUMPY.set(True)
    try:
        return fn(*arrays)
    finally:
        ON_NUMPY.reset(token)


class DaskNumpy:
    """The ``np`` of generated code over Dask arrays: numpy itself (its functions send
    Dask arrays to Dask), except the functions that make an array from a shape, which
    no argument could send there: ``np.full((n,), g)`` (a mean's gradient) would be a
    numpy array of the data's length, held in memory and shipped inside the graph;
    here it is a Dask array in Dask's automatic chunks. A function Dask lacks runs as
    one task (``lazy_runtime.for_dask``)."""

    linalg = DaskLinalg()

    def __getattr__(self, name: str) -> Any:
        value = self.__dict__[name] = for_dask(np, name, "dask.array")  # (once a name)
        return value

    def full(self, shape: Any, fill_value: Any, dtype: Any = None) -> Any:
        if ON_NUMPY.get():  # (inside one task: numpy's arrays)
            return np.full(shape, fill_value, dtype)
        import dask.array as da  # (an optional dependency: only Dask variants get here)

        fill = da.asarray(fill_value)  # (a 0-d numpy or Dask value: the gradient's seed)
        dtype = np.dtype(dtype or fill.dtype)
        chunks = da.core.normalize_chunks("auto", tuple(shape), dtype=dtype)
        return da.broadcast_to(fill.astype(dtype), shape, chunks=chunks)

    def array(self, a: Any, dtype: Any = None, *, copy: bool = True, order: str = "K") -> Any:
        """``np.array`` (a copy, a layout: ``np.array(x, order='C')``): numpy's would
        compute a Dask array; one is never written into, so it is its own copy."""
        if kind_of_array(a) is None:
            return np.array(a, dtype, copy=copy, order=order)
        return a if dtype is None else a.astype(dtype)

    def asarray(self, a: Any, dtype: Any = None) -> Any:
        if kind_of_array(a) is None:
            return np.asarray(a, dtype)
        return self.array(a, dtype)

    def ascontiguousarray(self, a: Any, dtype: Any = None) -> Any:
        """A Dask array has no layout: itself (numpy's would compute it)."""
        if kind_of_array(a) is None:
            return np.ascontiguousarray(a, dtype)
        return self.array(a, dtype)

    def zeros(self, shape: Any, dtype: Any = float) -> Any:
        return self.full(shape, 0, dtype)

    def ones(self, shape: Any, dtype: Any = float) -> Any:
        return self.full(shape, 1, dtype)

    def empty(self, shape: Any, dtype: Any = float) -> Any:
        return self.full(shape, 0, dtype)


def env_for(args: tuple) -> dict:
    """What generated code for these arguments names differently from numpy's code."""
    return {"np": DaskNumpy(), "rt": RT} if "dask" in kinds_in(args) else {}


def build_context(args: tuple) -> Any:
    """Around a variant's build: for arrays of another library, no pass that writes
    into buffers (``out=`` is for numpy's own arrays)."""
    return lazy_context(bool(kinds_in(args)))


def lazy_context(lazy: bool) -> Any:
    """``build_context`` for code known to run on another library's arrays (``lazy``),
    or not: a backward generated after the build (``pb.vjp``'s) enters it again."""
    if not lazy:
        return nullcontext()
    stack = ExitStack()
    stack.enter_context(no_writes_into_buffers())
    stack.enter_context(building_code_for_them())
    stack.enter_context(large_values_as_shapes(LARGE))
    return stack
