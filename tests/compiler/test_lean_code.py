"""The backward code at the hand-written floor: in-place arithmetic as augmented
assignment, pb.grad's all-ones seed folded away, cross-entropy's backward as one op with
the values of the two rules it replaces, a nested gradient's seed (an HVP's) a constant of
the trace, not an argument, under grad, jvp and vmap."""

import numpy as np
import pytest
import torch

import pullback as pb
import pullback.nn.functional as F
from pullback.ops import runtime as rt
from pullback.ops.cross_entropy import _nll_backward


def _source(g):
    return g.cache.variants()[0].module.source


def _chain(h, w1, w2):
    for w in (w1, w2):
        h = pb.tanh(h * w + h)
    return h.sum()


def test_inplace_arithmetic_reads_as_augmented_assignment():
    rng = np.random.default_rng(0)
    h, w1, w2 = (rng.standard_normal(5) for _ in range(3))
    g = pb.value_and_grad(_chain, argnums=(1, 2))
    value, grads = g(h, w1, w2)
    src = _source(g)
    # the temporary carries its final value's name: no np.add(..., out=...)
    assert "    h_1 = h * w1\n    h_1 += h\n    np.tanh(h_1, out=h_1)\n" in src, src
    assert "np.add(" not in src and "np.multiply(" not in src
    assert "*= " in src and "np.subtract(f64_1, " in src  # 1 - t has no operator form
    th, tw1, tw2 = (torch.tensor(a, requires_grad=True) for a in (h, w1, w2))
    for w in (tw1, tw2):
        th = torch.tanh(th * w + th)
    th.sum().backward()
    np.testing.assert_allclose(value, th.sum().item(), rtol=1e-12)
    for got, t in zip(grads, (tw1, tw2)):
        np.testing.assert_allclose(got, t.grad.numpy(), rtol=1e-12)


def test_grad_seed_of_ones_is_not_multiplied():
    x = np.arange(6.0).reshape(2, 3)
    g = pb.grad(lambda x: (x * x).sum())
    np.testing.assert_array_equal(g(x), 2 * x)
    assert "g_out *" not in _source(g) and "* g_out" not in _source(g)
    # a vjp's cotangent is the caller's: it stays
    out, pull = pb.vjp(lambda x: x * x, x)
    np.testing.assert_array_equal(pull(np.full((2, 3), 3.0))[0], 6 * x)


def _two_step(g, target, logp, ignore_index, reduction):
    """nll_rows_backward then log_softmax's rule: what the fused op replaces."""
    if target.min() < 0:
        d = _nll_backward(g, target, None, logp.shape, ignore_index, reduction)
    else:
        d = rt.nll_rows_backward(g, target, logp.shape, ignore_index, reduction)
    return d - np.exp(logp) * d.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("g", [np.array(1.0, np.float32), np.array(0.37), 2.5])
@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("target", [[0, 2, 1, 4, 4], [0, -100, 1, 4, -100]])
def test_softmax_nll_backward_matches_the_two_rules_bit_for_bit(dtype, g, reduction, target):
    rng = np.random.default_rng(1)
    logp = rt.log_softmax(rng.standard_normal((5, 6)).astype(dtype), axis=1)
    target = np.array(target)
    got = rt.softmax_nll_backward(g, target, logp, ignore_index=-100, reduction=reduction)
    want = _two_step(g, target, logp, -100, reduction)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("target", [[0, 2, 1, 2], [0, -100, 1, 2]])
def test_cross_entropy_backward_is_one_op_with_torchs_gradient(target):
    rng = np.random.default_rng(2)
    z, w = rng.standard_normal((4, 5)).astype(np.float32), rng.standard_normal((5, 3))
    w = w.astype(np.float32)
    y = np.array(target)
    f = lambda z, w, y: F.cross_entropy(z @ w, y)
    g = pb.value_and_grad(f, argnums=(0, 1))
    value, grads = g(z, w, y)
    src = _source(g)
    assert "rt.softmax_nll_backward(g_out, y, " in src, src
    assert "nll_rows_backward" not in src and "np.exp" not in src
    tz, tw = (torch.tensor(a, requires_grad=True) for a in (z, w))
    loss = torch.nn.functional.cross_entropy(tz @ tw, torch.tensor(y))
    loss.backward()
    np.testing.assert_allclose(value, loss.item(), rtol=1e-6)
    np.testing.assert_allclose(grads[0], tz.grad.numpy(), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(grads[1], tw.grad.numpy(), rtol=1e-5, atol=1e-7)


def test_cross_entropy_backward_keeps_torchs_error_for_a_target_past_the_classes():
    z = np.zeros((2, 3), np.float32)
    g = pb.grad(lambda z, y: F.cross_entropy(z, y))
    g(z, np.array([0, 2]))
    with pytest.raises(IndexError):
        g(z, np.array([0, 3]))


def test_a_nested_gradients_seed_is_a_constant_not_an_argument():
    rng = np.random.default_rng(3)
    w, x, v = rng.standard_normal((3, 2)), rng.standard_normal((4, 3)), rng.standard_normal((3, 2))
    g = pb.grad(lambda w, x: pb.tanh(x @ w).sum())
    hvp = pb.grad(lambda w, x, v: (g(w, x) * v).sum())
    got = hvp(w, x, v)
    assert "captured" not in _source(hvp).splitlines()[0]  # not re-read and checked per call
    tw = torch.tensor(w, requires_grad=True)
    (gw,) = torch.autograd.grad(torch.tanh(torch.tensor(x) @ tw).sum(), tw, create_graph=True)
    (want,) = torch.autograd.grad((gw * torch.tensor(v)).sum(), tw)
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-12, atol=1e-14)


def _mlp_problem(seed: int = 4):
    rng = np.random.default_rng(seed)
    params = (rng.standard_normal((5, 4)) * 0.5, rng.standard_normal(4) * 0.1,
              rng.standard_normal((4, 3)) * 0.5, rng.standard_normal(3) * 0.1)
    x, y = rng.standard_normal((6, 5)), np.array([0, 2, 1, 1, 0, 2])
    vs = tuple(rng.standard_normal(p.shape) for p in params)
    return params, x, y, vs


def _mlp_loss(w1, b1, w2, b2, x, y):
    return F.cross_entropy(pb.tanh(x @ w1 + b1) @ w2 + b2, y)


def test_hvp_through_cross_entropy_agrees_with_torch_and_finite_differences():
    # the seed a folded constant feeding nll's backward (the HVP benchmark's path)
    params, x, y, vs = _mlp_problem()
    g = pb.grad(_mlp_loss, argnums=(0, 1, 2, 3))
    hvp = pb.grad(lambda *a: sum((gi * vi).sum() for gi, vi in zip(g(*a[:6]), a[6:])),
                  argnums=(0, 1, 2, 3))
    got = hvp(*params, x, y, *vs)
    assert "captured" not in _source(hvp).splitlines()[0]
    assert "rt.softmax(" in _source(hvp) and "log_softmax" not in _source(hvp)  # no loss value
    tx, ty = torch.tensor(x), torch.tensor(y)
    tloss = lambda *p: torch.nn.functional.cross_entropy(torch.tanh(tx @ p[0] + p[1]) @ p[2]
                                                         + p[3], ty)
    _, want = torch.autograd.functional.hvp(tloss, tuple(map(torch.tensor, params)),
                                            tuple(map(torch.tensor, vs)))
    eps = 1e-6
    plus = g(*(p + eps * v for p, v in zip(params, vs)), x, y)
    minus = g(*(p - eps * v for p, v in zip(params, vs)), x, y)
    for a, b, p, m in zip(got, want, plus, minus):
        np.testing.assert_allclose(a, b.numpy(), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(a, (p - m) / (2 * eps), rtol=1e-5, atol=1e-8)


def test_hvp_as_jvp_of_grad_and_per_example_under_vmap():
    params, x, y, vs = _mlp_problem(5)
    g = pb.grad(_mlp_loss, argnums=(0, 1, 2, 3))
    want = pb.grad(lambda *a: sum((gi * vi).sum() for gi, vi in zip(g(*a[:6]), a[6:])),
                   argnums=(0, 1, 2, 3))(*params, x, y, *vs)
    _, got = pb.jvp(lambda *p: g(*p, x, y), params, vs)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    # per-example HVPs: vmap batches the nested gradient's folded seed
    each = pb.vmap(lambda xi, yi: pb.jvp(lambda *p: g(*p, xi[None], yi[None]), params, vs)[1],
                   in_axes=(0, 0))(x, y)
    for i in (0, 3):
        _, one = pb.jvp(lambda *p, i=i: g(*p, x[i:i + 1], y[i:i + 1]), params, vs)
        for a, b in zip(each, one):
            np.testing.assert_allclose(a[i], b, rtol=1e-10, atol=1e-12)


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # (1 - 1) * inf
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_bce_logits_in_two_arrays_has_the_expressions_values(dtype):
    rng = np.random.default_rng(6)
    x = (rng.standard_normal(1000) * 30).astype(dtype)
    x[:3] = [np.inf, -np.inf, 0]
    y = (rng.random(1000) < 0.5).astype(dtype)
    want = (1 - y) * x + np.log1p(np.exp(-np.abs(x))) + np.maximum(-x, 0)
    got = rt.bce_logits(x, y)
    np.testing.assert_array_equal(got, want)  # the same sum in the same order
    assert got.dtype == dtype
    np.testing.assert_array_equal(rt.bce_logits(x[:4, None], y[:3]),  # broadcast: as written
                                  (1 - y[:3]) * x[:4, None] + np.log1p(np.exp(-np.abs(
                                      x[:4, None]))) + np.maximum(-x[:4, None], 0))
    assert rt.bce_logits(np.asarray(dtype(2)), np.asarray(dtype(1))) == np.log1p(np.exp(dtype(-2)))


def test_logistic_regression_loss_through_rt_bce_logits_matches_torch():
    rng = np.random.default_rng(7)
    X, w, b = rng.standard_normal((50, 4)), rng.standard_normal(4), np.array(0.3)
    y = (rng.random(50) < 0.5).astype(np.float64)
    vg = pb.value_and_grad(lambda w, b: F.binary_cross_entropy_with_logits(X @ w + b, y),
                           argnums=(0, 1))
    value, (gw, gb) = vg(w, b)
    assert "rt.bce_logits(" in _source(vg)
    tw, tb = torch.tensor(w, requires_grad=True), torch.tensor(b, requires_grad=True)
    loss = torch.nn.functional.binary_cross_entropy_with_logits(torch.tensor(X) @ tw + tb,
                                                                torch.tensor(y))
    loss.backward()
    np.testing.assert_allclose(value, loss.item(), rtol=1e-13)
    np.testing.assert_allclose(gw, tw.grad.numpy(), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(gb, tb.grad.numpy(), rtol=1e-12, atol=1e-15)
