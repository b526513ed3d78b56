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

from ..autograd import forward_ad, record
from ..autograd.backward import grad as autograd_grad
from ..autograd.function import Function
from ..autograd.grad_mode import enable_grad, is_grad_enabled, no_grad
from ..compiler.source.numpy_builders import traced_array
from ..compiler.source.traced_values import holds_traced, is_recorded
from ..numpy_face import NumpyTensor, to_face
from ..pytree import tree_flatten, tree_unflatten
from ..tensor import Tensor
from . import _dopri

__all__ = ["odeint"]

_TOL = 1.49012e-8  # scipy's default rtol and atol
_TRACED_CLOSURE = (
    "odeint inside pb.compile/pb.grad: func closes over Tensors that require grad; pass them "
    "as arguments instead, odeint(func, y0, t, *params) with func(y, t, *params), so that "
    "each call of the compiled function integrates with its own values")
_SECOND_ORDER = (
    "pullback.scipy.integrate.odeint: its {what} is first-order (the {how} runs on "
    "arrays, unseen by autograd), so a second derivative through odeint (pb.hessian, "
    "pb.grad of pb.grad, jacfwd of jacrev, create_graph=True) would be zero; it is not "
    "supported. Differentiate odeint once, or finite-difference its gradient.")
_MONOTONIC = ("The values in t must be monotonically increasing or monotonically decreasing; "
              "repeated values are allowed.")


def _array(x: Any) -> np.ndarray:
    if holds_traced(x):  # a list of traced values (func returned [dy0, dy1])
        x = traced_array(x)
    return np.asarray(x.detach().numpy() if isinstance(x, Tensor) else x, dtype=np.float64)


def _wanted(t: Any) -> bool:
    """Whether Tensor ``t`` carries a derivative: it requires grad, or it has a tangent
    (forward mode)."""
    return t.requires_grad or t._fw_tangent is not None


def _tensors_in(obj: Any, found: dict, depth: int = 0) -> None:
    """Tensors that carry a derivative in ``obj`` (a Tensor, a Module's parameters, or
    lists, tuples and dicts of them), by identity."""
    if isinstance(obj, Tensor):
        if _wanted(obj):
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
    """The Tensors carrying a derivative that ``func`` reaches without arguments."""
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


def _on_face(t: Tensor, numpy: bool) -> Tensor:
    """``t`` (a Tensor just made) on the numpy face when ``numpy``."""
    return to_face(t) if numpy and type(t) is Tensor else t


class _Problem:
    """func with its arguments, as the solver sees it: flat float64 arrays in and out.

    The arguments are a pytree (``args=([W1, W2], {"b": b})``): ``leaves`` are its
    leaves, ``slots`` the positions of the Tensors among them (the Function's inputs,
    which ``with_args`` replaces), ``faces`` whether each was numpy-face. ``numpy``:
    func gets y on the numpy face (an ndarray's names, as scipy's odeint gives it)."""

    def __init__(self, func: Callable, shape: tuple, leaves: list, tree: Any, tfirst: bool,
                 max_steps: int, numpy: bool) -> None:
        self.func, self.shape, self.tfirst, self.numpy = func, shape, tfirst, numpy
        self.leaves, self.tree, self.max_steps = leaves, tree, max_steps
        self.slots = [i for i, v in enumerate(leaves) if isinstance(v, Tensor)]
        self.faces = [type(leaves[i]) is NumpyTensor for i in self.slots]
        self.args = tree_unflatten(tree, leaves)

    def tensors(self) -> list:
        return [self.leaves[i] for i in self.slots]

    def with_args(self, tensors: Any) -> _Problem:
        """The problem with ``tensors`` in place of the Tensors among the arguments (each
        on the face the user's had; only Tensors just made change face)."""
        leaves = list(self.leaves)
        for i, v, numpy in zip(self.slots, tensors, self.faces):
            leaves[i] = _on_face(v, numpy) if isinstance(v, Tensor) else v
        return _Problem(self.func, self.shape, leaves, self.tree, self.tfirst,
                        self.max_steps, self.numpy)

    def make(self, y: np.ndarray) -> Tensor:
        return _on_face(Tensor._make(y.reshape(self.shape)), self.numpy)

    def call(self, y: Any, t: float) -> Any:
        out = self.func(t, y, *self.args) if self.tfirst else self.func(y, t, *self.args)
        return traced_array(out) if holds_traced(out) else out

    def f(self, y: np.ndarray, t: float) -> np.ndarray:
        with no_grad():
            out = self.call(self.make(y), t)
        return _array(out).reshape(-1)

    def vjp(self, y: np.ndarray, t: float, a: np.ndarray, params: list) -> tuple:
        """(f(y, t), a^T df/dy, [a^T df/dp for p in params]), flat. ``self.args`` holds
        the leaves to differentiate among the arguments; ``params`` lists them, then the
        closure's Tensors."""
        with enable_grad():
            yt = self.make(y).requires_grad_()
            out = self.call(yt, t)
            if not isinstance(out, Tensor):  # (func ignores y and the parameters)
                out = self.make(_array(out))
            grads = autograd_grad(out, [yt] + params,
                                  Tensor._make(a.reshape(self.shape).astype(out._data.dtype)),
                                  allow_unused=True)
        flat = [np.zeros(np.size(p._data)) if g is None else _array(g).reshape(-1)
                for g, p in zip(grads[1:], params)]
        gy = np.zeros(y.size) if grads[0] is None else _array(grads[0]).reshape(-1)
        return _array(out).reshape(-1), gy, flat

    def jvp(self, y: np.ndarray, t: float, s: np.ndarray, tangents: list) -> tuple:
        """(f(y, t), df/dy s + sum df/dp tp), flat: forward mode, with each argument
        Tensor's tangent from ``tangents`` (the Tensors func closes over bring theirs)."""
        with forward_ad.resumed(), no_grad():
            yd = forward_ad.make_dual(self.make(y), Tensor._make(s.reshape(self.shape)))
            args = [forward_ad.make_dual(Tensor._make(p._data), tp) if tp is not None
                    else p for p, tp in zip(self.tensors(), tangents)]
            out = self.with_args(args).call(yd, t)
            if not isinstance(out, Tensor):
                return _array(out).reshape(-1), np.zeros(y.size)
            tangent = forward_ad.unpack_dual(out).tangent
        ds = np.zeros(y.size) if tangent is None else _array(tangent).reshape(-1)
        return _array(out).reshape(-1), ds


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


def _tangent(problem: _Problem, ys: np.ndarray, ts: np.ndarray, ty0: np.ndarray,
             tt: np.ndarray, tangents: list, rtol: float, atol: float) -> np.ndarray:
    """The tangent of every y(t_i), by the forward sensitivity equations integrated with
    the solution: ds/dt = df/dy s + sum df/dp tp from s(t_0) = ty0 - f(y_0, t_0) tt_0;
    y(t_i)'s tangent is s(t_i) + f(y_i, t_i) tt_i (t_0's moves the start)."""
    n = ys[0].size
    s = ty0 - problem.f(ys[0], float(ts[0])) * tt[0]

    def augmented(state: np.ndarray, time: float) -> np.ndarray:
        fy, fs = problem.jvp(state[:n], time, state[n:], tangents)
        return np.concatenate([fy, fs])

    states = _dopri.solve(augmented, np.concatenate([ys[0], s]), ts, rtol, atol,
                          problem.max_steps)
    out = states[:, n:].copy()
    out[0] = ty0
    for i in range(1, len(ts)):
        if tt[i]:
            out[i] += problem.f(ys[i], float(ts[i])) * tt[i]
    return out


class Odeint(Function):
    """The solve as one node: inputs y0, t and the parameters (the Tensors among args'
    leaves, then the closure's); its backward is the adjoint solve, its jvp the forward
    sensitivity solve."""

    @staticmethod
    def forward(ctx, problem, rtol, atol, n_args, y0, t, *params):
        # this call's arguments (compiled code calls forward again with new values)
        problem = problem.with_args(params[:n_args])
        ts = _array(t)
        if len(ts) > 1 and np.any(np.diff(ts) > 0) and np.any(np.diff(ts) < 0):
            raise ValueError(_MONOTONIC)
        ys = _dopri.solve(problem.f, _array(y0).reshape(-1), ts, rtol, atol,
                          problem.max_steps)
        ctx.problem, ctx.rtol, ctx.atol, ctx.n_args = problem, rtol, atol, n_args
        ctx.ys, ctx.ts, ctx.params = ys, ts, params
        ctx.out_dtype = y0.dtype if isinstance(y0, Tensor) else None
        return _output(ctx, ys.reshape((len(ts),) + problem.shape))

    @staticmethod
    def backward(ctx, grad):
        _first_order(ctx, (grad,), "gradient", "adjoint solve", tangents=True)
        needs = ctx.needs_input_grad[6:]
        n_args = ctx.n_args
        # the arguments as fresh leaves (compiled code passes values that do not require
        # grad); the closure's Tensors as they are (func reads them itself)
        args = tuple(p.detach().requires_grad_() if need and isinstance(p, Tensor) else p
                     for p, need in zip(ctx.params[:n_args], needs))
        problem = ctx.problem.with_args(args)
        args = problem.tensors()  # (on their faces)
        wanted = [i for i, need in enumerate(needs) if need and isinstance(ctx.params[i], Tensor)]
        diff = [args[i] if i < n_args else ctx.params[i] for i in wanted]
        gy0, gt, gp = _adjoint(problem, ctx.ys, ctx.ts, _array(grad), diff, ctx.rtol, ctx.atol)
        params: list = [None] * len(ctx.params)
        for i, v in zip(wanted, gp):
            p = ctx.params[i]
            params[i] = Tensor._make(v.reshape(np.shape(p._data))).to(p.dtype)
        return (None, None, None, None, Tensor._make(gy0.reshape(ctx.problem.shape)),
                Tensor._make(gt)) + tuple(params)

    @staticmethod
    def jvp(ctx, _problem, _rtol, _atol, _n_args, ty0, tt, *tparams):
        _first_order(ctx, (ty0, tt) + tparams, "tangent", "sensitivity solve")
        tangents = list(tparams[:ctx.n_args])
        out = _tangent(ctx.problem, ctx.ys, ctx.ts, _array(ty0).reshape(-1),
                       _array(tt).reshape(-1), tangents, ctx.rtol, ctx.atol)
        return _output(ctx, out.reshape((len(ctx.ts),) + ctx.problem.shape))


def _first_order(ctx: Any, incoming: tuple, what: str, how: str,
                 tangents: bool = False) -> None:
    """Refuse a backward or jvp whose result would itself be differentiated: under
    create_graph or another transform's trace (a value a derivative is taken of among
    the solve's inputs or the incoming gradients or tangents), or (``tangents``: a
    backward) with tangents on them (forward over reverse)."""
    values = [v for v in incoming + tuple(ctx.params) if isinstance(v, Tensor)]
    if (tangents and any(v._fw_tangent is not None for v in values)) or (
            (is_grad_enabled() or record.trace_hooks()) and any(is_recorded(v) for v in values)):
        raise RuntimeError(_SECOND_ORDER.format(what=what, how=how))


def _output(ctx: Any, values: np.ndarray) -> Tensor:
    """A result of the node: y0's dtype, the face func sees."""
    out = Tensor._make(values)
    if ctx.out_dtype is not None:
        out = out.to(ctx.out_dtype)
    return _on_face(out, ctx.problem.numpy)


def _leaf(x: Any) -> Any:
    """y0 or t: a list holding traced values as one traced array."""
    return traced_array(x) if holds_traced(x) else x


def odeint(func: Callable, y0: Any, t: Any, *extra: Any, args: tuple = (),
           rtol: float | None = None, atol: float | None = None, tfirst: bool = False,
           mxstep: int = 0) -> Any:
    """Integrate dy/dt = func(y, t, *args) from y0 at t[0]; y at each time of ``t``.

    ``args`` may follow ``t`` positionally (as in jax's odeint) or come as scipy's
    ``args=`` tuple; either may hold Tensors anywhere in lists, tuples and dicts
    (``args=([W1, W2], {"b": b})``), each differentiated. ``func`` gets y as a Tensor
    when ``y0`` is one, else on the numpy face (ndarray's names, as scipy gives an
    ndarray). ``rtol``, ``atol``: scipy's defaults (1.49012e-8). ``mxstep``: the most
    steps between two time points (0: 100,000), beyond which it raises. ``t`` increases
    or decreases; a repeated time gives the same state again, as scipy's."""
    return _odeint(func, y0, t, tuple(extra), args, rtol, atol, tfirst, mxstep,
                   numpy=type(_leaf(y0)) is not Tensor)


def _odeint(func: Callable, y0: Any, t: Any, extra: tuple, args: Any, rtol: Any, atol: Any,
            tfirst: bool, mxstep: int, numpy: bool) -> Any:
    if not isinstance(args, tuple):  # (scipy's check: an array would be unpacked)
        raise TypeError("Extra arguments must be in a tuple.")
    rtol = _TOL if rtol is None else float(rtol)
    atol = _TOL if atol is None else float(atol)
    y0, t = _leaf(y0), _leaf(t)
    leaves, tree = tree_flatten(extra + args)
    shape = tuple(np.shape(y0._data if isinstance(y0, Tensor) else y0))
    problem = _Problem(func, shape, leaves, tree, tfirst, int(mxstep) or _dopri.MAX_STEPS,
                       numpy)
    arg_tensors = problem.tensors()
    closure = [p for p in closure_tensors(func) if all(p is not a for a in arg_tensors)]
    if closure and record.trace_hooks():
        raise TypeError(_TRACED_CLOSURE)
    tensors = [v for v in (y0, t) if isinstance(v, Tensor)] + arg_tensors + closure
    if not tensors:
        ts = _array(t)
        if len(ts) > 1 and np.any(np.diff(ts) > 0) and np.any(np.diff(ts) < 0):
            raise ValueError(_MONOTONIC)
        ys = _dopri.solve(problem.f, _array(y0).reshape(-1), ts, rtol, atol,
                          problem.max_steps)
        return ys.reshape((len(ys),) + shape)
    y0 = y0 if isinstance(y0, Tensor) else Tensor._make(_array(y0))
    t = t if isinstance(t, Tensor) else Tensor._make(_array(t))
    return Odeint.apply(problem, rtol, atol, len(arg_tensors), y0, t, *arg_tensors, *closure)


def scipy_odeint(func: Callable, y0: Any, t: Any, args: tuple = (), Dfun: Any = None,
                 col_deriv: int = 0, full_output: int = 0, ml: Any = None, mu: Any = None,
                 rtol: float | None = None, atol: float | None = None, tcrit: Any = None,
                 h0: float = 0.0, hmax: float = 0.0, hmin: float = 0.0, ixpr: int = 0,
                 mxstep: int = 0, mxhnil: int = 0, mxordn: int = 12, mxords: int = 5,
                 printmessg: int = 0, tfirst: bool = False) -> Any:
    """``odeint`` with scipy.integrate.odeint's signature, where the fourth positional
    argument is the ``args`` tuple (``odeint(f, y0, t, (k,))``): what a scipy call the
    source pass routes here means. LSODA's options that steer its own steps (``Dfun``,
    ``ml``, ``mu``, ``tcrit``, ``h0``, ``hmax``, ``hmin``...) do not apply to
    Dormand-Prince and are left aside; ``full_output`` is refused.

    >>> float(scipy_odeint(lambda y, t, k: -k * y, [1.0], [0.0, 1.0], (0.0,))[-1, 0])
    1.0
    """
    if full_output:
        raise NotImplementedError("odeint inside pb.compile/pb.grad: full_output is not "
                                  "supported by pullback.scipy.integrate.odeint")
    if np.ndim(y0._data if isinstance(y0, Tensor) else _leaf(y0)) != 1:
        raise ValueError("Initial condition y0 must be one-dimensional.")
    return _odeint(func, y0, t, (), args, rtol, atol, tfirst, mxstep, numpy=True)
