"""pullback.scipy.integrate.odeint: values against scipy.integrate.odeint, and the
adjoint gradients (y0, the time points, Tensor arguments, closed-over Tensors, a
Module's parameters) against central differences of the solve."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate

import pullback as pb
from pullback.scipy.integrate import odeint

TOL = {"rtol": 1e-11, "atol": 1e-11}
W = np.array([[0.1, -1.0], [1.0, -0.2]])
B = np.array([0.3, -0.2])
Y0 = np.array([1.0, 0.5])
T = np.array([0.0, 0.7, 1.5])
WEIGHTS = np.array([[1.0, 2.0], [0.5, -1.0], [-0.3, 0.8]])


def rhs(y, t, w, b):
    return np.tanh(y @ w) + b * np.sin(t)


def test_values_match_scipy() -> None:
    got = odeint(rhs, Y0, T, W, B, **TOL)
    want = integrate.odeint(rhs, Y0, T, args=(W, B), rtol=1e-12, atol=1e-12)
    assert isinstance(got, np.ndarray) and got.shape == (3, 2)
    np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-10)
    # scipy's spellings: args=, tfirst=; default tolerances; decreasing times
    np.testing.assert_allclose(odeint(rhs, Y0, T, args=(W, B)), want, rtol=1e-6)
    np.testing.assert_allclose(odeint(lambda t, y: rhs(y, t, W, B), Y0, T, tfirst=True), want,
                               rtol=1e-6)
    back = odeint(rhs, got[-1], T[::-1], W, B, **TOL)
    np.testing.assert_allclose(back[-1], Y0, rtol=1e-8)


def _loss(y0, t, w, b):
    return (odeint(rhs, y0, t, w, b, **TOL) * WEIGHTS).sum()


def _fd(f, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        hi, lo = x.copy(), x.copy()
        hi[i] += eps
        lo[i] -= eps
        g[i] = (float(f(hi)) - float(f(lo))) / (2 * eps)
    return g


def test_adjoint_gradients_of_every_argument() -> None:
    ts = [pb.tensor(v, requires_grad=True) for v in (Y0, T, W, B)]
    out = odeint(rhs, *ts[:2], *ts[2:], **TOL)
    assert out.grad_fn.name() == "OdeintBackward" and out.dtype == pb.float64
    (out * pb.tensor(WEIGHTS)).sum().backward()
    args = [Y0, T, W, B]
    for i, t in enumerate(ts):
        def f(v, i=i):
            a = list(args)
            a[i] = v
            return _loss(*a)
        np.testing.assert_allclose(t.grad.numpy(), _fd(f, args[i]), rtol=1e-5, atol=1e-8)


def test_closed_over_tensors_and_module_parameters() -> None:
    w = pb.tensor(W, requires_grad=True)
    layer = pb.nn.Linear(2, 2).double()

    def field(y, t):
        return np.tanh(y @ w) + layer(y) * 0.1

    y0 = pb.tensor(Y0, requires_grad=True)
    (odeint(field, y0, T, **TOL) * pb.tensor(WEIGHTS)).sum().backward()

    def loss_w(v):
        with pb.no_grad():
            return (odeint(lambda y, t: np.tanh(y @ v) + layer(pb.tensor(y)).numpy() * 0.1,
                           Y0, T, **TOL) * WEIGHTS).sum()
    np.testing.assert_allclose(w.grad.numpy(), _fd(loss_w, W), rtol=1e-5, atol=1e-8)

    weight = layer.weight.detach().numpy().copy()

    def loss_layer(v):
        with pb.no_grad():
            layer.weight.copy_(pb.tensor(v))
            out = (odeint(field, Y0, T, **TOL) * WEIGHTS).sum()
            layer.weight.copy_(pb.tensor(weight))
        return out
    np.testing.assert_allclose(layer.weight.grad.numpy(), _fd(loss_layer, weight), rtol=1e-5,
                               atol=1e-8)
    assert layer.bias.grad is not None


def test_inside_pb_grad() -> None:
    def loss(y0, w):
        return (odeint(rhs, y0, pb.tensor(T), w, pb.tensor(B), **TOL) * WEIGHTS).sum()

    g = pb.grad(loss, argnums=(0, 1))
    for scale in (1.0, 0.5):  # the second call reuses the generated code, with new values
        gy, gw = g(pb.tensor(Y0 * scale), pb.tensor(W))
        np.testing.assert_allclose(
            gy.numpy(), _fd(lambda v: _loss(v, T, W, B), Y0 * scale), rtol=1e-5, atol=1e-8)
        np.testing.assert_allclose(
            gw.numpy(), _fd(lambda v, s=scale: _loss(Y0 * s, T, v, B), W), rtol=1e-5, atol=1e-8)


def test_closure_over_traced_values_is_refused() -> None:
    def loss(k):
        return odeint(lambda y, t: -k * y, pb.tensor([1.0]), [0.0, 1.0])[-1].sum()

    with pytest.raises(TypeError, match="pass them as arguments"):
        pb.grad(loss)(pb.tensor(0.5))


def test_a_single_time_point_and_a_stiff_limit() -> None:
    y0 = pb.tensor(Y0, requires_grad=True)
    out = odeint(rhs, y0, [0.0], W, B)
    np.testing.assert_array_equal(out.detach().numpy(), Y0[None])
    out.sum().backward()
    np.testing.assert_array_equal(y0.grad.numpy(), [1.0, 1.0])
    with pytest.raises(RuntimeError, match="more than 50 steps"):
        odeint(lambda y, t: -1e9 * (y - np.cos(t)), np.array([0.0]), [0.0, 1000.0], mxstep=50)
