"""Loop counters in the generated code (transforms/codegen_ints.py): a counter that only
counts and indexes starts from a Python int, as in the user's loop; one that reaches
arithmetic, a comparison or the function's result keeps numpy's int64."""

from __future__ import annotations

import re

import numpy as np
from conftest import numeric_grad as fd

import pullback as pb
from pullback.compiler import cache


def prefix_sums(x):
    n = x.shape[0]
    out = np.zeros(n + 1)
    for i in range(1, n + 1):
        out[i] = out[i - 1] + x[i - 1] * x[i - 1]
    return out[n]


def weighted(x):
    total = x[0] * 0.0
    for i in range(x.shape[0]):
        total = total + x[i] * i  # the counter in arithmetic: numpy's int64
    return total


def _source(fn, x):
    cache.reset()
    vg = pb.value_and_grad(fn)
    value, grad = vg(x)
    return pb.compiler.inspect(vg, x).forward, value, grad


def test_an_index_only_counter_is_a_python_int():
    x = np.random.default_rng(0).random(6)
    source, value, grad = _source(prefix_sums, x)
    assert re.search(r"^ {4}i = 1$", source, re.M) and "np.int64(1)" not in source
    np.testing.assert_allclose(value, prefix_sums(x))
    np.testing.assert_allclose(grad, fd(prefix_sums, x), rtol=1e-5, atol=1e-7)


def test_a_counter_in_arithmetic_keeps_numpys_int():
    x = np.random.default_rng(1).random(5).astype(np.float32)
    source, value, grad = _source(weighted, x)
    assert not re.search(r"^ *i\w* = 0$", source, re.M)
    assert np.asarray(value).dtype == np.asarray(weighted(x)).dtype
    np.testing.assert_allclose(value, weighted(x), rtol=1e-6)
    np.testing.assert_allclose(grad, np.arange(5), rtol=1e-6)
