"""After a run that checked random programs: how many, what they exercised, and how
many mismatches were put down to KNOWN and FOUND defects (see generator.py)."""

from __future__ import annotations

import sys


def pytest_terminal_summary(terminalreporter):
    oracle = sys.modules.get(f"{__package__}.oracle")
    if oracle is None or not oracle.STATS["programs"]:
        return
    STATS, KNOWN_HITS, FOUND_HITS = oracle.STATS, oracle.KNOWN_HITS, oracle.FOUND_HITS
    tr = terminalreporter
    tr.section("random programs (tests/fuzz)")
    tr.write_line(", ".join(f"{k}: {v}" for k, v in sorted(STATS.items())))
    for name, hits in (("KNOWN", KNOWN_HITS), ("FOUND", FOUND_HITS)):
        if hits:
            tr.write_line(f"mismatches put down to {name} defects (not failures): "
                          + ", ".join(f"{k}: {v}" for k, v in sorted(hits.items())))
