"""The persistent cache (``config.cache_dir``): a later process reads generated code
instead of running the passes; tampered, foreign or exposed files are ignored with
one warning and never executed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import pullback as pb
from pullback.compiler import cache_files, disk_cache, disk_compiled, disk_variants

SCRIPT = """
import json, sys
import numpy as np
import pullback as pb
from pullback.compiler import cache_files, disk_cache, disk_variants
from pullback.transforms import codegen, pipeline

runs = {"passes": 0, "codegen": 0}
def counted(name, module, attr):
    real = getattr(module, attr)
    def wrapper(*args, **kwargs):
        runs[name] += 1
        return real(*args, **kwargs)
    setattr(module, attr, wrapper)
counted("passes", pipeline, "value_and_grad_graph")
counted("passes", pipeline, "simplify")
counted("codegen", codegen, "generate")

def loss(w, x):
    h = np.tanh(x @ w)
    return (h * h).sum()

x = np.linspace(-1, 1, 12).reshape(4, 3)
w = np.linspace(0.5, 1.5, 6).reshape(3, 2)
value, grad = pb.value_and_grad(loss)(w, x)
compiled = pb.compile(lambda t: pb.sin(t) * 2 + pb.erf(t))  # (erf: an rt. helper)
with pb.no_grad():
    out = compiled(pb.ones(3)).numpy()
print(json.dumps({"value": float(value), "grad": grad.tolist(), "out": out.tolist(),
                  "runs": runs, "stats": disk_cache.STATS, "variants": disk_variants.STATS}))
"""


def _run(tmp_path, directory) -> dict:
    script = tmp_path / "job.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, PULLBACK_CACHE_DIR=str(directory))
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                          text=True, timeout=60, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def test_a_second_process_reads_the_code_and_runs_no_pass(tmp_path):
    directory = tmp_path / "cache"
    first = _run(tmp_path, directory)
    assert first["stats"]["misses"] == 2 and first["stats"]["writes"] == 2
    assert first["runs"] == {"passes": 2, "codegen": 2}
    assert os.stat(directory).st_mode & 0o777 == 0o700
    files = [f for f in os.listdir(directory) if f.endswith(".py")]
    assert len(files) == 2
    assert all(os.stat(directory / f).st_mode & 0o777 == 0o600 for f in files)
    assert first["variants"] == {"hits": 0, "misses": 2, "writes": 2, "refused": 0}
    second = _run(tmp_path, directory)
    # value_and_grad's and compile's whole variants, without a trace (disk_variants,
    # disk_compiled): no code read by the graph's hash
    assert second["variants"] == {"hits": 2, "misses": 0, "writes": 0, "refused": 0}
    assert second["stats"] == {"hits": 0, "misses": 0, "writes": 0, "refused": 0}
    assert second["runs"] == {"passes": 0, "codegen": 0}
    for k in ("value", "grad", "out"):
        assert second[k] == first[k]


# ----------------------------------------------------------- in this process
def loss(w, x):
    return (np.sin(x * w) * w).sum()


W = np.linspace(0.1, 1.0, 6)
X = np.linspace(-1.0, 2.0, 6)
EXPECTED = np.sin(X * W) + X * W * np.cos(X * W)


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(cache_files, "_warned", set())
    monkeypatch.setattr(disk_cache, "STATS", dict.fromkeys(disk_cache.STATS, 0))
    # (these tests are about the code's files: whole variants, read before any trace,
    # are disk_variants' and test_disk_variants.py's)
    monkeypatch.setattr(disk_variants, "load", lambda fn, door, args: None)
    monkeypatch.setattr(disk_compiled, "load", lambda *args: None)
    directory = tmp_path / "cache"
    with pb.config.override(cache_dir=str(directory)):
        yield directory


def _grad() -> np.ndarray:
    pb.compiler.reset()  # (as a new process: the in-memory cache forgets the variant)
    return pb.grad(loss)(W, X)


def _the_file(directory) -> str:
    (name,) = [f for f in os.listdir(directory) if f.endswith(".py")]
    return os.path.join(directory, name)


def test_a_hit_in_the_same_directory(cache_dir):
    np.testing.assert_allclose(_grad(), EXPECTED)
    np.testing.assert_allclose(_grad(), EXPECTED)
    assert disk_cache.STATS["hits"] == 1 and disk_cache.STATS["misses"] == 1


def _tamper(path: str) -> None:
    with open(path) as f:
        text = f.read()
    assert "np.sin" in text
    with open(path, "w") as f:
        f.write(text.replace("np.sin", "np.cos"))


def _flip_code(path: str) -> None:
    code = path[:-3] + ".code"
    with open(code, "rb") as f:
        data = bytearray(f.read())
    data[-1] ^= 1
    with open(code, "wb") as f:
        f.write(data)


@pytest.mark.parametrize("damage", [_tamper, _flip_code,
                                    lambda p: open(p, "wb").write(b"\x00junk")])
def test_a_tampered_or_corrupted_file_is_ignored_with_one_warning(cache_dir, damage):
    _grad()
    damage(_the_file(cache_dir))
    with pytest.warns(UserWarning, match="corrupted or not this directory's") as caught:
        np.testing.assert_allclose(_grad(), EXPECTED)
        np.testing.assert_allclose(_grad(), EXPECTED)  # warned once
    assert len(caught) == 1
    assert disk_cache.STATS["hits"] == 0 and disk_cache.STATS["refused"] == 2


def test_a_file_from_another_directory_is_ignored(cache_dir, tmp_path):
    _grad()
    with pb.config.override(cache_dir=str(tmp_path / "other")):
        _grad()
        with open(_the_file(cache_dir), "rb") as f:  # the same key, another HMAC key
            data = f.read()
        with open(_the_file(tmp_path / "other"), "wb") as f:
            f.write(data)
        with pytest.warns(UserWarning, match="corrupted or not this directory's"):
            np.testing.assert_allclose(_grad(), EXPECTED)


def test_files_writable_by_others_are_refused(cache_dir):
    _grad()
    os.chmod(_the_file(cache_dir), 0o666)
    with pytest.warns(UserWarning, match="writable by others"):
        np.testing.assert_allclose(_grad(), EXPECTED)
    assert disk_cache.STATS["hits"] == 0


def test_a_directory_writable_by_others_is_refused(cache_dir):
    _grad()
    os.chmod(cache_dir, 0o777)
    with pytest.warns(UserWarning, match="writable by others"):
        np.testing.assert_allclose(_grad(), EXPECTED)
    assert disk_cache.STATS["hits"] == 0


def test_files_of_another_user_are_refused(cache_dir, monkeypatch):
    _grad()
    uid = os.getuid()
    monkeypatch.setattr(disk_cache.os, "getuid", lambda: uid + 1)
    with pytest.warns(UserWarning, match="owned by another user"):
        np.testing.assert_allclose(_grad(), EXPECTED)
    assert disk_cache.STATS["hits"] == 0


def test_the_key_changes_with_the_versions(monkeypatch):
    f = pb.grad(loss)
    f(W, X)  # (a graph to key: the one traced now)
    traced = f.cache.variants()[0].traced
    key = disk_cache.key_of(traced.graph, ("grad",))
    assert disk_cache.key_of(traced.graph, ("grad",)) == key
    real = disk_cache.versions()
    monkeypatch.setattr(disk_cache, "versions", lambda: {**real, "pullback": "9.9"})
    assert disk_cache.key_of(traced.graph, ("grad",)) != key
    monkeypatch.setattr(disk_cache, "versions", lambda: {**real, "numpy": "0.1"})
    assert disk_cache.key_of(traced.graph, ("grad",)) != key


SCALE = np.arange(1.0, 7.0)


def scaled(w):
    return (w * SCALE).sum()


def test_constants_come_from_the_new_trace(cache_dir, monkeypatch):
    np.testing.assert_allclose(pb.grad(scaled)(W), SCALE)
    new = np.arange(1.0, 7.0) * 10  # (the same shape: the same key)
    monkeypatch.setattr(sys.modules[__name__], "SCALE", new)
    pb.compiler.reset()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_allclose(pb.grad(scaled)(W), new)
    assert disk_cache.STATS["hits"] == 1


def test_a_directory_that_cannot_be_made_gets_one_warning(tmp_path, monkeypatch):
    monkeypatch.setattr(cache_files, "_warned", set())
    (tmp_path / "file").write_text("")
    with pb.config.override(cache_dir=str(tmp_path / "file" / "cache")):
        with pytest.warns(UserWarning, match="cache directory") as caught:
            np.testing.assert_allclose(_grad(), EXPECTED)
            np.testing.assert_allclose(_grad(), EXPECTED)
    assert len(caught) == 1


GUARDED = """
import pullback as pb

def f(x):
    y = x * 2.0
    if y.min().item() < 0.5:  # (a guard: the code is kept, not the whole variant)
        return (y * y).sum()
    return y.sum()

print(float(pb.compile(f)(pb.tensor([1.0, 2.0]))))
"""


def test_kept_code_runs_numpy_methods_that_import_in_a_new_process(tmp_path):
    # a function made from a kept code object had globals without __builtins__: the
    # process's first ndarray.min() (numpy imports its implementation then) raised
    # KeyError: '__builtins__' in a later process (found by tests/fuzz/test_disk_fuzz.py)
    script = tmp_path / "guarded.py"
    script.write_text(GUARDED)
    env = dict(os.environ, PULLBACK_CACHE_DIR=str(tmp_path / "cache"))
    outs = [subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                           text=True, timeout=60) for _ in range(2)]
    assert [(o.returncode, o.stdout.strip()) for o in outs] == [(0, "6.0")] * 2, \
        outs[1].stderr[-500:]
