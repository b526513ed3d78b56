"""After a run that checked random programs: how many, and what they exercised."""

from __future__ import annotations

import sys


def pytest_terminal_summary(terminalreporter):
    tr = terminalreporter
    for module, title in (("oracle", "random programs (tests/fuzz)"),
                          ("numpy_oracle", "random numpy programs (tests/fuzz)")):
        oracle = sys.modules.get(f"{__package__}.{module}")
        if oracle is None or not oracle.STATS["programs"]:
            continue
        tr.section(title)
        tr.write_line(", ".join(f"{k}: {v}" for k, v in sorted(oracle.STATS.items())))
        errors = getattr(oracle, "ERRORS", None)
        if errors:
            tr.write_line("errors raised (accepted): " + "; ".join(
                f"{n}x {k}" for k, n in errors.most_common(5)))
