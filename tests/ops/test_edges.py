"""Numerics at the edges through the public functions, each eager, under pb.compile and
under pb.grad, against torch: dims of 0-d tensors, empty and NaN reductions, powers at
zero, torch's errors for bad dims and empty extremes, and float32 sums over a large axis
(the op-level cases live in ops/cases.py)."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb

from . import raised

# the edges evaluate log(0), 0 * inf and the like on purpose, as torch does silently
pytestmark = [pytest.mark.filterwarnings("ignore:divide by zero encountered:RuntimeWarning"),
              pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")]

NAN = float("nan")
X0 = np.array(0.75, np.float32)  # a 0-d input
ROWS = np.array([[1.0, NAN, 3.0], [NAN, NAN, 0.0], [2.0, 2.0, 1.0]], np.float32)
M34 = np.arange(12, dtype=np.float32).reshape(3, 4) / 7
E03, E203 = np.zeros((0, 3), np.float32), np.zeros((2, 0, 3), np.float32)

# (expression on (module, *tensors), its inputs); every input is differentiated
EDGES = {
    "0-d sum(0)": (lambda m, x: x.sum(0), [X0]),
    "0-d sum(-1, keepdim)": (lambda m, x: x.sum(-1, keepdim=True), [X0]),
    "0-d sum((0,))": (lambda m, x: x.sum((0,)), [X0]),
    "0-d sum(())": (lambda m, x: x.sum(()), [X0]),
    "0-d mean(0)": (lambda m, x: x.mean(0), [X0]),
    "0-d mean(-1, keepdim)": (lambda m, x: x.mean(-1, keepdim=True), [X0]),
    "0-d max(0)": (lambda m, x: x.max(0).values, [X0]),
    "0-d min(-1, keepdim)": (lambda m, x: x.min(-1, keepdim=True).values, [X0]),
    "0-d softmax(0)": (lambda m, x: m.softmax(x, 0), [X0]),
    "0-d log_softmax(-1)": (lambda m, x: m.log_softmax(x, -1), [X0]),
    "0-d squeeze(0)": (lambda m, x: x.squeeze(0), [X0]),
    "0-d squeeze(-1)": (lambda m, x: x.squeeze(-1), [X0]),
    "0-d unsqueeze(0)": (lambda m, x: x.unsqueeze(0), [X0]),
    "0-d unsqueeze(-1)": (lambda m, x: x.unsqueeze(-1), [X0]),
    "sum(()) is every dim": (lambda m, x: x.sum(()), [M34]),
    "sum([], keepdim)": (lambda m, x: x.sum([], keepdim=True), [M34]),
    "mean((), keepdim)": (lambda m, x: x.mean((), keepdim=True), [M34]),
    "mean of (0,)": (lambda m, x: x.mean(), [np.zeros(0, np.float32)]),
    "mean of (0, 3)": (lambda m, x: x.mean(), [E03]),
    "mean(0) of (0, 3)": (lambda m, x: x.mean(0), [E03]),
    "mean(1) of (2, 0, 3)": (lambda m, x: x.mean(1, keepdim=True), [E203]),
    "mean((0, 1)) of (2, 0, 3)": (lambda m, x: x.mean((0, 1)), [E203]),
    "mean(2) of (2, 0, 3)": (lambda m, x: x.mean(2), [E203]),
    "sum(0) of (0, 3)": (lambda m, x: x.sum(0), [E03]),
    "softmax(0) of (0, 3)": (lambda m, x: m.softmax(x, 0), [E03]),
    "log_softmax(1) of (2, 0, 3)": (lambda m, x: m.log_softmax(x, 1), [E203]),
    "max(1) of (0, 3)": (lambda m, x: x.max(1).values, [E03]),
    "relu of NaN": (lambda m, x: m.relu(x), [np.array([NAN, -1, 0, 1], np.float32)]),
    "max() of NaN": (lambda m, x: x.max(), [ROWS]),
    "min() of NaN": (lambda m, x: x.min(), [ROWS[2:]]),
    "max(1) of NaN": (lambda m, x: x.max(1).values, [ROWS]),
    "min(0) of NaN": (lambda m, x: x.min(0).values, [ROWS]),
    "maximum of NaN": (lambda m, x, y: m.maximum(x, y), [ROWS, ROWS.T.copy()]),
    "minimum of NaN": (lambda m, x, y: m.minimum(x, y), [ROWS, ROWS.T.copy()]),
    "x ** y at 0": (lambda m, x, y: x ** y,
                    [np.array([0, 0, 0, 0, 1, -1], np.float32),
                     np.array([2, 0, -1, 0.5, 0, 2], np.float32)]),
    "x ** 0 at 0": (lambda m, x: x ** 0, [np.array([0, 2], np.float32)]),
    "0 ** y": (lambda m, y: 0.0 ** y, [np.array([-1, 0, 0.5], np.float32)]),
}
FORWARD_ONLY = {
    "0-d max(0) indices": (lambda m, x: x.max(0).indices, [X0]),
    "0-d argmax(0)": (lambda m, x: x.argmax(0), [X0]),
    "0-d argmin(-1, keepdim)": (lambda m, x: x.argmin(-1, keepdim=True), [X0]),
    "argmax(keepdim)": (lambda m, x: x.argmax(keepdim=True), [M34]),
    "argmax(1) of NaN": (lambda m, x: x.argmax(1), [ROWS]),
    "argmin(1) of NaN": (lambda m, x: x.argmin(1), [ROWS]),
    "max(1) indices of NaN": (lambda m, x: x.max(1).indices, [ROWS]),
    "argmax() of NaN": (lambda m, x: x.argmax(), [ROWS]),
}


def _weights(shape):
    return np.linspace(0.5, 1.5, int(np.prod(shape)), dtype=np.float32).reshape(shape)


def _torch_run(torch, fn, arrays):
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    out = fn(torch, *ts)
    grads = torch.autograd.grad((out * torch.from_numpy(_weights(out.shape))).sum(), ts)
    return out.detach().numpy(), [g.numpy() for g in grads]


def _weighted(fn):
    """(sum of fn's result times fixed weights, fn's result)."""
    def loss(*xs):
        out = fn(pb, *xs)
        return (out * pb.tensor(_weights(out.shape))).sum(), out
    return loss


def _pb_runs(fn, arrays):
    """{how: (value, gradients)} eager, compiled (twice: trace, then generated code) and
    by pb.value_and_grad."""
    def backward(call):
        ts = [pb.tensor(a, requires_grad=True) for a in arrays]
        loss, out = call(*ts)
        loss.backward()
        return out.numpy(force=True), [t.grad.numpy() for t in ts]

    compiled = pb.compile(_weighted(fn))
    runs = {"eager": backward(_weighted(fn)), "compiled": backward(compiled),
            "compiled again": backward(compiled)}
    by_grad = pb.value_and_grad(_weighted(fn), argnums=tuple(range(len(arrays))), has_aux=True)
    (_, out), grads = by_grad(*[pb.tensor(a) for a in arrays])  # (torch's names: Tensors)
    runs["pb.grad"] = (np.asarray(out), [np.asarray(g) for g in grads])
    return runs


@pytest.mark.parametrize("name", list(EDGES))
def test_edge_matches_torch_eager_compiled_and_grad(name, torch):
    fn, arrays = EDGES[name]
    want, want_grads = _torch_run(torch, fn, arrays)
    for how, (value, grads) in _pb_runs(fn, arrays).items():
        assert value.shape == want.shape and value.dtype == want.dtype, how
        np.testing.assert_allclose(value, want, rtol=1e-6, err_msg=how)
        for g, e in zip(grads, want_grads):
            assert g.shape == e.shape and g.dtype == e.dtype, how
            np.testing.assert_allclose(g, e, rtol=1e-6, err_msg=how)


@pytest.mark.parametrize("name", list(FORWARD_ONLY))
def test_forward_edge_matches_torch(name, torch):
    fn, arrays = FORWARD_ONLY[name]
    want = fn(torch, *[torch.tensor(a) for a in arrays]).numpy()
    for out in (fn(pb, *[pb.tensor(a) for a in arrays]),
                pb.compile(lambda *xs: fn(pb, *xs))(*[pb.tensor(a) for a in arrays])):
        assert out.shape == want.shape and out.dtype.name == str(want.dtype)
        np.testing.assert_array_equal(out.numpy(), want)


M = np.ones((3, 4), np.float32)
ERRORS = {
    "sum(2)": (lambda m, x: x.sum(2), M),
    "sum(-3)": (lambda m, x: x.sum(-3), M),
    "sum((0, 5))": (lambda m, x: x.sum((0, 5)), M),
    "sum((0, -2))": (lambda m, x: x.sum((0, -2)), M),
    "mean(2)": (lambda m, x: x.mean(2), M),
    "max(2)": (lambda m, x: x.max(2), M),
    "argmin(-3)": (lambda m, x: x.argmin(-3), M),
    "softmax(2)": (lambda m, x: m.softmax(x, 2), M),
    "squeeze(2)": (lambda m, x: x.squeeze(2), M),
    "unsqueeze(3)": (lambda m, x: x.unsqueeze(3), M),
    "unsqueeze(-4)": (lambda m, x: x.unsqueeze(-4), M),
    "0-d sum(1)": (lambda m, x: x.sum(1), X0),
    "0-d sum((0, -1))": (lambda m, x: x.sum((0, -1)), X0),
    "0-d max(-2)": (lambda m, x: x.max(-2), X0),
    "0-d argmax(1)": (lambda m, x: x.argmax(1), X0),
    "0-d log_softmax(1)": (lambda m, x: m.log_softmax(x, 1), X0),
    "0-d squeeze(1)": (lambda m, x: x.squeeze(1), X0),
    "0-d unsqueeze(1)": (lambda m, x: x.unsqueeze(1), X0),
    "0-d unsqueeze(-2)": (lambda m, x: x.unsqueeze(-2), X0),
    "max() of (0, 3)": (lambda m, x: x.max(), E03),
    "min() of (0,)": (lambda m, x: x.min(), np.zeros(0, np.float32)),
    "max(0) of (0, 3)": (lambda m, x: x.max(0), E03),
    "min(-2) of (2, 0, 3)": (lambda m, x: x.min(-2, keepdim=True), E203),
    "argmax() of (0, 3)": (lambda m, x: x.argmax(), E03),
    "argmin(1) of (2, 0, 3)": (lambda m, x: x.argmin(1), E203),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_error_matches_torch_eager_and_compiled(name, torch):
    fn, a = ERRORS[name]
    want = raised(lambda: fn(torch, torch.tensor(a, requires_grad=True)))
    assert raised(lambda: fn(pb, pb.tensor(a, requires_grad=True))) == want
    assert raised(lambda: pb.compile(lambda x: fn(pb, x))(pb.tensor(a))) == want
    assert raised(lambda: pb.grad(lambda x: fn(pb, x).sum())(pb.tensor(a))) == want



def test_numpy_spellings_keep_numpys_meaning():
    """numpy's axis=() reduces nothing (torch's dim=() everything), and numpy's functions
    raise numpy's errors."""
    t = pb.tensor(M34)
    assert np.sum(t, axis=()).shape == (3, 4) and np.mean(t, axis=()).shape == (3, 4)
    assert t.sum(()).shape == () and np.argmax(t, keepdims=True).shape == (1, 1)
    with pytest.raises(ValueError, match="attempt to get argmax of an empty sequence"):
        np.argmax(pb.tensor(E03))
    with pytest.raises(ValueError, match="zero-size array to reduction operation maximum"):
        np.max(pb.tensor(E03))

# ------------------------------------------------- float32 sums over a long axis
@pytest.fixture(scope="module")
def tall():
    """(10**6, 4) float32: numpy's own sum over axis 0 has a relative error of 1e-5."""
    return np.random.default_rng(0).random((10**6, 4), dtype=np.float32)


def _relativeraised(got, want) -> float:
    return float(np.max(np.abs(np.asarray(got, np.float64) - want) / np.abs(want)))


@pytest.mark.parametrize("reduce", ["sum", "mean"])
def test_float32_reduction_over_a_long_axis_is_accurate(tall, reduce):
    want = getattr(tall.astype(np.float64), reduce)(axis=0)
    fn = lambda x: getattr(x, reduce)(0)
    compiled = pb.compile(fn)
    for how, got in [("eager", fn(pb.tensor(tall))), ("compiled", compiled(pb.tensor(tall))),
                     ("compiled again", compiled(pb.tensor(tall))),
                     ("numpy's", getattr(np, reduce)(pb.tensor(tall), axis=0))]:
        assert got.dtype == pb.float32
        assert _relativeraised(got.numpy(), want) < 1e-6, how


def test_bias_gradient_of_a_large_batch_is_accurate(tall):
    """The gradient of b in (x + b) * c is c summed over the batch (sum_to's reduction)."""
    want = tall.astype(np.float64).sum(axis=0)
    loss = lambda x, b: ((x + b) * x).sum()
    b = np.zeros(4, np.float32)
    compiled = pb.compile(loss)
    for how, call in [("eager", loss), ("compiled", compiled), ("compiled again", compiled)]:
        tb = pb.tensor(b, requires_grad=True)
        call(pb.tensor(tall), tb).backward()
        assert _relativeraised(tb.grad.numpy(), want) < 1e-6, how
    got = pb.grad(loss, argnums=1)(tall, b)
    assert got.dtype == np.float32 and _relativeraised(got, want) < 1e-6
