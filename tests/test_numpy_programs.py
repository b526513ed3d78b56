"""Plain numpy programs (tests/plain_numpy_programs.py, which imports numpy only)
differentiated by pullback and checked against float64 central finite differences:
eagerly (a Tensor that requires grad passed in; numpy's protocols route each call to the
op table) and through ``pb.grad`` (the source pass and the tracer)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import plain_numpy_programs
import pytest
from ops import numeric_grad
from plain_numpy_programs import PROGRAMS as _PROGRAMS

import pullback as pb


def _point(name: str) -> np.ndarray:
    fn, n = _PROGRAMS[name]
    x = np.random.default_rng(len(name)).standard_normal(n)
    if name == "branchy":
        x = np.abs(x) * 0.3 + 0.1  # positive sum, off the clip's kinks
    return x


def _array(v) -> np.ndarray:
    return v.detach().numpy() if isinstance(v, pb.Tensor) else np.asarray(v)


@pytest.mark.parametrize("name", list(_PROGRAMS))
def test_eager_gradient_matches_finite_differences(name) -> None:
    fn, _ = _PROGRAMS[name]
    x = _point(name)
    t = pb.tensor(x, requires_grad=True)
    out = fn(t)
    assert isinstance(out, pb.Tensor) and out.requires_grad
    np.testing.assert_allclose(_array(out), fn(x), rtol=1e-10)
    out.backward()
    np.testing.assert_allclose(t.grad.numpy(), numeric_grad(fn, x), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("name", list(_PROGRAMS))
def test_pb_grad_matches_finite_differences(name) -> None:
    fn, _ = _PROGRAMS[name]
    x = _point(name)
    expected = numeric_grad(fn, x)
    g = pb.grad(fn)
    for _ in range(2):  # the second call runs the generated code
        np.testing.assert_allclose(_array(g(x)), expected, rtol=1e-5, atol=1e-7)


def test_the_programs_import_no_pullback() -> None:
    source = Path(plain_numpy_programs.__file__).read_text()
    assert "pullback" not in source and "import pb" not in source
    assert len(_PROGRAMS) >= 24
