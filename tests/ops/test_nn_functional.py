"""torch.nn.functional's composed functions (no op of their own, so no op case):
values and gradients against torch's, the same under pb.compile and pb.grad, and
torch's errors for bad arguments."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb
import pullback.nn.functional as F

R = np.random.default_rng(0)


def data(*shape):
    return R.standard_normal(shape)


MASK = R.random((4, 6)) < 0.6
MASK[1] = False  # a query row that sees no key
FUNCTIONS = {
    "normalize": (lambda M, x: M.normalize(x, p=3.0, dim=0), [data(3, 4)]),
    "cosine_similarity": (lambda M, x, y: M.cosine_similarity(x, y, dim=-1), [data(3, 4),
                                                                             data(1, 4)]),
    "pairwise_distance": (lambda M, x, y: M.pairwise_distance(x, y, keepdim=True),
                          [data(3, 4), data(3, 4)]),
    "softsign": (lambda M, x: M.softsign(x), [data(3, 4)]),
    "instance_norm": (lambda M, x, w, b: M.instance_norm(x, weight=w, bias=b),
                      [data(2, 3, 5), data(3), data(3)]),
    "rms_norm": (lambda M, x, w: M.rms_norm(x, (4,), w, eps=1e-4), [data(2, 3, 4), data(4)]),
    "local_response_norm": (lambda M, x: M.local_response_norm(x, 4, 0.1, 0.6, 1.5),
                            [data(2, 5, 3, 2)]),
    "l1_weighted": (lambda M, x, y, w: M.l1_loss(x, y, weight=w), [data(3, 4), data(3, 4),
                                                                    data(3, 4) ** 2]),
    "mse_weighted": (lambda M, x, y, w: M.mse_loss(x, y, reduction="sum", weight=w),
                     [data(3, 4), data(3, 4), data(3, 4) ** 2]),
    "mse_weighted_mean": (lambda M, x, y, w: M.mse_loss(x, y, weight=w),
                          [data(3, 4), data(3, 4), data(3, 4) ** 2]),
    "huber_weighted": (lambda M, x, y, w: M.huber_loss(x, y, weight=w, delta=0.5),
                       [data(3, 4), data(3, 4), data(3, 4) ** 2]),
    "sdpa": (lambda M, q, k, v: M.scaled_dot_product_attention(q, k, v),
             [data(2, 3, 4, 8), data(2, 3, 6, 8), data(2, 3, 6, 5)]),
    "sdpa_causal_scale": (lambda M, q, k, v: M.scaled_dot_product_attention(
        q, k, v, is_causal=True, scale=0.2), [data(2, 4, 8), data(2, 6, 8), data(2, 6, 5)]),
    "sdpa_bool_mask": (lambda M, q, k, v: M.scaled_dot_product_attention(
        q, k, v, attn_mask=M.tensor(MASK)), [data(2, 4, 8), data(2, 6, 8), data(2, 6, 5)]),
    "sdpa_float_mask": (lambda M, q, k, v, m: M.scaled_dot_product_attention(
        q, k, v, attn_mask=m), [data(4, 8), data(6, 8), data(6, 5), data(4, 6)]),
    "sdpa_gqa": (lambda M, q, k, v: M.scaled_dot_product_attention(q, k, v, enable_gqa=True),
                 [data(1, 4, 3, 8), data(1, 2, 5, 8), data(1, 2, 5, 8)]),
}


def _torch_call(torch, name, arrays):
    fn, _ = FUNCTIONS[name]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]

    class M:  # torch.nn.functional with torch.cdist and torch.tensor
        def __getattr__(self, attr):
            return getattr(torch.nn.functional, attr, None) or getattr(torch, attr)
    return ts, fn(M(), *ts)


class _PB:
    def __getattr__(self, attr):
        return getattr(F, attr, None) or getattr(pb, attr)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_function_matches_torch(name, torch):
    fn, arrays = FUNCTIONS[name]
    ts, expected = _torch_call(torch, name, arrays)
    xs = [pb.tensor(a, requires_grad=True) for a in arrays]
    out = fn(_PB(), *xs)
    np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), rtol=1e-10,
                               atol=1e-12)
    w = R.standard_normal(expected.shape)
    (out * pb.tensor(w)).sum().backward()
    (expected * torch.tensor(w)).sum().backward()
    for x, t in zip(xs, ts):
        np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-9, atol=1e-12)
    assert type(out.grad_fn).__name__ == type(expected.grad_fn).__name__ or name in (
        "pairwise_distance", "sdpa", "sdpa_causal_scale", "sdpa_bool_mask", "sdpa_float_mask",
        "sdpa_gqa")


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_function_compiles_and_differentiates_like_eager(name):
    fn, arrays = FUNCTIONS[name]
    xs = [pb.tensor(a) for a in arrays]

    def loss(*xs):
        return (fn(_PB(), *xs) ** 2).sum()
    eager = [pb.tensor(a, requires_grad=True) for a in arrays]
    loss(*eager).backward()
    grads = pb.grad(loss, argnums=tuple(range(len(xs))))(*xs)
    for g, x in zip(grads, eager):
        np.testing.assert_allclose(g.numpy(), x.grad.numpy(), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(pb.compile(loss)(*xs).numpy(), loss(*xs).numpy(), rtol=1e-12)


def test_cdist_matches_torch(torch):
    a, b = data(2, 4, 3), data(2, 5, 3)
    for p in (1.0, 2.0, 3.0):
        ours = pb.cdist(pb.tensor(a), pb.tensor(b), p)
        np.testing.assert_allclose(ours.numpy(), torch.cdist(torch.tensor(a), torch.tensor(b),
                                                             p).numpy(), rtol=1e-10)


def test_one_hot_matches_torch(torch):
    for args in (([[1, 4], [0, 2]],), ([1, 2], 5), (3,)):
        ours = F.one_hot(pb.tensor(args[0]), *args[1:])
        theirs = torch.nn.functional.one_hot(torch.tensor(args[0]), *args[1:])
        assert ours.dtype == pb.int64 and ours.shape == tuple(theirs.shape)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


ERRORS = [
    (lambda M, T: M.one_hot(T.tensor([1, 5]), 3), RuntimeError,
     "Class values must be smaller than num_classes."),
    (lambda M, T: M.one_hot(T.tensor([-1]), 3), RuntimeError,
     "Class values must be non-negative."),
    (lambda M, T: M.one_hot(T.tensor([1.0])), RuntimeError,
     "one_hot is only applicable to index tensor of type LongTensor."),
    (lambda M, T: M.one_hot(T.tensor([], dtype=T.int64)), RuntimeError,
     "Can not infer total number of classes from empty tensor."),
    (lambda M, T: M.glu(T.ones(3, 5), 1), RuntimeError,
     "Halving dimension must be even, but dimension 1 is size 5"),
    (lambda M, T: M.layer_norm(T.ones(4, 5), (6,)), RuntimeError,
     r"Given normalized_shape=\[6\], expected input with shape \[\*, 6\], but got input of "
     r"size\[4, 5\]"),
    (lambda M, T: M.group_norm(T.ones(2, 3, 5), 2), RuntimeError,
     r"Expected number of channels in input to be divisible by num_groups, but got input of "
     r"shape \[2, 3, 5\] and num_groups=2"),
    (lambda M, T: M.batch_norm(T.ones(1, 3), T.zeros(3), T.ones(3), training=True), ValueError,
     r"Expected more than 1 value per channel when training, got input size "
     r"torch.Size\(\[1, 3\]\)"),
    (lambda M, T: M.cross_entropy(T.ones(3, 4), T.tensor([0, 4, 1])), IndexError,
     "Target 4 is out of bounds."),
    (lambda M, T: M.cross_entropy(T.ones(3, 4), T.tensor([0, 1])), ValueError,
     r"Expected input batch_size \(3\) to match target batch_size \(2\)."),
    (lambda M, T: M.dropout(T.ones(3), 1.5), ValueError,
     "dropout probability has to be between 0 and 1, but got 1.5"),
    (lambda M, T: M.scaled_dot_product_attention(T.ones(2, 3), T.ones(2, 3), T.ones(2, 3),
                                                 attn_mask=T.ones(2, 2), is_causal=True),
     RuntimeError, "Explicit attn_mask should not be set when is_causal=True"),
    (lambda M, T: M.prelu(T.ones(2, 3), T.ones(2)), RuntimeError,
     "Mismatch of parameter numbers and input channel size. Found parameter numbers = 2 and "
     "channel size = 3."),
]


@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_errors_are_torchs(case, torch):
    make, kind, message = ERRORS[case]
    for M, T in ((F, pb), (torch.nn.functional, torch)):
        with pytest.raises(kind, match=message):
            make(M, T)
