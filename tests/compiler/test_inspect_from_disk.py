"""``pb.compiler.inspect`` and ``make_dot`` of a variant read from the persistent cache
(``disk_variants``, ``disk_compiled``: kept without its equations): inspect traces it
again to show the real IR and code and says where the variant came from; make_dot,
which has no arguments to trace with, says so in the region."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb
from pullback.compiler import disk_variants

X, W = np.linspace(-1.0, 1.0, 3), np.full(3, 0.5)


def loss(x, w):
    return (np.tanh(x * w) ** 2).sum()


def forward(x, w):
    return np.tanh(x * w) * 2


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(disk_variants, "STATS", dict.fromkeys(disk_variants.STATS, 0))
    with pb.config.override(cache_dir=str(tmp_path / "cache")):
        yield


def test_inspect_of_a_variant_from_disk_shows_its_ops(cache_dir) -> None:
    pb.grad(loss, argnums=1)(X, W)  # (written)
    pb.compile(forward)(X, W)
    pb.compiler.reset()  # (as a later process: read)
    g, c = pb.grad(loss, argnums=1), pb.compile(forward)
    g(X, W), c(X, W)
    assert disk_variants.STATS["hits"] == 2  # (g's, and c's: disk_compiled counts there too)
    for fn, op in ((g, "pow_scalar"), (c, "tanh")):
        info = pb.compiler.inspect(fn, X, W)
        assert info.from_disk and f"= {op}" in info.ir and "np.tanh" in info.forward


def test_make_dot_of_a_region_from_disk_says_so(cache_dir) -> None:
    w = pb.tensor(W, requires_grad=True)
    pb.compile(forward)(X, w)
    pb.compiler.reset()
    y = pb.compile(forward)(X, w)
    dot = "\n".join(pb.viz.make_dot(y.sum()).lines)
    assert "read from the persistent cache" in dot and "tanh" not in dot
