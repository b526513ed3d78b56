"""Issue 23, items 3-5 (numpy breadth and JAX's spellings): numpy's argument forms
under pb.grad against autograd and finite differences, outputs that do not depend on
the input, static arguments, holomorphic=True, pb.checkpoint, and the programs that
found the defects (a fluid simulation, an HMM forward pass, a numpy-scalar loss)."""

from __future__ import annotations

import warnings
from functools import partial

import autograd
import autograd.numpy as anp
import numpy as np
import pytest
from autograd.scipy.special import logsumexp as a_logsumexp
from ops import numeric_grad
from scipy.special import logsumexp

import pullback as pb

_RNG = np.random.default_rng(23)
_A = _RNG.standard_normal((2, 3, 4))
_B = _RNG.standard_normal((5, 4, 3))


# ------------------------------------------------------------------ numpy's forms
def _forms(np):
    """Programs written against a numpy module (numpy itself, or autograd's)."""
    return {
        "dot-nd": lambda a: np.sum(np.sin(np.dot(a, _B))),
        "cross-axes": lambda a: np.sum(np.cross(a[0, :3], a[1, :3].T * 2.0, axisa=0,
                                                axisb=1, axisc=0) ** 2),
        "select": lambda a: np.sum(np.select([a > 0.5, a < -0.5], [a * 2, a ** 2], 0.3)),
        "select-default": lambda a: np.sum(np.select([a > 0, a <= 0], [a, a ** 2])),
        "select-traced-default": lambda a: np.sum(np.select([a > 0], [a], default=a * 3)),
    }


# autograd lacks trace's axes and passes gradients through astype(int) (JAX and torch
# do not: the cast's gradient is zero, as finite differences say)
_FD_ONLY = {
    "trace-offset": lambda a: np.sum(np.trace(a, offset=1, axis1=2, axis2=1) ** 2),
    "trace-offset-negative": lambda a: np.trace(a[0], -1) * np.trace(a[1].T),
    "astype-int": lambda a: np.sum(a * (a * 3).astype(int)),
}


@pytest.mark.parametrize("name", list(_FD_ONLY))
def test_numpy_forms_match_finite_differences(name) -> None:
    f = _FD_ONLY[name]
    np.testing.assert_allclose(pb.grad(f)(_A), numeric_grad(f, _A), rtol=1e-6, atol=1e-8)
    assert pb.value_and_grad(f)(_A)[0] == pytest.approx(f(_A))


@pytest.mark.parametrize("name", list(_forms(np)))
def test_numpy_forms_match_autograd_and_finite_differences(name) -> None:
    f, g = _forms(np)[name], _forms(anp)[name]
    got = pb.grad(f)(_A)
    np.testing.assert_allclose(got, autograd.grad(g)(_A), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got, numeric_grad(f, _A), rtol=1e-6, atol=1e-8)
    assert pb.value_and_grad(f)(_A)[0] == pytest.approx(f(_A))


@pytest.mark.parametrize("name", list(_forms(np)))
def test_numpy_forms_in_forward_mode(name) -> None:
    f = _forms(np)[name]
    tangent = _RNG.standard_normal(_A.shape)
    _, t = pb.jvp(f, (_A,), (tangent,))
    assert t == pytest.approx(np.sum(pb.grad(f)(_A) * tangent), rel=1e-10)


def test_dot_of_nd_arrays_is_numpys_contraction() -> None:
    t = pb.tensor(_A, requires_grad=True)
    out = np.dot(t, _B)
    assert out.shape == (2, 3, 5, 3)
    np.testing.assert_allclose(out.detach().numpy(), np.dot(_A, _B), rtol=1e-12)
    with pytest.raises(ValueError, match=r"shapes \(2, 3, 4\) and \(4, 3, 5\) not aligned"):
        np.dot(t, np.ones((4, 3, 5)))


def test_linspace_with_traced_endpoints() -> None:
    def f(s):
        return np.sum(np.linspace(s, 2 * s + 1, 5) ** 2)
    got = pb.grad(f)(1.5)
    assert got == pytest.approx(autograd.grad(lambda s: anp.sum(
        anp.linspace(s, 2 * s + 1, 5) ** 2))(1.5), rel=1e-12)
    ends = np.array([0.5, -1.0])

    def g(v):
        y, step = np.linspace(v[0], v[1], 4, retstep=True)
        assert y[-1] == v[1]  # numpy's last point is stop itself
        return np.sum(np.cos(y)) + step
    np.testing.assert_allclose(pb.grad(g)(ends), numeric_grad(g, ends), rtol=1e-7)


def test_r_and_c_of_traced_values_through_the_source_pass() -> None:
    x = _RNG.standard_normal(4)

    def f(v):
        return np.sum(np.r_[v, v ** 2, 1.0, 0:2] * np.arange(11.0))

    def g(v):
        return np.sum(np.sin(np.c_[v, 3 * v]) @ np.array([1.0, 2.0]))
    for fn in (f, g):
        np.testing.assert_allclose(pb.grad(fn)(x), numeric_grad(fn, x), rtol=1e-7)
    assert pb.value_and_grad(f)(x)[0] == pytest.approx(f(x))


# ------------------------------------------------------------------ independent outputs
def test_output_independent_of_input_warns_and_gives_zeros_on_the_numpy_face() -> None:
    x = _RNG.standard_normal(3)
    for f in (lambda a: np.sum(np.ones(3)), lambda a: np.float64(2.5),
              lambda a: np.sum(a > 0) * 1.0):
        for _ in range(2):  # the trace, then the cache's generated code
            with pytest.warns(UserWarning, match="Output seems independent of input."):
                g = pb.grad(f)(x)
            np.testing.assert_array_equal(g, np.zeros(3))
    with pytest.warns(UserWarning, match="Output seems independent of input."):
        assert pb.grad(lambda a: 3.0)(2.0) == 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a dependent output does not warn
        pb.grad(lambda a: np.sum(a * a))(x)


def test_output_independent_of_input_on_the_torch_face() -> None:
    t = pb.tensor([1.0, 2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # JAX's grad: zeros, silently
        np.testing.assert_array_equal(pb.grad(lambda a: pb.ones(3).sum())(t).numpy(), [0, 0])
    x = pb.tensor([1.0, 2.0], requires_grad=True)
    y = (pb.ones(2, requires_grad=True) * 2).sum()
    with pytest.raises(RuntimeError, match="appears to not have been used in the graph"):
        pb.autograd.grad(y, x)
    assert pb.autograd.grad(y, x, allow_unused=True) == (None,)


def test_loss_returning_a_numpy_float64() -> None:
    """ODE-net style: the loss ends in numpy's scalar of constants, plus a traced part."""
    target = np.array([1.0, -1.0])

    def loss(params, data):
        offset = np.float64(np.sum(target ** 2))  # a numpy float64, no input in it
        return np.sum((params * data - target) ** 2) + offset
    p = np.array([0.5, 2.0])
    np.testing.assert_allclose(pb.grad(loss)(p, np.array([1.0, 2.0])),
                               numeric_grad(lambda q: loss(q, np.array([1.0, 2.0])), p),
                               rtol=1e-7)


# ------------------------------------------------------------------ static arguments
def test_static_argnums_and_argnames() -> None:
    def f(x, n, *, scale=1.0):
        return scale * np.sum(x ** n)
    x = np.array([1.0, 2.0])
    g = pb.grad(f, static_argnums=1)
    np.testing.assert_allclose(g(x, 3), [3.0, 12.0])
    np.testing.assert_allclose(g(x, 2), [2.0, 4.0])
    assert len(g.variants) == 2  # one inner transform per static value (by value)
    np.testing.assert_allclose(g(x, 3), [3.0, 12.0])
    assert len(g.variants) == 2
    np.testing.assert_allclose(g(x, n=2), [2.0, 4.0])  # (a keyword is a key of its own)
    vg = pb.value_and_grad(f, static_argnames=("n", "scale"))
    value, grad = vg(x, n=3, scale=2.0)
    assert value == pytest.approx(18.0) and np.allclose(grad, [6.0, 24.0])
    np.testing.assert_allclose(pb.jacrev(f, static_argnums=1)(x, 2), [2.0, 4.0])
    np.testing.assert_allclose(pb.jacfwd(lambda x, n: x ** n, static_argnums=1)(x, 2),
                               np.diag([2.0, 4.0]))
    c = pb.compile(lambda x, n: x ** n, static_argnums=(1,))
    np.testing.assert_allclose(c(pb.tensor(x), 3).numpy(), [1.0, 8.0])


def test_static_arguments_must_be_hashable_and_not_differentiated() -> None:
    g = pb.grad(lambda x, n: np.sum(x ** n), static_argnums=1)
    with pytest.raises(ValueError, match="Non-hashable static arguments are not supported. "
                                         "An error occurred during a call to '<lambda>'"):
        g(np.ones(2), np.array([2.0]))
    with pytest.raises(ValueError, match="argnums 1 is also a static argument"):
        pb.grad(lambda x, n: x * n, argnums=1, static_argnums=1)(1.0, 2.0)


# ------------------------------------------------------------------ holomorphic
def _holo(z):
    return z ** 2 * z[::-1]


def test_holomorphic_follows_jax_and_autograd() -> None:
    """JAX's (and autograd's holomorphic_grad) f'(z); torch's convention, the default,
    is its conjugate."""
    assert pb.grad(lambda z: z * z, holomorphic=True)(1 + 2j) == 2 + 4j
    assert pb.grad(lambda z: z * z, holomorphic=True)(1 + 2j) == \
        autograd.holomorphic_grad(lambda z: z * z)(1 + 2j)
    z = np.array([1 + 2j, 0.5 - 1j])
    a, b = z
    want = np.array([[2 * a * b, a * a], [b * b, 2 * a * b]])
    np.testing.assert_allclose(pb.jacfwd(_holo, holomorphic=True)(z), want, rtol=1e-12)
    np.testing.assert_allclose(pb.jacrev(_holo, holomorphic=True)(z), want, rtol=1e-12)
    ct = np.array([1.0 - 0.5j, 2.0 + 1j])
    _, pull = pb.vjp(_holo, z, holomorphic=True)
    np.testing.assert_allclose(pull(ct)[0], ct @ want, rtol=1e-12)
    np.testing.assert_allclose(pb.grad(lambda z: np.sum(_holo(z)))(z),
                               np.conj(want.sum(0)), rtol=1e-12)  # torch's
    with pytest.raises(TypeError, match="grad with holomorphic=True requires inputs with "
                                        "complex dtype, but got float64"):
        pb.grad(lambda x: x * x, holomorphic=True)(np.ones(2))
    with pytest.raises(TypeError, match="requires outputs with complex dtype"):
        pb.grad(lambda z: np.sum(np.abs(z)), holomorphic=True)(z)
    # the differentiated argument passed by keyword (argnums count positions)
    by_keyword = pb.grad(lambda z, w: z * z * w, argnums=1, holomorphic=True)
    assert by_keyword(1 + 1j, w=2 + 0j) == by_keyword(1 + 1j, 2 + 0j) == 2j


# ------------------------------------------------------------------ checkpoint
def test_checkpoint_recomputes_the_forward_in_the_backward() -> None:
    runs = []

    @pb.checkpoint
    def block(a):
        runs.append(1)
        return np.sin(a) ** 2

    x = np.array([0.3, 1.2])
    t = pb.tensor(x, requires_grad=True)
    block(t).sum().backward()
    assert len(runs) == 2  # once forward, once in the backward
    np.testing.assert_allclose(t.grad.numpy(), np.sin(2 * x), rtol=1e-12)
    np.testing.assert_allclose(pb.grad(lambda a: np.sum(block(a)))(x), np.sin(2 * x))
    assert pb.remat is pb.checkpoint


# ------------------------------------------------------------------ the programs
def _fluid(np):
    """autograd's examples/fluidsim/fluidsim.py, 16x16, three steps."""
    def project(vx, vy):
        p = np.zeros(vx.shape)
        h = 1.0 / vx.shape[0]
        div = -0.5 * h * (np.roll(vx, -1, axis=0) - np.roll(vx, 1, axis=0)
                          + np.roll(vy, -1, axis=1) - np.roll(vy, 1, axis=1))
        for _ in range(6):
            p = (div + np.roll(p, 1, axis=0) + np.roll(p, -1, axis=0)
                 + np.roll(p, 1, axis=1) + np.roll(p, -1, axis=1)) / 4.0
        vx = vx - 0.5 * (np.roll(p, -1, axis=0) - np.roll(p, 1, axis=0)) / h
        vy = vy - 0.5 * (np.roll(p, -1, axis=1) - np.roll(p, 1, axis=1)) / h
        return vx, vy

    def advect(f, vx, vy):
        rows, cols = f.shape
        cell_ys, cell_xs = np.meshgrid(np.arange(rows), np.arange(cols))
        center_xs = (cell_xs + vx).ravel()
        center_ys = (cell_ys + vy).ravel()
        left_ix = np.floor(center_xs).astype(int)
        top_ix = np.floor(center_ys).astype(int)
        rw = center_xs - left_ix
        bw = center_ys - top_ix
        left_ix = np.mod(left_ix, rows)
        right_ix = np.mod(left_ix + 1, rows)
        top_ix = np.mod(top_ix, cols)
        bot_ix = np.mod(top_ix + 1, cols)
        flat_f = (1 - rw) * ((1 - bw) * f[left_ix, top_ix] + bw * f[left_ix, bot_ix]) \
            + rw * ((1 - bw) * f[right_ix, top_ix] + bw * f[right_ix, bot_ix])
        return np.reshape(flat_f, (rows, cols))

    def plot(ax, smoke):
        if ax:
            ax.imshow(smoke)

    def simulate(vx, vy, smoke, steps, ax=None):
        for _ in range(steps):
            plot(ax, smoke)  # hands ax=None on: no copy of None (the None guard)
            vx_updated = advect(vx, vx, vy)
            vy_updated = advect(vy, vx, vy)
            vx, vy = project(vx_updated, vy_updated)
            smoke = advect(smoke, vx, vy)
        return smoke

    def objective(params, smoke, target):
        n = smoke.shape[0]
        vx = np.reshape(params[:n * n], (n, n))
        vy = np.reshape(params[n * n:], (n, n))
        return np.mean((target - simulate(vx, vy, smoke, 3)) ** 2)
    return objective


def test_fluid_simulation_under_grad() -> None:
    rng = np.random.default_rng(0)
    smoke, target = rng.random((16, 16)), rng.random((16, 16))
    params = rng.normal(size=2 * 16 * 16) * 0.3
    value, got = pb.value_and_grad(_fluid(np))(params, smoke, target)
    want = autograd.grad(_fluid(anp))(params, smoke, target)
    assert value == pytest.approx(_fluid(np)(params, smoke, target), rel=1e-12)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


def _log_partition(logsumexp):
    """autograd's examples/hmm_em.py forward pass: map(partial(f, params), data)."""
    def log_partition_function(natural_params, data):
        if isinstance(data, list):
            return sum(map(partial(log_partition_function, natural_params), data))
        log_pi, log_A, log_B = natural_params
        log_alpha = log_pi
        for y in data:
            log_alpha = logsumexp(log_alpha[:, None] + log_A, axis=0) + log_B @ y
        return logsumexp(log_alpha)
    return log_partition_function


def test_hmm_forward_pass_with_scipy_logsumexp_in_a_helper() -> None:
    rng = np.random.default_rng(1)
    params = [np.log(np.full(3, 1 / 3)), np.log(rng.dirichlet(np.ones(3), 3)),
              np.log(rng.dirichlet(np.ones(4), 3))]
    data = [np.eye(4)[[0, 1, 2, 3, 1]], np.eye(4)[[2, 2, 1]]]
    value, got = pb.value_and_grad(_log_partition(logsumexp))(params, data)
    want = autograd.grad(_log_partition(a_logsumexp))(params, data)
    assert value == pytest.approx(_log_partition(logsumexp)(params, data), rel=1e-12)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)
