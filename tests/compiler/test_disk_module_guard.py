"""A compiled Module's variant read from the persistent cache: the module's guard it
is checked with (built from the module when the module tree is pullback's own, else by
the captured-value walk) is the one a trace would make, and a first backward with no
backward kept traces again for it."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb
from pullback.compiler import disk_compiled, disk_variants
from pullback.compiler.captured import collect, own_guards
from pullback.compiler.disk_variants import captured_text
from pullback.nn.compiled import CompiledModule
from pullback.nn.state import ModuleGuard, signature


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


def _texts(m: pb.nn.Module, x: pb.Tensor) -> tuple:
    own = lambda v: ["this module"] if v is m or type(v) is ModuleGuard and \
        v.module is m else None  # noqa: E731
    walked = collect(m.forward, (x,), [], {0}, set())
    direct = own_guards(m, ModuleGuard(m, signature), type(m).forward)
    return captured_text(walked, own), captured_text(direct, own)


@pytest.mark.parametrize("make, shape, same", [
    (_net, (2, 4), True),
    (lambda: pb.nn.Sequential(pb.nn.Conv2d(1, 2, 3), pb.nn.ReLU()), (1, 1, 5, 5), True),
    (lambda: pb.nn.Sequential(pb.nn.BatchNorm1d(4), pb.nn.Linear(4, 2)), (3, 4), True),
    (lambda: pb.nn.Sequential(pb.nn.Sequential(pb.nn.Linear(4, 4)), pb.nn.Tanh()), (2, 4),
     True),
    (lambda: pb.nn.Linear(4, 2), (2, 4), False),  # (its forward reads global F)
    (lambda: pb.nn.BatchNorm1d(4), (3, 4), False),
    (lambda: pb.nn.LSTM(4, 3), (5, 2, 4), False),  # (its default hx, guarded)
])
def test_the_guards_made_without_the_walk_are_the_walks_or_not_used(make, shape, same):
    walked, direct = _texts(make(), pb.randn(*shape))
    assert (walked == direct) is same
    assert walked[0] == direct[0] if same else set(direct[1]) < set(walked[1])


def _walks(monkeypatch) -> list:
    calls = []
    real = disk_variants.collect
    monkeypatch.setattr(disk_variants, "collect", lambda *a, **k: calls.append(a[0]) or
                        real(*a, **k))
    return calls


def _changes(net: pb.nn.Module, x: pb.Tensor) -> list:
    """The compiled net's misses after each change to the module (each one a guard)."""
    fast = pb.compile(net)
    fast(x)
    changes = [lambda: net.eval(), lambda: net.train(),  # (train: the first variant)
               lambda: setattr(net[0], "weight", pb.nn.Parameter(net[0].weight.data * 2)),
               lambda: net[2].register_forward_hook(lambda m, i, o: o * 2),
               lambda: setattr(net[1], "extra", 3), lambda: None]
    misses = []
    for change in changes:
        change()
        np.testing.assert_allclose(fast(x).detach().numpy(), net(x).detach().numpy(),
                                   rtol=1e-6)
        misses.append(fast.cache.info.misses)
    return misses


def test_a_kept_sequential_is_checked_without_the_walk_and_keeps_its_guards(
        tmp_path, monkeypatch):
    x = pb.tensor(np.linspace(-1.0, 1.0, 8).reshape(2, 4), dtype=pb.float32)
    with pb.config.override(cache_dir=str(tmp_path / "cache")):
        pb.compile(_net())(x).sum().backward()
        walks = _walks(monkeypatch)
        hits = disk_variants.STATS["hits"]
        fast = _changes(_net(), x)  # (read from the cache: the first variant, and the
        # one of another weight Parameter)
        assert disk_variants.STATS["hits"] == hits + 2 and walks == []
        np.testing.assert_allclose(pb.compile(_net())(x).detach().numpy(),
                                   _net()(x).detach().numpy(), rtol=1e-6)
        real = CompiledModule.described  # the same, checked by the walk
        monkeypatch.setattr(CompiledModule, "described", lambda self: (*real(self)[:3], None))
        walked = _changes(_net(), x)
        assert len(walks) == 3  # (the eval variant kept by the first run too)
    assert fast == walked == [2, 2, 3, 4, 5, 5]


class _Mine(pb.nn.Sequential):
    def forward(self, x):
        return super().forward(x) * 2


def test_the_walk_checks_a_user_module_a_library_forward_reading_a_global_and_hooks(
        tmp_path, monkeypatch):
    x = pb.tensor(np.linspace(-1.0, 1.0, 8).reshape(2, 4), dtype=pb.float32)
    made = [lambda: _Mine(pb.nn.Linear(4, 2)), lambda: pb.nn.Linear(4, 2)]
    with pb.config.override(cache_dir=str(tmp_path / "cache")):
        for make in made:
            pb.compile(make())(x)
            walks = _walks(monkeypatch)
            hits = disk_variants.STATS["hits"]
            pb.compile(make())(x)
            assert disk_variants.STATS["hits"] == hits + 1 and len(walks) == 1
    inner = pb.compile(pb.nn.Sequential(_Mine(pb.nn.Linear(4, 2))))
    assert inner.described()[3] is None  # (a user's forward inside: the walk's)
    hooked = _net()
    hooked[1].register_forward_hook(lambda m, i, o: o)
    with pytest.raises(disk_variants.NotPortable):  # (a hook: nothing kept, nothing read)
        pb.compile(hooked).described()


def test_a_call_with_an_argument_not_traced_is_walked(tmp_path):
    def f(x, k):
        return x * len(k)

    seen = []
    guards = lambda compiled: seen.append(compiled)  # noqa: E731
    x = pb.tensor(np.ones(3))
    with pb.config.override(cache_dir=str(tmp_path / "cache")):
        pb.compile(f)(x, "no")
        got = disk_compiled.load(f, "compile", (x, "no"), None, {}, None, guards)
    assert got is not None and seen == []
