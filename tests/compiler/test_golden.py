"""Golden tests: the printed IR and the generated source of small programs.

A change to these outputs must be deliberate: regenerate with
PULLBACK_UPDATE_GOLDEN=1 python -m pytest tests/compiler/test_golden.py and review the diff.
"""

import os
import pathlib

import numpy as np
import pytest

import pullback as pb
from pullback import config

from . import programs

GOLDEN = pathlib.Path(__file__).parent / "golden"
UPDATE = os.environ.get("PULLBACK_UPDATE_GOLDEN") == "1"


def _args(name):
    rng = np.random.default_rng(0)
    f32 = lambda *s: pb.tensor(rng.standard_normal(s).astype(np.float32))
    p = lambda *s: f32(*s).requires_grad_()
    if name == "seed_example":
        return (pb.ones(5), p(5, 3), p(3), pb.zeros(3))
    if name == "mlp":
        return (f32(4, 6), p(6, 8), p(8), p(8, 3), p(3), pb.tensor([0, 2, 1, 1]))
    if name == "cnn":
        return (f32(2, 1, 4, 4), p(2, 1, 3, 3), p(8, 3), pb.tensor([0, 2]))
    return (f32(4), p(4), 3)


def _render(name):
    fn = pb.compile(getattr(programs, name))
    info = pb.compiler.inspect(fn, *_args(name))
    parts = ["# IR", info.ir, "", "# forward", info.forward, "# backward", info.backward,
             "# saved", info.saved_report()]
    return "\n".join(parts) + "\n"


@pytest.mark.parametrize("name", ["seed_example", "mlp", "loop", "cnn"])
def test_golden(name, monkeypatch):
    monkeypatch.setattr(config, "free_bytes", 0)  # show every release point, however small
    text = _render(name)
    path = GOLDEN / f"{name}.txt"
    if UPDATE or not path.exists():
        path.write_text(text)
    assert text == path.read_text()


@pytest.mark.parametrize("name", ["seed_example", "mlp", "loop", "cnn"])
def test_golden_programs_compute_eager_gradients(name):
    args = _args(name)
    eager = getattr(programs, name)(*args)
    eager.backward()
    want = [a.grad.numpy().copy() for a in args if isinstance(a, pb.Tensor) and a.requires_grad]
    for a in args:
        if isinstance(a, pb.Tensor):
            a.grad = None
    out = pb.compile(getattr(programs, name))(*args)
    np.testing.assert_allclose(out.item(), eager.item(), rtol=1e-6)
    out.backward()
    got = [a.grad.numpy() for a in args if isinstance(a, pb.Tensor) and a.requires_grad]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
