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
