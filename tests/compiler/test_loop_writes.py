"""A loop whose body writes items of an array made before it (``R[i, j] = ...``,
``out[t] = h``) is a region: the array is a carry and the write a new value
(``item_writes.py``, ``loop_writes.py``). Checked against central finite differences
(float64), torch, eager ``.backward()`` and the plain function."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
import torch
from conftest import numeric_grad as fd

import pullback as pb

RNG = np.random.default_rng(3)
D8 = RNG.random((8, 8))
XS = RNG.standard_normal((6, 3))
W = RNG.standard_normal((3, 3)) * 0.5


def softmin(a, b, c, gamma):
    m = np.minimum(np.minimum(a, b), c)
    return m - gamma * np.log(np.exp((m - a) / gamma) + np.exp((m - b) / gamma)
                              + np.exp((m - c) / gamma))


def soft_dtw(D):
    n, m = D.shape
    R = np.full((n + 1, m + 1), np.inf)
    R[0, 0] = 0.0
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            R[i, j] = D[i - 1, j - 1] + softmin(R[i - 1, j], R[i, j - 1], R[i - 1, j - 1], 0.1)
    return R[n, m]


def torch_soft_dtw(D):
    n, m = D.shape
    inf = torch.tensor(np.inf, dtype=torch.float64)
    R = [[inf] * (m + 1) for _ in range(n + 1)]
    R[0][0] = torch.tensor(0.0, dtype=torch.float64)
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            r = torch.stack([R[i - 1][j], R[i][j - 1], R[i - 1][j - 1]])
            R[i][j] = D[i - 1, j - 1] - 0.1 * torch.logsumexp(-r / 0.1, 0)
    return R[n][m]


def test_soft_dtw_converts_both_loops_and_its_gradient_is_right() -> None:
    g = pb.grad(soft_dtw)(D8)
    np.testing.assert_allclose(g, fd(soft_dtw, D8), rtol=1e-6, atol=1e-9)
    d = torch.tensor(D8, requires_grad=True)
    torch_soft_dtw(d).backward()
    np.testing.assert_allclose(g, d.grad.numpy(), rtol=1e-10, atol=1e-12)
    assert float(pb.compile(soft_dtw)(D8)) == pytest.approx(soft_dtw(D8), rel=1e-12)
    info = pb.compiler.inspect(pb.grad(soft_dtw), D8)
    assert info.loops == () and len(re.findall(r"^ +for i\w* in range\(", info.forward, re.M)) == 4
    # the items are read and written in place, as by hand: no copy of the table per step
    assert re.search(r"^ +R\w*\[i\w*, j\w*\] = t\w+$", info.forward, re.M)
    assert re.search(r"^ +g_R\w*\[t\w+, j\w*\] \+= g_a$", info.forward, re.M)
    assert "index_copy" not in info.forward and "ops.item" not in info.forward


def test_forward_mode_through_the_nested_item_writes() -> None:
    """jvp and linearize transpose the reverse loops, whose residuals (moved out of the
    inner loop's body) once had no trace-time values: a TypeError inside the rules."""
    v = np.random.default_rng(5).standard_normal(D8.shape)
    g = pb.grad(soft_dtw)(D8)
    _, t = pb.jvp(soft_dtw, (D8,), (v,))
    np.testing.assert_allclose(t, (g * v).sum(), rtol=1e-10)
    _, lin = pb.linearize(soft_dtw, D8)
    np.testing.assert_allclose(lin(v), (g * v).sum(), rtol=1e-10)


def rnn_outputs(w, xs):
    h = np.zeros(3)
    out = np.zeros((xs.shape[0], 3))
    for t in range(xs.shape[0]):
        h = np.tanh(xs[t] @ w + h)
        out[t] = h
    return (out * out).sum() + out[-1].sum()


def columns(w, xs):
    h = np.zeros(3)
    out = np.zeros((3, xs.shape[0]))
    for t, x in enumerate(xs):
        h = np.tanh(x @ w + h)
        out[:, t] = h * (t + 1)
    return (out[:, 1:] ** 2).sum()


@pytest.mark.parametrize("f", [rnn_outputs, columns])
def test_a_written_row_or_column_is_a_carry(f) -> None:
    value, g = pb.value_and_grad(f)(W, XS)
    assert value == pytest.approx(f(W, XS), rel=1e-12)
    np.testing.assert_allclose(g, fd(lambda w: f(w, XS), W), rtol=1e-6)
    assert pb.compiler.inspect(pb.grad(f), W, XS).loops == ()
    np.testing.assert_allclose(pb.compile(f)(W, XS), f(W, XS), rtol=1e-12)


def test_views_made_before_the_loop_see_the_writes() -> None:
    def f(w):
        out = np.zeros((4, 3))
        first = out[0]
        h = np.ones(3)
        for t in range(4):
            h = np.tanh(h @ w)
            out[t] = h
        return (first * out[3]).sum()
    np.testing.assert_allclose(pb.grad(f)(W), fd(f, W), rtol=1e-6)
    assert pb.compiler.inspect(pb.grad(f), W).loops == ()


def test_a_body_reading_a_view_of_what_it_writes_unrolls() -> None:
    def f(w):
        out = np.zeros((4, 3))
        first = out[0]
        h = np.ones(3)
        for t in range(4):
            h = np.tanh(h @ w) + first
            out[t] = h
        return out.sum()
    np.testing.assert_allclose(pb.grad(f)(W), fd(f, W), rtol=1e-6)
    (note,) = pb.compiler.inspect(pb.grad(f), W).loops
    assert "reads a view of out" in note


def test_a_view_bound_in_the_body_leaves_the_loop_as_written() -> None:
    def f(w):
        out = np.ones((4, 3))
        for t in range(1, 4):
            prev = out[t - 1]
            out[t] = np.tanh(prev @ w)
        return out.sum()
    np.testing.assert_allclose(pb.grad(f)(W), fd(f, W), rtol=1e-6)
    assert pb.value_and_grad(f)(W)[0] == pytest.approx(f(W), rel=1e-12)


def aliased_table(w):
    A = np.zeros((5, 3))
    B = A  # (the loop writes A's items: B sees them)
    A[0] = w[0]
    for t in range(1, 5):
        A[t] = np.tanh(A[t - 1] @ w + 1.0)
        A[t, 0] = A[t, 0] * A[t - 1, 2]  # (a static index beside a traced one)
    return (A * A).sum() + B[4].sum() + A[2, 1]


def table_of_an_argument(w, T):
    for t in range(1, 4):
        T[t, t] = T[t - 1, t - 1] * w[t - 1, 0] + np.sin(T[t, t - 1])
    return (T * T).sum() + T[3, 3]


@pytest.mark.parametrize("f", [aliased_table, soft_dtw])
def test_item_writes_in_place_keep_the_function_exact(f) -> None:
    x = W if f is aliased_table else D8[:4, :5]
    value, g = pb.value_and_grad(f)(x)
    assert value == pytest.approx(f(x.copy()), rel=1e-12)
    np.testing.assert_allclose(g, fd(f, x), rtol=1e-6, atol=1e-9)
    assert pb.compiler.inspect(pb.grad(f), x).loops == ()


def test_a_table_the_caller_passed_is_written_as_numpy_writes_it() -> None:
    T = RNG.random((4, 4))
    plain, through_grad = T.copy(), T.copy()
    table_of_an_argument(W, plain)
    g = pb.grad(table_of_an_argument)(W, through_grad)
    np.testing.assert_array_equal(through_grad, plain)
    np.testing.assert_allclose(g, fd(lambda w: table_of_an_argument(w, T.copy()), W),
                               rtol=1e-6)


def _no_item_loop(record: list) -> None:
    """No op ran once per batch element (ops/items.py's batching rules; the write of
    ``R[0, 0]`` and its gradient: ops/writes.py's)."""
    looped = [str(w.message) for w in record if "no batching rule" in str(w.message)]
    assert not looped, looped


def test_vmap_of_soft_dtw_writes_the_batched_table_in_place() -> None:
    f = pb.vmap(soft_dtw)
    Ds = np.stack([D8[:4, :5], D8[4:, 3:], D8[2:6, 1:6] * 2.0])
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        got = f(Ds)
    _no_item_loop(record)
    np.testing.assert_allclose(got, [soft_dtw(d) for d in Ds], rtol=1e-12)
    code = f.cache.variants()[0].module.source
    assert re.search(r"^ +R\w*\[:, i\w*, j\w*\] = t\w+$", code, re.M), code
    assert "ops.item" not in code and "for " in code  # the loops kept, the items in place


def test_jacfwd_and_hessian_of_soft_dtw_are_batched_and_right() -> None:
    D = D8[:3, :4]
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        jf = pb.jacfwd(soft_dtw)(D)
        h = pb.hessian(soft_dtw)(D)
    _no_item_loop(record)
    np.testing.assert_allclose(jf, pb.jacrev(soft_dtw)(D), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(jf, fd(soft_dtw, D), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(h, pb.jacrev(pb.grad(soft_dtw))(D), rtol=1e-8, atol=1e-10)
    v = RNG.standard_normal(D.shape)
    np.testing.assert_allclose(np.einsum("ij,ijkl->kl", v, h),
                               fd(lambda x: (pb.grad(soft_dtw)(x) * v).sum(), D), rtol=1e-5,
                               atol=1e-7)


def test_vmap_of_rows_written_with_a_value_that_broadcasts() -> None:
    """A batched value of fewer axes than the item it writes (a number into a row) is
    aligned per example; a table unbatched beside a batched value is one per example."""
    def f(s, w):
        out = np.zeros((4, 3))
        for t in range(4):
            out[t] = s * (t + 1)
            out[t, 0] += w[t]
        return out
    s, w = RNG.standard_normal(5), RNG.standard_normal(4)
    np.testing.assert_allclose(pb.vmap(f, in_axes=(0, None))(s, w),
                               [f(v, w) for v in s], rtol=1e-12)
    ws = RNG.standard_normal((5, 4))
    np.testing.assert_allclose(pb.vmap(f, in_axes=(None, 0))(0.5, ws),
                               [f(0.5, v) for v in ws], rtol=1e-12)


def test_nested_batches_of_soft_dtw() -> None:
    """A batched table batched again: two full slices in front of the index."""
    D = D8[:3, :4]
    Ds = np.stack([np.stack([D * (1 + 0.1 * k + 0.05 * m) for k in range(3)])
                   for m in range(2)])
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        twice = pb.vmap(pb.vmap(soft_dtw))(Ds)
        jacobians = pb.vmap(pb.jacfwd(soft_dtw))(Ds[0])
    _no_item_loop(record)
    np.testing.assert_allclose(twice, [[soft_dtw(d) for d in row] for row in Ds], rtol=1e-12)
    np.testing.assert_allclose(jacobians, [pb.jacrev(soft_dtw)(d) for d in Ds[0]],
                               rtol=1e-10, atol=1e-12)


def _writes_an_array_and_its_view(x):
    y = x.copy()
    z = y[1:]  # (z's items are y's: each write is seen through the other name)
    for i in range(3):
        z[0] = z[0] + y[0] * i
        y[0] = y[0] * 2
    return (y * np.arange(1.0, 5.0)).sum()


def test_a_loop_writing_an_array_and_its_view_unrolls_and_is_right() -> None:
    """Both names carried as new values would lose the writes each makes into the
    other (the gradient was [8, 2, 3, 4], the value wrong too, before)."""
    x = np.array([1.0, 2.0, 3.0, 4.0])
    g = pb.value_and_grad(_writes_an_array_and_its_view)
    value, grad = g(x)
    assert np.isclose(value, _writes_an_array_and_its_view(x.copy()))
    np.testing.assert_allclose(grad, fd(_writes_an_array_and_its_view, x), atol=1e-6)
    np.testing.assert_allclose(pb.grad(_writes_an_array_and_its_view)(x), [28.0, 2.0, 3.0, 4.0])
    loops = pb.compiler.inspect(g, x).loops
    assert len(loops) == 1 and "shares memory with" in loops[0]


def _rows_through_a_view(x):
    out = np.zeros((3, 4))
    for t in range(3):
        row = out[t]
        row[:] = x * t  # (out's items, written through the name row)
    return (out * out).sum()


def _rows_added_through_a_view(x):
    out = np.zeros((3, 4))
    for t in range(3):
        row = out[t]
        row += np.sin(x) * (t + 1)
    return (out * out).sum()


def _row_through_a_view_no_loop(x):
    out = np.zeros((3, 4))
    row = out.T[1]
    row[:3] = x[:3] ** 2
    return (out * np.arange(12.0).reshape(3, 4)).sum()


@pytest.mark.parametrize("f", [_rows_through_a_view, _rows_added_through_a_view,
                               _row_through_a_view_no_loop])
def test_writes_through_a_name_for_a_view_reach_the_array(f) -> None:
    """``row = out[t]; row[:] = v`` was refused (out, never written by name, stayed a
    numpy array), and ``row += v`` in a loop gave 0 for the value and the gradient (the
    region's body wrote into a new value of row, not out)."""
    x = np.array([0.3, -1.2, 0.8, 2.0])
    value, grad = pb.value_and_grad(f)(x)
    assert np.isclose(value, f(x.copy()))
    np.testing.assert_allclose(grad, fd(f, x), atol=1e-6)
    np.testing.assert_allclose(pb.grad(f)(x), grad, atol=1e-12)


def test_a_loop_changing_a_view_in_place_says_why_it_unrolls() -> None:
    g = pb.grad(_rows_added_through_a_view)
    loops = pb.compiler.inspect(g, np.ones(4)).loops
    assert len(loops) == 1 and "it changes row, a view of out, in place" in loops[0]


def _add_into(buf, v):
    part = buf[1:]
    part += v[1:]


def _accumulates_through_a_helper(x):
    out = np.zeros(4)
    for t in range(3):
        _add_into(out, np.sin(x) * t)
    return (out ** 2).sum()


def test_a_loop_whose_helper_changes_its_argument_in_place_unrolls() -> None:
    """The helper's write into ``out``, which the loop does not carry, was lost in the
    region (value and gradient 0)."""
    x = np.array([0.3, -1.2, 0.8, 2.0])
    f = _accumulates_through_a_helper
    value, grad = pb.value_and_grad(f)(x)
    assert np.isclose(value, f(x.copy()))
    np.testing.assert_allclose(grad, fd(f, x), atol=1e-6)
    loops = pb.compiler.inspect(pb.grad(f), x).loops
    assert len(loops) == 1 and "writes into an array from outside it" in loops[0]


def _writes_through_a_nested_function(x):
    out = np.zeros((3, 4))

    def put(i):
        out[i] = np.sin(x) * i

    for t in range(3):
        put(t)
    return (out ** 2).sum()


def _writes_the_rows_it_walks(x):
    out = np.zeros((3, 4))
    for i, row in enumerate(out):
        row[:] = x * (i + 1)
    for row in out:
        row += np.cos(x)
    return (out ** 2).sum()


def _writes_rows_taken_before(x):
    out = np.zeros((2, 4))
    top, bottom = out[0], out[1:]
    top[:] = x
    bottom += 3 * x  # (a view taken before out held values needing a gradient)
    return (out ** 2).sum()


@pytest.mark.parametrize("f", [_writes_through_a_nested_function, _writes_the_rows_it_walks,
                               _writes_rows_taken_before])
def test_numpy_writes_through_other_names_are_differentiated(f) -> None:
    """A nested function with a numpy call beside a converted loop left the whole
    function unconverted (the check that the source is the code's did not count the
    nested function's names), so out stayed numpy's array and the write was refused;
    ``for row in out`` did not make out a buffer; a view taken before the first
    write was refused with torch's 'leaf Variable' error, which numpy has no rule for."""
    x = np.array([0.3, -1.2, 0.8, 2.0])
    value, grad = pb.value_and_grad(f)(x)
    assert np.isclose(value, f(x.copy()))
    np.testing.assert_allclose(grad, fd(f, x), atol=1e-6)


def _scan_writing_a_captured_buffer(x):
    out = np.zeros(4)

    def body(c, xi):
        out[0] = out[0] + xi  # (not carried: the region cannot give out a new value)
        return c * 0.5 + xi, c

    c, ys = pb.scan(body, 0.0, x)
    return c + ys.sum() + out[0]


def _fori_writing_a_captured_buffer(x):
    acc = np.zeros(4)

    def body(i, v):
        acc[:] = acc + v
        return v * 1.1

    return pb.fori_loop(0, 3, body, x).sum() + acc.sum()


@pytest.mark.parametrize("f", [_scan_writing_a_captured_buffer, _fori_writing_a_captured_buffer])
def test_an_explicit_loop_body_writing_outside_it_is_refused(f) -> None:
    """The write was lost without a word (scan: value 1.76 for 3.76)."""
    with pytest.raises(pb.compiler.TraceError, match="the loop body writes into an array "
                       "from outside it, which would lose the write; carry the array"):
        pb.value_and_grad(f)(np.array([0.3, -1.2, 0.8, 2.1]))
