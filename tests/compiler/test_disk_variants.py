"""Whole variants in the persistent cache (``compiler/disk_variants.py``): a later
process's first call runs without a trace when the function, its arguments and
everything it captured are what they were; a changed global, closure value or source
line traces again, and a tampered file is ignored with one warning."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from pullback.compiler import disk_variants

# the user's module: a global K read by f, a closure value c read by g
MODULE = """
import numpy as np
K = {k}

def f(x):
    return (np.{fn}(x) * K).sum()

def make(c):
    def g(x):
        return (np.tanh(x) * c).sum()
    return g

g = make({c})
"""

SCRIPT = """
import json, sys, warnings
import numpy as np
import pullback as pb
# the versions pinned: an edit to pullback's files while the test runs (a checkout being
# worked on) would rightly make a later process trace again
from pullback.compiler import cache_files
cache_files._versions = lambda by_folders: {"pullback": "pinned by the test"}
from pullback.compiler import disk_variants
import user

grad = sys.modules["pullback.compiler.grad"]  # (the module, not the front door)
traced = []
real = grad.trace_call
grad.trace_call = lambda *a: traced.append(a[-1].__name__) or real(*a)
x = np.linspace(-1.0, 1.0, 5)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    out = {name: [v.tolist() for v in pb.value_and_grad(getattr(user, name))(x)]
           for name in ("f", "g")}
print(json.dumps({"out": out, "traced": traced, "stats": disk_variants.STATS,
                  "warnings": [str(w.message) for w in caught]}))
"""


def _run(tmp_path, k: float = 2.0, c: float = 1.0, fn: str = "sin") -> dict:
    (tmp_path / "user.py").write_text(MODULE.format(k=k, c=c, fn=fn))
    (tmp_path / "job.py").write_text(SCRIPT)
    env = dict(os.environ, PULLBACK_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONDONTWRITEBYTECODE="1")  # (a source change within one second)
    done = subprocess.run([sys.executable, str(tmp_path / "job.py")], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, check=True)
    got = json.loads(done.stdout.splitlines()[-1])
    x = np.linspace(-1.0, 1.0, 5)
    fx, dfx = (np.sin(x), np.cos(x)) if fn == "sin" else (np.cos(x), -np.sin(x))
    value, grad = got["out"]["f"]
    np.testing.assert_allclose([value, *grad], [fx.sum() * k, *(dfx * k)], rtol=1e-12, atol=1e-12)
    value, grad = got["out"]["g"]
    np.testing.assert_allclose([value, *grad], [np.tanh(x).sum() * c,
                                                *((1 - np.tanh(x) ** 2) * c)],
                               rtol=1e-12, atol=1e-12)
    return got


def test_later_processes_trace_only_what_changed(tmp_path):
    first = _run(tmp_path)
    assert first["traced"] == ["f", "g"] and first["stats"]["writes"] == 2
    second = _run(tmp_path)  # nothing changed: neither is traced
    assert second["traced"] == [] and second["stats"]["hits"] == 2
    assert second["warnings"] == []
    third = _run(tmp_path, k=3.0, c=5.0)  # f's global and g's closure value changed
    assert third["traced"] == ["f", "g"] and third["stats"]["hits"] == 0
    cache = tmp_path / "cache"
    (kept,) = [cache / name for name in os.listdir(cache)
               if name.endswith(".variant") and b"tanh" in (cache / name).read_bytes()]
    kept.write_bytes(kept.read_bytes().replace(b"np.tanh", b"np.sinh", 1))
    fourth = _run(tmp_path, k=3.0, c=5.0, fn="cos")  # f's source changed; g's file tampered
    assert fourth["traced"] == ["f", "g"] and fourth["stats"]["hits"] == 0
    assert fourth["stats"]["refused"] == 1
    assert len(fourth["warnings"]) == 1 and "HMAC" in fourth["warnings"][0]


@pytest.mark.parametrize("value, kept", [
    (2.5, True), (np.float32(2.5), True), (Ellipsis, True), ((1, "a", None), True),
    ({"k": [1, 2]}, True), (np.dtype("float32"), True), (np.ones(3), False), (object(), False)])
def test_what_a_captured_value_is_described_by(value, kept):
    if kept:
        assert json.loads(json.dumps(disk_variants.describe(value))) == \
            disk_variants.describe(value)
    else:
        with pytest.raises(disk_variants.NotPortable):
            disk_variants.describe(value)


def test_library_functions_by_name_and_user_functions_by_code():
    assert disk_variants.describe(np.tanh) == ["ufunc", "tanh"]
    assert disk_variants.describe(np.linalg.norm)[:3] == ["named", "numpy.linalg",
                                                          "norm"]

    def one(x):
        return x + 1

    def two(x):
        return x + 2

    assert disk_variants.describe(one)[2] != disk_variants.describe(two)[2]

    def indexes(x):  # (an Ellipsis among the code's constants)
        return x[..., 0]

    assert disk_variants.describe(indexes)[0] == "function"


class Scaled:
    def __call__(self, x):
        return x * 2


def test_a_class_of_the_users_by_the_code_of_its_methods():
    before = disk_variants.describe(Scaled)
    real = Scaled.__call__
    try:
        Scaled.__call__ = lambda self, x: x * 3  # (as if its source changed)
        assert disk_variants.describe(Scaled) != before
    finally:
        Scaled.__call__ = real
    assert disk_variants.describe(Scaled) == before


CHECKED = """
import json, sys
import numpy as np
import pullback as pb
from pullback.compiler import cache_files, captured, disk_variants
import user

compiled = []  # the captured-value checks the walk compiled in this process
real = captured.check_code
captured.check_code = lambda source: compiled.append(source) or real(source)
x = np.linspace(0.1, 1.0, 5)
f = pb.value_and_grad(user.f)
first = f(x)[0]
if sys.argv[1:] == ["later"]:
    user.K = 7.0  # the check (kept on disk) sees the global change
second = f(x)[0]
print(json.dumps({"values": [float(first), float(second)], "compiled": len(compiled),
                  "stats": disk_variants.STATS,
                  "fingerprint at import": cache_files._snapshot.get("hash")
                  == cache_files._fingerprint(),
                  "installed": cache_files._installed(cache_files._roots())}))
"""


def test_a_later_process_runs_the_check_kept_with_the_code(tmp_path):
    """The captured-value check's code is kept beside the variant's (not compiled
    again), and it guards as a compiled one does; without bytecode writes, the files'
    fingerprint is taken at import (a cache directory set)."""
    (tmp_path / "user.py").write_text(MODULE.format(k=2.0, c=1.0, fn="sin"))
    (tmp_path / "job.py").write_text(CHECKED)
    env = dict(os.environ, PULLBACK_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONDONTWRITEBYTECODE="1")
    writer, reader = [json.loads(subprocess.run(
        [sys.executable, str(tmp_path / "job.py"), which], env=env, cwd=tmp_path,
        capture_output=True, text=True, timeout=60, check=True).stdout.splitlines()[-1])
        for which in ("first", "later")]
    value = np.sin(np.linspace(0.1, 1.0, 5)).sum()
    np.testing.assert_allclose(writer["values"], [value * 2.0] * 2, rtol=1e-12)
    np.testing.assert_allclose(reader["values"], [value * 2.0, value * 7.0], rtol=1e-12)
    assert writer["stats"]["writes"] == 1 and writer["compiled"] == 1  # (its trace's)
    assert reader["stats"]["hits"] == 1 and reader["stats"]["writes"] == 1
    assert reader["compiled"] == 1  # (none for the hit: the retrace's, once K changed)
    assert reader["fingerprint at import"] or reader["installed"]
