"""Every op in the op table against torch and finite differences, case by case
(the cases live in ops/cases.py)."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb
from pullback.autograd import record
from pullback.ops import OPS
from pullback.ops.registry import Meta
from pullback.ops.sampling import manual_seed

from . import numeric_grad
from .cases import CASES, DIFF_CASES, FD_CASES, SECOND_ORDER_CASES, Arg, Case, ids

# the kink cases evaluate log, sqrt and x ** 0.5 at 0 on purpose
pytestmark = [pytest.mark.filterwarnings("ignore:divide by zero encountered:RuntimeWarning"),
              pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")]

F32 = dict(rtol=2e-5, atol=2e-6)
F32_GRAD = dict(rtol=1e-4, atol=1e-5)
F64_FD = dict(rtol=1e-5, atol=1e-7)


# ------------------------------------------------------------------------------ helpers
def _pb_inputs(case: Case, values: list) -> list:
    return [pb.tensor(v, requires_grad=spec.differentiable)
            for spec, v in zip(case.arg_specs, values)]


def _torch_inputs(T, case: Case, values: list) -> list:
    out = []
    for spec, v in zip(case.arg_specs, values):
        t = T.from_numpy(np.array(v))
        out.append(t.requires_grad_(spec.differentiable))
    return out


def _weights(case: Case, shape: tuple, dtype) -> np.ndarray:
    return np.random.default_rng(len(case.id)).standard_normal(shape).astype(dtype)


def _pb_vjp(case: Case, values: list, w: np.ndarray, create_graph: bool = False) -> list:
    """Gradients of sum(w * op(values)) for the differentiable inputs (zeros if unused)."""
    ts = _pb_inputs(case, values)
    out = case.fn(*ts)
    wanted = [ts[i] for i in case.grad_argnums]
    gs = pb.autograd.grad(out, wanted, grad_outputs=pb.tensor(w.astype(out.numpy(
        force=True).dtype)), create_graph=create_graph, allow_unused=True)
    return ts, [pb.zeros_like(t) if g is None else g for g, t in zip(gs, wanted)]


def _with(values: list, i: int, v: np.ndarray) -> list:
    return values[:i] + [v] + values[i + 1:]


# --------------------------------------------------------------------- (a) forward values
TORCH_CASES = [c for c in CASES if c.torch is not None]
NUMPY_CASES = [c for c in CASES if c.torch is None]


@pytest.mark.parametrize("case", TORCH_CASES, ids=ids(TORCH_CASES))
def test_forward_matches_torch(case: Case, torch) -> None:
    values = case.inputs(np.float32)
    out = case.fn(*_pb_inputs(case, values))
    expected = case.torch(torch, *_torch_inputs(torch, case, values))
    assert isinstance(out, pb.Tensor)
    assert out.shape == tuple(expected.shape)
    assert out.dtype.name == str(expected.dtype).removeprefix("torch.")
    assert out.requires_grad == expected.requires_grad
    np.testing.assert_allclose(out.numpy(force=True), expected.detach().numpy(), **F32)


@pytest.mark.parametrize("case", NUMPY_CASES, ids=ids(NUMPY_CASES))
def test_forward_matches_numpy_reference(case: Case) -> None:
    """Ops torch cannot reproduce (its generator is not numpy's): numpy's values."""
    values = case.inputs(np.float32)
    out = record.apply(OPS[case.op], tuple(case.full_args(_pb_inputs(case, values))),
                       case.params) if case.rng_seed is None else _seeded_apply(case)
    expected = case.reference(*values)
    assert isinstance(out, pb.Tensor) and not out.requires_grad
    assert out.numpy().dtype == expected.dtype
    np.testing.assert_array_equal(out.numpy(), expected)


def _seeded_apply(case: Case):
    manual_seed(case.rng_seed)
    return record.apply(OPS[case.op], tuple(case.args), case.params)


# ---------------------------------------------------------------- (b) first-order gradients
@pytest.mark.parametrize("case", FD_CASES, ids=ids(FD_CASES))
def test_grad_matches_finite_differences(case: Case) -> None:
    values = case.inputs(np.float64)
    out = case.fn(*values)
    w = _weights(case, np.shape(out), np.float64)
    _, grads = _pb_vjp(case, values, w)
    for i, g in zip(case.grad_argnums, grads):
        assert g.shape == np.shape(values[i]) and g.dtype == pb.float64

        def loss(v, i=i):
            return float(np.sum(w * case.fn(*_with(values, i, v))))
        np.testing.assert_allclose(g.numpy(), numeric_grad(loss, values[i]), **F64_FD,
                                   err_msg=f"input {i}")


@pytest.mark.parametrize("case", DIFF_CASES, ids=ids(DIFF_CASES))
def test_grad_matches_torch(case: Case, torch) -> None:
    values = case.inputs(np.float32)
    tin = _torch_inputs(torch, case, values)
    tout = case.torch(torch, *tin)
    w = _weights(case, tuple(tout.shape), np.float32)
    _, grads = _pb_vjp(case, values, w)
    wanted = [tin[i] for i in case.grad_argnums]
    expected = torch.autograd.grad(tout, wanted, torch.from_numpy(w).to(tout.dtype),
                                   allow_unused=True)
    for i, g, e, t in zip(case.grad_argnums, grads, expected, wanted):
        e = torch.zeros_like(t) if e is None else e
        assert g.dtype.name == str(e.dtype).removeprefix("torch.")
        np.testing.assert_allclose(g.numpy(), e.numpy(), **F32_GRAD, err_msg=f"input {i}")


# ------------------------------------------------------------------------- (c) node names
NAMED = [c for c in DIFF_CASES if c.torch_name]


@pytest.mark.parametrize("case", NAMED, ids=ids(NAMED))
def test_grad_fn_name_matches_torch(case: Case, torch) -> None:
    values = case.inputs(np.float32)
    out = case.fn(*_pb_inputs(case, values))
    expected = case.torch(torch, *_torch_inputs(torch, case, values))
    assert type(out.grad_fn).__name__ == type(expected.grad_fn).__name__
    assert OPS[case.op].grad_fn == type(expected.grad_fn).__name__


# ------------------------------------------------------------------- (d) declared uses
def _run_rule(case: Case, i: int, values: list, out, g, keep: frozenset):
    """Rule ``i`` with what ``keep`` names as data and the rest as Meta (out: None),
    as the runtime passes what a node did not save."""
    op = OPS[case.op]
    args = list(case.full_args(values))
    for j, a in enumerate(args):
        if isinstance(a, np.ndarray) and j not in keep:
            args[j] = Meta(a.shape, a.dtype)
    return op.vjp[i](g, out if "out" in keep else None, *args, **case.params)


def _rule_inputs(case: Case):
    values = case.inputs(np.float64)
    out = case.fn(*values)
    g = _weights(case, np.shape(out), np.float64)
    arg_pos = [j for j, a in enumerate(case.args) if isinstance(a, Arg)]
    rules = [(arg_pos[k], OPS[case.op].vjp[arg_pos[k]]) for k in case.grad_argnums]
    return values, out, g, [(i, r) for i, r in rules if r is not None]


@pytest.mark.parametrize("case", DIFF_CASES, ids=ids(DIFF_CASES))
def test_rules_read_only_what_uses_declares(case: Case) -> None:
    values, out, g, rules = _rule_inputs(case)
    op = OPS[case.op]
    for i, _ in rules:
        everything = frozenset(range(len(case.args))) | {"out"}
        full = _run_rule(case, i, values, out, g, everything)
        declared = _run_rule(case, i, values, out, g, op.uses[i])
        np.testing.assert_array_equal(np.asarray(declared), np.asarray(full),
                                      err_msg=f"rule {i}")


DIFF_OPS = sorted({c.op for c in DIFF_CASES})


@pytest.mark.parametrize("name", DIFF_OPS)
def test_uses_declares_nothing_unread(name: str) -> None:
    """Each value a rule declares is read: for some case of the op, the rule fails or
    changes its result without it (torch saves exactly what the formula reads)."""
    op = OPS[name]
    unread = {(i, u) for i, uses in enumerate(op.uses) for u in uses}
    for case in (c for c in DIFF_CASES if c.op == name):
        values, out, g, rules = _rule_inputs(case)
        args = case.full_args(values)
        for i, _ in rules:
            full = _run_rule(case, i, values, out, g, op.uses[i])
            for u in op.uses[i]:
                if u != "out" and not isinstance(args[u], np.ndarray):
                    continue  # a constant here: always kept
                try:
                    less = _run_rule(case, i, values, out, g, op.uses[i] - {u})
                except (TypeError, AttributeError):
                    unread.discard((i, u))
                    continue
                if not np.array_equal(np.asarray(less), np.asarray(full)):
                    unread.discard((i, u))
    assert not unread, f"(rule, value) pairs {name}'s uses declares but no case reads"


# ---------------------------------------------------------------------- (e) second order
@pytest.mark.parametrize("case", SECOND_ORDER_CASES, ids=ids(SECOND_ORDER_CASES))
def test_second_order_matches_finite_differences(case: Case) -> None:
    values = case.inputs(np.float64)
    w = _weights(case, np.shape(case.fn(*values)), np.float64)
    rng = np.random.default_rng(1)
    vs = [rng.standard_normal(np.shape(values[i])) for i in case.grad_argnums]

    def grad_dot_v(vals) -> float:
        _, gs = _pb_vjp(case, vals, w)
        return float(sum(np.sum(g.numpy() * v) for g, v in zip(gs, vs)))

    ts, grads = _pb_vjp(case, values, w, create_graph=True)
    s = sum((g * pb.tensor(v)).sum() for g, v in zip(grads, vs))
    wanted = [ts[i] for i in case.grad_argnums]
    if s.requires_grad:
        second = pb.autograd.grad(s, wanted, allow_unused=True)
    else:
        second = (None,) * len(wanted)
    for i, h in zip(case.grad_argnums, second):
        h = np.zeros(np.shape(values[i])) if h is None else h.numpy(force=True)
        expected = numeric_grad(lambda x, i=i: grad_dot_v(_with(values, i, x)), values[i])
        np.testing.assert_allclose(h, expected, rtol=1e-5, atol=1e-6, err_msg=f"input {i}")


# ------------------------------------------------------------------------------ coverage
def test_every_op_has_a_case() -> None:
    missing = sorted(set(OPS) - {c.op for c in CASES})
    assert not missing, f"ops without a case in tests/ops/cases.py: {missing}"


def test_every_differentiable_op_has_a_gradient_case() -> None:
    checked = {c.op for c in FD_CASES}
    missing = sorted(n for n, op in OPS.items() if op.differentiable and n not in checked)
    assert not missing, f"differentiable ops without a finite-difference case: {missing}"
