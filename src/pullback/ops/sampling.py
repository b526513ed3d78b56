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


def state_of(gen: np.random.Generator | np.random.RandomState) -> object:
    """Where a numpy generator is in its stream (all of it: RandomState's cached
    Gaussian too), for ``set_state_of`` to go back there."""
    if isinstance(gen, np.random.RandomState):
        return gen.get_state()
    return gen.bit_generator.state


def set_state_of(gen: np.random.Generator | np.random.RandomState, state: object) -> None:
    """Put ``gen`` back where ``state_of`` found it.

    >>> g = np.random.default_rng(0)
    >>> s = state_of(g); a = g.random(); set_state_of(g, s); bool(g.random() == a)
    True
    """
    if isinstance(gen, np.random.RandomState):
        gen.set_state(state)
    else:
        gen.bit_generator.state = state


def manual_seed(seed: int) -> None:
    """Seed pullback's random number generator (rand, randn, randint, ...)."""
    GENERATOR.rng = np.random.default_rng(seed)


uniform = defop("uniform", lambda shape, dtype: GENERATOR.rng.random(shape).astype(dtype),
                pure=False)
normal = defop("normal", lambda shape, dtype: GENERATOR.rng.standard_normal(shape).astype(dtype),
               pure=False)
integers = defop("integers", lambda low, high, shape, dtype:
                 GENERATOR.rng.integers(low, high, size=shape).astype(dtype), pure=False)
