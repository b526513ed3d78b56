"""torch.linalg's functions and the tensor products on the public surface: values and
gradients against torch (eager, under pb.compile and under pb.grad), torch's errors,
numpy's spellings (np.linalg.*, np.outer, np.kron...) against numpy and finite
differences, and pb.linalg derived from the op table. The primitives' cases live in
ops/cases_linalg.py."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb
from pullback.ops import PUBLIC

from . import numeric_grad, raised
from .test_multi import check_against_torch
from .test_multi_numpy import check_numpy_call

RNG = np.random.default_rng(7)
M3 = np.eye(3) + 0.3 * RNG.standard_normal((3, 3))
B3 = np.eye(3) + 0.3 * RNG.standard_normal((2, 3, 3))
_m = RNG.standard_normal((3, 3))
SPD = _m @ _m.T / 3 + np.eye(3)
R34 = RNG.standard_normal((3, 4))
R234 = RNG.standard_normal((2, 3, 4))
V3, W3, V4 = RNG.standard_normal(3), RNG.standard_normal(3), RNG.standard_normal(4)

# (expression on (module, *tensors) -> a tensor or a tuple of them, float64 inputs)
CALLS = {
    "linalg.inv": (lambda m, a: m.linalg.inv(a), [M3]),
    "inverse batched": (lambda m, a: m.inverse(a), [B3]),
    "Tensor.inverse": (lambda m, a: a.inverse(), [M3]),
    "linalg.det": (lambda m, a: m.linalg.det(a), [B3]),
    "det": (lambda m, a: m.det(a) * a.det(), [M3]),
    "linalg.slogdet": (lambda m, a: m.linalg.slogdet(a), [B3]),
    "slogdet": (lambda m, a: a.slogdet(), [M3]),
    "solve matrix": (lambda m, a, b: m.linalg.solve(a, b), [M3, R34]),
    "solve vector": (lambda m, a, b: m.linalg.solve(a, b), [M3, V3]),
    "solve batch of vectors": (lambda m, a, b: m.linalg.solve(a, b), [B3, B3[:, 0].copy()]),
    "solve broadcast": (lambda m, a, b: m.linalg.solve(a, b), [B3, R34]),
    "solve left=False": (lambda m, a, b: m.linalg.solve(a, b, left=False), [M3, R34.T.copy()]),
    "cholesky": (lambda m, a: m.linalg.cholesky(a), [SPD]),
    "cholesky upper": (lambda m, a: m.linalg.cholesky(a, upper=True), [SPD]),
    "cholesky of a symmetrized": (lambda m, a: m.linalg.cholesky(a @ a.mT + m.eye(3,
                                  dtype=a.dtype)), [M3]),
    "matrix_power(3)": (lambda m, a: m.linalg.matrix_power(a, 3), [M3]),
    "matrix_power(6) batched": (lambda m, a: m.linalg.matrix_power(a, 6), [B3]),
    "matrix_power(-2)": (lambda m, a: m.matrix_power(a, -2), [M3]),
    "matrix_power(1)": (lambda m, a: a.matrix_power(1), [M3]),
    "matrix_power(0)": (lambda m, a: m.linalg.matrix_power(a, 0) * a, [M3]),
    "outer": (lambda m, v, w: m.outer(v, w), [V3, V4]),
    "ger": (lambda m, v, w: v.ger(w), [V3, V4]),
    "inner": (lambda m, a, b: m.inner(a, b), [R34, R234]),
    "inner 1-d": (lambda m, v, w: v.inner(w), [V3, W3]),
    "inner of 0-d": (lambda m, a, v: m.inner(a[0, 0], v), [R34, V3]),
    "vdot": (lambda m, v, w: m.vdot(v, w), [V3, W3]),
    "kron": (lambda m, a, b: m.kron(a, b), [R34, M3]),
    "kron ranks": (lambda m, v, b: v.kron(b), [V3, R234]),
    "tensordot(2)": (lambda m, a, b: m.tensordot(a, b, 2), [R234, R34]),
    "tensordot(0)": (lambda m, v, w: m.tensordot(v, w, 0), [V3, V4]),
    "tensordot(lists)": (lambda m, a, b: m.tensordot(a, b, dims=([0, 1], [1, 0])),
                         [R234, R234[:, :, 0].T.copy()]),
    "tensordot(-1 dims)": (lambda m, a, b: m.tensordot(a, b, ([-1], [2])), [R34, R234]),
    "trace": (lambda m, a: m.trace(a), [R34]),
    "linalg.cross": (lambda m, a, b: m.linalg.cross(a, b), [B3, B3[:1].copy()]),
    "cross(dim=0)": (lambda m, a, b: m.cross(a, b, dim=0), [R34[:, :3].copy(), M3]),
    "Tensor.cross(dim=-2)": (lambda m, a, b: a.cross(b, dim=-2), [B3, B3[:1, :, :1].copy()]),
    # norms
    "vector_norm": (lambda m, a: m.linalg.vector_norm(a), [R234]),
    "vector_norm(3, dim=(0, 2))": (lambda m, a: m.linalg.vector_norm(a, 3, (0, 2)), [R234]),
    "vector_norm(inf, -1, keepdim)": (lambda m, a: m.linalg.vector_norm(
        a, float("inf"), -1, True), [R234]),
    "vector_norm(0)": (lambda m, a: m.linalg.vector_norm(a, 0, 1) * a.sum(), [R34]),
    **{f"matrix_norm({o!r})": (lambda m, a, o=o: m.linalg.matrix_norm(a, o), [R234])
       for o in ("fro", "nuc", 2, -2, 1, -1, float("inf"), -float("inf"))},
    "matrix_norm(1, dim=(2, 0), keepdim)": (lambda m, a: m.linalg.matrix_norm(
        a, 1, (2, 0), True), [R234]),
    "matrix_norm('nuc', dim=(0, 2), keepdim)": (lambda m, a: m.linalg.matrix_norm(
        a, "nuc", (0, 2), True), [R234]),
    "linalg.norm": (lambda m, a: m.linalg.norm(a), [R234]),
    "linalg.norm(2) of a matrix": (lambda m, a: m.linalg.norm(a, 2), [R34]),
    "linalg.norm(1, dim=1)": (lambda m, a: m.linalg.norm(a, 1, dim=1), [R34]),
    "linalg.norm(dim=(0, 1))": (lambda m, a: m.linalg.norm(a, dim=(0, 1)), [R234]),
    "norm": (lambda m, a: m.norm(a), [R234]),
    "Tensor.norm(1, 0)": (lambda m, a: a.norm(1, 0), [R34]),
    "Tensor.norm('nuc')": (lambda m, a: a.norm("nuc"), [R34]),
    # the singular and eigen vectors' signs are LAPACK's: functions free of them
    "svd(full_matrices=False)": (lambda m, a: _sign_free_svd(m.linalg.svd(a, False)), [R34]),
    "svd tall batched": (lambda m, a: _sign_free_svd(m.linalg.svd(a.mT, False)), [R234]),
    "svd(full_matrices=True) of square": (lambda m, a: _sign_free_svd(m.linalg.svd(a)), [M3]),
    "svdvals": (lambda m, a: m.linalg.svdvals(a), [R234]),
    "eigh": (lambda m, a: _sign_free_eigh(m.linalg.eigh(a)), [SPD]),
    "eigh(UPLO='U') batched": (lambda m, a: _sign_free_eigh(m.linalg.eigh(
        a @ a.mT + 3 * m.eye(3, dtype=a.dtype), UPLO="U")), [B3]),
    "eigvalsh": (lambda m, a: m.linalg.eigvalsh(a), [SPD]),
    "qr": (lambda m, a: m.linalg.qr(a), [R34.T.copy()]),
    "qr wide batched": (lambda m, a: m.linalg.qr(a), [R234]),
    "qr complete of wide": (lambda m, a: m.linalg.qr(a, mode="complete"), [R34]),
    "pinv": (lambda m, a: m.linalg.pinv(a), [R234]),
    "pinverse": (lambda m, a: a.pinverse(), [R34]),
    "pinv(hermitian=True)": (lambda m, a: m.linalg.pinv(a @ a.mT, hermitian=True), [M3]),
    "matrix_exp": (lambda m, a: m.linalg.matrix_exp(a), [B3 * 3]),
    "Tensor.matrix_exp": (lambda m, a: a.matrix_exp(), [M3]),
    "lstsq": (lambda m, a, b: m.linalg.lstsq(a, b), [R34.T.copy(), R234[1].T.copy()]),
    "lstsq vector": (lambda m, a, b: m.linalg.lstsq(a, b), [R34.T.copy(), V4]),
    "lstsq batched": (lambda m, a, b: m.linalg.lstsq(a, b), [R234.mT.copy(),
                                                             R234[:1].mT.copy()]),
    "matrix_rank": (lambda m, a: (m.linalg.matrix_rank(a), a * 1), [R234]),
}


def _sign_free_svd(usv):
    U, S, Vh = usv
    return U * U, S, Vh * Vh, U @ Vh


def _sign_free_eigh(lv):
    L, V = lv
    return L, V * V, (V[..., :1] * V).sum(-2)


@pytest.mark.parametrize("name", list(CALLS))
def test_call_matches_torch_eager_compiled_and_grad(name, torch):
    check_against_torch(torch, *CALLS[name], atol=1e-9)


SYMMETRIC = {
    "cholesky": lambda x: pb.linalg.cholesky(x),
    "eigh": lambda x: pb.linalg.eigh(x)[0] * 2 + pb.linalg.eigh(x)[1] ** 2,
    "eigh(UPLO='U')": lambda x: pb.linalg.eigh(x, UPLO="U")[1] ** 2,
}


@pytest.mark.parametrize("name", list(SYMMETRIC))
def test_gradient_is_that_of_a_symmetric_argument(name):
    """torch's rules take A as symmetric: they are the gradient of f((X + X^T) / 2),
    to first and second order (finite differences in float64)."""
    def f(x):
        return (SYMMETRIC[name]((x + x.mT) / 2) * pb.tensor(M3)).sum()

    x = pb.tensor(SPD, requires_grad=True)
    (g,) = pb.autograd.grad(f(x), x, create_graph=True)
    expected = numeric_grad(lambda a: float(f(pb.tensor(a))), SPD)
    np.testing.assert_allclose(g.detach().numpy(), expected, rtol=1e-6, atol=1e-8)
    (h,) = pb.autograd.grad((g * pb.tensor(R34[:, :3])).sum(), x)
    expected = numeric_grad(lambda a: _gv(f, a), SPD)
    np.testing.assert_allclose(h.numpy(), expected, rtol=1e-5, atol=1e-7)


def _gv(f, a) -> float:
    x = pb.tensor(a, requires_grad=True)
    (g,) = pb.autograd.grad(f(x), x)
    return float((g * pb.tensor(R34[:, :3])).sum())


def test_pb_linalg_is_derived_from_the_table():
    names = {n.removeprefix("linalg.") for e in PUBLIC for n in e.functions
             if n.startswith("linalg.")}
    assert names <= set(pb.linalg.__all__)
    assert {"inv", "det", "slogdet", "solve", "cholesky", "matrix_power", "cross", "norm",
            "vector_norm", "matrix_norm", "svd", "svdvals", "eigh", "eigvalsh", "qr", "pinv",
            "matrix_exp", "lstsq", "matrix_rank", "solve_triangular"} <= names
    assert pb.linalg.inv.__qualname__ == "linalg.inv" and not hasattr(pb, "linalg.inv")
    import pickle
    assert pickle.loads(pickle.dumps(pb.linalg.inv)) is pb.linalg.inv


SINGULAR = np.array([[1.0, 2.0], [2.0, 4.0]])
# (expression on (module, tensor), its input)
ERRORS = {
    "inv of 2x3": (lambda m, x: m.linalg.inv(x), np.ones((2, 3))),
    "inv of 1-d": (lambda m, x: m.linalg.inv(x), np.ones(3)),
    "inv singular": (lambda m, x: m.linalg.inv(x), SINGULAR),
    "inverse singular batch": (lambda m, x: m.inverse(x), np.stack([np.eye(2), SINGULAR])),
    "inv singular first": (lambda m, x: m.linalg.inv(x), np.zeros((3, 3))),
    "inv of ints": (lambda m, x: m.linalg.inv(x.long()), np.eye(2)),
    "det of 2x3": (lambda m, x: m.linalg.det(x), np.ones((2, 3))),
    "slogdet of 2x3": (lambda m, x: m.linalg.slogdet(x), np.ones((2, 3))),
    "solve singular": (lambda m, x: m.linalg.solve(x, x[0]), SINGULAR),
    "solve sizes": (lambda m, x: m.linalg.solve(x, m.ones(3, dtype=x.dtype)), np.eye(2)),
    "cholesky not positive-definite": (lambda m, x: m.linalg.cholesky(-x), np.eye(2)),
    "cholesky order 2": (lambda m, x: m.linalg.cholesky(x), np.array([[1.0, 2.0], [2.0, 1.0]])),
    "cholesky batch": (lambda m, x: m.linalg.cholesky(x), np.stack([np.eye(2), -np.eye(2)])),
    "matrix_power of 2x3": (lambda m, x: m.linalg.matrix_power(x, 2), np.ones((2, 3))),
    "cross length": (lambda m, x: m.linalg.cross(x, x), np.ones((2, 2))),
    "cross no size 3": (lambda m, x: m.cross(x, x, dim=None), np.ones((2, 2))),
    "cross ranks": (lambda m, x: m.linalg.cross(x, x[0]), np.ones((2, 3))),
    "vdot of 2-d": (lambda m, x: m.vdot(x, x), np.ones((2, 2))),
    "vdot sizes": (lambda m, x: m.vdot(x[0], x[0, :2]), np.ones((2, 3))),
    "outer of 2-d": (lambda m, x: m.outer(x, x[0]), np.ones((2, 2))),
    "trace of 3-d": (lambda m, x: m.trace(x), np.ones((2, 2, 2))),
    "inner sizes": (lambda m, x: m.inner(x, x[0, :2]), np.ones((2, 3))),
    "tensordot sizes": (lambda m, x: m.tensordot(x, x, 1), np.ones((2, 3))),
    "matrix_norm of 1-d": (lambda m, x: m.linalg.matrix_norm(x[0]), np.ones((2, 3))),
    "matrix_norm order": (lambda m, x: m.linalg.matrix_norm(x, 3), np.ones((2, 3))),
    "matrix_norm dims": (lambda m, x: m.linalg.matrix_norm(x, dim=(0, 0)), np.ones((2, 3))),
    "vector_norm(-1) of empty": (lambda m, x: m.linalg.vector_norm(x[:0], -1), np.ones((2, 3))),
    "norm(ord) of 3-d": (lambda m, x: m.linalg.norm(x, 2), np.ones((2, 3, 1))),
    "eigh of 2x3": (lambda m, x: m.linalg.eigh(x), np.ones((2, 3))),
    "svd of 1-d": (lambda m, x: m.linalg.svd(x[0]), np.ones((2, 3))),
    "qr mode": (lambda m, x: m.linalg.qr(x, mode="x"), np.ones((2, 3))),
    # (a "backward" entry's function gives the loss: the test calls backward() on it)
    "qr(mode='r') backward": (lambda m, x: m.linalg.qr(x, mode="r")[1].sum(), np.ones((3, 2))),
    "qr complete of tall backward": (lambda m, x: m.linalg.qr(x, mode="complete")[0].sum(),
                                     np.eye(3, 2)),
    "matrix_exp of 2x3": (lambda m, x: m.linalg.matrix_exp(x), np.ones((2, 3))),
    "lstsq sizes": (lambda m, x: m.linalg.lstsq(x, x[:1]), np.ones((2, 3))),
    "lstsq of 1-d": (lambda m, x: m.linalg.lstsq(x[0], x), np.ones((2, 3))),
    "solve_triangular of 1-d B": (
        lambda m, x: m.linalg.solve_triangular(x, x[0], upper=True), np.eye(3)),
    "solve_triangular sizes": (
        lambda m, x: m.linalg.solve_triangular(x, x[:2], upper=True), np.eye(3)),
    "solve_triangular sizes of XA = B": (
        lambda m, x: m.linalg.solve_triangular(x, x[:, :2], upper=False, left=False),
        np.eye(3)),
    "solve_triangular of 2x3": (
        lambda m, x: m.linalg.solve_triangular(x, x.mT, upper=True), np.ones((2, 3))),
    "solve_triangular of ints": (
        lambda m, x: m.linalg.solve_triangular(x.long(), x.long(), upper=True), np.eye(2)),
}


@pytest.mark.filterwarnings("ignore:Using torch.cross without specifying the dim")
@pytest.mark.parametrize("name", list(ERRORS))
def test_error_matches_torch(name, torch):
    fn, value = ERRORS[name]
    grad = name.endswith("backward")
    call = (lambda f, t: f(t).backward()) if grad else (lambda f, t: f(t))
    want = raised(lambda: call(lambda t: fn(torch, t), torch.tensor(value, requires_grad=grad)))
    got = raised(lambda: call(lambda t: fn(pb, t), pb.tensor(value, requires_grad=grad)))
    assert got[1] == want[1]
    assert issubclass(got[0], RuntimeError) and got[0].__name__ == want[0].__name__.lstrip("_")
    compiled = pb.compile(lambda x: fn(pb, x))
    assert raised(lambda: call(compiled, pb.tensor(value, requires_grad=grad)))[1] == want[1]


# (numpy expression, its float64 inputs)
NUMPY_CALLS = {
    "linalg.inv": (lambda a: np.linalg.inv(a), [B3]),
    "linalg.det": (lambda a: np.linalg.det(a), [M3]),
    "linalg.slogdet": (lambda a: np.linalg.slogdet(a), [B3]),
    "linalg.solve": (lambda a, b: np.linalg.solve(a, b), [M3, R34]),
    "linalg.solve vector": (lambda a, v: np.linalg.solve(a, v), [M3, V3]),
    "linalg.cholesky": (lambda a: np.linalg.cholesky(a @ a.T + np.eye(3)), [M3]),
    "linalg.cholesky(upper=True)": (lambda a: np.linalg.cholesky(a @ a.T + np.eye(3),
                                                                 upper=True), [M3]),
    "linalg.matrix_power": (lambda a: np.linalg.matrix_power(a, -3), [M3]),
    "outer of 2-d": (lambda a, v: np.outer(a, v), [R34, V3]),
    "inner": (lambda a, b: np.inner(a, b), [R234, R34]),
    "vdot of 2-d": (lambda a, b: np.vdot(a, b), [R34, R34[::-1].copy()]),
    "kron": (lambda a, v: np.kron(a, v), [R234, V3]),
    "tensordot": (lambda a, b: np.tensordot(a, b, axes=([1, 2], [0, 1])), [R234, R34]),
    "tensordot(1)": (lambda a, b: np.tensordot(a, b, 1), [R34, R234.transpose(2, 0, 1).copy()]),
    "trace": (lambda a: np.trace(a), [R34]),
    "cross": (lambda a, b: np.cross(a, b), [B3, M3]),
    "cross(axis=0)": (lambda a, b: np.cross(a, b, axis=0), [M3, R34[:, :3].copy()]),
    **{f"linalg.norm({o!r})": (lambda a, o=o: np.linalg.norm(a, o), [R34])
       for o in (None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf)},
    **{f"linalg.norm({o!r}, axis=1)": (lambda a, o=o: np.linalg.norm(a, o, axis=1), [R34])
       for o in (None, 0, 1, -1, 2, 3, 0.5, np.inf, -np.inf)},
    "linalg.norm of 3-d": (lambda a: np.linalg.norm(a), [R234]),
    "linalg.norm(keepdims=True)": (lambda a: np.linalg.norm(a, keepdims=True), [R234]),
    "linalg.norm(axis=(2, 0))": (lambda a: np.linalg.norm(a, axis=(2, 0)), [R234]),
    "linalg.norm(-1, axis=(2, 0), keepdims)": (lambda a: np.linalg.norm(
        a, -1, axis=(2, 0), keepdims=True), [R234]),
    "linalg.norm(2, axis=(1, 2))": (lambda a: np.linalg.norm(a, 2, axis=(1, 2)), [R234]),
    "linalg.norm(inf) of 1-d": (lambda v: np.linalg.norm(v, np.inf), [V4]),
    "linalg.vector_norm": (lambda a: np.linalg.vector_norm(a, axis=(0, 1), ord=3), [R234]),
    "linalg.matrix_norm": (lambda a: np.linalg.matrix_norm(a, ord="nuc"), [R234]),
    "linalg.svd": (lambda a: _sign_free_svd(np.linalg.svd(a, full_matrices=False)), [R34]),
    "linalg.svd(compute_uv=False)": (lambda a: np.linalg.svd(a, compute_uv=False), [R234]),
    "linalg.svdvals": (lambda a: np.linalg.svdvals(a), [R34]),
    "linalg.eigh": (lambda a: _sign_free_eigh(np.linalg.eigh(a @ a.T + np.eye(3))), [M3]),
    "linalg.eigvalsh": (lambda a: np.linalg.eigvalsh(a @ a.T), [M3]),
    "linalg.qr": (lambda a: np.linalg.qr(a), [R234]),
    "linalg.qr(mode='complete')": (lambda a: np.linalg.qr(a, mode="complete"), [R34]),
    "linalg.pinv": (lambda a: np.linalg.pinv(a), [R34]),
    "linalg.pinv(rcond)": (lambda a: np.linalg.pinv(a, 1e-10), [R234]),
    "linalg.outer": (lambda v, w: np.linalg.outer(v, w), [V3, V4]),
    "linalg.cross": (lambda a, b: np.linalg.cross(a, b), [B3, M3]),
    "linalg.tensordot": (lambda a, b: np.linalg.tensordot(a, b, axes=1), [R34, R234[0].T.copy()]),
    "linalg.trace": (lambda a: np.linalg.trace(a), [R34]),
}


@pytest.mark.parametrize("name", list(NUMPY_CALLS))
def test_numpy_call_on_tensors_is_numpys(name):
    check_numpy_call(*NUMPY_CALLS[name], rtol=1e-9)


NUMPY_ERRORS = {
    "inv of 2x3": lambda x: np.linalg.inv(x),
    "inv singular": lambda x: np.linalg.inv(x[:, :2] * 0),
    "det of 1-d": lambda x: np.linalg.det(x[0]),
    "solve sizes": lambda x: np.linalg.solve(x[:, :2], x.T),
    "cross of 2-vectors and 4": lambda x: np.cross(x[:, :2], np.ones((2, 4))),
    "norm('fro') of 1-d": lambda x: np.linalg.norm(x[0], "fro"),
    "norm(axis=(0, 0))": lambda x: np.linalg.norm(x, axis=(0, 0)),
    "norm(3) of 2-d": lambda x: np.linalg.norm(x, 3),
    "eigh of 2x3": lambda x: np.linalg.eigh(x),
    "linalg.outer of 2-d": lambda x: np.linalg.outer(x, x[0]),
    "qr(mode='x')": lambda x: np.linalg.qr(x, mode="x"),
}


@pytest.mark.parametrize("name", list(NUMPY_ERRORS))
def test_numpy_errors_are_numpys(name):
    fn = NUMPY_ERRORS[name]
    e = np.ones((2, 3))
    with pytest.raises(Exception) as want:
        fn(e)
    with pytest.raises(Exception) as got:
        fn(pb.tensor(e, requires_grad=True))
    assert type(got.value) is type(want.value) and str(got.value) == str(want.value)


def test_generated_code_reads_like_numpy():
    src = pb.compiler.inspect(pb.compile(lambda a, b: (pb.linalg.inv(a) @ pb.linalg.solve(
        a, b)).sum() + pb.linalg.det(a)), pb.tensor(M3, requires_grad=True),
        pb.tensor(R34, requires_grad=True))
    text = str(getattr(src, "source", src))
    assert "np.linalg.inv(" in text and "np.linalg.solve(" in text and "np.linalg.det(" in text
