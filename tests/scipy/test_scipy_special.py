"""pullback.scipy.special against scipy.special: values (float64; 0-d, 1-d, 2-d and
broadcast operands), gradients against central differences of scipy's own function,
pb.grad against eager, and second derivatives (grad of grad) for several."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.special as sp
from scipy_checks import check, check_second

import pullback as pb
from pullback.scipy import special as S

SHAPES = [(), (3,), (2, 3)]


def _sample(domain: str, shape: tuple, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    lo, hi = {"real": (-2.5, 2.5), "pos": (0.3, 5.0), "unit": (0.05, 0.95),
              "sym": (-0.9, 0.9), "wide": (-30.0, 30.0), "away": (0.3, 3.0)}[domain]
    x = rng.uniform(lo, hi, shape)
    if domain == "away":
        x = x * rng.choice([-1.0, 1.0], shape)
    return x


# (name, domain of values, domain for gradients)
UNARY = [("gammaln", "pos", "pos"), ("digamma", "pos", "pos"), ("psi", "pos", "pos"),
         ("erf", "real", "real"), ("erfc", "real", "real"), ("erfinv", "sym", "sym"),
         ("erfcx", "real", "real"), ("expit", "wide", "real"), ("logit", "unit", "unit"),
         ("ndtr", "real", "real"), ("log_ndtr", "wide", "real"), ("ndtri", "unit", "unit"),
         ("i0", "wide", "real"), ("i0e", "wide", "away"), ("i1", "wide", "real"),
         ("i1e", "wide", "away"), ("gamma", "pos", "pos"), ("rgamma", "pos", "pos")]
BINARY = [("xlogy", "real", "pos"), ("xlog1py", "real", "unit"), ("betaln", "pos", "pos"),
          ("beta", "pos", "pos")]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("name, domain, _", UNARY, ids=[u[0] for u in UNARY])
def test_unary_values(name: str, domain: str, _: str, shape: tuple) -> None:
    x = _sample(domain, shape)
    want = getattr(sp, name)(x)
    got = getattr(S, name)(x)
    assert type(got) is type(want) and got.dtype == np.float64 and got.shape == shape
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-300)
    t = getattr(S, name)(pb.tensor(x))
    assert isinstance(t, pb.Tensor)
    np.testing.assert_allclose(t.numpy(), want, rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("name, _, domain", UNARY, ids=[u[0] for u in UNARY])
def test_unary_grads(name: str, _: str, domain: str) -> None:
    check(getattr(S, name), getattr(sp, name), [_sample(domain, (2, 3), seed=1)], (0,))


@pytest.mark.parametrize("shapes", [((), ()), ((3,), (3,)), ((2, 3), (3,)), ((2, 1), (1, 3))],
                         ids=str)
@pytest.mark.parametrize("name, dx, dy", BINARY, ids=[b[0] for b in BINARY])
def test_binary_values_and_grads(name: str, dx: str, dy: str, shapes: tuple) -> None:
    x, y = _sample(dx, shapes[0], 2), _sample(dy, shapes[1], 3)
    np.testing.assert_allclose(getattr(S, name)(x, y), getattr(sp, name)(x, y), rtol=1e-12)
    check(getattr(S, name), getattr(sp, name), [x, y], (0, 1))


def test_values_off_the_easy_ranges() -> None:
    neg = np.array([-2.5, -1.5, -0.5, -0.2, 0.7])
    for name in ("gammaln", "digamma", "gamma", "rgamma"):
        np.testing.assert_allclose(getattr(S, name)(neg), getattr(sp, name)(neg), rtol=1e-12)
    tails = np.array([-200.0, -40.0, -5.0, 0.0, 5.0, 10.0, 40.0])
    np.testing.assert_allclose(S.log_ndtr(tails), sp.log_ndtr(tails), rtol=1e-12)
    np.testing.assert_allclose(S.ndtr(tails), sp.ndtr(tails), rtol=1e-12, atol=1e-300)
    p = np.array([1e-300, 1e-100, 1e-10, 0.3, 1 - 1e-10, 0.0, 1.0])
    np.testing.assert_allclose(S.ndtri(p), sp.ndtri(p), rtol=1e-12)
    big = np.array([-700.0, -25.0, 19.9, 20.1, 100.0, 700.0])
    for name in ("i0", "i0e", "i1", "i1e"):
        np.testing.assert_allclose(getattr(S, name)(big), getattr(sp, name)(big), rtol=1e-12)
    zeros = np.array([0.0, 0.0, 1.0])
    np.testing.assert_array_equal(S.xlogy(zeros, [0.0, -1.0, 0.0]), sp.xlogy(zeros, [0., -1., 0.]))
    np.testing.assert_array_equal(S.xlog1py(zeros, [-1.0, -2.0, -1.0]),
                                  sp.xlog1py(zeros, [-1.0, -2.0, -1.0]))


def test_integer_and_list_inputs_compute_in_float64() -> None:
    np.testing.assert_allclose(S.gammaln([1, 2, 5]), sp.gammaln([1, 2, 5]))
    assert S.i0(np.arange(3)).dtype == np.float64
    assert S.erf(np.float32([0.5])).dtype == np.float32


@pytest.mark.parametrize("n", [0, 1, 2, 3])
def test_polygamma(n: int) -> None:
    x = _sample("pos", (2, 3), 4)
    np.testing.assert_allclose(S.polygamma(n, x), sp.polygamma(n, x), rtol=1e-11)
    check(lambda x: S.polygamma(n, x), lambda x: sp.polygamma(n, x), [x], (0,), rtol=1e-5)


def test_polygamma_with_an_array_of_orders() -> None:
    x = _sample("pos", (2, 3), 4)
    n = np.array([0, 1, 2])
    np.testing.assert_allclose(S.polygamma(n, x), sp.polygamma(n, x), rtol=1e-11)
    check(lambda x: S.polygamma(n, x), lambda x: sp.polygamma(n, x), [x], (0,), rtol=1e-5)
    with pytest.raises(ValueError, match="non-negative integer"):
        S.polygamma(1.5, x)


@pytest.mark.parametrize("d", [1, 2, 4])
def test_multigammaln(d: int) -> None:
    a = _sample("pos", (3,), 6) + 2.0
    np.testing.assert_allclose(S.multigammaln(a, d), sp.multigammaln(a, d), rtol=1e-12)
    check(lambda a: S.multigammaln(a, d), lambda a: sp.multigammaln(a, d), [a], (0,))


LSE_KW = [{}, {"axis": 0}, {"axis": 1}, {"axis": -1, "keepdims": True}, {"axis": (0, 1)},
          {"b": "w"}, {"axis": 1, "b": "w"}, {"axis": 0, "b": "signed", "return_sign": True},
          {"return_sign": True}]


def _lse_kwargs(kw: dict, shape: tuple) -> dict:
    kw = dict(kw)
    if kw.get("b") == "w":
        kw["b"] = np.random.default_rng(7).uniform(0.5, 2.0, shape)
    elif kw.get("b") == "signed":
        kw["b"] = np.random.default_rng(7).uniform(-2.0, 2.0, shape)
    return kw


@pytest.mark.parametrize("kw", LSE_KW, ids=lambda k: ",".join(map(str, k)) or "default")
def test_logsumexp(kw: dict) -> None:
    a = _sample("real", (2, 3), 8) * 3
    kw = _lse_kwargs(kw, a.shape)
    got, want = S.logsumexp(a, **kw), sp.logsumexp(a, **kw)
    if kw.get("return_sign"):
        np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
        np.testing.assert_array_equal(got[1], want[1])
        f, ref = (lambda a: S.logsumexp(a, **kw)[0]), (lambda a: sp.logsumexp(a, **kw)[0])
    else:
        assert np.shape(got) == np.shape(want)
        np.testing.assert_allclose(got, want, rtol=1e-12)
        f, ref = (lambda a: S.logsumexp(a, **kw)), (lambda a: sp.logsumexp(a, **kw))
    check(f, ref, [a], (0,))


def test_logsumexp_grad_of_b_and_of_0d() -> None:
    a = _sample("real", (2, 3), 8)
    b = np.random.default_rng(7).uniform(0.5, 2.0, (2, 3))
    check(lambda a, b: S.logsumexp(a, axis=1, b=b), lambda a, b: sp.logsumexp(a, axis=1, b=b),
          [a, b], (0, 1))
    np.testing.assert_allclose(S.logsumexp(np.float64(1.5)), sp.logsumexp(1.5))
    inf = np.array([-np.inf, -np.inf])
    assert S.logsumexp(inf) == -np.inf and S.logsumexp(inf, b=[1.0, 1.0]) == -np.inf


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_softmax(fn: str, axis) -> None:
    x = _sample("real", (2, 3), 9) * 2
    np.testing.assert_allclose(getattr(S, fn)(x, axis=axis), getattr(sp, fn)(x, axis=axis),
                               rtol=1e-12)
    check(lambda x: getattr(S, fn)(x, axis=axis), lambda x: getattr(sp, fn)(x, axis=axis),
          [x], (0,))


@pytest.mark.parametrize("f, domain", [
    (S.gammaln, "pos"), (S.erf, "real"), (S.erfinv, "sym"), (S.log_ndtr, "real"),
    (S.ndtri, "unit"), (S.i0e, "away"), (S.i1, "real"), (S.expit, "real"),
    (lambda x: S.xlog1py(x, x + 1.0), "pos"), (lambda x: S.logsumexp(x, axis=1), "real"),
    (lambda x: S.softmax(x, axis=0), "real")],
    ids=["gammaln", "erf", "erfinv", "log_ndtr", "ndtri", "i0e", "i1", "expit", "xlog1py",
         "logsumexp", "softmax"])
def test_second_derivatives(f, domain: str) -> None:
    check_second(f, [_sample(domain, (2, 3), 10)], 0)


def test_eager_values_match_compiled_values() -> None:
    x = pb.tensor(_sample("pos", (2, 3), 11))

    def f(x):
        return S.gammaln(x) + S.i1e(x) * S.log_ndtr(-x) + S.logsumexp(x, axis=0)

    np.testing.assert_allclose(pb.compile(f)(x).numpy(), f(x).numpy(), rtol=1e-14)
