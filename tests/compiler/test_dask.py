"""pb.grad and pb.value_and_grad over Dask arrays: lazy results equal to numpy's,
one trace per argument signature, nothing computed behind the user's back."""

import numpy as np
import pytest

import pullback as pb
from pullback.compiler.tracer import TraceError

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")


def refuse(*args, **kwargs):
    raise AssertionError("a Dask array was computed inside pullback")


def mse(w, X, y):
    return np.mean((np.tanh(X @ w) - y) ** 2)


def logistic(w, b, X, y):
    z = X @ w + b
    return np.mean(np.logaddexp(0.0, z) - y * z)


def mlp(params, X, y):
    W1, b1, w2 = params
    h = np.tanh(X @ W1 + b1)
    return np.sum((h @ w2 - y) ** 2) / X.shape[0] + 1e-3 * np.sum(W1 * W1)


def data(rows, cols, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((rows, cols)), (rng.random(rows) > 0.5).astype(float)


@pytest.mark.parametrize("rows, cols, chunks", [(10, 3, 4), (17, 5, 5), (64, 2, 64),
                                                (33, 4, (7, 4))])
def test_gradients_equal_numpys(rows, cols, chunks):
    """Ragged last chunks, chunks on both axes; the mean reduces the chunked axis."""
    Xn, yn = data(rows, cols)
    w = np.linspace(-0.5, 0.5, cols)
    X = da.from_array(Xn, chunks=chunks)
    y = da.from_array(yn, chunks=chunks if isinstance(chunks, int) else chunks[0])
    with dask.config.set(scheduler=refuse):
        value, g = pb.value_and_grad(mse)(w, X, y)
    assert isinstance(value, da.Array) and isinstance(g, da.Array)
    want_value, want = pb.value_and_grad(mse)(w, Xn, yn)
    np.testing.assert_allclose(g.compute(), want, rtol=1e-10)
    np.testing.assert_allclose(value.compute(), want_value, rtol=1e-10)


def test_a_tuple_of_numpy_targets_keeps_the_gradients_lazy():
    """argnums=(0,) on a numpy weight: its gradient and the value depend on the Dask
    data, so they stay Dask arrays (the all-numpy fast path must not convert them)."""
    Xn, yn = data(12, 3)
    X, y = da.from_array(Xn, chunks=5), da.from_array(yn, chunks=5)
    with dask.config.set(scheduler=refuse):
        value, (g,) = pb.value_and_grad(mse, argnums=(0,))(np.ones(3), X, y)
    assert isinstance(value, da.Array) and isinstance(g, da.Array)
    np.testing.assert_allclose(g.compute(), pb.grad(mse)(np.ones(3), Xn, yn), rtol=1e-10)


def test_logistic_regression_and_gradient_of_the_data():
    Xn, yn = data(50, 4, seed=1)
    w, b = np.full(4, 0.1), 0.2
    X, y = da.from_array(Xn, chunks=16), da.from_array(yn, chunks=16)
    with dask.config.set(scheduler=refuse):
        gw, gb, gX = pb.grad(logistic, argnums=(0, 1, 2))(w, b, X, y)
    want = pb.grad(logistic, argnums=(0, 1, 2))(w, b, Xn, yn)
    assert isinstance(gX, da.Array) and gX.chunks == X.chunks
    for got, expected in zip(dask.compute(gw, gb, gX), want):
        np.testing.assert_allclose(got, expected, rtol=1e-10)


def test_mlp_with_pytree_parameters():
    Xn, yn = data(40, 3, seed=2)
    rng = np.random.default_rng(3)
    params = [rng.standard_normal((3, 5)), np.zeros(5), rng.standard_normal(5)]
    X, y = da.from_array(Xn, chunks=9), da.from_array(yn, chunks=9)
    with dask.config.set(scheduler=refuse):
        got = pb.grad(mlp)(params, X, y)
    want = pb.grad(mlp)(params, Xn, yn)
    for a, b in zip(dask.compute(*got), want):
        np.testing.assert_allclose(a, b, rtol=1e-10)


def test_training_loop_traces_once_and_numpy_variant_coexists():
    Xn, yn = data(30, 3, seed=4)
    X, y = da.from_array(Xn, chunks=8), da.from_array(yn, chunks=8)
    step = pb.grad(logistic)
    w, wn = np.zeros(3), np.zeros(3)
    with pb.config.override(dask_compute=True):
        for _ in range(5):
            w = w - 0.5 * step(w, 0.0, X, y)
    for _ in range(5):
        wn = wn - 0.5 * step(wn, 0.0, Xn, yn)
    assert isinstance(w, np.ndarray)
    np.testing.assert_allclose(w, wn, rtol=1e-10)
    info = step.cache.info
    assert (info.misses, info.size, info.hits) == (2, 2, 8)


def test_dask_compute_computes_value_and_gradient_together():
    Xn, yn = data(12, 2)
    X, y = da.from_array(Xn, chunks=5), da.from_array(yn, chunks=5)
    with pb.config.override(dask_compute=True):
        value, g = pb.value_and_grad(mse)(np.ones(2), X, y)
    assert not isinstance(value, da.Array) and isinstance(g, np.ndarray)
    np.testing.assert_allclose(g, pb.grad(mse)(np.ones(2), Xn, yn), rtol=1e-10)


def test_unknown_chunk_sizes_are_refused_by_name():
    Xn, yn = data(12, 2)
    X, y = da.from_array(Xn, chunks=5), da.from_array(yn, chunks=5)
    kept = X[y > 0.5]
    with pytest.raises(ValueError, match=r"'X'.*unknown chunk sizes.*compute_chunk_sizes"):
        pb.grad(mse)(np.ones(2), kept, y[y > 0.5])


def test_other_doors_and_control_flow_are_refused():
    Xn, yn = data(12, 2)
    X, y = da.from_array(Xn, chunks=5), da.from_array(yn, chunks=5)
    with pytest.raises(TypeError, match=r"compile: .*dask arrays \(X, y\)"):
        pb.compile(mse)(np.ones(2), X, y)

    def branchy(w, X, y):
        loss = mse(w, X, y)
        return loss * 2 if loss > 1 else loss

    with dask.config.set(scheduler=refuse), pytest.raises(TraceError, match="Python value"):
        pb.grad(branchy)(np.ones(2), X, y)


def test_mixing_libraries_is_refused_by_name():
    class FakeCupy:  # a type from cupy's module: what the check reads
        shape, dtype = (12,), np.dtype(float)

    FakeCupy.__module__ = "cupy._core.core"
    Xn, _ = data(12, 2)
    with pytest.raises(TypeError, match=r"different libraries \(cupy: y; dask: X\)"):
        pb.grad(mse)(np.ones(2), da.from_array(Xn, chunks=5), FakeCupy())


def test_on_a_local_cluster_of_two_processes():
    distributed = pytest.importorskip("distributed")
    Xn, yn = data(40, 3, seed=5)
    X, y = da.from_array(Xn, chunks=10), da.from_array(yn, chunks=10)
    g = pb.grad(logistic)(np.zeros(3), 0.0, X, y)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        got = client.compute(g).result()
    np.testing.assert_allclose(got, pb.grad(logistic)(np.zeros(3), 0.0, Xn, yn), rtol=1e-10)


def test_cupy_is_skipped_without_a_device():
    cupy = pytest.importorskip("cupy", reason="cupy is not installed (no GPU here)")
    x = cupy.ones(3)
    np.testing.assert_allclose(cupy.asnumpy(pb.grad(lambda x: np.sum(x * x))(x)), 2.0)


def test_neither_the_trace_nor_the_graph_holds_data_sized_arrays():
    """The trace keeps large values by shape only (one 8 MB value alive at a time), and
    the mean's gradient, np.full((n,), g), is a Dask array, not a numpy one in the graph."""
    import pickle
    import tracemalloc

    rows = 10 ** 6
    X = da.ones((rows, 4), chunks=(250_000, 4))
    y = da.zeros(rows, chunks=250_000)
    tracemalloc.start()
    try:
        g = pb.grad(logistic)(np.zeros(4), 0.0, X, y)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 3 * rows * 8, peak
    assert len(pickle.dumps(dict(g.__dask_graph__()))) < rows
    np.testing.assert_allclose(g.compute(), np.full(4, 0.5))
