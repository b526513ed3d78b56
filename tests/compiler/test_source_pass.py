"""The source pass (src/pullback/compiler/source.py): numpy code the tracer cannot
see, rewritten before tracing, checked against central finite differences."""

import functools
import inspect
import linecache
import os
import traceback

import gast
import numpy as np
import pytest

import pullback as pb
from pullback.compiler import source, source_runtime

from . import source_corpus as corpus


def numeric_grad(f, x, eps=1e-6):
    """Central differences of scalar ``f`` at ``x`` (float64; ``f`` gets copies)."""
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += eps
        down[i] -= eps
        g[i] = (f(up) - f(down)) / (2 * eps)
    return g


def check(f, shape, seed=0):
    """pb.value_and_grad(f) gives numpy's value and the finite-difference gradient,
    and leaves its argument as numpy leaves it, on the traced call and a cached one."""
    x = np.random.default_rng(seed).uniform(0.2, 1.0, shape)
    expected_arg = x.copy()
    expected = f(expected_arg)
    vg = pb.value_and_grad(f)
    for _ in range(2):
        arg = x.copy()
        value, grad = vg(arg)
        np.testing.assert_allclose(value, expected, rtol=1e-12)
        np.testing.assert_allclose(grad, numeric_grad(f, x), rtol=1e-6, atol=1e-8)
        np.testing.assert_array_equal(arg, expected_arg)
    assert vg.cache.info.misses == 1 and vg.cache.info.hits == 1


def line_of(fn, text):
    """The file line of ``fn`` whose source contains ``text``."""
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


# ---------------------------------------------------------- the failures it fixes
QUOTED = [corpus.array_of_products, corpus.asarray_of_products, corpus.sum_of_list,
          corpus.rows_into_buffer, corpus.fill_zeros, corpus.fill_ones, corpus.fill_empty,
          corpus.fill_full, corpus.writes_argument]
#: np.zeros_like(x) & co. of a traced x make a local tensor, and np.stack of Tensors is
#: the op table's stack (numpy's protocol): the tracer alone is enough
LIKE = [corpus.zeros_like_scaled, corpus.fill_zeros_like, corpus.fill_ones_like,
        corpus.fill_empty_like, corpus.fill_full_like, corpus.stack_of_products]


@pytest.mark.parametrize("fn", QUOTED, ids=lambda f: f.__name__)
def test_what_numpy_refused_now_differentiates(fn, monkeypatch):
    shape = dict(corpus.CASES)[fn]
    check(fn, shape)
    monkeypatch.setattr(source, "rewrite", lambda fn, **kw: fn)  # the tracer alone
    with pytest.raises((RuntimeError, TypeError, pb.compiler.TraceError),
                       match="Can.t call numpy|not differentiable|mutate their inputs|in-place"):
        pb.grad(fn)(np.ones(shape))


@pytest.mark.parametrize("fn", LIKE, ids=lambda f: f.__name__)
def test_buffers_like_a_traced_argument_need_no_rewrite(fn, monkeypatch):
    monkeypatch.setattr(source, "rewrite", lambda fn, **kw: fn)
    check(fn, dict(corpus.CASES)[fn])


@pytest.mark.parametrize("fn, shape", corpus.CASES, ids=[f.__name__ for f, _ in corpus.CASES])
def test_corpus_matches_finite_differences(fn, shape):
    check(fn, shape)


def test_compile_builds_arrays_of_traced_values():
    f = pb.compile(corpus.array_of_products)
    x = pb.tensor([0.5, 0.25, 2.0], dtype=pb.float64, requires_grad=True)
    f(x).backward()
    f(x).backward()  # the cached variant
    np.testing.assert_allclose(x.grad.numpy(), 2 * numeric_grad(
        corpus.array_of_products, x.detach().numpy()), rtol=1e-6)


def test_lists_become_one_stack_in_generated_code():
    forward = pb.compiler.inspect(pb.grad(corpus.array_of_products), np.ones(3)).forward
    assert "t4 = np.stack([t2, t3], axis=0)" in forward
    forward = pb.compiler.inspect(pb.grad(corpus.concatenate_pieces), np.ones(3)).forward
    assert "np.concatenate([t1, t3, c], axis=0)" in forward


def test_helpers_are_differentiable_twice_outside_a_trace():
    a = pb.tensor([1.0, 2.0], dtype=pb.float64, requires_grad=True)
    y = source_runtime.numpy_call(np.stack, [a * a, a], axis=1)
    assert y.grad_fn.name() == "StackBackward0"
    (g,) = pb.autograd.grad(y.sum(), a, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), [3.0, 5.0])
    np.testing.assert_allclose(pb.autograd.grad(g.sum(), a)[0].numpy(), [2.0, 2.0])


def test_compiled_create_graph_through_concatenate():
    f = pb.compile(lambda x: np.sum(np.concatenate([x[:1] ** 3, x[1:] * x[0]])))
    x = pb.tensor([1.0, 2.0, 3.0], dtype=pb.float64, requires_grad=True)
    (g,) = pb.autograd.grad(f(x), x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), [8.0, 1.0, 1.0])
    np.testing.assert_allclose(pb.autograd.grad(g.sum(), x)[0].numpy(), [8.0, 1.0, 1.0])


# ----------------------------------------------------------- writes into arguments
def test_caller_array_is_written_back_on_every_call():
    grad = pb.grad(corpus.writes_argument)
    for k in range(3):
        x = np.array([1.0, 2.0, 3.0 + k])
        g = grad(x)
        np.testing.assert_array_equal(x, [2.0 * (3.0 + k), 2.0, 3.0 + k])
        np.testing.assert_allclose(g, [0.0, 2 * 2.0 + 2 * x[0] * (3.0 + k), 2 * (3.0 + k)
                                       + 2 * x[0] * 2.0])
    assert grad.cache.info.hits == 2


def test_written_argument_returned_as_aux():
    def loss(x):
        x[0] = 5.0
        return np.sum(x * x), x

    x = np.array([1.0, 2.0])
    g, aux = pb.grad(loss, has_aux=True)(x)
    np.testing.assert_array_equal(g, [0.0, 4.0])
    np.testing.assert_array_equal(aux, [5.0, 2.0])
    np.testing.assert_array_equal(x, [5.0, 2.0])


def test_write_after_another_read_is_refused():
    def late(x):
        s = np.sum(x)
        corpus.fill_squares(x, x * 1.0)
        return s + np.sum(x)

    with pytest.raises(pb.compiler.TraceError, match=r"'x' is written into by fill_squares at "
                       r"source_corpus.py:\d+ .* late at test_source_pass.py:\d+ \(s = np.sum"):
        pb.grad(late)(np.array([1.0, 2.0, 3.0]))


def test_compile_still_refuses_writes_into_arguments():
    with pytest.raises(pb.compiler.TraceError, match="must not mutate their inputs"):
        pb.compile(corpus.writes_argument)(pb.ones(3))


# ------------------------------------------------------------- where things point
def test_generated_comments_name_the_users_lines():
    info = pb.compiler.inspect(pb.grad(corpus.rows_into_buffer), np.ones((2, 3)))
    name = os.path.basename(corpus.__file__)
    for text in ("h = np.zeros((n, 3))", "h[t] = x[t]"):
        assert f"# {name}:{line_of(corpus.rows_into_buffer, text)}: {text}" in info.forward
    info = pb.compiler.inspect(pb.grad(corpus.writes_argument), np.ones(3))
    line = line_of(corpus.writes_argument, "def writes_argument")
    assert f"# {name}:{line}: def writes_argument(x):\n    x_1 = x.copy()" in info.forward
    assert "np.copyto(x, x_2) or " in info.forward


def test_tracebacks_point_at_the_users_line():
    def fails(x):
        y = np.array([x[0], x[1]])
        raise ValueError(f"bad {y.shape}")

    with pytest.raises(ValueError, match=r"bad \(2,\)") as e:
        pb.grad(fails)(np.ones(2))
    last = traceback.extract_tb(e.value.__traceback__)[-1]
    assert (last.filename, last.lineno) == (__file__, line_of(fails, "raise ValueError"))
    assert last.line == 'raise ValueError(f"bad {y.shape}")'
    assert (last.colno, last.end_colno) == (8, 8 + len(last.line))  # the caret's columns
    assert "last traced op was at test_source_pass.py:" in e.value.__notes__[0]


def test_trace_errors_name_the_users_line():
    glob = pb.ones(2)

    def mutates(x):
        h = np.zeros(2)
        glob.add_(x)
        return np.sum(h + x)

    with pytest.raises(pb.compiler.TraceError,
                       match=rf"test_source_pass.py:{line_of(mutates, 'glob.add_')} "):
        pb.compile(mutates)(pb.ones(2))


# ------------------------------------------------------------ what it leaves alone
def test_functions_without_source_run_as_they_are():
    namespace = {"np": np}
    exec("def f(x):\n    return np.sum(x * x)\n", namespace)
    f = namespace["f"]
    assert source.convert(f, library=True) is None
    np.testing.assert_allclose(pb.grad(f)(np.array([1.0, 2.0])), [2.0, 4.0])
    total = functools.partial(np.sum, axis=0)
    assert source.rewrite(total) is total
    np.testing.assert_allclose(pb.grad(total)(np.array([1.0, 2.0])), [1.0, 1.0])


def test_source_that_no_longer_matches_the_code_is_not_used():
    code = compile("def f(x):\n    return x * 2\n", "<stale-source>", "exec")
    namespace = {}
    exec(code, namespace)
    lines = ["def f(x):\n", "    return np.array([x, x]).sum()\n"]
    linecache.cache["<stale-source>"] = (len("".join(lines)), None, lines, "<stale-source>")
    try:
        assert source.convert(namespace["f"]) is None
    finally:
        del linecache.cache["<stale-source>"]


def test_untraced_calls_are_numpys_own():
    def f(x):
        return np.zeros((2, 2)), np.array([x, 1.0]), np.sum([x, 2.0]), np.full(2, x)

    out = source.convert(f)(3.0)
    expected = f(3.0)
    for a, b in zip(out, expected):
        assert type(a) is type(b)
        np.testing.assert_array_equal(a, b)


def test_arrays_nothing_writes_into_stay_numpy_arrays_in_a_trace():
    def f(x):
        w = np.ones(3)
        assert type(w) is np.ndarray
        return np.sum(x * w.copy()) * w.size

    np.testing.assert_allclose(pb.grad(f)(np.array([1.0, 2.0, 3.0])), [3.0, 3.0, 3.0])


def test_integer_buffers_stay_numpy_arrays_in_a_trace():
    def f(x):
        index = np.zeros(2, dtype=np.int64)
        index[1] = 2
        assert type(index) is np.ndarray
        return np.sum(x[index] ** 2)

    np.testing.assert_allclose(pb.grad(f)(np.array([1.0, 2.0, 3.0])), [2.0, 0.0, 6.0])


def test_a_local_named_np_is_not_numpy():
    class Fake:
        def array(self, xs):
            return xs[0] * xs[1]

    def f(x):
        np = Fake()
        return np.array([x[0], x[1]]).sum()

    np.testing.assert_allclose(pb.grad(f)(np.array([2.0, 3.0])), [3.0, 2.0])


def test_generators_are_not_rewritten():
    def squares(x):
        for i in range(2):
            yield x[i] * x[i]

    assert source.convert(squares) is None
    np.testing.assert_allclose(pb.grad(lambda x: sum(squares(x)))(np.array([1.0, 2.0])),
                               [2.0, 4.0])


def test_each_code_object_is_parsed_once_and_never_on_cache_hits(monkeypatch):
    parses, real = [], gast.parse
    monkeypatch.setattr(gast, "parse", lambda *a, **k: parses.append(a) or real(*a, **k))

    def helper(v):
        return np.array([v[0], v[1] * 2.0])

    def loss(x):
        return np.sum(helper(x) ** 2)

    grad = pb.grad(loss)
    grad(np.ones(2))
    first = len(parses)
    assert first >= 2  # loss and helper (and pb.grad's own wrapper, once per process)
    grad(np.ones(2))
    grad(np.ones(2) * 2)
    pb.grad(loss)(np.ones(2))  # a new cache: traced again, converted code reused
    assert len(parses) == first


# ----------------------------------------------------------- what it keeps working
def test_closures_share_their_cells():
    count = 0
    scale = 2.0

    def f(x):
        nonlocal count
        count += 1
        return np.sum(np.array([x[0] * scale, x[1]]) ** 2)

    np.testing.assert_allclose(pb.grad(f)(np.array([1.0, 1.0])), [8.0, 2.0])
    scale = 3.0  # a new trace sees the closure's new value
    np.testing.assert_allclose(pb.grad(f)(np.array([1.0, 1.0])), [18.0, 2.0])
    assert count == 2


def test_methods_keep_private_names_and_super():
    class Base:
        def __init__(self):
            self.__w = np.array([1.0, 2.0])

        def loss(self, x):
            return np.sum(np.stack([x * self.__w, x]) ** 2)

    class Child(Base):
        def loss(self, x):
            return super().loss(x) + np.sum([x[0], 0.0])

    m = Child()
    np.testing.assert_allclose(pb.grad(m.loss)(np.array([1.0, 1.0])), [5.0, 10.0])


def test_lambdas_and_recursion():
    def shift(x, n):
        return x if n == 0 else shift(np.array([x[1], x[0] * 2.0]), n - 1)

    np.testing.assert_allclose(pb.grad(lambda x: shift(x, 3).sum())(np.array([1.0, 2.0])),
                               [4.0, 2.0])
    g = pb.grad(lambda x: np.sum(np.array([x[0] * x[1], x[1]])))
    np.testing.assert_allclose(g(np.array([2.0, 3.0])), [3.0, 3.0])


def test_functions_defined_in_rewritten_code_are_traced_with_the_pass():
    made = []

    def outer(x):
        def inner(v):
            return np.sum(np.stack([v, v * 2.0]))
        made.append(inner)
        return inner(x)

    np.testing.assert_allclose(pb.grad(outer)(np.ones(2)), [3.0, 3.0])
    info = pb.compiler.inspect(pb.compile(made[0]), pb.ones(2))
    assert info.guards == [] and "np.stack([v, t0], axis=0)" in info.forward


def test_the_modules_own_future_imports_apply():
    def f(x):
        def inner(v: float) -> float:
            return v * 2.0
        return np.sum(np.array([inner(x[0]), x[1]])), inner.__annotations__

    g, notes = pb.grad(f, has_aux=True)(np.array([1.0, 2.0]))
    np.testing.assert_allclose(g, [2.0, 1.0])
    assert notes == {"v": float, "return": float}  # not strings: this file has no
    # ``from __future__ import annotations``, though source.py has


def test_decorated_functions():
    def logged(fn):
        @functools.wraps(fn)
        def wrapper(*args):
            return fn(*args)
        return wrapper

    @logged
    def f(x):
        return np.sum([x[0], x[1] * 3.0])

    np.testing.assert_allclose(pb.grad(f)(np.array([1.0, 2.0])), [1.0, 3.0])
