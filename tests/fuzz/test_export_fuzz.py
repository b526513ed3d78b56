"""Random programs exported with ``pb.export`` run where pullback cannot be imported and
agree with ``pb.value_and_grad`` (export_oracle.py draws, exports, runs and compares).

The default run checks ``N_DEFAULT`` programs of each family (the numpy family as
``value_and_grad`` programs, the torch-name family on pullback's Tensors), each chunk's
modules in one fresh ``python -I``. For a long run, say how many programs per family
(and, optionally, the first seed)::

    PULLBACK_FUZZ_EXPORT=2000 python -m pytest tests/fuzz/test_export_fuzz.py
    PULLBACK_FUZZ_EXPORT=500 PULLBACK_FUZZ_SEED=9000 python -m pytest tests/fuzz/test_export_fuzz.py
"""

from __future__ import annotations

import pytest

from .export_oracle import REFUSALS, STATS, check_chunk
from .seeds import chunk_id, chunks

N_DEFAULT = 30
CHUNKS = chunks("PULLBACK_FUZZ_EXPORT", N_DEFAULT)

#: programs whose export a defect broke, each fixed since: (family, seed, what it was)
FOUND = [
    ("numpy", 4, "a Python float argument reached the code as a float: no .astype"),
    ("torch", 6, "a gradient the function does not reach: None, where pullback gives zeros"),
    ("torch", 8, "argnums=(k,): one gradient, where pullback gives a tuple of one"),
    ("torch", 3, "polygamma's kernel wrapper shadowed by polygamma (one __name__); "
                 "its Bernoulli fractions refused"),
    ("torch", 2, "expand's forward, a lambda in a statement of several, refused"),
    ("torch", 603, "a guard's NaN written nan (NameError on load), and never equal"),
    ("torch", 337, "a (1, 0, 2) constant written np.array([[]]): shape (1, 0)"),
    ("numpy", 1288, "(the harness) a broadcast x run contiguous: float32 sums rounded "
                    "apart"),
    ("torch", 2786, "(the harness) float32 inputs, a float64 result: forward's code and "
                    "value_and_grad's round apart at float32's precision"),
    ("torch", 4085, "t's forward, np.transpose (a numpy dispatcher), refused"),
    ("torch", 6098, "a guard's empty (4, 0, 2) value written [[], [], [], []]: shape "
                    "(4, 0), every call refused"),
]


@pytest.mark.parametrize("family", ["numpy", "torch"])
@pytest.mark.parametrize("seeds", CHUNKS, ids=chunk_id)
def test_exported_programs_run_without_pullback_and_agree(family, seeds):
    failures = check_chunk(family, seeds)
    if failures:
        lines = [f"seed {s}: {m.splitlines()[0]}" for s, m in failures]
        seed, m = failures[0]
        pytest.fail(f"{len(failures)} of {len(seeds)} exported {family} programs disagree:\n"
                    + "\n".join(lines) + f"\n\nseed {seed}:\n{m}", pytrace=False)


def test_programs_export_once_broke_now_agree():
    refused_before = sum(REFUSALS.values())
    for family in ("numpy", "torch"):  # (one standalone run per family)
        failures = check_chunk(family, [seed for f, seed, _ in FOUND if f == family])
        assert failures == [], [(s, m, w) for s, m in failures
                                 for f, seed, w in FOUND if (f, seed) == (family, s)]
    assert sum(REFUSALS.values()) == refused_before  # (exported: none refused)
    assert STATS["exported"] >= len(FOUND)
