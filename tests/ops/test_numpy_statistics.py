"""numpy's statistics functions (ops/numpy_statistics.py): values, dtypes and shapes
against numpy, gradients against float64 central finite differences (eagerly and
through pb.grad) and against torch where torch has the function; numpy's own errors
for bad arguments."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import pullback as pb

from . import numeric_grad

_RNG = np.random.default_rng(5)
_X = _RNG.standard_normal((3, 4))
_HOLES = np.zeros((3, 4), bool)
_HOLES[0, 1] = _HOLES[2, :] = True  # one NaN, and a slice of NaNs only
_W = _RNG.random(4) + 0.5


def _nan(x):
    return np.where(_HOLES, np.nan, x)


_PROGRAMS = {
    "average": lambda x: np.average(x, axis=1, weights=_W),
    "average-returned": lambda x: np.average(x, axis=0, returned=True)[0],
    "average-weights-traced": lambda x: np.average(_X, axis=(1, 0), weights=x ** 2 + 1,
                                                   returned=True)[1],
    "cov": lambda x: np.cov(x),
    "cov-rowvar-bias": lambda x: np.cov(x, rowvar=False, bias=True),
    "cov-y": lambda x: np.cov(x[0], x[1]),
    "cov-weights": lambda x: np.cov(x, ddof=2, fweights=[1, 2, 1, 3], aweights=_W),
    "cov-aweights-traced": lambda x: np.cov(_X, aweights=x[0] ** 2),
    "corrcoef": lambda x: np.corrcoef(x),
    "corrcoef-y": lambda x: np.corrcoef(x[0], x[2] ** 2),
    "quantile": lambda x: np.quantile(x, 0.3),
    "quantile-axis-keepdims": lambda x: np.quantile(x, [0.1, 0.5, 0.9], axis=1,
                                                    keepdims=True),
    "quantile-lower": lambda x: np.quantile(x, [0.3, 0.7], axis=1, method="lower"),
    "quantile-higher": lambda x: np.quantile(x, 0.3, axis=0, method="higher"),
    "quantile-nearest": lambda x: np.quantile(x, [0.2, 0.5, 0.75], method="nearest"),
    "quantile-midpoint": lambda x: np.quantile(x, [0.2, 0.5], axis=1, method="midpoint"),
    "percentile": lambda x: np.percentile(x, 40, axis=0),
    "nanquantile": lambda x: np.nanquantile(_nan(x), [0.3, 0.8], axis=1),
    "nanpercentile": lambda x: np.nanpercentile(_nan(x), 70),
    "nanmedian": lambda x: np.nanmedian(_nan(x), axis=1) + np.nanmedian(_nan(x)),
    "nanmedian-keepdims": lambda x: np.nanmedian(_nan(x), axis=(0, 1), keepdims=True),
    "nanmax": lambda x: np.nanmax(_nan(x), axis=1),
    "nanmin": lambda x: np.nanmin(_nan(x), axis=0, keepdims=True),
    "nanvar": lambda x: np.nanvar(_nan(x), axis=1),
    "nanstd": lambda x: np.nanstd(_nan(x), axis=0, ddof=1),
    "nanprod": lambda x: np.nanprod(_nan(x), axis=1),
    "nancumsum": lambda x: np.nancumsum(_nan(x), axis=1),
    "nancumprod": lambda x: np.nancumprod(_nan(x)),
    "ptp": lambda x: np.ptp(x, axis=1),
    "bincount": lambda x: np.bincount([0, 2, 2, 5], weights=x[1]),
    "histogram-weights": lambda x: np.histogram(_X, bins=3, weights=x ** 2)[0],
    "histogram-density": lambda x: np.histogram(_X[0], bins=[-2, 0, 0.5, 2], weights=x[1],
                                                density=True)[0],
}


def _weighted(y):
    """A scalar of any result with a gradient reaching every element (not the NaNs)."""
    w = np.cos(np.arange(np.size(y)) + 0.5).reshape(np.shape(y))
    return np.sum(np.where(np.isnan(y), 0, y) * w)


@pytest.mark.parametrize("name", list(_PROGRAMS))
def test_values_and_gradients(name) -> None:
    fn = _PROGRAMS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # numpy's all-NaN slice
        want = np.asarray(fn(_X))
        t = pb.tensor(_X, requires_grad=True)
        out = fn(t)
        assert isinstance(out, pb.Tensor) and out.requires_grad
        got = out.detach().numpy()
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)

        def loss(a):
            return _weighted(fn(a))
        expected = numeric_grad(loss, _X)
        loss(t).backward()
        np.testing.assert_allclose(t.grad.numpy(), expected, rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(pb.grad(loss)(_X), expected, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("method", ["linear", "lower", "higher", "nearest", "midpoint"])
def test_quantile_values_are_numpys_exactly(method) -> None:
    x = _RNG.standard_normal((4, 6))
    x[0, 2] = np.nan
    x[1, :] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for q in ([0.0, 0.1, 0.25, 0.5, 0.6, 1.0], 0.5, np.float32(0.3)):
            for axis in (None, 0, 1, (1, 0)):
                for a, fn in ((x, np.nanquantile), (x[2:], np.quantile),
                              (x[2:].astype(np.float32), np.quantile),
                              (np.arange(12).reshape(3, 4), np.quantile)):
                    want = fn(a, q, axis=axis, method=method)
                    got = fn(pb.tensor(a), q, axis=axis, method=method).numpy()
                    assert got.dtype == want.dtype, (q, axis, a.dtype)
                    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", ["cov", "corrcoef", "quantile", "nanquantile",
                                  "cov-weights"])
def test_gradients_match_torch(torch, name) -> None:
    x = _X.copy()
    x[0, 1] = np.nan if name == "nanquantile" else x[0, 1]
    calls = {
        "cov": (lambda a: np.cov(a), lambda a: torch.cov(a)),
        "corrcoef": (lambda a: np.corrcoef(a), lambda a: torch.corrcoef(a)),
        "quantile": (lambda a: np.quantile(a, [0.3, 0.5], axis=1),
                     lambda a: torch.quantile(a, torch.tensor([0.3, 0.5], dtype=a.dtype), 1)),
        "nanquantile": (lambda a: np.nanquantile(a, 0.6, axis=1),
                        lambda a: torch.nanquantile(a, 0.6, dim=1)),
        "cov-weights": (lambda a: np.cov(a, fweights=[1, 2, 1, 1], aweights=_W),
                        lambda a: torch.cov(a, fweights=torch.tensor([1, 2, 1, 1]),
                                            aweights=torch.tensor(_W))),
    }
    results = []
    for m, fn in zip((pb, torch), calls[name]):
        t = m.tensor(x, requires_grad=True)
        y = fn(t)
        (y * m.tensor(np.cos(np.arange(y.numel()) + 0.5).reshape(tuple(y.shape)))).sum()\
            .backward()
        results.append((y.detach().numpy(), t.grad.numpy()))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-10, atol=1e-12)


_BAD = {
    "quantile out of range": lambda x: np.quantile(x, 1.5),
    "average without axis": lambda x: np.average(x, weights=[1.0, 2.0]),
    "average weights shape": lambda x: np.average(x, axis=1, weights=[1.0, 2.0]),
    "average weights zero": lambda x: np.average(x, weights=np.zeros((3, 4))),
    "cov 3-d": lambda x: np.cov(x.reshape(1, 3, 4)),
    "cov ddof": lambda x: np.cov(x, ddof=1.5),
    "cov fweights": lambda x: np.cov(x, fweights=[1.5, 1, 1, 1]),
    "bincount negative": lambda x: np.bincount([-1, 2], weights=x[0, :2]),
    "quantile method": lambda x: np.quantile(x, 0.5, method="bogus"),
}


@pytest.mark.parametrize("name", list(_BAD))
def test_bad_arguments_raise_numpys_error(name) -> None:
    fn = _BAD[name]
    with pytest.raises(Exception) as want:
        fn(_X)
    with pytest.raises(type(want.value)) as got:
        fn(pb.tensor(_X, requires_grad=True))
    assert str(got.value) == str(want.value)


def test_a_method_not_covered_is_refused_when_a_gradient_would_be_lost() -> None:
    x = pb.tensor(_X, requires_grad=True)
    with pytest.raises(TypeError, match=r"^numpy\.quantile is not differentiable"):
        np.quantile(x, 0.5, method="weibull")
    np.testing.assert_allclose(np.quantile(x.detach(), 0.5, method="weibull").numpy(),
                               np.quantile(_X, 0.5, method="weibull"))


def test_histogram_and_nanargmax_run_on_the_values() -> None:
    """The counts and the edges do not depend differentiably on the data (nor on a
    ``range`` that requires grad): numpy's results, without a gradient."""
    x = pb.tensor(_X, requires_grad=True)
    lo = pb.tensor(-1.0, requires_grad=True)
    for got, want in ((np.histogram(x, 3), np.histogram(_X, 3)),
                      (np.histogram(x, 4, range=(lo, 1.0)), np.histogram(_X, 4, (-1, 1)))):
        for g, w in zip(got, want):
            assert not g.requires_grad
            np.testing.assert_array_equal(g.numpy(), w)
    np.testing.assert_array_equal(np.nanargmax(x, axis=1).numpy(), np.nanargmax(_X, axis=1))
    np.testing.assert_array_equal(np.nanargmin(x, axis=0).numpy(), np.nanargmin(_X, axis=0))

    def f(a):  # in pb.grad: the histogram's values are read (a guard of the trace)
        counts, edges = np.histogram(a, 3, range=(-3, 3))
        return (counts * edges[:3]).sum() * a.sum()
    compiled = pb.compile(f)
    for a in (_X, _X * 2, _X + 5):
        np.testing.assert_allclose(compiled(a).numpy(), f(a), rtol=1e-12)
    np.testing.assert_allclose(pb.grad(f)(_X), numeric_grad(f, _X), rtol=1e-6)


def test_compile_and_vmap() -> None:
    def f(x):
        return (np.quantile(x, [0.2, 0.7]).sum() + np.nanvar(x)
                + np.corrcoef(np.stack([x, x ** 2])).sum() + np.average(x, weights=_W))
    compiled = pb.compile(f)
    compiled(_X[0])
    np.testing.assert_allclose(compiled(_X[1]).numpy(), f(_X[1]), rtol=1e-12)
    rows = pb.tensor(_X)
    np.testing.assert_allclose(pb.vmap(f)(rows).numpy(), [f(r) for r in _X], rtol=1e-12)
    np.testing.assert_allclose(pb.vmap(pb.grad(f))(rows).numpy(),
                               np.stack([numeric_grad(f, r) for r in _X]), rtol=1e-6)


def test_overwrite_input_leaves_the_tensor_as_it_was() -> None:
    """numpy may overwrite the input with overwrite_input=True; pullback's form reads
    it only (a sort of a copy), so the gradient and the Tensor's data both stay."""
    x = pb.tensor(_X.copy(), requires_grad=True)
    y = np.percentile(x, 30, None, None, True)
    np.testing.assert_allclose(y.detach().numpy(), np.percentile(_X, 30), rtol=1e-12)
    y.backward()
    np.testing.assert_array_equal(x.detach().numpy(), _X)
    assert x.grad.numpy().sum() == pytest.approx(1.0)
