"""Run every sample in order, each under a header: a tour of pullback's autograd and compiler.

    python samples/tour.py            # all samples
    python samples/tour.py hooks      # only the samples whose name contains "hooks"

Each sample runs in its own Python process, so grad-mode changes and random
seeds in one cannot leak into the next. The tour exits with status 1 if any
sample failed, after running the others.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def sample_paths() -> list[Path]:
    """The numbered sample scripts, in order (01_..., 02_..., ...)."""
    return sorted(p for p in HERE.glob("[0-9][0-9]_*.py"))


def summary(path: Path) -> str:
    """The first line of a sample's docstring."""
    text = path.read_text(encoding="utf-8")
    start = text.find('"""') + 3
    return text[start:text.find("\n", start)].strip()


def run(path: Path) -> int:
    """Print a header, run the sample, return its exit status."""
    print(f"=== {path.name} ===\n{summary(path)}\n", flush=True)
    status = subprocess.run([sys.executable, str(path)], cwd=HERE).returncode
    print(flush=True)
    return status


#: where the tour leaves the reader
NEXT = ("next: train a model on real data (python samples/digits_cnn.py; samples/README.md "
        "lists every sample and what it teaches), then docs/user_guide.md")


#: said before the first sample: the errors and warnings the samples show are theirs
EXPECTED = ("Some samples make torch's errors and warnings happen on purpose, to show their "
            "messages: the lines that start with RuntimeError:, UserWarning: or GradcheckError: "
            "are expected output, not failures (a failed sample says so at the end).\n")


def main(argv: list[str]) -> int:
    paths = [p for p in sample_paths() if not argv or any(a in p.name for a in argv)]
    print(EXPECTED, flush=True)
    failed = [p.name for p in paths if run(p) != 0]
    if failed:
        print(f"{len(failed)} of {len(paths)} samples failed: {', '.join(failed)}")
        return 1
    print(f"all {len(paths)} samples ran")
    print(NEXT)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
