"""The fuse pass (config.fuse): fused kernels give numpy's results bit for bit, and
fuse only what they can compute exactly (one float dtype, one shape or 0-d values)."""

from __future__ import annotations

import numpy as np
import pytest
from pullback.transforms import codegen, fuse

import pullback as pb
from pullback.compiler import cache

pytest.importorskip("numba")
N = 96  # above the threshold the tests set, so the kernels compile fast


@pytest.fixture(autouse=True)
def fused():
    """Fuse from 64 elements, serial kernels (numba compiles them faster), numpy's tanh
    (bit for bit; the kernels' own: test_fuse_math.py); every test traces afresh, so the
    setting applies."""
    cache.reset()
    with pb.config.override(fuse=True, fuse_min_size=64, fuse_threads=False,
                            fuse_tanh=False):
        yield
    cache.reset()


def _both(f, *args, argnums=0):
    """(fused, unfused) value_and_grad results."""
    got = pb.value_and_grad(f, argnums=argnums)(*args)
    cache.reset()
    with pb.config.override(fuse=False):
        want = pb.value_and_grad(f, argnums=argnums)(*args)
    return got, want


def _equal(got, want) -> None:
    for a, b in zip(_leaves(got), _leaves(want)):
        np.testing.assert_array_equal(a, b)
        assert np.asarray(a).dtype == np.asarray(b).dtype


def _leaves(x):
    if isinstance(x, (tuple, list)):
        return [y for z in x for y in _leaves(z)]
    return [np.asarray(x)]


def chain(h, *ws):
    for w in ws:
        h = pb.tanh(h * w + h)
    return h.sum()


def _sources(f, *args, argnums=0) -> str:
    seen: list = []
    codegen.on_new_module(seen.append)
    try:  # (no persistent cache: a module read from disk is no new module)
        with pb.config.override(cache_dir=None):
            pb.value_and_grad(f, argnums=argnums)(*args)
    finally:
        codegen.on_new_module(None)
    return "\n".join(m.source for m in seen)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_fused_chain_equals_numpy_and_torch(dtype):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    h = rng.standard_normal(N).astype(dtype)
    ws = [(rng.standard_normal(N) * 0.1).astype(dtype) for _ in range(2)]
    got, want = _both(chain, h, *ws, argnums=(0, 1, 2))
    _equal(got, want)
    th = [torch.tensor(a, requires_grad=True) for a in (h, *ws)]
    t = th[0]
    for w in th[1:]:
        t = torch.tanh(t * w + t)
    t.sum().backward()
    tol = 1e-12 if dtype == np.float64 else 1e-5
    for g, x in zip(got[1], th):
        np.testing.assert_allclose(g, x.grad.numpy(), rtol=tol, atol=tol)


def test_the_generated_code_calls_a_kernel_above_the_threshold_only():
    rng = np.random.default_rng(1)
    big = _sources(chain, rng.standard_normal(N), rng.standard_normal(N))
    assert "fused(" in big and "# fused: " in big
    small = _sources(chain, rng.standard_normal(8), rng.standard_normal(8))
    assert "fused" not in small


def test_nan_inf_and_division_by_zero_as_numpy():
    x = np.linspace(-2, 2, N)
    x[:4] = [np.nan, np.inf, -np.inf, 0.0]
    y = np.ones(N)
    y[4:8] = [0.0, -0.0, np.inf, np.nan]

    def f(x, y):
        return ((x / y - y * 2.5) / (x - 1) + float("inf") * (x - x)).sum()
    with np.errstate(all="ignore"):
        got, want = _both(f, x, y, argnums=(0, 1))
    _equal(got, want)


def test_broadcasting_is_left_to_numpy():
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((N, 1)), rng.standard_normal((1, N))
    src = _sources(lambda a, b: ((a * b) * 2 - 1).sum(), a, b, argnums=(0, 1))
    assert "fused(" in src  # t * 2 - 1 is, a * b (which broadcasts) is not
    assert all("a * b" not in line for line in src.splitlines() if "# fused:" in line)
    got, want = _both(lambda a, b: ((a * b) * 2 - 1).sum(), a, b, argnums=(0, 1))
    _equal(got, want)


def test_a_value_read_outside_the_group_is_one_of_the_kernels_outputs():
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal(N), rng.standard_normal(N)

    def f(x, y):
        a = x * y
        c = (a + 1) * 2
        return c.sum() + pb.tanh(a).sum()
    got, want = _both(f, x, y, argnums=(0, 1))
    _equal(got, want)


def test_zero_d_empty_and_transposed_values():
    rng = np.random.default_rng(4)
    m = rng.standard_normal((12, 8))
    s = np.float64(1.5)
    with pb.config.override(fuse_min_size=0):
        got, want = _both(lambda m, s: ((m.T * s + m.T) / s).sum(), m, s, argnums=(0, 1))
        _equal(got, want)
        e = np.zeros((0, 3))
        got, want = _both(lambda e: ((e * 2 + e) * e).sum(), e)
        _equal(got, want)


def test_integers_and_mixed_dtypes_are_not_fused():
    x32 = np.arange(N, dtype=np.float32)
    i = np.arange(N)

    def f(x, i):
        return ((x * 2 + x) * i + (i * 3 + 1)).sum()
    src = _sources(f, x32, i)
    assert src.count("fused(") <= 2  # x * 2 + x (float32) only; not the int64 arithmetic
    got, want = _both(f, x32, i)
    _equal(got, want)


def test_off_by_the_setting_and_without_numba(monkeypatch):
    rng = np.random.default_rng(5)
    args = rng.standard_normal(N), rng.standard_normal(N)
    with pb.config.override(fuse=False):
        assert "fused" not in _sources(chain, *args)
    cache.reset()
    monkeypatch.setattr(fuse, "AVAILABLE", False)
    assert "fused" not in _sources(chain, *args)


def test_numba_is_imported_when_a_kernel_first_runs_not_before():
    """pullback imports and runs without numba: the pass only looks it up."""
    assert "numba" not in vars(fuse) and "import numba" not in open(fuse.__file__).read()


def test_compile_fuses_its_forward_and_its_backward():
    """pb.compile's split backward arrives with out= writes: they fuse as their ufuncs,
    and groups an equation joins become one kernel."""
    rng = np.random.default_rng(6)
    x, w = rng.standard_normal(N), rng.standard_normal(N)

    def f(x, w):
        return pb.tanh(x * w + x) * 2 - w

    def run():
        tx, tw = pb.tensor(x, requires_grad=True), pb.tensor(w, requires_grad=True)
        out = pb.compile(f)(tx, tw)
        out.sum().backward()
        return out.detach().numpy(), tx.grad.numpy(), tw.grad.numpy()
    seen: list = []
    codegen.on_new_module(seen.append)
    try:
        got = run()
    finally:
        codegen.on_new_module(None)
    backward = next(m.source for m in seen if m.source.split("(")[0].endswith("_backward"))
    assert backward.count("fused(") == 1 and "np." not in backward
    cache.reset()
    with pb.config.override(fuse=False):
        _equal(got, run())
