"""First call in a new process, with and without the persistent cache (issue 19, item 5).

Each row starts fresh interpreters: ``cold`` without ``PULLBACK_CACHE_DIR``; ``writing``
with an empty cache directory (the first process, which also writes the code); ``cached``
a later process reading that directory. Times are the first call's, measured inside the
process (imports excluded), by the wall clock and by the process's CPU time; the share
of each phase comes from the same call with the tracer, the passes and codegen timed.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile

JOB = r'''
import json, sys, time
import numpy as np
import pullback as pb
import pullback.nn.functional as F
from pullback.transforms import codegen, pipeline

spent = {"passes": 0.0, "codegen": 0.0}
inside = []  # (a pass calling another is timed once)
def timed(name, module, attr):
    real = getattr(module, attr)
    def wrapper(*args, **kwargs):
        if inside:
            return real(*args, **kwargs)
        inside.append(attr)
        t0 = time.perf_counter()
        try:
            return real(*args, **kwargs)
        finally:
            spent[name] += time.perf_counter() - t0
            inside.pop()
    setattr(module, attr, wrapper)
for attr in ("value_and_grad_graph", "joint_graph", "split_joint", "backward_for"):
    timed("passes", pipeline, attr)
timed("codegen", codegen, "generate")

def mlp(params, x, y):
    w1, b1, w2, b2 = params
    h = np.tanh(x @ w1 + b1)
    return F.cross_entropy(h @ w2 + b2, y)

def rnn(params, xs, h):
    wx, wh, b = params
    for t in range(xs.shape[0]):
        h = np.tanh(xs[t] @ wx + h @ wh + b)
    return (h * h).sum()

CHAIN = ("def chain(x, w):\n    h = x\n    for _ in range({n}):\n"
         "        h = pb.tanh(h * w + h)\n    return (h * h).sum()\n")
rng = np.random.default_rng(0)
which = sys.argv[1]
if which == "mlp":
    f, args = mlp, ([rng.standard_normal(s) for s in [(64, 32), (32,), (32, 10), (10,)]],
                    rng.standard_normal((32, 64)), rng.integers(0, 10, 32))
elif which == "dict":  # params as users write them: a dict of layers
    def mlp_dict(params, x, y):
        h = np.tanh(x @ params["l1"]["w"] + params["l1"]["b"])
        return F.cross_entropy(h @ params["l2"]["w"] + params["l2"]["b"], y)
    f, args = mlp_dict, ({"l1": {"w": rng.standard_normal((64, 32)), "b": rng.standard_normal(32)},
                          "l2": {"w": rng.standard_normal((32, 10)), "b": rng.standard_normal(10)}},
                         rng.standard_normal((32, 64)), rng.integers(0, 10, 32))
elif which == "rnn":
    f, args = rnn, ([rng.standard_normal(s) * 0.1 for s in [(16, 64), (64, 64), (64,)]],
                    rng.standard_normal((50, 32, 16)), np.zeros((32, 64)))
elif which == "train":  # pb.compile(Module): a training step's forward and backward
    pb.manual_seed(0)
    net = pb.compile(pb.nn.Sequential(pb.nn.Linear(64, 32), pb.nn.Tanh(),
                                      pb.nn.Linear(32, 10)))
    x = pb.tensor(rng.standard_normal((32, 64)), dtype=pb.float32)
    y = pb.tensor(rng.integers(0, 10, 32))
    t0, c0 = time.perf_counter(), time.process_time()
    F.cross_entropy(net(x), y).backward()
    print(json.dumps({"first": time.perf_counter() - t0, "cpu": time.process_time() - c0,
                      **spent}))
    sys.exit()
else:  # a chain with no source file: traced unrolled, 3 equations per step
    namespace = {"pb": pb}
    exec(compile(CHAIN.format(n=int(which)), "<chain>", "exec"), namespace)
    f, args = namespace["chain"], (rng.standard_normal(16), rng.standard_normal(16) * 0.1)
t0, c0 = time.perf_counter(), time.process_time()
pb.value_and_grad(f)(*args)
got = {"first": time.perf_counter() - t0, "cpu": time.process_time() - c0, **spent}
if which == "mlp":  # then, in the same process, a first pb.hessian call (90 parameters)
    def fit(w, x, y):
        h = np.tanh(x @ w[:80].reshape(8, 10))
        return np.mean((h @ w[80:] - y) ** 2) + 1e-3 * np.sum(w ** 2)
    w = rng.standard_normal(90) * 0.3
    t0, c0 = time.perf_counter(), time.process_time()
    pb.hessian(fit)(w, rng.standard_normal((32, 8)), rng.standard_normal(32))
    got.update(hessian=time.perf_counter() - t0, hessian_cpu=time.process_time() - c0)
print(json.dumps(got))
'''

ROWS = {"mlp": "MLP b32 64-32-10, value_and_grad",
        "dict": "MLP b32 64-32-10, params a dict of layers, value_and_grad",
        "train": "MLP b32 64-32-10 module, pb.compile, forward + backward",
        "rnn": "tanh RNN b32 h64, 50 steps (a converted loop)",
        "166": "chain of 500 equations, unrolled",
        "1666": "chain of 5,000 equations, unrolled"}


def _first(script: str, row: str, cache: str | None) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PULLBACK_CACHE_DIR"}
    if cache is not None:
        env["PULLBACK_CACHE_DIR"] = cache
    done = subprocess.run([sys.executable, script, row], env=env, capture_output=True,
                          text=True, timeout=600, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def run(quick: bool) -> dict:
    """Row -> {"cold", "writing", "cached"} -> median of the measurements (seconds)."""
    repeats = 1 if quick else 3
    result: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        script = os.path.join(tmp, "first_call.py")
        with open(script, "w") as f:
            f.write(JOB)
        for row in ROWS:
            runs: dict = {"cold": [], "writing": [], "cached": []}
            for k in range(repeats):
                cache = os.path.join(tmp, f"cache-{row}-{k}")
                runs["cold"].append(_first(script, row, None))
                runs["writing"].append(_first(script, row, cache))
                runs["cached"].append(_first(script, row, cache))
            result[row] = {how: {part: statistics.median(m[part] for m in ms)
                                 for part in ms[0]} for how, ms in runs.items()}
    return result


def section(result: dict | None) -> list[str]:
    if not result:
        return []
    out = ["## First call in a new process (persistent cache)", "",
           "| workload | cold | passes + codegen in it | first process writing the cache "
           "| later process, cached | cached / cold | CPU: cold, cached | CPU: cached / cold |",
           "|---|---|---|---|---|---|---|---|"]
    ms = lambda s: f"{s * 1e3:.1f} ms"
    for row, r in result.items():
        cold, cached = r["cold"], r["cached"]
        out.append(f"| {ROWS[row]} | {ms(cold['first'])} | "
                   f"{ms(cold['passes'] + cold['codegen'])} | {ms(r['writing']['first'])} | "
                   f"{ms(cached['first'])} | {cached['first'] / cold['first']:.2f} | "
                   f"{ms(cold['cpu'])}, {ms(cached['cpu'])} | "
                   f"{cached['cpu'] / cold['cpu']:.2f} |")
        if "hessian" in cold:  # (timed in the MLP row's processes, after its call)
            out.append(f"| pb.hessian of a 90-parameter fit, after the row above in its "
                       f"process | {ms(cold['hessian'])} | | {ms(r['writing']['hessian'])} | "
                       f"{ms(cached['hessian'])} | {cached['hessian'] / cold['hessian']:.2f} | "
                       f"{ms(cold['hessian_cpu'])}, {ms(cached['hessian_cpu'])} | "
                       f"{cached['hessian_cpu'] / cold['hessian_cpu']:.2f} |")
    return out + ["", "Times exclude importing pullback; CPU is the process's own time "
                  "(time.process_time), steadier than the wall clock on a shared machine. "
                  "A later process runs pb.value_and_grad's and pb.compile's whole variants "
                  "from the cache, without a trace (compiler/disk_variants.py, "
                  "disk_compiled.py; pb.jvp's, jacfwd's, jacrev's, hessian's and vmap's "
                  "too). A checkout's fingerprint is taken at import: a stat per folder, or under "
                  "PYTHONDONTWRITEBYTECODE a stat per file (about 1 ms, at import when "
                  "PULLBACK_CACHE_DIR is set, else at the first call).", ""]


if __name__ == "__main__":
    print("\n".join(section(run("--quick" in sys.argv))))
