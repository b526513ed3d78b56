"""Python floats on the numpy face compute as numpy computes them: float64 when the
scalar is the differentiated argument or meets only other scalars (and integer
arrays), weakly typed next to float arrays (float32 code stays float32, numpy 2's
rule); the torch face keeps torch's default dtype. The cache key tells a Python float
from np.float64 and np.float32, so the first call does not set the others' precision.
Values and derivatives to third order are checked against float64 closed forms and
central differences."""

import numpy as np
import pytest

import pullback as pb

S = 0.8


def f(s):
    return np.sin(s) * np.exp(s) + s ** 3 / (1 + s * s)


def d1(s):
    return (np.cos(s) + np.sin(s)) * np.exp(s) + (3 * s ** 2 + s ** 4) / (1 + s * s) ** 2


def d2(s):
    return 2 * np.cos(s) * np.exp(s) + (6 * s - 2 * s ** 3) / (1 + s * s) ** 3


def d3(s):
    return 2 * (np.cos(s) - np.sin(s)) * np.exp(s) + \
        (6 - 36 * s ** 2 + 6 * s ** 4) / (1 + s * s) ** 4


def central(fn, s, eps=1e-5):
    return (fn(s + eps) - fn(s - eps)) / (2 * eps)


def test_the_closed_forms_are_right():  # (what the tests below compare with)
    for lo, hi in ((f, d1), (d1, d2), (d2, d3)):
        assert central(lo, S) == pytest.approx(hi(S), rel=1e-9)


def test_value_and_gradient_of_a_python_float_are_float64():
    value, grad = pb.value_and_grad(f)(S)
    assert isinstance(value, float) and isinstance(grad, float)
    assert value == pytest.approx(f(S), rel=1e-15)
    assert grad == pytest.approx(d1(S), rel=1e-13)
    assert grad == pytest.approx(central(f, S), rel=1e-9)


@pytest.mark.parametrize("doors", [("grad",) * 3, ("jacrev",) * 3,
                                   ("jacfwd", "grad", "grad")])
def test_second_and_third_derivatives_have_float64_precision(doors):
    outer, mid, inner = (getattr(pb, d) for d in doors)
    assert float(mid(inner(f))(S)) == pytest.approx(d2(S), rel=1e-12)
    assert float(outer(mid(inner(f)))(S)) == pytest.approx(d3(S), rel=1e-11)
    assert float(pb.hessian(f)(S)) == pytest.approx(central(d1, S), rel=1e-9)


def test_scalars_meeting_only_scalars_are_float64():
    g = pb.grad(lambda a, b: np.sin(a * b) / (a + b), argnums=(0, 1))(S, 0.3)
    ga = (0.3 * np.cos(S * 0.3) * (S + 0.3) - np.sin(S * 0.3)) / (S + 0.3) ** 2
    assert g[0] == pytest.approx(ga, rel=1e-13)
    (gp,) = [pb.grad(lambda p: p[0] * np.exp(p[1]))((S, 0.3))]
    assert gp[1] == pytest.approx(S * np.exp(0.3), rel=1e-14)


def test_a_python_float_next_to_an_integer_array_is_float64():
    n = np.arange(3)
    value, grad = pb.value_and_grad(lambda s, k: np.sum(np.sin(k * s)))(S, n)
    assert value == pytest.approx(np.sum(np.sin(n * S)), rel=1e-15)
    assert grad == pytest.approx(np.sum(n * np.cos(n * S)), rel=1e-14)


def test_float32_arrays_with_a_python_scalar_stay_float32():
    x32 = np.array([0.1, 0.2, 0.3], np.float32)
    value, grad = pb.value_and_grad(lambda x, s: np.sum(np.tanh(x * s + s)))(x32, S)
    assert value.dtype == np.float32 and grad.dtype == np.float32
    assert pb.compile(lambda x, s: x * s)(x32, S).dtype == pb.float32
    gs = pb.grad(lambda x, s: np.sum(x * s), argnums=1)(x32, S)
    assert gs == pytest.approx(float(x32.sum()), rel=1e-6)  # (computed in float32)


def test_the_torch_face_keeps_torch_dtypes():
    t32 = pb.tensor([1.0, 2.0])
    ti = pb.tensor([1, 2])
    assert pb.compile(lambda t, s: t * s)(t32, S).dtype == pb.float32
    assert pb.compile(lambda t, s: t * s)(ti, S).dtype == pb.float32  # (default dtype)


@pytest.mark.parametrize("order", [(0, 1, 2), (2, 1, 0), (1, 0, 2)])
def test_the_cache_separates_float_numpy_float64_and_numpy_float32(order):
    kinds = [S, np.float64(S), np.float32(S)]
    g = pb.grad(f)
    got = {}
    for k in order:
        got[k] = g(kinds[k])
    assert g.cache.info.misses == 3
    assert got[0] == pytest.approx(d1(S), rel=1e-13) and isinstance(got[0], float)
    assert got[1] == pytest.approx(d1(S), rel=1e-13)
    assert np.asarray(got[2]).dtype == np.float32  # np.float32 computes in float32
    assert float(got[2]) == pytest.approx(d1(np.float32(S)), rel=1e-6)
    for k in order:  # each finds its own variant again
        assert g(kinds[k]) == got[k]
    assert g.cache.info.misses == 3


def test_a_guard_on_a_python_float_holds_at_float64():
    g = pb.grad(lambda s: s * s if s > 0.1 else -s)
    assert g(0.1000000001) == pytest.approx(0.2000000002, rel=1e-15)
    assert g(0.1) == -1.0  # (at float32, 0.1000000001 and 0.1 are one value)
    assert g(0.1000000001) == pytest.approx(0.2000000002, rel=1e-15)
    assert g.cache.info.misses == 2


INTEGER_MEETS_FLOAT = [
    lambda x: x + (x * 10).astype(int) * 0.1,        # an integer array times a Python float
    lambda x: x + (x * 10).astype(int) / 3,          # a true division of integers
    lambda x: x * (np.arange(3) / 7),                # (of an integer array made inside)
    lambda x: x + 0.1 * (x > 0),                     # a boolean array times a float
    lambda x: x * ((x * 10).astype(np.int32) * 1.1),
    lambda x: x + pb.fori_loop(0, 3, lambda i, v: v + i * 0.1, np.zeros(3)),  # a loop index
]


@pytest.mark.parametrize("k", range(len(INTEGER_MEETS_FLOAT)))
def test_integers_meeting_python_floats_compute_in_float64(k: int) -> None:
    """numpy makes float64 of integers (or booleans) with a Python float, and of an
    integer true division; traced numpy code does too (the torch face keeps torch's
    default dtype). Found by the loops class of the numpy fuzzer (a fori_loop's index
    times 0.1 lost digits)."""
    fn = lambda x: INTEGER_MEETS_FLOAT[k](x).sum()
    x = np.array([0.3, -0.5, 1.1])
    value, grad = pb.value_and_grad(fn)(x)
    assert value == fn(x) and value.dtype == np.float64
    np.testing.assert_allclose(pb.grad(fn)(x), grad)
    t = pb.tensor(x.astype(np.float32))
    assert pb.compile(lambda x: (x.int() * 0.1).sum())(t).dtype == pb.float32
