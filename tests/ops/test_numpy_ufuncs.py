"""numpy's ufunc methods on Tensors (ops/numpy_ufuncs.py; their values and gradients
against numpy and finite differences are rows of test_numpy_extras.py's table):
gradients against torch's counterparts, numpy's keywords and errors, out=, results
that are not floats, every front door and the generated code."""

from __future__ import annotations

import re

import numpy as np
import pytest

import pullback as pb

from . import numeric_grad

_RNG = np.random.default_rng(19)
_X = _RNG.standard_normal((3, 4))


def _pairs(torch):
    """(pullback's numpy call, torch's call) on the same input."""
    return {
        "subtract.outer": (lambda t: np.subtract.outer(t[0], t[1]),
                           lambda t: t[0][:, None] - t[1]),
        "multiply.outer": (lambda t: np.multiply.outer(t[0], t[2]),
                           lambda t: torch.outer(t[0], t[2])),
        "add.accumulate": (lambda t: np.add.accumulate(t, axis=1),
                           lambda t: torch.cumsum(t, 1)),
        "multiply.accumulate": (lambda t: np.multiply.accumulate(t),
                                lambda t: torch.cumprod(t, 0)),
        "maximum.accumulate": (lambda t: np.maximum.accumulate(t, axis=1),
                               lambda t: torch.cummax(t, 1).values),
        "minimum.accumulate": (lambda t: np.minimum.accumulate(t, axis=0),
                               lambda t: torch.cummin(t, 0).values),
        "logaddexp.accumulate": (lambda t: np.logaddexp.accumulate(t, axis=1),
                                 lambda t: torch.logcumsumexp(t, 1)),
        "logaddexp.reduce": (lambda t: np.logaddexp.reduce(t, axis=(0, 1)),
                             lambda t: torch.logsumexp(t, (0, 1))),
        "maximum.reduce": (lambda t: np.maximum.reduce(t, axis=1, keepdims=True),
                           lambda t: torch.amax(t, 1, keepdim=True)),
    }


@pytest.mark.parametrize("name", ["subtract.outer", "multiply.outer", "add.accumulate",
                                  "multiply.accumulate", "maximum.accumulate",
                                  "minimum.accumulate", "logaddexp.accumulate",
                                  "logaddexp.reduce", "maximum.reduce"])
def test_values_and_gradients_match_torch(torch, name) -> None:
    ours, theirs = _pairs(torch)[name]
    results = []
    for m, fn in ((pb, ours), (torch, theirs)):
        t = m.tensor(_X, requires_grad=True)
        y = fn(t)
        w = np.cos(np.arange(y.numel()) + 0.5).reshape(tuple(y.shape))
        (y * m.tensor(w)).sum().backward()
        results.append((y.detach().numpy(), t.grad.numpy()))
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


_KEYWORDS = {
    "reduce dtype": lambda x: np.add.reduce(x, axis=1, dtype=np.float32),
    "reduce where initial": lambda x: np.maximum.reduce(
        x, axis=0, initial=0.25, where=np.array([[True], [False], [True]])),
    "reduce where fold": lambda x: np.subtract.reduce(x, axis=1, initial=1.0,
                                                      where=[True, False, True, True]),
    "reduce empty": lambda x: np.maximum.reduce(x[:, :0], axis=1, initial=-1.5),
    "reduce 0-d": lambda x: np.add.reduce(x[0, 0], axis=None),
    "accumulate dtype": lambda x: np.multiply.accumulate(x, axis=-1, dtype=np.float32),
    "outer dtype": lambda x: np.add.outer(x[0], x[1], dtype=np.float32),
    "outer scalar": lambda x: np.subtract.outer(2.0, x),
    "outer list": lambda x: np.divide.outer(x[0], [1.0, 2.0]),
    "reduceat fold": lambda x: np.subtract.reduceat(x, [0, 2], axis=1),
}


@pytest.mark.parametrize("name", list(_KEYWORDS))
def test_numpy_keywords_give_numpy_s_values_dtype_and_shape(name) -> None:
    fn = _KEYWORDS[name]
    want = fn(_X)
    got = fn(pb.tensor(_X, requires_grad=True)).detach().numpy()
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-6 if want.dtype == np.float32 else 1e-12)


_BAD = {
    "axis out of range": lambda x: np.add.reduce(x, axis=5),
    "not reorderable": lambda x: np.subtract.reduce(x, axis=(0, 1)),
    "empty, no identity": lambda x: np.maximum.reduce(x[:, :0], axis=1),
    "where, no identity": lambda x: np.maximum.reduce(x, where=x.shape[1] * [True]),
    "accumulate axis None": lambda x: np.add.accumulate(x, axis=None),
    "accumulate a scalar": lambda x: np.add.accumulate(x[0, 0]),
    "outer of a unary ufunc": lambda x: np.sin.outer(x, x),
    "reduceat index": lambda x: np.add.reduceat(x, [0, 7]),
}


@pytest.mark.parametrize("name", list(_BAD))
def test_bad_arguments_raise_numpy_s_error(name) -> None:
    with pytest.raises(Exception) as want:
        _BAD[name](_X)
    with pytest.raises(type(want.value)) as got:
        _BAD[name](pb.tensor(_X, requires_grad=True))
    assert str(got.value) == str(want.value)


def test_results_that_are_not_floats_are_numpy_s() -> None:
    ints = np.arange(12).reshape(3, 4)
    for fn in (lambda v: np.add.reduce(v, axis=1), lambda v: np.multiply.accumulate(v),
               lambda v: np.subtract.outer(v[0], v[1]), lambda v: np.add.reduceat(v, [0, 2]),
               lambda v: np.logical_and.reduce(v > 3)):
        want = fn(ints)
        got = fn(pb.tensor(ints)).numpy()
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def test_out_is_written_in_place_and_keeps_the_gradient() -> None:
    x = pb.tensor(_X, requires_grad=True)
    out = pb.zeros(4, dtype=pb.float64)
    assert np.add.reduce(x * 2, out=out) is out
    (out * pb.tensor([1.0, 2.0, 3.0, 4.0], dtype=pb.float64)).sum().backward()
    np.testing.assert_allclose(out.detach().numpy(), 2 * _X.sum(0), rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), np.tile([2.0, 4.0, 6.0, 8.0], (3, 1)))
    with pytest.raises(TypeError, match="numpy.multiply.outer with out= is not differ"):
        np.multiply.outer(x[0], x[1], out=np.zeros((4, 4)))


def test_where_mask_that_is_traced_is_refused_with_grad() -> None:
    x = pb.tensor(_X, requires_grad=True)
    np.testing.assert_allclose(np.add.reduce(x.detach(), where=x.detach() > 0).numpy(),
                               np.add.reduce(_X, where=_X > 0))
    with pytest.raises(TypeError, match=r"^numpy\.add\.reduce is not differentiable"):
        np.add.reduce(x, where=x > 0)


def _program(x):
    d = np.subtract.outer(x, x[::-1])
    return np.exp(-d ** 2).sum(axis=1) + np.maximum.accumulate(x) \
        + np.logaddexp.reduce(x) * np.add.reduceat(x, [0, 1, 3])[1]


def test_every_front_door() -> None:
    v = _X[0]
    want = _program(v)
    np.testing.assert_allclose(pb.compile(_program)(pb.tensor(v)).numpy(), want, rtol=1e-12)
    loss = lambda a: _program(a).sum()  # noqa: E731
    expected = numeric_grad(loss, v)
    np.testing.assert_allclose(pb.grad(loss)(v), expected, rtol=1e-6, atol=1e-8)  # numpy face
    np.testing.assert_allclose(pb.grad(loss)(pb.tensor(v)).numpy(), expected, rtol=1e-6,
                               atol=1e-8)
    np.testing.assert_allclose(pb.vmap(_program)(pb.tensor(_X)).numpy(),
                               np.stack([_program(r) for r in _X]), rtol=1e-12)
    np.testing.assert_allclose(pb.jacfwd(_program)(v), pb.jacrev(_program)(v), rtol=1e-9,
                               atol=1e-12)


def test_generated_code_reads_as_numpy() -> None:
    def f(x):
        return (np.subtract.outer(x, x) ** 2).sum() + np.add.reduce(x)
    info = pb.compiler.inspect(pb.compile(f), pb.tensor(_X[0], requires_grad=True))
    assert re.search(r"(\w+) = x\.reshape\(\(4, 1\)\)\n\s+\w+ = \1 - x\n", info.forward)
    assert "x.sum(" in info.forward and "rt." not in info.forward


def test_lexsort_of_a_list_explains_the_tuple() -> None:
    x = pb.tensor(_X, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"np\.lexsort reads a list.*as a tuple"):
        np.lexsort([x[0], x[1]])
    np.testing.assert_array_equal(np.lexsort((x[0], x[1])).numpy(), np.lexsort((_X[0], _X[1])))
    # pb.grad's source pass makes the list an array of the keys: it works there as it is
    f = lambda a: a[0][np.lexsort([a[1], a[2]])][0] * a[0, 0]  # noqa: E731
    np.testing.assert_allclose(pb.grad(f)(_X), numeric_grad(f, _X), atol=1e-8)


@pytest.mark.parametrize("n", [1, 2, 5, 37])
def test_log_step_scans_and_halving_match_numpy_at_any_length(n) -> None:
    v = _RNG.standard_normal(n)
    fns = [lambda a: np.logaddexp2.accumulate(a), lambda a: np.fmax.accumulate(a),
           lambda a: np.hypot.reduce(a), lambda a: np.fmin.reduce(a, initial=0.5)]
    for fn in fns:
        np.testing.assert_allclose(fn(pb.tensor(v)).numpy(), fn(v), rtol=1e-13)
        loss = lambda a, fn=fn: _weighted_sum(fn(a))  # noqa: E731
        np.testing.assert_allclose(pb.grad(loss)(v), numeric_grad(loss, v), rtol=1e-6,
                                   atol=1e-8)


def _weighted_sum(y):
    return np.sum(y * np.cos(np.arange(np.size(y)) + 0.5).reshape(np.shape(y)))


def test_integers_reduce_in_numpy_s_float_dtype() -> None:
    ints = np.arange(12).reshape(3, 4) * 7
    for fn in (lambda v: np.logaddexp.reduce(v, axis=1), lambda v: np.hypot.accumulate(v),
               lambda v: np.divide.reduceat(v, [0, 2], axis=1)):
        want = fn(ints)
        got = fn(pb.tensor(ints)).numpy()
        assert got.dtype == want.dtype == np.float64
        np.testing.assert_allclose(got, want, rtol=1e-15)
