"""``pb.vjp`` composes: nested in grad, vjp and compile, on pytrees, with aux, cached
per function; each result against float64 finite differences and torch.func."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from ops import numeric_grad

import pullback as pb
from pullback.compiler.vjp import compiled

X = np.array([0.3, -1.2, 2.0])
V = np.array([1.0, 0.5, -2.0])


def f(x):
    return np.sin(x) * x


def inner_vjp_sq(x):
    """The issue's example: grad of a function of a vjp."""
    return (pb.vjp(f, x)[1](V)[0] ** 2).sum()


def test_grad_of_vjp_matches_fd_and_torch(torch):
    g = pb.grad(inner_vjp_sq)(X)
    np.testing.assert_allclose(g, numeric_grad(inner_vjp_sq, X), rtol=1e-6, atol=1e-8)
    tf = lambda x: torch.sin(x) * x
    tg = torch.func.grad(lambda x: (torch.func.vjp(tf, x)[1](torch.tensor(V))[0] ** 2).sum())
    np.testing.assert_allclose(g, tg(torch.tensor(X)).numpy(), rtol=1e-12)


def test_vjp_of_vjp_gives_both_inputs_gradients():
    # h(x, v) = vjp(f, x)(v) = f'(x) * v; its vjp with cotangent u: (f''(x) v u, f'(x) u)
    u = np.array([2.0, -1.0, 0.5])
    out, h_vjp = pb.vjp(lambda x, v: pb.vjp(f, x)[1](v)[0], X, V)
    gx, gv = h_vjp(u)
    d1 = np.cos(X) * X + np.sin(X)
    d2 = 2 * np.cos(X) - np.sin(X) * X
    np.testing.assert_allclose(out, d1 * V, rtol=1e-12)
    np.testing.assert_allclose(gx, d2 * V * u, rtol=1e-12)
    np.testing.assert_allclose(gv, d1 * u, rtol=1e-12)


def test_vjp_inside_compile_reaches_x_grad():
    @pb.compile
    def h(x):
        return pb.vjp(f, x)[1](pb.tensor(V))[0].sum()

    for _ in range(2):  # traced, then the cached variant
        x = pb.tensor(X, requires_grad=True)
        h(x).backward()
        np.testing.assert_allclose(x.grad.numpy(), numeric_grad(
            lambda a: (pb.vjp(f, a)[1](V)[0]).sum(), X), rtol=1e-6, atol=1e-8)


def test_vjp_of_grad_and_grad_of_grad_of_vjp():
    # vjp of grad: the Hessian-vector product of sum(f)
    hv = pb.vjp(pb.grad(lambda x: f(x).sum()), X)[1](V)[0]
    np.testing.assert_allclose(hv, (2 * np.cos(X) - np.sin(X) * X) * V, rtol=1e-12)
    # depth 3: grad of grad of a vjp
    third = lambda x: pb.vjp(lambda y: (y ** 4).sum(), x)[1](1.0)[0]
    assert pb.grad(pb.grad(third))(1.5) == pytest.approx(24 * 1.5)


def test_vjp_fn_is_differentiable_in_its_cotangent():
    _, vjp_fn = pb.vjp(f, X)  # made outside any trace, used inside one
    g = pb.grad(lambda ct: (vjp_fn(ct)[0] ** 2).sum())(V)
    d1 = np.cos(X) * X + np.sin(X)
    np.testing.assert_allclose(g, 2 * d1 * d1 * V, rtol=1e-12)


def test_vjp_is_cached_per_function():
    fn = lambda x: np.tanh(x) * 2.0
    for k in range(3):
        out, vjp_fn = pb.vjp(fn, X + k)
        np.testing.assert_allclose(vjp_fn(V)[0], 2 * (1 - np.tanh(X + k) ** 2) * V)
    info = compiled(fn).cache.info
    assert (info.misses, info.hits) == (1, 2)


def test_pytree_primals_outputs_and_cotangents():
    def g(p, x):
        return {"y": p["w"] * x, "z": (p["b"] + x, x * x)}
    p = {"w": np.array([2.0, 3.0, 4.0]), "b": 1.5}
    out, vjp_fn = pb.vjp(g, p, X)
    assert set(out) == {"y", "z"} and isinstance(out["z"], tuple)
    ct = {"y": np.ones(3), "z": (np.full(3, 2.0), V)}
    gp, gx = vjp_fn(ct)
    assert isinstance(gp, dict) and isinstance(gp["b"], float)
    np.testing.assert_allclose(gp["w"], X)
    assert gp["b"] == pytest.approx(6.0)
    np.testing.assert_allclose(gx, p["w"] + 2.0 + 2 * X * V)


def test_cotangent_structure_mismatch_is_torchs_error():
    _, vjp_fn = pb.vjp(lambda x: (x * 2, x * 3), X)
    with pytest.raises(RuntimeError, match=r"cotangents: \(\*,\), primal output: \(\*, \*\)"):
        vjp_fn((np.ones(3),))
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        vjp_fn((np.ones(2), np.ones(3)))


def test_has_aux_returns_aux_as_plain_values():
    out, vjp_fn, aux = pb.vjp(lambda x: ((x ** 2).sum(), {"mean": x.mean()}), X,
                              has_aux=True)
    assert isinstance(aux["mean"], np.ndarray) and aux["mean"] == pytest.approx(X.mean())
    np.testing.assert_allclose(vjp_fn(1.0)[0], 2 * X)
    with pytest.raises(RuntimeError, match=r"should be a tuple: \(output, aux\)"):
        pb.vjp(lambda x: x * 2, X, has_aux=True)


def test_output_independent_of_primal_gives_zeros():
    _, vjp_fn = pb.vjp(lambda x, y: y * 2, X, V)
    gx, gy = vjp_fn(np.ones(3))
    np.testing.assert_array_equal(gx, np.zeros(3))
    np.testing.assert_array_equal(gy, np.full(3, 2.0))


def test_non_tensor_output_and_int_primal_are_clear_errors():
    with pytest.raises(pb.compiler.TraceError, match=r"vjp: .* returned no tensor \(got int\)"):
        pb.vjp(lambda x: 3, X)
    with pytest.raises(TypeError, match="argument 0"):
        pb.vjp(lambda n: n * 2.0, 3)


def test_kinds_follow_the_primals():
    out, vjp_fn = pb.vjp(lambda x: x * 2, pb.tensor(X))
    assert isinstance(out, pb.Tensor) and out.grad_fn is None
    (g,) = vjp_fn(pb.tensor(V))
    assert isinstance(g, pb.Tensor) and g.grad_fn is None
    out, vjp_fn = pb.vjp(lambda x: x * 2, 1.5)
    assert vjp_fn(1.0) == (2.0,)


def test_threads_share_one_cached_vjp():
    fn = lambda x: np.sin(x) * x
    start = threading.Barrier(4, timeout=60)
    errors = []

    def work(k):
        try:
            start.wait()
            for j in range(20):
                x = X + k + j * 0.01
                out, vjp_fn = pb.vjp(fn, x)
                np.testing.assert_allclose(out, fn(x), rtol=1e-12)
                np.testing.assert_allclose(vjp_fn(V)[0], (np.cos(x) * x + np.sin(x)) * V,
                                           rtol=1e-12)
        except Exception as e:  # reported in the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors[0]
    assert compiled(fn).cache.info.misses == 1


def test_vjp_and_linearize_keep_the_values_of_their_call():
    """The caller writing into its array after the call (``x -= lr * g``) changes
    neither vjp_fn's nor f_jvp's result (JAX copies; found by the numpy fuzz family)."""
    x = X.copy()
    out, pull = pb.vjp(f, x)
    out2, f_jvp = pb.linearize(f, x)
    x[...] = 123.0
    want = np.sin(X) + X * np.cos(X)
    np.testing.assert_allclose(pull(V)[0], want * V, rtol=1e-12)
    np.testing.assert_allclose(f_jvp(V), want * V, rtol=1e-12)
    np.testing.assert_allclose(out, f(X), rtol=1e-12)
    np.testing.assert_allclose(out2, f(X), rtol=1e-12)
    xs = [X.copy(), V.copy()]
    _, pull = pb.vjp(lambda ps: np.sum(ps[0] * ps[1]), xs)
    xs[0][...] = 0.0
    np.testing.assert_allclose(pull(1.0)[0][1], X, rtol=1e-12)
