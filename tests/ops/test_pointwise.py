"""The pointwise and statistics ops through their public spellings: numpy's signatures
and meaning, non-differentiable functions on values that require grad (eager and
traced), silence about numpy's floating-point warnings, and the special functions'
accuracy in float64 (the op-level cases live in ops/cases.py)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import pullback as pb
from pullback.ops.kernels import erf_gamma

X = np.array([[1.5, -2.0, 0.25], [0.0, 3.0, -0.75]])


# ------------------------------------------------------------------ numpy's spellings
NUMPY = {
    "var ddof": lambda x: np.var(x, axis=1, ddof=1),
    "std keepdims": lambda x: np.std(x, axis=0, keepdims=True),
    "var all": lambda x: np.var(x),
    "prod axis": lambda x: np.prod(x, axis=(0, 1), keepdims=True),
    "cumsum flat": lambda x: np.cumsum(x),
    "cumprod axis": lambda x: np.cumprod(x, axis=1),
    "median even": lambda x: np.median(x),
    "median axis": lambda x: np.median(x, axis=1, keepdims=True),
    "median odd axis": lambda x: np.median(x, axis=0),
    "nansum": lambda x: np.nansum(x / (x != 0)),
    "nanmean axis": lambda x: np.nanmean(np.log(x), axis=1),
    "amax axes": lambda x: np.amax(x, axis=(0, 1)),
    "max axis ties": lambda x: np.max(np.round(np.abs(x)), axis=1),
    "round": lambda x: np.round(x, 1),
    "around": lambda x: np.around(x * 10, -1),
    "rint": lambda x: np.rint(x),
    "fix": lambda x: np.fix(x),
    "sinc": lambda x: np.sinc(x),
    "angle deg": lambda x: np.angle(x, deg=True),
    "fabs": lambda x: np.fabs(x),
    "nan_to_num": lambda x: np.nan_to_num(x / 0, posinf=1.0),
    "arctan2": lambda x: np.arctan2(x, x[::-1]),
    "hypot": lambda x: np.hypot(x, 2.0),
    "logaddexp2": lambda x: np.logaddexp2(x, x * 2),
    "mod": lambda x: np.mod(x, 0.75),
    "fmod": lambda x: np.fmod(x, -0.75),
    "copysign": lambda x: np.copysign(2.0, x),
    "fmax": lambda x: np.fmax(x, np.nan),
    "degrees": lambda x: np.degrees(x) + np.radians(x),
    "square": lambda x: np.square(x),
    "reciprocal": lambda x: np.reciprocal(x + 5),
    "real imag": lambda x: np.real(x) + np.imag(x),
}


@pytest.mark.parametrize("name", list(NUMPY))
def test_numpy_spelling_gives_numpys_values_and_a_gradient(name):
    fn = NUMPY[name]
    with np.errstate(all="ignore"):
        want = fn(X)
    x = pb.tensor(X, requires_grad=True)
    got = fn(x)
    assert isinstance(got, pb.Tensor)
    assert got.shape == np.shape(want)
    np.testing.assert_allclose(got.numpy(force=True), want, rtol=1e-12)
    if got.requires_grad:  # eager and compiled gradients agree
        weights = np.linspace(0.5, 1.5, got.numel()).reshape(got.shape)
        loss = lambda x: np.sum(np.nan_to_num(fn(x) * weights))
        eager = pb.grad(loss)(X)
        x = pb.tensor(X, requires_grad=True)
        loss(x).backward()
        np.testing.assert_allclose(eager, x.grad.numpy(), rtol=1e-12)


def test_numpy_median_and_count_nonzero_keep_numpys_meaning():
    x = pb.tensor(X)
    assert np.median(x).item() == np.median(X)  # the mean of the two middle ones
    assert pb.median(x).item() == 0.0  # torch's lower median
    assert np.count_nonzero(x, axis=1, keepdims=True).tolist() == [[3], [2]]
    assert np.argsort(x, axis=None).tolist() == np.argsort(X, axis=None, kind="stable").tolist()
    with pytest.raises(TypeError, match="ufunc 'fabs' not supported"):
        np.fabs(pb.tensor([1 + 1j]))


# --------------------------------------------- non-differentiable, on values with grad
NONDIFF = {
    "floor": lambda x: np.floor(x), "ceil": lambda x: np.ceil(x), "round": lambda x: np.round(x, 1),
    "trunc": lambda x: pb.trunc(x), "sign": lambda x: np.sign(x),
    "argmax": lambda x: np.argmax(x), "argsort": lambda x: np.argsort(x, axis=1),
    "comparison": lambda x: x > 0, "isinf": lambda x: np.isinf(x),
    "isfinite": lambda x: pb.isfinite(x), "signbit": lambda x: np.signbit(x),
    "logical_xor": lambda x: np.logical_xor(x > 0, x < 1), "isposinf": lambda x: np.isposinf(x),
    "count_nonzero": lambda x: np.count_nonzero(x), "all": lambda x: np.all(x > -5, axis=0),
}


@pytest.mark.parametrize("name", list(NONDIFF))
def test_non_differentiable_functions_work_on_values_that_require_grad(name):
    """As in torch and JAX: no error, a result without a gradient (floor, round, trunc
    and sign are differentiable in torch, with zero gradients), inside pb.grad too, where
    they are ops of the trace (no guard: a new value reuses the trace)."""
    fn = NONDIFF[name]
    out = fn(pb.tensor(X, requires_grad=True))
    want = fn(X)
    np.testing.assert_array_equal(np.asarray(out.numpy(force=True)), want)
    if out.requires_grad:
        assert name in ("floor", "ceil", "round", "trunc", "sign")

    def loss(x):
        y = fn(x)
        return (x * x).sum() + (y * 0).sum() if y.is_floating_point() else (x * x).sum()

    grad = pb.grad(loss)
    np.testing.assert_allclose(grad(X), 2 * X)
    np.testing.assert_allclose(grad(X + 1), 2 * (X + 1))
    assert grad.cache.info.misses == 1 and grad.cache.info.recompiles == 0


def test_nonzero_is_eager_only():
    x = pb.tensor(X, requires_grad=True)
    assert pb.nonzero(x).tolist() == np.argwhere(X).tolist()
    assert [t.tolist() for t in x.nonzero(as_tuple=True)] == [a.tolist() for a in np.nonzero(X)]
    with pytest.raises(pb.compiler.TraceError, match=r"nonzero\(\).*shape depends on the data"):
        pb.compile(lambda x: pb.nonzero(x).sum())(x)


# ------------------------------------------------------------- numpy's warnings
def test_no_runtime_warning_reaches_the_user():
    """torch is silent about log(0), 0/0 and overflow: so are eager ops, their backward,
    compiled code and pb.grad, and the user's own numpy keeps its error state."""
    def f(x):
        return (pb.log(x) + pb.exp(x * 1000) + x / 0 + pb.atanh(x + 1)).sum()

    data = np.array([0.0, 1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x = pb.tensor(data, requires_grad=True)
        f(x).backward()
        compiled = pb.compile(f)
        for _ in range(2):
            compiled(pb.tensor(data, requires_grad=True)).backward()
        pb.grad(lambda x: np.sum(np.log(x) + np.exp(x * 1000)))(data)
        pb.erfinv(pb.tensor([2.0])), pb.lgamma(pb.tensor([-1.0]))
        with pytest.raises(RuntimeWarning):
            np.log(np.zeros(1))


# --------------------------------------------------------------- special functions
def test_special_functions_are_accurate_in_float64():
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 40
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(-6, 6, 400), rng.uniform(-0.1, 0.1, 50), [0.5, 1, 2, 3]])
    pos = np.concatenate([rng.uniform(0, 30, 400), 1 + rng.uniform(-1e-3, 1e-3, 20),
                          2 + rng.uniform(-1e-3, 1e-3, 20), 10.0 ** rng.uniform(-8, 8, 50)])
    y = np.concatenate([rng.uniform(-1, 1, 300), 1 - 10.0 ** -rng.uniform(1, 15, 50)])
    checks = [
        (erf_gamma.erf, mpmath.erf, x, 1e-15), (erf_gamma.erfc, mpmath.erfc, x, 2e-15),
        (erf_gamma.erfinv, mpmath.erfinv, y, 1e-15),
        (erf_gamma.lgamma, lambda v: mpmath.log(mpmath.gamma(v)), pos, 1e-14),
        (erf_gamma.lgamma, lambda v: mpmath.log(abs(mpmath.gamma(v))), -pos[:300] - 0.5, 1e-12),
        (erf_gamma.digamma, mpmath.digamma, pos[pos > 2], 3e-15),
        (lambda v: erf_gamma.polygamma(1, v), lambda v: mpmath.polygamma(1, v), pos, 2e-15),
        (lambda v: erf_gamma.polygamma(3, v), lambda v: mpmath.polygamma(3, v), x, 2e-14),
    ]
    for fn, ref, values, rtol in checks:
        want = np.array([float(ref(mpmath.mpf(float(v)))) for v in values])
        np.testing.assert_allclose(fn(values), want, rtol=rtol, atol=1e-300)


def test_special_functions_match_torch_at_the_edges(torch):
    edges = np.array([0.0, -0.0, -1.0, -2.5, 1.0, 2.0, np.inf, -np.inf, np.nan, 1e-300,
                      1e300, -1e5 - 0.5])
    t = torch.from_numpy(edges)
    for name in ("erf", "erfc", "lgamma", "digamma"):
        np.testing.assert_array_equal(np.isnan(getattr(erf_gamma, name)(edges)),
                                      np.isnan(getattr(torch, name)(t).numpy()), err_msg=name)
        np.testing.assert_allclose(getattr(erf_gamma, name)(edges), getattr(torch, name)(t),
                                   rtol=1e-13, err_msg=name)
    unit = np.array([-1.0, 1.0, 0.0, 1.5, np.nan, 1 - 2 ** -53, -0.0])
    np.testing.assert_allclose(erf_gamma.erfinv(unit), torch.erfinv(torch.from_numpy(unit)),
                               rtol=1e-14)
    assert erf_gamma.erf(np.float32(0.5)).dtype == np.float32
