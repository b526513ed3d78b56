"""``scipy.integrate.odeint`` with derivatives, by the adjoint method.

``odeint(func, y0, t, *args, rtol=..., atol=...)`` solves dy/dt = func(y, t, *args) (scipy's
argument order; ``args=(...)`` and ``tfirst=True`` as scipy has them work too) with the
Dormand-Prince 5(4) method (``_dopri.py``) and returns y at each time of ``t``, shape
``(len(t),) + y0.shape``. On Tensors the result has a ``grad_fn``: backward solves the
adjoint equations backwards in time,

    dy/ds = f(y, s),   da/ds = -a^T df/dy,   dtheta/ds = -a^T df/dtheta,

one vector-Jacobian product of ``func`` per stage (pullback's autograd), and gives the
gradients of y0, of the time points and of every parameter: the Tensors among ``args``
and those ``func`` closes over (its closure cells, defaults, the globals it names, and
the parameters of a Module). Memory does not grow with the number of steps; the
gradients are exact up to the solver's tolerances. They are first-order (the backward
is not itself differentiable).

>>> import pullback as pb
>>> from pullback.scipy.integrate import odeint
>>> k = pb.tensor(0.5, dtype=pb.float64, requires_grad=True)
>>> ys = odeint(lambda y, t: -k * y, pb.tensor([1.0], dtype=pb.float64), [0.0, 2.0])
>>> ys[-1, 0].backward()
>>> round(float(k.grad), 6)               # d/dk exp(-2k) = -2 exp(-1)
-0.735759
"""

from __future__ import annotations

import types
from typing import Any, Callable

import numpy as np

from ..autograd import record
from ..autograd.backward import grad as autograd_grad
from ..autograd.function import Function
from ..autograd.grad_mode import enable_grad, no_grad
from ..tensor import Tensor
from . import _dopri

__all__ = ["odeint"]

_TOL = 1.49012e-8  # scipy's default rtol and atol
_TRACED_CLOSURE = (
    "odeint inside pb.compile/pb.grad: func closes over Tensors that require grad; pass them "
    "as arguments instead, odeint(func, y0, t, *params) with func(y, t, *params), so that "
    "each call of the compiled function integrates with its own values")


def _array(x: Any) -> np.ndarray:
    return np.asarray(x.detach().numpy() if isinstance(x, Tensor) else x, dtype=np.float64)


def _tensors_in(obj: Any, found: dict, depth: int = 0) -> None:
    """Tensors that require grad in ``obj`` (a Tensor, a Module's parameters, or lists,
    tuples and dicts of them), by identity."""
    if isinstance(obj, Tensor):
        if obj.requires_grad:
            found.setdefault(id(obj), obj)
    elif depth < 3 and isinstance(obj, (list, tuple)):
        for v in obj:
            _tensors_in(v, found, depth + 1)
    elif depth < 3 and isinstance(obj, dict):
        for v in obj.values():
            _tensors_in(v, found, depth + 1)
    elif callable(getattr(obj, "parameters", None)) and hasattr(obj, "_parameters"):
        for p in obj.parameters():
            _tensors_in(p, found, depth + 1)


def closure_tensors(func: Callable) -> list:
    """The Tensors requiring grad that ``func`` reaches without arguments."""
    found: dict = {}
    _tensors_in(getattr(func, "__self__", None), found)
    fn = getattr(func, "__func__", func)
    if not isinstance(fn, types.FunctionType):
        _tensors_in(func, found)  # a Module (its parameters), or a callable object
        _tensors_in(getattr(func, "__dict__", {}), found)
        fn = None
    if fn is not None:
        for cell in fn.__closure__ or ():
            try:
                _tensors_in(cell.cell_contents, found)
            except ValueError:  # an empty cell
                pass
        _tensors_in(fn.__defaults__ or (), found)
        for name in fn.__code__.co_names:
            if name in fn.__globals__:
                _tensors_in(fn.__globals__[name], found)
    return list(found.values())


class _Problem:
    """func with its arguments, as the solver sees it: flat float64 arrays in and out."""

    def __init__(self, func: Callable, shape: tuple, args: tuple, tfirst: bool,
                 max_steps: int) -> None:
        self.func, self.shape, self.args, self.tfirst = func, shape, args, tfirst
        self.max_steps = max_steps

    def with_args(self, args: tuple) -> _Problem:
        return _Problem(self.func, self.shape, args, self.tfirst, self.max_steps)

    def call(self, y: Any, t: float) -> Any:
        return self.func(t, y, *self.args) if self.tfirst else self.func(y, t, *self.args)

    def f(self, y: np.ndarray, t: float) -> np.ndarray:
        with no_grad():
            out = self.call(Tensor._make(y.reshape(self.shape)), t)
        return _array(out).reshape(-1)

    def vjp(self, y: np.ndarray, t: float, a: np.ndarray, params: list) -> tuple:
        """(f(y, t), a^T df/dy, [a^T df/dp for p in params]), flat. ``self.args`` holds
        the leaves to differentiate among the arguments; ``params`` lists them, then the
        closure's Tensors."""
        with enable_grad():
            yt = Tensor._make(y.reshape(self.shape)).requires_grad_()
            out = self.call(yt, t)
            grads = autograd_grad(out, [yt] + params,
                                  Tensor._make(a.reshape(self.shape).astype(out._data.dtype)),
                                  allow_unused=True)
        flat = [np.zeros(np.size(p._data)) if g is None else _array(g).reshape(-1)
                for g, p in zip(grads[1:], params)]
        gy = np.zeros(y.size) if grads[0] is None else _array(grads[0]).reshape(-1)
        return _array(out).reshape(-1), gy, flat


def _adjoint(problem: _Problem, ys: np.ndarray, ts: np.ndarray, g: np.ndarray,
             params: list, rtol: float, atol: float) -> tuple:
    """(dL/dy0, dL/dt, [dL/dp]) from g = dL/dys, by integrating the adjoint system from
    each time point back to the one before."""
    n = ys[0].size
    sizes = [int(np.size(p._data)) for p in params]
    total = sum(sizes)
    g = g.reshape(len(ts), n)
    a = g[-1].copy()
    theta = np.zeros(total)
    t_grad = np.zeros(len(ts))

    def augmented(state: np.ndarray, s: float) -> np.ndarray:
        y, adj = state[:n], state[n:2 * n]
        fy, ay, ap = problem.vjp(y, s, adj, params)
        return np.concatenate([fy, -ay] + [-p for p in ap])

    for i in range(len(ts) - 1, 0, -1):
        y_i = ys[i].reshape(-1)
        t_grad[i] = g[i] @ problem.f(y_i, float(ts[i]))
        state = np.concatenate([y_i, a, theta])
        state = _dopri.solve(augmented, state, ts[[i, i - 1]], rtol, atol,
                             problem.max_steps)[-1]
        a, theta = state[n:2 * n], state[2 * n:]
        if i == 1:
            t_grad[0] = -(a @ problem.f(ys[0].reshape(-1), float(ts[0])))
        a = a + g[i - 1]
    if len(ts) == 1:
        a = g[0].copy()
    pieces = np.split(theta, np.cumsum(sizes)[:-1]) if params else []
    return a, t_grad, pieces


class Odeint(Function):
    """The solve as one node: inputs y0, t and the parameters (Tensors among args, then
    the closure's); its backward is the adjoint solve."""

    @staticmethod
    def forward(ctx, problem, rtol, atol, n_args, y0, t, *params):
        # this call's arguments (compiled code calls forward again with new values)
        problem = problem.with_args(params[:n_args])
        ts = _array(t)
        ys = _dopri.solve(problem.f, _array(y0).reshape(-1), ts, rtol, atol,
                          problem.max_steps)
        ctx.problem, ctx.rtol, ctx.atol, ctx.n_args = problem, rtol, atol, n_args
        ctx.ys, ctx.ts, ctx.params = ys, ts, params
        dtype = y0.dtype if isinstance(y0, Tensor) else None
        out = Tensor._make(ys.reshape((len(ts),) + problem.shape))
        return out if dtype is None else out.to(dtype)

    @staticmethod
    def backward(ctx, grad):
        needs = ctx.needs_input_grad[6:]
        n_args = ctx.n_args
        # the arguments as fresh leaves (compiled code passes values that do not require
        # grad); the closure's Tensors as they are (func reads them itself)
        args = tuple(p.detach().requires_grad_() if need and isinstance(p, Tensor) else p
                     for p, need in zip(ctx.params[:n_args], needs))
        wanted = [i for i, need in enumerate(needs) if need and isinstance(ctx.params[i], Tensor)]
        diff = [args[i] if i < n_args else ctx.params[i] for i in wanted]
        problem = ctx.problem.with_args(args)
        gy0, gt, gp = _adjoint(problem, ctx.ys, ctx.ts, _array(grad), diff, ctx.rtol, ctx.atol)
        params: list = [None] * len(ctx.params)
        for i, v in zip(wanted, gp):
            p = ctx.params[i]
            params[i] = Tensor._make(v.reshape(np.shape(p._data))).to(p.dtype)
        return (None, None, None, None, Tensor._make(gy0.reshape(ctx.problem.shape)),
                Tensor._make(gt)) + tuple(params)


def odeint(func: Callable, y0: Any, t: Any, *extra: Any, args: tuple = (),
           rtol: float | None = None, atol: float | None = None, tfirst: bool = False,
           mxstep: int = 0) -> Any:
    """Integrate dy/dt = func(y, t, *args) from y0 at t[0]; y at each time of ``t``.

    ``args`` may follow ``t`` positionally (as in jax's odeint) or come as scipy's
    ``args=`` tuple. ``rtol``, ``atol``: scipy's defaults (1.49012e-8). ``mxstep``: the
    most steps between two time points (0: 100,000), beyond which it raises."""
    rtol = _TOL if rtol is None else float(rtol)
    atol = _TOL if atol is None else float(atol)
    all_args = tuple(extra) + tuple(args)
    shape = tuple(np.shape(y0._data if isinstance(y0, Tensor) else y0))
    problem = _Problem(func, shape, all_args, tfirst, int(mxstep) or _dopri.MAX_STEPS)
    closure = [p for p in closure_tensors(func) if all(p is not a for a in all_args)]
    if closure and record.trace_hooks():
        raise TypeError(_TRACED_CLOSURE)
    tensors = [v for v in (y0, t) + all_args if isinstance(v, Tensor)] + closure
    if not tensors:
        ys = _dopri.solve(problem.f, _array(y0).reshape(-1), _array(t), rtol, atol,
                          problem.max_steps)
        return ys.reshape((len(ys),) + shape)
    y0 = y0 if isinstance(y0, Tensor) else Tensor._make(_array(y0))
    t = t if isinstance(t, Tensor) else Tensor._make(_array(t))
    return Odeint.apply(problem, rtol, atol, len(all_args), y0, t, *all_args, *closure)
