"""Captured values are guarded: rebinding a global, a closure cell, ``self.W`` or an
argument's attribute makes the next call retrace (as torch.compile does), through the
one cache loop of every front door; a write into a captured array is seen; unchanged
captured values keep their variant. Every result is checked against the function run
eagerly on the current values (and gradients against float64 central differences)."""

import functools
import sys
import threading
import types
import warnings

import numpy as np
import pytest

import pullback as pb
from pullback import config

from .doors import via_compile, via_grad, via_value_and_grad, via_vjp

DOORS = [via_compile, via_grad, via_value_and_grad, via_vjp]
X = np.array([0.5, -1.0, 2.0])


def fd_grad(f, x, eps=1e-6):
    """Central finite differences of the numpy function ``f`` at float64 ``x``."""
    x = np.asarray(x, np.float64)
    g = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e.flat[i] = eps
        g.flat[i] = (f(x + e) - f(x - e)) / (2 * eps)
    return g


def agrees(call, f, x=X):
    """``call(x)`` against ``f`` run eagerly on numpy now, and its finite differences."""
    value, grad = call(x)
    if value is not None:
        assert value == pytest.approx(float(f(x)), rel=1e-12)
    np.testing.assert_allclose(grad, fd_grad(f, x), rtol=1e-6, atol=1e-8)


def after_each(call, f, *changes, x=X):
    """``call`` agrees with ``f`` first, then after each change (a function of nothing)."""
    agrees(call, f, x)
    for change in changes:
        change()
        agrees(call, f, x)


def rebind(name, value):
    """A change: this module's global ``name`` rebound to ``value``."""
    return lambda: globals().__setitem__(name, value)


def write(array, index, values):
    """A change: ``array[index] = values``, in place."""
    return lambda: array.__setitem__(index, values)


def counts(fn):
    info = fn.cache.info
    return info.hits, info.misses, info.recompiles, info.fallbacks


@pytest.fixture(autouse=True)
def restore_captured():
    """Tests rebind this module's globals and write into them: each starts afresh."""
    saved = {k: v for k, v in globals().items() if k.isupper()}
    arrays = {k: (v.shape, v.copy()) for k, v in saved.items() if isinstance(v, np.ndarray)}
    lists = {k: list(v) for k, v in saved.items() if isinstance(v, list)}
    attrs = {k: dict(vars(v)) for k, v in saved.items()
             if isinstance(v, (Model, types.SimpleNamespace, types.ModuleType))}
    yield
    globals().update(saved)
    for k, (shape, data) in arrays.items():
        saved[k].shape = shape
        saved[k][...] = data
    for k, items in lists.items():
        saved[k][:] = items
    for k, d in attrs.items():
        vars(saved[k]).update(d)


# ---------------------------------------------------------------- the brief's two cases
W = np.ones((3,))


def tanh_w(x):
    return (np.tanh(x * W)).sum()


def test_a_rebound_global_array_retraces_under_grad():
    global W
    x = np.array([1., 2., 3.])
    g = pb.grad(tanh_w)
    g(x)
    W = np.full(3, 2.0)
    np.testing.assert_allclose(g(x), pb.grad(lambda x: np.tanh(x * W).sum())(x), rtol=1e-14)
    np.testing.assert_allclose(g(x), fd_grad(tanh_w, x), rtol=1e-6)
    assert counts(g) == (1, 2, 1, 0)


class M:
    def __init__(s):
        s.W = np.ones(3)

    @pb.compile
    def __call__(s, x):
        return (x * s.W).sum()


def test_a_rebound_attribute_of_self_retraces_a_compiled_method():
    m = M()
    xt = pb.tensor([1., 2., 3.], requires_grad=True)
    assert m(xt).item() == 6
    m.W = np.full(3, 5.)
    out = m(xt)
    assert out.item() == 30
    out.backward()
    np.testing.assert_array_equal(xt.grad.numpy(), np.full(3, 5.))
    m.W[:] = 7.  # a write into the new array: read by reference, no retrace
    assert m(xt).item() == 42
    assert counts(M.__call__) == (1, 2, 1, 0)


# ---------------------------------------------------------------- what is captured
def make_scaled():
    s = 1.5

    def f(x):
        return (np.sin(x) * s).sum()

    def set_s(value):
        nonlocal s
        s = value
    return f, set_s


@pytest.mark.parametrize("door", DOORS)
def test_a_closure_cell_rebound_by_nonlocal_retraces(door):
    f, set_s = make_scaled()
    fn, call = door(f)
    after_each(call, f, lambda: set_s(-0.25), lambda: None)
    assert counts(fn) == (1, 2, 1, 0)


LAM = 0.1


def ridge(x):
    return (x * x).sum() * LAM + np.cos(x).sum()


@pytest.mark.parametrize("door", DOORS)
def test_a_global_float_hyperparameter_rebound_retraces(door):
    fn, call = door(ridge)
    # an equal float that is another object keeps its variant; 0.1 again: the first one's
    after_each(call, ridge, rebind("LAM", 2.5), rebind("LAM", float("2.5")), rebind("LAM", 0.1))
    assert counts(fn) == (2, 2, 1, 0)


WT = pb.tensor([1.0, 2.0, 3.0], dtype=pb.float64)


def times_tensor(x):
    return (x * WT).sum()


@pytest.mark.parametrize("door", DOORS)
def test_a_global_tensor_rebound_retraces(door):
    fn, call = door(times_tensor)
    after_each(call, lambda x: (x * WT.numpy()).sum(),
               rebind("WT", pb.tensor([-4.0, 0.5, 1.0], dtype=pb.float64)))
    assert counts(fn)[1:] == (2, 1, 0)


def test_a_rebound_global_tensor_that_requires_grad_gets_its_gradient():
    global WT
    cf = pb.compile(times_tensor)
    x = pb.tensor(X)
    for w in ([1.0, 2.0, 3.0], [5.0, 6.0, 7.0]):
        WT = pb.tensor(w, dtype=pb.float64, requires_grad=True)
        out = cf(x)
        assert out.item() == pytest.approx((X * w).sum())
        out.backward()
        np.testing.assert_array_equal(WT.grad.numpy(), X)
    assert cf.cache.info.misses == 2


class Settings:
    def __init__(self):
        self.scale = 2.0
        self.shift = np.array([0.0, 1.0, -1.0])
        self.calls = 0  # never read by the traced function


def affine_loss(x, cfg):
    return (np.tanh(x * cfg.scale + cfg.shift)).sum()


@pytest.mark.parametrize("door", [via_grad, via_value_and_grad])
def test_an_attribute_of_an_object_argument_rebound_retraces(door):
    cfg = Settings()
    g = pb.grad(affine_loss) if door is via_grad else pb.value_and_grad(affine_loss)

    def check():
        got = g(X, cfg)
        grad = got[1] if door is via_value_and_grad else got
        np.testing.assert_allclose(grad, fd_grad(lambda x: affine_loss(x, cfg), X),
                                   rtol=1e-6)
    check()
    cfg.calls += 1  # an attribute the function never reads: no retrace
    check()
    cfg.scale = -0.5
    check()
    cfg.shift = np.array([2.0, 0.0, 0.0])
    check()
    assert counts(g) == (1, 3, 2, 0)


def test_an_attribute_of_an_object_argument_under_compile():
    cfg = Settings()
    cf = pb.compile(affine_loss)
    x = pb.tensor(X)
    assert cf(x, cfg).item() == pytest.approx(affine_loss(X, cfg))
    cfg.scale = 3.0
    assert cf(x, cfg).item() == pytest.approx(affine_loss(X, cfg))
    other = Settings()  # another instance: another cache key, its own attributes
    assert cf(x, other).item() == pytest.approx(affine_loss(X, other))
    assert cf.cache.info.misses == 3


class Net:
    scale = 2.0  # a class attribute

    def __init__(self):
        self.w = np.array([1.0, -2.0, 0.5])

    @property
    def weight(self):
        return self.w * self.scale

    def loss(self, x):
        return np.tanh(x * self.weight).sum()


def test_a_class_attribute_and_a_property_are_guarded():
    net = Net()
    _, call = via_grad(net.loss)  # a bound method: its instance is captured
    try:
        after_each(call, net.loss, lambda: setattr(Net, "scale", -1.0),
                   lambda: setattr(net, "scale", 0.5),  # hides the class's
                   lambda: setattr(net, "w", np.array([3.0, 1.0, 1.0])))
    finally:
        Net.scale = 2.0


class Scaled:
    def __init__(self):
        self.w = np.array([1.0, 2.0, -1.0])
        self.k = 2.0

    def __call__(self, x):
        return (np.sin(x * self.w)).sum() * self.k


@pytest.mark.parametrize("door", DOORS)
def test_a_callable_object_given_to_a_front_door_has_its_attributes_guarded(door):
    model = Scaled()
    fn, call = door(model)
    after_each(call, model, lambda: setattr(model, "k", -1.0),
               lambda: setattr(model, "w", np.array([0.5, 0.5, 0.5])))
    assert counts(fn) == (0, 3, 2, 0)
    line = Scaled.__call__.__code__.co_firstlineno + 1
    assert fn.cache.variants()[-1].traced.captured.describe() == [
        f"that self.{name} is unchanged since it was traced (read at "
        f"test_captured_guards.py:{line} (return (np.sin(x * self.w)).sum() * self.k))"
        for name in ("k", "w")]


CFG = types.ModuleType("settings_module")  # a user module: entered for what is named
CFG.__file__ = __file__
CFG.lam = 0.5
NS = types.SimpleNamespace(shift=np.array([1.0, 2.0, 3.0]))  # a bag of settings


def reads_a_module(x):
    return (x * x).sum() * CFG.lam + (x * NS.shift).sum()


def test_an_attribute_of_a_user_module_and_of_a_namespace():
    fn, call = via_value_and_grad(reads_a_module)
    after_each(call, reads_a_module, lambda: setattr(CFG, "lam", -2.0),
               lambda: setattr(NS, "shift", np.zeros(3)))
    assert counts(fn) == (0, 3, 2, 0)


def test_inspect_lists_the_captured_guards():
    info = pb.compiler.inspect(pb.compile(ridge), pb.tensor(X))
    assert info.guards == ["that global LAM is unchanged since it was traced (read at "
                           f"test_captured_guards.py:{ridge.__code__.co_firstlineno + 1} "
                           "(return (x * x).sum() * LAM + np.cos(x).sum()))"]


# ---------------------------------------------------------------- writes into arrays
WD = np.array([1.0, 2.0, 3.0])


def direct(x):
    return (np.sin(x * WD)).sum()


def derived(x):
    return (x * pb.tensor(WD)).sum() + (x * np.tanh(WD)).sum()


def plain_derived(x):
    return (x * WD).sum() + (x * np.tanh(WD)).sum()


@pytest.mark.parametrize("door", DOORS)
def test_a_write_into_a_captured_array_is_seen(door):
    """``x * WD`` reads the array itself on every call (no retrace); ``pb.tensor(WD)``
    and ``np.tanh(WD)`` were computed while tracing, so a write into WD retraces."""
    fn_direct, call_direct = door(direct)
    fn_derived, call_derived = door(derived)
    changes = write(WD, slice(None), [-2.0, 0.5, 4.0]), write(WD, 1, 9.0)
    after_each(call_direct, direct, *changes)
    WD[:] = [1.0, 2.0, 3.0]
    after_each(call_derived, plain_derived, *changes)
    assert counts(fn_direct) == (2, 1, 0, 0)
    assert counts(fn_derived) == (0, 3, 2, 0)


# ---------------------------------------------------------------- partials
PW = np.array([1.0, -1.0, 0.5])


def partial_loss(x, w, lam=1.0):
    return (np.sin(x * w)).sum() * lam + (x * PW).sum()


@pytest.mark.parametrize("door", DOORS)
def test_a_partial_keyword_rebound_and_the_global_its_function_reads(door):
    w = np.array([2.0, 0.5, 1.0])
    p = functools.partial(partial_loss, w=w, lam=1.0)
    fn, call = door(p)
    after_each(call, p,
               lambda: p.keywords.__setitem__("lam", -3.0),  # a partial's keywords: a dict
               rebind("PW", np.array([0.0, 2.0, 2.0])),  # the global its function reads
               write(w, slice(None), [1.0, 1.0, -1.0]))  # a bound argument the code reads
    assert counts(fn) == (1, 3, 2, 0)


# ---------------------------------------------------------------- shapes and helpers
WS = np.array([2.0])


def broadcast(x):
    return (x * WS).sum()


@pytest.mark.parametrize("door", DOORS)
def test_a_captured_array_whose_shape_changes_retraces(door):
    fn, call = door(broadcast)
    # then the same array takes another shape: the result is a matrix's sum
    after_each(call, broadcast, rebind("WS", np.array([1.0, 2.0, 3.0])),
               lambda: setattr(WS, "shape", (3, 1)))
    assert counts(fn)[1:] == (3, 2, 0)


ALPHA = 0.5


def leaky(v):
    return np.where(v > 0, v, v * ALPHA)


def uses_helper(x):
    return (leaky(x) ** 2).sum() + sum([x[i] * ALPHA for i in range(2)])


@pytest.mark.parametrize("door", DOORS)
def test_a_global_read_by_a_global_helper_or_a_comprehension_retraces(door):
    fn, call = door(uses_helper)
    after_each(call, uses_helper, rebind("ALPHA", 0.01))
    assert counts(fn)[1:] == (2, 1, 0)


LAYERS = [np.array([1.0, 2.0, 0.5]), np.array([0.5, 0.5, -1.0])]


class Model:
    def __init__(self):
        self.layers = [np.ones(3), np.full(3, 2.0)]
        self.bias = 0.5

    def layer(self, h, k):
        return np.tanh(h * self.layers[k] + self.bias)


MODEL = Model()


def stacked(x):
    h = x
    for w in LAYERS:
        h = np.tanh(h * w)
    return MODEL.layer(h, 1).sum()


@pytest.mark.parametrize("door", DOORS)
def test_rebinding_inside_a_list_and_a_global_object_and_its_method(door):
    fn, call = door(stacked)
    after_each(call, stacked,
               write(LAYERS, 1, np.array([2.0, -2.0, 1.0])),  # an element of a global list
               lambda: setattr(MODEL, "bias", -1.0),  # read by a global object's method
               lambda: setattr(MODEL, "layers", [np.ones(3), np.zeros(3) + 3.0]))
    assert counts(fn)[1:] == (4, 3, 0)


# ---------------------------------------------------------------- the retrace limit
STEP = 0.0
BIG = np.full(5, 1234.5)


def stepped(x):
    return (x * BIG).sum() * STEP + (x * x).sum()


@pytest.mark.parametrize("door", DOORS)
def test_the_retrace_limit_warns_once_names_the_capture_then_runs_eagerly(door):
    fn, call = door(stepped)
    x = np.ones(5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning while it still retraces
        after_each(call, stepped, *[rebind("STEP", float(k))
                                    for k in range(1, config.recompile_limit)], x=x)
    rebind("STEP", 99.0)()
    with pytest.warns(UserWarning) as caught:
        agrees(call, stepped, x)
    assert len(caught) == 1
    text = str(caught[0].message)
    assert f"was traced {config.recompile_limit} times" in text
    assert "that global STEP is unchanged since it was traced (read at " \
           "test_captured_guards.py:" in text
    assert "return (x * BIG).sum() * STEP" in text and "Falling back to eager" in text
    assert "1234" not in text  # never an array's (or a value's) text
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # warned once: eager and quiet from now on
        after_each(call, stepped, rebind("STEP", -1.0), rebind("STEP", -2.0), x=x)
    # the eager calls: the one that warned and the three quiet ones
    assert counts(fn) == (0, config.recompile_limit, config.recompile_limit - 1, 4)


def test_a_retrace_limit_on_an_attribute_names_it():
    m = M()
    x = pb.tensor([1., 2., 3.])
    cf = pb.compile(M.__call__.__wrapped__)
    with pytest.warns(UserWarning, match=r"the guard that s\.W is unchanged since it was "
                      r"traced \(read at test_captured_guards.py:\d+ \(return \(x \* s\.W\)"):
        for k in range(config.recompile_limit + 1):
            m.W = np.full(3, float(k))
            assert cf(m, x).item() == 6 * k


# ---------------------------------------------------------------- no needless retrace
HOLD = np.linspace(0.0, 1.0, 3)
HOLD_T = pb.tensor([0.5, 0.25, 2.0], dtype=pb.float64)
HOLD_K = 3


def held(x):
    return (x * HOLD).sum() + (x * HOLD_T).sum() * HOLD_K + (x * x).sum()


@pytest.mark.parametrize("door", DOORS)
def test_unchanged_captured_values_keep_their_variant(door):
    fn, call = door(held)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for k in range(20):
            rebind("HOLD_K", 3)()  # rebound to the same small int: the same value
            agrees(call, held, X + k)
    assert counts(fn) == (19, 1, 0, 0)


def test_a_deleted_global_is_the_users_name_error():
    namespace = {"np": np}
    exec("A = np.ones(3)\ndef f(x):\n    return (x * A).sum()\n", namespace)  # noqa: S102
    g = pb.grad(namespace["f"])
    np.testing.assert_array_equal(g(X), np.ones(3))
    del namespace["A"]
    with pytest.raises(NameError, match="'A' is not defined"):
        g(X)


# ---------------------------------------------------------------- threads
TW = np.array([1.0, 2.0, 3.0])


def threaded(x):
    return (np.tanh(x * TW)).sum()


@pytest.mark.parametrize("door", DOORS)
def test_threads_calling_one_function_agree_before_and_after_a_rebinding(door):
    fn, call = door(threaded)
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads take turns inside traces and cache updates
    barrier = threading.Barrier(4)
    errors = []

    def body(k):
        try:
            for _ in range(2):
                barrier.wait(30)  # the main thread rebinds TW between the phases
                barrier.wait(30)
                for j in range(5):
                    agrees(call, threaded, X + k + j)
        except BaseException as e:  # noqa: BLE001 - re-raised in the main thread
            errors.append(e)
            barrier.abort()

    threads = [threading.Thread(target=body, args=(k,)) for k in range(3)]
    try:
        for t in threads:
            t.start()
        for change in (lambda: None, rebind("TW", np.array([-1.0, 0.5, 2.0]))):
            barrier.wait(30)
            change()
            barrier.wait(30)
        for t in threads:
            t.join(60)
    finally:
        sys.setswitchinterval(old)
    if errors:
        raise errors[0]
    assert not any(t.is_alive() for t in threads)
    assert counts(fn)[1:] == (2, 1, 0)  # one thread traces each binding, once
