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
from pullback.compiler import source
from pullback.compiler.source import numpy_builders

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


def argument(shape, seed=0):
    return np.random.default_rng(seed).uniform(0.2, 1.0, shape)


def check(f, shape, seed=0):
    """pb.value_and_grad(f) and pb.grad(f) give numpy's value and the finite-difference
    gradient, and leave their argument as numpy leaves it, on the traced call and a
    cached one."""
    x = argument(shape, seed)
    expected_arg = x.copy()
    expected = f(expected_arg)
    expected_grad = numeric_grad(f, x)
    vg, grad = pb.value_and_grad(f), pb.grad(f)
    for _ in range(2):
        arg = x.copy()
        value, g = vg(arg)
        np.testing.assert_allclose(value, expected, rtol=1e-12)
        np.testing.assert_allclose(g, expected_grad, rtol=1e-6, atol=1e-8)
        np.testing.assert_array_equal(arg, expected_arg)
        arg = x.copy()
        np.testing.assert_allclose(grad(arg), expected_grad, rtol=1e-6, atol=1e-8)
        np.testing.assert_array_equal(arg, expected_arg)
    assert vg.cache.info.misses == 1 and vg.cache.info.hits == 1
    assert grad.cache.info.misses == 1 and grad.cache.info.hits == 1


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
    monkeypatch.setattr(pb.config, "cache_dir", None)  # (a variant kept on disk)
    pb.compiler.reset()  # (not the variant check() traced)
    with pytest.raises((RuntimeError, TypeError, pb.compiler.TraceError),
                       match="Can.t call numpy|not differentiable|mutate their inputs|in-place"):
        pb.grad(fn)(np.ones(shape))


#: without the pass these once ran with wrong gradients (numpy's float() of each value
#: written); the tracer alone now refuses that conversion (ConversionError, the cause of
#: numpy's "setting an array element with a sequence")
SILENT = [corpus.rotation_from_eye, corpus.constant_array_then_written]


@pytest.mark.parametrize("fn", SILENT, ids=lambda f: f.__name__)
def test_what_was_silently_wrong_is_now_right(fn, monkeypatch):
    shape = dict(corpus.CASES)[fn]
    check(fn, shape)
    x = argument(shape)
    monkeypatch.setattr(source, "rewrite", lambda fn, **kw: fn)  # the tracer alone
    monkeypatch.setattr(pb.config, "cache_dir", None)  # (a variant kept on disk)
    pb.compiler.reset()
    with pytest.raises(ValueError) as caught:
        pb.grad(fn)(x.copy())
    assert isinstance(caught.value.__cause__, pb.ConversionError)
    assert "float() of a value that carries a gradient" in str(caught.value.__cause__)


@pytest.mark.parametrize("fn", LIKE, ids=lambda f: f.__name__)
def test_buffers_like_a_traced_argument_need_no_rewrite(fn, monkeypatch):
    monkeypatch.setattr(source, "rewrite", lambda fn, **kw: fn)
    check(fn, dict(corpus.CASES)[fn])


@pytest.mark.parametrize("fn, shape", corpus.CASES, ids=[f.__name__ for f, _ in corpus.CASES])
def test_corpus_matches_finite_differences(fn, shape):
    check(fn, shape)


IDS = [f.__name__ for f, _ in corpus.CASES]


def refused_eagerly(fn, run, arg, refused=corpus.EAGER_REFUSED):
    """For the functions in ``refused``: check that ``run(arg)``, which differentiates
    ``fn`` eagerly, refuses it with torch's error (and a note saying why), and say so."""
    if fn not in refused:
        return False
    with pytest.raises(RuntimeError, match="modified by an inplace operation") as e:
        run(arg)
    assert any(" eagerly, under torch's rules" in note for note in e.value.__notes__)
    return True
COMPILABLE = [(f, s) for f, s in corpus.CASES
              if f not in corpus.WRITES_ARGUMENT + corpus.NUMPY_ONLY]


@pytest.mark.parametrize("fn, shape", COMPILABLE, ids=[f.__name__ for f, _ in COMPILABLE])
def test_corpus_compiled_on_tensors(fn, shape):
    x = argument(shape)
    f = pb.compile(fn)
    for _ in range(2):
        t = pb.tensor(x, dtype=pb.float64, requires_grad=True)
        out = f(t)
        out.backward()
        np.testing.assert_allclose(out.item(), fn(x.copy()), rtol=1e-12)
        np.testing.assert_allclose(t.grad.numpy(), numeric_grad(fn, x), rtol=1e-6, atol=1e-8)
    assert f.cache.info.misses == 1 and f.cache.info.hits == 1


ON_TENSORS = [(f, s) for f, s in corpus.CASES if f not in corpus.ELEMENT_COPIES]


@pytest.mark.parametrize("fn, shape", ON_TENSORS, ids=[f.__name__ for f, _ in ON_TENSORS])
def test_corpus_eagerly_on_tensors_that_require_grad(fn, shape):
    """pb.grad on a Tensor that requires grad runs eagerly, converted all the same."""
    x = argument(shape)
    expected_arg = x.copy()
    fn(expected_arg)
    t = pb.tensor(x, dtype=pb.float64, requires_grad=True)
    if refused_eagerly(fn, pb.grad(fn), t, corpus.TENSOR_REFUSED):
        return
    g = pb.grad(fn)(t)
    np.testing.assert_allclose(g.detach().numpy(), numeric_grad(fn, x), rtol=1e-6, atol=1e-8)
    np.testing.assert_array_equal(t.detach().numpy(), expected_arg)


@pytest.mark.parametrize("fn, shape", corpus.CASES, ids=IDS)
def test_corpus_when_falling_back_to_eager(fn, shape):
    x = argument(shape)
    expected_arg = x.copy()
    expected = fn(expected_arg)
    arg = x.copy()
    if refused_eagerly(fn, pb.value_and_grad(fn).fallback, (arg,)):
        return
    value, g = pb.value_and_grad(fn).fallback((arg,))
    np.testing.assert_allclose(value, expected, rtol=1e-12)
    np.testing.assert_allclose(g, numeric_grad(fn, x), rtol=1e-6, atol=1e-8)
    np.testing.assert_array_equal(arg, expected_arg)


@pytest.mark.parametrize("fn, shape", corpus.CASES, ids=IDS)
def test_corpus_inside_another_trace(fn, shape):
    """A transform of the function, called by a traced function, runs eagerly inside
    that trace: its value's gradient is the function's."""
    def outer(x):
        value, _ = pb.value_and_grad(fn)(x)
        return value * 2.0

    x = argument(shape)
    expected_arg = x.copy()
    fn(expected_arg)
    arg = x.copy()
    if refused_eagerly(fn, pb.grad(outer), arg):
        return
    np.testing.assert_allclose(pb.grad(outer)(arg), 2.0 * numeric_grad(fn, x), rtol=1e-6,
                               atol=1e-8)
    np.testing.assert_array_equal(arg, expected_arg)


SMOOTH = [(f, s) for f, s in COMPILABLE if f not in (
    corpus.halve_until_small, corpus.projectile_range)]


@pytest.mark.parametrize("fn, shape", SMOOTH, ids=[f.__name__ for f, _ in SMOOTH])
def test_corpus_gradients_of_gradients(fn, shape):
    """pb.grad(f) inside a traced function: its gradient is differentiated in turn."""
    w = np.linspace(0.5, 1.5, int(np.prod(shape))).reshape(shape)

    def projected(x):
        return np.sum(pb.grad(fn)(x) * w)

    x = argument(shape)
    np.testing.assert_allclose(pb.grad(projected)(x), numeric_grad(projected, x, 1e-5),
                               rtol=1e-5, atol=1e-6)


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
    y = numpy_builders.numpy_call(np.stack, [a * a, a], axis=1)
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


# ------------------------------------------------- transforms the function calls
def test_grad_of_a_function_calling_grad_of_a_buffer_filler():
    """The issue's case: pb.grad(g) inside the traced function, g filling a buffer."""
    forward = pb.compiler.inspect(pb.grad(corpus.gradient_norm), np.ones(3)).forward
    assert "x_1 = x.copy()" not in forward  # the argument handed on is not copied
    check(corpus.gradient_norm, (3,))


def test_compiled_function_inlined_in_a_trace_is_converted():
    filled = pb.compile(corpus.fill_zeros)

    def loss(x):
        return filled(x) * 2.0

    check(loss, (2, 3))


def test_grad_eagerly_on_a_buffer_filler():
    t = pb.tensor([0.3, 0.5, 0.7], dtype=pb.float64, requires_grad=True)
    g = pb.grad(corpus.helper_fills_buffer)(t)
    np.testing.assert_allclose(g.detach().numpy(), numeric_grad(
        corpus.helper_fills_buffer, t.detach().numpy()), rtol=1e-6)


def test_falling_back_to_eager_keeps_the_conversion():
    def loss(x):
        h = np.zeros(3)
        for i in range(int(x[0] * 10) % 3 + 1):  # a new guard value on every call
            h[i] = x[i] * x[i]
        x[2] = h[0]
        return np.sum(h * x)

    grad = pb.grad(loss)
    with pytest.warns(UserWarning, match="Falling back to eager"):
        for k in range(pb.config.recompile_limit + 3):
            x = np.array([0.1 * k + 0.01, 0.5, 0.7])
            expected_arg = x.copy()
            expected = numeric_grad(loss, x)
            loss(expected_arg)
            np.testing.assert_allclose(grad(x), expected, rtol=1e-6, atol=1e-8)
            np.testing.assert_array_equal(x, expected_arg)
    assert grad.cache.info.fallbacks >= 3


def test_a_transform_writes_into_its_callers_copy():
    def shift_(v):
        v[0] = v[1] ** 2
        return np.sum(v)

    def loss(x):
        v, _ = pb.value_and_grad(shift_)(x)
        return v + np.sum(x ** 2)  # x as shift_ left it

    check(loss, (3,))


def test_a_transform_writes_into_a_value_of_a_function_without_source():
    def shift_(v):
        v[0] = v[1] ** 2
        return np.sum(v)

    namespace = {"pb": pb, "shift_": shift_}
    exec("def loss(x):\n    y = x * 1.0\n    v, _ = pb.value_and_grad(shift_)(y)\n"
         "    return v + (y * y).sum()\n", namespace)

    def expected(x):
        y = x * 1.0
        y[0] = y[1] ** 2
        return np.sum(y) + np.sum(y * y)

    x = np.array([0.5, 2.0, 3.0])
    np.testing.assert_allclose(pb.grad(namespace["loss"])(x), numeric_grad(expected, x),
                               rtol=1e-6)


def test_a_transform_may_not_write_into_a_value_of_its_trace():
    def shift_(v):
        v[0] = 1.0
        return np.sum(v * v)

    with pytest.raises(pb.compiler.TraceError, match=r"shift_ at test_source_pass.py:\d+ "
                       r"\(def shift_\(v\):\) writes into its argument"):
        pb.grad(lambda x: pb.grad(shift_)(x).sum())(np.ones(2))


def test_grad_refuses_an_argument_written_in_place_without_the_pass():
    namespace = {}
    exec("def scale_(y):\n    y.mul_(2.0)\n    return (y * y).sum()\n", namespace)

    def loss(x):
        return np.sum(pb.grad(namespace["scale_"])(x * 1.0))

    with pytest.raises(pb.compiler.TraceError, match="wrote into an argument it is "
                       "differentiated with respect to"):
        pb.grad(loss)(np.ones(2))


# -------------------------------------------------------------- numpy's semantics
def test_an_element_read_is_a_copy_under_grad():
    def swap(x):
        a = x[0]
        x[0] = x[1]
        x[1] = a
        return np.sum(x * np.array([1.0, 10.0]))

    check(swap, (2,))
    x = np.array([1.0, 2.0])
    pb.grad(swap)(x)
    np.testing.assert_array_equal(x, [2.0, 1.0])


def test_compile_keeps_torchs_views():
    @pb.compile
    def f(x):
        h = pb.zeros(3, dtype=pb.float64)
        v = h[0]
        h[0] = x[0]
        h[1].add_(x[1])  # a method of an element: torch's view, written through
        return v * x[1] + h[1]

    x = pb.tensor([2.0, 3.0], dtype=pb.float64, requires_grad=True)
    out = f(x)
    out.backward()
    assert out.item() == 2.0 * 3.0 + 3.0
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0])


def test_compile_of_numpy_code_reads_elements_as_numpy_does():
    # numpy code on arrays under pb.compile: an element read is numpy's scalar, a copy a
    # later write does not change (it was torch's view there: 58.75 where numpy says 2.5)
    def f(x):
        r = np.zeros((2, 2))
        a = r[0, 0]
        r[0, 0] = 5 * x[1]
        b = x[0]
        x = x * 1.0
        return a * r[0, 0] + np.sum(x) + b

    x = np.array([1.0, 1.5])
    want = f(x)
    assert pb.compile(f)(x).item() == want == 3.5
    np.testing.assert_allclose(pb.value_and_grad(f)(x)[0], want)


def test_buffers_from_numpy_functions_that_make_new_arrays():
    def f(x):
        r = np.eye(2)
        r[0, 1] = x[0]
        w = np.array([1.0, 2.0])
        w[0] = x[1]
        view = np.reshape(r, (4,))  # a view of r: not a buffer of its own
        return np.sum(r @ w) + view[1]

    check(f, (2,))


def test_writing_into_a_numpy_array_from_elsewhere_is_refused():
    table = np.zeros(3)

    def f(x):
        table[0] = x[0]
        return np.sum(table * x)

    with pytest.raises(pb.compiler.TraceError, match=rf"f at test_source_pass.py:"
                       rf"{line_of(f, 'table[0] =')} \(table\[0\] = x\[0\]\): writes a value "
                       "that needs a gradient into 'table', a numpy array the function did "
                       "not make"):
        pb.grad(f)(np.ones(3))
    assert source.convert(f)(np.ones(3)) == 1.0  # outside a front door: numpy's own write


def test_an_object_array_holds_tensors():
    def f(x):
        parts = np.empty(2, dtype=object)
        parts[0] = x[0] * 2.0
        parts[1] = x[1]
        return parts[0] * parts[1]

    np.testing.assert_allclose(pb.grad(f)(np.array([2.0, 3.0])), [6.0, 4.0])


# ------------------------------------------- partial objects and default arguments
def _scaled(x, lam=2.0, *, power=2):
    h = np.zeros(len(x))
    for i in range(len(x)):
        h[i] = x[i] * lam
    return np.sum(h ** power)


def test_partial_objects_are_converted():
    for f, lam, power in [(functools.partial(_scaled, lam=3.0), 3.0, 2),
                          (functools.partial(_scaled, power=3), 2.0, 3),
                          (functools.partial(functools.partial(_scaled, lam=0.5), power=3),
                           0.5, 3)]:
        check(f, (3,))
        x = np.array([0.5, 1.0, 2.0])
        np.testing.assert_allclose(pb.grad(f)(x), power * lam ** power * x ** (power - 1))
        t = pb.tensor(x, dtype=pb.float64, requires_grad=True)
        pb.compile(f)(t).backward()
        np.testing.assert_allclose(t.grad.numpy(), power * lam ** power * x ** (power - 1))


def test_default_arguments_and_keywords_through_the_front_doors():
    x = np.array([0.5, 1.0])
    np.testing.assert_allclose(pb.grad(_scaled)(x), 8.0 * x)
    np.testing.assert_allclose(pb.grad(_scaled)(x, lam=3.0), 18.0 * x)
    np.testing.assert_allclose(pb.grad(_scaled)(x, 3.0), 18.0 * x)
    value, g = pb.value_and_grad(_scaled, argnums=(0, 1))(x, 3.0)
    np.testing.assert_allclose(value, 9.0 * np.sum(x ** 2))
    np.testing.assert_allclose(g[1], 2 * 3.0 * np.sum(x ** 2))


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


def test_a_helper_writes_into_an_argument_its_caller_read():
    def late(x):
        s = np.sum(x)
        corpus.fill_squares(x, x * 1.0)
        return s + np.sum(x)

    check(late, (3,))
    forward = pb.compiler.inspect(pb.grad(late), np.ones(3)).forward
    assert forward.count(".copy()") == 1


def test_arguments_handed_on_but_never_written_are_not_copied():
    forward = pb.compiler.inspect(pb.grad(corpus.helper_chain), np.ones(3)).forward
    assert ".copy()" not in forward and "copyto" not in forward


def test_write_into_an_argument_read_elsewhere_is_refused():
    def late(xs):
        a, b = xs
        s = np.sum(a)
        corpus.fill_squares(a, b)
        return s + np.sum(a)

    with pytest.raises(pb.compiler.TraceError, match=r"'xs_0' is written into by fill_squares "
                       r"at source_corpus.py:\d+ .* late at test_source_pass.py:\d+ \(s = np.sum"):
        pb.grad(late)((np.ones(3), np.ones(3)))


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
        pb.compile(mutates)(pb.ones(2, requires_grad=True))  # (a write with a gradient)


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
    monkeypatch.setattr(pb.config, "cache_dir", None)  # (kept on disk: never parsed)
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


def _stacked_loss(x):
    return np.sum(np.array([x[0] * x[1], x[2]]) ** 2)


def test_a_lambda_is_converted_as_a_def_is():
    """Issue 22 item 5: a lambda whose source can be read behaves as the def with the
    same body: on a continuation line, spanning lines, several on one line (told apart
    by their code's source positions), nested with the same arguments."""
    x = np.array([0.5, -1.5, 2.0])
    want = numeric_grad(_stacked_loss, x)
    on_next_line = pb.grad(
        lambda x: np.sum(np.array([x[0] * x[1], x[2]]) ** 2))
    spanning = pb.grad(lambda x: np.sum(
        np.array([x[0] * x[1],
                  x[2]]) ** 2))
    pair = [lambda x: np.sum(np.array([x[0] * x[1], x[2]]) ** 2), lambda x: np.sum(np.array([x[2], x[0]]) ** 3)]  # noqa: E501
    nested = lambda x: (lambda x: np.sum(np.array([x[0] * x[1], x[2]]) ** 2))(x * 1.0)  # noqa: E731
    for fn in (on_next_line, spanning, pb.grad(pair[0]), pb.grad(nested)):
        np.testing.assert_allclose(fn(x), want, rtol=1e-6)
    np.testing.assert_allclose(pb.grad(pair[1])(x), numeric_grad(pair[1], x), rtol=1e-6)
    for f in pair:
        assert source.convert(f) is not None


def test_a_lambda_without_source_is_left_as_it_is():
    namespace = {"np": np}
    exec("f = lambda x: np.sum(np.array([x[0] * x[1], x[2]]))", namespace)
    assert source.convert(namespace["f"]) is None


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
