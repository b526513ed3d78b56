"""``PYTHONPATH=tests python -m fuzz SEED|START:STOP [--show] [--mode MODE]``:
check seeds against torch, shrink each mismatch and print its reproduction.

``--numpy`` checks the numpy family instead (numpy_programs.py: plain numpy programs
against numpy and finite differences), drawing from ``--classes`` (comma-separated,
or ``all``; default: numpy_programs.ENABLED)."""

import argparse
import sys
import time

from . import numpy_oracle, numpy_programs, oracle
from .generator import generate
from .oracle import check, report, shrink


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m fuzz", description=__doc__)
    p.add_argument("seeds", help="a seed, or START:STOP")
    p.add_argument("--show", action="store_true", help="print the program and its data only")
    p.add_argument("--mode", default=None, help="float64, float32, mixed or wild")
    p.add_argument("--no-shrink", action="store_true", help="print mismatches as found")
    p.add_argument("--numpy", action="store_true", help="the numpy family")
    p.add_argument("--classes", default=None, help="the numpy family's classes, or all")
    a = p.parse_args(argv)
    lo, _, hi = a.seeds.partition(":")
    seeds = range(int(lo), int(hi)) if hi else [int(lo)]
    if a.numpy:
        classes = numpy_programs.parse_classes(a.classes)
        gen = lambda seed: numpy_programs.generate(seed, classes)  # noqa: E731
        chk, shr, rep, stats = (numpy_oracle.check, numpy_oracle.shrink,
                                numpy_oracle.report, numpy_oracle.STATS)
        show = lambda prog: prog.source()  # noqa: E731
    else:
        gen = lambda seed: generate(seed, a.mode)  # noqa: E731
        chk, shr, rep, stats = check, shrink, report, oracle.STATS
        show = lambda prog: report(prog, "(not checked)")  # noqa: E731
    failed = 0
    t0 = time.perf_counter()
    for seed in seeds:
        prog = gen(seed)
        if a.show:
            print(show(prog))
            continue
        m = chk(prog)
        if m is None:
            if len(seeds) == 1:
                print(f"seed {seed}: pullback agrees")
            continue
        failed += 1
        print(f"seed {seed}: {str(m).splitlines()[0]}", flush=True)
        if not a.no_shrink:
            prog, m = shr(prog, m)
            print(rep(prog, m), "\n", flush=True)
    if len(seeds) > 1 and not a.show:
        print(f"{len(seeds)} programs, {failed} mismatches, {time.perf_counter() - t0:.1f} s")
        print("exercised:", dict(sorted(stats.items())))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
