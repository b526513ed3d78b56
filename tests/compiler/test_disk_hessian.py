"""pb.hessian's whole variant in the persistent cache: a later process's first
``pb.hessian(f)(x)`` runs the forward, tangent program and batched columns the first
process kept, without a trace (keyed before it by f's code, argnums and the call's key;
the inner jacrev's basis is an equation, not a captured Tensor), and gives the Hessian
torch and central differences give; a changed global traces again."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import torch

import pullback as pb
from pullback.compiler import disk_variants

MODULE = """
import numpy as np
K = {k}

def f(x):
    return (np.tanh(x) * x.sum()).sum() * K + np.sum(np.sin(x) ** 3)
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
x = np.linspace(-1.0, 1.0, 5)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    h = pb.hessian(user.f)(x)
print(json.dumps({"h": h.tolist(), "traced": len(traced), "stats": disk_variants.STATS,
                  "generated": disk_cache.STATS, "warnings": [str(w.message) for w in caught]}))
"""

X = np.linspace(-1.0, 1.0, 5)


def _f(x, k: float):
    return (torch.tanh(x) * x.sum()).sum() * k + torch.sum(torch.sin(x) ** 3)


def _central(k: float, eps: float = 1e-4) -> np.ndarray:
    """The Hessian by central differences of torch's gradient."""
    def grad(x):
        t = torch.tensor(x, requires_grad=True)
        return torch.autograd.grad(_f(t, k), t)[0].numpy()
    n = len(X)
    cols = [(grad(X + eps * e) - grad(X - eps * e)) / (2 * eps) for e in np.eye(n)]
    return np.stack(cols, axis=1)


def _run(tmp_path, k: float = 2.0) -> dict:
    (tmp_path / "user.py").write_text(MODULE.format(k=k))
    (tmp_path / "job.py").write_text(SCRIPT)
    env = dict(os.environ, PULLBACK_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONDONTWRITEBYTECODE="1")
    done = subprocess.run([sys.executable, str(tmp_path / "job.py")], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, check=True)
    got = json.loads(done.stdout.splitlines()[-1])
    want = torch.autograd.functional.hessian(lambda t: _f(t, k),
                                             torch.tensor(X)).numpy()
    np.testing.assert_allclose(got["h"], want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got["h"], _central(k), rtol=1e-6, atol=1e-7)
    return got


def test_a_later_process_runs_hessian_without_a_trace(tmp_path):
    first = _run(tmp_path)
    assert first["traced"] == 1 and first["stats"]["writes"] == 3  # (+ tangent, columns)
    second = _run(tmp_path)
    assert second["traced"] == 0 and second["stats"]["hits"] == 1
    assert second["stats"]["misses"] == 0  # (the columns part read: batched)
    assert second["generated"]["hits"] == second["generated"]["misses"] == 0
    assert second["warnings"] == []
    assert second["h"] == first["h"]
    third = _run(tmp_path, k=3.0)  # the global changed: traced again, the new Hessian
    assert third["traced"] == 1 and third["stats"]["hits"] == 0


def test_hessian_and_jacfwd_of_jacrev_keep_entries_of_their_own():
    # one function, three doors: each its own key (hessian's adds its jacrev's settings)
    def g(x):
        return (x ** 3).sum()
    keys = {disk_variants._key(fn, door, (X,)) for fn, door in [
        (g, ("jacfwd", (0,), False, "linear")),
        (pb.jacrev(g), ("jacfwd", (0,), False, "linear")),
        (pb.hessian(g).fn, ("hessian", (0,), False, "linear"))]}
    assert len(keys) == 3
    assert disk_variants.kept_function(pb.jacrev(g, holomorphic=True)) is None


def test_jacfwd_and_hessian_of_a_dict_run_with_a_cache_dir(tmp_path, monkeypatch):
    # a call's key with a dict is not plain literals: not kept, and no NotPortable
    # escaping to the user (jacfwd raised it before)
    monkeypatch.setattr(pb.config, "cache_dir", str(tmp_path))

    def g(p):
        return np.sum(p["a"] ** 2 * p["b"])
    p = {"a": np.array([1.0, 2.0]), "b": np.array([3.0, 4.0])}
    got = pb.jacfwd(g)(p)
    np.testing.assert_allclose(got["a"], [6.0, 16.0])
    np.testing.assert_allclose(got["b"], [1.0, 4.0])
    h = pb.hessian(g)(p)
    np.testing.assert_allclose(h["a"]["b"], np.diag([2.0, 4.0]))
    np.testing.assert_allclose(h["a"]["a"], np.diag([6.0, 8.0]))
