"""Forward mode for every differentiable op in the case table: the tangent of each float
output, eager (``forward_ad``) and generated (``pb.jvp``), against float64 central
finite differences (the directional derivative) and torch.func.jvp."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb
import pullback.autograd.forward_ad as fwAD
from pullback.ops import OPS

from .case_types import float_outputs
from .cases import DIFF_CASES, FD_CASES, Case, ids

pytestmark = [pytest.mark.filterwarnings("ignore:divide by zero encountered:RuntimeWarning"),
              pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")]

EPS = 1e-6
FD_TOL = dict(rtol=1e-5, atol=1e-6)
TORCH_TOL = dict(rtol=1e-9, atol=1e-10)


def _directions(case: Case, values: list) -> list:
    """A random direction per differentiable input; symmetric for a symmetric input
    (torch's tangents of cholesky & co. assume one, as the op reads one triangle)."""
    rng = np.random.default_rng(len(case.id) + 7)
    dirs = []
    for i in case.grad_argnums:
        d = rng.standard_normal(np.shape(values[i]))
        if np.iscomplexobj(values[i]):  # a complex input moves in both parts
            d = d + 1j * rng.standard_normal(np.shape(values[i]))
        if case.arg_specs[i].domain == "spd":
            d = (d + np.swapaxes(d, -1, -2)) / 2
        dirs.append(d)
    return dirs


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
    return [t.numpy(force=True) for t in tangents]  # (force: torch's ZeroTensor tangents)


@pytest.mark.parametrize("case", FD_CASES, ids=ids(FD_CASES))
def test_eager_tangent_matches_finite_differences(case: Case) -> None:
    values = case.inputs(np.float64)
    dirs = _directions(case, values)
    for k, (t, fd) in enumerate(zip(_eager_tangents(case, values, dirs),
                                    _finite_differences(case, values, dirs))):
        np.testing.assert_allclose(t, fd, **FD_TOL, err_msg=f"output {k}")


# (an op whose result's shape depends on the data runs eagerly only: the tracer refuses it)
SHAPE_FROM_DATA = {name for name, op in OPS.items() if op.shape_from_data}
JVP_FD_CASES = [c for c in FD_CASES if c.op not in SHAPE_FROM_DATA]


@pytest.mark.parametrize("case", JVP_FD_CASES, ids=ids(JVP_FD_CASES))
def test_jvp_tangent_matches_finite_differences(case: Case) -> None:
    values = case.inputs(np.float64)
    dirs = _directions(case, values)
    for k, (t, fd) in enumerate(zip(_jvp_tangents(case, values, dirs),
                                    _finite_differences(case, values, dirs))):
        np.testing.assert_allclose(t, fd, **FD_TOL, err_msg=f"output {k}")


# Off kinks, ties and NaNs (where finite differences hold): at those points torch's
# forward formulas and its backward ones disagree (max at a tie, prod at a zero, logit
# past eps...), and pullback's tangents are the transpose of its torch-matching VJPs
# (test_tangent_is_the_transpose_of_the_gradient checks every case there)
# (and where torch.func.jvp computes no tangent: finite differences check those)


def _torch_has_forward(c: Case) -> bool:
    if c.op == "prod_others":  # torch's expression is a backward: jvp cannot run autograd.grad
        return False
    if c.op in ("special_gammainc", "special_gammaincc"):  # torch 2.13: no forward AD of igamma
        return False
    # torch 2.13 has no forward formula for _embedding_bag: jvp raises NotImplementedError
    # (finite differences and the transpose test below check embedding_bag's tangents)
    if c.op == "embedding_bag":
        return False
    # torch 2.13's forward AD of scatter_reduce(reduce="prod") gives a zero tangent
    return not (c.op == "scatter_reduce" and c.params.get("reduce") == "prod")


def _nll_mean_of_nothing(case: Case) -> bool:
    """nll_loss's mean when every target is ignored: 0 / 0, for every input. torch's
    forward formula is nll_loss of the tangent, 0 / 0 = NaN, while its backward puts 0 at
    every ignored position (torch.func.jacfwd gives NaNs, jacrev zeros); pullback's
    tangent and gradient are torch's, so the two are not each other's transpose here."""
    if case.op != "nll_loss" or case.params["reduction"] != "mean":
        return False
    target = case.inputs(np.float64)[1]
    return bool(np.all(np.asarray(target) == case.params["ignore_index"]))


# (off finite differences, but torch's tangent is defined: NaN, as pullback's)
TORCH_DIFF_CASES = [c for c in FD_CASES if c.torch is not None and _torch_has_forward(c)] + \
    [c for c in DIFF_CASES if not c.fd and _nll_mean_of_nothing(c)]

# Ops whose torch derivative rounds a constant through float32 at every dtype, so that
# torch's float64 tangent is off by float32 rounding (~3e-8 relative, times |x| for celu)
# and pullback's is the exact one (finite differences above check it): celu's formula in
# torch's derivatives.yaml is elu_backward(..., input_scale=1.0 / alpha.toFloat()), and
# hardsigmoid_backward's kernel multiplies by `1.0f / 6.0f`. Against torch: float32's
# rounding, no tighter.
TORCH_ROUNDS_THROUGH_F32 = {"celu", "hardsigmoid"}
F32_ROUNDED_TOL = dict(rtol=1e-6, atol=1e-10)


@pytest.mark.parametrize("case", TORCH_DIFF_CASES, ids=ids(TORCH_DIFF_CASES))
def test_tangents_match_torch_func_jvp(case: Case, torch) -> None:
    values = case.inputs(np.float64)
    dirs = _directions(case, values)
    want = _torch_tangents(torch, case, values, dirs)
    ways = [("eager", _eager_tangents(case, values, dirs))]
    if case.op not in SHAPE_FROM_DATA:
        ways.append(("pb.jvp", _jvp_tangents(case, values, dirs)))
    tol = F32_ROUNDED_TOL if case.op in TORCH_ROUNDS_THROUGH_F32 else TORCH_TOL
    for how, got in ways:
        assert len(got) == len(want), how
        for k, (g, w) in enumerate(zip(got, want)):
            np.testing.assert_allclose(g, w, **tol, err_msg=f"{how}, output {k}")


# the exact derivatives of the ops in TORCH_ROUNDS_THROUGH_F32, in float64
_EXACT_DERIVATIVE = {
    "celu": lambda x, alpha: np.where(x > 0, 1.0, np.exp(x / alpha)),
    "hardsigmoid": lambda x: np.where(np.abs(x) < 3, 1 / 6, 0.0),
}
F32_ROUNDED_CASES = [c for c in TORCH_DIFF_CASES if c.op in TORCH_ROUNDS_THROUGH_F32]


@pytest.mark.parametrize("case", F32_ROUNDED_CASES, ids=ids(F32_ROUNDED_CASES))
def test_tangent_is_exact_where_torch_rounds_through_float32(case: Case, torch) -> None:
    """pullback's tangent is the float64 derivative where torch's is not (and torch's
    still is not: else TORCH_ROUNDS_THROUGH_F32 is to go)."""
    values = case.inputs(np.float64)
    (d,) = _directions(case, values)
    exact = _EXACT_DERIVATIVE[case.op](values[0], **case.params) * d
    for how, got in [("eager", _eager_tangents(case, values, [d])),
                     ("pb.jvp", _jvp_tangents(case, values, [d]))]:
        np.testing.assert_allclose(got[0], exact, rtol=1e-14, atol=0, err_msg=how)
    (want,) = _torch_tangents(torch, case, values, [d])
    assert not np.allclose(want, exact, **TORCH_TOL)


def _pb_gradients(case: Case, values: list, ws: list) -> list:
    ts = [pb.tensor(v, requires_grad=i in case.grad_argnums) for i, v in enumerate(values)]
    outs = float_outputs(case.fn(*ts))
    wanted = [ts[i] for i in case.grad_argnums]
    gs = pb.autograd.grad(outs, wanted, grad_outputs=[pb.tensor(w) for w in ws],
                          allow_unused=True)
    return [np.zeros(np.shape(t.numpy())) if g is None else g.numpy() for g, t in zip(gs, wanted)]


def _real_dot(a, b) -> float:
    return float(np.real(np.sum(np.conj(np.asarray(a)) * np.asarray(b))))


@pytest.mark.parametrize("case", DIFF_CASES, ids=ids(DIFF_CASES))
def test_tangent_is_the_transpose_of_the_gradient(case: Case) -> None:
    """<w, J t> = <J^T w, t> for every case, kinks, ties and NaNs included: forward
    mode agrees with pullback's (torch's) backward wherever a gradient is defined."""
    values = case.inputs(np.float64)
    dirs = _directions(case, values)
    tangents = _eager_tangents(case, values, dirs)
    rng = np.random.default_rng(3)
    ws = [rng.standard_normal(np.shape(t)) + (1j * rng.standard_normal(np.shape(t))
                                              if np.iscomplexobj(t) else 0) for t in tangents]
    grads = _pb_gradients(case, values, ws)
    lhs = sum(_real_dot(w, t) for w, t in zip(ws, tangents))
    rhs = sum(_real_dot(g, d) for g, d in zip(grads, dirs))
    if all(np.size(d) == 0 for d in dirs):  # no direction to move in: J^T w is empty
        assert rhs == 0
        return
    if _nll_mean_of_nothing(case):  # a NaN tangent, a zero gradient: as torch's
        assert np.isnan(lhs) and rhs == 0
        return
    if np.isnan(lhs) or np.isnan(rhs):  # a NaN tangent goes with a NaN gradient
        assert np.isnan(lhs) and np.isnan(rhs)
        return
    np.testing.assert_allclose(lhs, rhs, rtol=1e-9, atol=1e-9)
