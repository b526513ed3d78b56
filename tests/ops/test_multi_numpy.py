"""numpy's joining, splitting, meshgrid, einsum and sort on Tensors: numpy's results
(values, dtypes, list or tuple), numpy's errors, and gradients (eager and pb.grad, which
traces the same numpy calls) against finite differences of numpy itself."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb

from . import numeric_grad

A = np.arange(6.0).reshape(2, 3) / 4 - 0.6
B = np.array([[0.5], [-1.5]])
C = np.arange(24.0).reshape(2, 3, 4) % 5 / 3 - 0.7
V = np.array([0.3, -1.2, 2.5, 0.7, -0.1])

# (numpy expression, its float64 inputs)
CALLS = {
    "concatenate(axis=1)": (lambda a, b: np.concatenate([a, b], axis=1), [A, B]),
    "concatenate(axis=None)": (lambda a, b: np.concatenate((a, b), axis=None), [A, B]),
    "concatenate(axis=-2)": (lambda a: np.concatenate([a, 2 * a], -2), [A]),
    "concatenate with an array": (lambda a: np.concatenate([a, np.ones((1, 3))]), [A]),
    "stack(axis=-1)": (lambda a: np.stack([a, a * a], axis=-1), [A]),
    "stack of 0-d": (lambda v: np.stack([v[0], v[1] * 2]), [V]),
    "hstack": (lambda a, b: np.hstack([b, a]), [A, B]),
    "hstack of 1-d": (lambda v: np.hstack([v, v[:2]]), [V]),
    "vstack of 1-d": (lambda v: np.vstack([v, v * 3]), [V]),
    "row of 0-d in vstack": (lambda a: np.vstack([a, a[0]]), [A]),
    "dstack": (lambda a, b: np.dstack([a, a * b]), [A, B]),
    "column_stack": (lambda v: np.column_stack([v, v * v]), [V]),
    "split(3, axis=1)": (lambda a: np.split(a, 3, axis=1), [A]),
    "split([1, -1])": (lambda v: np.split(v, [1, -1]), [V]),
    "array_split(3)": (lambda v: np.array_split(v, 3), [V]),
    "array_split([3, 1], axis=-1)": (lambda c: np.array_split(c, [3, 1], axis=-1), [C]),
    "hsplit": (lambda a: np.hsplit(a, [1]), [A]),
    "vsplit": (lambda a: np.vsplit(a, 2), [A]),
    "dsplit": (lambda c: np.dsplit(c, [1, 3]), [C]),
    "meshgrid": (lambda v, w: np.meshgrid(v, w), [V, V[:3].copy()]),
    "meshgrid(indexing='ij', copy=False)": (
        lambda v, w: np.meshgrid(v, w, indexing="ij", copy=False), [V, V[:3].copy()]),
    "meshgrid(sparse=True)": (lambda v, w: np.meshgrid(v, w, sparse=True), [V, V[:3].copy()]),
    "einsum": (lambda a, c: np.einsum("ij,ijk->ik", a, c), [A, C]),
    "einsum(optimize=True)": (lambda a, c: np.einsum("ij,ijk,ik->", a, c, c[:, 0],
                                                      optimize=True), [A, C]),
    "einsum sublist": (lambda a: np.einsum(a, [0, 1], a, [0, 1], [1]), [A]),
    "sort(axis=0)": (lambda a: np.sort(a, axis=0), [A]),
    "sort(axis=None)": (lambda c: np.sort(c, axis=None), [C]),
}


def _outputs(result) -> list:
    return list(result) if isinstance(result, (list, tuple)) else [result]


def _loss(result) -> float:
    outs = _outputs(result)
    return sum((o * (k + 1.5)).sum() for k, o in enumerate(outs))


@pytest.mark.parametrize("name", list(CALLS))
def test_numpy_call_on_tensors_is_numpys(name):
    check_numpy_call(*CALLS[name], rtol=1e-6)


def check_numpy_call(fn, arrays, rtol):
    """numpy's function on Tensors: numpy's result (values, dtypes, tuple or list), and
    gradients eager and by pb.grad against finite differences of numpy itself."""
    want = fn(*arrays)
    ts = [pb.tensor(a, requires_grad=True) for a in arrays]
    got = fn(*ts)
    assert isinstance(got, pb.Tensor) if isinstance(want, (np.ndarray, np.generic)) else (
        type(got) is type(want) or isinstance(got, tuple) and isinstance(want, tuple))
    for o, w in zip(_outputs(got), _outputs(want)):
        assert isinstance(o, pb.Tensor) and o.requires_grad
        assert o.shape == np.shape(w) and o.numpy(force=True).dtype == np.asarray(w).dtype
        np.testing.assert_allclose(o.numpy(force=True), w, rtol=rtol, atol=1e-12)
    _loss(got).backward()
    by_grad = pb.grad(lambda *xs: _loss(fn(*xs)), argnums=tuple(range(len(arrays))))
    traced = [by_grad(*arrays) for _ in range(2)][-1]  # trace, then the generated code
    for i, (a, t) in enumerate(zip(arrays, ts)):
        expected = numeric_grad(lambda x, i=i: _loss(fn(*arrays[:i], x, *arrays[i + 1:])), a)
        np.testing.assert_allclose(t.grad.numpy(), expected, rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(traced[i], expected, rtol=1e-6, atol=1e-8)


def test_numpys_dtypes():
    """numpy's promotion, not torch's: float32 with int64 is float64."""
    x = pb.tensor(np.ones(2, np.float32), requires_grad=True)
    assert np.concatenate([x, np.arange(2)]).dtype == pb.float64
    assert pb.cat([x, pb.tensor(np.arange(2))]).dtype == pb.float32
    assert np.stack([x, x], dtype=np.float64).dtype == pb.float64
    assert np.hstack([x, x]).dtype == pb.float32
    y = pb.tensor(A, requires_grad=True)
    assert np.einsum("ij->j", y, dtype=np.float32, casting="same_kind").dtype == pb.float32


E = np.ones((2, 3))
ERRORS = {
    "concatenate of nothing": lambda m, x: np.concatenate([]),
    "concatenate of 0-d": lambda m, x: np.concatenate([x[0, 0], x[0, 1]]),
    "concatenate axis": lambda m, x: np.concatenate([x, x], axis=2),
    "concatenate sizes": lambda m, x: np.concatenate([x, x[:, :2]]),
    "stack of nothing": lambda m, x: np.stack([]),
    "stack sizes": lambda m, x: np.stack([x, x[:1]]),
    "stack axis": lambda m, x: np.stack([x, x], axis=-4),
    "split unequal": lambda m, x: np.split(x, 2, axis=1),
    "array_split(0)": lambda m, x: np.array_split(x, 0),
    "array_split axis": lambda m, x: np.array_split(x, 2, axis=2),
    "hsplit of 0-d": lambda m, x: np.hsplit(x[0, 0], 1),
    "vsplit of 1-d": lambda m, x: np.vsplit(x[0], 1),
    "dsplit of 2-d": lambda m, x: np.dsplit(x, 1),
    "meshgrid indexing": lambda m, x: np.meshgrid(x[0], indexing="yx"),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_numpy_errors_are_numpys(name):
    fn = ERRORS[name]
    with pytest.raises(Exception) as want:
        fn(np, E)
    with pytest.raises(Exception) as got:
        fn(pb, pb.tensor(E, requires_grad=True))
    assert type(got.value) is type(want.value) and str(got.value) == str(want.value)
