"""``PYTHONPATH=tests python -m fuzz SEED|START:STOP [--show] [--mode MODE]``:
check seeds against torch, shrink each mismatch and print its reproduction."""

import argparse
import sys
import time

from . import oracle
from .generator import generate
from .oracle import check, report, shrink


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m fuzz", description=__doc__)
    p.add_argument("seeds", help="a seed, or START:STOP")
    p.add_argument("--show", action="store_true", help="print the program and its data only")
    p.add_argument("--mode", default=None, help="float64, float32, mixed or wild")
    p.add_argument("--no-shrink", action="store_true", help="print mismatches as found")
    a = p.parse_args(argv)
    lo, _, hi = a.seeds.partition(":")
    seeds = range(int(lo), int(hi)) if hi else [int(lo)]
    failed = 0
    t0 = time.perf_counter()
    for seed in seeds:
        prog = generate(seed, a.mode)
        if a.show:
            print(report(prog, "(not checked)"))
            continue
        m = check(prog)
        if m is None:
            if len(seeds) == 1:
                print(f"seed {seed}: pullback agrees with torch")
            continue
        failed += 1
        print(f"seed {seed}: {str(m).splitlines()[0]}", flush=True)
        if not a.no_shrink:
            prog, m = shrink(prog, m)
            print(report(prog, m), "\n", flush=True)
    if len(seeds) > 1 and not a.show:
        print(f"{len(seeds)} programs, {failed} mismatches, {time.perf_counter() - t0:.1f} s")
        print("exercised:", dict(sorted(oracle.STATS.items())))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
