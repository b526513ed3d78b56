"""Corpus functions of a module that knows numpy only as ``xp`` (see source_corpus.py,
which runs them): the source pass resolves the alias through this module's globals."""

import numpy as xp


def _moments(v):
    out = xp.zeros(2)
    out[0] = xp.mean(v)
    out[1] = xp.mean(v ** 2)
    return out


def variance_from_moments(x):
    m = _moments(x)
    return m[1] - m[0] ** 2


def soft_features(x):
    feats = xp.array([x[0] * x[1], xp.tanh(x[2]), 1.0])
    return xp.sum(feats ** 2)


SCALE = xp.array([1.0, -0.5])


def scaled_rows(x, scale=SCALE):
    rows = []
    for r in x:
        rows.append(r * scale)
    return xp.sum(xp.stack(rows) ** 2)


def polyval(coeffs, t):
    """Horner's rule, as np.polyval spells it: ``coeffs`` highest power first."""
    acc = xp.zeros_like(t)
    for c in coeffs:
        acc = acc * t + c
    return acc
