"""After a run that checked random programs: how many, what they exercised, and how
many mismatches were put down to KNOWN defects (see generator.py)."""

from __future__ import annotations

import sys


def pytest_terminal_summary(terminalreporter):
    oracle = sys.modules.get(f"{__package__}.oracle")
    if oracle is None or not oracle.STATS["programs"]:
        return
    tr = terminalreporter
    tr.section("random programs (tests/fuzz)")
    tr.write_line(", ".join(f"{k}: {v}" for k, v in sorted(oracle.STATS.items())))
    if oracle.KNOWN_HITS:
        tr.write_line("mismatches put down to KNOWN defects (not failures): "
                      + ", ".join(f"{k}: {v}" for k, v in sorted(oracle.KNOWN_HITS.items())))
