"""pb.fft and numpy.fft beyond the op-case table: complex inputs (both parts of the
gradient, torch's conjugate Wirtinger convention) against torch and float64 finite
differences, every public function's nodes, numpy's names on Tensors and in pb.grad,
and torch's errors."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb

from . import numeric_grad

_FUNCTIONS = [
    ("fft", {}), ("fft", {"n": 5}), ("fft", {"n": 8, "norm": "ortho"}),
    ("fft", {"dim": 0, "norm": "forward"}), ("ifft", {}), ("ifft", {"n": 3, "norm": "ortho"}),
    ("fftn", {}), ("fftn", {"s": (3, 7)}), ("fftn", {"dim": (0,), "norm": "ortho"}),
    ("ifftn", {"s": (5, 4), "norm": "forward"}), ("fft2", {"norm": "ortho"}), ("ifft2", {}),
    ("rfft", {}), ("rfft", {"n": 7}), ("rfft", {"dim": 0, "norm": "forward"}),
    ("rfftn", {"s": (3, 5)}), ("rfft2", {"norm": "ortho"}),
    ("irfft", {}), ("irfft", {"n": 7}), ("irfft", {"n": 4, "norm": "ortho"}),
    ("irfft", {"dim": 0, "norm": "forward"}), ("irfftn", {}), ("irfftn", {"s": (4, 6)}),
    ("irfft2", {"norm": "ortho"}), ("hfft", {}), ("hfft", {"n": 7, "norm": "ortho"}),
    ("ihfft", {}), ("ihfft", {"n": 5, "norm": "forward"}),
    ("hfft2", {}), ("hfftn", {"s": (3, 5), "norm": "ortho"}), ("hfftn", {"dim": (0,)}),
    ("ihfft2", {}), ("ihfftn", {"s": (3, 5), "norm": "forward"}), ("ihfftn", {"dim": (1,)}),
    ("fftshift", {}), ("fftshift", {"dim": 0}), ("ifftshift", {"dim": (1,)}),
]
_REAL_ONLY = ("rfft", "rfftn", "rfft2", "ihfft", "ihfft2", "ihfftn")


def _input(cplx: bool, dtype=np.float64) -> np.ndarray:
    rng = np.random.default_rng(7)
    x = rng.standard_normal((4, 6))
    return (x + 1j * rng.standard_normal((4, 6))) if cplx else x


def _loss(m, out, w):
    """Re(sum(w * out)): the real loss torch's convention differentiates."""
    return (out * m.tensor(w)).real.sum() if out.is_complex() else (out * m.tensor(w.real)).sum()


def _weights(shape) -> np.ndarray:
    rng = np.random.default_rng(11)
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def _run(m, name, x, kw, w):
    t = m.tensor(x, requires_grad=True)
    out = getattr(m.fft, name)(t, **kw)
    _loss(m, out, w).backward()
    return out, t.grad


_CASES = [(n, kw, c) for n, kw in _FUNCTIONS for c in (False, True)
          if not (c and n in _REAL_ONLY)]


@pytest.mark.parametrize("name,kw,cplx", _CASES,
                         ids=[f"{n}-{kw}-{'complex' if c else 'real'}" for n, kw, c in _CASES])
def test_functions_match_torch(torch, name, kw, cplx) -> None:
    x = _input(cplx).astype(np.complex64 if cplx else np.float32)
    expected = getattr(torch.fft, name)(torch.tensor(x), **kw)
    w = _weights(tuple(expected.shape)).astype(np.complex64)
    out, g = _run(pb, name, x, kw, w)
    t_out, t_g = _run(torch, name, x, kw, w)
    assert out.shape == tuple(t_out.shape)
    assert out.dtype.name == str(t_out.dtype).removeprefix("torch.")
    assert type(out.grad_fn).__name__ == type(t_out.grad_fn).__name__
    np.testing.assert_allclose(out.detach().numpy(), t_out.detach().resolve_conj().numpy(),
                               rtol=1e-4, atol=1e-5)
    assert g.dtype == pb.tensor(x).dtype
    np.testing.assert_allclose(g.numpy(), t_g.resolve_conj().numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name,kw,cplx", _CASES,
                         ids=[f"{n}-{kw}-{'complex' if c else 'real'}" for n, kw, c in _CASES])
def test_gradients_match_finite_differences(name, kw, cplx) -> None:
    """The conjugate Wirtinger gradient of a real loss is dL/dRe(z) + i dL/dIm(z)."""
    x = _input(cplx)
    fn = getattr(pb.fft, name)
    w = _weights(tuple(fn(pb.tensor(x), **kw).shape))
    _, g = _run(pb, name, x, kw, w)

    def loss(re, im):
        return float(_loss(pb, fn(pb.tensor(re + 1j * im if cplx else re), **kw), w))
    expected = numeric_grad(lambda re: loss(re, x.imag), x.real)
    if cplx:
        expected = expected + 1j * numeric_grad(lambda im: loss(x.real, im), x.imag)
    np.testing.assert_allclose(g.numpy(), expected, rtol=1e-6, atol=1e-8)


_NUMPY = [("fft", {}), ("ifft", {"n": 5}), ("fftn", {"axes": (0,)}), ("fft2", {}),
          ("ifftn", {"s": (3, 3), "axes": (0, 1), "norm": "ortho"}), ("rfft", {"n": 7}),
          ("irfft", {}),
          ("rfftn", {}), ("irfftn", {"s": (4, 5), "axes": (0, 1)}), ("rfft2", {"norm": "forward"}),
          ("irfft2", {}), ("hfft", {"n": 6}), ("ihfft", {}), ("fftshift", {}),
          ("ifftshift", {"axes": 1}), ("ifft2", {})]


@pytest.mark.parametrize("name,kw", _NUMPY, ids=[f"{n}-{kw}" for n, kw in _NUMPY])
def test_numpy_names_on_tensors_and_in_grad(name, kw) -> None:
    x = _input(False)
    f = getattr(np.fft, name)
    t = pb.tensor(x, requires_grad=True)
    out = f(t, **kw)
    assert isinstance(out, pb.Tensor) and out.requires_grad
    np.testing.assert_allclose(out.detach().numpy(), f(x, **kw), rtol=1e-12, atol=1e-12)

    def loss(a):
        y = f(a, **kw)
        return np.sum(np.abs(y) ** 2 * np.cos(np.arange(y.shape[-1])))
    np.testing.assert_allclose(pb.grad(loss)(pb.tensor(x)).numpy(),
                               numeric_grad(loss, x), rtol=1e-6, atol=1e-7)
    loss(t).backward()
    np.testing.assert_allclose(t.grad.numpy(), numeric_grad(loss, x), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("call", [
    lambda T, x: T.fft.fft(x, n=0), lambda T, x: T.fft.fft(x, norm="foo"),
    lambda T, x: T.fft.rfft(x.to(T.complex64)), lambda T, x: T.fft.ihfft(x.to(T.complex64)),
    lambda T, x: T.fft.fft(x.half()), lambda T, x: T.fft.fft(x.sum()),
    lambda T, x: T.fft.fft(x, dim=3), lambda T, x: T.fft.fftn(x, s=(2, 3, 4)),
    lambda T, x: T.fft.fftn(x, s=(2, 3), dim=(0,)), lambda T, x: T.fft.fftn(x, dim=(0, 0)),
    lambda T, x: T.fft.irfft(x[:, :1]),
], ids=["n0", "norm", "rfft-complex", "ihfft-complex", "half", "0d", "dim", "s-len",
        "s-dim", "unique", "irfft-1"])
def test_errors_match_torch(torch, call) -> None:
    x = np.ones((4, 6), np.float32)
    with pytest.raises(Exception) as theirs:
        call(torch, torch.tensor(x))
    with pytest.raises(theirs.type) as ours:
        call(pb, pb.tensor(x))
    assert str(ours.value) == str(theirs.value)


def test_generated_code_reads_as_numpy() -> None:
    def spectral(x):
        return np.sum(np.abs(np.fft.rfft(x)) ** 2) + np.sum(np.fft.irfft(np.fft.fft(x), n=5))
    x = np.linspace(0.0, 1.0, 6)
    cf = pb.compile(spectral)
    for _ in range(2):  # the second call runs the generated code
        t = pb.tensor(x, requires_grad=True)
        cf(t).backward()
    np.testing.assert_allclose(t.grad.numpy(), numeric_grad(spectral, x), rtol=1e-6)
    variant = cf.cache.variants()[0]
    source = variant.forward.source + "".join(m.source for m in variant.backwards.values())
    assert "np.fft.rfftn(" in source and "np.fft.irfftn(" in source
    assert "np.fft.fftn(" in source


@pytest.mark.parametrize("name", ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fftn",
                                  "irfftn", "rfft2", "irfft2"])
def test_numpy_names_promote_as_numpy_does(name) -> None:
    """numpy's dtypes on numpy's names: integers transform in float64, float16 in float32
    (irfft and hfft of float16 give float16); the gradient has the input's dtype."""
    f = getattr(np.fft, name)
    for dtype in (np.int64, np.float16):
        x = np.arange(1, 13).reshape(3, 4).astype(dtype)
        out = f(pb.tensor(x))
        assert out.dtype.name == str(f(x).dtype)
        np.testing.assert_allclose(out.numpy(), f(x), rtol=1e-6 if dtype == np.int64 else 1e-3)
    t = pb.tensor(np.linspace(0, 1, 12).reshape(3, 4).astype(np.float16), requires_grad=True)
    np.real(f(t)).sum().backward()
    assert t.grad.dtype == pb.float16


def test_complex_input_through_compile_and_grad_matches_eager() -> None:
    z = np.array([1 + 2j, -0.5 + 1j, 0.3 - 0.2j, 2 + 0j])

    def f(t):
        power = pb.fft.fft(t, n=6, norm="ortho").abs() ** 2
        return (power * pb.tensor(np.arange(6.0))).sum() + pb.fft.irfft(t).sum()
    t = pb.tensor(z, requires_grad=True)
    f(t).backward()
    want = t.grad.numpy()
    np.testing.assert_allclose(pb.grad(f)(pb.tensor(z)).numpy(), want, rtol=1e-12)
    compiled = pb.compile(f)
    for _ in range(2):  # the trace, then the generated code
        t = pb.tensor(z, requires_grad=True)
        compiled(t).backward()
        np.testing.assert_allclose(t.grad.numpy(), want, rtol=1e-12)
