"""A loop whose body binds names to items of an array it writes (``a = R[i - 1, j]``
before ``R[i, j] = ...``) is a region when numpy's reads could not see the writes: the
names are read before the next write (``item_writes.py``), or they hold scalars, which
numpy's item read copies (``item_read``, checked as the body is traced). A view read
after a write (``row = R[i - 1]``) sees it, as numpy's does: such a loop unrolls, and
``pb.compiler.inspect`` says which line. Checked against central finite differences
(float64), the eager run, ``pb.value_and_grad`` and ``pb.compile``."""

from __future__ import annotations

import re

import numpy as np
import pytest
from conftest import numeric_grad as fd

import pullback as pb

from .test_loop_writes import softmin

RNG = np.random.default_rng(11)
D6 = RNG.random((6, 5))
X = np.array([0.5, 1.5, 2.0])


def dtw_named(D):
    n, m = D.shape
    R = np.full((n + 1, m + 1), np.inf)
    R[0, 0] = 0.0
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            a = R[i - 1, j]; b = R[i, j - 1]; c = R[i - 1, j - 1]  # noqa: E702
            R[i, j] = D[i - 1, j - 1] + softmin(a, b, c, 0.1)
    return R[n, m]


def dtw_inline(D):
    n, m = D.shape
    R = np.full((n + 1, m + 1), np.inf)
    R[0, 0] = 0.0
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            R[i, j] = D[i - 1, j - 1] + softmin(R[i - 1, j], R[i, j - 1], R[i - 1, j - 1], 0.1)
    return R[n, m]


def dtw_tuple(D):
    n, m = D.shape
    R = np.full((n + 1, m + 1), np.inf)
    R[0, 0] = 0.0
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            a, b, c = R[i - 1, j], R[i, j - 1], R[i - 1, j - 1]
            R[i, j] = D[i - 1, j - 1] + softmin(a, b, c, 0.1)
    return R[n, m]


def scalar_after(x):
    """``a``, a scalar, is read after the write: numpy's copy keeps the old value."""
    R = np.zeros((4, 3)) + x
    s = 0.0
    for i in range(1, 4):
        for j in range(3):
            a = R[i - 1, j]
            R[i - 1, j] = a * x[j]
            R[i, j] = np.sin(a) + R[i - 1, j]
            s = s + a * R[i, j]
    return s + R.sum()


def row_before(x):
    """``row``, a view, read only before the write that follows it."""
    R = np.zeros((4, 3)) + x
    for i in range(1, 4):
        row = R[i - 1]
        R[i] = np.tanh(row * x) + row
    return R.sum()


def row_copied(x):
    """``R[i] = R[i - 1]``: numpy copies the row (it once unrolled)."""
    R = np.zeros((4, 3)) + x
    for i in range(1, 4):
        R[i] = R[i - 1]
        R[i, 0] = R[i, 1] * x[0]
    return (R * R).sum()


def row_after(x):
    """``row`` sees the write into its own row: the loop unrolls."""
    R = np.zeros((4, 3)) + x
    for i in range(1, 4):
        row = R[i - 1]
        R[i - 1, 0] = 2.0 * R[i - 1, 1]
        R[i] = row * x
    return R.sum()


def chained_view(x):
    """``R[i - 1][:]``, a view too (it once converted, and read the old row)."""
    R = np.zeros((4, 3)) + x
    for i in range(1, 4):
        row = R[i - 1][:]
        R[i - 1, 0] = 2.0 * R[i - 1, 1]
        R[i] = row * x
    return R.sum()


def _agree(f, x, compiled: bool = True) -> None:
    np.testing.assert_allclose(pb.grad(f)(x), fd(f, x), rtol=1e-6, atol=1e-9)
    value, grad = pb.value_and_grad(f)(x)
    assert float(value) == pytest.approx(f(x), rel=1e-12)
    np.testing.assert_allclose(grad, pb.grad(f)(x), rtol=1e-12)
    if compiled:
        assert float(pb.compile(f)(x)) == pytest.approx(f(x), rel=1e-12)


@pytest.mark.parametrize("f", [dtw_named, dtw_tuple])
def test_soft_dtw_with_named_reads_converts(f) -> None:
    _agree(f, D6)
    info = pb.compiler.inspect(pb.grad(f), D6)
    assert info.loops == ()
    # the same code as with the reads inline: items read and written in place
    assert re.search(r"^ +R\w*\[i\w*, j\w*\] = t\w+$", info.forward, re.M)
    assert "index_copy" not in info.forward
    inline = pb.compiler.inspect(pb.grad(dtw_inline), D6).forward
    assert len(_code(info.forward)) == len(_code(inline))


def _code(source: str) -> list:
    return [line for line in source.splitlines() if not line.lstrip().startswith("#")]


@pytest.mark.parametrize("f", [scalar_after, row_before, row_copied])
def test_scalars_and_views_read_before_the_write_convert(f) -> None:
    _agree(f, X)
    assert pb.compiler.inspect(pb.grad(f), X).loops == ()


def test_under_compile_numpy_code_reads_elements_as_numpy_does() -> None:
    """``pb.compile`` of numpy code on arrays: an element is numpy's copy there too, so
    the loop converts (torch's view is for Tensors)."""
    assert pb.compiler.inspect(pb.compile(scalar_after), X).loops == ()


def test_a_row_view_read_after_a_write_unrolls_and_says_why() -> None:
    _agree(row_after, X)
    (note,) = pb.compiler.inspect(pb.grad(row_after), X).loops
    assert "loop unrolled: it reads a view of R (line " in note


def test_a_chained_view_read_after_a_write_unrolls_and_says_why() -> None:
    _agree(chained_view, X)
    (note,) = pb.compiler.inspect(pb.grad(chained_view), X).loops
    assert "it binds a name to a view of R (line " in note
