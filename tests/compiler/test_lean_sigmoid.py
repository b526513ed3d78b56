"""Issue 19's lean sigmoid and printer: rt.sigmoid in one buffer (into a dead input where
the inplace pass proves it safe), a folded seed printed inline, no redundant parentheses,
temporaries or index parts in the generated code."""

import re

import numpy as np
import pytest
import torch

import pullback as pb
import pullback.nn.functional as F
from pullback.ops import runtime as rt


def _source(g):
    return g.cache.variants()[0].module.source


@pytest.mark.filterwarnings("ignore:overflow:RuntimeWarning")
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.complex128])
def test_rt_sigmoid_has_the_expressions_bits_in_one_buffer(dtype):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(200) * 20).astype(dtype)
    x[:3] = [np.inf, -np.inf, 0] if dtype != np.complex128 else [1j, -1j, 0]
    want = np.reciprocal(1 + np.exp(-x))
    np.testing.assert_array_equal(rt.sigmoid(x), want)
    assert rt.sigmoid(x).dtype == want.dtype
    y = x.copy()
    assert rt.sigmoid(y, out=y) is y
    np.testing.assert_array_equal(y, want)
    for odd in (np.arange(3), np.asarray(dtype(0.5)), 2.0):  # ints, 0-d, a number: as numpy
        np.testing.assert_array_equal(rt.sigmoid(odd), np.reciprocal(1 + np.exp(-odd)))


def test_logistic_regression_backward_writes_sigmoid_into_the_logits():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((300, 4)).astype(np.float32)
    y = (rng.random(300) < 0.5).astype(np.float32)
    w, b = rng.standard_normal(4).astype(np.float32), np.float32(0.1)
    vg = pb.value_and_grad(lambda w, b, X, y: F.binary_cross_entropy_with_logits(X @ w + b, y),
                           argnums=(0, 1))
    value, (gw, gb) = vg(w, b, X, y)
    src = _source(vg)
    assert re.search(r"rt\.sigmoid\((\w+), out=\1\)\n    \1 -= y\n", src), src
    assert "np.reciprocal" not in src and "(rt.bce_logits" not in src
    tw, tb = torch.tensor(w, requires_grad=True), torch.tensor(b, requires_grad=True)
    loss = torch.nn.functional.binary_cross_entropy_with_logits(torch.tensor(X) @ tw + tb,
                                                                torch.tensor(y))
    loss.backward()
    np.testing.assert_allclose(value, loss.item(), rtol=1e-6)
    np.testing.assert_allclose(gw, tw.grad.numpy(), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(gb, tb.grad.numpy(), rtol=1e-5, atol=1e-7)


def test_sigmoid_of_an_argument_never_writes_into_it():
    x = np.linspace(-3, 3, 7)
    keep = x.copy()
    g = pb.value_and_grad(lambda x: (pb.sigmoid(x) * x).sum())
    value, grad = g(x)
    assert "out=x" not in _source(g)
    np.testing.assert_array_equal(x, keep)
    tx = torch.tensor(keep, requires_grad=True)
    (torch.sigmoid(tx) * tx).sum().backward()
    np.testing.assert_allclose(grad, tx.grad.numpy(), rtol=1e-12)


def test_a_folded_seed_prints_inline_and_transposes_where_they_are_read():
    rng = np.random.default_rng(2)
    w = rng.standard_normal((5, 3)).astype(np.float32)
    x, y = rng.standard_normal((4, 5)).astype(np.float32), np.array([0, 2, 1, 1])
    v = rng.standard_normal((5, 3)).astype(np.float32)
    g = pb.grad(lambda w, x, y: F.cross_entropy(x @ w, y))
    hvp = pb.grad(lambda w, x, y, v: (g(w, x, y) * v).sum())
    got = hvp(w, x, y, v)
    src = _source(hvp)
    assert "rt.nll_rows_backward(np.float32(1.0), " in src, src
    assert re.search(r" = x\.T @ ", src) and not re.search(r"t\d+ = \w+\.T\n", src), src
    tw = torch.tensor(w, requires_grad=True)
    (gw,) = torch.autograd.grad(torch.nn.functional.cross_entropy(torch.tensor(x) @ tw,
                                                                  torch.tensor(y)),
                                tw, create_graph=True)
    (want,) = torch.autograd.grad((gw * torch.tensor(v)).sum(), tw)
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-4, atol=1e-6)


def test_a_view_index_keeps_its_ellipsis_only_after_integers():
    g = pb.grad(lambda x, m: (x[:, None] * m).sum() + x[1, 0] * 2)
    x = np.arange(6.0).reshape(3, 2)
    np.testing.assert_array_equal(g(x, np.ones((3, 4, 2))), [[4, 4], [6, 4], [4, 4]])
    src = _source(g)
    assert "x[:, None]" in src and ", ...]" not in src.replace("x[1, 0, ...]", ""), src
