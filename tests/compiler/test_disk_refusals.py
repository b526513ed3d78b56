"""What the persistent cache does not keep: a compiled function of another front
door's (its settings are in no key) and a variant whose making warned (a later call
warns as the first did)."""

from __future__ import annotations

import warnings

import numpy as np

import pullback as pb
from pullback import func
from pullback.compiler import disk_cache
from pullback.ops.table import batching

X = np.array([0.3, -0.2, 0.5])


def test_compile_of_another_doors_function_runs_and_is_not_kept(tmp_path, monkeypatch):
    monkeypatch.setattr(pb.config, "cache_dir", str(tmp_path))
    f = lambda x: (pb.exp(x) * x[0]).sum()  # noqa: E731
    want = np.diag(np.exp(X) * X[0]) + np.outer(np.exp(X), [1, 0, 0]) \
        + np.outer([1, 0, 0], np.exp(X))
    for _ in range(2):  # (the second after the in-memory caches are dropped)
        np.testing.assert_allclose(pb.jacfwd(pb.grad(f))(X), want, rtol=1e-12)
        g = pb.compile(func.vmap(lambda p: pb.rand(3) + p, randomness="different"))
        assert not np.allclose(g(pb.zeros(2, 3)).numpy(), g(pb.zeros(2, 3)).numpy())
        pb.compiler.reset()


def test_a_variant_whose_making_warned_warns_again(tmp_path, monkeypatch):
    monkeypatch.setattr(pb.config, "cache_dir", str(tmp_path))
    x = np.arange(12.0).reshape(3, 2, 2)
    writes = disk_cache.STATS["writes"]
    for _ in range(2):
        batching._WARNED.discard("trace")
        pb.compiler.reset()
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            out = func.vmap(pb.trace)(pb.tensor(x))
        assert any("no batching rule for trace" in str(w.message) for w in seen)
        np.testing.assert_allclose(out.numpy(), np.trace(x, axis1=1, axis2=2))
    assert disk_cache.STATS["writes"] == writes
    assert not [p for p in tmp_path.iterdir() if p.suffix in (".variant", ".py")]
