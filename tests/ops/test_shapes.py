"""The public shape and indexing functions (ops/reshaping.py, ops/indexing.py) against
torch (their torch names) and numpy (numpy's names on Tensors): values, gradients, the
same under pb.compile and pb.grad, and torch's errors. The primitives' own cases are in
ops/cases_shapes.py."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb

from . import numeric_grad, raised

M34 = (np.arange(12, dtype=np.float64).reshape(3, 4) * 7 % 12 - 5) / 4
T234 = (np.arange(24, dtype=np.float64).reshape(2, 3, 4) * 5 % 24 - 11) / 8
IDX = np.array([2, 0, 2])
GATHER = np.array([[0, 3], [1, 1], [2, 0]])
MASK = M34 > 0

# torch's spelling, run on pullback and on torch: (expression on (module, *tensors), inputs)
TORCH = {
    "flip list": (lambda m, x: m.flip(x, [0, -1]), [T234]),
    "flip method": (lambda m, x: x.flip(1), [M34]),
    "fliplr": (lambda m, x: m.fliplr(x), [T234]),
    "flipud": (lambda m, x: m.flipud(x), [M34]),
    "roll dims": (lambda m, x: m.roll(x, (1, -1), (0, -1)), [T234]),
    "roll flat": (lambda m, x: x.roll(7), [M34]),
    "repeat": (lambda m, x: x.repeat(2, 1, 3), [M34]),
    "tile short": (lambda m, x: m.tile(x, (2,)), [T234]),
    "tile long": (lambda m, x: x.tile((2, 1, 1)), [M34]),
    "movedim": (lambda m, x: m.movedim(x, 0, -1), [T234]),
    "movedim pairs": (lambda m, x: x.moveaxis((0, 1), (2, 0)), [T234]),
    "rot90": (lambda m, x: m.rot90(x), [M34]),
    "rot90 k=2": (lambda m, x: m.rot90(x, 2, (1, 2)), [T234]),
    "rot90 k=-1": (lambda m, x: x.rot90(-1, [0, 1]), [M34]),
    "tril": (lambda m, x: m.tril(x, -1), [T234]),
    "triu": (lambda m, x: x.triu(diagonal=2), [M34]),
    "gather": (lambda m, x: m.gather(x, 1, m.tensor(GATHER)), [M34]),
    "gather smaller": (lambda m, x: x.gather(0, m.tensor([[2, 0], [1, 1]])), [M34]),
    "take_along_dim": (lambda m, x: m.take_along_dim(x, m.tensor([[0], [3], [1]]), 1), [M34]),
    "take_along_dim bcast": (lambda m, x: x.take_along_dim(m.tensor([[[1, 0]]]), -1), [T234]),
    "take_along_dim flat": (lambda m, x: m.take_along_dim(x, m.tensor([11, 0, 5])), [M34]),
    "index_select": (lambda m, x: m.index_select(x, -1, m.tensor(IDX)), [T234]),
    "index_select 0-d": (lambda m, x: x.index_select(0, m.tensor(1)), [M34]),
    "index_add": (lambda m, x, s: x.index_add(0, m.tensor([2, 2]), s, alpha=2), [M34, M34[:2]]),
    "index_copy": (lambda m, x, s: m.index_copy(x, 1, m.tensor([3, 0]), s), [M34, M34[:, :2]]),
    "index_fill": (lambda m, x: x.index_fill(0, m.tensor([0, 2]), 3.5), [M34]),
    "scatter": (lambda m, x, s: x.scatter(1, m.tensor([[3], [0], [1]]), s), [M34, M34[:, :1]]),
    "scatter value": (lambda m, x: m.scatter(x, 0, m.tensor([[1, 2]]), value=-2.0), [M34]),
    "scatter_add": (lambda m, x, s: x.scatter_add(1, m.tensor(GATHER), s), [M34, M34[:, :2]]),
    "masked_fill": (lambda m, x: x.masked_fill(m.tensor(MASK), -1.0), [M34]),
    "scatter_reduce": (lambda m, x, s: m.scatter_reduce(x, -1, m.tensor(GATHER), s, "amax",
                                                        include_self=False), [M34, T234[0, :, :2]]),
    "masked_fill bcast": (lambda m, x: m.masked_fill(x, m.tensor(MASK[0]), 2.0), [M34]),
    "masked_fill tensor": (lambda m, x, v: x.masked_fill(m.tensor(MASK), v), [M34, np.array(3.)]),
    "repeat_interleave": (lambda m, x: x.repeat_interleave(m.tensor([1, 0, 2]), dim=0), [M34]),
    "diagonal": (lambda m, x: m.diagonal(x, 1, -1, 0), [T234]),
    "diag 1-d": (lambda m, x: m.diag(x, -1), [M34[0]]),
    "diagflat": (lambda m, x: m.diagflat(x, 2), [M34[:2, :2]]),
    "diag_embed": (lambda m, x: x.diag_embed(1, 0, -1), [M34]),
    "narrow": (lambda m, x: m.narrow(x, -1, 1, 2), [T234]),
    "narrow negative start": (lambda m, x: x.narrow(0, -2, 2), [M34]),
    "expand_as": (lambda m, x: x[:1].expand_as(x), [M34]),
    "broadcast_to": (lambda m, x: m.broadcast_to(x, (2, 3, 4)), [M34]),
    "unflatten": (lambda m, x: x.unflatten(-1, (2, -1)), [T234]),
    "unflatten view": (lambda m, x: m.unflatten(x.mT, 0, (2, 2)), [M34]),
    "pad constant": (lambda m, x: m.nn.functional.pad(x, (1, 2, 0, 1), value=0.5), [T234]),
    "pad reflect": (lambda m, x: m.nn.functional.pad(x, (3, 1), mode="reflect"), [T234]),
    "pad replicate": (lambda m, x: m.nn.functional.pad(x, (2, 0, 1, 3), mode="replicate"),
                      [T234]),
    "pad circular": (lambda m, x: m.nn.functional.pad(x, (1, 4, 2, 1), mode="circular"),
                     [T234]),
    "diff": (lambda m, x: m.diff(x), [T234]),
    "diff n=2 prepend append": (lambda m, x, p: m.diff(x, 2, 0, prepend=p, append=p * 2),
                                [M34, M34[:1]]),
    "masked_scatter": (lambda m, x, s: x.masked_scatter(m.tensor(MASK), s), [M34, T234]),
    "masked_scatter bcast": (lambda m, x, s: m.masked_scatter(x, m.tensor(MASK[1]), s),
                             [M34, M34]),
}

# padding by repeating elements is index_selects here (IndexSelectBackward0), where torch
# has a kernel per mode and rank (ReflectionPad1DBackward0...) or a composite (circular)
NODE_DIFFERS = {"pad reflect", "pad replicate", "pad circular"}

# numpy's spelling, on Tensors and on arrays: (expression on (np, *values), inputs)
NUMPY = {
    "np.flip all": (lambda x: np.flip(x), [T234]),
    "np.flip axis": (lambda x: np.flip(x, axis=(0, 2)), [T234]),
    "np.fliplr": (lambda x: np.fliplr(x), [M34]),
    "np.flipud": (lambda x: np.flipud(x), [M34]),
    "np.roll flat": (lambda x: np.roll(x, -3), [M34]),
    "np.roll axes": (lambda x: np.roll(x, (1, 2), axis=(1, 1)), [T234]),
    "np.tile": (lambda x: np.tile(x, (2, 1, 2)), [M34]),
    "np.moveaxis": (lambda x: np.moveaxis(x, [0, -1], [-1, 0]), [T234]),
    "np.rot90": (lambda x: np.rot90(x, 3, axes=(2, 0)), [T234]),
    "np.tril": (lambda x: np.tril(x, 1), [M34]),
    "np.triu vector": (lambda x: np.triu(x), [M34[0]]),
    "np.take": (lambda x: np.take(x, [[0, -1], [2, 2]], axis=1), [M34]),
    "np.take flat": (lambda x: np.take(x, [7, 1, 7]), [M34]),
    "np.take_along_axis": (lambda x: np.take_along_axis(x, GATHER, axis=1), [M34]),
    "np.take_along_axis bcast": (lambda x: np.take_along_axis(x, np.array([[[2], [0], [1]]]), 2),
                                 [T234]),
    "np.repeat": (lambda x: np.repeat(x, [2, 0, 1], axis=0), [M34]),
    "np.repeat flat": (lambda x: np.repeat(x, 2), [M34]),
    "np.diag": (lambda x: np.diag(x, 1), [M34]),
    "np.diagonal": (lambda x: np.diagonal(x, -1, 2, 1), [T234]),
    "np.atleast_3d": (lambda x: np.atleast_3d(x), [M34[0]]),
    "np.pad constant": (lambda x: np.pad(x, ((1, 0), (2, 3))), [M34]),
    "np.pad edge": (lambda x: np.pad(x, 2, mode="edge"), [M34]),
    "np.pad reflect": (lambda x: np.pad(x, (1, 5), mode="reflect"), [M34]),
    "np.pad symmetric": (lambda x: np.pad(x, ((0, 3), (2, 1), (1, 1)), mode="symmetric"),
                         [T234]),
    "np.pad wrap": (lambda x: np.pad(x, 5, mode="wrap"), [M34[0]]),
}

# numpy's functions that compute new values (not rearrangements): values against numpy,
# gradients against finite differences
NUMPY_VALUES = {
    "np.diff": lambda x: np.diff(x, 2),
    "np.diff axis prepend": lambda x: np.diff(x, axis=0, prepend=0.5, append=x[:1]),
    "np.append flat": lambda x: np.append(x, [1.0, 2.0]),
    "np.append axis": lambda x: np.append(x, x * 2, axis=1),
    "np.gradient": lambda x: np.gradient(x)[1] * 2 + np.gradient(x)[0],
    "np.gradient axis spacing": lambda x: np.gradient(x, 0.5, axis=-1),
    "np.gradient two rows": lambda x: np.gradient(x[:2], 2.0, 0.25)[0],
}


@pytest.mark.parametrize("name", list(NUMPY_VALUES))
def test_numpy_values_and_gradients(name: str) -> None:
    fn = NUMPY_VALUES[name]
    x = pb.tensor(M34, requires_grad=True)
    out = fn(x)
    assert isinstance(out, pb.Tensor) and out.requires_grad
    np.testing.assert_allclose(out.numpy(force=True), fn(M34))
    w = np.random.default_rng(2).standard_normal(out.shape)
    loss = lambda a: float((np.asarray(fn(a)) * w).sum())
    _weighted(out, pb.tensor(w)).backward()
    want = numeric_grad(loss, M34)
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(pb.grad(lambda a: _weighted(fn(a), w))(M34), want, rtol=1e-6,
                               atol=1e-8)


def _weighted(out, w):
    return (out * w).sum()


@pytest.mark.parametrize("name", list(TORCH))
def test_torch_spelling_matches_torch(name: str, torch) -> None:
    fn, inputs = TORCH[name]
    xs = [pb.tensor(v, requires_grad=True) for v in inputs]
    ts = [torch.tensor(v, requires_grad=True) for v in inputs]
    out, expected = fn(pb, *xs), fn(torch, *ts)
    np.testing.assert_allclose(out.numpy(force=True), expected.detach().numpy())
    if name not in NODE_DIFFERS:
        assert type(out.grad_fn).__name__ == type(expected.grad_fn).__name__
    w = np.random.default_rng(0).standard_normal(tuple(expected.shape))
    _weighted(out, pb.tensor(w)).backward()
    _weighted(expected, torch.tensor(w)).backward()
    for x, t in zip(xs, ts):
        np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy())
    compiled = pb.compile(lambda *a: _weighted(fn(pb, *a), w))
    grads = pb.grad(lambda *a: _weighted(fn(pb, *a), w), argnums=tuple(range(len(xs))))(
        *[pb.tensor(v) for v in inputs])
    np.testing.assert_allclose(float(compiled(*[pb.tensor(v) for v in inputs])),
                               float(_weighted(expected, torch.tensor(w)).detach()), rtol=1e-12)
    for g, t in zip(grads, ts):
        np.testing.assert_allclose(np.asarray(g), t.grad.numpy())


@pytest.mark.parametrize("name", list(NUMPY))
def test_numpy_spelling_matches_numpy(name: str) -> None:
    fn, inputs = NUMPY[name]
    xs = [pb.tensor(v, requires_grad=True) for v in inputs]
    out, expected = fn(*xs), fn(*inputs)
    assert isinstance(out, pb.Tensor)
    np.testing.assert_array_equal(out.numpy(force=True), expected)
    w = np.random.default_rng(1).standard_normal(expected.shape)
    _weighted(out, pb.tensor(w)).backward()
    # the gradient of a rearrangement is w sent back: check it position by position
    ids = np.arange(inputs[0].size, dtype=np.float64).reshape(inputs[0].shape)
    want = np.zeros(inputs[0].size)
    np.add.at(want, fn(ids).astype(np.int64).reshape(-1), w.reshape(-1))
    if name == "np.triu vector":  # the zeros numpy puts below the diagonal take nothing
        want = np.array([w[0, 0], w[:2, 1].sum(), w[:3, 2].sum(), w[:, 3].sum()])
    else:
        keep = fn(np.ones_like(inputs[0])).reshape(-1) != 0
        want = np.zeros(inputs[0].size)
        np.add.at(want, fn(ids).astype(np.int64).reshape(-1)[keep], w.reshape(-1)[keep])
    np.testing.assert_allclose(xs[0].grad.numpy().reshape(-1), want)
    g = pb.grad(lambda x: _weighted(fn(x), w))(inputs[0])
    np.testing.assert_allclose(np.asarray(g).reshape(-1), want)


ERRORS = {
    "flip dim": lambda m: m.flip(m.ones(2, 3), [2]),
    "flip repeated": lambda m: m.ones(2, 3).flip(0, -2),
    "fliplr 1-d": lambda m: m.fliplr(m.ones(3)),
    "roll dim": lambda m: m.roll(m.ones(2, 3), 1, 2),
    "roll mismatch": lambda m: m.roll(m.ones(2, 3), (1, 2), 0),
    "roll no dims": lambda m: m.roll(m.ones(2, 3), (1, 2)),
    "repeat short": lambda m: m.ones(2, 3).repeat(2),
    "movedim dim": lambda m: m.movedim(m.ones(2, 3), 0, 3),
    "movedim repeated": lambda m: m.movedim(m.ones(2, 3, 4), (0, 0), (1, 2)),
    "rot90 dims": lambda m: m.rot90(m.ones(2, 3), 1, (0, 0)),
    "rot90 1-d": lambda m: m.rot90(m.ones(3)),
    "tril 1-d": lambda m: m.tril(m.ones(3)),
    "gather dim": lambda m: m.gather(m.ones(2, 3), 2, m.zeros(2, 3, dtype=m.int64)),
    "gather ndim": lambda m: m.gather(m.ones(2, 3), 1, m.zeros(2, dtype=m.int64)),
    "gather size": lambda m: m.gather(m.ones(2, 3), 1, m.zeros(3, 3, dtype=m.int64)),
    "index_select dim": lambda m: m.ones(2, 3).index_select(-3, m.tensor([0])),
    "index_select 2-d": lambda m: m.ones(2, 3).index_select(0, m.tensor([[0]])),
    "masked_fill float mask": lambda m: m.ones(2).masked_fill(m.ones(2), 0.0),
    "diagonal same dims": lambda m: m.ones(2, 3).diagonal(0, 1, -1),
    "diagonal dim": lambda m: m.ones(2, 3).diagonal(0, 0, 2),
    "diag 3-d": lambda m: m.diag(m.ones(2, 2, 2)),
    "narrow dim": lambda m: m.ones(2, 3).narrow(2, 0, 1),
    "narrow length": lambda m: m.ones(2, 3).narrow(1, 2, 2),
    "unflatten sizes": lambda m: m.ones(2, 6).unflatten(1, (4, -1)),
    "pad odd": lambda m: m.nn.functional.pad(m.ones(2, 3), (1,)),
    "pad reflect too wide": lambda m: m.nn.functional.pad(m.ones(1, 2, 3), (3, 0), "reflect"),
    "pad mode": lambda m: m.nn.functional.pad(m.ones(1, 2, 3), (1, 0), "mirror"),
    "diff 0-d": lambda m: m.diff(m.tensor(1.0)),
}


def test_views_share_the_version_counter(torch) -> None:
    """diagonal, narrow, unflatten, expand_as and movedim are views, as in torch: a write
    into the base shows through them and bumps their version; a write through a diagonal
    reaches the base (CopySlices)."""
    for m in (pb, torch):
        x = m.tensor(M34, requires_grad=True)
        base = x * 1
        views = [base.diagonal(), base.narrow(1, 1, 2), base.unflatten(1, (2, 2)),
                 base[:1].expand_as(base), base.movedim(0, 1)]
        base.add_(1)
        assert [v._version for v in views] == [1] * len(views)
        np.testing.assert_allclose(np.asarray(views[0].detach()), np.diag(M34) + 1)
        base.diagonal().mul_(3)
        assert type(base.grad_fn).__name__ == "CopySlices"
        base.sum().backward()
        np.testing.assert_allclose(np.asarray(x.grad), 1 + 2 * np.eye(3, 4))


@pytest.mark.parametrize("name", list(ERRORS))
def test_errors_match_torch(name: str, torch) -> None:
    assert raised(lambda: ERRORS[name](pb)) == raised(lambda: ERRORS[name](torch))


def test_compiled_code_reads_like_numpy() -> None:
    fn = pb.compile(lambda x: (pb.flip(x, [0]) * x.roll(1, 1)).tril().sum())
    seen = pb.compiler.inspect(fn, pb.tensor(M34, requires_grad=True))
    assert "np.flip(x, axis=0)" in seen.forward and "np.roll(x, 1, axis=1)" in seen.forward
    assert "np.tril(" in seen.forward and "np.roll(" in seen.backward


def test_masked_select_is_eager_only(torch) -> None:
    """masked_select's length depends on the mask's values: eager, as torch; refused by
    the tracer (TraceError) as nonzero is."""
    for mask in (MASK, MASK[2], M34[:, :1] > 0):
        x, t = pb.tensor(M34, requires_grad=True), torch.tensor(M34, requires_grad=True)
        out, expected = x.masked_select(pb.tensor(mask)), t.masked_select(torch.tensor(mask))
        np.testing.assert_array_equal(out.numpy(force=True), expected.detach().numpy())
        assert type(out.grad_fn).__name__ == type(expected.grad_fn).__name__
        (out * out).sum().backward()
        (expected * expected).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy())
    with pytest.raises(pb.compiler.TraceError, match="masked_select"):
        pb.compile(lambda a: a.masked_select(a > 0).sum())(pb.tensor(M34))


def test_where_of_a_condition_alone_is_nonzero(torch) -> None:
    for cond in (M34 > 0, T234 < 0.25, np.array(True)):
        ours, theirs = pb.where(pb.tensor(cond)), torch.where(torch.tensor(cond))
        assert [t.tolist() for t in ours] == [t.tolist() for t in theirs]
    with pytest.raises(pb.compiler.TraceError, match="nonzero"):
        pb.compile(lambda a: pb.where(a > 0)[0])(pb.tensor(M34))


def test_tril_and_triu_in_place_default_to_the_main_diagonal() -> None:
    """torch's ``x.tril_()`` and ``x.triu_()`` take ``diagonal=0`` by default (they
    raised "missing 1 required positional argument: 'diagonal'")."""
    x = pb.tensor(np.arange(9.0).reshape(3, 3), requires_grad=True)
    y = x * 1
    y.tril_()
    (y ** 2).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), 2 * np.tril(np.arange(9.0).reshape(3, 3)))
    np.testing.assert_array_equal(pb.ones(3, 3).triu_().numpy(), np.triu(np.ones((3, 3))))
