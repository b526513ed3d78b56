"""Random plain-numpy programs: pullback's doors agree with numpy and finite differences,
or raise a clear error (numpy_programs.py draws them, numpy_oracle.py checks them).

The default run checks ``N_DEFAULT`` programs drawn from ``numpy_programs.ENABLED``,
the generator classes whose bugs are fixed. For a long run, or other classes::

    PULLBACK_FUZZ=10000 python -m pytest tests/fuzz/test_numpy_fuzz.py
    PULLBACK_FUZZ=1000 PULLBACK_FUZZ_CLASSES=all python -m pytest tests/fuzz/test_numpy_fuzz.py
    PULLBACK_FUZZ_CLASSES=convert,casts PULLBACK_FUZZ_SEED=5000 python -m pytest ...

``PYTHONPATH=tests python -m fuzz SEED --numpy --classes all`` checks, shrinks and
prints one program.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from .numpy_oracle import STATS, check, make_door, report, shrink
from .numpy_programs import CLASSES, ENABLED, NProgram, Term, generate, parse_classes
from .seeds import chunk_id, chunks

N_DEFAULT = 200
DRAWN = parse_classes(os.environ.get("PULLBACK_FUZZ_CLASSES"))
CHUNKS = chunks("PULLBACK_FUZZ", N_DEFAULT, 50)


@pytest.mark.parametrize("seeds", CHUNKS, ids=chunk_id)
def test_numpy_programs_agree_with_finite_differences(seeds):
    failures = [(seed, m) for seed in seeds if (m := check(generate(seed, DRAWN))) is not None]
    if failures:
        seed, m = failures[0]
        prog, m = shrink(generate(seed, DRAWN), m)
        lines = [f"seed {s}: {str(f).splitlines()[0]}" for s, f in failures]
        classes = ",".join(sorted(DRAWN))
        pytest.fail(f"{len(failures)} of {len(seeds)} numpy programs disagree:\n"
                    + "\n".join(lines) + f"\n\nseed {seed}, shrunk (reproduce it with "
                    f"PYTHONPATH=tests python -m fuzz {seed} --numpy --classes {classes}):"
                    f"\n\n{report(prog, m)}", pytrace=False)


def test_every_class_draws_valid_numpy_that_repeats_by_seed():
    """Each class's programs are deterministic, valid Python, and run in plain numpy."""
    for cls in CLASSES:
        for seed in range(12):
            prog = generate(seed, {cls})
            assert prog == generate(seed, {cls})
            assert prog.classes <= {cls, "scalars"}
            env: dict = {}
            exec(prog.source(), env)
            with np.errstate(all="ignore"):
                out = env["f"](prog.data(0) if prog.scalar else np.array(prog.data(0)))
            assert np.all(np.isfinite(out)), (cls, seed)
    assert ENABLED <= set(CLASSES)


def _broken(how: str):
    """A door factory: pb.grad, with its gradient halved or raising ``how``."""
    def make(door, f):
        g = make_door(door, f)

        def run(x):
            value, d = g(x)
            if how == "halved":
                return value, np.asarray(d) * 0.5
            raise {"internal": AttributeError, "clear": ValueError}[how]("from the test")
        return run
    return make


def test_the_oracle_fails_a_wrong_gradient_and_an_internal_error_not_a_clear_one():
    prog = NProgram(1, "value_and_grad", (3,), (Term("plain", expr="np.sin(x) * x"),), (1.0,))
    assert check(prog) is None
    assert check(prog, _broken("halved")).key == "derivative"
    assert check(prog, _broken("internal")).key == "internal error"
    assert check(prog, _broken("clear")) is None
    assert STATS["raised ValueError"] >= 1


def test_the_oracle_fails_a_skipped_side_effect_and_a_stale_trace():
    """f's state after each call and rebinding between calls are checked: a door that
    skips the call (computing the right derivative on a copy of f's module state
    would still leave the counter behind) is a state mismatch."""
    count = Term("effects", "N0 = 0\n", ("global N0", "N0 += 1"), "np.sum(x) * N0",
                 state=("N0",))
    prog = NProgram(2, "grad", (3,), (count,), (1.0,))

    def skipping(door, f):
        def run(x):
            g = f.__globals__
            n = g["N0"]
            d = make_door(door, f)(x)
            g["N0"] = n  # the effect undone: what a trace that skips it does
            return d
        return run
    assert check(prog, skipping).key == "state"
    stale = Term("rebind", "K0 = 1.5\n", expr="x * K0", between=("K0 = -0.75", "K0 = 1.5"))
    prog = NProgram(3, "grad", (3,), (stale,), (1.0,))
    frozen = {}

    def first_only(door, f):
        def run(x):
            frozen.setdefault("d", make_door(door, f)(x))
            return frozen["d"]
        return run
    assert check(prog, first_only).key == "derivative"
