"""torch names real programs stopped on: ``quantile`` / ``nanquantile``, ``cov``,
``corrcoef``, ``mode``, ``trapezoid`` / ``trapz`` / ``cumulative_trapezoid``,
``block_diag``, ``pdist``, ``polar``, ``unique_consecutive``, ``slice_scatter`` /
``select_scatter`` / ``diagonal_scatter`` and ``igamma`` / ``igammac`` (``special.gammainc``
/ ``gammaincc``): values and gradients as torch 2.13's in float32 and float64, 0-d and
empty inputs, the same under ``pb.compile``, ``pb.grad`` and ``pb.vmap``, and torch's
errors word for word."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import pullback as pb

_X = np.array([[0.5, -1.25, 2.0, 0.125], [1.5, 0.25, -0.75, 1.0], [-0.25, 0.875, 0.375, 3.0]])
_A = np.array([[0.5, 1.5, 3.0, 0.75], [2.0, 1.0, 0.25, 4.0], [1.25, 0.5, 2.5, 1.0]])

CALLS = {
    "quantile": lambda m, x: m.quantile(x, 0.3),
    "quantile_q_tensor": lambda m, x: x.quantile(m.tensor([0.2, 0.5, 0.9], dtype=x.dtype),
                                                 dim=1, keepdim=True),
    "quantile_lower": lambda m, x: m.quantile(x, 0.4, 0, interpolation="lower"),
    "quantile_higher": lambda m, x: m.quantile(x, 0.4, 0, interpolation="higher"),
    "quantile_midpoint": lambda m, x: m.quantile(x, 0.4, 0, interpolation="midpoint"),
    "quantile_nearest": lambda m, x: m.quantile(x, 0.5, 1, interpolation="nearest"),
    "quantile_keepdim_all": lambda m, x: m.quantile(x, 0.4, keepdim=True),
    "quantile_0d": lambda m, x: m.quantile(x[0, 0], 0.4, dim=0, keepdim=True),
    "quantile_nan_row": lambda m, x: m.quantile(x / (x > -1), 0.6, dim=1),
    "nanquantile": lambda m, x: m.nanquantile(x / (x > 0), 0.3, dim=-1),
    "nanquantile_all_nan": lambda m, x: (x / (x > 0)).nanquantile(0.5, dim=0) * 0 + x.sum(0),
    "cov": lambda m, x: m.cov(x),
    "cov_correction_0": lambda m, x: x.cov(correction=0),
    "cov_weights": lambda m, x: m.cov(x, fweights=m.tensor([1, 2, 1, 3]),
                                      aweights=m.tensor([0.5, 1.0, 2.0, 1.0], dtype=x.dtype)),
    "cov_aweights_grad": lambda m, x: m.cov(x[:2], aweights=x[2].exp()),
    "cov_1d": lambda m, x: m.cov(x[0]),
    "corrcoef": lambda m, x: m.corrcoef(x),
    "corrcoef_1d": lambda m, x: x[1].corrcoef(),
    "mode": lambda m, x: m.mode((x * 2).round(), 0).values * x[0],
    "mode_keepdim": lambda m, x: x.round().mode(keepdim=True)[0] + x,
    "mode_0d": lambda m, x: m.mode(x[1, 1]).values,
    "trapezoid": lambda m, x: m.trapezoid(x),
    "trapezoid_x": lambda m, x: m.trapezoid(x, x[0].exp().cumsum(0)),
    "trapezoid_x_nd": lambda m, x: m.trapezoid(x, x.exp().cumsum(0), dim=0),
    "trapz_dx": lambda m, x: m.trapz(x, dx=0.5, dim=0),
    "cumulative_trapezoid": lambda m, x: m.cumulative_trapezoid(x, x.exp().cumsum(1)),
    "cumulative_trapezoid_dx": lambda m, x: m.cumulative_trapezoid(x, dx=2.0, dim=0),
    "block_diag": lambda m, x: m.block_diag(x[0, 0], x[1], x[1:, :2].t(), x[:0, :1]),
    "pdist": lambda m, x: m.pdist(x),
    "pdist_p1": lambda m, x: m.nn.functional.pdist(x, 1),
    "pdist_p3": lambda m, x: m.pdist(x.t(), 3),
    "polar": lambda m, x: (lambda z: z.real + 2 * z.imag)(m.polar(x.abs(), x)),
    "unique_consecutive": lambda m, x: m.unique_consecutive((x * 0 + 1).round()),
    "slice_scatter": lambda m, x: m.slice_scatter(x, x[:, :2] * x[:, 2:], 1, 1, 3),
    "slice_scatter_step": lambda m, x: x.slice_scatter(x[::2] ** 2, step=2),
    "select_scatter": lambda m, x: m.select_scatter(x, x[0] * 3, 0, -1),
    "diagonal_scatter": lambda m, x: m.diagonal_scatter(x, x[0, :3] * x[2, 1:], 1),
    "diagonal_scatter_dims": lambda m, x: x.diagonal_scatter(x[0, :3].exp(), 0, 1, 0),
    # (torch's backward refuses the shape parameter a: a constant here)
    "igamma": lambda m, x: m.igamma(m.tensor(_A, dtype=x.dtype), x.abs()),
    "igammac": lambda m, x: m.tensor(_A, dtype=x.dtype).igammac(x.abs()),
    "special_gammainc": lambda m, x: m.special.gammainc(m.tensor(_A, dtype=x.dtype), x.abs()),
    "special_gammaincc": lambda m, x: m.special.gammaincc(m.tensor(_A, dtype=x.dtype),
                                                          x.abs() + 0.1),
}

# torch's backward refuses these (here: the first element of each run gets the gradient)
NO_TORCH_GRAD = {"unique_consecutive"}


def _compare(name: str, dtype: str, torch) -> None:
    call = CALLS[name]
    x = pb.tensor(_X.astype(dtype), requires_grad=True)
    tx = torch.tensor(_X.astype(dtype), requires_grad=True)
    y, ty = call(pb, x), call(torch, tx)
    tol = 1e-12 if dtype == "float64" else 2e-6
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=tol, atol=tol)
    assert y.dtype.name == str(ty.dtype).removeprefix("torch.")
    if name in NO_TORCH_GRAD or ty.grad_fn is None:
        return
    w = np.linspace(-1, 1, y.numel()).reshape(tuple(y.shape)).astype(dtype)
    wt = w if np.dtype(str(ty.dtype).removeprefix("torch.")).kind != "c" else w + 0j
    (y * pb.tensor(wt)).sum().backward()
    (ty * torch.tensor(wt)).sum().backward()
    np.testing.assert_allclose(np.nan_to_num(x.grad.numpy()), np.nan_to_num(tx.grad.numpy()),
                               rtol=tol * 100, atol=tol * 100)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", list(CALLS))
def test_values_and_gradients_match_torch(name: str, dtype: str, torch) -> None:
    _compare(name, dtype, torch)


EDGES = [  # 0-d and empty inputs torch accepts: the same values (and shapes, dtypes)
    lambda m: m.quantile(m.tensor(2.0), 0.25),
    lambda m: m.nanquantile(m.tensor([[1.0, float("nan")]]), m.tensor([0.0, 1.0]), dim=1),
    lambda m: m.cov(m.tensor(2.0)),
    lambda m: m.cov(m.zeros(0)),
    lambda m: m.cov(m.zeros(2, 0)),
    lambda m: m.cov(m.tensor([[1, 2, 4], [0, 3, 3]])),
    lambda m: m.corrcoef(m.zeros(2, 1)),
    lambda m: m.mode(m.tensor(3.0)).values,
    lambda m: m.mode(m.zeros(0, 2), 1).values,
    lambda m: m.trapezoid(m.zeros(2, 0)),
    lambda m: m.trapezoid(m.ones(2, 1)),
    lambda m: m.cumulative_trapezoid(m.zeros(2, 0)),
    lambda m: m.cumulative_trapezoid(m.ones(3), dx=0.5),
    lambda m: m.pdist(m.zeros(1, 3)),
    lambda m: m.pdist(m.zeros(0, 3)),
    lambda m: m.polar(m.tensor(2.0), m.tensor(0.5)),
    lambda m: m.block_diag(m.zeros(0, 2), m.ones(2, 0), m.ones(1, 1, dtype=m.int64)),
    lambda m: m.block_diag(m.tensor(1), m.ones(1, dtype=m.int32)),
    lambda m: m.unique_consecutive(m.zeros(0)),
    lambda m: m.unique_consecutive(m.tensor(1.0)),
    lambda m: m.slice_scatter(m.zeros(3), m.zeros(0), 0, 1, 1),
    lambda m: m.select_scatter(m.zeros(3), m.tensor(1.0), 0, 1),
    lambda m: m.diagonal_scatter(m.zeros(2, 0), m.zeros(0)),
    lambda m: m.igamma(m.tensor(1.0), m.tensor(0.5)),
]


@pytest.mark.parametrize("k", range(len(EDGES)))
def test_zero_dim_and_empty_inputs_as_torchs(k: int, torch) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (torch's cov warns of no degrees of freedom)
        theirs = EDGES[k](torch)
    ours = EDGES[k](pb)
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


def test_index_outputs_as_torchs(torch) -> None:
    x = np.array([[1.0, 2.0, 2.0, 1.0, 3.0], [4.0, 4.0, 0.0, 1.0, 0.0], [5.0, 6.0, 7.0, 8.0, 5.0]])
    for dim in (0, 1, -1):
        ours, theirs = pb.mode(pb.tensor(x), dim), torch.mode(torch.tensor(x), dim)
        assert repr(ours).startswith("pullback.return_types.mode(\nvalues=")
        np.testing.assert_array_equal(ours.values.numpy(), theirs.values.numpy())
        np.testing.assert_array_equal(ours.indices.numpy(), theirs.indices.numpy())
        assert ours.indices.dtype == pb.int64 and not ours.indices.requires_grad
    ints = np.array([[1, 1], [1, 1], [2, 3], [2, 3], [1, 1]])
    for kw in ({}, {"dim": 0}, {"dim": 1}, {"dim": -1}):
        ours = pb.unique_consecutive(pb.tensor(ints), True, True, **kw)
        theirs = torch.unique_consecutive(torch.tensor(ints), True, True, **kw)
        for a, b in zip(ours, theirs):
            np.testing.assert_array_equal(a.numpy(), b.numpy())
            assert a.dtype == pb.int64
    assert pb.tensor(ints).unique_consecutive(return_counts=True)[1].tolist() == [4, 1, 1, 1, 1, 2]


def _program(x):
    """Every new differentiable name once, summed (no value read by Python)."""
    return (pb.quantile(x, 0.3, dim=1).sum() + x.nanquantile(0.8).sum() + pb.cov(x).sum()
            + pb.corrcoef(x).sum() + pb.mode(x.round(), 0).values.sum()
            + pb.trapezoid(x).sum() + pb.cumulative_trapezoid(x, x.exp(), dim=0).sum()
            + pb.trapz(x, dx=0.5).sum() + pb.pdist(x).sum() + pb.block_diag(x, x[0]).sum()
            + pb.polar(x, x).imag.sum() + pb.slice_scatter(x, x[:, :1] ** 2, 1, 2, 3).sum()
            + x.select_scatter(x[1] * x[0], 0, 2).exp().sum()
            + pb.diagonal_scatter(x, x[0, 1:3] * 2, -1).sum()
            + pb.igamma(x.abs() + 0.5, x.abs()).sum() + x.abs().igammac(x.abs() + 0.5).sum())


def test_compile_grad_and_vmap_agree_with_eager() -> None:
    eager = pb.tensor(_X, requires_grad=True)
    value = _program(eager)
    value.backward()
    np.testing.assert_allclose(pb.grad(_program)(_X), eager.grad.numpy(), rtol=1e-12)
    compiled = pb.compile(_program)
    for scale in (1.0, 2.0):  # (the second call runs the compiled program)
        np.testing.assert_allclose(float(compiled(pb.tensor(_X * scale))),
                                   float(_program(pb.tensor(_X * scale))), rtol=1e-12)
    batch = np.stack([_X, _X * 2, -_X])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # batched natively: no loop per example
        batched = pb.vmap(_program)(pb.tensor(batch))
    np.testing.assert_allclose(batched.numpy(), [float(_program(pb.tensor(b))) for b in batch],
                               rtol=1e-12)
    grads = pb.vmap(pb.grad(_program))(batch)
    np.testing.assert_allclose(grads[1], pb.grad(_program)(batch[1]), rtol=1e-12)


def test_unique_consecutive_and_quantile_tensor_q_under_grad() -> None:
    q = pb.tensor([0.25, 0.75], dtype=pb.float64)

    def f(x):
        return pb.unique_consecutive(x.round()).sum() + (x.quantile(q, 0) ** 2).sum()
    eager = pb.tensor(_X, requires_grad=True)
    f(eager).backward()
    np.testing.assert_allclose(pb.grad(f)(_X), eager.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(float(pb.compile(f)(pb.tensor(_X))), float(f(pb.tensor(_X))))


ERRORS = [
    lambda m: m.quantile(m.tensor([1, 2]), 0.5),
    lambda m: m.quantile(m.tensor([1.0, 2.0]), 1.5),
    lambda m: m.quantile(m.tensor([1.0, 2.0]), m.tensor([0.5, -0.1])),
    lambda m: m.nanquantile(m.zeros(0), 0.5),
    lambda m: m.quantile(m.zeros(3), 0.5, interpolation="cubic"),
    lambda m: m.quantile(m.zeros(3), m.zeros(2, 2)),
    lambda m: m.quantile(m.zeros(3), m.zeros(2, dtype=m.float64)),
    lambda m: m.cov(m.zeros(2, 2, 2)),
    lambda m: m.cov(m.zeros(2, 3), fweights=m.zeros(3)),
    lambda m: m.cov(m.zeros(2, 3), aweights=m.tensor([1, 2, 3])),
    lambda m: m.cov(m.zeros(2, 3), fweights=m.tensor([1, 2])),
    lambda m: m.cov(m.zeros(2, 3), aweights=m.ones(3, 1)),
    lambda m: m.cov(m.zeros(2, 3), fweights=m.tensor([1, -2, 1])),
    lambda m: m.mode(m.zeros(2, 0), 1),
    lambda m: m.mode(m.zeros(2, 3), 2),
    lambda m: m.trapezoid(m.tensor(1.0)),
    lambda m: m.trapezoid(m.zeros(3), m.zeros(2)),
    lambda m: m.pdist(m.zeros(3)),
    lambda m: m.pdist(m.zeros(3, 2), -1),
    lambda m: m.polar(m.zeros(2), m.zeros(2, dtype=m.float64)),
    lambda m: m.block_diag(m.zeros(2, 2, 2)),
    lambda m: m.slice_scatter(m.zeros(3, 4), m.ones(3, 2), 1, 0, 3),
    lambda m: m.select_scatter(m.zeros(3, 4), m.ones(3), 0, 1),
    lambda m: m.select_scatter(m.zeros(3, 4), m.ones(4), 0, 5),
    lambda m: m.diagonal_scatter(m.zeros(3, 4), m.ones(2)),
]


@pytest.mark.parametrize("k", range(len(ERRORS)))
def test_errors_read_as_torchs(k: int, torch) -> None:
    with pytest.raises(Exception) as theirs:
        ERRORS[k](torch)
    with pytest.raises(type(theirs.value)) as ours:
        ERRORS[k](pb)
    assert str(ours.value) == str(theirs.value).splitlines()[0]
