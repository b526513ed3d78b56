"""What the front doors share: ``pb.grad``, ``pb.value_and_grad``, ``pb.vjp``,
``pb.jvp``, ``pb.linearize``, ``pb.jacfwd``, ``pb.jacrev``, ``pb.hessian`` and
``pb.compile`` (and any new door: vmap, export) take their argument checks, result
packaging and pytree handling from here, never from another door's module
(``tools/import_graph.py`` refuses a door importing another door's private names).

``argnums`` is checked once, here, with torch.func's words (the doors' names and
messages are torch.func's): an error that is a ``ValueError`` (JAX's kind) and a
``RuntimeError`` (torch.func's), as ``OutputError`` is both a TypeError and a
RuntimeError.

>>> check_argnums("grad", (0, 2), 2)
Traceback (most recent call last):
...
pullback.compiler.doors.ArgnumsError: Got argnum=2, but only 2 positional inputs
"""

from __future__ import annotations

import operator
import warnings
from typing import Any

import numpy as np

from ..autograd import forward_ad
from ..autograd.backward import grad as autograd_grad
from ..ir.naming import sanitize
from ..numpy_face import face_like, to_face
from ..ops.table.quiet import INSIDE, THREAD, context
from ..pytree import tree_leaves, tree_map
from ..tensor import Tensor, result_tensor
from .cache import CAPTURED, GuardFailed
from .lazy_arrays import kind_of_array
from .trace import Traced, is_traced_arg, proxy, unflatten


class ArgnumsError(ValueError, RuntimeError):
    """``argnums`` names no positional argument, an argument twice, or is not an int."""


def check_argnums(name: str, argnums: Any, n: int) -> tuple:
    """``argnums`` (an int or a tuple of them) as non-negative positions among ``n``
    positional arguments, each once."""
    nums = argnums if isinstance(argnums, tuple) else (argnums,)
    for k in nums:
        if not isinstance(k, (int, np.integer)) or isinstance(k, bool):
            raise ArgnumsError(f"{name}: Expected argnums to be int or tuple of ints, got "
                               f"{type(k).__name__}")
        if not -n <= k < n:
            raise ArgnumsError(f"Got argnum={k}, but only {n} positional inputs")
    return unique_argnums(name, argnums, tuple(int(k) % n for k in nums))


class OutputError(TypeError, RuntimeError):
    """The function given to grad does not return a scalar Tensor: a TypeError, as JAX
    raises, that is also the RuntimeError torch.func raises, with its words."""


def scalar_error(name: str, ndim: int) -> OutputError:
    return OutputError(f"{name}(f)(*args): Expected f(*args) to return a scalar Tensor, got "
                        f"tensor with {ndim} dims. Maybe you wanted to use the vjp or jacrev "
                        "APIs instead?")


def grad_slots(traced: Traced, nums: tuple) -> list:
    """The arg slots of the ``argnums`` targets, target by target, leaf by leaf."""
    return [j for k in nums for j, (i, _) in enumerate(traced.arg_slots) if i == k]


def unique_argnums(name: str, argnums: Any, nums: tuple) -> tuple:
    """``nums`` (``argnums`` made non-negative), refused with torch.func's words when an
    argument is named twice: its gradient would be split between the two (JAX has no
    meaning for it either)."""
    if len(set(nums)) != len(nums):
        raise ArgnumsError(f"{name}: argnums elements must be unique, got {argnums}")
    return nums


def check_target(name: str, k: int, a: Any) -> None:
    """An ``argnums`` target must hold only float arrays, Tensors or floats (JAX's rule)."""
    leaves = [a] if is_traced_arg(a) else tree_leaves(a)
    bad = [x for x in leaves if not is_traced_arg(x)] or ([] if leaves else [a])
    if bad:
        raise TypeError(f"{name}: argument {k} (argnums) must be a float array, Tensor or "
                        f"float, or a list, tuple or dict of them; it holds "
                        f"{type(bad[0]).__name__} {bad[0]!r}")


def map_traced(f: Any, a: Any, *rest: Any) -> Any:
    """``f`` on ``a`` if it is a traced value, else on each traced leaf of the pytree."""
    if is_traced_arg(a):
        return f(a, *rest)
    return tree_map(lambda x, *r: f(x, *r) if is_traced_arg(x) else x, a, *rest)


def has_graph(x: Any) -> bool:
    """Whether ``x`` is a Tensor an outer computation differentiates through (a graph,
    or a tangent of forward mode's)."""
    return isinstance(x, Tensor) and (x._requires_grad or x._grad_fn is not None
                                      or x._fw_tangent is not None)


def nested_leaf(x: Any, floats: Any) -> Any:
    """What a transform running eagerly (nested) differentiates for argument ``x``:
    ``x`` itself when it has a graph, else a fresh leaf requiring grad, which keeps
    ``x``'s tangent on dual tensors (forward over reverse)."""
    if isinstance(x, Tensor) and (x._requires_grad or x._grad_fn is not None):
        return x
    leaf = proxy(x, True, floats)
    tangent = getattr(x, "_fw_tangent", None)
    return leaf if tangent is None else forward_ad.make_dual(leaf, tangent)


def pull_back(outs: list, targets: list, seeds: list, create_graph: bool) -> list:
    """The gradients of ``outs`` (seeded with ``seeds``) for each of ``targets``, zeros
    where no path leads (also when no output depends on any target, as JAX gives)."""
    pairs = [(o, s) for o, s in zip(outs, seeds) if has_graph(o)]
    if not pairs:
        return [Tensor._make(np.zeros_like(t._data)) for t in targets]
    return list(autograd_grad([o for o, _ in pairs], targets, [s for _, s in pairs],
                              retain_graph=True, create_graph=create_graph,
                              allow_unused=True, materialize_grads=True))


def numpy_face_args(args: Any) -> bool:
    """Whether the differentiated arguments are numpy's (arrays, floats, numpy-face
    proxies): no plain Tensor among them."""
    return not any(type(x) is Tensor for x in tree_leaves(list(args)))


def constants_on_numpy_face(value: Any, numpy_face: bool) -> Any:
    """``value`` (a function's output) with its floats and float arrays (complex too) made
    constant Tensors on the numpy face: an output that does not depend on the inputs, whose
    tangent and gradient are zeros (JAX's and autograd's); as it is on torch's face."""
    if not numpy_face:
        return value
    number = lambda x: isinstance(x, (np.ndarray, np.generic, float, complex)) and \
        np.asarray(x).dtype.kind in "fc"
    return tree_map(lambda x: to_face(Tensor._make(np.array(x))) if number(x) else x, value)


def float_scalar(value: Any) -> bool:
    return isinstance(value, (float, complex, np.floating, np.complexfloating)) or (
        isinstance(value, np.ndarray) and value.size == 1 and value.dtype.kind in "fc")


def warn_independent() -> None:
    """autograd's warning for a gradient of an output the inputs do not reach (zeros);
    JAX's grad is silent, and so is pullback's on Tensors."""
    warnings.warn("Output seems independent of input.", UserWarning, stacklevel=4)


_ARRAYS = frozenset([np.ndarray])
#: a Tensor's array, read in C (``list(map(tensor_data, tensors))``)
tensor_data = operator.attrgetter("_data")


def given_kind(args: tuple) -> str | None:
    """``"arrays"`` when every argument is an ndarray, ``"tensors"`` when every one is a
    Tensor (the two kinds of call whose cache key is read in C, so a variant built for
    one is only ever called with the same), else None."""
    kinds = set(map(type, args))
    return "arrays" if kinds == _ARRAYS else "tensors" if kinds == {Tensor} else None


def may_hold_graph(args: tuple) -> bool:
    """Whether an argument is a Tensor (of any class) that may require grad, have a
    grad_fn or a tangent: one look per distinct type, not per argument."""
    kinds = set(map(type, args))
    return kinds != _ARRAYS and any(issubclass(k, Tensor) for k in kinds)


def kind_of(a: Any) -> str:
    if isinstance(a, Tensor):
        return "tensor"
    return "float" if isinstance(a, (float, complex)) else "array" if isinstance(a, np.ndarray) or \
        kind_of_array(a) is None else "lazy"


def data_of(x: Any) -> Any:
    return x._data if isinstance(x, Tensor) else x


def as_kind(kind: str, value: Any) -> Any:
    """Return a value as the kind the user passed: Tensor, ndarray or Python float;
    Dask's and CuPy's arrays (``lazy``, or any result that is one) as they are."""
    if kind == "lazy" or kind_of_array(value) is not None:
        return value
    if kind == "tensor":
        return Tensor._make(np.asarray(value))
    if kind == "float" and np.ndim(value) == 0:  # (a float32 result stays numpy's float32,
        value = np.asarray(value)  # as numpy computes it beside float32 arrays)
        return float(value) if value.dtype == np.float64 else \
            complex(value) if value.dtype == np.complex128 else value[()]
    return np.asarray(value)


def ident(name: str) -> str:
    """A Python identifier for a generated function named after ``name``."""
    return sanitize("".join(c if c.isalnum() else "_" for c in name).strip("_") or "f")


def strip_values(graph: Any) -> None:
    """Drop the trace-time values the Vars carry (only shapes and dtypes stay)."""
    for v in graph.inputs:
        v._data = None
    for e in graph.eqns:
        for v in e.outs:
            v._data = None


def private_copy(x: Any) -> Any:
    """A copy of a plain array or Tensor argument (JAX's transforms copy what they keep):
    later writes into the caller's array do not reach saved values."""
    if isinstance(x, np.ndarray):
        return np.array(x)
    if isinstance(x, Tensor) and not has_graph(x):
        return face_like(Tensor._make(np.array(x._data)), x)
    return x


def copy_back(given: tuple, copies: tuple) -> None:
    """What the function wrote into the copies of its arguments (numpy's semantics, as
    under ``pb.grad``), into the caller's arrays."""
    for a, c in zip(tree_leaves(given), tree_leaves(copies)):
        if a is c:
            continue
        old, new = (a._data, c._data) if isinstance(a, Tensor) else (a, c)
        if isinstance(old, np.ndarray) and not np.array_equal(old, new, equal_nan=True):
            np.copyto(old, new)




# ------------------------------------------------------------------- hot paths
# A variant's ``fast(args)``: what ``Cache.call`` runs on a hit when every argument is an
# array (or every one a Tensor) and the variant needs none of ``run``'s other cases.
# Each is ``run`` for that case, with its decisions made once: the captured values'
# check, the generated function in the quiet context (``quietly``, inlined: the
# thread's context read in C), the results as ``run`` packages them.

def fast_grad(fn: Any, seed: Any, check: Any, with_value: bool, tupled: bool,
              scalars: tuple) -> Any:
    """``GradFunction.run`` on arrays passed as they are, one value, gradients that
    every one exists: ``tupled``, a tuple of them as ``argnums`` was a tuple (the value
    an array, as ``_package`` makes it, and so the gradients at ``scalars``, the 0-d
    ones, which generated code may return as numpy scalars; the others are arrays),
    else the one gradient as it comes."""
    if tupled and with_value and not scalars:
        return _fast_value_and_grads(fn, seed, check)

    def fast(args: tuple) -> Any:
        if check is not None and not check(args):
            raise GuardFailed(CAPTURED)
        result = fn(*args, seed) if INSIDE.get() else \
            (getattr(THREAD, "ctx", None) or context()).run(fn, *args, seed)
        if not tupled:
            return (result[0], result[1]) if with_value else result[1]
        grads = result[1:]
        if scalars:
            grads = list(grads)
            for k in scalars:
                grads[k] = np.asarray(grads[k])
            grads = tuple(grads)
        return (np.asarray(result[0]), grads) if with_value else grads
    return fast


def _fast_value_and_grads(fn: Any, seed: Any, check: Any) -> Any:
    """``fast_grad``'s most common case, ``value_and_grad`` with a tuple of ``argnums``
    and no 0-d gradient, testing nothing else."""
    def fast(args: tuple) -> Any:
        if check is not None and not check(args):
            raise GuardFailed(CAPTURED)
        result = fn(*args, seed) if INSIDE.get() else \
            (getattr(THREAD, "ctx", None) or context()).run(fn, *args, seed)
        return np.asarray(result[0]), result[1:]
    return fast


def fast_compile(fn: Any, check: Any, tensors: bool, out_tree: Any, n: int) -> Any:
    """``CompiledFunction.run`` of a variant with no gradients, no captured tensors and
    no returned argument, on arrays (or on Tensors: ``tensors``). The common case, one
    output and nothing captured, gets a closure of its own that tests nothing else."""
    if check is None and out_tree is None:
        return _fast_one_tensors(fn) if tensors else _fast_one_arrays(fn)

    def fast(args: tuple) -> Any:
        if check is not None and not check(args):
            raise GuardFailed(CAPTURED)
        data = map(tensor_data, args) if tensors else args
        result = fn(*data) if INSIDE.get() else \
            (getattr(THREAD, "ctx", None) or context()).run(fn, *data)
        if out_tree is None:
            return result_tensor(result[0])
        return unflatten(out_tree, [result_tensor(o) for o in result[:n]])
    return fast


def _fast_one_tensors(fn: Any) -> Any:
    def fast(args: tuple) -> Any:
        if INSIDE.get():
            return result_tensor(fn(*map(tensor_data, args))[0])
        ctx = getattr(THREAD, "ctx", None) or context()
        return result_tensor(ctx.run(fn, *map(tensor_data, args))[0])
    return fast


def _fast_one_arrays(fn: Any) -> Any:
    def fast(args: tuple) -> Any:
        if INSIDE.get():
            return result_tensor(fn(*args)[0])
        return result_tensor((getattr(THREAD, "ctx", None) or context()).run(fn, *args)[0])
    return fast
