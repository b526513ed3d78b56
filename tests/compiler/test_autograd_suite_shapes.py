"""Defects found by running HIPS autograd's numpy test suite through a name-mapping
layer (check_grads: forward and reverse mode, to second order, against central
differences), each kept in the shape of the program that found it; float64, against
finite differences and torch."""

from __future__ import annotations

import numpy as np
import pytest
from ops import numeric_grad

import pullback as pb

RNG = np.random.default_rng(7)
EPS = 1e-6


def directional(f, x, u):
    """Central difference of ``f`` at ``x`` along ``u``."""
    return (np.asarray(f(x + EPS / 2 * u)) - np.asarray(f(x - EPS / 2 * u))) / EPS


# ------------------------------------------------------- Python complex scalars
def test_python_complex_scalars_are_differentiated(torch):
    z = 0.4 + 0.1j
    out, tangent = pb.jvp(np.sin, (z,), (1.0 + 0.5j,))
    assert isinstance(out, complex) and isinstance(tangent, complex)
    np.testing.assert_allclose(tangent, directional(np.sin, z, 1.0 + 0.5j), rtol=1e-6)
    g = pb.grad(lambda z: np.abs(np.sin(z)) ** 2)(z)
    tz = torch.tensor(z, dtype=torch.complex128, requires_grad=True)
    (torch.sin(tz).abs() ** 2).backward()
    assert isinstance(g, complex)
    np.testing.assert_allclose(g, complex(tz.grad), rtol=1e-12)
    (ct,) = pb.vjp(np.sum, z)[1](1.0 + 0j)
    assert ct == 1.0


def test_a_complex_scalar_through_a_reduction_in_forward_mode():
    f = lambda z: np.prod(z) + np.mean(z) * np.max(np.real(z))  # noqa: E731
    z, u = 0.59 + 0.17j, 1.2 + 1.0j
    np.testing.assert_allclose(pb.jvp(f, (z,), (u,))[1], directional(f, z, u), rtol=1e-6)


# ------------------------------------------------------------- einsum, np.var
def test_einsum_of_a_complex_and_a_real_operand_matches_torch(torch):
    a = RNG.normal(size=(2, 3)) + 1j * RNG.normal(size=(2, 3))
    b = RNG.normal(size=(3, 4))
    v = RNG.normal(size=(2, 4)) + 1j * RNG.normal(size=(2, 4))
    ga, gb = pb.vjp(lambda a, b: np.einsum("ij,jk->ik", a, b), a, b)[1](v)
    ta, tb = (torch.tensor(a, requires_grad=True),
              torch.tensor(b.astype(complex), requires_grad=True))
    torch.einsum("ij,jk->ik", ta, tb).backward(torch.tensor(v))
    np.testing.assert_allclose(ga, ta.grad.numpy(), rtol=1e-12)
    assert gb.dtype == np.float64
    np.testing.assert_allclose(gb, tb.grad.numpy().real, rtol=1e-12)


def test_the_variance_of_complex_values_in_forward_mode():
    x = RNG.normal(size=(2, 3)) + 0.1j * RNG.normal(size=(2, 3))
    u = RNG.normal(size=(2, 3)) + 1j * RNG.normal(size=(2, 3))
    for f in (np.var, lambda x: np.std(x, axis=0)):
        np.testing.assert_allclose(pb.jvp(f, (x,), (u,))[1], directional(f, x, u),
                                   rtol=1e-6, atol=1e-9)


# ------------------------------------------------------------------ np.mod
def test_mod_and_floor_division_in_forward_over_forward_mode():
    y = np.array([0.9, 1.7])

    def f(x):
        return np.mod(x, y) + (x // y) * x

    def tangent(x):
        return pb.jvp(f, (x,), (np.ones(2),))[1]

    x = np.array([1.3, -2.5])
    got = pb.jvp(tangent, (x,), (np.array([1.0, -1.0]),))[1]
    np.testing.assert_allclose(got, directional(tangent, x, np.array([1.0, -1.0])),
                               atol=1e-6)
    inner = lambda y: pb.jvp(lambda y: np.mod(x, y), (y,), (y,))[1]  # noqa: E731
    np.testing.assert_allclose(pb.jvp(inner, (y,), (y,))[1], -(x // y) * y, atol=1e-12)


# --------------------------------------------------------------------- powers
@pytest.mark.filterwarnings("ignore:Output seems independent")
def test_second_derivative_of_zero_to_a_power_is_zero_not_nan():
    f = lambda y: np.power(0.0, y)  # noqa: E731
    assert pb.grad(pb.grad(f))(0.7) == 0.0
    g = lambda y: np.power(np.zeros(2), y).sum()  # noqa: E731
    np.testing.assert_array_equal(pb.hessian(g)(np.array([0.5, 2.0])), np.zeros((2, 2)))


# ----------------------------------------------------- outputs without inputs
def test_a_constant_output_has_zero_tangents_and_cotangents():
    c = RNG.normal(size=(3, 2))
    a = RNG.normal(size=(3, 2))
    out, t = pb.jvp(lambda x: c, (a,), (a,))
    np.testing.assert_array_equal(out, c)
    np.testing.assert_array_equal(t, np.zeros_like(c))
    out, vjp = pb.vjp(lambda x: c, a)
    np.testing.assert_array_equal(vjp(c)[0], np.zeros_like(a))
    assert pb.jacfwd(lambda x: c)(a).shape == (3, 2, 3, 2)
    # nested: the reverse mode of a forward-mode constant (check_grads' second order)
    inner = lambda x, v: pb.jvp(lambda x: c, (x,), (v,))[1]  # noqa: E731
    np.testing.assert_array_equal(pb.vjp(inner, a, a)[1](c)[0], np.zeros_like(a))


# -------------------------------------------------- generators seeded inside
def test_a_generator_seeded_inside_the_function_draws_the_same_every_call():
    """autograd's reparameterization test: a RandomState(0) made in the function."""
    m = RNG.normal(size=(4, 4))
    a = m @ m.T + 4 * np.eye(4)

    def fun(a):
        rng = np.random.RandomState(0)
        z = np.dot(np.linalg.cholesky(a), rng.randn(a.shape[0]))
        return np.linalg.norm(z)

    grads = [pb.grad(fun)(a) for _ in range(3)]
    for g in grads[1:]:
        np.testing.assert_array_equal(g, grads[0])
    fd = numeric_grad(fun, a)  # (cholesky reads the lower triangle; pullback's gradient
    np.testing.assert_allclose(grads[0], (fd + fd.T) / 2, rtol=1e-6, atol=1e-9)  # torch's)

    def seeded_global(x):
        np.random.seed(3)
        return np.sum(x * np.random.randn(2))

    want = np.random.RandomState(3).randn(2)
    for _ in range(2):
        np.testing.assert_array_equal(pb.grad(seeded_global)(np.ones(2)), want)


def test_a_generator_made_outside_still_draws_fresh_numbers():
    rs = np.random.RandomState(0)
    f = pb.grad(lambda x: (x * rs.randn(2)).sum())
    assert (f(np.ones(2)) != f(np.ones(2))).all()


# ------------------------------------------------------------- complex SVD
def test_complex_svd_through_its_singular_vectors_matches_torch(torch):
    """autograd's test_svd_*_complex: functions of U and Vh that the phase of each
    pair of singular vectors leaves alone (U @ Vh, |U|), and the second derivative."""
    for shape in [(4, 3), (3, 5)]:
        x = RNG.normal(size=shape) + 1j * RNG.normal(size=shape)
        w = RNG.normal(size=shape) + 1j * RNG.normal(size=shape)

        def f(x, w=w):
            u, s, vh = np.linalg.svd(x, full_matrices=False)
            return np.real(np.sum((u @ vh) * w))

        tx = torch.tensor(x, requires_grad=True)
        u, s, vh = torch.linalg.svd(tx, full_matrices=False)
        ((u @ vh) * torch.tensor(w)).real.sum().backward()
        np.testing.assert_allclose(pb.grad(f)(x), tx.grad.numpy(), rtol=1e-10, atol=1e-12)
        nuclear = pb.grad(lambda x: np.linalg.norm(x, ord="nuc"))
        np.testing.assert_allclose(pb.jvp(nuclear, (x,), (w,))[1], directional(nuclear, x, w),
                                   rtol=1e-6, atol=1e-8)


# --------------------------------------------- third order, row_stack, std
def test_forward_mode_three_deep_matches_the_third_derivative():
    """check_grads(np.dot, order=3): jvp of jvp of jvp."""
    b = np.array([0.5, -1.0, 2.0])
    f = lambda a: np.sin(a).sum() * np.dot(a, b)  # noqa: E731
    once = lambda a, u: pb.jvp(f, (a,), (u,))[1]  # noqa: E731
    twice = lambda a, u, v, w: pb.jvp(once, (a, u), (v, w))[1]  # noqa: E731
    a, e, z = np.array([1.0, 2.0, 3.0]), np.eye(3)[0], np.zeros(3)
    third = pb.jvp(twice, (a, e, e, z), (e, z, z, z))[1]
    # d^3/da0^3 of (sum sin a) (a . b): -cos(a0) (a . b) - 3 sin(a0) b0
    want = -np.cos(a[0]) * np.dot(a, b) - 3 * np.sin(a[0]) * b[0]
    np.testing.assert_allclose(third, want, rtol=1e-12)


@pytest.mark.filterwarnings("ignore:`row_stack` alias is deprecated")
def test_row_stack_of_a_tuple_holding_traced_arrays():
    a = RNG.normal(size=(2, 4))
    f = lambda x: (np.row_stack((x, x[:1] * 2)) ** 2).sum()  # noqa: E731
    np.testing.assert_allclose(pb.grad(f)(a), numeric_grad(f, a), rtol=1e-6)


def test_the_second_derivative_of_std_where_it_is_zero_is_not_nan():
    assert pb.grad(pb.grad(np.std))(3.5) == 0.0
