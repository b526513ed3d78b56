"""pb.grad, pb.value_and_grad, pb.vjp, pb.jvp, pb.linearize and pb.compile over Dask
arrays: lazy results equal to numpy's, one trace per argument signature, nothing
computed behind the user's back; the Jacobian doors and vmap refuse them by name."""

import numpy as np
import pytest

import pullback as pb
from pullback.compiler.user_lines import TraceError

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


def test_control_flow_on_data_is_refused():
    Xn, yn = data(12, 2)
    X, y = da.from_array(Xn, chunks=5), da.from_array(yn, chunks=5)

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


# ------------------------------------------------------------ vjp, jvp, compile
def lazy(*arrays, chunks=5):
    return tuple(da.from_array(a, chunks=chunks) for a in arrays)


def close(got, want):
    """Dask results (computed here, outside the refuse scheduler) equal to numpy's."""
    assert isinstance(got, da.Array), type(got)
    np.testing.assert_allclose(got.compute(), want, rtol=1e-10)


def test_vjp_numpy_weights_and_dask_data():
    Xn, yn = data(13, 3, seed=6)
    X, ct = lazy(Xn, yn)
    w = np.linspace(-1.0, 1.0, 3)
    f = lambda w, X: np.tanh(X @ w)
    with dask.config.set(scheduler=refuse):
        out, pull = pb.vjp(f, w, X)
        by_dask, by_numpy = pull(ct), pull(yn)
    want_out, want_pull = pb.vjp(f, w, Xn)
    close(out, want_out)
    for got in (by_dask, by_numpy):
        for g, want in zip(got, want_pull(yn)):
            close(g, want)
    with dask.config.set(scheduler=refuse):
        pb.vjp(f, w, X)[1](ct)
    assert pb.vjp(f, w, X)[1].variant.traced is pull.variant.traced  # traced once


def test_vjp_over_pytrees_of_dask_arrays_with_aux():
    Xn, yn = data(11, 2, seed=7)
    X, y = lazy(Xn, yn, chunks=4)

    def f(params, batch):
        z = batch["X"] @ params[0] + params[1]
        return {"r": z - batch["y"], "z2": z * z}, np.sum(z)

    params = (np.array([0.5, -0.25]), 0.1)
    with dask.config.set(scheduler=refuse):
        out, pull, aux = pb.vjp(f, params, {"X": X, "y": y}, has_aux=True)
        cts = {"r": y, "z2": np.ones(11)}
        (gw, gb), gbatch = pull(cts)
    want_out, want_pull, want_aux = pb.vjp(f, params, {"X": Xn, "y": yn}, has_aux=True)
    (ww, wb), wbatch = want_pull({"r": yn, "z2": np.ones(11)})
    close(out["r"], want_out["r"])
    close(aux, want_aux)
    close(gw, ww)
    close(gb, wb)
    close(gbatch["X"], wbatch["X"])
    close(gbatch["y"], wbatch["y"])


def test_vjp_of_a_returned_argument_and_an_unreached_one():
    Xn, yn = data(9, 2, seed=8)
    X, y = lazy(Xn, yn)
    f = lambda X, y, w: (X, X @ w)
    with dask.config.set(scheduler=refuse):
        (out_X, _), pull = pb.vjp(f, X, y, np.ones(2))
        gX, gy, gw = pull((X, y))
    assert out_X is X
    close(gX, Xn + np.outer(yn, np.ones(2)))
    close(gy, np.zeros(9))
    close(gw, Xn.T @ yn)


def test_vjp_with_dask_compute_and_refused_cotangents():
    Xn, yn = data(8, 2)
    X, = lazy(Xn)
    with pb.config.override(dask_compute=True):
        out, pull = pb.vjp(lambda X: np.sin(X), X)
        g, = pull(np.ones((8, 2)))
    assert isinstance(out, np.ndarray) and isinstance(g, np.ndarray)
    np.testing.assert_allclose(g, np.cos(Xn), rtol=1e-10)
    _, pull = pb.vjp(lambda X: np.sin(X), X)
    with pytest.raises(TypeError, match="no autograd graph"):
        pull(pb.ones(8, 2, requires_grad=True))
    with pytest.raises(RuntimeError, match=r"shape \(8,\)"):
        pull(np.ones(8))


def test_jvp_and_linearize_mixed_and_over_a_tuple():
    Xn, yn = data(14, 3, seed=9)
    X, tX = lazy(Xn, np.cos(Xn))
    w, tw = np.linspace(0.2, 0.6, 3), np.ones(3)
    f = lambda params, X: np.tanh(X @ params[0]) * params[1]
    with dask.config.set(scheduler=refuse):
        out, t = pb.jvp(f, ((w, 2.0), X), ((tw, 1.0), tX))
        lin_out, f_jvp = pb.linearize(f, (w, 2.0), X)
        t_lin = f_jvp((tw, 1.0), np.cos(Xn))
    with dask.config.set(scheduler=refuse):
        pb.jvp(f, ((w, 2.0), X), ((tw, 1.0), tX))
    want_out, want_t = pb.jvp(f, ((w, 2.0), Xn), ((tw, 1.0), np.cos(Xn)))
    info = pb.compiler.forward.program_of(f, False).cache.info
    assert (info.misses, info.hits) == (2, 1)  # Dask's variant beside numpy's, traced once
    close(out, want_out)
    close(t, want_t)
    close(lin_out, want_out)
    close(t_lin, want_t)


def test_jvp_numpy_primals_with_a_dask_tangent_is_refused():
    w = np.ones(3)
    with pytest.raises(TypeError, match="tangent is a dask array but no primal is"):
        pb.jvp(np.sin, (w,), (da.ones(3, chunks=2),))


def test_compile_returns_dask_arrays_forward_only():
    Xn, yn = data(15, 3, seed=10)
    X, y = lazy(Xn, yn, chunks=6)
    w = np.array([0.3, -0.1, 0.2])
    predict = pb.compile(lambda w, X, y: {"p": 1 / (1 + np.exp(-(X @ w))), "y": y,
                                          "n": np.sum(y > 0.5)})
    with dask.config.set(scheduler=refuse):
        got = predict(w, X, y)
        predict(w, X, y)
    assert got["y"] is y
    close(got["p"], 1 / (1 + np.exp(-(Xn @ w))))
    close(got["n"], np.sum(yn > 0.5))
    assert isinstance(predict(w, Xn, yn)["p"], pb.Tensor)  # numpy: Tensors, as before
    assert (predict.cache.info.misses, predict.cache.info.hits) == (2, 1)
    with pb.config.override(dask_compute=True):
        assert isinstance(predict(w, X, y)["p"], np.ndarray)
    with pytest.raises(TypeError, match="requires grad beside Dask arrays.*pb.grad"):
        predict(pb.tensor(w, requires_grad=True), X, y)
    with pb.no_grad(), dask.config.set(scheduler=refuse):
        p = predict(pb.tensor(w, requires_grad=True), X, y)["p"]
    close(p, 1 / (1 + np.exp(-(Xn @ w))))


@pytest.mark.parametrize("door", ["jacrev", "jacfwd", "hessian"])
def test_jacobians_refuse_dask_arrays_by_name(door):
    Xn, yn = data(6, 2)
    X, = lazy(Xn)
    with dask.config.set(scheduler=refuse), \
            pytest.raises(TypeError, match=rf"{door}: .*dask arrays \(X\) are not arguments "
                                           rf"of {door}.*pb.vjp"):
        getattr(pb, door)(lambda w, X: np.sum(np.tanh(X @ w)))(np.ones(2), X)


def test_vmap_refuses_dask_arrays_by_name():
    Xn, _ = data(6, 2)
    X, = lazy(Xn)
    f = lambda w, X: np.tanh(X @ w)
    for axes, args in (((None, 0), (np.ones(2), X)), ((0, None), (np.ones((3, 2)), X))):
        with dask.config.set(scheduler=refuse), \
                pytest.raises(TypeError, match=r"vmap: .*dask arrays \(X\) are not arguments"):
            pb.vmap(f, in_axes=axes)(*args)


def test_a_dask_array_read_from_a_closure_is_refused_not_computed():
    X, y = lazy(*data(10, 3))
    losses = [lambda w: np.sum(X * w), lambda w: np.sum((X @ w - y) ** 2)]
    for loss in losses:
        with dask.config.set(scheduler=refuse), \
                pytest.raises(TypeError, match="gave a dask array.*pass dask arrays as arguments"):
            pb.grad(loss)(np.ones(3))


# ------------------------------------------------- what stays lazy, what is refused
def lazy_and_numpy(f, door, *arrays, rtol=1e-10):
    """``door(f)`` on Dask arrays (nothing computed at the call) equals it on numpy's."""
    with dask.config.set(scheduler=refuse):
        got = door(f)(*[da.from_array(a, chunks=max(1, len(a) // 2)) for a in arrays])
    want = door(f)(*arrays)
    got, want = (got, want) if isinstance(got, tuple) else ((got,), (want,))
    for g, w in zip(dask.compute(*got), want):
        w = w.numpy() if isinstance(w, pb.Tensor) else w
        np.testing.assert_allclose(g, w, rtol=rtol)


@pytest.mark.parametrize("door", [pb.value_and_grad, pb.compile])
def test_runtime_helpers_keep_dask_arrays_lazy(door):
    """rt.logsumexp (c_order, sum_of: no .flags, no np.asarray), rt.erf (a numpy
    kernel: chunk by chunk), np.linalg.vector_norm (which Dask lacks: one task)."""
    import scipy.special

    x = np.linspace(-1.5, 2.0, 9)
    lazy_and_numpy(lambda x: scipy.special.logsumexp(x) + np.sum(scipy.special.erf(x))
                   + np.linalg.norm(x), door, x)


def test_item_writes_and_their_gradients_stay_lazy():
    """b[idx] = v of a Dask value into a numpy buffer (rt.index_put), and the gradients
    of slicing and of fancy indexing (rt.zeros_set, rt.index_add): one task each."""
    def f(x):
        b = np.ones(3)
        b[[0, 0, 1]] = np.tanh(x)[:3]
        return np.sum(b * x[:3]) + np.sum(x[[1, 1, 4]] ** 2)

    lazy_and_numpy(f, pb.value_and_grad, np.linspace(-1.0, 1.0, 6))


def test_a_scalar_where_in_a_loop_stays_lazy():
    """where between 0-d values prints as ``x if c else y`` for numpy; for Dask ``c``
    is a 0-d Dask array, whose truth would compute it: np.where there."""
    def f(x):
        return np.interp(0.3, np.array([0.0, 0.5, 1.0]), x[:3]) + np.sum(x * x)

    lazy_and_numpy(f, pb.value_and_grad, np.linspace(0.1, 0.9, 4))


def refused(f, *arrays, match):
    x = [da.from_array(a, chunks=2) for a in arrays]
    for door in (pb.value_and_grad, pb.compile):
        with dask.config.set(scheduler=refuse), pytest.raises(TraceError, match=match):
            door(f)(*x)


def test_a_branch_on_the_data_is_refused_at_trace_time():
    def f(x):  # (a pb.cond: generated code would run `if t5:`)
        return pb.cond(np.sum(x) > 0.1, lambda x: x * 2.0, lambda x: x - 1.0, x).sum()

    refused(f, np.ones(4), match=r"a branch chosen by a traced value .*np.sum\(x\) > 0.1.*"
                                 r"argument 'x', a Dask array")

    def g(x):  # (an if in a loop: the source pass makes a branch of it)
        h = x * 0.5
        for r in np.stack([x, x * 2.0]):
            if np.sum(h) > 0.5:
                return h * r
            h = h + 0.1
        return h

    refused(lambda x: np.sum(g(x)), np.ones(4), match=r"if np.sum\(h\) > 0.5")


def test_a_while_loop_on_the_data_is_refused_and_one_on_numpy_values_runs():
    def f(x):
        y, n = pb.while_loop(lambda s: np.sum(np.abs(s[0])) < 6.0,
                             lambda s: (s[0] * 1.3, s[1] + 1), (x, 0))
        return np.sum(y) * n

    refused(f, np.ones(4), match=r"pb.while_loop whose condition .*argument 'x'")

    def counted(w, x):  # (the condition reads the numpy weight only: lazy)
        v, _ = pb.while_loop(lambda s: s[1] < 3, lambda s: (s[0] * 1.5, s[1] + 1), (w, 0))
        return np.sum(v * x * x)

    with dask.config.set(scheduler=refuse):
        g = pb.grad(counted, argnums=1)(np.ones(4), da.from_array(np.arange(4.0), chunks=2))
    np.testing.assert_allclose(g.compute(), 2 * 1.5 ** 3 * np.arange(4.0))


def test_odeint_of_the_data_is_refused_at_trace_time():
    """odeint's field runs in Python (a custom Function): refused, naming it."""
    from pullback.scipy.integrate import odeint

    def f(x):
        y = odeint(lambda y, t, W: -W * y, np.array([0.5, -0.3]), np.array([0.0, 0.4]),
                   x[:2])
        return np.sum(y)

    refused(f, np.ones(4), match=r"custom autograd.Function \(Odeint\).*odeint\(")
