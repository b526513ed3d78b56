"""The cache's hot path (a hit on all-array or all-Tensor arguments runs the variant's
``fast``) and nll's trace-time common case (``rt.nll_rows``): the same results, errors
and counts as the general paths."""

import numpy as np
import pytest

import pullback as pb
import pullback.nn.functional as F

RNG = np.random.default_rng(0)
LOGITS = RNG.standard_normal((6, 4)).astype(np.float32)


def ce(z, y):
    return F.cross_entropy(pb.as_tensor(z), pb.as_tensor(y))


def eager_ce_grad(z, y):
    t = pb.tensor(z, requires_grad=True)
    F.cross_entropy(t, pb.tensor(y)).backward()
    return t.grad.numpy()


@pytest.mark.parametrize("target", [[0, 1, 2, 3, 0, 1], [0, -100, 2, -100, 0, 1],
                                    [-100] * 6])
def test_nll_rows_matches_eager_with_ignored_targets(target):
    y = np.array(target)
    vg = pb.value_and_grad(ce)
    for _ in range(2):  # traced, then a hit
        value, grad = vg(LOGITS, y)
        np.testing.assert_allclose(grad, eager_ce_grad(LOGITS, y), rtol=1e-6, atol=1e-7)
        want = float(F.cross_entropy(pb.tensor(LOGITS), pb.tensor(y)))
        np.testing.assert_allclose(float(value), want, rtol=1e-6, equal_nan=True)


@pytest.mark.parametrize("bad", [4, -1])
def test_nll_rows_keeps_torchs_error_for_a_target_out_of_range(bad):
    vg = pb.value_and_grad(ce)
    vg(LOGITS, np.zeros(6, np.int64))
    y = np.zeros(6, np.int64)
    y[3] = bad
    with pytest.raises(IndexError, match=f"Target {bad} is out of bounds."):
        vg(LOGITS, y)


def test_a_guard_failing_on_the_hot_path_runs_the_next_variant():
    def f(x):
        return (x * 2).sum() if float(x.sum()) > 0 else (x * 3).sum()
    g = pb.value_and_grad(f)
    up, down = np.ones(3), -np.ones(3)
    for x, slope in [(up, 2), (down, 3), (up, 2), (down, 3), (down, 3)]:
        value, grad = g(x)
        assert float(value) == slope * x.sum() and np.all(grad == slope)
    info = g.cache.info
    assert (info.misses, info.hits, info.size) == (2, 3, 2) and len(g.cache.hot) == 1


def test_gradients_of_every_argument_are_arrays_0d_ones_too():
    vg = pb.value_and_grad(lambda a, s: (a * s).sum(), argnums=(0, 1))
    for _ in range(2):
        value, (ga, gs) = vg(np.arange(3.0), np.asarray(2.0))
        assert type(value) is np.ndarray and type(ga) is np.ndarray and type(gs) is np.ndarray
        assert gs.shape == () and float(gs) == 3.0


def test_evicted_keys_leave_the_hot_path():
    cf = pb.compile(lambda x: x * 2, maxsize=1)
    for n in (1, 2, 1, 2, 2):
        out = cf(np.ones(n))
        assert type(out) is pb.Tensor and out.shape == (n,)
    cache = cf.cache
    assert set(cache.hot) <= set(cache.entries) and cache.info.hits == 1


def test_compile_on_tensors_hits_return_tensors_of_the_outputs():
    cf = pb.compile(lambda x, y: (x + y, (x * y).sum()))
    a, b = pb.ones(3), pb.full((3,), 2.0)
    for _ in range(3):
        s, p = cf(a, b)
        assert s.tolist() == [3.0, 3.0, 3.0] and float(p) == 6.0
    assert cf.cache.info.hits == 2 and len(cf.cache.hot) == 1


def test_grad_computes_no_value_and_the_disk_cache_keeps_the_two_apart(tmp_path):
    def f(x):
        return (x * 2.0).sum()
    x = np.arange(3.0)
    with pb.config.override(cache_dir=str(tmp_path / "cache")):
        g, vg = pb.grad(f), pb.value_and_grad(f)
        assert g(x).tolist() == [2.0, 2.0, 2.0]
        value, grad = vg(x)
        assert float(value) == 6.0 and grad.tolist() == [2.0, 2.0, 2.0]
    assert "return None, g_x" in g.cache.variants()[0].module.source
    assert "return None" not in vg.cache.variants()[0].module.source


@pytest.mark.parametrize("mixed", [(np.ones(3), pb.ones(3)), (pb.ones(3), np.ones(3)),
                                   (np.ones(3), 2.0), (pb.ones(3), 2.0)])
def test_calls_mixing_kinds_take_the_long_way_and_keep_their_own_variants(mixed):
    cf = pb.compile(lambda x, y: x * y + 1)
    for args in (mixed, (np.ones(3), np.full(3, 2.0)), mixed, (pb.ones(3), pb.full((3,), 2.0))):
        out = cf(*args)
        y = args[1].numpy() if isinstance(args[1], pb.Tensor) else args[1]
        assert type(out) is pb.Tensor and out.tolist() == (np.ones(3) * y + 1).tolist()
    assert cf.cache.info.misses == 3 and cf.cache.info.hits == 1
    assert len(cf.cache.hot) == 2  # the all-array and all-Tensor keys


def test_a_hit_makes_its_result_as_tensor_make_does_in_inference_mode_too():
    cf = pb.compile(lambda x: (x * 2).sum())
    x = pb.ones(3)
    for mode in (False, True, False):
        with pb.inference_mode(mode):
            for _ in range(2):
                out = cf(x)
                assert float(out) == 6.0 and out.grad_fn is None and not out.requires_grad
                assert out.is_inference() == mode and out._version == 0
                assert type(out.numpy()) is np.ndarray and out.numpy().shape == ()
    out.add_(1)  # its own version counter
    assert out._version == 1 and cf(x)._version == 0


SCALE = 2.0


def scaled_mlp(w, b, x):
    return (pb.tanh(x @ w + b) * SCALE).sum()


def test_value_and_grad_of_a_params_tuple_misses_on_any_change_after_hits():
    """The hot path of ``value_and_grad(f, argnums=(0, 1))`` on arrays: a hit returns the
    value as an array and a tuple of gradients; a changed dtype, shape or class misses; a
    Tensor that requires grad among the arrays runs eagerly (its gradient keeps a graph);
    a changed global retraces."""
    global SCALE
    w, b, x = RNG.standard_normal((3, 2)), RNG.standard_normal(2), RNG.standard_normal((4, 3))
    vg = pb.value_and_grad(scaled_mlp, argnums=(0, 1))
    want = vg(w, b, x)
    for _ in range(2):
        value, grads = vg(w, b, x)
        assert type(value) is np.ndarray and type(grads) is tuple and len(grads) == 2
        np.testing.assert_allclose(value, want[0])
    assert vg.cache.info.hits == 2 and vg.cache.info.misses == 1
    vg(w.astype(np.float32), b.astype(np.float32), x.astype(np.float32))
    vg(w, b, x[:2])
    assert vg.cache.info.misses == 3
    t = pb.tensor(b, requires_grad=True)
    value, (gw, gb) = vg(w, t, x)
    assert gb.requires_grad and vg.cache.info.misses == 3  # eager: no variant
    SCALE = 3.0
    try:
        value, _ = vg(w, b, x)
    finally:
        SCALE = 2.0
    np.testing.assert_allclose(value, want[0] * 1.5)
