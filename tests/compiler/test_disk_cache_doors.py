"""The persistent cache behind every front door that generates code: ``pb.compile``
with gradients (a module's training step: its forward and backward), ``pb.vjp``,
``pb.jvp``, ``jacrev``, ``jacfwd`` and ``vmap``. A second process gets the same
results from the code on disk, running no pass and no code generation; a damaged
entry is ignored with one warning."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import pullback as pb
from pullback.compiler import cache_files, disk_cache, disk_compiled

SCRIPT = """
import json
import numpy as np
import pullback as pb
from pullback.compiler import disk_cache, disk_variants
from pullback.transforms import codegen, pipeline

runs = {"passes": 0, "codegen": 0}
def counted(name, module, attr):
    real = getattr(module, attr)
    def wrapper(*args, **kwargs):
        runs[name] += 1
        return real(*args, **kwargs)
    setattr(module, attr, wrapper)
for attr in ("joint_graph", "split_joint", "backward_for", "jvp_program", "jvp_graph",
             "vmapped", "simplify", "value_and_grad_graph"):
    counted("passes", pipeline, attr)
counted("codegen", codegen, "generate")

def f(x, w):
    return (pb.tanh(x * w) * w).sum()

x, w = np.linspace(-1, 1, 6), np.linspace(0.5, 1.5, 6)
out = {}
pb.manual_seed(0)
net = pb.nn.Sequential(pb.nn.Linear(3, 4), pb.nn.Tanh(), pb.nn.Linear(4, 2))
step = pb.compile(net)
xs = pb.tensor(np.linspace(-1, 1, 15).reshape(5, 3), dtype=pb.float32)
loss = (step(xs) ** 2).sum()
loss.backward()
out["module"] = [float(loss)] + [p.grad.tolist() for p in net.parameters()]
value, pull = pb.vjp(f, x, w)
out["vjp"] = [float(value)] + [np.asarray(g).tolist() for g in pull(np.ones(()))]
value, tangent = pb.jvp(f, (x, w), (np.ones(6), np.zeros(6)))
out["jvp"] = [float(value), float(tangent)]
out["jacrev"] = np.asarray(pb.jacrev(lambda x: pb.sin(x) * x[::-1])(x)).tolist()
out["jacfwd"] = np.asarray(pb.jacfwd(lambda x: pb.cos(x) * x[::-1])(x)).tolist()
rows = np.linspace(0, 1, 12).reshape(4, 3)
out["vmap"] = np.asarray(pb.vmap(lambda r: (r * pb.cos(r)).sum())(rows)).tolist()
print(json.dumps({"out": out, "runs": runs, "stats": disk_cache.STATS,
                  "variants": disk_variants.STATS}))
"""
N_ENTRIES = 11  # module: forward, backward; vjp: 2; jvp; jacrev: 2; jacfwd: 3; vmap
# (a later process runs the module's and vjp's forwards and backwards, jvp's, vmap's,
# jacrev's forward and batched backward and jacfwd's three, as whole variants: no
# trace, no code read by the graph's hash)
WHOLE = {"entries": 11, "hits": 6}


def _run(tmp_path, directory) -> dict:
    script = tmp_path / "doors.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, PULLBACK_CACHE_DIR=str(directory))
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                          text=True, timeout=60, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def test_every_door_reads_the_code_in_a_second_process(tmp_path):
    directory = tmp_path / "cache"
    first = _run(tmp_path, directory)
    assert first["stats"] == {"hits": 0, "misses": N_ENTRIES, "writes": N_ENTRIES,
                              "refused": 0}
    assert first["runs"]["codegen"] == N_ENTRIES
    second = _run(tmp_path, directory)
    assert second["stats"] == {"hits": N_ENTRIES - WHOLE["entries"], "misses": 0,
                               "writes": 0, "refused": 0}
    assert second["variants"]["hits"] == WHOLE["hits"]
    assert second["runs"] == {"passes": 0, "codegen": 0}
    assert second["out"] == first["out"]


# ----------------------------------------------------------- in this process
@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(cache_files, "_warned", set())
    monkeypatch.setattr(disk_cache, "STATS", dict.fromkeys(disk_cache.STATS, 0))
    # (the code's files: whole variants are test_disk_compiled.py's)
    monkeypatch.setattr(disk_compiled, "load", lambda *args: None)
    directory = tmp_path / "cache"
    with pb.config.override(cache_dir=str(directory)):
        yield directory


def _step(w: np.ndarray) -> tuple:
    """A compiled function's value and gradient, as in a new process."""
    pb.compiler.reset()
    t = pb.tensor(w, requires_grad=True)
    value = pb.compile(lambda t: (pb.sin(t) * t).sum())(t)
    value.backward()
    return float(value), t.grad.numpy()


def test_compile_with_grad_hits_and_matches(cache_dir):
    w = np.linspace(0.1, 1.0, 5)
    expected = (float((np.sin(w) * w).sum()), np.sin(w) + w * np.cos(w))
    for _ in range(2):
        value, grad = _step(w)
        np.testing.assert_allclose(value, expected[0])
        np.testing.assert_allclose(grad, expected[1])
    assert disk_cache.STATS["misses"] == 2 and disk_cache.STATS["hits"] == 2


def test_a_corrupted_entry_is_ignored_with_one_warning(cache_dir):
    w = np.linspace(0.1, 1.0, 5)
    expected = _step(w)
    for name in os.listdir(cache_dir):
        if name.endswith(".code"):
            with open(cache_dir / name, "r+b") as f:
                f.write(b"\x00junk")
    with pytest.warns(UserWarning, match="corrupted or not this directory's") as caught:
        for _ in range(2):
            value, grad = _step(w)
            assert value == expected[0]
            np.testing.assert_array_equal(grad, expected[1])
    assert len(caught) == 1
    assert disk_cache.STATS["hits"] == 0 and disk_cache.STATS["refused"] == 4


def _sin_times(a, b):
    return (pb.sin(a) * b).sum()


def test_a_backward_not_on_disk_is_made_from_the_forward_read_from_it(cache_dir):
    """The forward's code comes from disk, its backward for another set of needed
    gradients does not: the split made then saves the values that forward saves."""
    w = np.linspace(0.1, 1.0, 5)
    a, b = pb.tensor(w, requires_grad=True), pb.tensor(w, requires_grad=True)
    pb.compile(_sin_times)(a, b).backward()
    pb.compiler.reset()
    a, b = pb.tensor(w, requires_grad=True), pb.tensor(w, requires_grad=True)
    (ga,) = pb.autograd.grad(pb.compile(_sin_times)(a, b), [a])
    np.testing.assert_allclose(ga.numpy(), np.cos(w) * w)
    assert disk_cache.STATS == {"hits": 1, "misses": 3, "writes": 3, "refused": 0}
