"""The Dormand-Prince 5(4) method with adaptive steps, on flat float64 arrays: the
solver under ``pullback.scipy.integrate.odeint``, forward and adjoint alike.

``solve(f, y0, ts, rtol, atol)`` returns y at every time in ``ts`` (increasing or
decreasing); each segment ends exactly on its time point. The step size follows the
embedded fourth-order error, measured as scipy's solvers measure it:
``rms(err / (atol + rtol max(|y|, |y_new|))) <= 1``.

>>> import numpy as np
>>> ys = solve(lambda y, t: -y, np.array([1.0]), np.array([0.0, 1.0, 2.0]), 1e-10, 1e-10)
>>> np.allclose(ys[:, 0], np.exp([0.0, -1.0, -2.0]), rtol=1e-9)
True
"""

from __future__ import annotations

from typing import Callable

import numpy as np

_C = (0.0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0, 1.0)
_A = ((),
      (1 / 5,),
      (3 / 40, 9 / 40),
      (44 / 45, -56 / 15, 32 / 9),
      (19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729),
      (9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656),
      (35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84))
_B = np.array(_A[6] + (0.0,))  # fifth order (the last stage is the next step's first)
_B4 = np.array((5179 / 57600, 0.0, 7571 / 16695, 393 / 640, -92097 / 339200, 187 / 2100,
                1 / 40))
_E = _B - _B4
MAX_STEPS = 100_000  # per segment, unless the caller says (odeint's mxstep)


def _norm(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(x * x))) if x.size else 0.0


def _first_step(f: Callable, y: np.ndarray, t: float, f0: np.ndarray, direction: float,
                span: float, rtol: float, atol: float) -> float:
    """Hairer's initial step: one Euler step's change of f estimates the curvature."""
    scale = atol + rtol * np.abs(y)
    d0, d1 = _norm(y / scale), _norm(f0 / scale)
    h0 = 1e-6 if d0 < 1e-5 or d1 < 1e-5 else 0.01 * d0 / d1
    h0 = min(h0, span)
    f1 = f(y + direction * h0 * f0, t + direction * h0)
    d2 = _norm((f1 - f0) / scale) / h0
    h1 = max(1e-6, h0 * 1e-3) if max(d1, d2) <= 1e-15 else (0.01 / max(d1, d2)) ** 0.2
    return min(100 * h0, h1, span)


def _step(f: Callable, y: np.ndarray, t: float, h: float, k1: np.ndarray) -> tuple:
    """One Dormand-Prince step of signed size h: (y_new, f(y_new), error estimate)."""
    ks = [k1]
    for i in range(1, 7):
        dy = sum(a * k for a, k in zip(_A[i], ks) if a)
        ks.append(f(y + h * dy, t + _C[i] * h))
    y_new = y + h * sum(b * k for b, k in zip(_B, ks) if b)
    err = h * sum(e * k for e, k in zip(_E, ks) if e)
    return y_new, ks[6], err


def _segment(f: Callable, y: np.ndarray, t0: float, t1: float, rtol: float, atol: float,
             state: dict, max_steps: int) -> np.ndarray:
    """y at t1 from y at t0 (``state`` carries the step size and f(y) between segments)."""
    direction = 1.0 if t1 >= t0 else -1.0
    span = abs(t1 - t0)
    if span == 0:
        return y
    k1 = state.get("k1")
    if k1 is None:
        k1 = f(y, t0)
    h = state.get("h") or _first_step(f, y, t0, k1, direction, span, rtol, atol)
    t = t0
    for _ in range(max_steps):
        left = abs(t1 - t)
        last = h >= left
        h_try = left if last else h
        y_new, k_new, err = _step(f, y, t, direction * h_try, k1)
        scale = atol + rtol * np.maximum(np.abs(y), np.abs(y_new))
        e = _norm(err / scale)
        if not np.isfinite(e):
            h = h_try / 10
            continue
        factor = min(10.0, max(0.2, 0.9 * e ** -0.2)) if e > 0 else 10.0
        if e <= 1:
            y, k1 = y_new, k_new
            t = t1 if last else t + direction * h_try
            h = h_try * factor if not last or factor < 1 else max(h, h_try * factor)
            if last:
                state["k1"], state["h"] = k1, h
                return y
        else:
            h = h_try * max(0.2, factor)
    raise RuntimeError(f"odeint: more than {max_steps} steps between t = {t0} and {t1} "
                       f"(the problem may be stiff, or rtol/atol too small)")


def solve(f: Callable, y0: np.ndarray, ts: np.ndarray, rtol: float, atol: float,
          max_steps: int = MAX_STEPS) -> np.ndarray:
    """y at each time of ``ts`` (ys[0] = y0), for dy/dt = f(y, t)."""
    ys = np.empty((len(ts),) + y0.shape)
    ys[0] = y = y0
    state: dict = {}
    for i in range(1, len(ts)):
        y = _segment(f, y, float(ts[i - 1]), float(ts[i]), rtol, atol, state, max_steps)
        ys[i] = y
    return ys
