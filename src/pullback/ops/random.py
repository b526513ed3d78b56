"""Random tensors as ops, so a compiled function draws fresh numbers on every call."""

from __future__ import annotations

import numpy as np

from .registry import defop

RNG = [np.random.default_rng()]


def manual_seed(seed: int) -> None:
    """Seed pullback's random number generator (rand, randn, randint, ...)."""
    RNG[0] = np.random.default_rng(seed)


uniform = defop("uniform", lambda shape, dtype: RNG[0].random(shape).astype(dtype))
normal = defop("normal", lambda shape, dtype: RNG[0].standard_normal(shape).astype(dtype))
integers = defop("integers", lambda low, high, shape, dtype:
                 RNG[0].integers(low, high, size=shape).astype(dtype))
