"""The numpy face (src/pullback/numpy_face.py): a function the front doors trace with
numpy arrays sees values with ndarray's names; one traced with Tensors sees Tensors.

Each numpy function below runs as plain numpy (the reference) and through pb.grad,
pb.value_and_grad, pb.compile and pb.vjp on ndarrays: the same values, and gradients
equal to float64 central finite differences of the plain numpy function.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
from ops import numeric_grad

import pullback as pb
import pullback.nn.functional as F

RNG = np.random.default_rng(0)
X = RNG.standard_normal((3, 4))  # distinct values: no ties for max, argmax, clip
V = np.arange(4.0) - 1.5
K = np.linspace(-1.0, 1.0, 12).reshape(3, 4)  # a constant operand


def _fill(x):
    y = x.copy()
    y.fill(2.0)  # in place, on a local copy
    return (y * x).sum()


def _conjugate_is_a_copy(x):
    assert x.conj() is x  # numpy's method returns a real array itself
    y = np.conjugate(x)  # numpy's ufunc makes a new array: writing it leaves x
    y += 1.0
    return (x * y).sum()


def _attributes(x):
    assert type(x.size) is int and x.size == 12
    assert x.shape == (3, 4) and type(x.shape) is tuple and x.ndim == 2
    assert x.dtype == np.float64 and isinstance(x.dtype, np.dtype)
    assert x.itemsize == 8 and x.nbytes == 96 and len(x) == 3
    return x.sum() * x.size * x.ndim + x.shape[1]


def _iterate(x):
    return sum((row * row).sum() for row in x) * len(x)


def _item(x):
    scale = 2.0 if x.item(1) > -9 else 3.0  # guarded reads, no gradient (compared)
    v = pb.stop_gradient(x)  # (used otherwise, the cut is said: ConversionError else)
    return x.sum() * scale + len(v.tolist()) + v[0, 1].item() * 0


# numpy functions of one (3, 4) float64 array with a scalar result, each using the
# method named
METHODS = {
    "sum": lambda x: x.sum(),
    "sum axis": lambda x: (x.sum(axis=0) ** 2).sum(),
    "sum axis keepdims": lambda x: (x.sum(axis=1, keepdims=True) * K).sum(),
    "sum axes dtype": lambda x: x.sum(axis=(0, 1), dtype=np.float64),
    "mean": lambda x: x.mean() + (x.mean(axis=1) ** 2).sum(),
    "mean keepdims": lambda x: (x.mean(axis=0, keepdims=True) * K).sum(),
    "max": lambda x: x.max() + (x.max(axis=0) * V).sum(),
    "max keepdims": lambda x: (x.max(axis=1, keepdims=True) * K).sum(),
    "min": lambda x: x.min() * 2 + x.min(0).sum(),
    "std": lambda x: x.std() + x.std(axis=0, ddof=1).sum(),
    "var": lambda x: x.var() + (x.var(axis=1, keepdims=True) * K).sum(),
    "argmax argmin": lambda x: (x * x.argmax() + x[x.argmin(axis=0), 0]).sum(),
    "argmax keepdims": lambda x: (x * x.argmax(axis=1, keepdims=True)).sum(),
    "any all": lambda x: x.sum() * ((x > 0).any(axis=0).sum() + (x > -9).all()),
    "any keepdims": lambda x: (x * (x > 0).any(axis=1, keepdims=True)).sum(),
    "mean dtype": lambda x: (x.mean(axis=0, dtype=np.float64) ** 2).sum(),
    "max keepdims all": lambda x: (x.max(keepdims=True) * K).sum() + x.min(axis=(0, 1)),
    "reshape": lambda x: (x.reshape(2, 6)[0] ** 2).sum() + x.reshape((4, 3))[1, 2],
    "reshape -1 order": lambda x: (x.reshape(-1, order="C") * np.arange(12)).sum(),
    "transpose": lambda x: (x.transpose() @ V[:3]).sum() + x.transpose(1, 0)[0, 1],
    "transpose tuple": lambda x: (x.transpose((1, 0)) * K.T).sum(),
    "swapaxes": lambda x: (x.swapaxes(0, 1) * K.T).sum(),
    "T": lambda x: (x.T @ x).sum(),
    "flatten": lambda x: (x.flatten() * np.arange(12)).sum(),
    "ravel": lambda x: (x.ravel() ** 2 * np.arange(12)).sum(),
    "squeeze": lambda x: x[None, :, :1].squeeze(axis=(0, 2)).sum() + x[:1].squeeze().sum(),
    "clip": lambda x: x.clip(-0.5, 0.5).sum() + x.clip(max=0.1).sum() + x.clip(0).sum(),
    "dot": lambda x: x.dot(V).dot(V[:3]) + x[0].dot(x[1]),
    "conj": lambda x: (x.conj() * x.conjugate()).sum(),
    "np.conjugate is a copy": _conjugate_is_a_copy,
    "real imag": lambda x: (x.real * K).sum() + x.imag.sum(),
    "astype": lambda x: x.astype(np.float64).copy().ravel().sum() * x.astype(int).size,
    "astype float32": lambda x: x.astype(np.float32).sum() * 0 + x.sum(),
    "copy": lambda x: (x.copy() * x).sum(),
    "item tolist": _item,
    "fill": _fill,
    "attributes": _attributes,
    "iterate": _iterate,
    "index": lambda x: x[[0, 2]].sum() + x[1:, ::2].sum() + x[..., None].sum() + x[-1, -1],
    "index mask": lambda x: (x[x > 0] ** 2).sum() + x[:, [True, False, True, False]].sum(),
    "operators": lambda x: (2.0 - x / 3 + K * x ** 2).sum() + (K @ x.T).sum() + (-x).max(),
    "numpy functions": lambda x: np.sum(np.tanh(x) * x.mean(axis=0)),
}


def _door_run(door: str, f, x):
    """(value, gradient) of ``f`` at ``x`` through one front door, on ndarrays."""
    if door == "grad":
        return None, pb.grad(f)(x)
    if door == "value_and_grad":
        return pb.value_and_grad(f)(x)
    if door == "compile":
        compiled = pb.compile(f)
        compiled(x)  # traced
        return compiled(x).numpy(), None  # generated code
    out, vjp_fn = pb.vjp(f, x)
    (g,) = vjp_fn(np.ones_like(out))
    return out, g


DOORS = ["grad", "value_and_grad", "compile", "vjp"]


@pytest.mark.parametrize("door", DOORS)
@pytest.mark.parametrize("name", list(METHODS))
def test_method_through_each_door(name, door):
    f = METHODS[name]
    want = f(X.copy())
    value, grad = _door_run(door, f, X.copy())
    if value is not None:
        assert np.shape(value) == np.shape(want)
        np.testing.assert_allclose(value, want, rtol=1e-12, atol=1e-12)
    if grad is not None:
        assert isinstance(grad, np.ndarray) and grad.dtype == np.float64
        np.testing.assert_allclose(grad, numeric_grad(f, X), rtol=1e-6, atol=1e-7)


# numpy functions with an array result, for pb.vjp with a cotangent and pb.compile
ARRAY_RESULTS = {
    "T": lambda x: x.T,
    "sum axis": lambda x: x.sum(axis=0),
    "max keepdims": lambda x: x.max(axis=1, keepdims=True),
    "reshape": lambda x: x.reshape(6, 2),
    "clip": lambda x: x.clip(-0.5, 0.5),
    "std axis": lambda x: x.std(axis=1),
    "index": lambda x: x[::2, [3, 0]],
}


@pytest.mark.parametrize("name", list(ARRAY_RESULTS))
def test_array_results_through_vjp_and_compile(name):
    f = ARRAY_RESULTS[name]
    want = f(X)
    out, vjp_fn = pb.vjp(f, X)
    assert isinstance(out, np.ndarray) and out.shape == want.shape
    np.testing.assert_allclose(out, want, rtol=1e-12)
    ct = np.random.default_rng(2).standard_normal(want.shape)
    (g,) = vjp_fn(ct)
    np.testing.assert_allclose(g, numeric_grad(lambda a: (f(a) * ct).sum(), X), rtol=1e-6,
                               atol=1e-8)
    np.testing.assert_allclose(pb.compile(f)(X).numpy(), want, rtol=1e-12)


# --------------------------------------------- numpy functions the op table lacks
#: (every ndarray method the face maps to a numpy function has its op now)
MISSING = {  # (partition and convolve were here until ops/numpy_extras.py)
    "compress": lambda x: np.compress([True, False, True], x, axis=1),  # (correlate,
    # unwrap: numpy_calculus.py; roots, polymul: numpy_polynomials.py; matrix_transpose:
    # numpy_linalg.py; unstack: numpy_arrays.py)
}

#: methods that were in MISSING until their ops were declared: differentiable now,
#: with no change to the face
DECLARED_SINCE = {
    "prod": lambda x: x.prod(axis=0),
    "cumsum": lambda x: x.cumsum(axis=1),
    "cumprod": lambda x: x.cumprod(),
    "round": lambda x: x.round(1),
    "trace": lambda x: x.trace(),
    "repeat": lambda x: x.repeat(2, axis=0),
    "take": lambda x: x.take([0, 2], axis=1),
    "diagonal": lambda x: x.diagonal(),
    "correlate": lambda x: np.correlate(x[0], x[1], "full"),
    "unwrap": lambda x: np.unwrap(x * 3, axis=1),
    "polymul": lambda x: np.polymul(x[0], x[1]),
    "matrix_transpose": lambda x: np.matrix_transpose(x) @ x,
}


@pytest.mark.parametrize("name", list(DECLARED_SINCE))
def test_a_method_whose_op_was_declared_later_differentiates(name):
    f = DECLARED_SINCE[name]
    loss = lambda x: (f(x) * np.cos(np.arange(f(X).size).reshape(f(X).shape))).sum()
    np.testing.assert_allclose(pb.grad(loss)(X), numeric_grad(loss, X), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name", list(MISSING))
def test_a_function_without_an_op_runs_without_grad_and_refuses_with(name):
    f = MISSING[name]
    got = pb.compile(f)(X)  # no gradient needed: numpy runs on the values (a guard)
    np.testing.assert_allclose(got.numpy(), f(X), rtol=1e-12)
    with pytest.raises(TypeError, match=rf"^numpy\.{name} is not differentiable in pullback"):
        pb.grad(lambda x: f(x).sum())(X)


#: numpy's statistics functions (ops/numpy_statistics.py), which raised "not
#: differentiable in pullback yet" before: each through every door
STATISTICS = {
    "average": lambda x: np.average(x, axis=1, weights=V + 2, returned=True)[0].sum(),
    "cov corrcoef": lambda x: (np.cov(x) * K[:, :3]).sum() + np.corrcoef(x.T)[0, 1],
    "quantile percentile": lambda x: (np.quantile(x, [0.25, 0.5], axis=0) * V).sum()
    + np.percentile(x, 90),
    "nan reductions": lambda x: np.nanmax(np.where(x > 1, np.nan, x), axis=0).sum()
    + np.nanmin(x) + np.nanvar(x, axis=1).sum() + np.nanstd(x, ddof=1) + np.nanprod(x),
    "nanquantile": lambda x: np.nanquantile(np.where(x > 1, np.nan, x), 0.3, axis=1).sum()
    + np.nanpercentile(x, 20),
    "nancumsum nancumprod ptp": lambda x: (np.nancumsum(x, axis=1) * K).sum()
    + np.nancumprod(x[0]).sum() + np.ptp(x, axis=0).sum(),
    "bincount histogram": lambda x: (np.bincount([0, 2, 2, 1], weights=x[0]) * V[:3]).sum()
    + np.histogram(K, 3, weights=x * x)[0].sum() + np.histogram(x, 4)[0][1] * x.sum(),
}


@pytest.mark.parametrize("door", DOORS)
@pytest.mark.parametrize("name", list(STATISTICS))
def test_numpy_statistics_through_each_door(name, door):
    f = STATISTICS[name]
    value, grad = _door_run(door, f, X.copy())
    if value is not None:
        np.testing.assert_allclose(value, f(X), rtol=1e-12)
    if grad is not None:
        np.testing.assert_allclose(grad, numeric_grad(f, X), rtol=1e-6, atol=1e-7)


def test_numpy_statistics_under_vmap():
    f = STATISTICS["quantile percentile"]
    rows = np.stack([X, X[::-1], 2 * X])
    np.testing.assert_allclose(pb.vmap(f)(pb.tensor(rows)).numpy(), [f(r) for r in rows],
                               rtol=1e-12)
    np.testing.assert_allclose(pb.vmap(pb.grad(f))(pb.tensor(rows)).numpy(),
                               np.stack([numeric_grad(f, r) for r in rows]), rtol=1e-6,
                               atol=1e-8)


STAYS = {
    "operators": lambda x: [x + 1, 1 - x, x * x, x / 2, 2 / x, -x, abs(x), x ** 2, 2 ** x,
                            x @ x.T, K @ x.T, x > 0, x == x, K + x, x[0], x[x > 0]],
    "numpy": lambda x: [np.tanh(x), np.sum(x, axis=0), np.maximum(x, 0), np.where(x > 0, x, 0),
                        np.transpose(x), np.zeros_like(x), np.copy(x), np.conjugate(x)],
    "methods": lambda x: [x.sum(), x.max(axis=0), x.T, x.reshape(12), x.astype(np.float32),
                          x.clip(0, 1), x.argmax(), (x > 0).cumsum(), x.var(), next(iter(x))],
    "torch's extras": lambda x: [x.exp(), x.tanh(), x.clone(), x.unsqueeze(0), x.detach(),
                                 x.float(), x.softmax(0), x.data, pb.tanh(x), x.mul(2)],
}


@pytest.mark.parametrize("name", list(STAYS))
def test_results_of_numpy_face_values_are_numpy_face(name):
    def f(x):
        for i, y in enumerate(STAYS[name](x)):
            assert type(y.size) is int and isinstance(y.dtype, np.dtype), (i, type(y))
        return x.sum()

    pb.grad(f)(X)
    pb.compile(f)(X)


# ------------------------------------------------------------ other values, dtypes
@pytest.mark.parametrize("door", DOORS)
def test_float32_stays_float32(door):
    x = X.astype(np.float32)

    def f(x):  # (the finite differences run it on float64)
        for y in (x.mean(axis=0), x.std(), x.var(ddof=1), x.sum(axis=1), x.T, x.ravel()):
            assert y.dtype == x.dtype, y
        return (x.mean(axis=0) * x.std()).sum() + x.var() * x.size

    value, grad = _door_run(door, f, x)
    want = f(x)
    if value is not None:
        assert np.asarray(value).dtype == np.float32
        np.testing.assert_allclose(value, want, rtol=1e-5)
    if grad is not None:
        assert grad.dtype == np.float32
        np.testing.assert_allclose(grad, numeric_grad(f, X), rtol=1e-3, atol=1e-4)


ZERO_D = {
    "sum axis": lambda x: x.sum(axis=0) * x.size + x.ndim,
    "reshape ravel flatten": lambda x: x.reshape(1, 1).sum() + x.ravel()[0] + x.flatten()[0],
    "T mean max": lambda x: x.T * x.mean() + x.max() ** 2,
    "astype item": lambda x: x.astype(np.float64) * (1.0 if x.item() > 0 else -1.0),
}


@pytest.mark.parametrize("door", DOORS)
@pytest.mark.parametrize("name", list(ZERO_D))
def test_zero_d_arrays(name, door):
    f, x = ZERO_D[name], np.array(1.5)
    value, grad = _door_run(door, f, x)
    if value is not None:
        np.testing.assert_allclose(value, f(x), rtol=1e-12)
    if grad is not None:
        assert grad.shape == ()
        np.testing.assert_allclose(grad, numeric_grad(f, x), rtol=1e-6)


def test_zero_d_values_refuse_len_and_iteration_as_numpy():
    def f(x):
        with pytest.raises(TypeError, match="len\\(\\) of unsized object"):
            len(x)
        with pytest.raises(TypeError, match="iteration over a 0-d array"):
            iter(x)
        return x * 2

    assert pb.grad(f)(np.array(1.0)) == 2.0


@pytest.mark.parametrize("door", DOORS)
def test_empty_arrays(door):
    def f(x):
        assert x.size == 0 and x.shape == (0, 3) and len(x) == 0 and list(x) == []
        return x.sum() + x.sum(axis=0).sum() + (x.reshape(3, 0).T * 2).sum() + x.size

    value, grad = _door_run(door, f, np.ones((0, 3)))
    if value is not None:
        assert value == 0.0
    if grad is not None:
        assert grad.shape == (0, 3) and grad.dtype == np.float64


def test_python_float_is_a_numpy_face_0d_float64_value():
    def f(s):  # (numpy computes with a Python float in float64: test_scalar_precision.py)
        assert s.shape == () and s.size == 1 and s.dtype == np.float64
        return (s * s).sum(axis=0)

    assert pb.grad(f)(3.0) == 6.0 and isinstance(pb.grad(f)(3.0), float)


# -------------------------------------------------------------------- the Tensor face
def _torch_style(m, x):
    """torch's names on a tensor ``x`` of module ``m`` (pullback or torch)."""
    n0, n1 = x.size()
    assert x.size(0) == n0 and x.size(axis=1) == n1 and x.dim() == 2
    mx = x.max(axis=0)
    return ((x.sum(dim=0) * x.sum(axis=0)).sum() + x.sum(axis=1, keepdims=True).sum()
            + (mx.values * mx.indices).sum() + x.mean(axis=1).sum() * n0
            + m.sum(x, axis=0).sum() + x.squeeze(axis=0).sum() + x.softmax(axis=1)[0, 0]
            + x.max(axis=1, keepdims=True)[0].sum() + x.unsqueeze(axis=0).sum())


def test_tensor_face_keeps_torchs_names(torch):
    tx = torch.tensor(X, requires_grad=True)
    want = _torch_style(torch, tx)
    want.backward()
    for how, run in [("eager", lambda f, t: f(t)), ("compile", lambda f, t: pb.compile(f)(t))]:
        t = pb.tensor(X, requires_grad=True)
        out = run(lambda t: _torch_style(pb, t), t)
        out.backward()
        np.testing.assert_allclose(out.item(), want.item(), rtol=1e-12, err_msg=how)
        np.testing.assert_allclose(t.grad.numpy(), tx.grad.numpy(), rtol=1e-10, err_msg=how)
    v, g = pb.value_and_grad(lambda t: _torch_style(pb, t))(pb.tensor(X))
    assert isinstance(g, pb.Tensor)
    np.testing.assert_allclose(g.numpy(), tx.grad.numpy(), rtol=1e-10)
    assert isinstance(pb.tensor(X).size(), tuple)


@pytest.mark.parametrize("call", [
    lambda m, x: x.sum(0, axis=0),  # dim twice
    lambda m, x: x.unsqueeze(),  # dim missing
    lambda m, x: m.nn.functional.softmax(x, axis=0),  # nn.functional is Python: no alias
    lambda m, x: x.transpose(axis0=0, axis1=1),  # only dim and keepdim have aliases
], ids=["sum(0, axis=0)", "unsqueeze()", "F.softmax(axis=0)", "transpose(axis0=)"])
def test_tensor_face_refuses_as_torch(call, torch):
    with pytest.raises(TypeError):
        call(torch, torch.tensor(X))
    with pytest.raises(TypeError):
        call(pb, pb.tensor(X))
    assert F.softmax is not pb.softmax  # (pb.softmax takes axis=, F.softmax does not)


# ---------------------------------------------------------- mixed arguments, nesting
def test_mixed_arguments_choose_the_face_per_argument():
    seen = []

    def f(x, w):
        seen.append((type(x.size), type(w.size), type((x * 2).size), type((x @ w).size)))
        return (x @ w).sum() + x.sum(axis=0).sum()

    w = pb.tensor(np.ones((4, 2)))
    gx, gw = pb.grad(f, argnums=(0, 1))(X, w)
    # an ndarray argument is numpy-face, a Tensor a Tensor; an op with a Tensor among its
    # operands gives a Tensor, as ndarray @ torch.Tensor does
    assert seen[-1][:3] == (int, type(w.size), int) and callable(seen[-1][1])
    assert callable(seen[-1][3])
    assert isinstance(gx, np.ndarray) and isinstance(gw, pb.Tensor)
    np.testing.assert_allclose(gx, np.full((3, 4), 3.0))
    np.testing.assert_allclose(gw.numpy(), np.repeat(X.sum(axis=0)[:, None], 2, axis=1))
    out = pb.compile(f)(X, w)
    np.testing.assert_allclose(out.item(), f(X, np.ones((4, 2))))


def test_nested_grad_and_fallback_keep_the_face():
    def inner(y):
        return (y ** 3).sum(axis=0)

    def outer(x):
        g = pb.grad(inner)(x)
        assert type(g.size) is int  # the gradient on its argument's face
        return (g * x).sum(axis=0)

    np.testing.assert_allclose(pb.grad(outer)(np.array([1.0, 2.0])), [9.0, 36.0])
    branchy = pb.grad(lambda x: x.sum(axis=0) * (1.0 if float(x[0]) > 0 else x.size))
    with pb.config.override(recompile_limit=1), pytest.warns(UserWarning):
        for v in (1.0, 2.0, -1.0, -2.0):  # every call a new guard value: eager after one
            np.testing.assert_allclose(branchy(np.array([v, 1.0])), [1.0, 1.0] if v > 0
                                       else [2.0, 2.0])


# ---------------------------------------------------------- numpy code the source pass
def _stacked(x):
    y = np.array([x[0] * x[1], x[2]])
    return y.sum(axis=0).sum() * y.size


def _buffered(x):
    h = np.zeros((3, 4))
    for t in range(3):
        h[t] = x[t] * 2
    return h.sum(axis=0).sum() + h.size


def _writes(x):
    x[0] = 1.0
    x *= 2
    return x.sum(axis=0).sum() * x.size


@pytest.mark.parametrize("f", [_stacked, _buffered, _writes], ids=lambda f: f.__name__)
def test_values_numpy_builds_are_numpy_face(f):
    x = X.copy()
    want = f(X.copy())
    value, grad = pb.value_and_grad(f)(x)
    np.testing.assert_allclose(value, want)
    np.testing.assert_allclose(grad, numeric_grad(lambda a: f(a.copy()), X), rtol=1e-6)


# ------------------------------------------------------------- what the face refuses
def test_unsupported_ndarray_names_say_so():
    def f(x):
        with pytest.raises(AttributeError, match=r"ndarray\.partition is not supported .* "
                                                 r"np\.partition\(x\), which returns"):
            x.partition(1)
        with pytest.raises(AttributeError, match="no attribute 'nonsense'"):
            _ = x.nonsense
        with pytest.raises(TypeError, match="view"):
            x.view(np.int64)
        with pytest.raises(ValueError, match="truth value of an array with more than one"):
            bool(x)
        with pytest.raises(ValueError, match="can only convert an array of size 1"):
            x.item()
        with pytest.raises(IndexError, match="out of bounds"):
            x.item(12)
        with pytest.raises(TypeError, match="Cannot cast array data"):
            x.astype(np.int32, casting="safe")
        assert x.view().shape == x.shape and 1.0 not in x and copy.copy(x).shape == (3, 4)
        return x.sum()

    pb.grad(f)(X)


def _fill_argument(x):
    x.fill(2.0)
    return (x * x).sum()


def test_fill_of_an_argument_is_a_write_into_it():
    """pb.grad takes x.fill(v) as it takes x[...] = v (the source pass); pb.compile, which
    refuses writes into its arguments, refuses it."""
    x = X.copy()
    np.testing.assert_array_equal(pb.grad(_fill_argument)(x), np.zeros((3, 4)))
    np.testing.assert_array_equal(x, np.full((3, 4), 2.0))  # as numpy leaves it
    with pytest.raises(pb.compiler.TraceError, match="argument 'x'"):
        pb.compile(_fill_argument)(X.copy())


def test_integer_operators_are_numpys():
    a = np.array([5, 6, 7])

    def f(x, a):
        return x * ((a & 3) + (a | 8) + (a // 2) + (a % 4) + (~a) + (a ^ 1)).sum()

    got = pb.compile(f)(X[0, :3], a)
    np.testing.assert_array_equal(got.numpy(), f(X[0, :3], a))


def test_numpy_face_repr_is_numpys():
    def f(x):
        assert repr(x[0, :2]) == repr(X[0, :2]) and str(x[0, :2]) == str(X[0, :2])
        return x.sum()

    pb.grad(f)(X)


def test_a_list_argument_is_read_as_numpy_reads_it() -> None:
    """``x * y`` with ``x`` a Python list that is differentiated (its leaves traced):
    numpy's ``np.asarray(x) * y``, as a differentiable stack (was: "Can't call numpy()
    on Tensor that requires grad", from np.asarray asking each leaf for its values)."""
    def f(x, y):
        return (x * y).sum() + (np.sin([x[0], 2.0]) * y).sum()
    y = np.array([1.5, -2.0])
    value, (gx, gy) = pb.value_and_grad(f, argnums=(0, 1))([0.3, 0.7], y)
    assert value == pytest.approx(0.3 * 1.5 - 0.7 * 2.0 + np.sin(0.3) * 1.5 - np.sin(2.0) * 2)
    assert isinstance(gx, list)
    np.testing.assert_allclose(gx, [1.5 + np.cos(0.3) * 1.5, -2.0], rtol=1e-12)
    np.testing.assert_allclose(gy, [0.3 + np.sin(0.3), 0.7 + np.sin(2.0)], rtol=1e-12)
    nested = pb.grad(lambda x, y: (x * y).sum())([[0.3], [0.7]], y)
    np.testing.assert_allclose(nested, [[y.sum()], [y.sum()]])
