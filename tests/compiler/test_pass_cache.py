"""The source pass's output in the persistent cache (``source/pass_cache.py``): a later
process skips the pass when every name it looked up is what it was; a changed name,
or a tampered file (ignored with one warning), runs the pass again."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import pullback as pb
from pullback.compiler import cache_files, source
from pullback.compiler.source import pass_cache

SCRIPT = """
import json, sys
import numpy as np
import pullback as pb
from pullback.compiler import source
from pullback.compiler.source import pass_cache

runs = []
real = source._run_pass
source._run_pass = lambda fn: runs.append(fn.__name__) or real(fn)

def rnn(w, xs, n):
    h = np.zeros(3)
    for t in range(n):
        h = np.tanh(xs[t] @ w + h)
    return (h * h).sum()

w = np.linspace(-1, 1, 9).reshape(3, 3)
xs = np.linspace(0, 1, 12).reshape(4, 3)
g = pb.grad(rnn)(w, xs, 4)
bounds = source.LOOP_BOUNDS.get(rnn.__code__)
print(json.dumps({"grad": g.tolist(), "runs": runs, "stats": pass_cache.STATS,
                  "bounds": list(bounds or ())}))
"""


def _run(tmp_path) -> dict:
    script = tmp_path / "job.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, PULLBACK_CACHE_DIR=str(tmp_path / "cache"))
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                          text=True, timeout=60, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def test_a_second_process_skips_the_pass(tmp_path):
    first, second = _run(tmp_path), _run(tmp_path)
    assert "rnn" in first["runs"] and first["stats"]["writes"] >= 1
    # (the rnn's own entry; its loop body's is read only when it is traced, and a whole
    # variant from disk_variants.py runs with no trace)
    assert second["runs"] == [] and 1 <= second["stats"]["hits"] <= first["stats"]["writes"]
    assert second["stats"]["misses"] == 0
    np.testing.assert_allclose(second["grad"], first["grad"])
    assert second["bounds"] == first["bounds"] == [2]  # (n: an int bounding the loop)


# --------------------------------------------------------- in this process
def helper(x):
    return np.sin(x)


def uses_helper(x):
    return helper(x) * 2.0


def _python_sin(x):
    return pb.sin(x)


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(cache_files, "_warned", set())
    monkeypatch.setattr(pass_cache, "STATS", dict.fromkeys(pass_cache.STATS, 0))
    with pb.config.override(cache_dir=str(tmp_path / "cache")):
        yield tmp_path / "cache"


def _convert_afresh(monkeypatch) -> list:
    """``uses_helper`` converted as in a new process; the names the pass ran on."""
    source._CODES.pop(uses_helper.__code__, None)
    runs: list = []
    real = source._run_pass
    monkeypatch.setattr(source, "_run_pass", lambda fn: runs.append(fn.__name__) or real(fn))
    assert source.convert(uses_helper) is not None
    return runs


def test_a_changed_global_runs_the_pass_again(cache_dir, monkeypatch):
    assert _convert_afresh(monkeypatch) == ["uses_helper"]
    assert _convert_afresh(monkeypatch) == [] and pass_cache.STATS["hits"] == 1
    monkeypatch.setitem(globals(), "helper", _python_sin)  # (a user function now)
    assert _convert_afresh(monkeypatch) == ["uses_helper"]
    assert pass_cache.STATS["misses"] >= 1
    x = np.array([0.3, 0.7])
    np.testing.assert_allclose(pb.grad(lambda v: uses_helper(v).sum())(x), 2 * np.cos(x))


def unrolls(x):
    hist = []
    for _ in range(3):
        x = np.sin(x)
        hist.append(x)  # (read as a list afterwards: the loop stays as written)
    return sum(h.sum() for h in hist[:2])


def test_the_loops_left_as_written_are_listed_after_a_cache_hit(cache_dir, monkeypatch):
    # the pass's reasons come with its output: inspect lists them in a later process too
    for _ in range(2):
        source._CODES.pop(unrolls.__code__, None)
        source.REFUSED.pop(unrolls.__code__, None)
        assert source.convert(unrolls) is not None
        (why,) = source.REFUSED[unrolls.__code__]
        assert "loop unrolled: it calls hist.append()" in why
    assert pass_cache.STATS["hits"] == 1


@pytest.mark.parametrize("which", [".pass", ".passcode"])
def test_a_tampered_file_is_ignored_with_one_warning(cache_dir, monkeypatch, which):
    _convert_afresh(monkeypatch)
    (path,) = [os.path.join(cache_dir, f) for f in os.listdir(cache_dir) if f.endswith(which)]
    with open(path, "rb") as f:
        data = bytearray(f.read())
    data[-2] ^= 1
    with open(path, "wb") as f:
        f.write(data)
    with pytest.warns(UserWarning, match="corrupted or not this directory's") as caught:
        assert _convert_afresh(monkeypatch) == ["uses_helper"]
        assert _convert_afresh(monkeypatch) == ["uses_helper"]
    assert len(caught) == 1 and pass_cache.STATS["refused"] == 2
    assert pass_cache.STATS["hits"] == 0
