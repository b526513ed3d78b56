"""The torch names of issue 23 against torch itself: device boilerplate, products and
their dtype/shape errors, Tensor.new_*, comparisons, random draws and Generator, unique/
bincount/searchsorted, gradient clipping, pad_sequence, trunc_normal_, constructor checks,
the weighted BCE losses and module backward hooks."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import pullback as pb

R = np.random.default_rng(0)


def outcome(lib, fn):
    """(error type name, message) or ("OK", value as numpy/Python)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = fn(lib)
    except Exception as e:  # noqa: BLE001 - the comparison is of the exception
        return type(e).__name__, str(e)
    if hasattr(r, "detach"):
        r = r.detach().numpy()
    return "OK", r


def same(torch, fn):
    """``fn`` on torch and on pullback: the same error (type and text), or the same value."""
    t, p = outcome(torch, fn), outcome(pb, fn)
    assert t[0] == p[0], (t, p)
    if t[0] == "OK" and np.asarray(t[1]).dtype.kind in "biufc":
        np.testing.assert_allclose(np.asarray(p[1]), np.asarray(t[1]), rtol=1e-6, atol=1e-6)
    elif t[0] == "OK":
        assert p[1] == t[1]
    else:
        assert p[1] == t[1]


def f64(T):
    return T.float64


# --------------------------------------------------------------------------- devices
DEVICE_CASES = {
    "cuda_method": lambda T: T.ones(2).cuda(),
    "to_cuda": lambda T: T.ones(2).to("cuda"),
    "to_cuda_index": lambda T: T.ones(2).to("cuda:0"),
    "to_cuda_device": lambda T: T.ones(2).to(T.device("cuda")),
    "to_bad_string": lambda T: T.ones(2).to("gpu"),
    "to_not_a_device": lambda T: T.ones(2).to("float32"),
    "device_bad": lambda T: T.device("gpu"),
    "to_cpu_dtype": lambda T: T.ones(2).to("cpu", T.float64).dtype == T.float64,
    "to_kwargs": lambda T: T.ones(2).to(device="cpu", dtype=T.float64).dtype == T.float64,
    "to_other": lambda T: T.ones(2).to(T.ones(1, dtype=T.float64)).dtype == T.float64,
    "to_dtype": lambda T: T.ones(2).to(T.int64),
    "cpu": lambda T: T.arange(3.0).cpu(),
    "device_str": lambda T: str(T.ones(2).device) == "cpu",
    "device_eq": lambda T: T.ones(2).device == T.device("cpu"),
    "is_cuda": lambda T: (T.ones(1).is_cuda, T.cuda.is_available(), T.cuda.device_count()),
}


@pytest.mark.parametrize("name", DEVICE_CASES)
def test_devices_as_torch_cpu_build(torch, name):
    same(torch, DEVICE_CASES[name])


def test_device_repr_and_to_keeps_gradient():
    assert repr(pb.device("cpu")) == "device(type='cpu')"
    assert repr(pb.device("cuda", 1)) == "device(type='cuda', index=1)"
    x = pb.ones(3, requires_grad=True)
    assert x.to("cpu") is x and x.cpu() is x
    (x.to(pb.float64) * 2).sum().backward()
    assert x.grad.dtype == pb.float32 and x.grad.tolist() == [2.0, 2.0, 2.0]


# ------------------------------------------------------------------ products' checks
PRODUCT_ERRORS = {
    "mm_dtype": lambda T: T.ones(2, 3, dtype=f64(T)) @ T.ones(3, 4),
    "dot_dtype": lambda T: T.ones(3, dtype=f64(T)) @ T.ones(3),
    "mv_dtype": lambda T: T.ones(2, 3, dtype=f64(T)) @ T.ones(3),
    "mv_dtype_vec": lambda T: T.ones(2, 3) @ T.ones(3, dtype=f64(T)),
    "vm_dtype": lambda T: T.ones(3, dtype=f64(T)) @ T.ones(3, 2),
    "bmm_dtype": lambda T: T.ones(5, 2, 3, dtype=f64(T)) @ T.ones(5, 3, 2),
    "bmm_dtype2": lambda T: T.ones(2, 3) @ T.ones(5, 3, 2, dtype=f64(T)),
    "folded_dtype": lambda T: T.ones(5, 2, 3, dtype=f64(T)) @ T.ones(3, 2),
    "batched_mv_dtype": lambda T: T.ones(5, 2, 3, dtype=f64(T)) @ T.ones(3),
    "int_float": lambda T: T.ones(2, 3, dtype=T.int64) @ T.ones(3, 4),
    "linear": lambda T: T.nn.Linear(3, 2)(T.ones(4, 3, dtype=f64(T))),
    "linear_1d": lambda T: T.nn.Linear(3, 2)(T.ones(3, dtype=f64(T))),
    "linear_3d": lambda T: T.nn.Linear(3, 2)(T.ones(5, 4, 3, dtype=f64(T))),
    "linear_no_bias": lambda T: T.nn.Linear(3, 2, bias=False)(T.ones(4, 3, dtype=f64(T))),
    "linear_weight": lambda T: T.nn.functional.linear(T.ones(2, 3), T.ones(4, 3, dtype=f64(T))),
    "linear_bias": lambda T: T.nn.functional.linear(T.ones(2, 3), T.ones(4, 3),
                                                    T.ones(4, dtype=f64(T))),
    "mm_shapes": lambda T: T.ones(2, 3) @ T.ones(4, 5),
    "dot_shapes": lambda T: T.ones(3) @ T.ones(4),
    "mv_shapes": lambda T: T.ones(2, 3) @ T.ones(4),
    "vm_shapes": lambda T: T.ones(3) @ T.ones(4, 5),
    "bmm_shapes": lambda T: T.ones(6, 2, 3) @ T.ones(6, 4, 5),
    "folded_shapes": lambda T: T.ones(6, 2, 3) @ T.ones(4, 5),
    "batched_mv_shapes": lambda T: T.ones(6, 2, 3) @ T.ones(4),
    "broadcast_bmm_shapes": lambda T: T.ones(2, 3) @ T.ones(6, 4, 5),
    "batch_mismatch": lambda T: T.ones(3, 2, 3) @ T.ones(4, 3, 5),
    "torch_mm": lambda T: T.mm(T.ones(2, 3), T.ones(3, 2, dtype=f64(T))),
    "bmm_fn_dtype": lambda T: T.bmm(T.ones(2, 2, 3), T.ones(2, 3, 2, dtype=f64(T))),
    "bmm_fn_2d": lambda T: T.bmm(T.ones(2, 3), T.ones(3, 2)),
    "bmm_fn_shapes": lambda T: T.bmm(T.ones(2, 2, 3), T.ones(2, 4, 2)),
    "bmm_fn_batch": lambda T: T.bmm(T.ones(2, 2, 3), T.ones(3, 3, 2)),
    "dot_fn_2d": lambda T: T.dot(T.ones(2, 2), T.ones(2)),
    "dot_fn_sizes": lambda T: T.dot(T.ones(2), T.ones(3)),
    "dot_fn_dtype": lambda T: T.dot(T.ones(2), T.ones(2, dtype=f64(T))),
    "addmm_dtype": lambda T: T.addmm(T.ones(2), T.ones(2, 3), T.ones(3, 2, dtype=f64(T))),
    "addmm_self_dtype": lambda T: T.addmm(T.ones(2, dtype=f64(T)), T.ones(2, 3), T.ones(3, 2)),
    "addmm_shapes": lambda T: T.addmm(T.ones(3), T.ones(2, 3), T.ones(4, 3)),
}


@pytest.mark.parametrize("name", PRODUCT_ERRORS)
def test_product_errors_as_torch(torch, name):
    same(torch, PRODUCT_ERRORS[name])


def test_numpy_face_keeps_numpy_promotion():
    """float64 @ float32 is numpy's float64 product on the numpy face (no torch check)."""
    a, b = R.standard_normal((2, 3)), R.standard_normal((3, 4)).astype(np.float32)
    g = pb.grad(lambda x: (x @ b).sum())(a)
    np.testing.assert_allclose(g, np.broadcast_to(b.sum(1), (2, 3)), rtol=1e-6)


PRODUCTS = {
    "bmm": (lambda T, a, b: T.bmm(a, b), [(2, 3, 4), (2, 4, 5)]),
    "bmm_method": (lambda T, a, b: a.bmm(b), [(2, 3, 4), (2, 4, 5)]),
    "dot": (lambda T, a, b: T.dot(a, b), [(4,), (4,)]),
    "addmm": (lambda T, c, a, b: T.addmm(c, a, b), [(5,), (3, 4), (4, 5)]),
    "addmm_scaled": (lambda T, c, a, b: T.addmm(c, a, b, beta=0.5, alpha=-2.0),
                     [(3, 5), (3, 4), (4, 5)]),
    "addmm_method": (lambda T, c, a, b: c.addmm(a, b, alpha=3.0), [(3, 5), (3, 4), (4, 5)]),
}


@pytest.mark.parametrize("name", PRODUCTS)
def test_products_values_and_gradients(torch, name):
    fn, shapes = PRODUCTS[name]
    data = [R.standard_normal(s) for s in shapes]
    res = []
    for T in (torch, pb):
        xs = [T.tensor(d, requires_grad=True) for d in data]
        out = fn(T, *xs)
        out.backward(T.ones_like(out))
        res.append([out.detach().numpy()] + [x.grad.numpy() for x in xs])
    for p, t in zip(res[1], res[0]):
        np.testing.assert_allclose(p, t, rtol=1e-10, atol=1e-12)


def test_addmm_beta_zero_ignores_nan_input(torch):
    for T in (torch, pb):
        out = T.addmm(T.tensor([float("nan")] * 2), T.ones(2, 3), T.ones(3, 2), beta=0)
        assert out.tolist() == [[3.0, 3.0], [3.0, 3.0]]


# ------------------------------------------------------- constructors and Tensor.new_*
CONSTRUCTOR_CASES = {
    "str": lambda T: T.tensor("abc"),
    "none": lambda T: T.tensor(None),
    "mixed": lambda T: T.tensor([1, "a"]),
    "none_in_list": lambda T: T.tensor([[1.0], [None]]),
    "object": lambda T: T.tensor(object()),
    "dict": lambda T: T.tensor({"a": 1}),
    "bytes": lambda T: T.tensor(b"ab"),
    "linear_in_str": lambda T: T.nn.Linear("hello", 3),
    "linear_out_str": lambda T: T.nn.Linear(3, "hello"),
    "linear_float": lambda T: T.nn.Linear(3.5, 2),
    "new_zeros_bad": lambda T: T.ones(2).new_zeros(2, "a"),
    "new_zeros": lambda T: T.ones(2, dtype=T.float64).new_zeros(2, 3),
    "new_ones": lambda T: T.ones(2, dtype=T.int32).new_ones((3,)),
    "new_full": lambda T: T.ones(2).new_full((2, 2), 7.0),
    "new_tensor": lambda T: T.ones(2, dtype=T.float64).new_tensor([1, 2]),
    "new_tensor_dtype": lambda T: T.ones(2).new_tensor([1, 2], dtype=T.int64),
    "new_empty_shape": lambda T: T.ones(2).new_empty(3, 4).shape,
}


@pytest.mark.parametrize("name", CONSTRUCTOR_CASES)
def test_constructors_as_torch(torch, name):
    same(torch, CONSTRUCTOR_CASES[name])


def test_new_dtypes_and_flags(torch):
    x = pb.ones(2, dtype=pb.float64)
    assert x.new_zeros(2).dtype == pb.float64 and x.new_ones(1, dtype=pb.int64).dtype == pb.int64
    assert x.new_full((2,), 1.0, requires_grad=True).requires_grad
    with pytest.warns(UserWarning, match="rather than tensor.new_tensor"):
        pb.ones(2, requires_grad=True).new_tensor(pb.ones(2))


# ------------------------------------------------------------------- small functions
MISC_CASES = {
    "allclose": lambda T: T.allclose(T.ones(3), T.ones(3) + 1e-9),
    "allclose_far": lambda T: T.allclose(T.ones(3), T.ones(3) + 1e-3),
    "allclose_nan": lambda T: T.allclose(T.tensor([float("nan")]), T.tensor([float("nan")]),
                                         equal_nan=True),
    "allclose_dtype": lambda T: T.allclose(T.ones(2), T.ones(2, dtype=f64(T))),
    "allclose_shape": lambda T: T.allclose(T.ones(2), T.ones(3)),
    "isclose": lambda T: T.isclose(T.tensor([1.0, 2.0]), T.tensor([1.0, 2.1]), atol=0.05),
    "isclose_dtype": lambda T: T.isclose(T.ones(2), T.ones(2, dtype=f64(T))),
    "equal": lambda T: (T.equal(T.ones(2), T.ones(2)), T.equal(T.ones(2), T.ones(3)),
                        T.equal(T.ones(2), T.ones(2, dtype=f64(T)))),
    "equal_method": lambda T: T.arange(3).equal(T.tensor([0, 1, 2])),
    "is_tensor": lambda T: (T.is_tensor(T.ones(1)), T.is_tensor(np.ones(1)),
                            T.is_tensor(T.nn.Parameter(T.ones(1)))),
    "unique": lambda T: T.unique(T.tensor([3, 1, 3, 2])),
    "unique_all": lambda T: T.cat([t.double() for t in T.unique(
        T.tensor([3, 1, 3]), return_inverse=True, return_counts=True)]),
    "unique_inverse_2d": lambda T: T.tensor([[3, 1], [1, 2]]).unique(return_inverse=True)[1],
    "unique_dim": lambda T: T.unique(T.tensor([[3, 1], [1, 0], [3, 1]]), dim=0),
    "bincount": lambda T: T.bincount(T.tensor([1, 1, 4]), minlength=7),
    "bincount_weights": lambda T: T.bincount(T.tensor([1, 1, 0]),
                                             weights=T.tensor([0.5, 2.0, 1.0])),
    "bincount_float": lambda T: T.bincount(T.tensor([1.0, 2.0])),
    "bincount_negative": lambda T: T.bincount(T.tensor([-1, 2])),
    "bincount_2d": lambda T: T.bincount(T.ones(2, 2, dtype=T.long)),
    "searchsorted": lambda T: T.searchsorted(T.tensor([1.0, 3.0, 5.0]), T.tensor([3.0, 6.0])),
    "searchsorted_right": lambda T: T.searchsorted(T.tensor([1.0, 3.0, 5.0]),
                                                   T.tensor([3.0]), right=True),
    "searchsorted_side": lambda T: T.searchsorted(T.tensor([1.0, 3.0]), T.tensor([3.0]),
                                                  side="right"),
    "searchsorted_rows": lambda T: T.searchsorted(T.tensor([[1.0, 2.0], [0.0, 5.0]]),
                                                  T.tensor([[1.5], [1.0]])),
    "searchsorted_int32": lambda T: str(T.searchsorted(T.tensor([1.0]), T.tensor([2.0]),
                                                       out_int32=True).dtype)[-5:],
    "searchsorted_opposite": lambda T: T.searchsorted(T.tensor([1.0, 3.0]), T.tensor([2.0]),
                                                      side="left", right=True),
    "searchsorted_dims": lambda T: T.searchsorted(T.tensor([[1.0, 2.0]]), T.tensor([1.0])),
    "flip_dims": lambda T: T.flip(T.arange(6).reshape(2, 3), dims=[0, 1]),
    "flip_method_dims": lambda T: T.arange(3).flip(dims=(0,)),
    "flip_dims_int": lambda T: T.flip(T.arange(3), dims=0),
    "add_alpha": lambda T: T.ones(2).add_(T.tensor([1.0, 2.0]), alpha=3),
    "sub_alpha": lambda T: T.ones(2).sub_(T.tensor([1.0, 2.0]), alpha=0.5),
    "scatter_": lambda T: T.zeros(2, 3).scatter_(1, T.tensor([[2], [0]]),
                                                 T.tensor([[5.0], [6.0]])),
    "scatter_value": lambda T: T.zeros(3).scatter_(0, T.tensor([1]), 4.0),
    "scatter_add_": lambda T: T.ones(3).scatter_add_(0, T.tensor([0, 0, 2]),
                                                     T.tensor([1.0, 2.0, 3.0])),
}


@pytest.mark.parametrize("name", MISC_CASES)
def test_functions_as_torch(torch, name):
    same(torch, MISC_CASES[name])


def test_inplace_alpha_and_scatter_gradients(torch):
    res = []
    for T in (torch, pb):
        x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
        s = T.tensor([0.5, -1.0], requires_grad=True)
        y = x * 1
        y.add_(x, alpha=2.0)
        y.scatter_add_(0, T.tensor([2, 0]), s * 3)
        y.scatter_(0, T.tensor([1]), s[:1])
        (y * T.tensor([1.0, 2.0, 3.0])).sum().backward()
        res.append((y.detach().numpy(), x.grad.numpy(), s.grad.numpy()))
    for p, t in zip(res[1], res[0]):
        np.testing.assert_allclose(p, t)


# ---------------------------------------------------------------- random draws
RANDOM_ERRORS = {
    "randperm_negative": lambda T: T.randperm(-1),
    "bernoulli_p": lambda T: T.bernoulli(T.tensor([0.5, 2.0])),
    "bernoulli_int": lambda T: T.bernoulli(T.tensor([1, 0])),
    "multinomial_too_many": lambda T: T.multinomial(T.tensor([0.5, 0.5]), 3),
    "multinomial_negative": lambda T: T.multinomial(T.tensor([0.5, -0.5]), 1),
    "multinomial_zero": lambda T: T.multinomial(T.tensor([0.0, 0.0]), 1),
    "multinomial_3d": lambda T: T.multinomial(T.ones(2, 2, 2), 1),
    "normal_std": lambda T: T.normal(T.zeros(2), -1.0),
    "normal_floats": lambda T: T.normal(0.0, 1.0),
    "uniform_range": lambda T: T.ones(2).uniform_(3, 1),
    "normal_std_": lambda T: T.ones(2).normal_(0, -1),
    "uniform_leaf": lambda T: T.ones(2, requires_grad=True).uniform_(),
    "trunc_normal_range": lambda T: T.nn.init.trunc_normal_(T.empty(3), a=2, b=-2),
    "dtypes": lambda T: [str(d).split(".")[-1] for d in (
        T.randperm(3).dtype, T.randperm(3, dtype=T.float32).dtype,
        T.normal(0.0, 1.0, size=(2,)).dtype, T.normal(T.zeros(2, dtype=f64(T)), 1.0).dtype,
        T.bernoulli(T.ones(2, dtype=f64(T))).dtype, T.multinomial(T.ones(3), 2).dtype)],
    "shapes": lambda T: str([tuple(t.shape) for t in (
        T.normal(T.zeros(2, 3), 1.0), T.normal(0.0, T.ones(2)), T.normal(T.zeros(2, 1),
                                                                         T.ones(3)),
        T.multinomial(T.ones(4, 3), 5, replacement=True), T.bernoulli(T.ones(2, 3), 0.3))]),
    "zero_weight_last": lambda T: T.multinomial(T.tensor([1.0, 0.0, 0.0]), 1),
}


@pytest.mark.parametrize("name", RANDOM_ERRORS)
def test_random_functions_as_torch(torch, name):
    same(torch, RANDOM_ERRORS[name])


def test_generator_is_reproducible():
    def draws(g):
        return (pb.randperm(6, generator=g).tolist(), pb.normal(0.0, 1.0, (3,), generator=g),
                pb.bernoulli(pb.full((4,), 0.5), generator=g).tolist(),
                pb.multinomial(pb.ones(5), 3, generator=g).tolist(),
                pb.ones(3).uniform_(generator=g), pb.ones(2).normal_(generator=g))
    a, b = draws(pb.Generator().manual_seed(7)), draws(pb.Generator().manual_seed(7))
    for x, y in zip(a, b):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    g = pb.Generator().manual_seed(3)
    assert g.initial_seed() == 3
    state = g.get_state()
    first = pb.randperm(10, generator=g).tolist()
    assert pb.randperm(10, generator=g.set_state(state)).tolist() == first
    pb.manual_seed(1)
    p1 = pb.randperm(8).tolist()
    pb.manual_seed(1)
    assert pb.randperm(8).tolist() == p1 and sorted(p1) == list(range(8))
    w = pb.empty(3)
    pb.nn.init.normal_(w, generator=pb.Generator().manual_seed(2))
    w2 = pb.empty(3)
    pb.nn.init.normal_(w2, generator=pb.Generator().manual_seed(2))
    assert w.tolist() == w2.tolist()


def test_distributions_of_draws():
    g = pb.Generator().manual_seed(0)
    n = pb.normal(pb.full((20000,), 2.0), 3.0, generator=g).numpy()
    assert abs(n.mean() - 2.0) < 0.1 and abs(n.std() - 3.0) < 0.1
    b = pb.bernoulli(pb.full((20000,), 0.3), generator=g).numpy()
    assert set(np.unique(b)) == {0.0, 1.0} and abs(b.mean() - 0.3) < 0.02
    m = pb.multinomial(pb.tensor([1.0, 2.0, 7.0]), 20000, replacement=True,
                       generator=g).numpy()
    np.testing.assert_allclose(np.bincount(m) / m.size, [0.1, 0.2, 0.7], atol=0.02)
    rows = pb.multinomial(pb.ones(50, 4), 4, generator=g).numpy()
    assert all(sorted(r) == [0, 1, 2, 3] for r in rows)  # without replacement: no repeats
    u = pb.empty(20000).uniform_(-1.0, 3.0, generator=g).numpy()
    assert u.min() >= -1.0 and u.max() < 3.0 and abs(u.mean() - 1.0) < 0.05
    t = pb.nn.init.trunc_normal_(pb.empty(20000), 1.0, 2.0, -1.0, 3.0, generator=g).numpy()
    # N(1, 4) truncated to [-1, 3] (one std each side): std 2 * 0.5379
    assert t.min() >= -1.0 and t.max() <= 3.0 and abs(t.mean() - 1.0) < 0.05
    assert abs(t.std() - 2 * 0.5379) < 0.03


def test_zero_gradient_through_draws(torch):
    """torch gives a mean, std or probability that requires grad a zero gradient."""
    for T in (torch, pb):
        m, s = T.zeros(3, requires_grad=True), T.ones(3, requires_grad=True)
        p = T.full((3,), 0.5, requires_grad=True)
        (T.normal(m, s).sum() + T.bernoulli(p).sum()).backward()
        assert m.grad.tolist() == s.grad.tolist() == p.grad.tolist() == [0.0] * 3


def test_trunc_normal_warns_as_torch():
    with pytest.warns(UserWarning, match="mean is more than 2 std from"):
        pb.nn.init.trunc_normal_(pb.empty(3), mean=5.0, a=-2.0, b=2.0)


# ----------------------------------------------------------------- nn.utils
def _clip_run(T, fn, grads):
    ps = [T.nn.Parameter(T.ones(g.shape, dtype=T.float64)) for g in grads]
    for p, g in zip(ps, grads):
        p.grad = T.tensor(g)
    total = fn(T, ps)
    return (None if total is None else float(total)), [p.grad.numpy() for p in ps]


CLIP = {
    "norm": lambda T, ps: T.nn.utils.clip_grad_norm_(ps, 1.0),
    "norm_no_clip": lambda T, ps: T.nn.utils.clip_grad_norm_(ps, 100.0),
    "norm_inf": lambda T, ps: T.nn.utils.clip_grad_norm_(ps, 0.5, norm_type="inf"),
    "norm_1": lambda T, ps: T.nn.utils.clip_grad_norm_(ps, 2.0, norm_type=1, foreach=True),
    "norm_single": lambda T, ps: T.nn.utils.clip_grad_norm_(ps[0], 1.0),
    "value": lambda T, ps: T.nn.utils.clip_grad_value_(ps, 0.3),
}


@pytest.mark.parametrize("name", CLIP)
def test_clip_grad_as_torch(torch, name):
    grads = [R.standard_normal((3, 2)), R.standard_normal(4)]
    t, p = _clip_run(torch, CLIP[name], grads), _clip_run(pb, CLIP[name], grads)
    assert (t[0] is None) == (p[0] is None)
    if t[0] is not None:
        assert p[0] == pytest.approx(t[0], rel=1e-12)
    for a, b in zip(p[1], t[1]):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_clip_grad_errors_as_torch(torch):
    def nonfinite(T):
        p = T.nn.Parameter(T.ones(2))
        p.grad = T.tensor([float("inf"), 1.0])
        return T.nn.utils.clip_grad_norm_([p], 1.0, error_if_nonfinite=True)
    same(torch, nonfinite)
    same(torch, lambda T: T.nn.utils.clip_grad_norm_([T.nn.Parameter(T.ones(2))], 1.0))


PAD = {
    "time_major": dict(),
    "batch_first": dict(batch_first=True, padding_value=-1.0),
    "left": dict(batch_first=True, padding_side="left"),
}


@pytest.mark.parametrize("name", PAD)
def test_pad_sequence_values_and_gradients(torch, name):
    data = [R.standard_normal((3, 2)), R.standard_normal((1, 2)), R.standard_normal((2, 2))]
    w = R.standard_normal((3, 3, 2))
    res = []
    for T in (torch, pb):
        xs = [T.tensor(d, requires_grad=True) for d in data]
        y = T.nn.utils.rnn.pad_sequence(xs, **PAD[name])
        (y * T.tensor(w)).sum().backward()
        res.append([y.detach().numpy()] + [x.grad.numpy() for x in xs])
    for p, t in zip(res[1], res[0]):
        np.testing.assert_allclose(p, t)


def test_pad_sequence_errors_as_torch(torch):
    pad = lambda T, *a, **k: T.nn.utils.rnn.pad_sequence(*a, **k)  # noqa: E731
    same(torch, lambda T: pad(T, [T.ones(2, 3), T.ones(3, 2)]))
    same(torch, lambda T: pad(T, [T.ones(2)], padding_side="middle"))
    same(torch, lambda T: pad(T, []))


# ----------------------------------------------------------------- BCE losses
def _bce_run(T, kind, red, x, t, w, pw):
    xs, ts = T.tensor(x, requires_grad=True), T.tensor(t, requires_grad=True)
    kw = {} if w is None else {"weight": T.tensor(w)}
    if kind == "logits":
        if pw is not None:
            kw["pos_weight"] = T.tensor(pw)
        loss = T.nn.BCEWithLogitsLoss(reduction=red, **kw)(xs, ts)
    else:
        xs = T.tensor(1 / (1 + np.exp(-x)), requires_grad=True)
        loss = T.nn.BCELoss(reduction=red, **kw)(xs, T.tensor(t))
    loss.sum().backward()
    return [loss.detach().numpy(), xs.grad.numpy()] + ([ts.grad.numpy()] if ts.grad is not None
                                                      else [])


@pytest.mark.parametrize("red", ["mean", "sum", "none"])
@pytest.mark.parametrize("kind,w,pw", [("logits", True, False), ("logits", False, True),
                                       ("logits", True, True), ("probs", True, False)])
def test_weighted_bce_as_torch(torch, red, kind, w, pw):
    x = np.concatenate([R.standard_normal((3, 4)) * 3, [[40.0, -40.0, 0.0, 1e3]]])
    t = R.random((4, 4))
    wv = R.random(4) + 0.5 if w else None
    pwv = R.random((4, 4)) * 3 if pw else None
    got, want = _bce_run(pb, kind, red, x, t, wv, pwv), _bce_run(torch, kind, red, x, t, wv, pwv)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-12)


def test_weighted_bce_gradcheck_and_compiled():
    x = pb.tensor(R.standard_normal((3, 4)), requires_grad=True)
    t = pb.tensor(R.random((3, 4)), requires_grad=True)
    w, pw = pb.tensor(R.random(4) + 0.5), pb.tensor(R.random(4) * 2)
    F = pb.nn.functional
    fn = lambda a, b: F.binary_cross_entropy_with_logits(a, b, w, pos_weight=pw)  # noqa: E731
    assert pb.autograd.gradcheck(fn, (x, t))
    assert pb.autograd.gradgradcheck(fn, (x, t))
    eager = pb.autograd.grad(fn(x, t), (x, t))
    compiled = pb.grad(fn, argnums=(0, 1))(x, t)
    for a, b in zip(eager, compiled):
        np.testing.assert_allclose(a.detach().numpy(), np.asarray(b.detach().numpy()), rtol=1e-12)


def test_weighted_bce_errors_as_torch(torch):
    F = lambda T: T.nn.functional  # noqa: E731
    same(torch, lambda T: F(T).binary_cross_entropy_with_logits(
        T.zeros(2, requires_grad=True), T.ones(2), pos_weight=T.ones(2, requires_grad=True)))
    same(torch, lambda T: F(T).binary_cross_entropy_with_logits(
        T.zeros(2), T.ones(2), weight=T.ones(2, requires_grad=True)))
    same(torch, lambda T: F(T).binary_cross_entropy(
        T.full((2,), 0.5), T.ones(2), weight=T.ones(2, requires_grad=True)))
    same(torch, lambda T: F(T).binary_cross_entropy(T.rand(3, 2), T.rand(3, 2),
                                                    weight=T.rand(3)))
    same(torch, lambda T: F(T).binary_cross_entropy_with_logits(T.rand(3, 2), T.rand(3, 2),
                                                                pos_weight=T.rand(3)))
    same(torch, lambda T: F(T).binary_cross_entropy_with_logits(T.rand(3, 2), T.rand(3, 2),
                                                                weight=T.rand(3)))


# ----------------------------------------------------------- module backward hooks
def _hooked_model(T, variant):
    m = T.nn.Sequential(T.nn.Linear(3, 4), T.nn.Tanh(), T.nn.Linear(4, 2))
    with T.no_grad():
        m[0].weight.copy_(T.tensor(np.arange(12.0).reshape(4, 3) / 10))
        m[0].bias.fill_(0.1)
        m[2].weight.copy_(T.tensor(np.arange(8.0).reshape(2, 4) / 7))
        m[2].bias.fill_(-0.2)
    log = []

    def arrays(gs):
        return [None if g is None else g.detach().numpy().copy() for g in gs]

    def hook(mod, grad_input, grad_output):
        log.append(("hook", type(mod).__name__, arrays(grad_input), arrays(grad_output)))
        if variant == "replace":
            return tuple(None if g is None else g * 2 for g in grad_input)

    def pre(mod, grad_output):
        log.append(("pre", type(mod).__name__, arrays(grad_output)))
        if variant == "replace":
            return tuple(g * 3 for g in grad_output)
    handles = []
    for mod in (m[0], m[1], m[2], m):
        handles += [mod.register_full_backward_hook(hook),
                    mod.register_full_backward_pre_hook(pre)]
    if variant == "removed":
        for h in handles[2:]:
            h.remove()
    return m, log


@pytest.mark.parametrize("variant", ["observe", "replace", "no_input_grad", "removed"])
def test_backward_hooks_as_torch(torch, variant):
    runs = []
    for T in (torch, pb):
        m, log = _hooked_model(T, variant)
        x = T.tensor([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0]], dtype=T.float64,
                     requires_grad=variant != "no_input_grad")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            m.double()
            m(x).sum().backward()
        msgs = [str(w.message) for w in caught if "Full backward hook" in str(w.message)]
        runs.append((log, None if x.grad is None else x.grad.numpy(),
                     m[0].weight.grad.numpy(), msgs))
    (tlog, tx, tw, tmsg), (plog, px, pw, pmsg) = runs
    assert [e[:2] for e in plog] == [e[:2] for e in tlog]
    for pe, te in zip(plog, tlog):
        for pa, ta in zip(pe[2:], te[2:]):
            assert len(pa) == len(ta)
            for a, b in zip(pa, ta):
                assert (a is None) == (b is None)
                if a is not None:
                    np.testing.assert_allclose(a, b, rtol=1e-12)
    assert (px is None) == (tx is None)
    if px is not None:
        np.testing.assert_allclose(px, tx, rtol=1e-12)
    np.testing.assert_allclose(pw, tw, rtol=1e-12)
    assert pmsg == tmsg


def _hook_error(T, kind):
    m = T.nn.Linear(3, 2)
    if kind == "grad_input_count":
        m.register_full_backward_hook(lambda mo, gi, go: (gi[0], gi[0]))
    elif kind == "grad_output_count":
        m.register_full_backward_pre_hook(lambda mo, go: (go[0], go[0]))
    else:
        m.register_full_backward_hook(lambda mo, gi, go: (T.ones(1, 3),))
    m(T.ones(1, 3, requires_grad=kind != "no_input_value")).sum().backward()


@pytest.mark.parametrize("kind", ["grad_input_count", "grad_output_count", "no_input_value"])
def test_backward_hook_errors_as_torch(torch, kind):
    same(torch, lambda T: _hook_error(T, kind))


def test_backward_hook_inplace_output_refused_as_torch(torch):
    def inplace(T):
        m = T.nn.Linear(3, 2)
        m.register_full_backward_hook(lambda mo, gi, go: None)
        return m(T.ones(1, 3)).add_(1)
    same(torch, inplace)
    m = pb.nn.Linear(3, 2)
    m.register_full_backward_pre_hook(lambda mo, go: None)
    assert type(m(pb.ones(1, 3)).grad_fn).__name__ == "BackwardHookFunctionBackward"
    with pb.no_grad():  # no graph: no hook, no wrapping
        assert m(pb.ones(1, 3)).grad_fn is None


FACTORY_DEVICE = {
    "zeros_cuda": lambda T: T.zeros(2, device="cuda"),
    "tensor_cuda": lambda T: T.tensor([1.0], device="cuda"),
    "randn_cuda": lambda T: T.randn(2, device="cuda"),
    "linear_cuda": lambda T: T.nn.Linear(2, 2, device="cuda"),
    "module_to_cuda": lambda T: T.nn.Linear(2, 2).to("cuda"),
    "module_cuda": lambda T: T.nn.Linear(2, 2).cuda(),
    "factories_cpu": lambda T: [float(f.sum()) for f in (
        T.zeros(2, device="cpu"), T.ones(2, device=T.device("cpu")), T.arange(3, device="cpu"),
        T.full((2,), 3.0, device="cpu"), T.eye(2, device="cpu"),
        T.ones_like(T.ones(2), device="cpu"), T.tensor([1.0], device="cpu"))],
    "module_to_cpu_double": lambda T: T.nn.Linear(2, 2).to("cpu", T.float64).weight.dtype
    == T.float64,
}


@pytest.mark.parametrize("name", FACTORY_DEVICE)
def test_factories_take_device_as_torch(torch, name):
    same(torch, FACTORY_DEVICE[name])


SCATTER_REDUCE = {
    "add": lambda T: T.ones(2, 3).scatter(1, T.tensor([[0, 0], [2, 1]]),
                                          T.arange(6.0).reshape(2, 3), reduce="add"),
    "multiply_value": lambda T: T.ones(3).scatter(0, T.tensor([0, 0]), 2.0, reduce="multiply"),
    "inplace_add": lambda T: T.ones(3).scatter_(0, T.tensor([0, 0]), 2.0, reduce="add"),
    "bad_reduce": lambda T: T.ones(3).scatter(0, T.tensor([0]), 2.0, reduce="mean"),
    "no_derivative": lambda T: T.zeros(3, requires_grad=True).scatter(
        0, T.tensor([0, 0]), T.ones(2), reduce="add").sum().backward(),
}


@pytest.mark.parametrize("name", SCATTER_REDUCE)
def test_scatter_reduce_argument_as_torch(torch, name):
    same(torch, SCATTER_REDUCE[name])


def test_default_stream_draws_are_ops_compiled_code_draws_anew():
    pb.manual_seed(0)
    m = pb.multinomial(pb.tensor([1.0, 2.0, 7.0]), 20000, replacement=True).numpy()
    np.testing.assert_allclose(np.bincount(m) / m.size, [0.1, 0.2, 0.7], atol=0.02)
    rows = pb.multinomial(pb.tensor([[1.0, 0.0, 3.0, 1.0]] * 2000), 2).numpy()
    assert (rows[:, 0] != rows[:, 1]).all() and not (rows == 1).any()  # zero weight: never
    np.testing.assert_allclose(np.mean(rows[:, 0] == 2), 0.6, atol=0.03)
    b = pb.bernoulli(pb.full((20000,), 0.3)).numpy()
    assert abs(b.mean() - 0.3) < 0.02
    n = pb.normal(pb.zeros(20000, dtype=pb.float64), 2.0).numpy()
    assert abs(n.std() - 2.0) < 0.05

    def draws(x):
        return x + pb.normal(pb.zeros(3), 1.0), pb.randperm(6), pb.multinomial(pb.ones(6), 3)
    f = pb.compile(draws)
    a, b = f(pb.zeros(3)), f(pb.zeros(3))
    assert sorted(a[1].tolist()) == list(range(6))
    assert not all(np.array_equal(p.numpy(), q.numpy()) for p, q in zip(a, b))
    pb.manual_seed(5)
    c = f(pb.zeros(3))
    pb.manual_seed(5)
    d = f(pb.zeros(3))
    assert all(np.array_equal(p.numpy(), q.numpy()) for p, q in zip(c, d))


# ------------------------------------------------- normalization's mixed dtypes (CPU)
def _norms(x_dtype, p_dtype):
    def run(T):
        F = T.nn.functional
        x = T.ones(4, 3, dtype=getattr(T, x_dtype))
        w, b = T.ones(3, dtype=getattr(T, p_dtype)), T.zeros(3, dtype=getattr(T, p_dtype))
        return [F.batch_norm(x, None, None, w, b, training=True),
                F.batch_norm(x, T.zeros(3, dtype=w.dtype), T.ones(3, dtype=w.dtype)),
                F.layer_norm(x, (3,), w, b), F.group_norm(x.reshape(4, 3, 1), 3, w, b)][-1]
    return run


@pytest.mark.parametrize("dtypes", [("float32", "float64"), ("float64", "float32"),
                                    ("float64", "float64")])
def test_normalizations_refuse_mixed_dtypes_as_torch(torch, dtypes):
    same(torch, _norms(*dtypes))


# ------------------------------------------------- reciprocal, % and // on Tensors
MOD_CASES = {
    "reciprocal_method": lambda T: T.tensor([1.5, -2.5]).reciprocal(),
    "reciprocal_of_int": lambda T: T.reciprocal(T.tensor([2, 4])),
    "reciprocal_inplace_int": lambda T: T.tensor([2]).reciprocal_(),
    "mod": lambda T: T.tensor([7., -7.]) % T.tensor([2., 3.]),
    "mod_scalar": lambda T: T.tensor([1.5, -2.5]) % 2,
    "floordiv_int": lambda T: T.tensor([7, -7]) // 2,
    "floor_divide": lambda T: T.floor_divide(T.tensor([7.5, -7.5]), 2),
    "floordiv_backward": lambda T: (T.tensor([1.5, -2.5], requires_grad=True) // 2).sum()
    .backward(),
}


@pytest.mark.parametrize("name", MOD_CASES)
def test_remainder_floor_divide_and_reciprocal_as_torch(torch, name):
    same(torch, MOD_CASES[name])
