"""torch's type promotion in the elementwise ops that combine operands, against torch:
eagerly, in place, under pb.compile (the generated code casts) and in the gradients'
dtypes. A dimensioned tensor's dtype beats a 0-d tensor's of the same category, Python
numbers do not upcast, integers with floats give the float type, true division of
integers gives the default float dtype (ops/table/promotion.py)."""

from __future__ import annotations

import itertools
from functools import partial

import numpy as np
import pytest

import pullback as pb

# a False operand divides by zero on purpose
pytestmark = [pytest.mark.filterwarnings("ignore:divide by zero encountered:RuntimeWarning"),
              pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")]

OPERANDS = {
    "f32[2]": np.array([1.5, 2.0], np.float32),
    "f64[2]": np.array([1.25, 0.5]),
    "f16[2]": np.array([0.5, 1.0], np.float16),
    "i64[2]": np.array([1, 3]),
    "i32[2]": np.array([2, 1], np.int32),
    "b[2]": np.array([True, False]),
    "f64[]": np.array(0.75),
    "f32[]": np.array(1.25, np.float32),
    "i64[]": np.array(2),
    "2.5": 2.5,
    "3": 3,
}
OPS = {
    "add": lambda m, a, b: a + b,
    "sub": lambda m, a, b: m.sub(a, b),
    "rsub": lambda m, a, b: 1.5 - b + a * 0,
    "mul": lambda m, a, b: m.mul(a, b),
    "div": lambda m, a, b: a / b,
    "pow": lambda m, a, b: m.pow(a, b),
    "maximum": lambda m, a, b: m.maximum(a, b),
    "where": lambda m, a, b: m.where(m.tensor([True, False]), a, b),
}
PAIRS = [(a, b) for a, b in itertools.product(OPERANDS, repeat=2)
         if isinstance(OPERANDS[a], np.ndarray) or isinstance(OPERANDS[b], np.ndarray)]


def _args(m, names):
    return [m.tensor(OPERANDS[n]) if isinstance(OPERANDS[n], np.ndarray) else OPERANDS[n]
            for n in names]


def _dtype(call):
    """The result's dtype name, or the exception's type name."""
    try:
        return str(call().dtype).rsplit(".", 1)[-1]
    except Exception as e:  # noqa: BLE001
        return type(e).__name__


def _compiled(fn, names):
    """``fn`` on these operands under pb.compile: the tensors are its arguments, the
    Python numbers constants."""
    args = _args(pb, names)

    def f(*tensors):
        it = iter(tensors)
        return fn(pb, *[next(it) if isinstance(a, pb.Tensor) else a for a in args])
    return lambda: pb.compile(f)(*[a for a in args if isinstance(a, pb.Tensor)])


@pytest.mark.parametrize("op", list(OPS))
def test_result_dtype_matches_torch_eager_and_compiled(op, torch):
    fn = OPS[op]
    bad = []
    for names in PAIRS:
        if op == "maximum" and not all(isinstance(OPERANDS[n], np.ndarray) for n in names):
            continue  # torch.maximum takes tensors only
        want = _dtype(partial(fn, torch, *_args(torch, names)))
        if want.endswith("Error"):
            continue  # (bool - bool and the like: the error types differ from numpy's)
        got = _dtype(partial(fn, pb, *_args(pb, names)))
        got_compiled = _dtype(_compiled(fn, names))
        if (got, got_compiled) != (want, want):
            bad.append((names, want, got, got_compiled))
    assert not bad, f"(operands, torch, eager, compiled): {bad}"


FLOATS = ["f32[2]", "f64[2]", "f64[]", "f32[]"]


@pytest.mark.parametrize("names", list(itertools.product(FLOATS, repeat=2)))
def test_values_and_gradient_dtypes_match_torch(names, torch):
    """The values (computed in the common dtype) and each gradient in its input's dtype,
    eagerly and compiled."""
    def run(m, call):
        xs = [m.tensor(OPERANDS[n], requires_grad=True) for n in names]
        out = call(*xs)
        (out * out).sum().backward()
        return out.detach().numpy(), [x.grad.numpy() for x in xs]

    want, want_grads = run(torch, lambda a, b: a * b + b / a)
    for call in (lambda a, b: a * b + b / a, pb.compile(lambda a, b: a * b + b / a)):
        got, grads = run(pb, call)
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-6)
        for g, w in zip(grads, want_grads):
            assert g.dtype == w.dtype
            np.testing.assert_allclose(g, w, rtol=1e-5)


@pytest.mark.parametrize("target, operand", [
    ("f32[2]", "f64[]"), ("f32[2]", "f64[2]"), ("f32[]", "f64[]"), ("i64[2]", "2.5"),
    ("i32[2]", "i64[]"), ("f16[2]", "f64[]"), ("i64[2]", "f64[]")])
def test_in_place_result_and_errors_match_torch(target, operand, both_libs):
    """In place, the common dtype is computed and cast to the target's (or refused with
    torch's message when it cannot be), eagerly and compiled."""
    def run(m, compile_it=False):
        def f(t, o):
            y = t * 1
            y.add_(o) if not isinstance(o, float) else y.mul_(o)
            return y
        args = _args(m, (target, operand))
        if compile_it:
            return pb.compile(lambda t: f(t, args[1]))(args[0])
        return f(*args)
    both_libs(run)


@pytest.fixture
def both_libs(torch):
    """Run ``run(m)`` with torch and pullback (eager and compiled): the same values and
    dtype, or the same error."""
    def check(run):
        def outcome(call):
            try:
                out = call()
            except Exception as e:  # noqa: BLE001
                return type(e).__name__, str(e)
            return str(out.dtype).rsplit(".", 1)[-1], out.numpy().tolist()
        want = outcome(lambda: run(torch))
        assert outcome(lambda: run(pb)) == want
        if not want[0].endswith("Error"):
            assert outcome(lambda: run(pb, compile_it=True)) == want
    return check
