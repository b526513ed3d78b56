"""Every differentiable case of the op table, run eagerly, through pb.compile and
through pb.grad: the gradients of a weighted sum of the output agree."""

import numpy as np
import pytest
from ops.case_types import float_outputs
from ops.cases import CASES

import pullback as pb
from pullback.ops import OPS

# (an op whose result's shape depends on the data runs eagerly only: the tracer refuses it)
SHAPE_FROM_DATA = sorted(name for name, op in OPS.items() if op.shape_from_data)
DIFF = [c for c in CASES if c.differentiable and c.rng_seed is None
        and c.op not in SHAPE_FROM_DATA]

# the kink cases evaluate log, sqrt and powers at 0 on purpose (as tests/ops does)
pytestmark = [pytest.mark.filterwarnings("ignore:divide by zero encountered:RuntimeWarning"),
              pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")]


def _loss(case, weights):
    def loss(*values):
        total = 0.0
        for out, w in zip(float_outputs(case.fn(*values)), weights):
            total = total + ((out.real if out.dtype.is_complex else out) * w).sum()
        return total
    return loss


@pytest.mark.parametrize("case", DIFF, ids=[c.id for c in DIFF])
def test_compiled_and_grad_match_eager(case):
    values = case.inputs(np.float64, seed=0)
    rng = np.random.default_rng(1)
    weights = [rng.standard_normal(np.shape(o)) for o in float_outputs(case.fn(*values))]
    loss = _loss(case, weights)
    nums = case.grad_argnums

    def eager_grads(fn):
        ts = [pb.tensor(v, requires_grad=i in nums) if v.dtype.kind in "fc" else pb.tensor(v)
              for i, v in enumerate(values)]
        fn(*ts).backward()
        return [ts[i].grad.numpy() for i in nums]

    want = eager_grads(loss)
    compiled = pb.compile(loss)
    for _ in range(2):  # trace, then generated code
        got = eager_grads(compiled)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)
    # (Tensors: the cases are written with torch's names, which ndarrays get only on the
    # numpy face)
    grads = pb.grad(loss, argnums=tuple(nums))(*[pb.tensor(v) for v in values])
    for g, w in zip(grads, want):
        np.testing.assert_allclose(g.numpy(), w, rtol=1e-10, atol=1e-12)


def test_the_ops_whose_shape_depends_on_the_data_say_so():
    assert SHAPE_FROM_DATA == ["masked_select", "nonzero"]  # (defop(..., shape_from_data=True))


@pytest.mark.parametrize("name", SHAPE_FROM_DATA)
def test_ops_whose_shape_depends_on_the_data_are_refused(name):
    case = next(c for c in CASES if c.op == name)
    values = [pb.tensor(v) for v in case.inputs(np.float64, seed=0)]
    for wrap in (pb.compile, pb.grad):
        with pytest.raises(pb.compiler.TraceError, match=rf"{name}\(\).*depends on the data"):
            wrap(lambda *v: case.fn(*v).sum() * 1.0)(*values)
