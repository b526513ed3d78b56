"""Tracing a call: proxies for the arguments, the recorded graph, and the outputs.

Shared by ``compile`` (forward and backward as two functions around a graph node)
and ``grad``/``value_and_grad`` (one function computing value and gradients).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from .. import dtypes
from ..autograd import record
from ..creation import local
from ..ir import Graph
from ..numpy_face import NUMBERS, NumpyTensor, to_face, to_python_float
from ..pytree import tree_flatten, tree_leaves, tree_unflatten
from ..tensor import Tensor
from . import lazy_arrays, source
from .captured import CapturedGuards, collect, referenced_ids
from .lazy_checks import refuse_python_steps
from .tracer import Tracer
from .user_lines import Guard, StandInRead, TraceError, def_line


@dataclass
class Traced:
    """What one traced call produced."""

    graph: Graph  # inputs: traced args then captures; outputs: flat tensor outputs
    arg_slots: list  # per graph input from the args: (arg index, () or (leaf index,))
    requires: list  # per arg slot: whether its proxy required grad
    captures: list  # tensors from outside the function, read on every call
    guards: list[Guard]
    out_tree: Any  # the output structure, with None where a tensor goes
    n_outputs: int
    # the guards on the values the function captured (globals, cells, self.W...) and
    # their check(args), which the cache loop calls before it runs the variant
    captured: CapturedGuards | None = None
    check: Callable | None = None
    # the numpy generators the generated code draws from (None: pullback's own, read
    # when it runs); the cache loop rewinds them when a guard fails during a run
    generators: tuple = ()
    cut: tuple | None = None  # a conversion that cut a gradient (conversions.py)
    notes: tuple = ()  # why converted loops ran unrolled (source/region_attempts.py)


def flatten(x: Any, path: tuple = ()) -> tuple[list, Any]:
    """Tensors (and arrays) out of nested tuples/lists/dicts; the rest stays in the tree."""
    if isinstance(x, (Tensor, np.ndarray)):
        return [(path, x)], None
    if isinstance(x, (list, tuple)):
        leaves, trees = [], []
        for i, y in enumerate(x):
            lv, tr = flatten(y, path + (i,))
            leaves += lv
            trees.append(tr)
        return leaves, (type(x), trees)
    if isinstance(x, dict):
        leaves, trees = [], {}
        for k, y in x.items():
            lv, tr = flatten(y, path + (k,))
            leaves += lv
            trees[k] = tr
        return leaves, (dict, trees)
    return [], ("const", x)


def unflatten(tree: Any, leaves: list) -> Any:
    """``leaves`` put back in the structure ``flatten`` gave as ``tree``.

    (A module-level helper, not a closure calling itself: such a closure is a reference
    cycle that would keep the call's outputs alive until the cyclic garbage collector
    runs, so every call's arrays piled up, megabytes at a time.)

    >>> unflatten((dict, {"a": None, "b": (tuple, [None, ("const", 3)])}), [1, 2])
    {'a': 1, 'b': (2, 3)}
    """
    if tree is None:
        return leaves[0]
    return _build(tree, iter(leaves))


def _build(tree: Any, it: Any) -> Any:
    if tree is None:
        return next(it)
    kind, sub = tree
    if kind == "const":
        return sub
    if kind is dict:
        return {k: _build(v, it) for k, v in sub.items()}
    items = [_build(v, it) for v in sub]
    return kind(items) if kind in (list, tuple) else kind(*items)


def positional(fn: Callable, how: str, args: tuple, kwargs: dict) -> tuple:
    """A call's arguments as positional ones, keywords bound to ``fn``'s parameters
    (traced like positional arguments; ``argnums`` count positions). Parameters left
    out before a keyword given take their defaults."""
    try:
        bound = inspect.signature(fn).bind(*args, **kwargs)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{how}: {def_line(fn)}: {e}") from None
    bound.apply_defaults()
    passed = [k for k in bound.kwargs if k in kwargs or k not in bound.signature.parameters]
    if passed:  # (keyword-only parameters left out keep their defaults)
        raise TypeError(f"{how}: {def_line(fn)} takes keyword-only or **kwargs arguments "
                        f"({', '.join(passed)}); pass them positionally or close over "
                        "them")
    return bound.args


def param_names(fn: Callable, n: int) -> list:
    try:
        names = [p.name for p in inspect.signature(fn).parameters.values()
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        names = []
    return [names[i] if i < len(names) else f"arg{i}" for i in range(n)]


def proxy(a: Any, requires_grad: bool, floats: np.dtype | None = None) -> Tensor:
    """A fresh leaf holding the argument's value (the caller's graph is not touched),
    on the argument's face: a Tensor for a Tensor, numpy's (``NumpyTensor``,
    numpy_face.py) for an ndarray or a Python float, which becomes a 0-d array of
    dtype ``floats`` (see ``float_dtype``). Inside another function's trace it is that
    trace's value, detached (a nested transform's own input), so the trace still
    follows where it came from."""
    if record.TRACING and record.trace_hooks():
        t = a.detach() if isinstance(a, Tensor) else to_face(local(_data(a, floats)))
        return _require(t) if requires_grad else t
    return input_leaf(a, requires_grad, floats)


def input_leaf(a: Any, requires_grad: bool, floats: np.dtype | None = None,
               python: bool = False) -> Tensor:
    """A new leaf sharing the argument's data, on its face: a traced function's input.
    With ``python`` (the numpy face), a Python float that ``floats`` would narrow stays
    Python's float64, weak where it meets arrays (``numpy_face.to_python_float``): a
    loop's time ``t = t0; t += 0.1`` steps as Python's does."""
    if isinstance(a, Tensor):
        t = (NumpyTensor if type(a) is NumpyTensor else Tensor)._make(a._data)
    elif python and type(a) is float and floats is not None and floats != _FLOAT64:
        t = to_python_float(NumpyTensor._make(np.asarray(a, _FLOAT64)))
    else:
        t = NumpyTensor._make(_data(a, floats))
    return _require(t) if requires_grad else t


def _require(t: Tensor) -> Tensor:
    if not dtypes.is_differentiable(t._data.dtype):
        raise TypeError(f"can only differentiate float arguments, got {t._data.dtype}")
    t._requires_grad = True
    return t


def _data(a: Any, floats: np.dtype | None) -> np.ndarray:
    """An argument's array: a Python float in ``floats``, a numpy scalar in its own."""
    if isinstance(a, np.ndarray):
        return a
    if lazy_arrays.kind_of_array(a) is not None:  # (trace_call traces on a stand-in)
        raise TypeError(f"{lazy_arrays.kind_of_array(a)} arrays are arguments of generated "
                        "code only; this transform would compute on them eagerly (inside "
                        "another transform's trace, on Tensors with a graph, or falling "
                        f"back): {lazy_arrays.TAKEN_BY} on plain arguments")
    if isinstance(a, (np.floating, np.complexfloating)) and type(a) not in _PYTHON_LIKE:
        return np.asarray(a)  # (np.float64 is a float: ``floats`` is float64 beside it)
    if isinstance(a, complex):  # (a Python complex: complex of the floats' width)
        return np.asarray(a, dtype=np.result_type(floats or dtypes.default_float.np, np.complex64))
    return np.asarray(a, dtype=floats or dtypes.default_float.np)


def float_dtype(args: Any) -> np.dtype:
    """The dtype of the Python floats among a call's arguments, numpy's: float64, or
    weakly typed next to float arrays (numpy 2's rule): the widest float dtype of the
    call's arrays and Tensors, so float32 code stays float32 and 0.1 next to float64
    arrays is 0.1. With a Tensor among them and no float array (the torch face), the
    default float dtype, as torch gives ``int_tensor * 0.5``."""
    widest = None
    torch_face = False
    for x in tree_leaves(args):
        if isinstance(x, Tensor):
            d = x._data.dtype
            torch_face = torch_face or type(x) is not NumpyTensor
        else:
            d = getattr(x, "dtype", None)
        if d is not None and d.kind == "f" and (widest is None or d.itemsize > widest.itemsize):
            widest = d
    if widest is not None:
        return widest
    return dtypes.default_float.np if torch_face else _FLOAT64


def numpy_face(args: Any) -> bool:
    """Whether a call's arguments hold no Tensor of torch's face."""
    return not any(type(x) is Tensor for x in tree_leaves(args))


_FLOAT64 = np.dtype(np.float64)
_PYTHON_LIKE = (np.float64, np.complex128)


def _constant_output(args: tuple, leaves: list) -> bool:
    """On the numpy face (no Tensor of the torch face among the arguments), an output of
    float values only, none traced: a constant (its gradient and tangent zeros)."""
    return bool(leaves) and not any(type(x) is Tensor for x in tree_leaves(list(args))) and all(
        isinstance(x, (np.ndarray, np.generic, float, complex))
        and np.asarray(x).dtype.kind in "fc" for _, x in leaves)


def is_traced_arg(a: Any) -> bool:
    """Traced rather than static: arrays (numpy's, Dask's, CuPy's), Tensors, Python
    floats and complex numbers, numpy's float and complex scalars (``np.float32(0.8)``:
    a 0-d value of its dtype)."""
    return isinstance(a, (Tensor, np.ndarray, float, complex, np.floating, np.complexfloating)) or \
        lazy_arrays.kind_of_array(a) is not None


#: the front doors whose traces follow numpy's semantics (JAX's functional transforms)
NUMPY_SEMANTICS = ("grad", "value_and_grad", "grad_and_value", "vjp", "jvp", "jacfwd",
                   "hessian", "linearize", "vmap")


def trace_call(fn: Callable, args: tuple, wants_grad: Callable, how: str,
               user_fn: Callable | None = None) -> Traced:
    """Run ``fn`` on proxies of ``args`` and record it. An argument is traced whole or,
    for a pytree (lists, tuples, dicts... of arrays), leaf by leaf; ``wants_grad(i,
    leaf)`` says which proxies require grad; ``user_fn`` (default ``fn``) names the
    graph and its inputs.

    A long scan leaves stand-ins for its outputs (``Tracer.may_stand_in``): the call
    that traced runs the generated code next, the loop's one run. A trace valid for
    any values satisfying its guards is valid for the stand-ins too; a trace that
    reads one (a guard, a Python value, a print, an op failing on it, a while loop
    run on it) is made again on the real values."""
    try:
        return _trace_call(fn, args, wants_grad, how, user_fn, True)
    except StandInRead:
        return _trace_call(fn, args, wants_grad, how, user_fn, False)


def _trace_call(fn: Callable, args: tuple, wants_grad: Callable, how: str,
                user_fn: Callable | None, stand_ins: bool) -> Traced:
    user_fn = user_fn or fn
    # the source pass: numpy code the tracer cannot see, rewritten (source.py); the
    # functional transforms follow numpy's semantics (writes into arguments are
    # functionalized, elements read are copies), pb.compile torch's (it refuses writes
    # into inputs)
    fn = source.rewrite(fn, numpy_semantics=how in NUMPY_SEMANTICS, traced=True)
    names = param_names(user_fn, len(args))
    library = lazy_arrays.check_call(how, def_line(user_fn), args, names)
    tracer = Tracer(user_fn)
    tracer.may_stand_in = stand_ins and library is None
    call_args, slots, requires = [], [], []
    # run in the caller's grad mode: ops the program runs under no_grad are recorded
    # as such, and stop gradients in the adjoint as they do in eager mode
    floats = float_dtype(args)
    python = numpy_face(args)
    numbers: set = set()  # (the stand-ins of Python numbers: numpy_face.NUMBERS)
    with tracer:
        for i, a in enumerate(args):
            if is_traced_arg(a):
                requires.append(bool(wants_grad(i, a)))
                p = input_leaf(lazy_arrays.traced_as(a), requires[-1], floats, python)
                tracer.add_input(p, names[i])
                slots.append((i, ()))
                call_args.append(p)
                if isinstance(a, (float, complex, np.generic)):
                    numbers.add(id(p))
            else:
                call_args.append(_proxy_tree(a, i, names[i], tracer, slots, requires,
                                             wants_grad, floats, python))
        NUMBERS.update(numbers)
        try:
            out = fn(*call_args)
        except Exception as e:
            if tracer.stand_ins:  # (an error may come of a stand-in's value)
                raise StandInRead(tracer.stand_in_read or repr(e)) from e
            if hasattr(e, "add_note") and not isinstance(e, TraceError):
                src = getattr(tracer.builder.eqns[-1], "src", None) if tracer.builder.eqns \
                    else None
                last = f"; the last traced op was at {src} ({src.text})" if src else ""
                e.add_note(f"while tracing {def_line(user_fn)} for {how}{last}")
            raise
        finally:
            NUMBERS.difference_update(numbers)
    if tracer.stand_in_read is not None:  # (read, and the error caught by the function)
        raise StandInRead(tracer.stand_in_read)
    if tracer.fail is not None:
        raise tracer.fail
    if library is not None and tracer.guards:
        raise TraceError(f"{how}: {def_line(user_fn)} turns a traced value into a Python "
                         f"value ({tracer.guards[0].describe()}); on {library} arrays "
                         "that would compute them on every call: keep the computation in "
                         "array operations (np.where instead of if, say)")
    leaves, tree = flatten(out)
    if not any(isinstance(x, Tensor) for _, x in leaves) and not (
            how in NUMPY_SEMANTICS and _constant_output(args, leaves)):
        raise TraceError(f"{how}: {def_line(user_fn)} returned no tensor "
                         f"(got {type(out).__name__}); the function must return "
                         "at least one Tensor")
    outputs = [tracer.value_of(x if isinstance(x, Tensor) else Tensor._make(np.asarray(x)))
               for _, x in leaves]
    graph = tracer.graph(outputs)
    if library is not None:
        refuse_python_steps(graph, slots, args, names, how, def_line(user_fn))
    captures = [t for t, _ in tracer.captures]
    # what the function read from outside its arguments: guarded, so rebinding retraces
    captured = collect(user_fn, args, names, {i for i, _ in slots},
                       referenced_ids(graph, captures),
                       {k for k, replayed in tracer.unguarded.items() if replayed},
                       baked=tracer.baked)
    return Traced(graph, slots, requires, captures, tracer.guards, tree, len(outputs),
                  captured, captured and captured.check, drawn_from(graph), tracer.cut,
                  tuple(tracer.notes))


def drawn_from(graph: Graph) -> tuple:
    """The generators a graph's draws read (``op.draws_from``; None for pullback's own,
    which ``pb.manual_seed`` replaces), each once."""
    found: dict = {}
    for e in graph.eqns:
        if e.op.draws_from is None:
            continue
        gen = e.op.draws_from(e.params)
        found[0 if gen is None else id(gen)] = gen
    return tuple(found.values())



def _proxy_tree(a: Any, i: int, name: str, tracer: Tracer, slots: list, requires: list,
                wants_grad: Callable, floats: np.dtype, python: bool) -> Any:
    """The leaves of a pytree argument that are arrays, Tensors or floats are traced
    inputs too (named ``<arg>_<k>``); the argument is rebuilt around their proxies."""
    leaves, treedef = tree_flatten(a)
    if treedef.node is None or not any(is_traced_arg(x) for x in leaves):
        return a
    names = _leaf_names(treedef, name)
    for k, x in enumerate(leaves):
        if is_traced_arg(x):
            requires.append(bool(wants_grad(i, x)))
            leaves[k] = input_leaf(lazy_arrays.traced_as(x), requires[-1], floats, python)
            tracer.add_input(leaves[k], names[k] if len(set(names)) == len(names)
                             else f"{name}_{k}")
            slots.append((i, (k,)))
    return tree_unflatten(treedef, leaves)


def _leaf_names(d: Any, name: str) -> list:
    """Each leaf's name: the argument's, then its dict keys and named tuples' fields
    (``params_w1``), or its place in a list or tuple (``params_0``)."""
    if d.node is None:
        return [name]
    keys = d.aux if isinstance(d.aux, tuple) and len(d.aux) == len(d.children) and \
        issubclass(d.node, dict) else getattr(d.node, "_fields", range(len(d.children)))
    return [leaf for j, (key, child) in enumerate(zip(keys, d.children))
            for leaf in _leaf_names(child, f"{name}_{key}" if str(key).isidentifier()
                                    or type(key) is int else f"{name}_{j}")]


def slot_values(traced: Traced, args: tuple) -> list:
    """The call's values for the traced argument slots (Tensors, arrays or floats)."""
    values = []
    flat: dict = {}  # arg index -> its leaves, flattened once per call
    for i, path in traced.arg_slots:
        if not path:
            values.append(args[i])
            continue
        leaves = flat.get(i)
        if leaves is None:
            leaves = flat[i] = tree_leaves(args[i])
        values.append(leaves[path[0]])
    return values


def arg_array(a: Any, var: Any) -> np.ndarray:
    """A call's array for traced argument ``a`` (graph input ``var``): a Python float in
    the dtype the trace gave it, so that results and guards see what the trace saw."""
    if isinstance(a, Tensor):
        return a._data
    if isinstance(a, (float, complex, np.floating, np.complexfloating)):
        return np.asarray(a, var.dtype)
    if type(a) is not np.ndarray and isinstance(a, np.ndarray):
        return a.view(np.ndarray)  # (np.matrix's * is a product of matrices)
    return a


def gather_inputs(traced: Traced, args: tuple) -> list:
    """The arrays to pass to generated code for one call, in graph-input order."""
    arrays = [arg_array(a, v) for a, v in zip(slot_values(traced, args), traced.graph.inputs)]
    for t in traced.captures:
        arrays.append(t._data)
    return arrays
