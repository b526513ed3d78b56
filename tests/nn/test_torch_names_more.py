"""torch names a 289-name sweep of commonly used torch found absent or refusing (issue 23):
values and gradients against torch in float64, and torch's errors where it raises."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb

R = np.random.default_rng(3)
A34, B34, V4 = R.standard_normal((3, 4)), R.standard_normal((3, 4)), R.standard_normal(4)
M33, S6 = R.standard_normal((3, 3)), R.standard_normal(6)
B1, B2 = R.standard_normal((2, 2, 3)), R.standard_normal((2, 3, 2))
B0 = R.standard_normal((2, 2, 2))


def _leaf(T, a):
    return T.tensor(a, dtype=T.float64, requires_grad=True)


# each takes the library and its leaves; the result's values and the leaves' gradients
# (of a fixed weighted sum of every float output) are compared with torch's
DIFFERENTIABLE = {
    "mv": (lambda T, a, v: T.mv(a, v), (A34, V4)),
    "mv_method": (lambda T, a, v: a.mv(v), (A34, V4)),
    "baddbmm": (lambda T, c, x, y: T.baddbmm(c, x, y, beta=0.5, alpha=2.0), (B0, B1, B2)),
    "logdet": (lambda T, a: T.logdet(a @ a.T + T.eye(3, dtype=T.float64)), (M33,)),
    "dist": (lambda T, a, b: [T.dist(a, b), T.dist(a, b, p=1)], (A34, B34)),
    "std_mean": (lambda T, a: [*T.std_mean(a, dim=1), *T.std_mean(a)], (A34,)),
    "var_mean": (lambda T, a: [*T.var_mean(a, 0, keepdim=True), *T.var_mean(a, unbiased=False)],
                 (A34,)),
    "kthvalue": (lambda T, a: [*T.kthvalue(a, 2), *a.kthvalue(1, dim=0, keepdim=True)], (A34,)),
    "cosine_similarity": (lambda T, a, b: T.cosine_similarity(a, b, dim=0), (A34, B34)),
    "unfold": (lambda T, s: [s.unfold(0, 2, 2), s.unfold(0, 3, 1)], (S6,)),
    "unfold_2d": (lambda T, a: a.unfold(1, 2, 1), (A34,)),
    "sum_to_size": (lambda T, a: [a.sum_to_size(1, 4), a.sum_to_size(4), a.sum_to_size(3, 1)],
                    (A34,)),
    "parameters_to_vector": (lambda T, a, v: T.nn.utils.parameters_to_vector([a, v]), (A34, V4)),
}


def _run(T, fn, arrays):
    leaves = [_leaf(T, a) for a in arrays]
    out = fn(T, *leaves)
    outs = out if isinstance(out, (list, tuple)) else [out]
    w = np.random.default_rng(9)
    loss = sum((o * T.tensor(w.standard_normal(tuple(o.shape)))).sum()
               for o in outs if o.dtype == T.float64)
    loss.backward()
    return ([o.detach().numpy() for o in outs],
            [leaf.grad.numpy() for leaf in leaves])


@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_values_and_gradients_as_torch(torch, name):
    fn, arrays = DIFFERENTIABLE[name]
    (tv, tg), (pv, pg) = _run(torch, fn, arrays), _run(pb, fn, arrays)
    for t, p in zip(tv + tg, pv + pg):
        np.testing.assert_allclose(p, t, rtol=1e-10, atol=1e-12)


VALUES = {
    "logspace": lambda T: T.logspace(0, 2, 3, dtype=T.float64),
    "logspace_base": lambda T: T.logspace(-1, 1, 5, base=2.0, dtype=T.float64),
    "numel": lambda T: T.numel(T.ones(2, 3)),
    "histc": lambda T: T.histc(T.tensor([0.1, 0.5, 0.9, 0.95, 2.0], dtype=T.float64), bins=4,
                               min=0, max=1),
    "histc_own_range": lambda T: T.histc(T.tensor([1.0, 2.0, 2.0, 4.0]), bins=3),
    "logdet_negative_and_singular": lambda T: [T.logdet(-T.eye(3, dtype=T.float64)),
                                               T.logdet(T.zeros(2, 2, dtype=T.float64))],
    "finfo": lambda T: [T.finfo(T.float64).eps, T.finfo(T.float32).max, T.finfo(T.float64).tiny,
                        T.finfo(T.float32).bits, T.finfo().eps],
    "iinfo": lambda T: [T.iinfo(T.int64).max, T.iinfo(T.int32).min, T.iinfo(T.uint8).bits],
    "promote_types": lambda T: str(T.promote_types(T.float32, T.int64)).split(".")[-1],
    "get_default_dtype": lambda T: str(T.get_default_dtype()).split(".")[-1],
    "is_contiguous": lambda T: [T.ones(2, 3).is_contiguous(), T.ones(2, 3).t().is_contiguous(),
                                T.ones(2, 3).t().contiguous().is_contiguous()],
    "element_size": lambda T: [T.ones(1, dtype=T.float64).element_size(),
                               T.ones(1, dtype=T.int32).element_size()],
    "generator_rand": lambda T: [
        T.rand(3, generator=T.Generator().manual_seed(1)).shape,
        T.randn(2, generator=T.Generator().manual_seed(1)).dtype.is_floating_point,
        T.randint(0, 3, (4,), generator=T.Generator()).dtype == T.int64],
    "concat_dataset": lambda T: (lambda d: [len(d), d[3][0], d[-1][0], d[0][0]])(
        T.utils.data.ConcatDataset([T.utils.data.TensorDataset(T.arange(2.0)),
                                    T.utils.data.TensorDataset(T.arange(10.0, 13.0))])),
    "vector_to_parameters": lambda T: (lambda m: [T.nn.utils.vector_to_parameters(
        T.arange(3.0), m.parameters()), m.weight.detach(), m.bias.detach()][1:])(T.nn.Linear(2, 1)),
}


@pytest.mark.parametrize("name", VALUES)
def test_values_as_torch(torch, name):
    t, p = VALUES[name](torch), VALUES[name](pb)
    t, p = (t if isinstance(t, list) else [t]), (p if isinstance(p, list) else [p])
    for u, v in zip(t, p):
        if hasattr(u, "detach"):
            u, v = u.detach().numpy(), v.detach().numpy()
        if isinstance(u, str) or type(u).__name__ == "Size":
            assert str(tuple(u)) == str(tuple(v)) if not isinstance(u, str) else u == v
        else:
            np.testing.assert_allclose(np.asarray(v, float), np.asarray(u, float), rtol=1e-12)


ERRORS = {
    "mv_shapes": lambda T: T.mv(T.ones(3), T.ones(3)),
    "kthvalue_range": lambda T: T.kthvalue(T.ones(3), 4),
    "unfold_size": lambda T: T.arange(3.0).unfold(0, 4, 1),
    "unfold_step": lambda T: T.arange(3.0).unfold(0, 2, 0),
    "sum_to_size": lambda T: T.ones(2, 3).sum_to_size(2),
    "finfo_int": lambda T: T.finfo(T.int64),
    "orthogonal_1d": lambda T: T.nn.init.orthogonal_(T.empty(3)),
}


@pytest.mark.parametrize("name", ERRORS)
def test_errors_as_torch(torch, name):
    for T in (torch, pb):
        with pytest.raises(Exception) as info:
            ERRORS[name](T)
        if T is torch:
            expected = type(info.value)
    assert isinstance(info.value, expected) or type(info.value).__name__ == expected.__name__


def test_orthogonal_init_is_orthogonal_and_seeded():
    w = pb.nn.init.orthogonal_(pb.empty(3, 5, dtype=pb.float64), gain=2.0,
                               generator=pb.Generator().manual_seed(0))
    np.testing.assert_allclose(w.numpy() @ w.numpy().T, 4 * np.eye(3), atol=1e-12)
    tall = pb.nn.init.orthogonal_(pb.empty(4, 2, 2, dtype=pb.float64)).numpy().reshape(4, 4)
    np.testing.assert_allclose(tall.T @ tall, np.eye(4), atol=1e-12)


def test_gumbel_softmax_soft_hard_and_straight_through():
    logits = pb.tensor([[1.0, 2.0, 0.5], [0.0, 0.0, 3.0]], dtype=pb.float64, requires_grad=True)
    pb.manual_seed(0)
    soft = pb.nn.functional.gumbel_softmax(logits, tau=0.5)
    np.testing.assert_allclose(soft.sum(-1).detach().numpy(), [1.0, 1.0])
    pb.manual_seed(0)
    hard = pb.nn.functional.gumbel_softmax(logits, tau=0.5, hard=True)
    s = soft.detach().numpy()
    np.testing.assert_array_equal(hard.detach().numpy(), s == s.max(-1, keepdims=True))
    w = pb.tensor([[1.0, -1.0, 2.0], [0.5, 0.0, 1.0]], dtype=pb.float64)
    g_hard = pb.autograd.grad((hard * w).sum(), logits)[0]
    g_soft = pb.autograd.grad((soft * w).sum(), logits)[0]
    np.testing.assert_allclose(g_hard.numpy(), g_soft.numpy())  # straight-through


def test_default_dtype_round_trip():
    assert pb.get_default_dtype() is pb.float32
    try:
        pb.set_default_dtype(pb.float64)
        assert pb.tensor([1.0]).dtype is pb.float64 and pb.ones(2).dtype is pb.float64
    finally:
        pb.set_default_dtype(pb.float32)
    assert pb.tensor([1.0]).dtype is pb.float32
    with pytest.raises(TypeError):
        pb.set_default_dtype(pb.int64)


def test_apply_as_torch(torch):
    """``Tensor.apply_``: each element through a Python function, in place; refused on a
    tensor that requires grad (torch's message) and on a traced value (the user's line)."""
    for dtype in ("float64", "int64"):
        got, want = (T.tensor([[1, 2, 3], [4, 5, 6]], dtype=getattr(T, dtype)).t()
                     for T in (pb, torch))
        assert got.apply_(lambda v: v * 2.7 + 1) is got
        want.apply_(lambda v: v * 2.7 + 1)
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    for T in (pb, torch):
        with pytest.raises(RuntimeError, match=r"Can't call apply_\(\) on Variable that "
                           r"requires grad. Use var.detach\(\).apply_\(\) instead."):
            T.ones(2, requires_grad=True).apply_(abs)
        with pytest.raises(TypeError, match="must be real number, not str"):
            T.ones(2).apply_(str)

    @pb.compile
    def f(a):
        b = a * 2
        b.apply_(abs)
        return b
    with pytest.raises(RuntimeError, match=r"apply_\(\) at test_torch_names_more.py:\d+ "
                       r"\(b.apply_\(abs\)\)"):
        f(pb.ones(2))


def test_tensor_of_a_tensor_warns_and_as_tensor_converts(torch):
    """``tensor(t)``: torch's copy-construct warning, a new leaf; ``as_tensor(t, dtype)``:
    a conversion that keeps the gradient (ToCopyBackward0)."""
    for T in (pb, torch):
        t = T.ones(2, requires_grad=True, dtype=T.float64)
        with pytest.warns(UserWarning, match=r"rather than torch.tensor\(sourceTensor\)\.$"):
            u = T.tensor(t)
        assert not u.requires_grad and u.grad_fn is None
        v = T.as_tensor(t, dtype=T.float32)
        assert v.requires_grad and type(v.grad_fn).__name__ == "ToCopyBackward0"
        v.sum().backward()
        np.testing.assert_array_equal(np.asarray(t.grad), [1.0, 1.0])
        assert T.as_tensor(t) is t
