"""A 0-d float array a loop's body reads from outside is read as a number, made once
before the loop (codegen_loop_numbers.py): numpy's arithmetic on a 0-d array costs
~25x its scalar's."""

import re

import numpy as np
import pytest

import pullback as pb

from .test_loop_code import kalman_nll

RNG = np.random.default_rng(7)


def kalman(a, log_q, log_r, ys):
    return kalman_nll([a, log_q, log_r], ys)


def test_a_0d_parameter_is_read_as_a_number_made_once_for_both_loops() -> None:
    ps, ys = [np.asarray(v) for v in (0.9, -1.0, -0.5)], RNG.standard_normal(30)
    vg = pb.value_and_grad(kalman, argnums=(0, 1, 2))
    code = "\n".join(line for line in pb.compiler.inspect(vg, *ps, ys).forward.splitlines()
                     if not line.lstrip().startswith("#"))
    assert code.count("a_1 = np.float64(a)") == 1 and "a_1 * m" in code
    assert "g_nll = np.float64(g_out)" in code  # (the seed every reverse step reads)
    in_loops = [line for line in code.splitlines() if line.startswith(" " * 8)]
    assert not [line for line in in_loops if re.search(r"\ba\b", line)]  # (nor reverse)
    value, grads = vg(*ps, ys)
    want_value, want = pb.value_and_grad(kalman_nll)(np.array([0.9, -1.0, -0.5]), ys)
    assert type(value) is np.ndarray and value.shape == ()
    np.testing.assert_allclose(value, want_value, rtol=1e-12)
    np.testing.assert_allclose(np.stack(grads), want, rtol=1e-12)
    assert all(type(g) is np.ndarray and g.shape == () for g in grads)


def recur(w, x):
    for _ in range(20):
        x = np.tanh(w * x + 0.1)
    return x


@pytest.mark.parametrize("w", [0.7, np.float32(0.7), np.asarray(0.7, np.float32),
                               np.float64(0.7)], ids=["float", "f32", "f32_0d", "f64"])
def test_floats_and_numpy_scalars_compute_as_before(w) -> None:
    """A Python float is an argument of the generated code as it is (``w[()]`` would
    fail on it): the constructor of its traced dtype makes it the trace's number."""
    x = np.asarray(0.3, np.asarray(w).dtype)
    code = pb.compiler.inspect(pb.grad(recur), w, x).forward
    assert "w_1 = np.float" in code
    g = pb.grad(recur)(w, x)
    eps = 1e-3 if np.asarray(w).dtype == np.float32 else 1e-6
    want = (recur(np.float64(w) + 1e-6, np.float64(x)) - recur(np.float64(w) - 1e-6,
                                                              np.float64(x))) / 2e-6
    np.testing.assert_allclose(float(g), want, rtol=eps)
    assert type(g) is type(pb.grad(lambda w, x: np.tanh(w * x))(w, x))  # (the door's kind)


def rows(a, X):
    total = 0.0
    for i in range(X.shape[0]):
        row = 0.0
        for j in range(X.shape[1]):
            row = row * a + X[i, j]
        total = total + row * a
    return total


def test_a_nested_loop_reads_its_outer_loops_number() -> None:
    a, X = np.asarray(0.5), RNG.standard_normal((3, 4))
    code = pb.compiler.inspect(pb.value_and_grad(rows), a, X).forward
    assert code.count("np.float64(a)") == 1
    _, g = pb.value_and_grad(rows)(a, X)
    h = 1e-6
    np.testing.assert_allclose(g, (rows(a + h, X) - rows(a - h, X)) / (2 * h), rtol=1e-6)


def test_a_while_loop_reads_its_bound_as_a_number() -> None:
    def grow(a, tol, x):
        while x < tol:
            x = x * a + 1.0
        return x

    args = np.asarray(1.5), np.asarray(10.0), np.asarray(1.0)
    code = pb.compiler.inspect(pb.grad(grow), *args).forward
    assert "tol_1 = np.float64(tol)" in code and "a_1 = np.float64(a)" in code
    assert float(pb.grad(grow)(*args)) == pytest.approx(
        (grow(1.5 + 1e-6, 10.0, 1.0) - grow(1.5 - 1e-6, 10.0, 1.0)) / 2e-6, rel=1e-6)

