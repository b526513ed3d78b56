"""Generated modules: what their source may contain, where they are dumped, how long
``linecache`` keeps them, and how naming scales."""

from __future__ import annotations

import random

import numpy as np

import pullback as pb
from pullback.ir.naming import RESERVED, TEMP_PREFIX, Namespace, sanitize


# ---------------------------------------------------------------------- naming
class _CountingSet(set):
    checks = 0

    def __contains__(self, item) -> bool:
        _CountingSet.checks += 1
        return set.__contains__(self, item)


def _checks_to_name(monkeypatch, iterations: int) -> int:
    """Membership tests of every Namespace while pb.grad compiles a loop that reassigns
    one name ``iterations`` times."""
    init = Namespace.__init__

    def counting_init(self, reserved=None):
        init(self, reserved)
        self.used = _CountingSet(self.used)

    monkeypatch.setattr(Namespace, "__init__", counting_init)
    _CountingSet.checks = 0

    def f(h, w):
        for _ in range(iterations):
            h = h * w + h
        return h.sum()

    pb.grad(f)(np.ones(2), np.full(2, -0.5))
    return _CountingSet.checks


def test_naming_a_long_loop_is_linear(monkeypatch):
    small, large = _checks_to_name(monkeypatch, 200), _checks_to_name(monkeypatch, 400)
    assert large <= 2.2 * small  # quadratic naming made it 4x
    assert large <= 20 * 400     # a few tests per named value


def _reference_fresh(used: set, counter: list, hint):
    """Namespace.fresh as it was: try base, base_1, base_2, ... from the start."""
    if hint:
        base = sanitize(hint)
    else:
        base = f"{TEMP_PREFIX}{counter[0]}"
        counter[0] += 1
    name, n = base, 0
    while name in used:
        n += 1
        name = f"{base}_{n}"
    used.add(name)
    return name


def test_fresh_names_are_the_names_it_always_gave():
    rng = random.Random(0)
    hints = ["x", "x_1", "x_2", "x_1_1", "x_10", "t0", "t1", "t1_1", None, "c", "lambda", "np"]
    for _ in range(200):
        ns, used, counter = Namespace(), set(RESERVED), [0]
        for _ in range(40):
            hint = rng.choice(hints)
            assert ns.fresh(hint) == _reference_fresh(used, counter, hint)
