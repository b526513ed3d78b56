"""Random programs run by a later process from the persistent cache agree with the
process that wrote it (disk_oracle.py draws, writes, runs both and compares).

The default run checks ``N_DEFAULT`` programs of each family (the numpy family through
every door, the torch-name family through value_and_grad and compile + backward, random
``nn.Sequential`` models through compile + backward), each chunk in two fresh
interpreters. For a long run, say how many (and, optionally, the first seed)::

    PULLBACK_FUZZ_DISK=1000 python -m pytest tests/fuzz/test_disk_fuzz.py
    PULLBACK_FUZZ_DISK=300 PULLBACK_FUZZ_SEED=5000 python -m pytest tests/fuzz/test_disk_fuzz.py
"""

from __future__ import annotations

import os

import pytest

from .disk_oracle import STATS, check_chunk

N_DEFAULT = 15
CHUNK = 100
N = int(os.environ.get("PULLBACK_FUZZ_DISK", N_DEFAULT))
START = int(os.environ.get("PULLBACK_FUZZ_SEED", 0))
CHUNKS = [range(s, min(s + CHUNK, START + N)) for s in range(START, START + N, CHUNK)]


@pytest.mark.parametrize("family", ["numpy", "torch", "modules"])
@pytest.mark.parametrize("seeds", CHUNKS, ids=lambda r: f"seeds{r.start}-{r.stop - 1}")
def test_a_later_process_runs_the_kept_code_as_the_writer_did(family, seeds):
    found = STATS["variants found by the reader"]
    failures = check_chunk(family, seeds)
    if failures:
        lines = [f"seed {s}: {m.splitlines()[0]}" for s, m in failures]
        seed, m = failures[0]
        pytest.fail(f"{len(failures)} of {len(seeds)} programs disagree from the cache:\n"
                    + "\n".join(lines) + f"\n\nseed {seed}:\n{m}", pytrace=False)
    assert STATS["variants found by the reader"] > found  # (the reader used the cache)
