"""The seeds a fuzz test file checks, in chunks (one test each): ``N`` programs from
``PULLBACK_FUZZ_SEED`` (default 0), ``N`` from the file's own environment variable or
its default.

>>> [(r.start, r.stop) for r in chunks("PULLBACK_NO_SUCH_VARIABLE", 250)]
[(0, 100), (100, 200), (200, 250)]
>>> chunk_id(range(0, 100))
'seeds0-99'
"""

from __future__ import annotations

import os


def chunks(variable: str, default: int, size: int = 100) -> list[range]:
    n = int(os.environ.get(variable, default))
    start = int(os.environ.get("PULLBACK_FUZZ_SEED", 0))
    return [range(s, min(s + size, start + n)) for s in range(start, start + n, size)]


def chunk_id(seeds: range) -> str:
    return f"seeds{seeds.start}-{seeds.stop - 1}"
