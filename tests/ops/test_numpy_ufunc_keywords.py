"""A ufunc's call with ``where=``, ``out=``, ``dtype=``, ``casting=`` and ``order=``
(ops/numpy_ufuncs.py: call): values against numpy's, gradients against float64 central
differences, eagerly on Tensors, under pb.grad, pb.compile and pb.vmap; no nan or
warning from the positions the mask leaves out; numpy's errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import pullback as pb

from . import numeric_grad

_RNG = np.random.default_rng(41)
_X = _RNG.standard_normal((3, 4))
_MASK = np.array([[True, False, True, True], [False, True, True, False],
                  [True, True, False, True]])
_HOLE = np.where(_MASK, _X, 0.0)  # zeros where the mask does not hold


def _in_place(x):
    out = x * 2
    r = np.divide(1.5, x, out=out, where=x > 0)
    assert r is out  # numpy's: the out= array itself, which holds the result
    return out


_CASES = {
    # the safe-division / safe-log / safe-sqrt idioms, a mask that is traced
    # (a mask of b != 0 is not one central differences can check at b == 0: the
    # function jumps there; test_a_zero_denominator_left_out... checks it)
    "divide-safe": (lambda b: np.divide(_X, b, out=np.zeros_like(b), where=_MASK), _HOLE),
    "divide-both": (lambda x: np.divide(x[0], x[1], out=np.zeros_like(x[0]),
                                        where=_MASK[1]), _HOLE),
    "divide-traced": (lambda x: np.divide(1.0, x, out=np.zeros_like(x),
                                          where=np.abs(x) > 0.2), _X),
    "log-safe": (lambda x: np.log(x, out=np.full_like(x, -5.0), where=x > 0), _X),
    "sqrt-safe": (lambda x: np.sqrt(x, out=np.zeros_like(x), where=x >= 0), _X),
    "arccos-safe": (lambda x: np.arccos(x, out=x * 3, where=np.abs(x) < 1), _X),
    # a mask that is data: an array, a list broadcast, a Python bool
    "power-mask": (lambda x: np.power(np.abs(x), x, out=np.ones_like(x), where=_MASK), _X),
    "add-list": (lambda x: np.add(x, x[0], out=x * 1, where=[True, False, True, False]), _X),
    "multiply-true": (lambda x: np.multiply(x, x, out=np.zeros_like(x), where=True), _X),
    # out= an array the function holds: written in place, keeps its old values elsewhere
    "in-place": (_in_place, _X),
    "out-broadcast": (lambda x: np.subtract(x[0], 1.0, out=x * 1, where=x > 0), _X),
    # dtype=, casting=, order=
    "multiply-dtype": (lambda x: np.multiply(x, x[::-1], dtype=np.float64, casting="same_kind",
                                             order="C"), _X),
    "tanh-order": (lambda x: np.tanh(x, order="F", casting="safe"), _X),
    "exp-dtype-where": (lambda x: np.exp(x, dtype=np.float64, out=np.zeros_like(x),
                                         where=x < 1), _X),
}


def _weighted(y):
    w = np.cos(np.arange(np.size(y)) + 0.5).reshape(np.shape(y))
    return np.sum(y * w)


@pytest.mark.parametrize("name", list(_CASES))
def test_values_and_gradients(name) -> None:
    fn, x = _CASES[name]
    want = fn(x)
    expected = numeric_grad(lambda a: _weighted(fn(a)), x)
    t = pb.tensor(x, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy computes nothing where the mask is False
        y = fn(t)
        _weighted(y).backward()
        got_grad = pb.grad(lambda a: _weighted(fn(a)))(x)
        compiled = pb.compile(fn)(pb.tensor(x)).numpy()
    assert y.detach().numpy().dtype == want.dtype
    np.testing.assert_allclose(y.detach().numpy(), want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(compiled, want, rtol=1e-12, atol=1e-12)
    for g in (t.grad.numpy(), got_grad):
        assert np.isfinite(g).all()
        np.testing.assert_allclose(g, expected, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name", ["divide-safe", "log-safe", "sqrt-safe", "in-place",
                                  "add-list"])
def test_vmap_over_rows(name) -> None:
    fn, x = _CASES[name]
    row = (lambda v: fn(v[None])[0]) if name != "add-list" else fn
    xs = np.stack([x, -x])
    got = pb.vmap(row)(pb.tensor(xs)).numpy()
    np.testing.assert_allclose(got, np.stack([row(v) for v in xs]), rtol=1e-12, atol=1e-12)


def test_a_zero_denominator_left_out_gives_zero_not_nan() -> None:
    b = np.array([0.0, 2.0, 0.0, -4.0])

    def f(b):
        return np.divide(1.0, b, out=np.zeros_like(b), where=b != 0).sum()
    np.testing.assert_array_equal(pb.grad(f)(b), [0.0, -0.25, 0.0, -0.0625])
    np.testing.assert_array_equal(pb.grad(lambda v: pb.grad(f)(v).sum())(b),
                                  [0.0, 0.25, 0.0, -0.03125])
    _, tangent = pb.func.jvp(lambda v: np.divide(1.0, v, out=np.zeros_like(v),
                                                 where=v != 0), (pb.tensor(b),),
                             (pb.ones(4, dtype=pb.float64),))
    np.testing.assert_array_equal(tangent.numpy(), [0.0, -0.25, 0.0, -0.0625])
    # the usual fill: -inf where the log is not taken, a gradient only where it is
    g = pb.grad(lambda x: np.log(x, out=np.full_like(x, -np.inf), where=x > 0)[1])(b)
    np.testing.assert_array_equal(g, [0.0, 0.5, 0.0, 0.0])


def test_dtype_gives_numpy_s_loop() -> None:
    x = pb.tensor(_X, requires_grad=True)
    y = np.exp(x, dtype=np.float32)
    want = np.exp(_X, dtype=np.float32)
    assert y.dtype == pb.float32
    np.testing.assert_array_equal(y.detach().numpy(), want)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-6)
    z = np.add(x.detach().float(), x.detach().float(), dtype=np.float64)
    assert z.dtype == pb.float64


def test_where_with_no_out_is_refused_by_name() -> None:
    with pytest.raises(TypeError, match=r"^numpy\.log with where= and no out= leaves"):
        pb.grad(lambda x: np.log(x, where=x > 0).sum())(_X)


def test_out_a_numpy_array_is_refused_with_a_gradient() -> None:
    with pytest.raises(TypeError, match=r"^numpy\.divide writes into 'out', a numpy array"):
        np.divide(pb.tensor(_X, requires_grad=True), 2.0, out=np.zeros((3, 4)), where=_MASK)
    out = np.zeros((3, 4))  # with no gradient: numpy's, into the array
    np.divide(pb.tensor(_X), 2.0, out=out, where=_MASK)
    np.testing.assert_array_equal(out, np.where(_MASK, _X / 2, 0.0))


@pytest.mark.parametrize("call", [
    lambda x: np.add(x, x, dtype=np.int64),
    lambda x: np.add(x, x, out=np.zeros_like(x)[:2], where=x > 0),
    lambda x: np.exp(x, dtype=np.float32, casting="safe"),
])
def test_bad_keywords_raise_numpy_s_error(call) -> None:
    with pytest.raises(Exception) as want:
        call(_X)
    with pytest.raises(type(want.value)) as got:
        call(pb.tensor(_X, requires_grad=True))
    assert str(got.value) == str(want.value)


def _stacked(x):
    """np.unstack and np.apply_over_axes (ops/numpy_arrays.py, numpy_calculus.py)."""
    parts = np.unstack(x, axis=-1)
    return np.apply_over_axes(np.mean, x * parts[0][:, None], 0) + parts[1][:, None]


def test_unstack_and_apply_over_axes_on_every_front_door() -> None:
    want = _stacked(_X)
    np.testing.assert_allclose(pb.compile(_stacked)(pb.tensor(_X)).numpy(), want,
                               rtol=1e-12)
    xs = np.stack([_X, _X[::-1]])
    np.testing.assert_allclose(pb.vmap(_stacked)(pb.tensor(xs)).numpy(),
                               np.stack([_stacked(v) for v in xs]), rtol=1e-12)
    expected = numeric_grad(lambda a: _weighted(_stacked(a)), _X)
    np.testing.assert_allclose(pb.grad(lambda a: _weighted(_stacked(a)))(_X), expected,
                               rtol=1e-6, atol=1e-8)
    with pytest.raises(ValueError, match="at least 1-d"):
        np.unstack(pb.tensor(1.0, requires_grad=True))
    _, tangent = pb.func.jvp(_stacked, (pb.tensor(_X),), (pb.tensor(np.ones_like(_X)),))
    np.testing.assert_allclose(tangent.numpy(), (_stacked(_X + 1e-6) - _stacked(_X - 1e-6))
                               / 2e-6, rtol=1e-5, atol=1e-7)
