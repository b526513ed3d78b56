"""The report: machine info, markdown tables, issues 4's and 19's targets, and the bar chart."""

from __future__ import annotations

import datetime
import os
import platform
import statistics
import subprocess
from pathlib import Path

from contenders import CONTENDERS, numpy_threads
from latency import Latency
from timing import Entry
from workloads import OVERHEAD_BOUND, WORKLOADS

Results = dict[str, dict[str, Entry]]      # workload name -> contender name -> Entry
LOAD_AT_START = " ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
LABEL = {c.name: c.label for c in CONTENDERS}
TITLE = {w.name: w.title for w in WORKLOADS}


# ------------------------------------------------------------------ formatting
def fmt_time(s: float | None) -> str:
    if s is None:
        return "-"
    if s < 0:
        return "-" + fmt_time(-s)
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if s >= scale:
            return f"{s / scale:.3g} {unit}"
    return f"{s / 1e-9:.3g} ns"


def fmt_bytes(n: int | None) -> str:
    if n is None:
        return "-"
    for unit, scale in (("GB", 2 ** 30), ("MB", 2 ** 20), ("kB", 2 ** 10)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} B"


def _cell(e: Entry | None, value: str) -> str:
    if e is None:
        return ""
    return value if e.status == "ok" else {"n/a": "n/a", "error": "error",
                                           "mismatch": "**mismatch**"}[e.status]


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(r) + " |" for r in rows]


def ratio(results: Results, wl: str, num: str, den: str = "floor") -> float | None:
    a, b = results.get(wl, {}).get(num), results.get(wl, {}).get(den)
    if a is None or b is None or a.median is None or b.median is None:
        return None
    return a.median / b.median


# --------------------------------------------------------------------- machine
def machine() -> dict[str, str]:
    import numpy
    cpu = platform.processor() or "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    info = {"date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"), "cpu": cpu,
            "cores": f"{os.cpu_count()} (threads used: {numpy_threads()})",
            "load average at start": LOAD_AT_START,
            "python": platform.python_version(), "numpy": numpy.__version__}
    for mod in ("torch", "autograd", "jax", "pullback"):
        try:
            info[mod] = __import__(mod).__version__
        except ImportError:
            info[mod] = "not installed"
        except AttributeError:
            info[mod] = "installed"
    try:
        info["commit"] = subprocess.run(["git", "rev-parse", "--short", "HEAD"], text=True,
                                        capture_output=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        info["commit"] = "unknown"
    return info


# ------------------------------------------------------------------------ tables
def tables(results: Results, names: list[str]) -> list[str]:
    wls = list(results)
    header = ["workload"] + [LABEL[n] for n in names]
    out = ["## Median time per call (loss + every gradient)", ""]
    out += _table(header, [[TITLE[w]] + [_cell(results[w].get(n), fmt_time(
        results[w][n].median if n in results[w] else None)) for n in names] for w in wls])
    out += ["", "## Ratio to the floor (lower is better)", ""]
    out += _table(header, [[TITLE[w]] + [_cell(results[w].get(n), f"{ratio(results, w, n):.2f}x"
                                               if ratio(results, w, n) else "-")
                                         for n in names] for w in wls])
    out += ["", "## Peak memory of one call (tracemalloc)", ""]
    mem = lambda e: "not seen†" if e.peak_bytes is None else fmt_bytes(e.peak_bytes)
    out += _table(header, [[TITLE[w]] + [_cell(results[w].get(n), mem(results[w][n])
                                               if n in results[w] else "")
                                         for n in names] for w in wls])
    out += ["", "† tracemalloc does not see PyTorch's (or JAX's) own CPU allocator, so their "
            "tensor memory cannot be measured this way; numpy-based contenders register every "
            "array with tracemalloc.", ""]
    out += ["## First call (includes trace + codegen for the compiled path)", ""]
    out += _table(header + ["compiled: first - median"],
                  [[TITLE[w]] + [_cell(results[w].get(n), fmt_time(results[w][n].first_call)
                                       if n in results[w] else "") for n in names]
                   + [_first_minus_median(results[w].get("pb_compiled"))] for w in wls])
    return out


def _first_minus_median(e: Entry | None) -> str:
    if e is None or e.first_call is None or e.median is None:
        return "-"
    return fmt_time(e.first_call - e.median)


def problems(results: Results, names: list[str]) -> list[str]:
    """Contenders that are n/a, fail or disagree with the floor, grouped by reason."""
    grouped: dict[tuple[str, str, str], list[str]] = {}
    for w, row in results.items():
        for n in names:
            e = row.get(n)
            if e is not None and e.status != "ok":
                grouped.setdefault((n, e.status, e.detail), []).append(w)
    lines = []
    for (n, status, detail), wls in grouped.items():
        where = "every workload" if len(wls) == len(results) > 1 else ", ".join(wls)
        lines.append(f"- {LABEL[n]}: **{status}** on {where}: {detail}")
    return lines or ["- none: every contender ran every workload and matched the floor"]


# ----------------------------------------------------------------------- targets
def _line(ok: bool | None, text: str) -> str:
    return f"- [{'n/a' if ok is None else 'PASS' if ok else 'MISS'}] {text}"


def targets(results: Results, lat: Latency) -> list[str]:
    out = []
    for w in results:
        r = ratio(results, w, "pb_compiled")
        out.append(_line(None if r is None else r <= 1.25, f"{w}: compiled/floor = "
                         + ("n/a" if r is None else f"{r:.2f} (limit 1.25"
                            + (")" if r <= 1.25 else f"; {r / 1.25:.2f}x too slow)"))))
    for w in results:
        r, t = ratio(results, w, "pb_compiled", "torch"), ratio(results, w, "torch")
        if r is None or t is None:
            out.append(_line(None, f"{w}: compiled vs PyTorch eager: n/a"))
            continue
        limit = 1.0 if t > 1.5 else 1.1
        rule = "faster than" if t > 1.5 else "within 1.1x of"
        out.append(_line(r < limit if limit == 1.0 else r <= limit,
                         f"{w}: compiled {rule} PyTorch (torch/floor {t:.2f}): compiled/torch "
                         f"= {r:.2f}" + ("" if r <= limit else f"; {r / limit:.2f}x too slow")))
    for w, need in (("chain_small", 10.0), ("mlp_small", 3.0)):
        out.append(_speedup(results, w, "pb_compiled", need))
    for w in OVERHEAD_BOUND:
        out.append(_speedup(results, w, "pb_eager", 2.0))
    out += _latency_targets(lat)
    for w in results:
        c, e = results[w].get("pb_compiled"), results[w].get("pb_eager")
        if c is None or e is None or c.peak_bytes is None or e.peak_bytes is None:
            out.append(_line(None, f"{w}: peak memory compiled <= eager: n/a"))
            continue
        r = c.peak_bytes / e.peak_bytes
        out.append(_line(r <= 1.0, f"{w}: peak memory compiled {fmt_bytes(c.peak_bytes)} vs "
                         f"eager {fmt_bytes(e.peak_bytes)}"
                         + ("" if r <= 1.0 else f"; {r:.2f}x too much")))
    return out


#: rows whose time goes mostly to matrix products, which each contender runs with its own
#: library (numpy's floor and pullback: OpenBLAS; PyTorch: MKL; JAX: XLA's own kernels)
MATMUL_ROWS = frozenset({"mlp_small", "mlp_mnist", "mlp_large", "rnn", "logreg", "attention",
                         "mlp_hvp"})
OWN_BLAS = {"torch": "MKL", "jax": "XLA's own kernels"}


def floor_targets(results: Results) -> list[str]:
    """Issue 19's: compiled within 1.1x of the floor on every row, and ahead of PyTorch
    eager and JAX jit; where one is ahead on a row of matrix products, the line says that
    it runs them with another library than numpy's (not a like-for-like comparison)."""
    out = []
    for w in results:
        r = ratio(results, w, "pb_compiled")
        out.append(_line(None if r is None else r <= 1.1, f"{w}: compiled/floor = "
                         + ("n/a" if r is None else f"{r:.2f} (limit 1.1)")))
    for w in results:
        for who in ("torch", "jax"):
            r = ratio(results, w, "pb_compiled", who)
            if r is None:
                continue
            text = f"{w}: compiled/{LABEL[who]} = {r:.2f}"
            if r > 1.0 and w in MATMUL_ROWS:
                out.append(f"- [note] {text}: {LABEL[who]} runs the matrix products with "
                           f"{OWN_BLAS[who]}, not numpy's OpenBLAS")
            else:
                out.append(_line(r <= 1.0, text))
    return out


def _speedup(results: Results, w: str, who: str, need: float) -> str:
    if w not in results:
        return _line(None, f"{w}: not run")
    r = ratio(results, w, "hips", who)
    if r is None:
        return _line(None, f"{w}: {LABEL[who]} >= {need:g}x faster than HIPS: n/a")
    return _line(r >= need, f"{w}: {LABEL[who]} {r:.2f}x faster than HIPS (need {need:g}x)"
                 + ("" if r >= need else f"; {need / r:.2f}x short"))


def _latency_targets(lat: Latency | None) -> list[str]:
    if lat is None:
        return [_line(None, "latency micro-benchmarks not run")]
    out = []
    for door, why in lat.missing.items():
        out.append(_line(None, f"{door}: {why}"))
    for door, times in lat.first_call.items():
        t = statistics.median(times)
        out.append(_line(t <= 0.05, f"first call of a 500-equation function via {door}: "
                         f"{fmt_time(t)} (limit 50 ms"
                         + (")" if t <= 0.05 else f"; {t / 0.05:.2f}x too slow)")))
    for door, per_n in lat.overhead.items():
        for n, (hit, plain) in per_n.items():
            over, limit = hit - plain, 2e-6 + n * 0.3e-6
            out.append(_line(over <= limit, f"cache hit via {door}, {n} args: adds "
                             f"{fmt_time(over)} over its generated code (limit {fmt_time(limit)}"
                             + (")" if over <= limit else f"; {over / limit:.2f}x too much)")))
    return out


def latency_section(lat: Latency | None) -> list[str]:
    if lat is None:
        return []
    out = ["## Compiler latency", ""]
    for door, times in lat.first_call.items():
        out.append(f"- 500-equation function, first call via {door}: median "
                   f"{fmt_time(statistics.median(times))} over {len(times)} fresh functions "
                   f"(min {fmt_time(min(times))}); a cached call: {fmt_time(lat.steady[door])}")
    if lat.long_trace:
        per = ", ".join(f"{n} equations: {fmt_time(t)} ({t / n * 1e6:.0f} us per equation)"
                        for n, t in lat.long_trace.items())
        out.append(f"- first call via pb.value_and_grad, {per}")
    for door, per_n in lat.overhead.items():
        for n, (hit, plain) in per_n.items():
            out.append(f"- cache hit via {door}, {n} args: {fmt_time(hit)} per call; its "
                       f"generated code called directly: {fmt_time(plain)}")
    for door, why in lat.missing.items():
        out.append(f"- {door}: not measured ({why})")
    return out + [""]


NOTES = """## How this was measured

- `python benchmarks/run.py` (options: `--quick`, `--only NAME[,NAME]`, `--contenders`,
  `--out DIR`, `--check`). Inputs are float32 from `numpy.random.default_rng(0)`.
- Every contender's loss and gradients are compared with the hand-written numpy floor
  (`benchmarks/floors.py`; allclose, rtol 1e-3, atol 1e-4 x the largest entry) before it is
  timed; a contender that disagrees is reported, not timed.
- Timing: `time.perf_counter`, warm-up calls, then rounds in which every contender runs a
  batch of calls sized to an equal share of the workload's time budget; the contenders'
  order rotates every round; the table shows the median over batches of the time per call.
- MLP hidden layers use tanh (smooth, so the HVP is not mostly zeros). The HVP is taken
  with respect to all four MLP parameters; HIPS autograd's `hessian_vector_product` takes
  one array, so its parameters are one flat vector sliced inside the loss.
- Overhead-bound workloads (for the eager target): {overhead}.
- Threads: numpy's OpenBLAS and PyTorch both run {threads} thread(s)
  (`OPENBLAS_NUM_THREADS`/`OMP_NUM_THREADS` set before import, `torch.set_num_threads`).
  The default is 1 (`--threads N` changes it): on a 2-core machine the two libraries' thread
  pools spin-wait on the same cores, which made interleaved timings swing 10-100x; with one
  thread each, every contender gets the same single core for its matrix products, and
  PyTorch cannot spread elementwise ops over cores that numpy would leave idle.
- Peak memory: tracemalloc around one call after warm-up (inputs excluded, results included).
"""


def markdown(results: Results, names: list[str], lat: Latency | None, info: dict,
             quick: bool) -> str:
    head = ["# pullback benchmark" + (" (quick run)" if quick else ""), "",
            "Machine: " + "; ".join(f"{k} {v}" for k, v in info.items()), ""]
    body = tables(results, names) + ["", "## Not working yet", ""] + problems(results, names)
    body += ["", "## Targets (issue 4)", ""] + targets(results, lat) + [""]
    body += ["## Targets (issue 19)", ""] + floor_targets(results) + [""]
    body += latency_section(lat)
    notes = NOTES.format(overhead=", ".join(OVERHEAD_BOUND), threads=numpy_threads())
    return "\n".join(head + body) + "\n" + notes


def chart(results: Results, names: list[str], path: Path) -> None:
    """Grouped bars: each contender's time relative to the floor, per workload (log scale)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    wls = list(results)
    shown = [n for n in names if n != "floor"
             and any(ratio(results, w, n) is not None for w in wls)]
    fig, ax = plt.subplots(figsize=(max(8, 1.3 * len(wls)), 5))
    width = 0.8 / max(len(shown), 1)
    for i, n in enumerate(shown):
        xs = [j + (i - (len(shown) - 1) / 2) * width for j in range(len(wls))]
        ys = [ratio(results, w, n) or 0.0 for w in wls]
        ax.bar(xs, ys, width, label=LABEL[n])
    ax.axhline(1.0, color="black", linewidth=1)
    ax.axhline(1.25, color="gray", linestyle="--", linewidth=1, label="target for compiled")
    ax.set_yscale("log")
    ax.set_xticks(range(len(wls)))
    ax.set_xticklabels(wls, rotation=30, ha="right")
    ax.set_ylabel("time / hand-written numpy (log)")
    ax.set_title("Forward + backward, relative to hand-written numpy")
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
