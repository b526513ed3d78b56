"""The guard rule: anything a traced function captures that the walk does not
positively understand is guarded by identity (or equality where cheap), so each
program below retraces or runs the right new thing, never the stale trace: rebound
functions (module level, closures, a notebook's helpers), numpy types and dtypes,
slices, ranges, sets, a helper's defaults, names looked up by a string
(``globals()['K']``, ``getattr(module, 'K')``), a rebound generator, a module's
function attribute; and a guard failing after a draw leaves the generator where a
single eager call would (docs/reliability.md, "The guard rule")."""

import functools
import sys
import types
import warnings

import numpy as np
import pytest

import pullback as pb
from pullback import config

X = np.array([0.3, 0.7, 1.1])


def first_failure(fn, *args):
    """The capture the last variant's check names as changed (None: all hold)."""
    capture = fn.cache.variants()[-1].traced.captured.first_failure(args)
    return None if capture is None else capture.label


# ------------------------------------------------------------------ functions
def test_a_function_rebound_by_a_module_level_loop_retraces():
    ns = {"np": np, "pb": pb, "x": X, "out": []}
    exec("for f in [np.sin, np.cos]:\n"  # noqa: S102  (module-level code, as a script's)
         "    out.append(pb.grad(lambda v: f(v).sum())(x))\n", ns)
    np.testing.assert_allclose(ns["out"][0], np.cos(X), rtol=1e-12)
    np.testing.assert_allclose(ns["out"][1], -np.sin(X), rtol=1e-12)


def test_a_function_rebound_by_a_loop_inside_a_function_retraces():
    out = []
    for f in [np.sin, np.cos, np.tanh]:
        out.append(pb.grad(lambda v: f(v).sum())(X))  # noqa: B023  (the point)
    np.testing.assert_allclose(out[1], -np.sin(X), rtol=1e-12)
    np.testing.assert_allclose(out[2], 1 - np.tanh(X) ** 2, rtol=1e-12)


def test_a_redefined_notebook_helper_retraces_even_with_a_fresh_grad():
    ns = {"np": np}
    exec("def helper(v):\n    return np.sin(v)\n"  # noqa: S102
         "def loss(v):\n    return helper(v).sum()\n", ns)
    g = pb.grad(ns["loss"])
    np.testing.assert_allclose(g(X), np.cos(X), rtol=1e-12)
    exec("def helper(v):\n    return np.cos(v)\n", ns)  # noqa: S102  (a cell run again)
    assert first_failure(g, X) == "global helper"
    np.testing.assert_allclose(pb.grad(ns["loss"])(X), -np.sin(X), rtol=1e-12)
    np.testing.assert_allclose(g(X), -np.sin(X), rtol=1e-12)


def test_a_lambda_made_anew_from_the_same_code_keeps_its_variant():
    g = None
    for _ in range(3):
        act = lambda z: np.tanh(z)  # noqa: E731  (a new function object each pass)
        g = pb.grad(lambda v: act(v).sum())  # noqa: B023
        np.testing.assert_allclose(g(X), 1 - np.tanh(X) ** 2, rtol=1e-12)
    assert g.cache.info.misses == 1


def test_a_new_function_of_the_same_code_capturing_another_value_retraces():
    def make(scale):
        return lambda z: z * scale

    out = []
    for s in (2.0, 3.0):
        h = make(s)
        out.append(pb.grad(lambda v: h(v).sum())(X))  # noqa: B023
    np.testing.assert_allclose(out, [np.full(3, 2.0), np.full(3, 3.0)])


def test_a_module_attribute_set_to_another_function_retraces():
    class Net(pb.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = pb.nn.Linear(3, 2)
            self.act = pb.relu

        def forward(self, t):
            return self.act(self.lin(t))

    pb.manual_seed(0)
    model = Net()
    fast = pb.compile(model)
    t = pb.randn(4, 3)
    np.testing.assert_allclose(fast(t).detach().numpy(), model(t).detach().numpy())
    model.act = pb.tanh
    np.testing.assert_allclose(fast(t).detach().numpy(), model(t).detach().numpy(),
                               rtol=1e-6)
    assert np.any(fast(t).detach().numpy() < 0)  # tanh, not relu


# ------------------------------------------------------------------ values
DT = np.float32
DTYPE = np.dtype(np.float32)


def test_a_numpy_type_and_dtype_are_guarded():
    global DT, DTYPE
    f = pb.compile(lambda v: v.astype(DT) * 2)
    g = pb.compile(lambda v: v.astype(DTYPE) * 2)
    assert f(X).dtype == pb.float32 and g(X).dtype == pb.float32  # (numpy's face)
    try:
        DT = np.float64  # (a type: guarded by identity)
        assert first_failure(f, X) == "global DT"
        assert f(X).dtype == pb.float64
        DTYPE = np.dtype(np.float64)  # (a dtype: by value)
        assert g(X).dtype == pb.float64
    finally:
        DT, DTYPE = np.float32, np.dtype(np.float32)


def test_a_slice_and_a_range_are_guarded_by_equality():
    s, r = slice(0, 2), range(2)
    g = pb.grad(lambda v: (v[s] ** 2).sum() + sum(v[i] for i in r))
    np.testing.assert_allclose(g(X), [2 * X[0] + 1, 2 * X[1] + 1, 0])
    s, r = slice(0, 2), range(2)  # equal values: the same variant
    g(X)
    assert g.cache.info.misses == 1
    s, r = slice(1, 3), range(3)
    np.testing.assert_allclose(g(X), [1, 2 * X[1] + 1, 2 * X[2] + 1])
    assert g.cache.info.misses == 2


def test_a_set_written_in_place_and_a_frozenset_rebound_retrace():
    chosen = {0, 1}
    frozen = frozenset({2})
    g = pb.grad(lambda v: sum(v[i] ** 2 for i in sorted(chosen)) +
                sum(v[i] for i in sorted(frozen)))
    np.testing.assert_allclose(g(X), [2 * X[0], 2 * X[1], 1])
    chosen.add(2)
    assert first_failure(g, X) == "closure cell chosen"
    np.testing.assert_allclose(g(X), [2 * X[0], 2 * X[1], 2 * X[2] + 1])
    frozen = frozenset({0})
    np.testing.assert_allclose(g(X), [2 * X[0] + 1, 2 * X[1], 2 * X[2]])


def test_a_helpers_defaults_and_keyword_defaults_are_guarded():
    def power(v, p=2.0):
        return v ** p

    def scaled(v, *, k=1.0):
        return v * k

    g = pb.grad(lambda v: power(v).sum() + scaled(v).sum())
    np.testing.assert_allclose(g(X), 2 * X + 1)
    power.__defaults__ = (3.0,)
    assert first_failure(g, X) == "default 0 of power"
    np.testing.assert_allclose(g(X), 3 * X ** 2 + 1)
    scaled.__kwdefaults__ = {"k": 5.0}
    assert first_failure(g, X) == "keyword default k of scaled"
    np.testing.assert_allclose(g(X), 3 * X ** 2 + 5)


K = 2.0


def by_name(v):
    return (v * globals()["K"]).sum()


def test_a_global_read_through_globals_is_guarded():
    global K
    g = pb.grad(by_name)
    np.testing.assert_allclose(g(X), np.full(3, 2.0))
    try:
        K = 3.0
        assert first_failure(g, X) == "global K"
        np.testing.assert_allclose(g(X), np.full(3, 3.0))
    finally:
        K = 2.0


@pytest.mark.parametrize("on_disk", [True, False])
def test_an_attribute_read_through_getattr_is_guarded(tmp_path, monkeypatch, on_disk):
    if on_disk:  # a user module from a file
        (tmp_path / "guard_rule_settings.py").write_text("K = 2.0\n")
        monkeypatch.syspath_prepend(str(tmp_path))
        monkeypatch.delitem(sys.modules, "guard_rule_settings", raising=False)
        import guard_rule_settings as mod
    else:  # a module made at run time
        mod = types.ModuleType("guard_rule_runtime")
        mod.K = 2.0
    g = pb.grad(lambda v: (v * getattr(mod, "K")).sum())  # noqa: B009  (the point)
    np.testing.assert_allclose(g(X), np.full(3, 2.0))
    mod.K = 3.0
    np.testing.assert_allclose(g(X), np.full(3, 3.0))


def test_a_rebound_generator_is_drawn_from():
    rng = np.random.default_rng(0)
    g = pb.grad(lambda v: (v * rng.normal(size=3)).sum())
    np.testing.assert_allclose(g(X), np.random.default_rng(0).normal(size=3))
    rng = np.random.default_rng(5)
    np.testing.assert_allclose(g(X), np.random.default_rng(5).normal(size=3))


# ------------------------------------------------------------------ draws and guards
def branchy(draw):
    def f(v):
        e = draw()
        if e > 0:
            return (v * e).sum()
        return (v * 2 * e).sum()
    return f


def expected(es):
    return np.array([np.ones(3) * (e if e > 0 else 2 * e) for e in es])


@pytest.mark.parametrize("make", [lambda: np.random.RandomState(3),
                                  lambda: np.random.default_rng(3)])
def test_a_guard_failing_on_a_draw_leaves_the_generator_where_numpy_would(make):
    gen, ref = make(), make()
    draw = gen.randn if isinstance(gen, np.random.RandomState) else gen.standard_normal
    g = pb.grad(branchy(draw))
    out = np.array([g(X) for _ in range(8)])
    ref_draw = ref.randn if isinstance(ref, np.random.RandomState) else ref.standard_normal
    es = [ref_draw() for _ in range(8)]
    assert len({e > 0 for e in es}) == 2  # (both branches are taken: guards fail)
    np.testing.assert_allclose(out, expected(es), rtol=1e-12)
    assert draw() == ref_draw()


def test_a_guard_failing_on_pullbacks_own_draw_leaves_its_generator_in_step():
    g = pb.grad(branchy(lambda: pb.rand(()).item() - 0.5))
    pb.manual_seed(4)
    out = np.array([g(X) for _ in range(8)])
    pb.manual_seed(4)
    es = [pb.rand(()).item() - 0.5 for _ in range(8)]
    assert len({e > 0 for e in es}) == 2
    np.testing.assert_allclose(out, expected(es), rtol=1e-6)


# ------------------------------------------------------------------ messages
F = np.sin


def calls_f(v):
    return F(v).sum()


def test_the_retrace_limit_warning_names_a_rebound_function():
    global F
    g = pb.grad(calls_f)
    funcs = [np.sin, np.cos, np.tanh, np.exp, np.sinh, np.cosh, np.arctan, np.log1p,
             np.expm1, np.square]
    try:
        with config.override(recompile_limit=3), warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            for f in funcs[:5]:
                F = f
                g(X)
    finally:
        F = np.sin
    text = " ".join(str(x.message) for x in w)
    assert "the guard that global F is unchanged since it was traced" in text
    assert "return F(v).sum()" in text


class Model:
    def __init__(self):
        self.w = np.array([1.0, 2.0, 3.0])

    def act(self, z):
        return np.sin(z)

    def __call__(self, v):
        return self.act(v * self.w).sum()


def test_a_method_replaced_on_the_class_or_shadowed_on_the_instance_retraces():
    model = Model()
    g = pb.grad(lambda v: model(v))
    np.testing.assert_allclose(g(X), model.w * np.cos(X * model.w), rtol=1e-12)
    original = Model.act
    try:
        Model.act = lambda self, z: np.tanh(z)
        np.testing.assert_allclose(g(X), model.w * (1 - np.tanh(X * model.w) ** 2),
                                   rtol=1e-12)
    finally:
        Model.act = original
    np.testing.assert_allclose(g(X), model.w * np.cos(X * model.w), rtol=1e-12)
    model.act = lambda z: z * z  # an instance attribute hides the method
    np.testing.assert_allclose(g(X), 2 * model.w ** 2 * X, rtol=1e-12)


def test_partials_and_bound_methods_made_anew_are_compared_by_what_they_hold():
    def scale(z, k):
        return z * k

    rng = np.random.default_rng(0)
    model = Model()
    g = None
    for k in (2.0, 2.0, 3.0):
        part = functools.partial(scale, k=k)  # a new partial each pass
        method = model.act  # a new bound method each pass
        draw = rng.random  # a new builtin method each pass
        g = pb.grad(lambda v: (part(v) + method(v) + 0 * draw()).sum())  # noqa: B023
        np.testing.assert_allclose(g(X), k + np.cos(X), rtol=1e-12)
    assert g.cache.info.misses == 2  # (k = 2.0 twice: one variant)
    part = functools.partial(np.multiply, 5.0)  # another function
    np.testing.assert_allclose(g(X), 5 + np.cos(X), rtol=1e-12)
