"""The strong Wolfe line search LBFGS runs with ``line_search_fn="strong_wolfe"``: a
bracketing phase that grows the step by cubic extrapolation until the interval holds a
point of sufficient decrease and small slope, then a zoom phase that shrinks it by
cubic interpolation (Nocedal and Wright, algorithms 3.5 and 3.6), with torch's
constants and safeguards, on numpy arrays and scalars.

>>> import numpy as np
>>> evaluate = lambda t: ((t - 2.0) ** 4, np.array([4 * (t - 2.0) ** 3]))  # (x - 2)^4
>>> f, g, t, evals = strong_wolfe(evaluate, 5.0, np.array([1.0]), 16.0, np.array([-32.0]),
...                               -32.0)
>>> round(float(t), 4), evals
(2.4821, 2)
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np


class _Point(NamedTuple):
    """A step along the direction, the loss there, its gradient and directional slope."""

    t: float
    f: float
    g: np.ndarray
    gtd: float | None


def cubic_minimum(x1: float, f1: float, g1: float, x2: float, f2: float, g2: float,
                  bounds: tuple | None = None) -> float:
    """The minimizer of the cubic through (x1, f1) and (x2, f2) with slopes g1 and g2,
    clamped to ``bounds`` (default: between x1 and x2); their middle when the cubic
    has no minimum."""
    lo, hi = bounds if bounds is not None else ((x1, x2) if x1 <= x2 else (x2, x1))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    disc = d1 ** 2 - g1 * g2
    if not disc >= 0:
        return (lo + hi) / 2.0
    d2 = np.sqrt(disc)
    if x1 <= x2:
        at = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        at = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(at, lo), hi)


def strong_wolfe(evaluate: Callable, t: float, d: np.ndarray, f: float, g: np.ndarray,
                 gtd: float, c1: float = 1e-4, c2: float = 0.9,
                 tolerance_change: float = 1e-9, max_ls: int = 25) -> tuple:
    """A step ``t`` along ``d`` meeting the strong Wolfe conditions, from the loss ``f``,
    gradient ``g`` and slope ``gtd`` at step 0; ``evaluate(t)`` gives (loss, gradient)
    at step t. Returns (loss, gradient, step, evaluations), at most ``max_ls``
    evaluations after the first."""
    d_norm = np.abs(d).max()
    start = _Point(0, f, g, gtd)

    def at(step: float) -> _Point:
        loss, grad = evaluate(step)
        return _Point(step, loss, grad, grad.dot(d))

    new, prev, evals, it = at(t), start, 1, 0
    bracket: list = []
    done = False
    while it < max_ls:
        if new.f > f + c1 * new.t * gtd or (it > 1 and new.f >= prev.f):
            bracket = [prev, new]
            break
        if abs(new.gtd) <= -c2 * gtd:
            bracket, done = [new], True
            break
        if new.gtd >= 0:
            bracket = [prev, new]
            break
        step = cubic_minimum(prev.t, prev.f, prev.gtd, new.t, new.f, new.gtd,
                             bounds=(new.t + 0.01 * (new.t - prev.t), new.t * 10))
        prev, new = new, at(step)
        evals, it = evals + 1, it + 1
    if it == max_ls:
        bracket = [_Point(0, f, g, None), _Point(new.t, new.f, new.g, None)]
    low, high = (0, 1) if bracket[0].f <= bracket[-1].f else (1, 0)
    insufficient = False
    while not done and it < max_ls:
        a, b = bracket
        if abs(b.t - a.t) * d_norm < tolerance_change:
            break
        step, insufficient = _safeguard(cubic_minimum(a.t, a.f, a.gtd, b.t, b.f, b.gtd),
                                         a.t, b.t, insufficient)
        new = at(step)
        evals, it = evals + 1, it + 1
        if new.f > f + c1 * new.t * gtd or new.f >= bracket[low].f:
            bracket[high] = new
            low, high = (0, 1) if bracket[0].f <= bracket[1].f else (1, 0)
            continue
        if abs(new.gtd) <= -c2 * gtd:
            done = True
        elif new.gtd * (bracket[high].t - bracket[low].t) >= 0:
            bracket[high] = bracket[low]
        bracket[low] = new
    best = bracket[low]
    return best.f, best.g, best.t, evals


def _safeguard(t: float, a: float, b: float, insufficient: bool) -> tuple:
    """``t`` moved a tenth of the interval [a, b] inside it when it comes that close to
    an end on two tries in a row (or lands outside); returns (step, insufficient)."""
    top, bottom = max(a, b), min(a, b)
    eps = 0.1 * (top - bottom)
    if not min(top - t, t - bottom) < eps:
        return t, False
    if not (insufficient or t >= top or t <= bottom):
        return t, True
    return (top - eps if abs(t - top) < abs(t - bottom) else bottom + eps), False


__all__ = ["cubic_minimum", "strong_wolfe"]
