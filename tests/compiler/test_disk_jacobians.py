"""jacfwd's whole variants in the persistent cache (``disk_variants``' parts): a later
process runs the forward, the tangent program and the batched columns the first one
kept, without a trace; a changed global traces again, and a tampered part is refused
with one warning (the Jacobian then comes column by column, still right)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np

MODULE = """
import numpy as np
K = {k}

def f(x):
    return np.tanh(x) * x.sum() * K
"""

SCRIPT = """
import json, sys, warnings
import numpy as np
import pullback as pb
from pullback.compiler import cache_files
cache_files._versions = lambda by_folders: {"pullback": "pinned by the test"}
from pullback.compiler import disk_cache, disk_variants
import user

trace = sys.modules["pullback.compiler.trace"]
traced = []
real = trace._trace_call
trace._trace_call = lambda *a, **k: traced.append(1) or real(*a, **k)
x = np.linspace(-1.0, 1.0, 4)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    jac = pb.jacfwd(user.f)(x)
print(json.dumps({"jac": jac.tolist(), "traced": len(traced), "stats": disk_variants.STATS,
                  "generated": disk_cache.STATS, "warnings": [str(w.message) for w in caught]}))
"""


def _run(tmp_path, k: float = 2.0) -> dict:
    (tmp_path / "user.py").write_text(MODULE.format(k=k))
    (tmp_path / "job.py").write_text(SCRIPT)
    env = dict(os.environ, PULLBACK_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONDONTWRITEBYTECODE="1")
    done = subprocess.run([sys.executable, str(tmp_path / "job.py")], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, check=True)
    got = json.loads(done.stdout.splitlines()[-1])
    x = np.linspace(-1.0, 1.0, 4)
    want = (np.diag(1 - np.tanh(x) ** 2) * x.sum() + np.tanh(x)[:, None]) * k
    np.testing.assert_allclose(got["jac"], want, rtol=1e-12, atol=1e-12)
    return got


def test_a_later_process_runs_jacfwd_without_a_trace(tmp_path):
    first = _run(tmp_path)
    assert first["traced"] == 1 and first["stats"]["writes"] == 3  # (+ tangent, columns)
    second = _run(tmp_path)
    assert second["traced"] == 0 and second["stats"]["hits"] == 1
    assert second["stats"]["misses"] == 0  # (the columns part read: batched, not per column)
    assert second["generated"]["hits"] == second["generated"]["misses"] == 0
    assert second["warnings"] == []
    third = _run(tmp_path, k=3.0)  # the global changed: traced again
    assert third["traced"] == 1 and third["stats"]["hits"] == 0
    cache = tmp_path / "cache"
    tampered = 0
    for n in os.listdir(cache):  # every kept columns part
        data = (cache / n).read_bytes()
        if n.endswith(".variant") and b"_columns" in data:
            (cache / n).write_bytes(data.replace(b"def ", b"def  ", 1))
            tampered += 1
    assert tampered == 1  # (k=3.0 replaced k=2.0's entry: one key, another check)
    fourth = _run(tmp_path, k=3.0)  # refused, column by column: still no trace
    assert fourth["traced"] == 0 and fourth["stats"]["refused"] == 1
    assert len(fourth["warnings"]) == 1 and "HMAC" in fourth["warnings"][0]


def test_a_later_process_runs_jacrev_without_a_trace(tmp_path):
    # jacrev's batched backward is kept in its variant's entry (pb.compile's, written
    # again with it): a later process neither traces nor generates
    (tmp_path / "user.py").write_text(MODULE.format(k=2.0))
    (tmp_path / "job.py").write_text(SCRIPT.replace("pb.jacfwd", "pb.jacrev"))
    env = dict(os.environ, PULLBACK_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONDONTWRITEBYTECODE="1")
    x = np.linspace(-1.0, 1.0, 4)
    want = (np.diag(1 - np.tanh(x) ** 2) * x.sum() + np.tanh(x)[:, None]) * 2.0
    runs = []
    for _ in range(2):
        done = subprocess.run([sys.executable, str(tmp_path / "job.py")], env=env,
                              cwd=tmp_path, capture_output=True, text=True, timeout=60,
                              check=True)
        runs.append(json.loads(done.stdout.splitlines()[-1]))
        np.testing.assert_allclose(runs[-1]["jac"], want, rtol=1e-12, atol=1e-12)
    assert runs[0]["traced"] == 1 and runs[1]["traced"] == 0
    assert runs[1]["stats"]["hits"] == 1 and runs[1]["warnings"] == []
    assert runs[1]["generated"]["hits"] == runs[1]["generated"]["misses"] == 0
