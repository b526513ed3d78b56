"""Forward mode for every differentiable op in the case table: the tangent of each float
output, eager (``forward_ad``) and generated (``pb.jvp``), against float64 central
finite differences (the directional derivative) and torch.func.jvp."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb
import pullback.autograd.forward_ad as fwAD
from pullback.ops.statistics import SHAPE_FROM_DATA

from .case_types import float_outputs, is_float, outputs
from .cases import DIFF_CASES, FD_CASES, Case, ids

pytestmark = [pytest.mark.filterwarnings("ignore:divide by zero encountered:RuntimeWarning"),
              pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")]

EPS = 1e-6
FD_TOL = dict(rtol=1e-5, atol=1e-6)
TORCH_TOL = dict(rtol=1e-9, atol=1e-10)


def _directions(case: Case, values: list) -> list:
    rng = np.random.default_rng(len(case.id) + 7)
    return [rng.standard_normal(np.shape(values[i])) for i in case.grad_argnums]


def _moved(case: Case, values: list, dirs: list, h: float) -> list:
    out = list(values)
    for i, d in zip(case.grad_argnums, dirs):
        out[i] = values[i] + h * d
    return out


def _finite_differences(case: Case, values: list, dirs: list) -> list:
    plus = float_outputs(case.fn(*_moved(case, values, dirs, EPS)))
    minus = float_outputs(case.fn(*_moved(case, values, dirs, -EPS)))
    return [(np.asarray(p) - np.asarray(m)) / (2 * EPS) for p, m in zip(plus, minus)]


def _eager_tangents(case: Case, values: list, dirs: list) -> list:
    with fwAD.dual_level():
        ts = [pb.tensor(v) for v in values]
        for i, d in zip(case.grad_argnums, dirs):
            ts[i] = fwAD.make_dual(ts[i], pb.tensor(d))
        outs = float_outputs(case.fn(*ts))
        tangents = [fwAD.unpack_dual(o).tangent for o in outs]
    return [np.zeros(o.shape) if t is None else t.numpy() for o, t in zip(outs, tangents)]


def _jvp_tangents(case: Case, values: list, dirs: list) -> list:
    def f(*diff):
        return tuple(float_outputs(case.fn(*_with_diff(case, values, diff))))

    primals = tuple(values[i] for i in case.grad_argnums)
    _, tangents = pb.jvp(f, primals, tuple(dirs))
    return [np.asarray(t) for t in tangents]


def _with_diff(case: Case, values: list, diff: tuple) -> list:
    out = list(values)
    for i, v in zip(case.grad_argnums, diff):
        out[i] = v
    return out


def _torch_tangents(torch, case: Case, values: list, dirs: list) -> list:
    tin = [torch.from_numpy(np.array(v)) for v in values]

    def f(*diff):
        return tuple(float_outputs(case.torch(torch, *_with_diff(case, tin, diff))))

    primals = tuple(tin[i] for i in case.grad_argnums)
    _, tangents = torch.func.jvp(f, primals, tuple(torch.from_numpy(d) for d in dirs))
    return [t.numpy() for t in tangents]


@pytest.mark.parametrize("case", FD_CASES, ids=ids(FD_CASES))
def test_eager_tangent_matches_finite_differences(case: Case) -> None:
    values = case.inputs(np.float64)
    dirs = _directions(case, values)
    for k, (t, fd) in enumerate(zip(_eager_tangents(case, values, dirs),
                                    _finite_differences(case, values, dirs))):
        np.testing.assert_allclose(t, fd, **FD_TOL, err_msg=f"output {k}")


# (an op whose result's shape depends on the data runs eagerly only: the tracer refuses it)
JVP_FD_CASES = [c for c in FD_CASES if c.op not in SHAPE_FROM_DATA]


@pytest.mark.parametrize("case", JVP_FD_CASES, ids=ids(JVP_FD_CASES))
def test_jvp_tangent_matches_finite_differences(case: Case) -> None:
    values = case.inputs(np.float64)
    dirs = _directions(case, values)
    for k, (t, fd) in enumerate(zip(_jvp_tangents(case, values, dirs),
                                    _finite_differences(case, values, dirs))):
        np.testing.assert_allclose(t, fd, **FD_TOL, err_msg=f"output {k}")


TORCH_DIFF_CASES = [c for c in DIFF_CASES if c.torch is not None]


@pytest.mark.parametrize("case", TORCH_DIFF_CASES, ids=ids(TORCH_DIFF_CASES))
def test_tangents_match_torch_func_jvp(case: Case, torch) -> None:
    values = case.inputs(np.float64)
    dirs = _directions(case, values)
    want = _torch_tangents(torch, case, values, dirs)
    ways = [("eager", _eager_tangents(case, values, dirs))]
    if case.op not in SHAPE_FROM_DATA:
        ways.append(("pb.jvp", _jvp_tangents(case, values, dirs)))
    for how, got in ways:
        assert len(got) == len(want), how
        for k, (g, w) in enumerate(zip(got, want)):
            np.testing.assert_allclose(g, w, **TORCH_TOL, err_msg=f"{how}, output {k}")


def test_every_differentiable_case_is_checked() -> None:
    """Each differentiable case reaches one of the checks above."""
    checked = {c.id for c in FD_CASES} | {c.id for c in TORCH_DIFF_CASES}
    assert [c.id for c in DIFF_CASES if c.id not in checked] == []
    assert all(is_float(o) for c in FD_CASES[:1]
               for o in float_outputs(c.fn(*c.inputs())))
    assert outputs((1, 2)) == [1, 2]
