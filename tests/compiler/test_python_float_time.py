"""A Python float (an argument, or a loop's time ``t += dt``) beside float32 arrays is
computed as Python computes it, in float64, and where it meets an array the result has
numpy's dtype: the float32 array's for the float itself (weak), float64 for a numpy
function of it (``np.sin(t)`` is a float64 numpy scalar). The loop takes Python's number
of steps: 0.1 added ten times to 0.0 is 0.9999999999999999 in Python (eleven steps to
reach 1.0), 1.0000001 in float32 (ten)."""

import numpy as np
import pytest

import pullback as pb

Y = np.array([0.3, -0.2], dtype=np.float32)


def central(f, x, eps=1e-6):
    x = x.astype(np.float64)
    g = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e.flat[i] = eps
        g.flat[i] = (f(x + e) - f(x - e)) / (2 * eps)
    return g


def from_t0(y, t0):  # the time given as an argument
    t, n = t0, 0
    while t < 1.0:
        y = y + 0.1 * np.tanh(y)
        t += 0.1
        n += 1
    return y.sum(), n


def meeting(y, t0):  # the time meets the arrays: numpy's weak scalar, float32 results
    t, n = t0, 0
    while t < 1.0:
        y = y + 0.1 * t * y + t
        t += 0.1
        n += 1
    return y.sum(), n


def local_meeting(y):
    t, n = 0.0, 0
    while t < 1.0:
        y = y + 0.1 * t * y - t / 3.0
        t += 0.1
        n += 1
    return y.sum(), n


def forced_sin(y):  # np.sin(t) is a float64 scalar: numpy makes y float64
    t, dt, n = 0.0, 0.1, 0
    while t < 1.0:
        y = y + dt * (np.sin(t) - y)
        t += dt
        n += 1
    return y.sum(), n


def check(fn, args, steps, dtype):
    want, n = fn(*args)
    assert n == steps and np.asarray(want).dtype == dtype
    got, got_n = pb.compile(fn)(*args)
    assert int(got_n) == steps and got.dtype == {np.float32: pb.float32,
                                                 np.float64: pb.float64}[dtype]
    assert float(got) == float(want)
    value, g = pb.value_and_grad(lambda *a: fn(*a)[0])(*args)
    assert np.asarray(value).dtype == dtype and float(value) == float(want)
    assert g.dtype == np.float32 and np.allclose(
        g, central(lambda y: fn(y, *args[1:])[0], args[0]), rtol=1e-4)
    assert np.array_equal(pb.grad(lambda *a: fn(*a)[0])(*args), g)


@pytest.mark.parametrize("t0, steps", [(0.0, 11), (0.1, 10), (0.05, 10)])
def test_a_float_argument_steps_as_python(t0, steps):
    check(from_t0, (Y, t0), steps, np.float32)
    check(meeting, (Y, t0), steps, np.float32)
    compiled = pb.compile(from_t0)
    for t in (t0, 0.0, t0):  # (the cached code, on other values)
        assert int(compiled(Y, t)[1]) == from_t0(Y, t)[1]


def test_a_local_time_meeting_arrays_steps_as_python():
    check(local_meeting, (Y,), 11, np.float32)


def test_numpy_function_of_the_time_gives_numpy_float64():
    check(forced_sin, (Y,), 11, np.float64)


def test_float64_scalar_promotes_float32_array_as_numpy():
    def f(y, s):
        return (y + np.sin(s)).sum() * s
    s = np.float64(0.1)
    value, g = pb.value_and_grad(f)(Y, s)
    assert np.asarray(value).dtype == np.float64 and float(value) == float(f(Y, s))
    assert g.dtype == np.float32
