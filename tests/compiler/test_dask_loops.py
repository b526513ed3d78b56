"""Loops over Dask arrays: a scalar Kalman filter over Dask observations, rolled (the
source pass) or unrolled (no source), under pb.grad, pb.value_and_grad and pb.compile.
Over small arrays the generated code runs as one Dask task (a chain of thousands of
0-d tasks made Dask's fusion raise RecursionError at compute); over large ones it stays
chunked, a task per statement and chunk (docs/design.md, "Dask: loops")."""

import numpy as np
import pytest

import pullback as pb
from pullback.compiler.lazy_arrays import LARGE

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")

PARAMS = (0.9, -1.0, -0.5)


def refuse(*args, **kwargs):
    raise AssertionError("a Dask array was computed inside pullback")


def kalman(a, log_q, log_r, ys):
    q, r = np.exp(log_q), np.exp(log_r)
    mean, var, nll = 0.0, 1.0, 0.0
    for t in range(ys.shape[0]):
        mean_pred, var_pred = a * mean, a * a * var + q
        s = var_pred + r
        gain, v = var_pred / s, ys[t] - mean_pred
        nll = nll + 0.5 * (np.log(2 * np.pi * s) + v * v / s)
        mean, var = mean_pred + gain * v, (1 - gain) * var_pred
    return nll


def unrolled():
    """``kalman`` without its source (made by exec): the tracer unrolls its loop."""
    import inspect

    space = {"np": np}
    exec(inspect.getsource(kalman), space)  # noqa: S102 (this file's own function)
    return space["kalman"]


def observations(n, chunks):
    yn = np.random.default_rng(n).standard_normal(n)
    return yn, da.from_array(yn, chunks=chunks)


def params():
    return [np.asarray(v) for v in PARAMS]


@pytest.mark.parametrize("steps", [50, 200, 1000])
def test_a_rolled_loop_of_many_steps_equals_numpys(steps):
    yn, ys = observations(steps, steps // 4)
    vg = pb.value_and_grad(kalman, argnums=(0, 1, 2))
    with dask.config.set(scheduler=refuse):  # (nothing computed by the call)
        value, grads = vg(*params(), ys)
        g = pb.grad(kalman, argnums=(0, 1, 2))(*params(), ys)
        fwd = pb.compile(kalman)(*params(), ys)
    assert all(isinstance(x, da.Array) for x in (value, fwd, *grads, *g))
    assert len(grads[0].__dask_graph__()) < 30  # (one task, not a chain of thousands)
    value, fwd, grads, g = dask.compute(value, fwd, grads, g)
    want_value, want = vg(*params(), yn)
    np.testing.assert_allclose(value, want_value, rtol=1e-12)
    np.testing.assert_allclose(fwd, want_value, rtol=1e-12)
    for got in (grads, g):
        np.testing.assert_allclose(np.array(got), np.array(want), rtol=1e-12)


def test_gradients_equal_central_differences():
    yn, ys = observations(60, 16)
    grads = dask.compute(*pb.grad(kalman, argnums=(0, 1, 2))(*params(), ys))
    for k in range(3):
        def f(x, k=k):
            p = params()
            p[k] = x
            return kalman(*p, yn)
        fd = (f(np.asarray(PARAMS[k] + 1e-6)) - f(np.asarray(PARAMS[k] - 1e-6))) / 2e-6
        np.testing.assert_allclose(grads[k], fd, rtol=1e-6)


def test_an_unrolled_loop_runs_as_one_task():
    fn = unrolled()
    yn, ys = observations(200, 50)
    with dask.config.set(scheduler=refuse):
        value, grads = pb.value_and_grad(fn, argnums=(0, 1, 2))(*params(), ys)
        fwd = pb.compile(fn)(*params(), ys)
    assert len(value.__dask_graph__()) < 30  # (statement by statement: thousands)
    value, fwd, grads = dask.compute(value, fwd, grads)
    want_value, want = pb.value_and_grad(kalman, argnums=(0, 1, 2))(*params(), yn)
    np.testing.assert_allclose([value, fwd], [want_value] * 2, rtol=1e-12)
    np.testing.assert_allclose(np.array(grads), np.array(want), rtol=1e-12)


def test_a_loop_over_a_large_array_stays_chunked():
    """A few steps of gradient descent on a least-squares fit to ``LARGE`` rows: the
    gradient of the data is a Dask array in the data's chunks, never one task."""
    rows = LARGE + 4
    rng = np.random.default_rng(1)
    Xn, bn = rng.standard_normal((rows, 2)), rng.standard_normal(rows)

    def fit(w, X, b):
        for _ in range(5):
            w = w - 0.1 * (X.T @ (X @ w - b)) / X.shape[0]
        return np.mean((X @ w - b) ** 2)

    X, b = da.from_array(Xn, chunks=(rows // 4, 2)), da.from_array(bn, chunks=rows // 4)
    w = np.array([0.5, -0.5])
    with dask.config.set(scheduler=refuse):
        value, (gw, gX) = pb.value_and_grad(fit, argnums=(0, 1))(w, X, b)
    assert gX.numblocks == X.numblocks
    graph = dict(gX.__dask_graph__())
    assert not any("from-value" in str(k) or "quietly" in str(k) for k in graph)
    value, gw, gX = dask.compute(value, gw, gX)
    want_value, (want_w, want_X) = pb.value_and_grad(fit, argnums=(0, 1))(w, Xn, bn)
    np.testing.assert_allclose(value, want_value, rtol=1e-10)
    np.testing.assert_allclose(gw, want_w, rtol=1e-10)
    np.testing.assert_allclose(gX, want_X, rtol=1e-10, atol=1e-15)


def test_vjp_jvp_and_linearize_of_a_long_loop():
    yn, ys = observations(200, 50)
    ct = np.asarray(1.0)
    tangents = (np.asarray(1.0), np.asarray(0.5), np.asarray(0.25))
    with dask.config.set(scheduler=refuse):
        out, pull = pb.vjp(kalman, *params(), ys)
        grads = pull(ct)
        jvp = pb.jvp(kalman, (*params(), ys), (*tangents, da.ones_like(ys)))
        lin_out, tangent_of = pb.linearize(kalman, *params(), ys)
        lin = tangent_of(*tangents, da.ones_like(ys))
    assert all(len(x.__dask_graph__()) < 200 for x in (out, *grads, *jvp, lin))
    out, grads, jvp, lin_out, lin = dask.compute(out, grads, jvp, lin_out, lin)
    want_out, want_pull = pb.vjp(kalman, *params(), yn)
    want_jvp = pb.jvp(kalman, (*params(), yn), (*tangents, np.ones_like(yn)))
    close = lambda got, want: np.testing.assert_allclose(got, want, rtol=1e-12)
    close([out, lin_out, *jvp, lin], [want_out, want_out, *want_jvp, want_jvp[1]])
    for got, want in zip(grads, want_pull(ct)):
        close(got, want)


def test_a_loop_that_draws_stays_statement_by_statement():
    """Run as one task, the code would draw on stand-ins at the call and again at
    compute time: a loop that draws keeps the generator's order, as eager code does."""
    rs = np.random.RandomState(0)

    def noisy(a, ys):
        s = 0.0
        for t in range(ys.shape[0]):
            s = s + a * ys[t] * rs.randn()
        return s

    yn = np.arange(30.0)
    value, g = dask.compute(*pb.value_and_grad(noisy)(np.asarray(0.5), da.from_array(yn, 10)))
    noise = np.random.RandomState(0).randn(30)
    np.testing.assert_allclose([value, g], [0.5 * yn @ noise, yn @ noise], rtol=1e-12)
    assert rs.randn() == np.random.RandomState(0).randn(31)[-1]  # (30 draws, no more)


def test_dask_compute_gives_numpy_results():
    yn, ys = observations(200, 50)
    with pb.config.override(dask_compute=True):
        value, grads = pb.value_and_grad(kalman, argnums=(0, 1, 2))(*params(), ys)
    assert isinstance(value, np.ndarray) and isinstance(grads[0], np.ndarray)
    want_value, want = pb.value_and_grad(kalman, argnums=(0, 1, 2))(*params(), yn)
    np.testing.assert_allclose([value, *grads], [want_value, *want], rtol=1e-12)


def test_one_task_on_a_local_cluster_of_processes():
    """The task ships the generated function to a worker process (cloudpickle)."""
    distributed = pytest.importorskip("distributed")
    yn, ys = observations(200, 50)
    value, grads = pb.value_and_grad(kalman, argnums=(0, 1, 2))(*params(), ys)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        got = client.gather(client.compute([value, *grads]))
    want_value, want = pb.value_and_grad(kalman, argnums=(0, 1, 2))(*params(), yn)
    np.testing.assert_allclose(got, [want_value, *want], rtol=1e-12)
