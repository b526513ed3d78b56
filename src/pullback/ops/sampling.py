"""Random draws as ops, so a compiled function draws fresh numbers on every call.

They read pullback's generator (``manual_seed`` replaces it); they are impure, so no
pass ever merges or drops two draws as the same value.
"""

from __future__ import annotations

import numpy as np

from .registry import defop


class _Generator:
    """pullback's random number generator (one per process, as torch's default one)."""

    rng = np.random.default_rng()


GENERATOR = _Generator()


def manual_seed(seed: int) -> None:
    """Seed pullback's random number generator (rand, randn, randint, ...)."""
    GENERATOR.rng = np.random.default_rng(seed)


uniform = defop("uniform", lambda shape, dtype: GENERATOR.rng.random(shape).astype(dtype),
                pure=False)
normal = defop("normal", lambda shape, dtype: GENERATOR.rng.standard_normal(shape).astype(dtype),
               pure=False)
integers = defop("integers", lambda low, high, shape, dtype:
                 GENERATOR.rng.integers(low, high, size=shape).astype(dtype), pure=False)
