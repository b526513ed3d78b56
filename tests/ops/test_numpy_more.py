"""numpy functions declared in ops/numpy_linalg.py, numpy_floats.py, numpy_sets.py,
numpy_histograms.py and numpy_polynomials.py (their values and gradients against
numpy and finite differences are rows of test_numpy_extras.py's table): gradients
against torch's counterparts, every front door, numpy's errors and numpy's integer
results."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb

from . import numeric_grad
from .test_numpy_extras import _PROGRAMS, _weighted

_RNG = np.random.default_rng(11)
_A = _RNG.standard_normal((3, 3)) + 3 * np.eye(3)
_V = _RNG.standard_normal(6)


def _pairs(torch):
    """(pullback's numpy call, torch's call) on the same input."""
    w = np.cos(np.arange(9.0)).reshape(3, 3)
    return {
        "float_power": (lambda t: np.float_power(np.abs(t) + 0.5, t),
                        lambda t: torch.float_power(t.abs() + 0.5, t)),
        "ldexp": (lambda t: np.ldexp(t, np.array([1, -2, 3])),
                  # (torch's integer exponents: 2 ** -2 in integers is 0, so float ones)
                  lambda t: torch.ldexp(t, torch.tensor([1.0, -2.0, 3.0]))),
        "frexp": (lambda t: np.frexp(t * 7)[0], lambda t: torch.frexp(t * 7).mantissa),
        "nextafter": (lambda t: np.nextafter(t, 0.0) * t,
                      lambda t: torch.nextafter(t, torch.zeros_like(t)) * t),
        "vecdot": (lambda t: np.linalg.vecdot(t, w, axis=0),
                   lambda t: torch.linalg.vecdot(t, torch.tensor(w), dim=0)),
        "multi_dot": (lambda t: np.linalg.multi_dot([t, t.T, t[:, :2], t[0, :2]]),
                      lambda t: torch.linalg.multi_dot([t, t.T, t[:, :2], t[0, :2]])),
        "cond": (lambda t: np.linalg.cond(t), lambda t: torch.linalg.cond(t)),
        "cond--2": (lambda t: np.linalg.cond(t, -2), lambda t: torch.linalg.cond(t, -2)),
        "tensorsolve": (lambda t: np.linalg.tensorsolve(t.reshape(3, 3, 1), t[1]),
                        lambda t: torch.linalg.tensorsolve(t.reshape(3, 3, 1), t[1])),
        "tensorinv": (lambda t: np.linalg.tensorinv(t.reshape(3, 1, 3), 2),
                      lambda t: torch.linalg.tensorinv(t.reshape(3, 1, 3), 2)),
        "cumulative_sum": (lambda t: np.cumulative_sum(t, axis=0),
                           lambda t: torch.cumsum(t, 0)),
        "cumulative_prod": (lambda t: np.cumulative_prod(t, axis=1, include_initial=True),
                            lambda t: torch.cat([torch.ones(3, 1, dtype=t.dtype),
                                                 torch.cumprod(t, 1)], 1)),
    }


@pytest.mark.parametrize("name", ["float_power", "ldexp", "frexp", "nextafter", "vecdot",
                                  "multi_dot", "cond", "cond--2",
                                  "tensorsolve", "tensorinv", "cumulative_sum",
                                  "cumulative_prod"])
def test_values_and_gradients_match_torch(torch, name) -> None:
    ours, theirs = _pairs(torch)[name]
    x = _A[0] if name in ("ldexp", "frexp", "float_power") else _A
    results = []
    for m, fn in ((pb, ours), (torch, theirs)):
        t = m.tensor(x, requires_grad=True)
        y = fn(t)
        (y * m.tensor(np.cos(np.arange(y.numel()) + 0.5).reshape(tuple(y.shape)))).sum(
            ).backward()
        results.append((y.detach().numpy(), t.grad.numpy()))
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("p", ["fro", "nuc", np.inf, -np.inf, 1, -1])
def test_cond_of_the_other_norms(torch, p) -> None:
    """torch.linalg.cond's backward fails for these (torch 2.13: an in-place write into
    inv's output it saved): its values, and finite differences for the gradient."""
    t = torch.tensor(_A, requires_grad=True)
    np.testing.assert_allclose(np.linalg.cond(pb.tensor(_A), p).numpy(),
                               torch.linalg.cond(t, p).detach().numpy(), rtol=1e-12)
    if p == "nuc":  # (its backward runs: the same gradient)
        torch.linalg.cond(t, p).backward()
        np.testing.assert_allclose(pb.grad(lambda a: np.linalg.cond(a, p))(_A),
                                   t.grad.numpy(), rtol=1e-10)
    else:
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            torch.linalg.cond(t, p).backward()
    f = lambda a: np.linalg.cond(a, p)  # noqa: E731
    np.testing.assert_allclose(pb.grad(f)(_A), numeric_grad(f, _A), rtol=1e-6, atol=1e-8)


def test_torch_nextafter_gradient_is_one_in_x1_and_zero_in_x2(torch) -> None:
    for m in (pb, torch):
        x, y = m.tensor([1.5, -2.0], requires_grad=True), m.tensor([3.0, -9.0],
                                                                   requires_grad=True)
        out = np.nextafter(x, y) if m is pb else torch.nextafter(x, y)
        out.sum().backward()
        assert x.grad.tolist() == [1.0, 1.0] and y.grad.tolist() == [0.0, 0.0]


def _program(v):
    a = np.reshape(v[:4], (2, 2)) + 2 * np.eye(2)
    return (np.sum(np.polydiv(v, v[:3] + [2.0, 0.0, 0.0])[0])
            + np.linalg.cond(a) + np.linalg.multi_dot([a, a.T, a]).sum()
            + np.vecdot(v[:3], v[3:]) + np.matvec(a, v[:2]).sum() + np.vecmat(v[:2], a).sum()
            + np.cumulative_sum(v, include_initial=True).sum() + np.float_power(v[0] ** 2, 1.5)
            + np.modf(v * 3)[0].sum() + np.ldexp(v, 3).sum() + np.frexp(v)[0].sum()
            + np.linalg.tensorinv(a, 1).sum() + np.sort_complex(v).real[1]
            + np.unique(v).sum() + np.polyadd(v, v[:2]).sum())


def test_every_front_door() -> None:
    want = _program(_V)
    np.testing.assert_allclose(pb.compile(_program)(pb.tensor(_V)).numpy(), want, rtol=1e-12)
    expected = numeric_grad(_program, _V)
    np.testing.assert_allclose(pb.grad(_program)(_V), expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(pb.compile(pb.grad(_program))(pb.tensor(_V)).numpy(),
                               expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(pb.jacfwd(_program)(_V), pb.jacrev(_program)(_V), rtol=1e-9,
                               atol=1e-12)


def test_vmap_batches_the_composed_functions() -> None:
    def g(r):
        a = np.reshape(r[:4], (2, 2)) + 2 * np.eye(2)
        return (np.linalg.cond(a, "fro") + np.vecdot(r[:3], r[3:]) + np.matvec(a, r[:2])
                + np.cumulative_prod(r[:2], include_initial=True)[1:] + np.ldexp(r[:2], 2)
                + np.polyadd(r[:1], r[1:3]) + np.linalg.multi_dot([a, a, r[:2]]))
    rows = _RNG.standard_normal((4, 6))
    np.testing.assert_allclose(pb.vmap(g)(pb.tensor(rows)).numpy(),
                               np.stack([g(r) for r in rows]), rtol=1e-10)


_BAD = {
    "cumulative_sum 2-d": lambda x: np.cumulative_sum(x),
    "cumulative_prod axis": lambda x: np.cumulative_prod(x[0, 0], axis=1),
    "vecdot core": lambda x: np.vecdot(x, x[:2]),
    "matvec core": lambda x: np.matvec(x, x[0, :2]),
    "vecmat core": lambda x: np.vecmat(x[0, :2], x),
    "multi_dot 1": lambda x: np.linalg.multi_dot([x]),
    "multi_dot 3-d": lambda x: np.linalg.multi_dot([x, x[None], x]),
    "cond non-square": lambda x: np.linalg.cond(x[:2], "fro"),
    "cond empty": lambda x: np.linalg.cond(x[:0, :0]),
    "tensorinv ind": lambda x: np.linalg.tensorinv(x, 0),
    "tensorsolve shape": lambda x: np.linalg.tensorsolve(x[:2], x[0]),
    "unique axis": lambda x: np.unique(x, axis=2),
    "sort_complex 0-d": lambda x: np.sort_complex(x[0, 0]),
    "polydiv 2-d": lambda x: np.polydiv(x, x[0]),
    "histogram2d bins": lambda x: np.histogram2d(x[0], x[1], bins=-1),
    "ldexp float exponent": lambda x: np.ldexp(x, 1.5),
}


@pytest.mark.parametrize("name", list(_BAD))
def test_bad_arguments_raise_numpy_s_error(name) -> None:
    with pytest.raises(Exception) as want:
        _BAD[name](_A)
    with pytest.raises(type(want.value)) as got:
        _BAD[name](pb.tensor(_A, requires_grad=True))
    assert str(got.value) == str(want.value)


def test_unique_and_sets_give_numpy_s_integer_results_and_first_occurrences() -> None:
    v = np.array([3.0, 1.0, 3.0, 2.0, 1.0])
    x = pb.tensor(v, requires_grad=True)
    got, want = np.unique(x, True, True, True), np.unique(v, True, True, True)
    for a, b in zip(got, want):
        assert a.detach().numpy().dtype == b.dtype and a.tolist() == b.tolist()
    got[0].sum().backward()
    assert x.grad.tolist() == [1.0, 1.0, 0.0, 1.0, 0.0]  # (each value's first occurrence)
    counts = np.unique_counts(x)
    assert type(counts) is type(np.unique_counts(v)) and counts.counts.tolist() == [2, 1, 2]
    assert np.unique_all(x).inverse_indices.tolist() == np.unique_all(v).inverse_indices.tolist()
    both = np.intersect1d(x, [2.0, 3.0, 7.0], return_indices=True)
    assert [b.tolist() for b in both] == [b.tolist() for b in np.intersect1d(
        v, [2.0, 3.0, 7.0], return_indices=True)]
    y = pb.tensor([2.0, 9.0], requires_grad=True)  # (only ar2 traced: ar2's element)
    np.intersect1d(v, y).sum().backward()
    assert y.grad.tolist() == [1.0, 0.0]
    u = pb.tensor([5.0, 1.0], requires_grad=True)
    (np.setxor1d(x, u).sum() * 10 + np.union1d(u, x).sum()).backward()
    assert u.grad.tolist() == [11.0, 1.0]
    assert np.setdiff1d(x, [1.0], assume_unique=True).tolist() == [3.0, 3.0, 2.0]


def test_piecewise_constant_results_carry_no_gradient() -> None:
    x = pb.tensor([0.75, -6.5, 3.0], requires_grad=True)
    mantissa, exponent = np.frexp(x)
    assert exponent.dtype == pb.int32 and not exponent.requires_grad
    assert exponent.tolist() == np.frexp(np.array([0.75, -6.5, 3.0]))[1].tolist()
    frac, whole = np.modf(x)
    (whole * 1.0 + frac * 2.0).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]
    assert np.modf(pb.tensor([-2.0, np.inf]))[0].numpy().tolist() == [-0.0, 0.0]
    assert np.signbit(np.modf(pb.tensor([-2.0]))[0].numpy()).all()  # (numpy's -0.0)
    edges = np.histogram_bin_edges(x, 4)
    assert not edges.requires_grad and edges.tolist() == np.histogram_bin_edges(
        np.array([0.75, -6.5, 3.0]), 4).tolist()
    h, xe, ye = np.histogram2d(x, x * 2, bins=2)
    assert not h.requires_grad and h.tolist() == np.histogram2d(
        np.array([0.75, -6.5, 3.0]), np.array([1.5, -13.0, 6.0]), bins=2)[0].tolist()


def test_lexsort_gives_numpy_s_indices() -> None:
    k = _RNG.integers(0, 3, (2, 7)).astype(float)
    t = pb.tensor(k, requires_grad=True)
    want = np.lexsort(k)
    assert np.lexsort(t).tolist() == np.lexsort((t[0], t[1])).tolist() == want.tolist()

    def f(v):  # a list of traced keys: the source pass gives numpy's protocol a tuple
        return np.sum(v[0][np.lexsort([v[0], v[1]])] * np.arange(7.0))
    np.testing.assert_allclose(pb.grad(f)(k)[0], np.arange(7.0)[np.argsort(want)])


def test_weighted_histograms_are_differentiable_in_the_weights() -> None:
    x, y = _RNG.standard_normal(20), _RNG.standard_normal(20)
    w = np.abs(_RNG.standard_normal(20))
    for density in (False, True):
        def f(wt, density=density):
            return np.histogram2d(x, y, bins=[3, np.array([-3.0, 0.0, 0.5, 3.0])],
                                  range=None, density=density, weights=wt)[0]
        got = f(pb.tensor(w, requires_grad=True))
        np.testing.assert_allclose(got.detach().numpy(), f(w), rtol=1e-12)
        loss = lambda wt: np.sum(f(wt) * np.arange(9.0).reshape(3, 3))  # noqa: E731
        np.testing.assert_allclose(pb.grad(loss)(w), numeric_grad(loss, w), rtol=1e-6,
                                   atol=1e-8)
    s = np.stack([x, y, w])
    got = np.histogramdd(s.T, bins=2, weights=pb.tensor(w, requires_grad=True))
    want = np.histogramdd(s.T, bins=2, weights=w)
    np.testing.assert_allclose(got[0].detach().numpy(), want[0], rtol=1e-12)
    assert all(np.array_equal(a.numpy(), b) for a, b in zip(got[1], want[1]))


def test_complex_operands() -> None:
    z = _RNG.standard_normal((2, 3)) + 1j * _RNG.standard_normal((2, 3))
    t = pb.tensor(z)
    np.testing.assert_allclose(np.vecdot(t, t[::-1]).numpy(), np.vecdot(z, z[::-1]),
                               rtol=1e-12)
    np.testing.assert_allclose(np.vecmat(t[0], np.ones((3, 2))).numpy(),
                               np.vecmat(z[0], np.ones((3, 2))), rtol=1e-12)
    s = np.sort_complex(pb.tensor(z.real.round(0) + 1j * z.imag))
    assert s.dtype == pb.complex128
    np.testing.assert_array_equal(s.numpy(), np.sort_complex(z.real.round(0) + 1j * z.imag))
    assert np.sort_complex(pb.tensor([3, 1], dtype=pb.int16)).dtype == pb.complex64


_NEW = ["linalg.matmul", "linalg.diagonal", "vecdot", "linalg.vecdot", "matvec", "vecmat",
        "multi_dot", "cond-fro", "tensorsolve", "tensorinv", "cumulative_sum",
        "cumulative_prod", "float_power", "ldexp", "frexp", "modf", "nextafter", "polyadd",
        "polysub", "polymul", "polydiv", "unique", "unique-axis", "unique_values",
        "unique_all", "union1d", "intersect1d", "setdiff1d", "setxor1d", "sort_complex",
        "histogram2d", "histogramdd"]


@pytest.mark.parametrize("name", _NEW)
def test_compiled_forward_and_gradient(name) -> None:
    """Each new function's row of test_numpy_extras.py's table through pb.compile, of the
    function and of its gradient (values read by numpy: guards of the trace)."""
    fn, x = _PROGRAMS[name]
    np.testing.assert_allclose(pb.compile(fn)(pb.tensor(x)).numpy(), fn(x), rtol=1e-12,
                               atol=1e-12)
    loss = lambda a: _weighted(fn(a))  # noqa: E731
    np.testing.assert_allclose(pb.compile(pb.grad(loss))(pb.tensor(x)).numpy(),
                               pb.grad(loss)(x), rtol=1e-12, atol=1e-12)


def test_vecdot_gufunc_axis() -> None:
    """np.vecdot is a gufunc: its axis= keyword reached the ufunc protocol, which refused
    any keyword but out= ('numpy.vecdot is not differentiable')."""
    w = np.cos(np.arange(6.0)).reshape(2, 3)
    loss = lambda a: np.sum(np.vecdot(a, w, axis=0) ** 2)  # noqa: E731
    x = _A[:2]
    assert np.allclose(pb.grad(loss)(x), numeric_grad(loss, x), rtol=1e-6)
    out = pb.zeros(3, dtype=pb.float64)
    np.vecdot(pb.tensor(x), w, axis=0, out=out)
    np.testing.assert_allclose(out.numpy(), np.vecdot(x, w, axis=0), rtol=1e-12)
