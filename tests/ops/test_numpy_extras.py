"""numpy functions torch has no counterpart of (ops/numpy_extras.py), np.linalg.eig /
eigvals (ops/spectral.py) and float16 gradients: values against numpy, gradients
against float64 central finite differences, eagerly (Tensors through numpy's
protocols) and through pb.grad."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb

from . import numeric_grad

_RNG = np.random.default_rng(3)
_X = _RNG.standard_normal((3, 4))
_V6, _V3 = _RNG.standard_normal(6), _RNG.standard_normal(3)
_W423 = _RNG.standard_normal((4, 2, 3))


def _weighted(y):
    """A scalar of any result with a gradient reaching every element."""
    w = np.cos(np.arange(np.size(y)) + 0.5).reshape(np.shape(y))
    return np.sum(y * w)


_PROGRAMS = {
    "rollaxis": (lambda x: np.rollaxis(x.reshape(3, 2, 2), 2, 0), _X),
    "rollaxis-start": (lambda x: np.rollaxis(x, 0, 2), _X),
    "choose": (lambda x: np.choose(np.array([2, 0, 1, 2]), [x[0], x[1], x[2]]), _X),
    "choose-broadcast": (lambda x: np.choose(np.array([[0], [1], [0]]), [x, x * 2]), _X),
    "choose-constant": (lambda x: np.choose(np.array([1, 0, 2, 1]), [x[0], 0.5, [1.0] * 4]),
                        _X),
    "partition": (lambda x: np.partition(x, 1, axis=1), _X),
    "partition-flat": (lambda x: np.partition(x, 5, axis=None), _X),
    "convolve-full": (lambda v: np.convolve(v, _V3), _V6),
    "convolve-same-odd": (lambda v: np.convolve(v, _V3, "same"), _V6),
    "convolve-same-even": (lambda v: np.convolve(v[:4], v[4:], "same"), _V6),
    "convolve-valid": (lambda v: np.convolve(_V3, v, "valid"), _V6),
    "convolve-both": (lambda v: np.convolve(v[:5], v[1:3] ** 2, "full"), _V6),
    "polyval": (lambda p: np.polyval(p, np.linspace(-1, 1, 5)), _V3),
    "polyval-x": (lambda x: np.polyval(np.array([1.0, -2.0, 0.5]), x), _X),
    "cbrt": (lambda x: np.cbrt(x), _X + 3.0 * np.sign(_X)),
    "real_if_close": (lambda x: np.real_if_close(x + 0j), _X),
    "full_like": (lambda x: np.full_like(x, x[0, 1]) * x, _X),
    "eigvals-real": (lambda a: np.linalg.eigvals(a + a.T + 4 * np.eye(4))[::-1] ** 2,
                     _RNG.standard_normal((4, 4))),
    "eig-abs": (lambda a: np.abs(np.linalg.eig(a)[1]) + np.abs(np.linalg.eig(a)[0]),
                _RNG.standard_normal((3, 3))),
    # issue 23: numpy's argument forms (ops/linalg.py, ops/numpy_extras.py)
    "dot-nd": (lambda a: np.dot(a.reshape(2, 3, 2), _W423), _X),
    "dot-nd-right": (lambda b: np.dot(_X.reshape(2, 3, 2), b.reshape(3, 2, 2)), _X),
    "dot-2d-3d": (lambda b: np.dot(_X[:, :2], b.reshape(3, 2, 2)), _X),
    "trace-offset-axes": (lambda a: np.trace(a.reshape(3, 2, 2), 1, 0, 2), _X),
    "trace-offset": (lambda a: np.trace(a, offset=-1), _X),
    "cross-axes": (lambda a: np.cross(a[:, :3], _X[:, 1:], axisa=0, axisb=0, axisc=0), _X),
    "select": (lambda x: np.select([x > 0.5, x < -0.5], [x * 2, x ** 2], 0.25), _X),
    "linspace": (lambda v: np.linspace(v[0], v[1], 5), _V3),
    "linspace-array": (lambda v: np.linspace(v[:2], v[1:], 4, endpoint=False, axis=1), _V3),
    # ops/numpy_calculus.py, numpy_arrays.py, numpy_fitting.py
    "trapezoid": (lambda y: np.trapezoid(y, dx=0.3, axis=0), _X),
    "trapezoid-x": (lambda y: np.trapezoid(y, x=np.array([0.0, 0.5, 1.5, 3.0])), _X),
    "interp-fp": (lambda v: np.interp(np.linspace(-3, 3, 9), np.sort(v), v), _V6),
    "interp-x": (lambda x: np.interp(x * 3, [-1.0, 0.0, 0.5, 2.0], [1.0, 3.0, -2.0, 0.5],
                                     left=-7.0), _X),
    "interp-period": (lambda v: np.interp(v * 5, [0.5, 1.0, 2.5], [1.0, 3.0, -2.0],
                                          period=np.pi), _V6),
    "correlate": (lambda v: np.correlate(v, v[:3] ** 2), _V6),
    "correlate-full": (lambda v: np.correlate(v[:2], v, "full"), _V6),
    "correlate-same": (lambda v: np.correlate(v[:4], v[1:] * v[0], "same"), _V6),
    "heaviside": (lambda x: np.heaviside(x, 0.5) * x + np.heaviside(np.round(x), x), _X),
    "unwrap": (lambda x: np.unwrap(x * 4, axis=0, period=3.0, discont=2.0), _X),
    "piecewise": (lambda x: np.piecewise(x, [x < 0, x > 1], [lambda t: t ** 2, np.sin,
                                                             lambda t: 3 * t]), _X),
    "apply_along_axis": (lambda x: np.apply_along_axis(lambda r: r[:2] @ r[1:], 0, x), _X),
    "lstsq": (lambda a: np.linalg.lstsq(a.T, a[:2].T + 1)[0], _X),
    "lstsq-rest": (lambda a: np.linalg.lstsq(a.T, _X[0])[1] + np.linalg.lstsq(a.T, _X.T)[3],
                   _X),
    "polyfit": (lambda v: np.polyfit(np.arange(6.0), v, 2), _V6),
    "polyfit-w": (lambda v: np.polyfit(v, np.cos(v), 3, w=np.arange(1.0, 7.0)), _V6),
    "vander": (lambda v: np.vander(v, 4), _V6),
    # ops/numpy_polynomials.py and more of numpy_arrays.py
    "polyder": (lambda v: np.polyder(v, 2), _V6),
    "polyint": (lambda v: np.polyint(v[:4], 2, k=v[4:] * 3), _V6),
    "poly": (lambda v: np.poly(v[:4] * 2), _V6),
    "poly-matrix": (lambda a: np.poly(a[:, :3] @ a[:, :3].T), _X),
    "roots": (lambda v: np.sort(np.roots(np.poly(v[:3] * 2 + [0.0, 5.0, 9.0]))), _V6),
    "roots-complex": (lambda v: np.abs(np.roots(np.concatenate([[1.0], v[:3], [0.0]]))),
                      _V3 * 0 + [0.5, 1.0, 2.0]),
    "ediff1d": (lambda x: np.ediff1d(x, to_begin=[1.0, 2.0], to_end=x[0, 1] ** 2), _X),
    "trim_zeros": (lambda x: np.trim_zeros(np.where(np.abs(x) > 0.3, x, 0.0)), _X),
    "extract": (lambda x: np.extract(np.abs(x) > 0.3, x * 2), _X),
    "spacing": (lambda x: np.spacing(x) * 1e12 + x, _X),
    "block": (lambda x: np.block([[x, x[:, :1]], [np.ones((1, 4)), x[:1, :1] * 2]]), _X),
    "insert": (lambda x: np.insert(x, [0, 3, 3], x[1, :3] * 2), _X),
    "insert-axis": (lambda v: np.insert(_X, 2, v[:4], axis=0), _V6),
    "delete": (lambda x: np.delete(x, [0, 2], axis=1), _X),
    "resize": (lambda x: np.resize(x, (5, 3)), _X),
    "logspace": (lambda v: np.logspace(v[:2], 1.0, 4, base=v[2] ** 2 + 1, axis=1), _V3),
    "geomspace": (lambda v: np.geomspace(-v[0] ** 2 - 0.5, -v[1] ** 2 - 2, 6), _V3),
    # ops/numpy_linalg.py, numpy_floats.py, numpy_sets.py, numpy_histograms.py
    "linalg.matmul": (lambda x: np.linalg.matmul(x, x.T[:, :2]), _X),
    "linalg.diagonal": (lambda x: np.linalg.diagonal(x.reshape(2, 2, 3), offset=1), _X),
    "vecdot": (lambda x: np.vecdot(x, x[1]), _X),
    "linalg.vecdot": (lambda x: np.linalg.vecdot(x, x[:, :1] * 2, axis=0), _X),
    "matvec": (lambda x: np.matvec(x.reshape(3, 1, 4)[:, :, :3].reshape(1, 3, 3)[0],
                                   x[2, :3]), _X),
    "vecmat": (lambda x: np.vecmat(x[:, 0], x), _X),
    "multi_dot": (lambda x: np.linalg.multi_dot([x[0], x.T, x, x.T, x[:, 1]]), _X),
    "multi_dot-3": (lambda x: np.linalg.multi_dot([x, x.T, x]), _X),
    "cond": (lambda x: np.linalg.cond(x[:, :3] + 3 * np.eye(3)), _X),
    "cond-fro": (lambda x: np.linalg.cond(x[:, :3] + 3 * np.eye(3), "fro"), _X),
    "cond-inf": (lambda x: np.linalg.cond(x[:, :3] + 3 * np.eye(3), -np.inf), _X),
    "cond--2": (lambda x: np.linalg.cond(x[:2], -2), _X),
    "tensorsolve": (lambda x: np.linalg.tensorsolve((x[:, :3] + 3 * np.eye(3)).reshape(
        3, 3, 1), x[0, :3]), _X),
    "tensorinv": (lambda x: np.linalg.tensorinv((x[:2, :2] + 3 * np.eye(2)).reshape(
        2, 2, 1), 1), _X),
    "cumulative_sum": (lambda x: np.cumulative_sum(x, axis=1, include_initial=True), _X),
    "cumulative_prod": (lambda v: np.cumulative_prod(v, include_initial=True), _V6),
    "float_power": (lambda x: np.float_power(np.abs(x) + 0.5, x), _X),
    "ldexp": (lambda x: np.ldexp(x, np.array([[1], [-2], [3]])), _X),
    "frexp": (lambda x: np.frexp(x * 5)[0] * np.frexp(x * 5)[1], _X),
    "modf": (lambda x: np.modf(x * 3)[0] + np.modf(x * 3)[1] ** 2, _X),
    "nextafter": (lambda x: np.nextafter(x, 0.0) * x, _X),
    "polyadd": (lambda v: np.polyadd(v[:2], v), _V6),
    "polysub": (lambda v: np.polysub(v, v[:4] ** 2), _V6),
    "polymul": (lambda v: np.polymul(v[:3], v[2:]), _V6),
    "polydiv": (lambda v: np.concatenate(np.polydiv(v, v[:3] + [2.0, 0.0, 0.0])), _V6),
    "unique": (lambda x: np.unique(np.round(x * 2), return_counts=True)[0] * np.unique(
        np.concatenate([x[0], x[0, :2]])), _X * 0 + _X[:1]),
    "unique-axis": (lambda x: np.unique(np.concatenate([x, x[:1]]), axis=0), _X),
    "unique_values": (lambda v: np.unique_values(np.concatenate([v, v[:2]])), _V6),
    "unique_all": (lambda v: np.unique_all(np.concatenate([v, v[:2]])).values, _V6),
    "union1d": (lambda x: np.union1d(x[0], x[:2]), _X),
    "intersect1d": (lambda v: np.intersect1d(v[1:], v[:4]), _V6),
    "setdiff1d": (lambda v: np.setdiff1d(v, v[:2]), _V6),
    "setxor1d": (lambda v: np.setxor1d(v[:4], v[2:]), _V6),
    "sort_complex": (lambda x: np.abs(np.sort_complex(x)) ** 2, _X),
    "histogram2d": (lambda v: np.histogram2d(_V6, _V6[::-1], bins=3, weights=v ** 2,
                                             density=True)[0], _V6),
    "histogramdd": (lambda v: np.histogramdd(_X.T, bins=(2, 3, 2), weights=v[:4])[0], _V6),
    "divmod": (lambda x: np.divmod(x * 3, 1.5)[1] + np.divmod(x, 0.5)[0] * x, _X),
    "matrix_transpose": (lambda x: np.matrix_transpose(x.reshape(2, 3, 2)), _X),
    "linalg.matrix_transpose": (lambda x: np.linalg.matrix_transpose(x), _X),
    "unstack": (lambda x: np.stack(np.unstack(x, axis=1)[::-1]) * np.unstack(x)[2][:, None],
                _X),
    "apply_over_axes": (lambda x: np.apply_over_axes(np.sum, x ** 2, [0, -1]), _X),
    "apply_over_axes-keep": (lambda x: np.apply_over_axes(
        lambda a, ax: np.cumsum(a, axis=ax), x, 1), _X),
    # ufunc methods (ops/numpy_ufuncs.py)
    "subtract.outer": (lambda x: np.subtract.outer(x[0], x[1:, :2]), _X),
    "add.outer": (lambda v: np.add.outer(v, v[:2]) ** 2, _V6),
    "multiply.outer": (lambda v: np.multiply.outer(v[:3], v), _V6),
    "add.reduce": (lambda x: np.add.reduce(x, axis=(0, 1), keepdims=True), _X),
    "multiply.reduce": (lambda x: np.multiply.reduce(x, axis=1, initial=2.0), _X),
    "maximum.reduce": (lambda x: np.maximum.reduce(x, axis=None), _X),
    "minimum.reduce": (lambda x: np.minimum.reduce(x, axis=1, initial=0.5,
                                                   where=[True, False, True, True]), _X),
    "logaddexp.reduce": (lambda x: np.logaddexp.reduce(x, axis=-1), _X),
    "subtract.reduce": (lambda x: np.subtract.reduce(x, axis=1), _X),
    "hypot.reduce": (lambda x: np.hypot.reduce(x, axis=(1, 0)), _X),
    "add.accumulate": (lambda x: np.add.accumulate(x, axis=1), _X),
    "multiply.accumulate": (lambda x: np.multiply.accumulate(x), _X),
    "maximum.accumulate": (lambda x: np.maximum.accumulate(x, axis=1), _X),
    "minimum.accumulate": (lambda v: np.minimum.accumulate(v), _V6),
    "logaddexp.accumulate": (lambda x: np.logaddexp.accumulate(x, axis=0), _X),
    "divide.accumulate": (lambda v: np.divide.accumulate(v, dtype=np.float64), _V6),
    "add.reduceat": (lambda x: np.add.reduceat(x, [0, 2, 1, 3], axis=1), _X),
    "maximum.reduceat": (lambda v: np.maximum.reduceat(v, [0, 3, 3, 4]), _V6),
    # np.polynomial (ops/numpy_polynomials.py)
    "polynomial.polyval2d": (lambda c: np.polynomial.polynomial.polyval2d(_V3, _V3[::-1], c),
                             _X),
    "polynomial.polyval2d-x": (lambda v: np.polynomial.polynomial.polyval2d(
        v[:3], v[3:], _X), _V6),
    "polynomial.polygrid2d": (lambda x: np.polynomial.polynomial.polygrid2d(
        x[0], x[1, :2], x[1:] ** 2), _X),
}


@pytest.mark.parametrize("name", list(_PROGRAMS))
def test_values_and_gradients(name) -> None:
    fn, x = _PROGRAMS[name]
    t = pb.tensor(x, requires_grad=True)
    out = fn(t)
    assert isinstance(out, pb.Tensor) and out.requires_grad
    reference = fn(x)
    if name.startswith("partition"):  # numpy's order of the other elements is its own
        axis = None if name.endswith("flat") else 1
        np.testing.assert_allclose(out.detach().numpy(), np.sort(x, axis=axis))
    elif not name.startswith(("eig", "real_if")):
        assert out.detach().numpy().dtype == np.asarray(reference).dtype
        np.testing.assert_allclose(out.detach().numpy(), reference, rtol=1e-12, atol=1e-12)

    def loss(a):
        return _weighted(fn(a))
    expected = numeric_grad(loss, x)
    loss(t).backward()
    np.testing.assert_allclose(t.grad.numpy(), expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(pb.grad(loss)(pb.tensor(x)).numpy(), expected,
                               rtol=1e-6, atol=1e-8)


def test_full_with_a_traced_fill_value_in_grad() -> None:
    def f(x):
        return np.sum(np.full((3,), x[0]) * x) + np.sum(np.full_like(np.ones(2), x[1]))
    x = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(pb.grad(f)(pb.tensor(x)).numpy(), [7.0, 3.0, 1.0])


def test_full_with_a_tensor_fill_eagerly_is_refused_not_dropped() -> None:
    """numpy's full does not dispatch on its fill value: numpy asks for the array,
    which a Tensor that requires grad refuses (torch's message)."""
    x = pb.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="Can't call numpy\\(\\) on Tensor that requires"):
        np.full((2,), x[0])


def test_real_if_close_keeps_a_complex_value_far_from_real() -> None:
    z = pb.tensor([1 + 1j, 2 + 0j])
    assert np.real_if_close(z).dtype == pb.complex64
    assert np.real_if_close(pb.tensor([1 + 1e-15j, 2 + 0j], dtype=pb.complex128)).dtype \
        == pb.float64


def test_eig_matches_torch_with_complex_eigenvalues(torch) -> None:
    """Complex eigenvalues and eigenvectors: values, node and a gradient through a loss
    that does not depend on the eigenvectors' phases (torch refuses one that does)."""
    a = np.array([[0.5, -1.5, 0.25], [1.0, 0.25, 0.5], [0.3, -0.2, 1.0]])
    got, want = pb.linalg.eig(pb.tensor(a, requires_grad=True)), torch.linalg.eig(
        torch.tensor(a, requires_grad=True))
    assert type(got.eigenvalues.grad_fn).__name__ == type(want.eigenvalues.grad_fn).__name__
    np.testing.assert_allclose(got.eigenvalues.detach().numpy(),
                               want.eigenvalues.detach().numpy(), rtol=1e-12)
    grads = []
    for m in (pb, torch):
        t = m.tensor(a, requires_grad=True)
        L, V = m.linalg.eig(t)
        w = m.tensor([[1.0, -0.5, 2.0]])
        ((V.abs() * w).sum() + (L * L).real.sum() + (L.imag * w).sum()).backward()
        grads.append(t.grad.numpy())

    def loss(x):
        L, V = np.linalg.eig(x)
        return np.sum(np.abs(V) * [[1.0, -0.5, 2.0]]) + np.sum((L * L).real) + np.sum(
            L.imag * [1.0, -0.5, 2.0])
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(grads[0], numeric_grad(loss, a), rtol=1e-6, atol=1e-8)


def test_numpy_eig_of_a_real_spectrum_is_real() -> None:
    s = np.array([[2.0, 0.5], [0.5, -1.0]])
    L, V = np.linalg.eig(pb.tensor(s))
    assert L.dtype == pb.float64 and V.dtype == pb.float64
    np.testing.assert_allclose(L.numpy(), np.linalg.eig(s)[0])
    assert np.linalg.eig(pb.tensor([[0.0, -1.0], [1.0, 0.0]]))[0].dtype == pb.complex64


@pytest.mark.parametrize("name", ["sin-exp", "matmul-tanh", "softmax", "mean-pow",
                                  "conv-sort", "cumsum-norm"])
def test_float16_gradients_are_float16_as_torch_gives(torch, name) -> None:
    x = np.linspace(-1, 1, 12).reshape(3, 4).astype(np.float16)
    w = np.linspace(0.5, -0.5, 8).reshape(4, 2).astype(np.float16)

    def run(m):
        t, u = (m.tensor(v, requires_grad=True) for v in (x, w))
        y = {"sin-exp": lambda: (t.sin() * t.exp()).sum(),
             "matmul-tanh": lambda: (t @ u).tanh().sum(),
             "softmax": lambda: (m.softmax(t, 1) * t).sum(),
             "mean-pow": lambda: ((t - t.mean(0)) ** 2).mean() + (u * u).sum(),
             "conv-sort": lambda: m.nn.functional.conv2d(
                 t.reshape(1, 1, 3, 4), u.reshape(1, 1, 2, 4)[:, :, :, :2]).sum()
             + (t.sort(1)[0] * t).sum(),
             "cumsum-norm": lambda: t.cumsum(1).log_softmax(0).sum()
             + m.linalg.vector_norm(u)}[name]()
        y.backward()
        return y, t.grad, u.grad
    ours, theirs = run(pb), run(torch)
    for a, b in zip(ours, theirs):
        if b is None:
            assert a is None
            continue
        assert a.dtype == pb.float16
        np.testing.assert_allclose(a.detach().numpy().astype(np.float32),
                                   b.detach().numpy().astype(np.float32),
                                   rtol=2e-2, atol=2e-2)


def test_float16_through_pb_grad_gives_float16() -> None:
    x = np.linspace(-1, 1, 6).reshape(2, 3).astype(np.float16)
    g = pb.grad(lambda v: np.sum(np.tanh(v) @ v.T))(x)
    assert g.dtype == np.float16
    expected = pb.grad(lambda v: np.sum(np.tanh(v) @ v.T))(x.astype(np.float64))
    np.testing.assert_allclose(g.astype(np.float64), expected, rtol=2e-2, atol=2e-2)


def test_trapezoid_vander_and_lstsq_gradients_match_torch(torch) -> None:
    a, b = _RNG.standard_normal((5, 3)), _RNG.standard_normal((5, 2))
    w = np.array([[1.0, 2.0], [3.0, -1.0], [0.5, 0.25]])
    grads = []
    for m in (pb, torch):
        A, B, y = (m.tensor(v, requires_grad=True) for v in (a, b, _V6))
        sol = m.linalg.lstsq(A, B).solution if m is torch else np.linalg.lstsq(A, B)[0]
        trap = m.trapezoid(y, dx=0.5) if m is torch else np.trapezoid(y, dx=0.5)
        ((sol * m.tensor(w)).sum() + trap).backward()
        grads.append([t.grad.numpy() for t in (A, B, y)])
    for ours, theirs in zip(*grads):
        np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-12)


def test_heaviside_runs_with_a_zero_gradient_in_x1_where_torch_refuses(torch) -> None:
    """torch's backward raises (derivative for aten::heaviside is not implemented);
    numpy code runs: the step's gradient is zero, x2's is where x1 == 0."""
    x = pb.tensor([-1.0, 0.0, 2.0], requires_grad=True)
    h = pb.tensor(0.5, requires_grad=True)
    np.sum(np.heaviside(x, h) * pb.tensor([1.0, 2.0, 3.0])).backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0] and h.grad.item() == 2.0
    y = x * 1.0
    np.heaviside.at(y, [0, 0, 1], 2.0)  # (ufunc.at: the mapped ufunc, in place)
    y.sum().backward()
    assert y.tolist() == [2.0, 2.0, 2.0] and x.grad.tolist() == [0.0, 0.0, 1.0]
    with pytest.raises(RuntimeError, match="heaviside is not implemented"):
        t = torch.tensor([0.0, 1.0], requires_grad=True)
        torch.heaviside(t, torch.tensor(0.5)).sum().backward()


def test_compile_and_vmap_of_the_new_numpy_functions() -> None:
    def f(y):
        return np.trapezoid(np.interp(y, [-1.0, 0.0, 1.0], [0.0, 2.0, 1.0]) * y, axis=-1)
    x = _X
    np.testing.assert_allclose(pb.compile(f)(pb.tensor(x)).numpy(), f(x), rtol=1e-12)
    np.testing.assert_allclose(pb.grad(lambda y: f(y).sum())(x),
                               numeric_grad(lambda y: f(y).sum(), x), rtol=1e-6, atol=1e-8)
    g = lambda r: np.trapezoid(np.vander(r, 3), axis=0) + np.polyfit(np.arange(4.0), r, 2)
    np.testing.assert_allclose(pb.vmap(g)(pb.tensor(x)).numpy(), np.stack([g(r) for r in x]),
                               rtol=1e-10)
    h = lambda v: np.interp(v, [-1.0, 0.0, 2.0], [1.0, 3.0, 0.5]) + np.linalg.lstsq(
        np.vander(v, 3), np.arange(6.0))[0].sum() + np.trapezoid(np.unwrap(v * 4))
    np.testing.assert_allclose(pb.jacfwd(h)(_V6), pb.jacrev(h)(_V6), rtol=1e-9, atol=1e-12)


def test_numpy_errors_and_refusals_stay_numpy_s() -> None:
    x = pb.tensor(_X, requires_grad=True)
    with pytest.raises(IndexError, match="out of bounds"):
        np.insert(x, 9, 1.0, axis=0)
    with pytest.raises(ValueError, match="depths are mismatched"):
        np.block([[x], x])
    with pytest.raises(TypeError, match="numpy.polyfit is not differentiable"):
        np.polyfit(x[0], x[1], 1, cov=True)
    assert np.linalg.lstsq(x.T, _X[0])[2] == 3 and np.block([x]).shape == (3, 4)


def test_lstsq_and_polyfit_give_numpy_s_int32_rank() -> None:
    x = pb.tensor(_X, requires_grad=True)
    want = np.linalg.lstsq(_X.T, _X[0])[2]
    got = np.linalg.lstsq(x.T, _X[0])[2]
    assert type(got) is type(want) is np.int32 and got == want == 3
    fit = np.polyfit(x[0], x[1], 2, full=True)
    assert type(fit[2]) is type(np.polyfit(_X[0], _X[1], 2, full=True)[2]) is np.int32
    assert isinstance(fit[0], pb.Tensor) and fit[0].requires_grad

    def f(v):  # under pb.grad, the rank is read as numpy's (a guard of the trace)
        c, _, rank, _ = np.linalg.lstsq(np.vander(v, 3), np.arange(6.0))
        return c.sum() * rank
    np.testing.assert_allclose(pb.grad(f)(_V6), numeric_grad(f, _V6), rtol=1e-6, atol=1e-8)


_BAD = {
    "polyder m": lambda x: np.polyder(x[0], -1),
    "polyint k": lambda x: np.polyint(x[0], 3, k=[1.0, 2.0]),
    "polyint m": lambda x: np.polyint(x[0], -1),
    "poly 3-d": lambda x: np.poly(x.reshape(1, 3, 4)),
    "roots 2-d": lambda x: np.roots(x),
    "ediff1d cast": lambda x: np.ediff1d(x, to_begin=[0.5 + 1j]),
    "trim_zeros trim": lambda x: np.trim_zeros(x, "x"),
    "trim_zeros axis": lambda x: np.trim_zeros(x, axis=3),
    "extract": lambda x: np.extract(np.ones(20, bool), x),
    "nanmedian axis": lambda x: np.nanmedian(x, axis=(0, 0)),
}


@pytest.mark.parametrize("name", list(_BAD))
def test_bad_arguments_raise_numpy_s_error(name) -> None:
    with pytest.raises(Exception) as want:
        _BAD[name](_X)
    with pytest.raises(type(want.value)) as got:
        _BAD[name](pb.tensor(_X, requires_grad=True))
    assert str(got.value) == str(want.value)


def test_new_numpy_functions_compile_batch_and_take_tangents() -> None:
    def f(v):
        return (np.polyint(np.polyder(v, 1)) * np.ediff1d(v, to_end=v[0])).sum() \
            + np.sort(np.roots(np.poly(v[:3] * 2 + [0.0, 5.0, 9.0]))).sum() \
            + np.nanmedian(v) + np.spacing(v).sum() + np.extract(v > 0, v).sum()
    t = pb.tensor(_V6)
    np.testing.assert_allclose(pb.compile(f)(t).numpy(), f(_V6), rtol=1e-12)
    np.testing.assert_allclose(pb.grad(f)(t), numeric_grad(f, _V6), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(pb.jacfwd(f)(_V6), pb.jacrev(f)(_V6), rtol=1e-9, atol=1e-12)
    g = lambda r: np.polyder(np.poly(r), 2) + np.nanmedian(r)
    rows = _RNG.standard_normal((3, 4))
    np.testing.assert_allclose(pb.vmap(g)(pb.tensor(rows)).numpy(),
                               np.stack([g(r) for r in rows]), rtol=1e-10)


def test_nanmedian_gradient_against_torch(torch) -> None:
    """An odd count of non-NaN values: numpy's and torch's medians agree, and so do the
    gradients (to the middle element). For an even count numpy's nanmedian is the mean
    of the two middle values (half the gradient each), which pullback follows; torch's
    takes the lower one."""
    x = _RNG.standard_normal((3, 6))
    x[0, 2] = x[1, 4] = np.nan
    x[2, 1:3] = np.nan
    w = np.cos(np.arange(3.0))
    grads = []
    for m, fn in ((pb, lambda t: np.nanmedian(t[:2], axis=1)),
                  (torch, lambda t: torch.nanmedian(t[:2], dim=1).values)):
        t = m.tensor(x, requires_grad=True)
        (fn(t) * m.tensor(w[:2])).sum().backward()
        grads.append(t.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12)
    t = pb.tensor(x, requires_grad=True)
    np.nanmedian(t[2], axis=0).backward()  # (four values: two middle ones)
    assert sorted(t.grad.numpy()[2][t.grad.numpy()[2] != 0]) == [0.5, 0.5]


def test_ediff1d_gradient_matches_torch_diff(torch) -> None:
    """ediff1d is torch.diff of the raveled array between its two ends (torch's
    prepend= and append= are differenced too: not numpy's to_begin/to_end)."""
    grads = []
    for m, fn in ((pb, lambda t: np.ediff1d(t, to_begin=t[0, :2], to_end=[1.0])),
                  (torch, lambda t: torch.cat([t[0, :2], torch.diff(t.reshape(-1)),
                                               torch.tensor([1.0], dtype=t.dtype)]))):
        t = m.tensor(_X, requires_grad=True)
        y = fn(t)
        (y * m.tensor(np.cos(np.arange(y.shape[0]) + 0.5))).sum().backward()
        grads.append((y.detach().numpy(), t.grad.numpy()))
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)
