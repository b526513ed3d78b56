"""JAX's spellings on the functional transforms: ``static_argnums`` /
``static_argnames`` (arguments that are Python values, part of the cache key by value),
``holomorphic=True`` (JAX's convention for complex derivatives) and ``checkpoint`` /
``remat`` (recompute the forward in the backward).

>>> import numpy as np, pullback as pb
>>> f = pb.grad(lambda x, n: np.sum(x ** n), static_argnums=1)
>>> f(np.array([1., 2.]), 3)
array([ 3., 12.])
>>> pb.grad(lambda z: z * z, holomorphic=True)(1 + 2j)   # f'(z) = 2z, as JAX gives
(2+4j)
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable

import numpy as np

from ..pytree import tree_leaves, tree_map
from ..tensor import Tensor
from ..utils.checkpoint import checkpoint as _torch_checkpoint
from .trace import positional


# ------------------------------------------------------------------ static arguments
def _ints(nums: Any) -> tuple:
    if nums is None:
        return ()
    return (nums,) if isinstance(nums, int) else tuple(nums)


def _names(names: Any) -> tuple:
    if names is None:
        return ()
    return (names,) if isinstance(names, str) else tuple(names)


def _hash_key(value: Any, fname: str) -> Any:
    """``value`` as part of a cache key (its type too: 1 and 1.0 differ), refused with
    JAX's words when it is not hashable."""
    try:
        hash(value)
    except TypeError as e:
        raise ValueError(f"Non-hashable static arguments are not supported. An error "
                         f"occurred during a call to '{fname}' while trying to hash an "
                         f"object of type {type(value)}, {value}. The error was:\n"
                         f"TypeError: {e}") from None
    return (type(value), value)


class StaticArgs:
    """A transform whose static arguments are taken out of the traced call: one inner
    transform (``make(bound_fn, argnums)``) per distinct tuple of static values (by value,
    as JAX's jit caches them), ``bound_fn`` closing over them."""

    def __init__(self, make: Callable, fn: Callable, argnums: Any, static_argnums: Any,
                 static_argnames: Any, how: str) -> None:
        self.make, self.fn, self.argnums, self.how = make, fn, argnums, how
        nums, names = set(_ints(static_argnums)), set(_names(static_argnames))
        try:
            params = [p for p in inspect.signature(fn).parameters.values()
                      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        except (TypeError, ValueError):
            params = []
        # JAX: a name of a positional parameter makes its position static, and back
        nums |= {i for i, p in enumerate(params) if p.name in names}
        names |= {params[i].name for i in nums if 0 <= i < len(params)}
        self.static_nums, self.static_names = nums, names
        self.variants: dict = {}
        functools.update_wrapper(self, fn, updated=())

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        n = len(args)
        fname = getattr(self.fn, "__name__", "f")
        static = {i % n for i in self.static_nums if -n <= i < n}  # (JAX ignores others)
        skw = {k: v for k, v in kwargs.items() if k in self.static_names}
        key = (n, tuple((i, _hash_key(args[i], fname)) for i in sorted(static)),
               tuple((k, _hash_key(v, fname)) for k, v in sorted(skw.items())))
        inner = self.variants.get(key)
        if inner is None:
            inner = self.variants[key] = self._make(args, static, skw)
        dynamic = [a for i, a in enumerate(args) if i not in static]
        return inner(*dynamic, **{k: v for k, v in kwargs.items() if k not in skw})

    def _make(self, args: tuple, static: set, skw: dict) -> Any:
        n, fn = len(args), self.fn
        fixed = {i: args[i] for i in static}

        def bound(*dynamic: Any, **kw: Any) -> Any:
            it = iter(dynamic)
            return fn(*[fixed[i] if i in fixed else next(it) for i in range(n)], **kw, **skw)

        functools.update_wrapper(bound, fn)
        del bound.__wrapped__  # (its signature is the dynamic arguments')
        if self.argnums is None:
            return self.make(bound, None)
        nums = self.argnums if isinstance(self.argnums, tuple) else (self.argnums,)
        moved = []
        for k in nums:
            i = k % n if -n <= k < n else k
            if i in static:
                raise ValueError(f"{self.how}: argnums {k} is also a static argument "
                                 "(static_argnums / static_argnames); a static argument "
                                 "is a Python value and has no gradient")
            moved.append(i - sum(1 for s in static if s < i))
        return self.make(bound, tuple(moved) if isinstance(self.argnums, tuple) else moved[0])


def with_static(make: Callable, fn: Callable, argnums: Any, static_argnums: Any,
                static_argnames: Any, how: str) -> Any:
    """``make(fn, argnums)``, or a ``StaticArgs`` over it when static arguments are named."""
    if not _ints(static_argnums) and not _names(static_argnames):
        return make(fn, argnums)
    return StaticArgs(make, fn, argnums, static_argnums, static_argnames, how)


# ------------------------------------------------------------------ holomorphic
def _conj(x: Any) -> Any:
    if isinstance(x, Tensor):
        return x.conj().resolve_conj() if hasattr(x, "resolve_conj") else x.conj()
    return np.conj(x) if isinstance(x, (np.ndarray, complex, np.complexfloating)) else x


def _dtype(x: Any) -> np.dtype:
    if isinstance(x, Tensor):
        return x._data.dtype
    return np.result_type(x)


def check_complex(how: str, what: str, values: Any) -> None:
    """JAX's check: with ``holomorphic=True`` inputs and outputs are complex."""
    for x in tree_leaves(values):
        d = _dtype(x)
        if d.kind != "c":
            raise TypeError(f"{how} with holomorphic=True requires {what} with complex "
                            f"dtype, but got {d.name}.")


def conj_tree(tree: Any) -> Any:
    """Every leaf conjugated: torch's convention to JAX's for a holomorphic function
    (torch's backward gives ct * conj(f'(z)), JAX's ct * f'(z))."""
    return tree_map(_conj, tree)


class HolomorphicGrad:
    """``grad``/``value_and_grad`` with ``holomorphic=True``: the complex derivative
    f'(z) of a holomorphic ``fn`` (JAX's), the conjugate of torch's gradient."""

    def __init__(self, value_and_grad: Any, argnums: Any, has_aux: bool,
                 with_value: bool) -> None:
        self.inner, self.argnums, self.has_aux = value_and_grad, argnums, has_aux
        self.with_value = with_value
        self.how = "value_and_grad" if with_value else "grad"
        functools.update_wrapper(self, getattr(value_and_grad, "fn", value_and_grad),
                                 updated=())

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if kwargs:  # (argnums count positions: keywords bound to them first)
            args, kwargs = positional(self.__wrapped__, self.how, args, kwargs), {}
        nums = self.argnums if isinstance(self.argnums, tuple) else (self.argnums,)
        check_complex(self.how, "inputs", [args[k] for k in nums if k < len(args)])
        scalars = [isinstance(a, complex) for a in args]  # (a Python complex: 0-d array in,
        args = tuple(np.asarray(a) if s else a for a, s in zip(args, scalars))  # complex out)
        (value, g) = self.inner(*args, **kwargs)
        out = value[0] if self.has_aux else value
        check_complex(self.how, "outputs", out)
        g = conj_tree(g)
        if isinstance(self.argnums, tuple):
            g = tuple(complex(x) if scalars[k] else x for k, x in zip(nums, g))
        elif scalars[nums[0]]:
            g = complex(g)
        if self.with_value:
            return value, g
        return (g, value[1]) if self.has_aux else g


class HolomorphicJacobian:
    """``jacfwd``/``jacrev`` with ``holomorphic=True``: the complex Jacobian f'(z) (JAX's).
    Forward mode gives it as it is; reverse mode gives torch's conjugate, conjugated."""

    def __init__(self, jacobian: Any, argnums: Any, how: str, conjugate: bool) -> None:
        self.inner, self.argnums, self.how, self.conjugate = jacobian, argnums, how, conjugate
        functools.update_wrapper(self, getattr(jacobian, "fn", jacobian), updated=())

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if kwargs:  # (argnums count positions: keywords bound to them first)
            args, kwargs = positional(self.__wrapped__, self.how, args, kwargs), {}
        nums = self.argnums if isinstance(self.argnums, tuple) else (self.argnums,)
        check_complex(self.how, "inputs", [args[k] for k in nums if k < len(args)])
        jac = self.inner(*args, **kwargs)
        return conj_tree(jac) if self.conjugate else jac


def holomorphic_vjp(vjp_fn: Callable) -> Callable:
    """JAX's pullback of a holomorphic function, ct * f'(z), from torch's ct * conj(f'(z))
    (the conjugate of torch's pullback of the conjugate cotangent)."""
    @functools.wraps(vjp_fn)
    def pull(ct: Any) -> Any:
        return conj_tree(vjp_fn(conj_tree(ct)))
    return pull


# ------------------------------------------------------------------ checkpoint / remat
def checkpoint(fun: Callable | None = None, *, prevent_cse: bool = True,
               policy: Any = None, static_argnums: Any = ()) -> Any:
    """JAX's ``checkpoint`` (``remat``): ``fun`` whose intermediate values are not kept
    for the backward pass but recomputed from its inputs there (torch's non-reentrant
    ``pb.utils.checkpoint``). ``prevent_cse`` and ``policy`` are accepted; every value is
    recomputed (JAX's default policy)."""
    if fun is None:
        return lambda f: checkpoint(f, prevent_cse=prevent_cse, policy=policy,
                                    static_argnums=static_argnums)
    static = set(_ints(static_argnums))

    @functools.wraps(fun)
    def remat_fun(*args: Any, **kwargs: Any) -> Any:
        n = len(args)
        fixed = {i % n: args[i] for i in static if -n <= i < n}
        dynamic = [a for i, a in enumerate(args) if i not in fixed]

        def run(*dyn: Any) -> Any:
            it = iter(dyn)
            return fun(*[fixed[i] if i in fixed else next(it) for i in range(n)], **kwargs)

        return _torch_checkpoint(run, *dynamic, use_reentrant=False)

    return remat_fun


remat = checkpoint

__all__ = ["StaticArgs", "with_static", "HolomorphicGrad", "HolomorphicJacobian",
           "holomorphic_vjp", "checkpoint", "remat"]
