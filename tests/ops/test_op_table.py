"""Every op in the op table against torch and finite differences, case by case
(the cases live in ops/cases.py)."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb
from pullback.autograd import record
from pullback.ops import OPS
from pullback.ops.sampling import manual_seed
from pullback.ops.table.registry import Meta
from pullback.ops.table.results import AllInputs, pack

from . import numeric_grad
from .case_types import float_outputs, is_float, outputs
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


def _weights(case: Case, result, dtype) -> list:
    """One weight array per float output of ``result`` (the op's result, or torch's)."""
    rng = np.random.default_rng(len(case.id))
    return [rng.standard_normal(tuple(o.shape)).astype(dtype) for o in float_outputs(result)]


def _weighted(result, ws: list) -> float:
    """sum_k(w_k * out_k), its real part for complex outputs (the loss torch's
    convention differentiates)."""
    return float(np.real(sum(np.sum(w * np.asarray(o))
                             for o, w in zip(float_outputs(result), ws))))


def _pb_vjp(case: Case, values: list, ws: list, create_graph: bool = False) -> list:
    """Gradients of sum_k(w_k * out_k) over the op's float outputs, for the
    differentiable inputs (zeros if unused)."""
    ts = _pb_inputs(case, values)
    outs = float_outputs(case.fn(*ts))
    wanted = [ts[i] for i in case.grad_argnums]
    seeds = [pb.tensor(w.astype(o.numpy(force=True).dtype)) for o, w in zip(outs, ws)]
    gs = pb.autograd.grad(outs, wanted, grad_outputs=seeds, create_graph=create_graph,
                          allow_unused=True)
    return ts, [pb.zeros_like(t) if g is None else g for g, t in zip(gs, wanted)]


def _numeric_wirtinger(loss, x: np.ndarray) -> np.ndarray:
    """Finite differences of a real ``loss`` at ``x``; for a complex ``x``, torch's
    convention: dL/dRe(x) + i dL/dIm(x)."""
    if not np.iscomplexobj(x):
        return numeric_grad(loss, x)
    return (numeric_grad(lambda re: loss(re + 1j * x.imag), x.real)
            + 1j * numeric_grad(lambda im: loss(x.real + 1j * im), x.imag))


def _with(values: list, i: int, v: np.ndarray) -> list:
    return values[:i] + [v] + values[i + 1:]


# --------------------------------------------------------------------- (a) forward values
TORCH_CASES = [c for c in CASES if c.torch is not None]
NUMPY_CASES = [c for c in CASES if c.torch is None]


@pytest.mark.parametrize("case", TORCH_CASES, ids=ids(TORCH_CASES))
def test_forward_matches_torch(case: Case, torch) -> None:
    values = case.inputs(np.float32)
    result = case.fn(*_pb_inputs(case, values))
    torch_result = case.torch(torch, *_torch_inputs(torch, case, values))
    assert len(outputs(result)) == len(outputs(torch_result))
    for out, expected in zip(outputs(result), outputs(torch_result)):
        assert isinstance(out, pb.Tensor)
        assert out.shape == tuple(expected.shape)
        assert out.dtype.name == str(expected.dtype).removeprefix("torch.")
        assert out.requires_grad == expected.requires_grad
        assert out.output_nr == expected.output_nr
        np.testing.assert_allclose(out.numpy(force=True), expected.detach().numpy(), **F32)


@pytest.mark.parametrize("case", NUMPY_CASES, ids=ids(NUMPY_CASES))
def test_forward_matches_numpy_reference(case: Case) -> None:
    """Ops torch cannot reproduce (its generator is not numpy's): numpy's values."""
    values = case.inputs(np.float32)
    out = record.apply(OPS[case.op], tuple(case.full_args(_pb_inputs(case, values))),
                       case.params) if case.rng_seed is None else _seeded_apply(case, values)
    expected = outputs(case.reference(*values))
    assert len(outputs(out)) == len(expected)
    for o, e in zip(outputs(out), expected):  # (random draws, integers never require grad)
        assert isinstance(o, pb.Tensor)
        assert o.requires_grad == (case.differentiable and is_float(o))
        assert o.numpy(force=True).dtype == e.dtype
        np.testing.assert_array_equal(o.numpy(force=True), e)


def _seeded_apply(case: Case, values: list):
    manual_seed(case.rng_seed)
    return record.apply(OPS[case.op], tuple(case.full_args(_pb_inputs(case, values))),
                        case.params)


# ---------------------------------------------------------------- (b) first-order gradients
@pytest.mark.parametrize("case", FD_CASES, ids=ids(FD_CASES))
def test_grad_matches_finite_differences(case: Case) -> None:
    values = case.inputs(np.float64)
    ws = _weights(case, case.fn(*values), np.float64)
    _, grads = _pb_vjp(case, values, ws)
    for i, g in zip(case.grad_argnums, grads):
        x = values[i]
        assert g.shape == np.shape(x) and g.dtype.name == x.dtype.name

        def loss(v, i=i):
            return _weighted(case.fn(*_with(values, i, v)), ws)
        np.testing.assert_allclose(g.numpy(), _numeric_wirtinger(loss, x), **F64_FD,
                                   err_msg=f"input {i}")


# (a few ops' outputs are determined up to signs that are LAPACK's choice: svd's singular
# vectors, eigh's eigenvectors; their cases check against numpy and finite differences)
TORCH_DIFF_CASES = [c for c in DIFF_CASES if c.torch is not None]


@pytest.mark.parametrize("case", TORCH_DIFF_CASES, ids=ids(TORCH_DIFF_CASES))
def test_grad_matches_torch(case: Case, torch) -> None:
    values = case.inputs(np.float32)
    tin = _torch_inputs(torch, case, values)
    touts = float_outputs(case.torch(torch, *tin))
    ws = _weights(case, touts, np.float32)
    _, grads = _pb_vjp(case, values, ws)
    wanted = [tin[i] for i in case.grad_argnums]
    expected = torch.autograd.grad(touts, wanted, [torch.from_numpy(w).to(o.dtype)
                                                   for o, w in zip(touts, ws)],
                                   allow_unused=True)
    for i, g, e, t in zip(case.grad_argnums, grads, expected, wanted):
        e = torch.zeros_like(t) if e is None else e
        assert g.dtype.name == str(e.dtype).removeprefix("torch.")
        np.testing.assert_allclose(g.numpy(), e.numpy(), **F32_GRAD, err_msg=f"input {i}")


# ------------------------------------------------------------------------- (c) node names
NAMED = [c for c in TORCH_DIFF_CASES if c.torch_name]


@pytest.mark.parametrize("case", NAMED, ids=ids(NAMED))
def test_grad_fn_name_matches_torch(case: Case, torch) -> None:
    values = case.inputs(np.float32)
    out = float_outputs(case.fn(*_pb_inputs(case, values)))[0]
    expected = float_outputs(case.torch(torch, *_torch_inputs(torch, case, values)))[0]
    assert type(out.grad_fn).__name__ == type(expected.grad_fn).__name__
    assert OPS[case.op].grad_fn == type(expected.grad_fn).__name__


# ------------------------------------------------------------------- (d) declared uses
def _call_rule(op, i: int, g, out, args: list, params: dict):
    if op.variadic:
        return op.vjp[0](g, out, tuple(args), i, **params)
    return op.vjp[i](g, out, *args, **params)


def _kept_out(op, out, keep: frozenset):
    """The op's result as a node that saved what ``keep`` names passes it (else Meta)."""
    if not op.multi:
        return out if "out" in keep else None
    return pack(op.result, [o if "out" in keep or ("out", k) in keep else
                            Meta(np.shape(o), np.asarray(o).dtype) for k, o in enumerate(out)])


def _run_rule(case: Case, i: int, values: list, out, g, keep: frozenset):
    """Rule ``i`` with what ``keep`` names as data and the rest as Meta (out: None),
    as the runtime passes what a node did not save."""
    op = OPS[case.op]
    args = list(case.full_args(values))
    for j, a in enumerate(args):
        if isinstance(a, np.ndarray) and j not in keep:
            args[j] = Meta(a.shape, a.dtype)
    return _call_rule(op, i, g, _kept_out(op, out, keep), args, case.params)


def _rule_inputs(case: Case):
    values = case.inputs(np.float64)
    out = case.fn(*values)
    op = OPS[case.op]
    ws = _weights(case, out, np.float64)
    if op.multi:  # the outputs' gradients: a weight per float output, None for the rest
        it = iter(ws)
        g = pack(op.result, [next(it) if np.asarray(o).dtype.kind in "fc" else None
                             for o in out])
    else:
        g = ws[0]
    arg_pos = [j for j, a in enumerate(case.args) if isinstance(a, Arg)]
    rules = [(arg_pos[k], op.vjp[0 if op.variadic else arg_pos[k]]) for k in case.grad_argnums]
    return values, out, g, [(i, r) for i, r in rules if r is not None]


@pytest.mark.parametrize("case", DIFF_CASES, ids=ids(DIFF_CASES))
def test_rules_read_only_what_uses_declares(case: Case) -> None:
    values, out, g, rules = _rule_inputs(case)
    op = OPS[case.op]
    for i, _ in rules:
        everything = AllInputs({"out"} | {("out", k) for k in range(len(outputs(out)))})
        full = _run_rule(case, i, values, out, g, everything)
        declared = _run_rule(case, i, values, out, g, op.rule_uses(i))
        np.testing.assert_array_equal(np.asarray(declared), np.asarray(full),
                                      err_msg=f"rule {i}")


def _claims(uses: frozenset) -> list:
    """What a uses entry declares: its members, and '*' for a variadic op's whole list."""
    return list(uses) + (["*"] if isinstance(uses, AllInputs) else [])


def _without(uses: frozenset, u) -> frozenset:
    return frozenset(uses) if u == "*" else uses - {u}


DIFF_OPS = sorted({c.op for c in DIFF_CASES})


@pytest.mark.parametrize("name", DIFF_OPS)
def test_uses_declares_nothing_unread(name: str) -> None:
    """Each value a rule declares is read: for some case of the op, the rule fails or
    changes its result without it (torch saves exactly what the formula reads)."""
    op = OPS[name]
    unread = {(0 if op.variadic else i, u) for i in range(len(op.uses))
              for u in _claims(op.uses[i])}
    for case in (c for c in DIFF_CASES if c.op == name):
        values, out, g, rules = _rule_inputs(case)
        args = case.full_args(values)
        for i, _ in rules:
            uses = op.rule_uses(i)
            full = _run_rule(case, i, values, out, g, uses)
            for u in _claims(uses):
                if type(u) is int and not isinstance(args[u], np.ndarray):
                    continue  # a constant here: always kept
                try:
                    less = _run_rule(case, i, values, out, g, _without(uses, u))
                except (TypeError, AttributeError):
                    unread.discard((0 if op.variadic else i, u))
                    continue
                if not np.array_equal(np.asarray(less), np.asarray(full)):
                    unread.discard((0 if op.variadic else i, u))
    assert not unread, f"(rule, value) pairs {name}'s uses declares but no case reads"


# ---------------------------------------------------------------------- (e) second order
@pytest.mark.parametrize("case", SECOND_ORDER_CASES, ids=ids(SECOND_ORDER_CASES))
def test_second_order_matches_finite_differences(case: Case) -> None:
    values = case.inputs(np.float64)
    w = _weights(case, case.fn(*values), np.float64)
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


# ops whose rule raises torch's "derivative ... is not implemented" (torch computes the
# values and refuses the backward; tests/nn/test_torch_names.py checks the refusal)
NO_DERIVATIVE = {"scatter_reduced", "floor_divide"}


def test_every_differentiable_op_has_a_gradient_case() -> None:
    checked = {c.op for c in FD_CASES} | NO_DERIVATIVE
    missing = sorted(n for n, op in OPS.items() if op.differentiable and n not in checked)
    assert not missing, f"differentiable ops without a finite-difference case: {missing}"
