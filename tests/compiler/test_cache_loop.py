"""The one cache-and-guard loop behind pb.compile, pb.grad and pb.value_and_grad:
the same counters, the same retrace limit, the same warning and the same eager fallback."""

import gc
import warnings

import numpy as np
import pytest

import pullback as pb
from pullback import config

from . import doors
from .doors import via_compile, via_grad, via_value_and_grad


def scaled(x):
    """sum(x^2) * sum(x); stop_gradient(...).item() makes sum(x) a constant (a guard), so
    the gradient is 2 x sum(x), and the guard fails whenever sum(x) changes."""
    return (x * x).sum() * pb.stop_gradient(x.sum()).item()


def branchy(x):
    if x.sum() > 0:
        return (x * x).sum()
    return (x * x * x).sum()


DOORS = [via_compile, via_grad, via_value_and_grad]


def data(k):
    return np.array([1.0, 2.0 + k])


def check_scaled(x, value, grad):
    s = x.sum()
    if value is not None:
        assert value == pytest.approx((x * x).sum() * s)
    np.testing.assert_allclose(grad, 2 * x * s)


@pytest.mark.parametrize("door", DOORS)
def test_a_guard_that_always_fails_falls_back_to_eager_after_the_limit(door):
    fn, call = door(scaled)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning while it still retraces
        for k in range(config.recompile_limit):
            check_scaled(data(k), *call(data(k)))
    x = data(config.recompile_limit)
    with pytest.warns(UserWarning, match=r"scaled \(test_cache_loop.py:\d+\) was traced 8 "
                      r"times .*item\(\) of a traced value .* keeps failing\. Falling back "
                      r"to eager") as caught:
        check_scaled(x, *call(x))
    assert len(caught) == 1
    assert caught[0].filename == doors.__file__  # the warning points at the user's call
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # warned once: later calls run eagerly, quietly
        for k in range(config.recompile_limit + 1, config.recompile_limit + 3):
            check_scaled(data(k), *call(data(k)))
    info = fn.cache.info
    assert (info.hits, info.misses, info.recompiles, info.fallbacks, info.size) == \
        (0, config.recompile_limit, config.recompile_limit - 1, 3, 0)


@pytest.mark.parametrize("door", DOORS)
def test_repeated_calls_hit_and_a_flipped_branch_counts_one_recompile(door):
    fn, call = door(branchy)
    for x in ([1.0, 2.0], [3.0, 4.0], [-1.0, -2.0], [5.0, 6.0], [-3.0, -4.0]):
        x = np.array(x)
        value, grad = call(x)
        positive = x.sum() > 0
        np.testing.assert_allclose(grad, 2 * x if positive else 3 * x * x)
        if value is not None:
            assert value == pytest.approx((x ** 2 if positive else x ** 3).sum())
    info = fn.cache.info
    assert (info.hits, info.misses, info.recompiles, info.fallbacks, info.size) == (3, 2, 1, 0, 2)


def fall_back(fn, make_args):
    """Call ``fn`` until it has fallen back to eager; return the results of a
    compiled call (the first) and of an eager one (the last)."""
    first = fn(*make_args(0))
    with pytest.warns(UserWarning, match="Falling back to eager"):
        for k in range(1, config.recompile_limit + 1):
            fn(*make_args(k))
    last_args = make_args(config.recompile_limit + 1)
    last = fn(*last_args)
    assert fn.cache.info.fallbacks == 2
    return first, last, last_args


def kinds(r):
    """The result's structure, with each leaf's type (and shape and dtype for arrays)."""
    if isinstance(r, (tuple, list, dict)):
        items = r.values() if isinstance(r, dict) else r
        return type(r), [kinds(x) for x in items]
    if isinstance(r, (np.ndarray, pb.Tensor)):
        return type(r), tuple(r.shape), r.dtype
    return type(r)


@pytest.mark.parametrize("wrap", [np.asarray, pb.tensor], ids=["numpy", "tensor"])
def test_grad_fallback_returns_the_kinds_the_compiled_path_returns(wrap):
    first, last, _ = fall_back(pb.grad(scaled), lambda k: (wrap(data(k)),))
    assert kinds(last) == kinds(first)
    assert isinstance(last, np.ndarray if wrap is np.asarray else pb.Tensor)
    last = last.numpy() if wrap is pb.tensor else last
    check_scaled(data(config.recompile_limit + 1), None, last)


def test_grad_fallback_numpy_in_numpy_out():
    _, gx, (x,) = fall_back(pb.grad(scaled), lambda k: (data(k),))
    assert type(gx) is np.ndarray and gx.dtype == np.float64
    check_scaled(x, None, gx)


def test_compile_fallback_on_arrays_returns_tensors_as_its_compiled_path_does():
    def f(x, s):
        return x * 2 if float(x.sum()) > 0 else (x * s, x.sum(axis=0))  # numpy's names

    first, last, (x, s) = fall_back(pb.compile(f), lambda k: (np.full(2, 1.0 - k), 3.0))
    assert kinds(last) == (tuple, [(pb.Tensor, (2,), pb.float64), (pb.Tensor, (), pb.float64)])
    np.testing.assert_allclose(last[0].numpy(), x * s)


def test_value_and_grad_fallback_floats_in_floats_out():
    def cube_ish(a):
        return a * a * pb.stop_gradient(a).item()  # (the cut said: a guard)
    first, (value, grad), (a,) = fall_back(pb.value_and_grad(cube_ish),
                                           lambda k: (float(k + 1),))
    assert kinds((value, grad)) == kinds(first) == (tuple, [float, float])
    assert value == pytest.approx(a ** 3) and grad == pytest.approx(2 * a * a)


def test_value_and_grad_fallback_keeps_has_aux_and_tuple_argnums():
    def loss(w, x):
        s = pb.stop_gradient(x.sum()).item()
        return (w * w * x).sum() * s, {"sum": x.sum(), "n": 3}

    def make(k):
        return np.array([1.0, -2.0]), np.array([0.5, float(k)])
    vg = pb.value_and_grad(loss, argnums=(0, 1), has_aux=True)
    first, last, (w, x) = fall_back(vg, make)
    assert kinds(last) == kinds(first)
    (value, aux), (gw, gx) = last
    s = x.sum()
    assert float(value) == pytest.approx((w * w * x).sum() * s)
    assert float(aux["sum"]) == pytest.approx(s) and aux["n"] == 3
    np.testing.assert_allclose(gw, 2 * w * x * s)
    np.testing.assert_allclose(gx, w * w * s)


@pytest.mark.parametrize("make", [pb.grad, pb.value_and_grad, pb.compile])
def test_unhashable_static_arguments_are_refused_by_every_front_door(make):
    def f(x, options):
        return (x * x).sum()
    with pytest.raises(TypeError, match=r"f \(test_cache_loop.py:\d+\) got an unhashable "
                                        "static argument of type set"):
        make(f)(pb.ones(2), {"fast"})


@pytest.mark.parametrize("door", DOORS)
def test_a_captured_tensor_that_changes_shape_is_retraced(door):
    c = pb.ones(3)

    def f(x):
        return (x * c).sum() * c.sum()
    fn, call = door(f)
    x = np.ones(3)
    np.testing.assert_allclose(call(x)[1], np.full(3, 3.0))
    c.data = pb.full((1,), 2.0)
    np.testing.assert_allclose(call(x)[1], np.full(3, 4.0))
    assert (fn.cache.info.misses, fn.cache.info.recompiles) == (2, 1)


def test_the_cycle_collector_pauses_while_a_variant_is_built_and_only_then():
    """Full collections walk every live object, and a long trace makes many: paused
    while building, tracing time stays linear in the program's length."""
    seen = []

    def f(x):
        seen.append(gc.isenabled())
        if len(seen) == 2:
            raise ValueError("fails while tracing")
        return (x * x).sum()

    assert gc.isenabled()
    pb.grad(f)(np.ones(2))
    assert seen == [False] and gc.isenabled()
    with pytest.raises(ValueError, match="fails while tracing"):
        pb.grad(f)(np.ones(3))
    assert gc.isenabled()
    gc.disable()
    try:
        pb.grad(lambda x: (x * x).sum())(np.ones(2))
        assert not gc.isenabled()  # the user's choice is kept
    finally:
        gc.enable()


DATA = np.linspace(-1.0, 1.0, 5)


def objective(w, d):
    return ((w - d) ** 2).sum()


def test_a_grad_function_made_anew_in_a_loop_traces_once():
    """``for it in ...: g = pb.grad(lambda w: objective(w, DATA))``: one code object,
    the same globals: the new front door finds the last one's variant."""
    w = np.zeros(5)
    doors = []
    for _ in range(5):
        g = pb.grad(lambda w: objective(w, DATA))
        w = w - 0.1 * g(w)
        doors.append(g)
    assert doors[0].cache is doors[-1].cache
    info = doors[-1].cache.info
    assert (info.misses, info.hits) == (1, 4)
    np.testing.assert_allclose(w, DATA * (1 - 0.8 ** 5))


def test_a_closure_made_anew_sees_its_new_values():
    """Same code, same cell, new contents: the captured guard retraces; other cells
    (another call of the factory) are another cache."""
    x = np.array([1.0, 2.0])

    def run(scales):
        out = []
        for lam in scales:
            out.append(pb.grad(lambda w: lam * (w * w).sum())(x))  # noqa: B023 - called at once
        return out

    for lam, g in zip((1.0, 2.0, 2.0), run((1.0, 2.0, 2.0))):
        np.testing.assert_allclose(g, 2 * lam * x)

    def factory(k):
        return pb.compile(lambda t: (t * k).sum())

    a, b = factory(2.0), factory(3.0)
    assert a.cache is not b.cache
    t = pb.tensor(x)
    assert (a(t).item(), b(t).item()) == (6.0, 9.0)


def test_other_settings_and_reset_give_another_cache():
    f = lambda w: (w * w).sum()  # noqa: E731
    assert pb.grad(f).cache is pb.grad(f).cache
    assert pb.grad(f).cache is not pb.value_and_grad(f).cache
    assert pb.grad(f).cache is not pb.grad(f, has_aux=False, argnums=(0,)).cache
    assert pb.compile(f).cache is not pb.compile(f, maxsize=4).cache
    old = pb.grad(f).cache
    pb.compiler.reset()
    assert pb.grad(f).cache is not old
