"""Every op-table case under ``pb.vmap``, against a Python loop over the batch: batched
in axis 0 on plain arrays (generated code), and batched in the first input's last axis
on Tensors that require grad (the ops run eagerly, recording autograd)."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb
from pullback.ops import OPS

from .case_types import outputs
from .cases import CASES, ids

pytestmark = [pytest.mark.filterwarnings("ignore:vmap. there is no batching rule"),
              pytest.mark.filterwarnings("ignore::RuntimeWarning")]

BATCH = 2
# draws: vmap refuses them by default (tests/compiler/test_vmap.py covers randomness)
VMAP_CASES = [c for c in CASES if OPS[c.op].pure and c.rng_seed is None
              and not OPS[c.op].shape_from_data]


def _batch(case, values: list, axis: int) -> list:
    """``BATCH`` examples of each input (the case's values, then others), stacked in
    ``axis``."""
    more = case.inputs(seed=7)
    return [np.stack([v, w], axis=axis % (np.ndim(v) + 1)) for v, w in zip(values, more)]


def _loop(case, batched: list, axes: list) -> list:
    """The op once per example, each output stacked in axis 0."""
    per = [outputs(case.fn(*[b if ax is None else np.take(b, i, axis=ax)
                             for b, ax in zip(batched, axes)])) for i in range(BATCH)]
    return [np.stack([np.asarray(p[k]) for p in per]) for k in range(len(per[0]))]


def _check(got, want: list) -> None:
    got = outputs(got)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g = np.asarray(g._data if isinstance(g, pb.Tensor) else g)
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12, equal_nan=True)


@pytest.mark.parametrize("case", VMAP_CASES, ids=ids(VMAP_CASES))
def test_vmap_matches_a_loop(case) -> None:
    values = case.inputs()
    if not values:
        pytest.skip("no tensor input")
    f = lambda *xs: case.fn(*xs)  # noqa: E731
    # every input batched in axis 0, plain arrays: generated code over the batch
    batched = _batch(case, values, 0)
    _check(pb.vmap(f)(*batched), _loop(case, batched, [0] * len(batched)))
    # the first input batched in its last axis, the others not, on Tensors: eager ops
    first = _batch(case, values[:1], -1)[0]
    axes = [np.ndim(first) - 1] + [None] * (len(values) - 1)
    ts = [pb.tensor(v, requires_grad=spec.differentiable and v.dtype.kind == "f")
          for v, spec in zip([first] + values[1:], case.arg_specs)]
    want = _loop(case, [first] + values[1:], axes)
    _check(pb.vmap(f, in_axes=tuple(axes))(*ts), want)


@pytest.mark.parametrize("program", [
    lambda a, v: np.stack([a, 2 * a]) @ v,            # batched matrices @ a constant vector
    lambda a, v: np.stack([a, a.T]) @ v[:, None],      # ... @ a constant matrix
    lambda a, v: v @ np.stack([a, a.T]),                # a constant vector @ them
    lambda a, v: np.matvec(np.stack([a, a.T]), v)])
def test_products_of_a_batch_and_a_lower_rank_constant(program) -> None:
    """bmm's batching rule viewed an unbatched operand as a batch without aligning its
    leading axes: with 4 examples of 2 stacked matrices, (4,2,3,3) @ (4,3,1) failed to
    broadcast (with 2 examples it broadcast by chance)."""
    rng = np.random.default_rng(5)
    xs, v = rng.standard_normal((4, 3, 3)), rng.standard_normal(3)
    got = pb.vmap(program, in_axes=(0, None))(xs, v)
    np.testing.assert_allclose(got, np.stack([program(a, v) for a in xs]), rtol=1e-12)
