"""torch's older linear-algebra names (``svd``, ``qr``, ``cholesky``, ``cholesky_solve``,
``cholesky_inverse``, ``triangular_solve``), ``Tensor.mH`` / ``Tensor.H``, and the
process-wide switches and small constructors of ``pullback/torch_utilities.py``: values
and gradients as torch 2.13's, the same under ``pb.grad`` and ``pb.compile``."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import pullback as pb

_rng = np.random.default_rng(0)
_M = _rng.standard_normal((4, 3))
_L = np.linalg.cholesky(_M.T @ _M + np.eye(3))
_B = _rng.standard_normal((3, 2))

CALLS = {  # (signs of singular vectors: compared up to sign)
    "svd": (lambda m, a: (lambda r: r.U.abs() @ m.diag(r.S) @ r.V.abs().mT)(m.svd(a)), _M),
    "svd_full": (lambda m, a: (lambda r: r[0][:, :3].abs().sum(1) + r[2].abs().sum(0)[:1])(
        a.svd(some=False)), _M),
    "svd_no_uv": (lambda m, a: (lambda r: r.S * 2 + r.U.sum() + r.V.sum())(
        m.svd(a, compute_uv=False)), _M),
    "qr": (lambda m, a: (lambda r: r.Q.sum(0) * r.R.sum(1))(m.qr(a)), _M),
    "qr_complete": (lambda m, a: a.qr(some=False)[1], _M.T),
    "cholesky": (lambda m, a: m.cholesky(a @ a.mT + m.eye(4, dtype=a.dtype)), _M),
    "cholesky_upper": (lambda m, a: (a @ a.mT + m.eye(4, dtype=a.dtype)).cholesky(upper=True),
                       _M),
    "cholesky_solve": (lambda m, f, b: m.cholesky_solve(b, f.tril()), _L, _B),
    "cholesky_solve_upper": (lambda m, f, b: b.cholesky_solve(f.tril().mT, upper=True), _L, _B),
    "cholesky_inverse": (lambda m, f: m.cholesky_inverse(f.tril()), _L),
    "cholesky_inverse_upper": (lambda m, f: f.tril().mT.cholesky_inverse(upper=True), _L),
    "triangular_solve": (lambda m, f, b: m.triangular_solve(b, f, upper=False).solution, _L, _B),
    "triangular_solve_transpose": (lambda m, f, b: b.triangular_solve(f.mT, transpose=True)[0],
                                   _L, _B),
    "triangular_solve_unit": (lambda m, f, b: m.triangular_solve(b, f.mT, unitriangular=True)[0],
                              _L, _B),
    "mH": (lambda m, a: m.complex(a, a * a).mH.imag + a.mH, _M),
    "H": (lambda m, a: a.H * 2, _M),
}


@pytest.mark.parametrize("name", list(CALLS))
def test_values_and_gradients_match_torch(name: str, torch) -> None:
    call, *values = CALLS[name]
    ours = [pb.tensor(v, requires_grad=True) for v in values]
    theirs = [torch.tensor(v, requires_grad=True) for v in values]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (torch's deprecation warnings)
        y, ty = call(pb, *ours), call(torch, *theirs)
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-10, atol=1e-12)
    w = np.linspace(-1, 1, y.numel()).reshape(tuple(y.shape))
    (y * pb.tensor(w)).sum().backward()
    (ty * torch.tensor(w)).sum().backward()
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-8, atol=1e-10)


def test_return_types_and_the_copied_coefficient(torch) -> None:
    r = pb.svd(pb.tensor(_M))
    assert repr(r).startswith("pullback.return_types.svd(\nU=") and r._fields == ("U", "S", "V")
    assert pb.qr(pb.tensor(_M))._fields == ("Q", "R")
    A = pb.tensor(_L)
    solved = pb.triangular_solve(pb.tensor(_B), A, upper=False)
    assert solved._fields == ("solution", "cloned_coefficient")
    np.testing.assert_array_equal(solved.cloned_coefficient.numpy(), _L)
    solved.cloned_coefficient.fill_(0.0)
    assert A.numpy()[0, 0] == _L[0, 0]
    assert tuple(pb.svd(pb.tensor(_M), compute_uv=False).U.shape) == (4, 4)


def test_grad_and_compile_agree_with_eager() -> None:
    def f(m, b):
        factor = pb.cholesky(m.mT @ m + pb.eye(3, dtype=m.dtype))
        return (pb.cholesky_solve(b, factor).sum() + pb.cholesky_inverse(factor).sum()
                + pb.svd(m).S.sum() + pb.qr(m).R.diagonal().abs().sum()
                + pb.triangular_solve(b, factor, upper=False).solution.sum() + m.mH.sum())
    m, b = pb.tensor(_M, requires_grad=True), pb.tensor(_B, requires_grad=True)
    f(m, b).backward()
    gm, gb = pb.grad(f, argnums=(0, 1))(_M, _B)
    np.testing.assert_allclose(gm, m.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(gb, b.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(float(pb.compile(f)(pb.tensor(_M), pb.tensor(_B))),
                               float(f(pb.tensor(_M), pb.tensor(_B))), rtol=1e-12)


@pytest.mark.parametrize("attr,shape", [("H", (3,)), ("H", (2, 2, 2)), ("mH", (3,))])
def test_conjugate_transpose_errors_read_as_torchs(attr: str, shape: tuple, torch) -> None:
    with pytest.raises(RuntimeError) as theirs:
        getattr(torch.zeros(shape), attr)
    with pytest.raises(RuntimeError) as ours:
        getattr(pb.zeros(shape), attr)
    assert str(ours.value) == str(theirs.value).splitlines()[0]


WINDOWS = ["hann_window", "hamming_window", "blackman_window", "bartlett_window",
           "kaiser_window"]


@pytest.mark.parametrize("name", WINDOWS)
def test_windows_as_torchs(name: str, torch) -> None:
    for n in (0, 1, 2, 5, 8):
        for periodic in (True, False):
            for dtype in (None, "float64"):
                ours = getattr(pb, name)(n, periodic, dtype=dtype and getattr(pb, dtype))
                theirs = getattr(torch, name)(n, periodic, dtype=dtype and getattr(torch, dtype))
                assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")
                np.testing.assert_allclose(ours.numpy(), theirs.numpy(), atol=1e-6)


def test_utilities_as_torchs(torch) -> None:
    for m in (pb, torch):  # (the same calls read the same way)
        assert str(m.result_type(m.tensor([1]), 2.5)).endswith("float32")
        assert str(m.result_type(m.tensor([1]), m.tensor(2.5, dtype=m.float64))).endswith(
            "float64")
        assert str(m.result_type(m.tensor([1.0]), m.tensor(2.5, dtype=m.float64))).endswith(
            "float32")
        assert str(m.result_type(m.tensor([1.0]), m.tensor([1]))).endswith("float32")
        assert m.scalar_tensor(3).dtype == m.float32 and m.scalar_tensor(3).item() == 3.0
        assert m.asarray([1, 2]).dtype == m.int64
        assert m.asarray([1.0], dtype=m.float64, requires_grad=True).requires_grad
    kinds = ("float64", "int32", "bool", "complex64", "uint8")
    targets = ("float32", "int64", "bool", "complex128", "int8")
    assert [pb.can_cast(getattr(pb, a), getattr(pb, b)) for a in kinds for b in targets] == [
        torch.can_cast(getattr(torch, a), getattr(torch, b)) for a in kinds for b in targets]


def test_switches_are_read_back() -> None:
    before = (pb.get_num_threads(), pb.are_deterministic_algorithms_enabled(),
              pb.get_float32_matmul_precision())
    try:
        pb.set_num_threads(3)
        pb.use_deterministic_algorithms(True, warn_only=True)
        pb.set_float32_matmul_precision("high")
        assert pb.get_num_threads() == 3 and pb.are_deterministic_algorithms_enabled()
        assert pb.is_deterministic_algorithms_warn_only_enabled()
        assert pb.get_float32_matmul_precision() == "high"
        pb.set_num_interop_threads(2)
        assert pb.get_num_interop_threads() == 2
    finally:
        pb.set_num_threads(before[0])
        pb.use_deterministic_algorithms(before[1])
        pb.set_float32_matmul_precision(before[2])


def test_rng_state_round_trip_and_seeds() -> None:
    pb.manual_seed(7)
    assert pb.initial_seed() == 7
    state = pb.get_rng_state()
    assert state.dtype == pb.uint8
    a = pb.randn(3)
    pb.set_rng_state(state)
    np.testing.assert_array_equal(pb.randn(3).numpy(), a.numpy())
    s = pb.seed()
    assert pb.initial_seed() == s
    pb.manual_seed(0)


def test_function_forms_as_torchs(torch) -> None:
    for m in (pb, torch):
        x = m.ones(3)
        assert m.dropout(x, 0.5, False).tolist() == [1.0, 1.0, 1.0]
        assert m.alpha_dropout(x, 0.5, False).tolist() == [1.0, 1.0, 1.0]
        assert m.feature_alpha_dropout(x.reshape(1, 3), 0.5, False).tolist() == [[1.0] * 3]
        assert m.conj_physical(m.tensor([1 + 2j])).tolist() == [1 - 2j]
        assert m.is_same_size(x, m.zeros(3)) and m.is_signed(x) and not m.is_conj(x)
        assert not m.is_neg(x) and m.resolve_conj(x) is x and m.resolve_neg(x) is x
        assert not m.detach(m.ones(1, requires_grad=True)).requires_grad
        r = m.randint_like(m.zeros(50, dtype=m.int64), 2, 5)
        assert r.dtype == m.int64 and set(r.tolist()) <= {2, 3, 4}
        assert m.randint_like(m.zeros(2), 5).dtype == m.float32
    pb.manual_seed(0)
    kept = pb.dropout(pb.ones(1000), 0.5, True)
    assert 400 < int((kept == 2.0).sum()) < 600
