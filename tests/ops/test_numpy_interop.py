"""numpy code on Tensors: numpy's functions and ufuncs record pullback ops
(src/pullback/numpy_interop.py)."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb

from . import numeric_grad
from .cases import Arg

A = Arg
R34 = A((3, 4))
K34 = np.linspace(-1.0, 1.0, 12).reshape(3, 4)  # a constant ndarray operand
COND = np.array([[True, False, True, True], [False, True, False, True],
                 [True, True, False, False]])

# numpy expressions, each run on ndarrays (the reference) and on Tensors
EXPRESSIONS = {
    "sum": (lambda x: np.sum(x), [R34]),
    "sum axis": (lambda x: np.sum(x, axis=0), [R34]),
    "sum axis=-1": (lambda x: np.sum(x, axis=-1), [R34]),
    "sum axes keepdims": (lambda x: np.sum(x, axis=(0, 2), keepdims=True), [A((2, 3, 4))]),
    "sum keepdims": (lambda x: np.sum(x, keepdims=True), [R34]),
    "mean axis": (lambda x: np.mean(x, axis=1), [R34]),
    "mean keepdims": (lambda x: np.mean(x, keepdims=True), [R34]),
    "max": (lambda x: np.max(x), [R34]),
    "max axis": (lambda x: np.max(x, axis=1), [R34]),
    "max axis keepdims": (lambda x: np.max(x, axis=0, keepdims=True), [R34]),
    "amax axes": (lambda x: np.amax(x, axis=(0, 2)), [A((2, 3, 4))]),
    "max axes keepdims": (lambda x: np.max(x, axis=(0, 2), keepdims=True), [A((2, 3, 4))]),
    "min axis": (lambda x: np.min(x, axis=1), [R34]),
    "amin": (lambda x: np.amin(x), [R34]),
    "add.reduce": (lambda x: np.add.reduce(x, axis=1), [R34]),
    "maximum.reduce": (lambda x: np.maximum.reduce(x), [R34]),
    "matmul": (lambda x, w: np.matmul(x, w), [R34, A((4, 2))]),
    "tensor @ ndarray": (lambda x: x @ K34.T, [R34]),
    "ndarray @ tensor": (lambda x: K34.T @ x, [R34]),
    "dot mv": (lambda x, v: np.dot(x, v), [R34, A((4,))]),
    "dot vv": (lambda v, u: np.dot(v, u), [A((4,)), A((4,))]),
    "dot scalar": (lambda x: np.dot(2.0, x), [R34]),
    "tanh": (np.tanh, [R34]),
    "exp": (np.exp, [R34]),
    "log": (np.log, [A((3, 4), "pos")]),
    "sqrt": (np.sqrt, [A((3, 4), "pos")]),
    "abs": (np.abs, [A((3, 4), "away")]),
    "square": (np.square, [R34]),
    "power scalar": (lambda x: np.power(x, 3), [R34]),
    "power arrays": (lambda x, y: np.power(x, y), [A((3, 4), "pos"), A((4,))]),
    "power base": (lambda x: np.power(2.0, x), [R34]),
    "negative": (np.negative, [R34]),
    "sin cos": (lambda x: np.sin(x) * np.cos(x), [R34]),
    "reciprocal": (np.reciprocal, [A((3, 4), "away")]),
    "add ndarray first": (lambda x: np.add(K34, x), [R34]),
    "ndarray - tensor": (lambda x: K34 - x, [R34]),
    "ndarray * tensor": (lambda x: K34 * x, [R34]),
    "ndarray / tensor": (lambda x: K34 / x, [A((3, 4), "away")]),
    "divide": (lambda x, y: np.divide(x, y), [R34, A((4,), "away")]),
    "subtract multiply": (lambda x, y: np.multiply(np.subtract(x, y), 3.0), [R34, A((4,))]),
    "maximum relu": (lambda x: np.maximum(x, 0.0), [A((3, 4), "away")]),
    "minimum ndarray": (lambda x: np.minimum(K34, x), [R34]),
    "where": (lambda x: np.where(x > 0, x, 0.1 * x), [A((3, 4), "away")]),
    "where ndarray cond": (lambda x, y: np.where(COND, x, y), [R34, A((4,))]),
    "reshape": (lambda x: np.reshape(x, (2, 6)), [R34]),
    "reshape -1": (lambda x: np.reshape(x, -1), [R34]),
    "ravel": (np.ravel, [R34]),
    "transpose": (np.transpose, [R34]),
    "transpose axes": (lambda x: np.transpose(x, (1, 0, 2)), [A((2, 3, 4))]),
    "transpose reshape": (lambda x: np.reshape(np.transpose(x), 12), [R34]),
    "swapaxes": (lambda x: np.swapaxes(x, 0, 2), [A((2, 3, 4))]),
    "squeeze": (np.squeeze, [A((1, 3, 1))]),
    "squeeze axis": (lambda x: np.squeeze(x, axis=0), [A((1, 3, 1))]),
    "expand_dims": (lambda x: np.expand_dims(x, (0, 2)), [R34]),
    "expand_dims -1": (lambda x: np.expand_dims(x, -1), [R34]),
    "broadcast_to": (lambda v: np.broadcast_to(v, (3, 4)), [A((4,))]),
    "clip": (lambda x: np.clip(x, -0.5, 0.5), [A((3, 4), "grid")]),
    "clip array bound": (lambda x: np.clip(x, K34 + 0.01, None), [R34]),
    "copy": (np.copy, [R34]),
    "var": (np.var, [R34]),
    "var axis keepdims": (lambda x: np.var(x, axis=0, keepdims=True), [R34]),
    "std axes ddof": (lambda x: np.std(x, axis=(0, 2), ddof=1), [A((2, 3, 4))]),
    "softmax": (lambda x: np.exp(x) / np.sum(np.exp(x), axis=1, keepdims=True), [R34]),
}
NON_DIFFERENTIABLE = {
    "greater": (lambda x: np.greater(x, 0), [R34]),
    "equal ndarray": (lambda x: np.equal(K34, np.round(K34, 0) + 0 * x), [R34]),
    "argmax axis": (lambda x: np.argmax(x, axis=1), [R34]),
    "argmin keepdims": (lambda x: np.argmin(x, axis=0, keepdims=True), [R34]),
    "argmax all": (lambda x: np.argmax(x), [R34]),
    "logical_and": (lambda x: np.logical_and(x > 0, x < 1), [R34]),
    "isnan": (np.isnan, [R34]),
    "zeros_like": (np.zeros_like, [R34]),
    "any axis": (lambda x: np.any(x > 0.5, axis=1), [R34]),
    "all keepdims": (lambda x: np.all(x > -0.5, keepdims=True), [R34]),
}


def _inputs(specs: list, seed: int = 0) -> list:
    rng = np.random.default_rng(seed)
    return [s.sample(rng, np.float64) for s in specs]


@pytest.mark.parametrize("name", list(EXPRESSIONS))
def test_numpy_expression_values_and_gradients(name: str) -> None:
    """numpy's own result on arrays; gradients equal finite differences of the same
    numpy code run on arrays."""
    fn, specs = EXPRESSIONS[name]
    arrays = _inputs(specs)
    expected = np.asarray(fn(*arrays))
    ts = [pb.tensor(a, requires_grad=True) for a in arrays]
    out = fn(*ts)
    assert isinstance(out, pb.Tensor) and out.requires_grad
    assert out.shape == expected.shape and out.numpy(force=True).dtype == expected.dtype
    np.testing.assert_allclose(out.numpy(force=True), expected, rtol=1e-12, atol=1e-12)
    w = np.random.default_rng(1).standard_normal(expected.shape)
    (out * pb.tensor(w)).sum().backward()
    for i, (t, a) in enumerate(zip(ts, arrays)):
        def loss(v, i=i):
            return float(np.sum(w * fn(*arrays[:i], v, *arrays[i + 1:])))
        np.testing.assert_allclose(t.grad.numpy(), numeric_grad(loss, a), rtol=1e-6,
                                   atol=1e-8, err_msg=f"input {i}")


@pytest.mark.parametrize("name", list(NON_DIFFERENTIABLE))
def test_non_differentiable_numpy_results_are_plain_tensors(name: str) -> None:
    fn, specs = NON_DIFFERENTIABLE[name]
    arrays = _inputs(specs)
    out = fn(*[pb.tensor(a, requires_grad=True) for a in arrays])
    assert isinstance(out, pb.Tensor) and not out.requires_grad
    np.testing.assert_array_equal(out.numpy(), fn(*arrays))


def test_tanh_matmul_matches_torch(torch) -> None:
    rng = np.random.default_rng(0)
    xa, wa = rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal(
        (4, 2)).astype(np.float32)
    x, w = pb.tensor(xa, requires_grad=True), pb.tensor(wa, requires_grad=True)
    tx, tw = (torch.tensor(a, requires_grad=True) for a in (xa, wa))
    y, ty = np.tanh(x) @ w, torch.tanh(tx) @ tw
    assert type(y.grad_fn).__name__ == type(ty.grad_fn).__name__ == "MmBackward0"
    assert type(np.tanh(x).grad_fn).__name__ == "TanhBackward0"
    y.sum().backward()
    ty.sum().backward()
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-5, atol=1e-6)


def mlp_loss(W1, b1, W2, b2, X, Y):
    """A two-layer classifier's cross-entropy, written for numpy arrays."""
    h = np.maximum(X @ W1 + b1, 0.0)
    logits = np.dot(h, W2) + b2
    shifted = logits - np.max(logits, axis=1, keepdims=True)
    logp = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
    return -np.mean(np.sum(logp * Y, axis=1))


def test_numpy_mlp_gives_torch_gradients(torch) -> None:
    rng = np.random.default_rng(0)
    params = [rng.standard_normal(s).astype(np.float32) * 0.5
              for s in ((5, 8), (8,), (8, 3), (3,))]
    X = rng.standard_normal((6, 5)).astype(np.float32)
    Y = np.eye(3, dtype=np.float32)[rng.integers(0, 3, 6)]
    ps = [pb.tensor(p, requires_grad=True) for p in params]
    loss = mlp_loss(*ps, X, Y)
    assert isinstance(loss, pb.Tensor) and loss.shape == ()
    np.testing.assert_allclose(loss.item(), mlp_loss(*params, X, Y), rtol=1e-6)
    loss.backward()

    tp = [torch.tensor(p, requires_grad=True) for p in params]
    logits = torch.relu(torch.from_numpy(X) @ tp[0] + tp[1]) @ tp[2] + tp[3]
    tloss = torch.nn.functional.cross_entropy(logits, torch.from_numpy(Y.argmax(1)))
    tloss.backward()
    np.testing.assert_allclose(loss.item(), tloss.item(), rtol=1e-5)
    for p, t in zip(ps, tp):
        np.testing.assert_allclose(p.grad.numpy(), t.grad.numpy(), rtol=1e-4, atol=1e-6)


# ------------------------------------------------------------------------------- fallback
def _x(requires_grad: bool = True) -> pb.Tensor:
    return pb.tensor([[1.5, -2.0], [0.25, 3.0]], requires_grad=requires_grad)


@pytest.mark.parametrize("call, name", [
    # (spacing, ediff1d, roots, nextafter, histogram2d, polydiv, divmod,
    # matrix_transpose, ufunc methods, unstack, apply_over_axes: ops/numpy_*.py)
    (lambda x: np.add.reduce(x, where=x > 0), "numpy.add.reduce"),
    (lambda x: np.multiply.outer(x, x, casting="unsafe"), "numpy.multiply.outer"),
    (lambda x: np.add(x, 1.0, subok=False), "numpy.add"),  # (dtype=, where=: numpy_ufuncs)
    (lambda x: np.trace(x, dtype=np.float64), "numpy.trace"),  # (N-d dot: issue 23)
    (lambda x: np.sum(x, out=np.zeros(())), "numpy.sum with out="),
    (lambda x: np.multiply(x, 2.0, out=np.zeros((2, 2))), "numpy.multiply with out="),
], ids=["ufunc.reduce where=", "ufunc.outer casting=",
        "ufunc subok=", "trace dtype=", "sum out=", "ufunc out="])
def test_unsupported_with_grad_raises(call, name: str) -> None:
    with pytest.raises(TypeError, match=rf"^{name} is not differentiable in pullback yet"):
        call(_x())


def test_ndarray_inplace_add_of_a_grad_tensor_raises() -> None:
    a = np.zeros((2, 2))
    with pytest.raises(TypeError, match="numpy.add with out= is not differentiable"):
        a += _x()


@pytest.mark.parametrize("call, expected", [
    (lambda x: np.nextafter(x, 1.0),
     np.nextafter(np.array([[1.5, -2.0], [0.25, 3.0]], np.float32), np.float32(1.0))),
    (lambda x: np.correlate(x[0], x[1], "full"), [4.5, -5.625, -0.5]),
    (lambda x: np.add.accumulate(x, axis=1), [[1.5, -0.5], [0.25, 3.25]]),
    (lambda x: np.unwrap(x, axis=0),
     np.unwrap(np.array([[1.5, -2.0], [0.25, 3.0]], np.float32), axis=0)),
], ids=["nextafter", "correlate", "accumulate", "unwrap"])
def test_unsupported_without_grad_computes_a_tensor(call, expected) -> None:
    for x in (_x(requires_grad=False), None):
        if x is None:
            with pb.no_grad():
                out = call(_x())
        else:
            out = call(x)
        assert isinstance(out, pb.Tensor) and not out.requires_grad
        np.testing.assert_array_equal(out.numpy(), np.array(expected, dtype=np.float32))


def test_out_tensor_is_written_in_place_under_no_grad() -> None:
    """A numpy-style SGD step: ``np.subtract(w, lr * w.grad, out=w)``."""
    w = pb.tensor([1.0, 2.0], requires_grad=True)
    (w * w).sum().backward()
    version = w._version
    with pb.no_grad():
        res = np.subtract(w, 0.25 * w.grad, out=w)
    assert res is w and w.is_leaf and w._version == version + 1
    np.testing.assert_array_equal(w.detach().numpy(), [0.5, 1.0])


def test_non_float_results_allowed_with_grad() -> None:
    x = _x()
    assert np.shape(x) == (2, 2) and np.ndim(x) == 2
    assert np.isfinite(x).numpy().all()
    np.testing.assert_array_equal(np.argsort(x, axis=1).numpy(), [[1, 0], [0, 1]])


def test_numpy_errors_keep_numpy_semantics() -> None:
    x = _x()
    with pytest.raises(ValueError, match="cannot select an axis to squeeze out"):
        np.squeeze(x, axis=0)
    with pytest.raises(ValueError, match="One of max or min must be given"):
        np.clip(x, None, None)
    with pytest.raises(ValueError, match="matmul: Input operand 1 does not have enough"):
        np.matmul(x, 2.0)


def test_vectorize_on_a_grad_tensor_names_vectorize_and_the_way_out() -> None:
    """A program mapping a scalar function with np.vectorize over a Tensor that requires
    grad (issue 23): the refusal says np.vectorize drops the gradient and what to write."""
    x = pb.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"^np\.vectorize converts .* pb\.vmap\(f\).*"
                                           r"Can't call numpy\(\)"):
        np.vectorize(lambda v: v * 2)(x)
    with pytest.raises(RuntimeError, match=r"^Can't call numpy\(\)"):
        np.asarray(x)  # no np.vectorize on the stack: torch's sentence alone
    np.testing.assert_array_equal(np.vectorize(lambda v: v * 2)(x.detach()), [2.0, 4.0])
