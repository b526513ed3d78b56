"""Random draws as ops, so a compiled function draws fresh numbers on every call.

They read pullback's generator (``manual_seed`` replaces it); they are impure, so no
pass ever merges or drops two draws as the same value.
"""

from __future__ import annotations

import numpy as np

from .table.registry import defop


class _Generator:
    """pullback's random number generator (one per process, as torch's default one)."""

    rng = np.random.default_rng()
    seed: int | None = None  # (the last manual_seed's)


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
    GENERATOR.seed = int(seed)


def own_generator(params: dict) -> None:
    """The ``draws_from`` of the ops that draw from pullback's own generator: None, the
    generator ``pb.manual_seed`` replaces."""
    return None


uniform = defop("uniform", lambda shape, dtype: GENERATOR.rng.random(shape).astype(dtype),
                pure=False, draws_from=own_generator)
normal = defop("normal", lambda shape, dtype: GENERATOR.rng.standard_normal(shape).astype(dtype),
               pure=False, draws_from=own_generator)
integers = defop("integers", lambda low, high, shape, dtype:
                 GENERATOR.rng.integers(low, high, size=shape).astype(dtype), pure=False,
                 draws_from=own_generator)


class Generator:
    """torch.Generator: its own seeded stream, for the ``generator=`` argument of the
    random functions (``pb.randperm(5, generator=g)``, ``nn.init.normal_(w, generator=g)``)."""

    def __init__(self, device: str = "cpu") -> None:
        self._seed = int(np.random.SeedSequence().entropy % (2 ** 63))
        self.rng = np.random.default_rng(self._seed)
        self.device = device

    def manual_seed(self, seed: int) -> Generator:
        self._seed = int(seed)
        self.rng = np.random.default_rng(self._seed)
        return self

    def seed(self) -> int:
        return self.manual_seed(int(np.random.SeedSequence().entropy % (2 ** 63)))._seed

    def initial_seed(self) -> int:
        return self._seed

    def get_state(self) -> object:
        return state_of(self.rng)

    def set_state(self, state: object) -> Generator:
        set_state_of(self.rng, state)
        return self


def rng_of(generator: Generator | np.random.Generator | None) -> np.random.Generator:
    """The numpy stream a ``generator=`` argument names (None: pullback's own)."""
    if generator is None:
        return GENERATOR.rng
    return generator.rng if isinstance(generator, Generator) else generator
