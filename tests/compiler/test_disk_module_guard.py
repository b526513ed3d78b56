"""A compiled Module's variant read from the persistent cache: the module's guard it
is checked with (built from the module when the module tree is pullback's own, else by
the captured-value walk) is the one a trace would make, and a first backward with no
backward kept traces again for it."""

from __future__ import annotations

import numpy as np

import pullback as pb
from pullback.compiler import disk_variants


def _net() -> pb.nn.Module:
    pb.manual_seed(0)
    return pb.nn.Sequential(pb.nn.Linear(4, 3), pb.nn.Tanh(), pb.nn.Linear(3, 2))


def test_a_kept_forward_without_its_backward_traces_again_for_it(tmp_path):
    x = pb.tensor(np.linspace(-1.0, 1.0, 8).reshape(2, 4), dtype=pb.float32)
    with pb.config.override(cache_dir=str(tmp_path / "cache")):
        pb.compile(_net())(x)  # the forward kept, no backward
        net = _net()
        hits = disk_variants.STATS["hits"]
        out = pb.compile(net)(x)
        assert disk_variants.STATS["hits"] == hits + 1
        out.sum().backward()  # (it ran with grad off: its retrace had no gradients)
    expected = _net()
    expected(x).sum().backward()
    for got, want in zip(net.parameters(), expected.parameters()):
        np.testing.assert_allclose(got.grad.numpy(), want.grad.numpy(), rtol=1e-6)
