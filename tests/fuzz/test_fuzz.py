"""Random programs: pullback eager, pb.compile and pb.grad agree with torch.

Each program comes from ``generator.generate(seed)`` and is checked four ways by
``oracle.check`` (see both modules). The default run checks ``N_DEFAULT`` programs,
seeds 0 to N_DEFAULT - 1, in chunks of 100. For a long run, say how many programs
(and, optionally, the first seed)::

    PULLBACK_FUZZ=10000 python -m pytest tests/fuzz
    PULLBACK_FUZZ=2000 PULLBACK_FUZZ_SEED=50000 python -m pytest tests/fuzz

A failing chunk names every failing seed and prints the first one shrunk, as a
program to run; ``PYTHONPATH=tests python -m fuzz SEED`` reproduces one seed.
"""

from __future__ import annotations

import pytest

from pullback.settings import config

from .generator import generate
from .oracle import check, report, shrink
from .seeds import chunk_id, chunks

N_DEFAULT = 400
CHUNKS = chunks("PULLBACK_FUZZ", N_DEFAULT)


@pytest.fixture(autouse=True)
def check_ir():
    """The IR verifier runs after every compiler pass, as in the compiler's tests."""
    config.check_ir = True
    yield
    config.check_ir = False


@pytest.mark.parametrize("seeds", CHUNKS, ids=chunk_id)
def test_random_programs_agree_with_torch(torch, seeds):
    failures = [(seed, m) for seed in seeds if (m := check(generate(seed))) is not None]
    if failures:
        seed, m = failures[0]
        prog, m = shrink(generate(seed), m)
        lines = [f"seed {s}: {str(f).splitlines()[0]}" for s, f in failures]
        pytest.fail(f"{len(failures)} of {len(seeds)} programs disagree with torch:\n"
                    + "\n".join(lines) + f"\n\nseed {seed}, shrunk (reproduce it with "
                    f"PYTHONPATH=tests python -m fuzz {seed}):\n\n{report(prog, m)}",
                    pytrace=False)


def test_programs_print_as_python_and_repeat_by_seed():
    prog = generate(12345)
    assert prog == generate(12345)
    src = prog.source()
    compile(src, "<fuzz>", "exec")
    assert src.startswith("def f(") and "    return loss" in src
    assert {k: v.tolist() for k, v in prog.data(1).items()} == \
        {k: v.tolist() for k, v in generate(12345).data(1).items()}
