"""pb.compile of a model built of the user's own modules (a ``Block`` in a
``ModuleList``, a user module inside ``nn.Sequential``) keeps its whole variant in the
persistent cache: the walk's bound submodules are described by their dotted names in
the model, which the key describes, and why a loop ran unrolled is kept with the entry
(``pb.compiler.inspect`` says it in a later process too). A later process runs the
model's forward and backward without a trace and gets the first process's values; a
changed submodule attribute, or another structure, traces again."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np

MODEL = """
import pullback as pb
from pullback import nn

class Block(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.lin = nn.Linear(n, n)
        self.scale = {scale}

    def forward(self, x):
        return x + pb.tanh(self.lin(x)) * self.scale

class Net(nn.Module):
    def __init__(self, depth):
        super().__init__()
        self.blocks = nn.ModuleList([Block(4) for _ in range(depth)])
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.head(x)
"""

SCRIPT = """
import json, sys
import numpy as np
import pullback as pb
from pullback import nn
from pullback.compiler import cache_files
cache_files._versions = lambda by_folders: {"pullback": "pinned by the test"}
from pullback.compiler import disk_variants
import model

trace = sys.modules["pullback.compiler.trace"]
traced = []
real = trace._trace_call
trace._trace_call = lambda *a, **k: traced.append(1) or real(*a, **k)
out = {}
for name, make in [("net", lambda: model.Net(int(sys.argv[1]))),
                   ("seq", lambda: nn.Sequential(nn.Linear(4, 4), model.Block(4)))]:
    pb.manual_seed(0)
    net = make()
    fast = pb.compile(net)
    x = pb.tensor(np.linspace(-1.0, 1.0, 12).reshape(3, 4), dtype=pb.float32)
    before = len(traced)
    y = fast(x)
    (y * y).sum().backward()
    out[name] = {"y": y.tolist(), "g": [p.grad.tolist() for p in net.parameters()],
                 "traced": len(traced) - before,
                 "notes": list(pb.compiler.inspect(fast, x).loops)}
print(json.dumps(out))
"""


def _run(tmp_path, depth: int = 2, scale: float = 0.5) -> dict:
    (tmp_path / "model.py").write_text(MODEL.format(scale=scale))
    (tmp_path / "job.py").write_text(SCRIPT)
    env = dict(os.environ, PULLBACK_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONDONTWRITEBYTECODE="1")
    done = subprocess.run([sys.executable, str(tmp_path / "job.py"), str(depth)], env=env,
                          cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          check=True)
    return json.loads(done.stdout.splitlines()[-1])


def test_a_model_of_user_modules_runs_from_the_cache_in_a_later_process(tmp_path) -> None:
    first = _run(tmp_path)
    assert first["net"]["traced"] >= 1 and first["seq"]["traced"] >= 1
    assert any("ModuleList" in n for n in first["net"]["notes"])
    later = _run(tmp_path)
    for name in ("net", "seq"):
        assert later[name]["traced"] == 0, name
        np.testing.assert_array_equal(later[name]["y"], first[name]["y"])
        for a, b in zip(later[name]["g"], first[name]["g"]):
            np.testing.assert_array_equal(a, b)
    assert later["net"]["notes"] == first["net"]["notes"]
    # another value of a submodule's attribute, another depth: traced again, and right
    changed = _run(tmp_path, scale=0.25)
    assert changed["net"]["traced"] >= 1 and changed["seq"]["traced"] >= 1
    assert changed["net"]["y"] != first["net"]["y"]
    deeper = _run(tmp_path, depth=3)
    assert deeper["net"]["traced"] >= 1 and deeper["seq"]["traced"] == 0
