"""After a run that checked random programs: how many, and what they exercised."""

from __future__ import annotations

import sys


def pytest_terminal_summary(terminalreporter):
    oracle = sys.modules.get(f"{__package__}.oracle")
    if oracle is None or not oracle.STATS["programs"]:
        return
    tr = terminalreporter
    tr.section("random programs (tests/fuzz)")
    tr.write_line(", ".join(f"{k}: {v}" for k, v in sorted(oracle.STATS.items())))
