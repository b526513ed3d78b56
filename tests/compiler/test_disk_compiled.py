"""``pb.compile``'s whole variants in the persistent cache (``compiler/disk_compiled.py``):
a later process runs a compiled function's and a compiled Module's forward and backward
without a trace when the code, the module's structure and what they capture are what
they were; a changed global, module class or hyperparameter traces again, and a
tampered file is ignored with one warning."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np

# the user's module: a compiled function reading global K, and a Module of the user's
MODULE = """
import numpy as np
import pullback as pb

K = {k}

@pb.compile
def f(x):
    return (pb.sin(x) * K).sum()

class Scaled(pb.nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = pb.nn.Linear(3, {width})

    def forward(self, x):
        return pb.tanh(self.inner(x)) * {scale}
"""

SCRIPT = """
import json, warnings
import numpy as np
import pullback as pb
# the versions pinned: an edit to pullback's files while the test runs (a checkout being
# worked on) would rightly make a later process trace again
from pullback.compiler import cache_files
cache_files._versions = lambda by_folders: {"pullback": "pinned by the test"}
from pullback.compiler import compiled, disk_variants
import user

traced = []
real = compiled.build_variant
compiled.build_variant = lambda *a, **k: traced.append(a[-1].__name__) or real(*a, **k)
pb.manual_seed(0)
net = pb.compile(user.Scaled())
x = pb.tensor(np.linspace(-1.0, 2.0, 6).reshape(2, 3), dtype=pb.float32,
              requires_grad=True)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    y = user.f(x)
    y.backward()
    out = net(x)
    (out * out).sum().backward()
print(json.dumps({"f": [float(y), x.grad.tolist()], "net": out.tolist(),
                  "grads": [p.grad.tolist() for p in net.parameters()], "traced": traced,
                  "stats": disk_variants.STATS, "warnings": [str(w.message) for w in caught]}))
"""


def _run(tmp_path, k: float = 2.0, width: int = 4, scale: float = 1.0) -> dict:
    (tmp_path / "user.py").write_text(MODULE.format(k=k, width=width, scale=scale))
    (tmp_path / "job.py").write_text(SCRIPT)
    env = dict(os.environ, PULLBACK_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONDONTWRITEBYTECODE="1")  # (a source change within one second)
    done = subprocess.run([sys.executable, str(tmp_path / "job.py")], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, check=True)
    got = json.loads(done.stdout.splitlines()[-1])
    x = np.linspace(-1.0, 2.0, 6).reshape(2, 3)
    np.testing.assert_allclose(got["f"][0], np.sin(x).sum() * k, rtol=1e-6)
    return got


def test_a_later_process_runs_compiled_forward_and_backward_untraced(tmp_path):
    first = _run(tmp_path)
    assert first["traced"] == ["f", "forward"] and first["stats"]["writes"] == 4
    second = _run(tmp_path)  # nothing changed: no trace, the same results
    assert second["traced"] == [] and second["stats"]["hits"] == 2
    assert second["warnings"] == []
    assert second["f"][0] == first["f"][0]
    np.testing.assert_allclose(second["f"][1], first["f"][1], rtol=1e-12)
    np.testing.assert_allclose(second["net"], first["net"], rtol=1e-12)
    for got, expected in zip(second["grads"], first["grads"]):
        np.testing.assert_allclose(got, expected, rtol=1e-12)
    third = _run(tmp_path, k=3.0, width=5)  # f's global and the module's Linear changed
    assert third["traced"] == ["f", "forward"] and third["stats"]["hits"] == 0
    fourth = _run(tmp_path, k=3.0, width=5, scale=2.0)  # the class's source changed
    assert fourth["traced"] == ["forward"]
    np.testing.assert_allclose(np.asarray(fourth["net"]), 2 * np.asarray(third["net"]))
    cache = tmp_path / "cache"
    for name in os.listdir(cache):  # every kept variant tampered with
        if name.endswith(".variant"):
            kept = cache / name
            kept.write_bytes(kept.read_bytes().replace(b"np.", b"np .", 1))
    fifth = _run(tmp_path, k=3.0, width=5, scale=2.0)
    assert fifth["traced"] == ["f", "forward"] and fifth["stats"]["refused"] >= 1
    assert len(fifth["warnings"]) == 1 and "HMAC" in fifth["warnings"][0]
    np.testing.assert_allclose(np.asarray(fifth["net"]), np.asarray(fourth["net"]))


def test_the_first_backward_is_kept_in_its_variants_entry(tmp_path):
    # one entry per variant (one file read and one HMAC in a later process), written
    # again with the backward under a code file of its own; that file tampered with:
    # refused with one warning, traced again
    first = _run(tmp_path)
    cache = tmp_path / "cache"
    assert sorted(n.rsplit(".", 1)[1] for n in os.listdir(cache)
                  if n.endswith(("variant", "v2code"))) == ["v2code"] * 2 + ["variant"] * 2
    for name in os.listdir(cache):
        if name.endswith(".variant"):
            header = json.loads((cache / name).read_bytes().split(b"\n")[1][2:])
            assert header["code"] == ".v2code" and len(header["more"]) == 1
    second = _run(tmp_path)
    assert second["traced"] == [] and second["warnings"] == []
    np.testing.assert_allclose(second["f"][1], first["f"][1], rtol=1e-12)
    for name in os.listdir(cache):
        if name.endswith(".v2code"):
            kept = cache / name
            data = kept.read_bytes()
            kept.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    third = _run(tmp_path)
    assert third["traced"] == ["f", "forward"] and len(third["warnings"]) == 1
    assert "HMAC" in third["warnings"][0]
    np.testing.assert_allclose(third["f"][1], first["f"][1], rtol=1e-12)
