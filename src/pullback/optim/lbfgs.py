"""``LBFGS``: limited-memory BFGS, torch's algorithm step for step (its two-loop
recursion over the last ``history_size`` curvature pairs, a fixed step ``lr`` or the
strong Wolfe line search of ``line_search.py``, and its stopping tests), on the
parameters as one flat vector in numpy. ``step(closure)`` runs up to ``max_iter``
iterations; the closure recomputes the loss and its gradients.

>>> import pullback as pb
>>> w = pb.tensor([1.5, -0.5], dtype=pb.float64, requires_grad=True)
>>> opt = pb.optim.LBFGS([w], line_search_fn="strong_wolfe")
>>> def closure():
...     opt.zero_grad()
...     loss = (1 - w[0]) ** 2 + 100 * (w[1] - w[0] ** 2) ** 2  # Rosenbrock
...     loss.backward()
...     return loss
>>> for _ in range(3):
...     loss = opt.step(closure)
>>> [round(v, 4) for v in w.tolist()], opt.state[w]["n_iter"]
([1.0, 1.0], 24)
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

import numpy as np

from ..autograd.grad_mode import enable_grad
from ..tensor import Tensor
from .flat import real_dtype
from .line_search import strong_wolfe
from .optimizer import Optimizer


class LBFGS(Optimizer):
    """L-BFGS on every parameter as one vector (one parameter group only; real and
    complex parameters, a complex one counting as its real and imaginary parts)."""

    def __init__(self, params: Iterable, lr: float = 1, max_iter: int = 20,
                 max_eval: int | None = None, tolerance_grad: float = 1e-7,
                 tolerance_change: float = 1e-9, history_size: int = 100,
                 line_search_fn: str | None = None) -> None:
        if isinstance(lr, Tensor):
            if lr.numel() != 1:
                raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        super().__init__(params, {
            "lr": lr, "max_iter": max_iter, "max_eval": max_eval,
            "tolerance_grad": tolerance_grad, "tolerance_change": tolerance_change,
            "history_size": history_size, "line_search_fn": line_search_fn})
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    # ------------------------------------------------------------ the flat vector
    def _flat_grad(self) -> np.ndarray:
        """Every parameter's gradient (zeros where it has none) in one new array."""
        parts = []
        for p in self._params:
            g = p._grad
            a = np.zeros(p._data.size, p._data.dtype) if g is None else np.ravel(g._data)
            parts.append(a.view(real_dtype(a.dtype)) if a.dtype.kind == "c" else a)
        return np.concatenate(parts)

    def _add(self, t: Any, update: np.ndarray) -> None:
        """Every parameter += t * its part of ``update``, in place."""
        start = 0
        for p in self._params:
            target = p._data.view(real_dtype(p._data.dtype)) if p._data.dtype.kind == "c" \
                else p._data
            part = update[start:start + target.size].reshape(target.shape)
            target += t * part
            start += target.size
            p._vc.value += 1

    def _restore(self, saved: list) -> None:
        for p, a in zip(self._params, saved):
            np.copyto(p._data, a)
            p._vc.value += 1

    # ------------------------------------------------------------ the step
    def step(self, closure: Callable) -> Any:  # type: ignore[override]
        """Up to ``max_iter`` iterations of L-BFGS; returns the closure's first loss."""
        self._refuse_in_trace()
        group = self.param_groups[0]
        lr = float(group["lr"]) if isinstance(group["lr"], Tensor) else group["lr"]
        tol_change = group["tolerance_change"]

        def run() -> Any:
            with enable_grad():
                return closure()

        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)
        first_loss = run()
        loss, evals = _number(first_loss), 1
        state["func_evals"] += 1
        g = self._flat_grad()
        if np.abs(g).max() <= group["tolerance_grad"]:
            return first_loss
        memory = {k: _array(state.get(k)) for k in _MEMORY}
        n_iter = 0
        while n_iter < group["max_iter"]:
            n_iter += 1
            state["n_iter"] += 1
            self._direction(state, memory, g, group["history_size"])
            memory["prev_flat_grad"], memory["prev_loss"] = g.copy(), loss
            d = memory["d"]
            t = min(1.0, 1.0 / np.abs(g).sum()) * lr if state["n_iter"] == 1 else lr
            memory["t"] = t
            gtd = g.dot(d)
            if gtd > -tol_change:
                break
            loss, g, t, used, converged = self._move(group, run, loss, g, t, d, gtd,
                                                     n_iter, evals)
            memory["t"] = t
            evals += used
            state["func_evals"] += used
            if n_iter == group["max_iter"] or evals >= group["max_eval"] or converged:
                break
            if np.abs(d * t).max() <= tol_change or abs(loss - memory["prev_loss"]) < tol_change:
                break
        for k in _MEMORY:
            state[k] = _wrap(memory[k])
        return first_loss

    def _direction(self, state: dict, memory: dict, g: np.ndarray, history: int) -> None:
        """The search direction ``memory["d"]``: minus the gradient at the first
        iteration, then the inverse Hessian estimate (two-loop recursion) times it,
        after adding the last step's curvature pair when it is positive enough."""
        if state["n_iter"] == 1:
            memory.update(d=-g, old_dirs=[], old_stps=[], ro=[], H_diag=1)
            return
        dirs, stps, ro = memory["old_dirs"], memory["old_stps"], memory["ro"]
        y = g - memory["prev_flat_grad"]
        s = memory["d"] * memory["t"]
        ys = y.dot(s)
        if ys > 1e-10:
            if len(dirs) == history:
                del dirs[0], stps[0], ro[0]
            dirs.append(y)
            stps.append(s)
            ro.append(1.0 / ys)
            memory["H_diag"] = ys / y.dot(y)
        if "al" not in state:
            state["al"] = [None] * history
        al = _array(state["al"])
        q = -g
        for i in reversed(range(len(dirs))):
            al[i] = stps[i].dot(q) * ro[i]
            q += -al[i] * dirs[i]
        r = q * memory["H_diag"]
        for i in range(len(dirs)):
            r += (al[i] - dirs[i].dot(r) * ro[i]) * stps[i]
        state["al"] = _wrap(al)
        memory["d"] = r

    def _move(self, group: dict, run: Callable, loss: float, g: np.ndarray, t: Any,
              d: np.ndarray, gtd: Any, n_iter: int, evals: int) -> tuple:
        """The parameters moved along ``d``: by ``t``, or by the step the line search
        finds. Returns (loss, gradient, step, evaluations, gradient small enough)."""
        tol_grad = group["tolerance_grad"]
        if group["line_search_fn"] is not None:
            if group["line_search_fn"] != "strong_wolfe":
                raise RuntimeError("only 'strong_wolfe' is supported")
            start = [p._data.copy() for p in self._params]

            def evaluate(step: Any) -> tuple:
                self._add(step, d)
                value = _number(run())
                grad = self._flat_grad()
                self._restore(start)
                return value, grad

            loss, g, t, used = strong_wolfe(evaluate, t, d, loss, g, gtd,
                                            max_ls=group["max_eval"] - evals)
            self._add(t, d)
            return loss, g, t, used, bool(np.abs(g).max() <= tol_grad)
        self._add(t, d)
        if n_iter == group["max_iter"]:
            return loss, g, t, 0, False
        loss = _number(run())
        g = self._flat_grad()
        return loss, g, t, 1, bool(np.abs(g).max() <= tol_grad)

    def _load_param_state(self, param: Tensor, value: dict) -> None:
        self.state[param] = {k: _wrap(_array(v, copy=True)) for k, v in value.items()}


# what LBFGS remembers between steps, in torch's order of its state
_MEMORY = ("d", "t", "old_dirs", "old_stps", "ro", "H_diag", "prev_flat_grad", "prev_loss")


def _array(value: Any, copy: bool = False) -> Any:
    """A state value as the step computes with it: a Tensor's array (a 0-d one as a
    numpy scalar), a list of them, or the value itself."""
    if isinstance(value, list):
        return [_array(v, copy) for v in value]
    if isinstance(value, Tensor):
        a = value._data
        return a[()] if a.ndim == 0 else (a.copy() if copy else a)
    return value


def _wrap(value: Any) -> Any:
    """A value as LBFGS's state holds it: arrays and numpy scalars as Tensors."""
    if isinstance(value, list):
        return [_wrap(v) for v in value]
    if isinstance(value, (np.ndarray, np.generic)):
        return Tensor._make(np.asarray(value))
    return value


def _number(loss: Any) -> float:
    """The closure's loss as a float, read as torch's step reads it (under no_grad: a
    loss that requires grad gives no conversion warning)."""
    return float(loss.detach() if isinstance(loss, Tensor) else loss)


__all__ = ["LBFGS"]
