"""``pb.fixed_point``: the solution of ``x = f(a)(x)`` and its implicit gradient.

autograd's ``misc.fixed_points.fixed_point(f, a, init, distance, tol)``, built on
``pb.custom_vjp``. The forward iterates ``x <- f(a)(x)`` from ``x0`` until
``distance(x, x_prev) <= tol``; the iterations are not recorded. The gradient is the
implicit function theorem's at the converged ``x*``: with ``J = df(a)(x)/dx`` at
``x*``, the adjoint ``v`` solves ``v = g + J^T v`` (found by the same fixed point
iteration, so it converges where the forward does: ``f(a)`` a contraction near
``x*``), and the gradient in ``a`` is ``v^T df(a)(x*)/da``. ``x0`` gets none. The
backward is itself a ``fixed_point`` of differentiable steps, so gradients of
gradients work too, as in autograd.

>>> import pullback as pb
>>> def newton_sqrt(a):
...     return lambda x: 0.5 * (x + a / x)
>>> sqrt = lambda a: pb.fixed_point(newton_sqrt, a, 1.0)
>>> a = pb.tensor(2.0, dtype=pb.float64, requires_grad=True)
>>> r = sqrt(a); r.backward()
>>> round(r.item(), 12), round(a.grad.item(), 12)   # sqrt(2), 1 / (2 sqrt(2))
(1.414213562373, 0.353553390593)
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

import numpy as np

from ..pytree import tree_flatten, tree_map, tree_unflatten
from . import record
from .backward import grad as autograd_grad
from .custom import custom_vjp
from .grad_mode import STATE, enable_grad

NO_CONVERGENCE = ("fixed_point: no convergence after {n} iterations of {f} (distance {d:.3g} > "
                  "tol {tol:g}); the iteration must be a contraction near the fixed point. Pass a "
                  "larger max_iter or tol, or a better x0")


def max_abs_distance(x: Any, y: Any) -> float:
    """The default ``distance``: the largest absolute difference over the leaves."""
    worst = 0.0
    for u, v in zip(tree_flatten(x)[0], tree_flatten(y)[0]):
        d = float(np.max(np.abs(_values(u) - _values(v)), initial=0.0))
        if not d <= worst:  # NaN is never converged
            worst = d
    return worst


def _values(v: Any) -> np.ndarray:
    return v._data if isinstance(v, record.Tensor) else np.asarray(v)


def _default_tol(x: Any) -> float:
    dtypes = [_values(v).dtype for v in tree_flatten(x)[0]]
    wide = all(d.itemsize >= 8 for d in dtypes if d.kind in "fc")
    return 1e-10 if wide else 1e-5


def _iterate(f: Callable, distance: Callable | None, tol: float | None, max_iter: int,
             a: Any, x0: Any) -> Any:
    _check_curried(f)
    step = f(a)
    x, prev = step(x0), x0
    dist = distance or max_abs_distance
    tol = _default_tol(x) if tol is None else tol
    for _ in range(max_iter):
        d = dist(x, prev)
        if not bool(d > tol):
            return x
        x, prev = step(x), x
    raise RuntimeError(NO_CONVERGENCE.format(n=max_iter, f=getattr(f, "__name__", f),
                                             d=float(np.max(_values(d))), tol=tol))


def _check_curried(f: Callable) -> None:
    """A two-argument ``f(a, x)`` (JAX's and jaxopt's form) told apart from autograd's
    curried ``f(a)(x)``, which ``pb.fixed_point`` takes, with the change to make."""
    try:
        params = inspect.signature(f).parameters.values()
    except (TypeError, ValueError):
        return
    required = [p for p in params if p.default is p.empty
                and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(required) >= 2:
        raise TypeError(f"pb.fixed_point: f takes {len(required)} arguments; it must take "
                        "a alone and return the step function x -> f(a)(x) (autograd's "
                        "curried form): write lambda a: lambda x: g(a, x) for g(a, x)")


_iterate.__name__ = _iterate.__qualname__ = "fixed_point"  # its name in generated code
_fixed_point = custom_vjp(_iterate, nondiff_argnums=(0, 1, 2, 3))


def _fwd(f: Callable, distance: Any, tol: Any, max_iter: int, a: Any, x0: Any) -> tuple:
    x = _fixed_point(f, distance, tol, max_iter, a, x0)
    return x, (a, x)


def _bwd(f: Callable, distance: Any, tol: Any, max_iter: int, res: tuple, g: Any) -> tuple:
    a, x = res

    def adjoint_step(params: tuple) -> Callable:
        a_, x_, g_ = params
        return lambda v: tree_map(lambda s, t: s + t, vjp(f(a_), (x_,), v)[0], g_)

    adjoint_step.__name__ = f"the adjoint of {getattr(f, '__name__', 'f')}"
    v = _fixed_point(adjoint_step, distance, tol, max_iter, (a, x, g),
                     tree_map(lambda t: t * 0, g))
    (g_a,) = vjp(lambda a_: f(a_)(x), (a,), v)
    return g_a, None


_fwd.__name__, _bwd.__name__ = "fixed_point_fwd", "fixed_point_bwd"
_fixed_point.defvjp(_fwd, _bwd)


def fixed_point(f: Callable, a: Any, x0: Any, distance: Callable | None = None,
                tol: float | None = None, max_iter: int = 10000) -> Any:
    """The fixed point ``x = f(a)(x)`` reached from ``x0``, differentiable in ``a`` by
    the implicit function theorem (not through the iterations).

    ``f(a)`` returns the step function (autograd's curried form; write
    ``lambda a: lambda x: g(a, x)`` for a two-argument ``g``); ``a`` and ``x`` may be
    pytrees. Iteration stops once ``distance(x, x_prev) <= tol``: by default the largest
    absolute difference, and ``tol`` 1e-10 in float64, 1e-5 otherwise; after
    ``max_iter`` steps without convergence it raises."""
    return _fixed_point(f, distance, tol, max_iter, a, x0)


def vjp(fn: Callable, primals: tuple, cotangent: Any) -> tuple:
    """``cotangent^T d fn(*primals)``: one gradient per primal (zeros where none flows,
    pytrees allowed). Differentiable when a primal or the cotangent requires grad (and
    grad is enabled), so rules written with it support gradients of gradients."""
    leaves, tree = tree_flatten(primals)
    cts = tree_flatten(cotangent)[0]
    create = STATE.grad_enabled and any(
        isinstance(t, record.Tensor) and t.requires_grad for t in leaves + cts)
    with enable_grad():
        ins = [_input(p, create) for p in leaves]
        outs = tree_flatten(fn(*tree_unflatten(tree, ins)))[0]
        pairs = [(o, c) for o, c in zip(outs, cts)
                 if isinstance(o, record.Tensor) and o.requires_grad and c is not None]
        wanted = [i for i, p in enumerate(ins) if isinstance(p, record.Tensor)]
        got = autograd_grad([o for o, _ in pairs], [ins[i] for i in wanted],
                            [c if isinstance(c, record.Tensor) else type(o)._make(np.asarray(c))
                             for o, c in pairs],
                            create_graph=create, allow_unused=True) if pairs and wanted else ()
    grads = [p * 0 if isinstance(p, record.Tensor) else np.zeros_like(p) for p in leaves]
    for i, g in zip(wanted, got):
        if g is not None:
            grads[i] = g
    return tuple(tree_unflatten(tree, grads))


def _input(p: Any, create: bool) -> Any:
    """A primal as an input of the vjp: its own history kept under ``create``."""
    if not isinstance(p, record.Tensor):
        return p
    if create and p.requires_grad:
        return p.view_as(p)
    return p.detach().requires_grad_()


__all__ = ["fixed_point", "max_abs_distance"]
