"""Python numbers in arithmetic on float arrays are 0-d arrays of the arrays' dtype in
generated code (numpy 2 converts a Python number on every call), named after their
value, and the results are those of the numbers written inline, bit for bit."""

import numpy as np
import pytest

import pullback as pb


def _source(g):
    return g.cache.variants()[0].module.source


def _numbers(x):
    return ((1 - x * x) * 2.0 + x * 0.5 - x * (1 / 3) + x * -0.0 - 4 * x).sum()


def _inline(x):  # _numbers as numpy computes it with the numbers written inline
    return ((1 - x * x) * 2.0 + x * 0.5 - x * (1 / 3) + x * -0.0 - 4 * x).sum()


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_numbers_are_named_arrays_of_the_dtype_with_the_same_results(dtype):
    x = np.linspace(-2, 2, 7).astype(dtype)
    x[3] = -0.0
    vg = pb.value_and_grad(_numbers)
    value, grad = vg(x)
    src = _source(vg)
    bits = {np.float16: 16, np.float32: 32, np.float64: 64}[dtype]
    for name in (f"f{bits}_1", f"f{bits}_2", f"f{bits}_0_5", f"f{bits}_4", f"f{bits}_neg0_0"):
        assert name in src, src
        assert vg.cache.variants()[0].module.fn.__globals__[name].dtype == dtype
    assert "0.3333333333333333" in src  # a long number stays written out
    np.testing.assert_array_equal(value, _inline(x))
    assert value.dtype == dtype and grad.dtype == dtype


def test_scalars_and_other_dtypes_keep_the_literal():
    vg = pb.value_and_grad(lambda x, i: (x.sum() * 2.0 + (i * 3).sum()), argnums=0)
    vg(np.ones(3, np.float32), np.arange(3))
    src = _source(vg)
    assert "* 2.0" in src and "* 3" in src, src  # a 0-d value, an int array


def test_a_number_the_dtype_cannot_hold_stays_inline():
    vg = pb.grad(lambda x: (x * 1e6).sum())
    np.testing.assert_array_equal(vg(np.ones(2, np.float16)), np.full(2, np.inf, np.float16))
    assert "1000000.0" in _source(vg) or "1000000" in _source(vg)
