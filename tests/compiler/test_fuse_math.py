"""config.fuse_tanh: fused kernels compute tanh themselves (transforms/fuse_math), float64
and float32 within 3 ulp of numpy's, one tanh per kernel; off, numpy's tanh."""

from __future__ import annotations

import numpy as np
import pytest
from pullback.transforms import codegen, fuse_math

import pullback as pb
from pullback.compiler import cache

numba = pytest.importorskip("numba")
N = 96


@pytest.fixture(autouse=True)
def fused():
    cache.reset()
    with pb.config.override(fuse=True, fuse_min_size=64, fuse_threads=False, fuse_tanh=True):
        yield
    cache.reset()


def chain(h, *ws):
    for w in ws:
        h = pb.tanh(h * w + h)
    return h.sum()


def _sources(f, *args) -> str:
    seen: list = []
    codegen.on_new_module(seen.append)
    try:
        pb.value_and_grad(f, argnums=tuple(range(len(args))))(*args)
    finally:
        codegen.on_new_module(None)
    return "\n".join(m.source for m in seen)


def test_tanh_is_within_3_ulp_of_numpys_with_its_nans_zeros_and_limits():
    tanh64 = fuse_math.helpers()["tanh64"]

    @numba.njit
    def kernel(x, y):
        for i in range(x.size):
            y[i] = tanh64(x[i])
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.standard_normal(20000) * 3, rng.uniform(-25, 25, 20000),
                        rng.standard_normal(2000) * 1e-6, np.logspace(-320, 2, 2000),
                        [0.0, np.inf, np.nan, 5e-324, 0.3466, 19.06, 22.0, 22.5, 1e300]])
    x = np.concatenate([x, -x])
    got = np.empty_like(x)
    kernel(x, got)
    want = np.tanh(x)
    ok = ~np.isnan(want)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    assert np.all(np.abs(got[ok] - want[ok]) <= 3 * np.spacing(np.abs(want[ok])))
    assert np.array_equal(np.signbit(got[x == 0]), np.signbit(x[x == 0]))
    assert got[x == np.inf][0] == 1.0 and got[x == -np.inf][0] == -1.0


def test_a_chain_fuses_each_layer_with_its_tanh_and_matches_numpy():
    rng = np.random.default_rng(1)
    args = [rng.standard_normal(N)] + [rng.standard_normal(N) * 0.1 for _ in range(3)]
    src = _sources(chain, *args)
    assert not any("np.tanh(" in line.split("#")[0] for line in src.splitlines())
    assert src.count("= np.tanh(") == 3  # each kernel's comment: one tanh, at its end
    got = pb.value_and_grad(chain, argnums=(0, 1, 2, 3))(*args)
    cache.reset()
    with pb.config.override(fuse=False):
        want = pb.value_and_grad(chain, argnums=(0, 1, 2, 3))(*args)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-13)
    for g, w in zip(got[1], want[1]):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-15)


def test_float32_tanh_is_within_3_ulp_of_numpys_and_2_of_the_exact_one():
    tanh32 = fuse_math.helpers()["tanh32"]

    @numba.njit
    def kernel(x, y):
        for i in range(x.size):
            y[i] = tanh32(x[i])
    rng = np.random.default_rng(4)
    x = np.concatenate([rng.standard_normal(20000) * 3, rng.uniform(-12, 12, 20000),
                        rng.standard_normal(2000) * 1e-4, np.logspace(-45, 1, 2000),
                        [0.0, np.inf, np.nan, 1e-45, 0.3466, 9.0, 9.01, 9.5, 9.6, 3e38]])
    x = np.concatenate([x, -x]).astype(np.float32)
    got = np.empty_like(x)
    kernel(x, got)
    want, exact = np.tanh(x), np.tanh(x.astype(np.float64)).astype(np.float32)
    ok = ~np.isnan(want)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    assert _ulps(got[ok], want[ok]).max() <= 3 and _ulps(got[ok], exact[ok]).max() <= 2
    assert np.array_equal(np.signbit(got[x == 0]), np.signbit(x[x == 0]))
    assert got[x == np.inf][0] == 1.0 and got[x == -np.inf][0] == -1.0


def _ulps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """How many float32 values lie between ``a`` and ``b`` (their bits as ordered ints)."""
    def ordered(v: np.ndarray) -> np.ndarray:
        i = v.view(np.int32).astype(np.int64)
        return np.where(i < 0, -(i & 0x7FFFFFFF), i)
    return np.abs(ordered(a) - ordered(b))


def test_a_float32_chain_fuses_its_tanh_and_the_setting_off_keeps_numpys():
    rng = np.random.default_rng(2)
    args32 = [rng.standard_normal(N).astype(np.float32) for _ in range(2)]
    assert not _numpy_tanh(_sources(chain, *args32))
    got = pb.value_and_grad(chain, argnums=(0, 1))(*args32)
    cache.reset()
    with pb.config.override(fuse=False):
        want = pb.value_and_grad(chain, argnums=(0, 1))(*args32)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5)
    for g, w in zip(got[1], want[1]):
        assert g.dtype == np.float32
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    cache.reset()
    with pb.config.override(fuse_tanh=False):
        assert _numpy_tanh(_sources(chain, rng.standard_normal(N), rng.standard_normal(N)))


def _numpy_tanh(src: str) -> bool:
    """Whether the code calls numpy's tanh itself (not only in a kernel's comment)."""
    return any("np.tanh(" in line.split("#")[0] for line in src.splitlines())


def test_compile_fuses_tanh_in_its_forward_and_gives_torchs_gradients():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal(N), rng.standard_normal(N)

    def f(x, w):
        return pb.tanh(x * w + x) * 2 - w
    tx, tw = pb.tensor(x, requires_grad=True), pb.tensor(w, requires_grad=True)
    pb.compile(f)(tx, tw).sum().backward()
    rx, rw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    (torch.tanh(rx * rw + rx) * 2 - rw).sum().backward()
    np.testing.assert_allclose(tx.grad.numpy(), rx.grad.numpy(), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(tw.grad.numpy(), rw.grad.numpy(), rtol=1e-12, atol=1e-15)
