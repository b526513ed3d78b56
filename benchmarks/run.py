"""Side-by-side benchmark of pullback against hand-written numpy and the reference libraries.

    python benchmarks/run.py              # full run (< 10 minutes on 2 cores)
    python benchmarks/run.py --quick      # smoke run (< 1 minute)
    python benchmarks/run.py --check      # only check every contender's gradients (fast)
    python benchmarks/run.py --only mlp_small,chain --contenders pb_eager,torch

Writes ``benchmark.md`` and ``benchmark.png`` to ``--out`` (default ``docs/``) and prints
the report. ``--check`` exits 1 when a contender that is available fails or disagrees with
the floor (a contender whose library or API is missing is "n/a", not a failure).
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def set_threads(threads: int | None) -> None:
    """Fix the BLAS/OpenMP thread count before numpy or torch is imported.

    Default 1 unless the environment already says: on a 2-core machine, OpenBLAS's pool and
    PyTorch's OpenMP pool spin-waiting on the same cores made interleaved timings swing by
    10-100x; one thread each keeps every contender on equal, steady terms.
    """
    # numba's OpenMP threads (pb_fused) otherwise spin-wait between kernels: on a shared
    # 2-core machine one call of the fused chain swung from 2 ms to 200 ms
    os.environ.setdefault("OMP_WAIT_POLICY", "passive")
    if threads is None:
        if any(os.environ.get(v, "").isdigit() for v in THREAD_VARS):
            return
        threads = 1
    for var in THREAD_VARS:
        os.environ[var] = str(threads)


_pre = argparse.ArgumentParser(add_help=False)
_pre.add_argument("--threads", type=int)
set_threads(_pre.parse_known_args()[0].threads)

import batching  # noqa: E402
import contenders  # noqa: E402
import latency  # noqa: E402
import loops  # noqa: E402
import new_process  # noqa: E402
import report  # noqa: E402
import timing  # noqa: E402
import workloads  # noqa: E402

FULL_BUDGET, QUICK_BUDGET = 30.0, 2.0       # seconds of timed calls per workload
FULL_ROUNDS, QUICK_ROUNDS = 41, 9


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="fast smoke run (under a minute)")
    p.add_argument("--check", action="store_true",
                   help="only check every contender's gradients against the floor")
    p.add_argument("--only", metavar="NAME", help="workloads (comma-separated names or "
                   "prefixes; 'latency' for the compiler latency micro-benchmarks, 'loops' for the "
                   "first and steady calls of loops against their trip count, 'batching' for "
                   "vmap's per-sample gradients and Jacobians, 'new_process' for the first "
                   "call in a new process with and without the persistent cache)")
    p.add_argument("--contenders", metavar="NAME",
                   help="contenders besides the floor: " + ", ".join(
                       c.name for c in contenders.CONTENDERS[1:]))
    p.add_argument("--threads", metavar="N", type=int,
                   help="BLAS and PyTorch threads (default: OPENBLAS_NUM_THREADS or "
                   "OMP_NUM_THREADS from the environment, else 1)")
    p.add_argument("--out", type=Path, default=HERE.parent / "docs",
                   help="folder for benchmark.md and benchmark.png (default: docs/)")
    return p.parse_args(argv)


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def run_workload(w: workloads.Workload, chosen: tuple, args: argparse.Namespace) -> dict:
    """Check every contender on ``w``; unless ``--check``, time them and measure memory."""
    t0 = time.perf_counter()
    inputs = w.inputs()
    ref = (w.floor(inputs.params, inputs.data, inputs.vectors) if w.hvp
           else w.floor(inputs.params, inputs.data))
    entries = {c.name: timing.check(c, w, inputs, ref) for c in chosen}
    summary = ", ".join(f"{n} {e.status}" for n, e in entries.items())
    log(f"[{w.name}] checked in {time.perf_counter() - t0:.1f}s: {summary}")
    if not args.check:
        budget = QUICK_BUDGET if args.quick else FULL_BUDGET
        timing.interleaved(entries, budget, QUICK_ROUNDS if args.quick else FULL_ROUNDS)
        for c in chosen:
            e = entries[c.name]
            if e.status == "ok" and c.tracemalloc_sees:
                e.peak_bytes = timing.peak_memory(e.prepared.step)
        log(f"[{w.name}] timed in {time.perf_counter() - t0:.1f}s: " + ", ".join(
            f"{n} {report.fmt_time(e.median)}" for n, e in entries.items() if e.median))
    for e in entries.values():
        e.prepared = None                    # drop closures holding the inputs
    gc.collect()
    return entries


def check_table(results: dict, names: list[str]) -> tuple[str, bool]:
    header = ["workload"] + names
    rows, failed = [], False
    for w, row in results.items():
        cells = []
        for n in names:
            e = row[n]
            failed |= e.status in ("error", "mismatch")
            cells.append(f"{e.status} ({e.detail})")
        rows.append([w] + cells)
    return "\n".join(report._table(header, rows)), failed


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    warnings.simplefilter("ignore")          # library warnings would bury the report
    chosen = contenders.select(args.contenders)
    names = [c.name for c in chosen]
    start = time.perf_counter()
    results = {w.name: run_workload(w, chosen, args) for w in workloads.select(args.only)}
    if args.check:
        text, failed = check_table(results, names)
        print(text)
        return 1 if failed else 0
    lat = None
    if not args.only or "latency" in args.only.split(","):
        lat = latency.run(args.quick)
        log(f"[latency] done at {time.perf_counter() - start:.1f}s")
    looped = None
    if not args.only or "loops" in args.only.split(","):
        looped = loops.run(args.quick)
        log(f"[loops] done at {time.perf_counter() - start:.1f}s")
    fresh = None
    if not args.only or "new_process" in args.only.split(","):
        fresh = new_process.run(args.quick)
        log(f"[new_process] done at {time.perf_counter() - start:.1f}s")
    batched = None
    if not args.only or "batching" in args.only.split(","):
        batched = batching.run(args.quick)
        log(f"[batching] done at {time.perf_counter() - start:.1f}s")
    text = report.markdown(results, names, lat, report.machine(), args.quick)
    text += "\n".join(loops.section(looped))
    text += "\n".join(batching.section(batched))
    text += "\n".join(new_process.section(fresh))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "benchmark.md").write_text(text)
    if results:
        report.chart(results, names, args.out / "benchmark.png")
    print(text)
    log(f"wrote {args.out / 'benchmark.md'} and benchmark.png in "
        f"{time.perf_counter() - start:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
