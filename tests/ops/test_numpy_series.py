"""numpy.polynomial's evaluation functions and classes on traced values
(ops/numpy_series.py, compiler/numpy_polynomial.py): values against numpy's, gradients
against float64 central differences, under pb.grad, pb.compile and pb.vmap; the
refusals outside a front door and of the classes' other methods."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb

from . import numeric_grad

_P = np.polynomial
_RNG = np.random.default_rng(7)
_X = np.linspace(-1.2, 1.4, 6)
_C = _RNG.standard_normal(5)
_C2 = _RNG.standard_normal((4, 3))
_EVALUATORS = {"polyval": _P.polynomial.polyval, "chebval": _P.chebyshev.chebval,
               "legval": _P.legendre.legval, "hermval": _P.hermite.hermval,
               "hermeval": _P.hermite_e.hermeval, "lagval": _P.laguerre.lagval}
_CLASSES = [_P.Polynomial, _P.Chebyshev, _P.Legendre, _P.Hermite, _P.HermiteE, _P.Laguerre]


def _programs():
    out = {}
    for name, fn in _EVALUATORS.items():
        out[f"{name} c"] = (lambda c, fn=fn: fn(_X, c), _C)
        out[f"{name} x"] = (lambda x, fn=fn: fn(x, _C), _X)
        out[f"{name} short"] = (lambda c, fn=fn: fn(_X, c[:2]) + fn(0.5, c[:1]), _C)
        out[f"{name} 2-d"] = (lambda c, fn=fn: fn(_X.reshape(2, 3), c), _C2)
        out[f"{name} tensor=False"] = (lambda c, fn=fn: fn(_X[:3], c, tensor=False), _C2)
    for cls in _CLASSES:
        out[f"{cls.__name__}(c)(x)"] = (lambda c, cls=cls: cls(c, domain=[-2, 3])(_X), _C)
        out[f"{cls.__name__}(c0)(x)"] = (lambda x, cls=cls: cls(_C)(x), _X)
        out[f"{cls.__name__}(c)(list)"] = (lambda c, cls=cls: cls(c)([0.25, -0.5]), _C)
    return out


_PROGRAMS = _programs()


def _weighted(y):
    w = np.cos(np.arange(np.size(y)) + 0.5).reshape(np.shape(y))
    return np.sum(y * w)


@pytest.mark.parametrize("name", list(_PROGRAMS))
def test_values_and_gradients(name) -> None:
    fn, a = _PROGRAMS[name]
    want = fn(a)
    got = pb.compile(fn)(a).numpy()
    assert got.shape == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    expected = numeric_grad(lambda v: _weighted(fn(v)), a)
    np.testing.assert_allclose(pb.grad(lambda v: _weighted(fn(v)))(a), expected,
                               rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name", ["chebval c", "lagval x", "Legendre(c)(x)",
                                  "Polynomial(c0)(x)"])
def test_vmap(name) -> None:
    fn, a = _PROGRAMS[name]
    batch = np.stack([a, a * 0.5 - 0.1])
    np.testing.assert_allclose(np.asarray(pb.vmap(fn)(batch)), np.stack([fn(v) for v in batch]),
                               rtol=1e-12, atol=1e-12)


def test_outside_a_front_door_the_refusal_says_why() -> None:
    c = pb.tensor(_C, requires_grad=True)
    with pytest.raises(RuntimeError, match="^numpy.polynomial converts its coefficients"):
        _P.chebyshev.chebval(_X, c)


def test_other_methods_of_a_traced_series_are_refused_by_name() -> None:
    def f(c):
        return _P.Chebyshev(c).deriv()(_X).sum()
    with pytest.raises(AttributeError, match=r"^Chebyshev\.deriv with coefficients"):
        pb.grad(f)(_C)


def test_numpy_s_errors_for_the_coefficients() -> None:
    with pytest.raises(ValueError, match="Coefficient array is not 1-d"):
        pb.grad(lambda c: _P.Polynomial(c)(_X).sum())(_C2)
