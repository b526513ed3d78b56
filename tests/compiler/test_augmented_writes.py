"""Augmented assignments write in place, as numpy's and torch's do: ``r **= 2`` (and
``%=``, ``//=``, the bitwise ones) on a view changes its base, where Python used to
rebind the name to a new value (the base silently unchanged); and on the numpy face an
operand overlapping the target (``y[1:] += y[:-1]``, ``y[1:] = y[:-1]``) is read as it
was, where torch's overlap refusal used to stop valid numpy code."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from ops import numeric_grad as fd

import pullback as pb

X = np.array([1.5, 2.25, -3.75, 0.5])
WEIGHTS = np.arange(1.0, 5.0)


def _pow_view(x):
    y = x.copy()
    r = y[:2]
    r **= 2
    return (y * WEIGHTS).sum()


def _mod_view(x):
    y = x.copy()
    r = y.reshape(2, 2)
    r %= 1.0
    return (y * WEIGHTS).sum()


def _shift(x):
    y = x.copy()
    y[1:] = y[:-1]
    return (y * WEIGHTS).sum()


def _overlapping_add(x):
    y = x.copy()
    y[1:] += y[:-1]
    z = y[1:]
    z *= y[:3]
    return (y * WEIGHTS).sum()


def _masks_and_ints(x):
    m = x > 0
    v = m[:2]
    v &= x[:2] < 2.0
    k = np.arange(4)
    k //= 2
    k |= 4
    return (np.where(m, x, 0.0) ** 2).sum() + (k * x).sum()


@pytest.mark.parametrize("f", [_pow_view, _mod_view, _shift, _overlapping_add, _masks_and_ints])
def test_numpy_face_augmented_writes_match_numpy(f) -> None:
    value, grad = pb.value_and_grad(f)(X)
    assert np.isclose(value, f(X.copy()))
    np.testing.assert_allclose(grad, fd(f, X), atol=1e-6)
    np.testing.assert_allclose(pb.grad(f)(X), grad, atol=1e-12)


@pytest.mark.parametrize("op", ["**= 2", "%= 1.0"])
def test_tensor_augmented_writes_into_a_view_reach_the_base(op) -> None:
    def run(lib, v):
        x = lib.tensor(v, requires_grad=True)
        y = x * 1.0
        exec(f"r {op}", {}, {"r": y[:2]})  # (the statement: r rebound, or written into)
        (y * lib.tensor(WEIGHTS)).sum().backward()
        return y.detach().numpy(), x.grad.numpy()

    got, want = run(pb, X), run(torch, X)
    np.testing.assert_allclose(got[0], want[0])
    np.testing.assert_allclose(got[1], want[1])


def test_tensor_floor_division_in_place_reaches_the_base() -> None:
    y = pb.tensor(X)
    r = y[1:]
    r //= 1.0
    np.testing.assert_array_equal(y.numpy(), [1.5, 2.0, -4.0, 0.0])


def _written_after_use(x):
    c = np.ones(2) * 0.5  # an operator's result, a plain array, written later
    s = np.sum(c * x[:2])
    c[0] = 1.0
    c += 0.25
    return s + np.sum(c * x[1:3])


def test_an_array_made_by_an_operator_and_written_later_is_a_buffer() -> None:
    """The trace held ``c`` itself as a constant, so the write after its first use
    changed the value that use read: pb.grad and pb.compile gave 3.5625 where numpy gives
    1.875 (np.zeros's and np.array's results were buffers already)."""
    want = _written_after_use(X)
    value, grad = pb.value_and_grad(_written_after_use)(X)
    assert value == pytest.approx(want, rel=1e-12)
    np.testing.assert_allclose(grad, fd(_written_after_use, X), rtol=1e-6, atol=1e-9)
    assert pb.compile(_written_after_use)(X).item() == pytest.approx(want, rel=1e-12)
