"""The public functions over the list-taking and multi-output ops (cat, stack, split,
chunk, unbind, tensor_split, sort, topk, max/min along a dim, meshgrid, einsum): values
and gradients of every output against torch, eager, under pb.compile and under
pb.grad, with negative dims, size-0 and size-1 dims; torch's errors, and numpy's
spellings against numpy (the primitives' cases live in ops/cases_multi.py)."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb

from . import raised
from .case_types import float_outputs, outputs

A23 = np.arange(6, dtype=np.float32).reshape(2, 3) / 5 - 0.4
A21 = np.array([[0.5], [-1.5]], np.float32)
A234 = (np.arange(24, dtype=np.float32).reshape(2, 3, 4) * 7 % 24) / 8 - 1.3
V5 = np.array([0.3, -1.2, 2.5, 0.7, -0.1], np.float32)
V3 = V5[:3].copy()
S0 = np.array(0.75, np.float32)
E03 = np.zeros((0, 3), np.float32)
E0 = np.zeros((0,), np.float32)

# (expression on (module, *tensors) -> a tensor or a tuple of them, inputs)
CALLS = {
    "cat(-1)": (lambda m, a, b: m.cat([a, b], -1), [A23, A21]),
    "cat((a, b), dim=0)": (lambda m, a, b: m.cat((a, b.T), dim=0), [A23, A23.T.copy()]),
    "cat(axis=1)": (lambda m, a, b: m.cat([a, b], axis=1), [A23, A21]),
    "concat": (lambda m, a, b: m.concat([a, a * 2, b], 1), [A23, A21]),
    "concatenate(axis=-2)": (lambda m, a: m.concatenate([a, a], axis=-2), [A23]),
    "cat of one": (lambda m, a: m.cat([a]), [A23]),
    "cat with size 0": (lambda m, a, e: m.cat([e, a], 0), [A23, E03[:, :3]]),
    "cat with a 1-d empty": (lambda m, a, e: m.cat([e, a, e], 1), [A23, E0]),
    "stack(-1)": (lambda m, a, b: m.stack([a, b], -1), [A23, A23 * 2]),
    "stack of 0-d": (lambda m, a, b: m.stack([a, b]), [S0, np.array(-0.5, np.float32)]),
    "stack of (0, 3)": (lambda m, a: m.stack([a, a], 1), [E03]),
    "hstack of 1-d": (lambda m, a, b: m.hstack([a, b]), [V3, V5]),
    "hstack of 2-d": (lambda m, a, b: m.hstack((a, b)), [A23, A21]),
    "hstack of 0-d": (lambda m, a: m.hstack([a, a]), [S0]),
    "vstack of 1-d": (lambda m, a: m.vstack([a, a * 2]), [V3]),
    "row_stack": (lambda m, a, b: m.row_stack([a, b]), [A23, V3]),
    "dstack": (lambda m, a, b: m.dstack([a, b]), [V3, V3 * 2]),
    "dstack of 2-d": (lambda m, a: m.dstack([a, a]), [A23]),
    "column_stack": (lambda m, a, b: m.column_stack([a, b, a]), [A21, A23[:, 0].copy()]),
    "column_stack of 0-d": (lambda m, a, b: m.column_stack([a, b]), [S0, A21[0]]),
    "split(2, -1)": (lambda m, x: x.split(2, -1), [A234]),
    "split([1, 2], 1)": (lambda m, x: m.split(x, [1, 2], 1), [A23]),
    "split([2, 0, 1], -1)": (lambda m, x: x.split([2, 0, 1], -1), [A23]),
    "split(5) of 3": (lambda m, x: x.split(5), [V3]),
    "split(0) of 0": (lambda m, x: x.split(0), [E03]),
    "split_with_sizes": (lambda m, x: x.split_with_sizes([1, 1], 0), [A23]),
    "chunk(2, -1)": (lambda m, x: x.chunk(2, -1), [A234]),
    "chunk(4) of 5": (lambda m, x: m.chunk(x, 4), [V5]),
    "chunk(3) of 0": (lambda m, x: x.chunk(3), [E03]),
    "unbind(-1)": (lambda m, x: x.unbind(-1), [A234]),
    "unbind of 1-d": (lambda m, x: m.unbind(x), [V3]),
    "unbind of (1, 3)": (lambda m, x: x.unbind(0), [A23[:1]]),
    "tensor_split(3, 1)": (lambda m, x: x.tensor_split(3, 1), [A234]),
    "tensor_split([1, -1])": (lambda m, x: m.tensor_split(x, [1, -1]), [V5]),
    "tensor_split([4, 1, 9])": (lambda m, x: x.tensor_split((4, 1, 9)), [V5]),
    "tensor_split(long tensor)": (lambda m, x: x.tensor_split(m.tensor([1, 3])), [V5]),
    "tensor_split(0-d tensor)": (lambda m, x: x.tensor_split(m.tensor(2), -1), [A23]),
    "hsplit(3)": (lambda m, x: x.hsplit(3), [A23]),
    "hsplit of 1-d": (lambda m, x: m.hsplit(x, [2]), [V5]),
    "vsplit([1])": (lambda m, x: m.vsplit(x, [1]), [A23]),
    "dsplit(2)": (lambda m, x: x.dsplit(2), [A234]),
    "max(-1)": (lambda m, x: x.max(-1), [A234]),
    "min(0, keepdim)": (lambda m, x: m.min(x, 0, keepdim=True), [A234]),
    "max(dim=1) of (1, 3)": (lambda m, x: m.max(x, dim=1), [A23[:1]]),
    "sort(-1, descending)": (lambda m, x: x.sort(-1, descending=True), [A234]),
    "sort(0)": (lambda m, x: m.sort(x, 0), [A23]),
    "sort of 0-d": (lambda m, x: x.sort(), [S0]),
    "sort(stable=True)": (lambda m, x: m.sort(x, stable=True, dim=0), [V5]),
    "topk(2, -1)": (lambda m, x: x.topk(2, -1), [A234]),
    "topk(3, largest=False)": (lambda m, x: m.topk(x, 3, largest=False), [V5]),
    "topk(1, 0) of (1, 3)": (lambda m, x: x.topk(1, 0), [A23[:1]]),
    "meshgrid ij": (lambda m, a, b: m.meshgrid(a, b, indexing="ij"), [V3, V5]),
    "meshgrid xy of three": (lambda m, a, b, s: m.meshgrid([a, b, s], indexing="xy"),
                             [V3, V5, S0]),
    "einsum matmul": (lambda m, a, b: m.einsum("ij,jk->ik", a, b), [A23, A23.T.copy()]),
    "einsum implicit ...": (lambda m, a, b: m.einsum("...j,...j", a, b), [A234, A234[0]]),
    "einsum list": (lambda m, a, b: m.einsum("bij,bkj->bik", [a, b]), [A234, A234 * 2]),
    "einsum sublist": (lambda m, a, b: m.einsum(a, [0, 1], b, [1, 2], [2, 0]),
                       [A23, A23.T.copy()]),
    "einsum trace": (lambda m, a: m.einsum("ii", a), [A23[:, :2].copy()]),
    "einsum of three": (lambda m, a, b, c: m.einsum("i,ij,j->", a, b, c),
                        [A23[:, 0].copy(), A23, V3]),
    "split then cat back": (lambda m, x: m.cat(x.split(1, 1)[::-1], 1), [A23]),
    "unbind then stack": (lambda m, x: m.stack(x.unbind(1), 0), [A234]),
}


def _weights(result) -> list:
    return [np.linspace(0.5, 1.5, int(np.prod(o.shape)), dtype=np.float32).reshape(
        tuple(o.shape)) for o in float_outputs(result)]


def _torch_run(torch, fn, arrays):
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    result = fn(torch, *ts)
    outs = float_outputs(result)
    loss = sum((o * torch.from_numpy(w)).sum() for o, w in zip(outs, _weights(result)))
    grads = torch.autograd.grad(loss, ts, allow_unused=True, materialize_grads=True)
    return [o.detach().numpy() for o in outputs(result)], [g.numpy() for g in grads]


def _weighted(fn):
    """(sum of fn's float outputs times fixed weights, fn's outputs)."""
    def loss(*xs):
        result = fn(pb, *xs)
        total = sum((o * pb.tensor(w)).sum() for o, w in zip(float_outputs(result),
                                                              _weights(result)))
        return total, tuple(outputs(result))
    return loss


def _pb_runs(fn, arrays):
    """{how: (outputs, gradients)} eager, compiled (twice: trace, then generated code)
    and by pb.value_and_grad."""
    def backward(call):
        ts = [pb.tensor(a, requires_grad=True) for a in arrays]
        loss, outs = call(*ts)
        loss.backward()
        return ([o.numpy(force=True) for o in outs],
                [np.zeros_like(a) if t.grad is None else t.grad.numpy()
                 for t, a in zip(ts, arrays)])

    compiled = pb.compile(_weighted(fn))
    runs = {"eager": backward(_weighted(fn)), "compiled": backward(compiled),
            "compiled again": backward(compiled)}
    by_grad = pb.value_and_grad(_weighted(fn), argnums=tuple(range(len(arrays))), has_aux=True)
    # Tensors in: the calls use torch's names (arrays would give them ndarray's)
    (_, outs), grads = by_grad(*[pb.tensor(a) for a in arrays])
    runs["pb.grad"] = ([np.asarray(o) for o in outs], [np.asarray(g) for g in grads])
    return runs


@pytest.mark.filterwarnings("ignore:torch.meshgrid")
@pytest.mark.parametrize("name", list(CALLS))
def test_call_matches_torch_eager_compiled_and_grad(name, torch):
    check_against_torch(torch, *CALLS[name])


def check_against_torch(torch, fn, arrays, atol=1e-7):
    """``fn(module, *tensors)``'s outputs and the gradients of a weighted sum of them, in
    pullback (eager, compiled, pb.grad) against torch."""
    want, want_grads = _torch_run(torch, fn, arrays)
    for how, (outs, grads) in _pb_runs(fn, arrays).items():
        assert len(outs) == len(want), how
        for o, w in zip(outs, want):
            assert o.shape == w.shape and o.dtype == w.dtype, how
            np.testing.assert_allclose(o, w, rtol=1e-6, atol=atol, err_msg=how)
        for g, e in zip(grads, want_grads):
            assert g.shape == e.shape and g.dtype == e.dtype, how
            np.testing.assert_allclose(g, e, rtol=1e-6, atol=atol, err_msg=how)


def test_results_are_tuples_and_named_as_torchs(torch):
    x = np.arange(6.0).reshape(2, 3)
    for call in (lambda m, t: t.split(1), lambda m, t: m.chunk(t, 2, 1),
                 lambda m, t: t.unbind(1), lambda m, t: m.tensor_split(t, 2),
                 lambda m, t: m.meshgrid(t[0], t[1], indexing="ij")):
        assert type(call(pb, pb.tensor(x))) is type(call(torch, torch.tensor(x))) is tuple
    for call in (lambda t: t.sort(), lambda t: t.topk(2), lambda t: t.max(1),
                 lambda t: t.min(0)):
        mine, theirs = call(pb.tensor(x)), call(torch.tensor(x))
        assert type(mine).__name__ == type(theirs).__name__
        assert repr(mine).replace("pullback.", "torch.").replace(", dtype=torch.float64", "") \
            == repr(theirs).replace(", dtype=torch.float64", "")
        values, indices = mine
        assert values is mine.values and indices is mine.indices


M = np.ones((2, 3), np.float32)
# (expression on (module, x) that raises), x is M unless given
ERRORS = {
    "cat(2)": lambda m, x: m.cat([x, x], 2),
    "cat(-3)": lambda m, x: m.cat([x, x], -3),
    "cat sizes": lambda m, x: m.cat([x, x[:, :2]], 0),
    "cat sizes dim 1": lambda m, x: m.cat([x, x[:1]], 1),
    "cat ranks": lambda m, x: m.cat([x, x[0]]),
    "cat of 0-d": lambda m, x: m.cat([x[0, 0], x]),
    "cat of nothing": lambda m, x: m.cat([]),
    "cat of a tensor": lambda m, x: m.cat(x),
    "cat of a number": lambda m, x: m.cat([x, 1.0]),
    "stack sizes": lambda m, x: m.stack([x, x.T]),
    "stack(3)": lambda m, x: m.stack([x, x], 3),
    "stack of nothing": lambda m, x: m.stack([]),
    "hstack of nothing": lambda m, x: m.hstack([]),
    "vstack sizes": lambda m, x: m.vstack([x, x[:, :1]]),
    "split(1, 2)": lambda m, x: x.split(1, 2),
    "split of 0-d": lambda m, x: x[0, 0].split(1),
    "split(-1)": lambda m, x: x.split(-1),
    "split(0) of 2": lambda m, x: x.split(0),
    "split sizes sum": lambda m, x: x.split([1, 1], 1),
    "split sizes negative": lambda m, x: x.split([4, -1], 1),
    "split(1.5)": lambda m, x: x.split(1.5),
    "split([1.5])": lambda m, x: x.split([1.5, 0.5]),
    "chunk(0)": lambda m, x: x.chunk(0),
    "chunk(2, 2)": lambda m, x: x.chunk(2, 2),
    "chunk of 0-d": lambda m, x: m.chunk(x[0, 0], 1),
    "chunk(x, 2.0)": lambda m, x: m.chunk(x, 2.0),
    "unbind(2)": lambda m, x: x.unbind(2),
    "unbind(-3)": lambda m, x: x.unbind(-3),
    "unbind of 0-d": lambda m, x: x[0, 0].unbind(),
    "tensor_split(0)": lambda m, x: x.tensor_split(0),
    "tensor_split(2, 2)": lambda m, x: x.tensor_split(2, 2),
    "tensor_split of 0-d": lambda m, x: x[0, 0].tensor_split(1),
    "tensor_split(float tensor)": lambda m, x: x.tensor_split(m.tensor([1.0])),
    "tensor_split(2-d tensor)": lambda m, x: x.tensor_split(m.tensor([[1]])),
    "hsplit(2) of 3": lambda m, x: x.hsplit(2),
    "hsplit(0)": lambda m, x: m.hsplit(x, 0),
    "hsplit of 0-d": lambda m, x: x[0, 0].hsplit(1),
    "vsplit of 1-d": lambda m, x: x[0].vsplit(1),
    "dsplit of 2-d": lambda m, x: m.dsplit(x, 1),
    "sort(2)": lambda m, x: x.sort(2),
    "topk(4)": lambda m, x: x.topk(4),
    "topk(-1)": lambda m, x: x.topk(-1),
    "topk(1, 2)": lambda m, x: x.topk(1, 2),
    "topk(x, 1.0)": lambda m, x: m.topk(x, 1.0),
    "max(2)": lambda m, x: x.max(2),
    "meshgrid indexing": lambda m, x: m.meshgrid(x[0], indexing="yx"),
    "meshgrid of nothing": lambda m, x: m.meshgrid(indexing="ij"),
    "meshgrid dtypes": lambda m, x: m.meshgrid(x[0], x[0].double(), indexing="ij"),
    "einsum fewer": lambda m, x: m.einsum("ij,jk->ik", x),
    "einsum more": lambda m, x: m.einsum("ij->ij", x, x),
    "einsum ranks": lambda m, x: m.einsum("ijk->i", x),
    "einsum ranks ...": lambda m, x: m.einsum("ijk...->i", x),
    "einsum character": lambda m, x: m.einsum("i1->i", x),
    "einsum output unknown": lambda m, x: m.einsum("ij->ik", x),
    "einsum output twice": lambda m, x: m.einsum("ij->ii", x),
    "einsum sizes": lambda m, x: m.einsum("ij,ij->i", x, x.T),
    "einsum repeated sizes": lambda m, x: m.einsum("ii->i", x),
    "einsum dtypes": lambda m, x: m.einsum("ij,ij->i", x, x.double()),
    "einsum two ...": lambda m, x: m.einsum("...i...->i", x),
    "einsum stray .": lambda m, x: m.einsum("i.j->i", x),
    "einsum of nothing": lambda m, x: m.einsum("ij"),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_error_matches_torch_eager_and_compiled(name, torch):
    fn = ERRORS[name]
    want = raised(lambda: fn(torch, torch.tensor(M, requires_grad=True)))
    assert raised(lambda: fn(pb, pb.tensor(M, requires_grad=True))) == want
    assert raised(lambda: pb.compile(lambda x: fn(pb, x))(pb.tensor(M))) == want
    assert raised(lambda: pb.grad(lambda x: fn(pb, x)[0].sum())(pb.tensor(M))) == want
