"""Parameters in containers: scipy's odeint under pb.grad with its parameters in lists,
tuples and dicts inside ``args`` (issue 22, rows 1-2), the face the field function
sees, forward mode through odeint, repeated time points, and the lambda spelling of
the same programs. Every gradient against central differences in float64."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.integrate
import scipy.linalg
import scipy.optimize
import scipy.special
import scipy.stats
from scipy.integrate import odeint

import pullback as pb
from pullback.scipy.integrate import odeint as pb_odeint

Y0 = np.array([0.5, -0.3, 0.2])
TS = np.array([0.0, 0.5, 1.0])
W0 = np.random.default_rng(0).normal(size=(3, 3)) * 0.5


def differences(f, x, eps=1e-6):
    """Central differences of the scalar ``f`` at the array ``x``."""
    x = np.asarray(x, dtype=np.float64)
    out = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = eps
        out[i] = (f(x + e) - f(x - e)) / (2 * eps)
    return out


def field(y, t, ps):
    for W in ps:
        y = np.dot(y, W)
    return np.tanh(y)


def row1(W):
    return np.sum(odeint(field, Y0, TS, ([W],))) + np.sum(W ** 2)


def test_parameters_in_a_list_inside_args():
    """Issue 22 row 1: the parameter sits in a list in odeint's args tuple."""
    want = differences(row1, W0)
    np.testing.assert_allclose(pb.grad(row1)(W0), want, rtol=1e-5, atol=1e-7)
    # the lambda spelling of the same program, on a continuation line
    as_lambda = pb.grad(
        lambda W: np.sum(odeint(field, Y0, TS, ([W],))) + np.sum(W ** 2))
    np.testing.assert_allclose(as_lambda(W0), want, rtol=1e-5, atol=1e-7)
    # a second call with new values runs the generated code: no stale parameter
    np.testing.assert_allclose(pb.grad(row1)(W0 * 0.5), differences(row1, W0 * 0.5),
                               rtol=1e-5, atol=1e-7)


def nn_predict(inputs, t, params):
    for W, b in params:
        outputs = np.dot(inputs, W) + b
        inputs = np.tanh(outputs)
    return outputs


def _init(sizes, rs):
    return [(rs.randn(m, n) * 0.3, rs.randn(n) * 0.3) for m, n in zip(sizes[:-1], sizes[1:])]


def test_autograds_neural_ode_shape():
    """Issue 22 row 2: autograd's ode_net example, params a list of (W, b) tuples passed
    as ``tuple((params,))``, plus an L2 term; the gradient of every leaf."""
    t = np.linspace(0.0, 1.0, 4)
    D = np.array([1.0, 0.5])
    target = np.array([0.8, 0.1])

    def loss(params, rtol=0.01):
        pred = odeint(nn_predict, D, t, tuple((params,)), rtol=rtol)
        l2 = sum(np.sum(W ** 2) + np.sum(b ** 2) for W, b in params)
        return np.mean((pred[-1] - target) ** 2) + 0.1 * l2

    params = _init([2, 4, 2], np.random.RandomState(0))
    got = pb.grad(loss)(params)  # the example's own tolerance: the gradient of our solve
    exact = pb.grad(lambda p: loss(p, 1e-11))(params)
    assert isinstance(got, list) and isinstance(got[0], tuple)
    for k, (W, b) in enumerate(params):
        for j, leaf in enumerate((W, b)):
            def f(v, k=k, j=j):
                p = [list(pair) for pair in params]
                p[k][j] = v
                return loss([tuple(pair) for pair in p], 1e-11)
            want = differences(f, leaf)
            np.testing.assert_allclose(exact[k][j], want, rtol=1e-5, atol=1e-8)
            np.testing.assert_allclose(got[k][j], want, rtol=0.05, atol=2e-3)


def test_dicts_and_nested_tuples_eagerly_and_compiled():
    """Tensors anywhere in args' lists, tuples and dicts are inputs of the solve."""
    def rhs(y, t, p):
        return np.tanh(y @ p["w"][0]) * p["scale"][1] + p["b"]

    arrays = {"w": (W0,), "scale": [2.0, np.array(0.7)], "b": np.array([0.1, -0.2, 0.3])}

    def loss(w, s, b):
        p = {"w": (w,), "scale": [2.0, s], "b": b}
        return float(np.sum(scipy.integrate.odeint(rhs, Y0, TS, (p,), rtol=1e-10,
                                                   atol=1e-10) ** 2))

    w, s, b = (pb.tensor(v, requires_grad=True) for v in (W0, arrays["scale"][1], arrays["b"]))
    out = pb_odeint(rhs, pb.tensor(Y0), TS, {"w": (w,), "scale": [2.0, s], "b": b},
                    rtol=1e-10, atol=1e-10)
    (out ** 2).sum().backward()
    want = [differences(lambda v: loss(v, s.detach().numpy(), arrays["b"]), W0),
            differences(lambda v: loss(W0, v, arrays["b"]), np.array(0.7)),
            differences(lambda v: loss(W0, np.array(0.7), v), arrays["b"])]
    for leaf, g in zip((w, s, b), want):
        np.testing.assert_allclose(leaf.grad.numpy(), g, rtol=1e-5, atol=1e-8)

    def compiled_loss(p):
        return (pb_odeint(rhs, pb.tensor(Y0), TS, p, rtol=1e-10, atol=1e-10) ** 2).sum()

    run = pb.compile(compiled_loss)
    for scale in (1.0, 0.5):  # the second call reuses the generated code
        w = pb.tensor(W0 * scale, requires_grad=True)
        run({"w": (w,), "scale": [2.0, pb.tensor(0.7)], "b": pb.tensor(arrays["b"])}).backward()
        np.testing.assert_allclose(
            w.grad.numpy(), differences(lambda v: loss(v, np.array(0.7), arrays["b"]),
                                        W0 * scale), rtol=1e-5, atol=1e-8)


def test_scipy_odeint_routed_with_a_dict_in_args():
    """A traced value deep in a dict inside args routes scipy's call (it was found only
    in lists and tuples); tfirst=True; grad and jacfwd against differences."""
    def loss(w):
        return odeint(lambda t, y, p: np.tanh(y @ p["w"][0]) * t, Y0[:2], TS,
                      ({"w": [w]},), tfirst=True)[-1].sum()

    w = W0[:2, :2]
    want = differences(loss, w)
    np.testing.assert_allclose(pb.grad(loss)(w), want, rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(pb.jacfwd(loss)(w), want, rtol=1e-5, atol=1e-8)


def test_the_field_sees_the_numpy_face():
    """Issue 24: scipy's odeint under pb.grad hands func numpy's names, so ``y.std()``
    is numpy's (ddof=0), not torch's unbiased one."""
    def loss(y0):
        return odeint(lambda y, t: -y.std() * y, y0, np.array([0.0, 1.0])).sum()

    y0 = np.array([1.0, 2.0, 4.0])
    value, grad = pb.value_and_grad(loss)(y0)
    assert value == pytest.approx(loss(y0), rel=1e-6)
    np.testing.assert_allclose(grad, differences(loss, y0), rtol=1e-5)


def test_a_field_returning_a_list():
    """scipy's common spelling ``return [y[1], -k * y[0]]``: the list is stacked."""
    def loss(k):
        return odeint(lambda y, t, k: [y[1], -k * y[0]], np.array([1.0, 0.0]),
                      np.array([0.0, 1.0, 2.0]), (k,))[-1, 0]

    assert pb.grad(loss)(np.array(2.0)) == pytest.approx(
        differences(loss, np.array(2.0)), rel=1e-5)


def test_initial_state_as_a_list_of_traced_values():
    def loss(a):
        return odeint(lambda y, t: -y * y, [a[0], a[1] * 2.0], TS).sum()

    a = np.array([0.5, 0.3])
    np.testing.assert_allclose(pb.grad(loss)(a), differences(loss, a), rtol=1e-5)


def test_forward_mode_through_odeint():
    """Issue 24: jvp, jacfwd and linearize through scipy's odeint solve the forward
    sensitivity equations (they gave a zero tangent); they agree with jacrev and with
    central differences, also for a parameter in a list and for the time points."""
    def final(k, w):
        return odeint(lambda y, t, k, ps: -k * y + np.tanh(y @ ps[0]), Y0, TS,
                      (k, [w]))[-1]

    k, w = np.array(0.5), W0
    fwd = pb.jacfwd(final, argnums=(0, 1))(k, w)
    rev = pb.jacrev(final, argnums=(0, 1))(k, w)
    want_k = differences(lambda v: final(v, w)[0], k)
    assert fwd[0][0] == pytest.approx(want_k, rel=1e-5)
    for got in (fwd, rev):
        np.testing.assert_allclose(got[0], rev[0], rtol=1e-5, atol=1e-8)
        np.testing.assert_allclose(got[1], rev[1], rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(fwd[1][1], differences(lambda v: final(k, v)[1], w),
                               rtol=1e-5, atol=1e-8)
    tangent = np.ones_like(w)
    _, out = pb.jvp(lambda v: final(k, v), (w,), (tangent,))
    np.testing.assert_allclose(out, np.einsum("ijk,jk->i", rev[1], tangent), rtol=1e-5)
    _, lin = pb.linearize(lambda v: final(v, w), k)
    np.testing.assert_allclose(lin(np.array(2.0)), 2 * rev[0], rtol=1e-5)

    def at_times(ts):
        return odeint(lambda y, t: -0.5 * y + np.sin(t), Y0, ts).sum()

    ts = np.array([0.0, 0.4, 1.1])
    np.testing.assert_allclose(pb.jacfwd(at_times)(ts), differences(at_times, ts), rtol=1e-5)
    np.testing.assert_allclose(pb.grad(at_times)(ts), differences(at_times, ts), rtol=1e-5)


def test_second_derivatives_through_odeint_are_refused():
    """The adjoint and sensitivity solves run on arrays: a second derivative through
    them would be zero (hessian, grad of grad, forward over reverse and reverse over
    forward all gave 0.0); each is refused."""
    def final(k):
        return odeint(lambda y, t, k: -k * y, np.array([1.0]), np.array([0.0, 1.0]),
                      (k,))[-1, 0]

    k = np.array(0.5)
    for second in (pb.hessian(final), pb.grad(pb.grad(final)), pb.jacfwd(pb.jacrev(final)),
                   pb.jacrev(pb.jacfwd(final))):
        with pytest.raises(RuntimeError, match="is first-order"):
            second(k)
    kt = pb.tensor(0.5, dtype=pb.float64, requires_grad=True)
    y = pb_odeint(lambda y, t, k: -k * y, pb.tensor([1.0], dtype=pb.float64), [0.0, 1.0], kt)
    with pytest.raises(RuntimeError, match="its gradient is first-order"):
        pb.autograd.grad(y[-1, 0], kt, create_graph=True)
    (g,) = pb.autograd.grad(
        pb_odeint(lambda y, t, k: -k * y, pb.tensor([1.0], dtype=pb.float64), [0.0, 1.0],
                  kt)[-1, 0], kt)
    assert float(g) == pytest.approx(-np.exp(-0.5), rel=1e-6)


def test_repeated_time_points_as_scipy():
    """Issue 24: a repeated time gives the same state again, as scipy's odeint, with the
    gradients of the rate and of every time point; times that go back and forth get
    scipy's error."""
    ts = np.array([0.0, 1.0, 1.0, 2.0])

    def loss(k):
        return odeint(lambda y, t, k: -k * y, np.array([1.0, 2.0]), ts, args=(k,))

    ours = pb_odeint(lambda y, t, k: -k * y, np.array([1.0, 2.0]), ts, 0.5)
    np.testing.assert_allclose(ours, loss(0.5), rtol=1e-6)
    np.testing.assert_array_equal(ours[1], ours[2])
    total = lambda k: loss(k).sum()  # noqa: E731
    assert pb.grad(total)(np.array(0.5)) == pytest.approx(
        differences(total, np.array(0.5)), rel=1e-5)

    def over_times(t):
        return odeint(lambda y, s: -0.5 * y, np.array([1.0, 2.0]), t).sum()

    # (differences would reorder the times: the exact gradient of 3 sum exp(-(t_i - t_0)/2))
    decay = -1.5 * np.exp(-0.5 * (ts - ts[0]))
    want = np.concatenate([[-decay[1:].sum()], decay[1:]])
    np.testing.assert_allclose(pb.grad(over_times)(ts), want, rtol=1e-6)
    np.testing.assert_allclose(pb.jacfwd(over_times)(ts), want, rtol=1e-6)
    with pytest.raises(ValueError, match="monotonically increasing or monotonically"):
        pb.grad(lambda k: odeint(lambda y, t, k: -k * y, np.ones(1), [0.0, 1.0, 0.5],
                                 (k,)).sum())(0.5)


# ------------------------------------------ scipy functions that call a function back
class _Model:
    def __init__(self, k):
        self.k = k

    def residual(self, x):
        return x ** 3 - self.k


def _helper_closure(k):
    def inner(x):
        return np.exp(-k * x)
    return lambda x: inner(x)


CALLBACKS = {
    "scipy.integrate.quad": (lambda k: scipy.integrate.quad(lambda x: np.exp(-k * x), 0.0,
                                                            1.0)[0], "'func'", "leggauss"),
    "scipy.optimize.brentq": (lambda k: scipy.optimize.brentq(lambda x: x ** 3 - k, 0.0, 3.0),
                              "'f'", "implicit function theorem"),
    "scipy.optimize.minimize_scalar": (
        lambda k: scipy.optimize.minimize_scalar(lambda x: (x - k) ** 2).x, "'fun'", "Newton"),
    "scipy.optimize.fsolve": (lambda k: scipy.optimize.fsolve(lambda x: x ** 3 - k, 1.0)[0],
                              "'func'", "detach"),
    "scipy.optimize.root_scalar": (
        lambda k: scipy.optimize.root_scalar(lambda x: x ** 3 - k, bracket=(0, 3)).root,
        "'f'", "detach"),
    "scipy.integrate.solve_ivp": (
        lambda k: scipy.integrate.solve_ivp(lambda t, y: -k * y, (0, 1), [1.0]).y[0, -1],
        "'fun'", "pullback.scipy.integrate.odeint"),
    # the traced value reaches the callback through args=, a bound, an object, a helper
    "scipy.integrate.quad ": (lambda k: scipy.integrate.quad(lambda x, k: np.exp(-k * x), 0.0,
                                                             1.0, args=(k,))[0], "'func'", ""),
    "scipy.integrate.quad  ": (lambda k: scipy.integrate.quad(np.sin, 0.0, k)[0], "'func'", ""),
    "scipy.optimize.brentq ": (lambda k: scipy.optimize.brentq(_Model(k).residual, 0.0, 3.0),
                               "'f'", ""),
    "scipy.integrate.quad   ": (lambda k: scipy.integrate.quad(_helper_closure(k), 0.0, 1.0)[0],
                                "'func'", ""),
}


@pytest.mark.parametrize("name", sorted(CALLBACKS))
def test_scipy_callbacks_on_traced_values_are_refused(name):
    """Issue 24: quad, brentq & co. over a closure on a traced parameter gave a zero
    gradient; they are refused, naming the function, the argument and what to use."""
    fn, argument, advice = CALLBACKS[name]
    with pytest.raises(TypeError, match="carries a gradient") as info:
        pb.grad(fn)(np.array(2.0))
    message = str(info.value)
    assert message.startswith(name.strip() + ":") and argument in message
    assert "Use instead" in message and advice in message


def test_scipy_callbacks_without_traced_values_run_as_scipys():
    def f(k):
        return scipy.integrate.quad(lambda x: x * x, 0.0, 1.0)[0] * k

    assert pb.grad(f)(np.array(2.0)) == pytest.approx(1 / 3)


# --------------------------------------------- scipy wrappers' parameters in lists
X2 = np.array([0.3, -0.2])
WRAPPERS = {
    "norm.logpdf loc list": lambda m: scipy.stats.norm.logpdf(X2, [m[0], m[1]], 2.0).sum(),
    "norm.logpdf scale tuple": lambda m: scipy.stats.norm.logpdf(
        X2, 0.0, (m[0] ** 2 + 1, m[1] ** 2 + 1)).sum(),
    "logsumexp b list": lambda m: scipy.special.logsumexp(X2, b=[m[0] ** 2 + 0.5, m[1] + 1]),
    "logsumexp a list": lambda m: scipy.special.logsumexp([m[0], m[1], 1.0]),
    "multivariate_normal mean list": lambda m: scipy.stats.multivariate_normal.logpdf(
        X2, [m[0], m[1]], np.eye(2)),
    "multivariate_normal cov nested": lambda m: scipy.stats.multivariate_normal.logpdf(
        X2, np.zeros(2), [[m[0] ** 2 + 1, 0.1], [0.1, m[1] ** 2 + 1]]),
    "linalg.solve nested": lambda m: scipy.linalg.solve([[m[0] + 2, 0.1], [0.2, m[1] + 3]],
                                                        X2).sum(),
    "linalg.det nested": lambda m: scipy.linalg.det([[m[0] + 2, 0.1], [0.2, m[1] + 3]]),
    "cho_solve (c, lower)": lambda m: scipy.linalg.cho_solve(
        scipy.linalg.cho_factor(np.diag(m ** 2 + 1)), X2).sum(),
}


@pytest.mark.parametrize("name", sorted(WRAPPERS))
def test_scipy_parameters_as_lists_of_traced_values(name):
    """scipy takes array-likes: a list of traced values where an array goes is the array
    numpy would make of it (it raised 'Can't call numpy()'), under pb.grad and called
    directly on Tensors."""
    f = WRAPPERS[name]
    m = np.array([0.4, 0.7])
    want = differences(f, m)
    np.testing.assert_allclose(pb.grad(f)(m), want, rtol=1e-5, atol=1e-8)


def test_pullback_scipy_takes_lists_of_tensors_eagerly():
    from pullback.scipy import linalg, special, stats

    a, b = (pb.tensor(v, dtype=pb.float64, requires_grad=True) for v in (0.4, 0.7))
    (stats.norm.logpdf(X2, [a, b]).sum() + special.logsumexp([a, b])
     + linalg.det([[a + 2, 0.1], [0.2, b + 3]])).backward()

    def total(m):
        return (scipy.stats.norm.logpdf(X2, m).sum() + scipy.special.logsumexp(m)
                + np.linalg.det(np.array([[m[0] + 2, 0.1], [0.2, m[1] + 3]])))
    np.testing.assert_allclose([float(a.grad), float(b.grad)],
                               differences(total, np.array([0.4, 0.7])), rtol=1e-6)
