"""More torch names: ``nn.functional.softmin`` / ``tanhshrink`` / ``threshold`` (and their
modules, with ``Softshrink`` / ``Hardshrink``), ``broadcast_tensors``,
``broadcast_shapes``, ``cartesian_prod``, ``combinations``, ``vander``, ``addmv``,
``addr``, ``addbmm``, ``rsub``, ``positive``, ``take``, ``Tensor.where``,
``view_as_real`` / ``view_as_complex``, ``argwhere``, ``mvlgamma``, ``bucketize``,
``tril_indices`` / ``triu_indices``, ``is_floating_point`` / ``is_complex`` /
``is_nonzero`` and ``Tensor.histc``: values and gradients as torch 2.13's (float32 and
float64), the same under ``pb.compile``, ``pb.grad`` and ``pb.vmap``, torch's errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import pullback as pb

_X = np.array([[0.5, -1.25, 2.0, 0.125], [1.5, 0.25, -0.75, 1.0], [-0.25, 0.875, 0.375, 3.0]])

# (chain_matmul is deprecated: torch and pullback warn; test_chain_matmul_warns checks it)
pytestmark = pytest.mark.filterwarnings("ignore:torch.chain_matmul is deprecated:UserWarning")

CALLS = {
    "softmin": lambda m, x: m.nn.functional.softmin(x, 1),
    "softmin_dtype": lambda m, x: m.nn.functional.softmin(x, 0, dtype=m.float64),
    "tanhshrink": lambda m, x: m.nn.functional.tanhshrink(x),
    "threshold": lambda m, x: m.threshold(x, 0.25, 20.0) + m.nn.functional.threshold(x, 0.5, -1),
    "broadcast_tensors": lambda m, x: m.broadcast_tensors(x, x[0], x[:, :1])[2]
    * m.broadcast_tensors(x[0], x)[0],
    "cartesian_prod": lambda m, x: m.cartesian_prod(x[0], x[1, :2], x[2, :3]),
    "cartesian_prod_one": lambda m, x: m.cartesian_prod(x[0]),
    "combinations": lambda m, x: m.combinations(x[0]),
    "combinations_3_replacement": lambda m, x: m.combinations(x[0], 3, with_replacement=True),
    "combinations_1": lambda m, x: m.combinations(x[0], 1),
    "addmv": lambda m, x: m.addmv(x[0, :3], x[:, :3], x[1, 1:], beta=0.5, alpha=2),
    "addmv_beta_0": lambda m, x: x[0, :3].addmv(x[:, :3], x[1, 1:], beta=0),
    "addr": lambda m, x: m.addr(x, x[:, 0], x[0], alpha=3),
    "addbmm": lambda m, x: x[:2, :2].addbmm(x.reshape(3, 2, 2), x.reshape(3, 2, 2), beta=2),
    "rsub": lambda m, x: m.rsub(x, 2.0) + m.rsub(x, x * x, alpha=2),
    "positive": lambda m, x: m.positive(x) * x.positive(),
    "take": lambda m, x: m.take(x, m.tensor([[0, 5], [-1, 11]])) + x.take(m.tensor(3)),
    "where_method": lambda m, x: x.where(x > 0, x * x) + x.where(x < 1, 2.0),
    "view_as_real": lambda m, x: m.view_as_real(m.complex(x, x * x)),
    "view_as_complex": lambda m, x: m.view_as_complex(x.reshape(6, 2)).abs(),
    "argwhere": lambda m, x: m.argwhere(x > 0) + (x > 1).argwhere().sum(),
    "mvlgamma": lambda m, x: m.mvlgamma(x.abs() + 2, 3) + (x.abs() + 1).mvlgamma(1),
    # (torch's backward takes 2 ** -1 as the integer 0: exponents >= 0 here)
    "ldexp": lambda m, x: m.ldexp(x, m.tensor([1, 2, 3, 0])) + x.ldexp(m.tensor(2)),
    "frexp": lambda m, x: m.frexp(x).mantissa * x.frexp()[1],
    "nextafter": lambda m, x: m.nextafter(x, x * 0) + x.nextafter(x + 1),
    "split_with_sizes": lambda m, x: m.split_with_sizes(x, [1, 3], 1)[1] * 2,
    "chain_matmul": lambda m, x: m.chain_matmul(x, x.t(), x),
    "isin": lambda m, x: m.isin(x, x[0]) + m.isin(x.round(), m.tensor([0.0, 1.0]), invert=True),
    "isreal": lambda m, x: m.isreal(m.complex(x, x * (x > 0))) & x.isreal(),
    "unravel_index": lambda m, x: m.stack(m.unravel_index(m.tensor([[4, 7], [0, 11]]), (3, 4))),
    "heaviside": lambda m, x: m.heaviside(x.round(), m.tensor([0.5], dtype=x.dtype)),
}


# torch's backward refuses these (heaviside: ours is zero in input, the step's slope)
NO_TORCH_GRAD = {"heaviside"}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", list(CALLS))
def test_values_and_gradients_match_torch(name: str, dtype: str, torch) -> None:
    x = pb.tensor(_X.astype(dtype), requires_grad=True)
    tx = torch.tensor(_X.astype(dtype), requires_grad=True)
    y, ty = CALLS[name](pb, x), CALLS[name](torch, tx)
    tol = 1e-12 if dtype == "float64" else 2e-6
    assert tuple(y.shape) == tuple(ty.shape)
    assert y.dtype.name == str(ty.dtype).removeprefix("torch.")
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=tol, atol=tol)
    if ty.grad_fn is None or name in NO_TORCH_GRAD:
        return
    w = np.linspace(-1, 1, y.numel()).reshape(tuple(y.shape)).astype(y.detach().numpy().dtype)
    (y * pb.tensor(w)).sum().backward()
    (ty * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=tol * 10, atol=tol * 10)


@pytest.mark.parametrize("increasing", [False, True])
def test_vander_values_and_gradient(increasing: bool, torch) -> None:
    # (torch 2.13's own vander backward fails: checked against central differences)
    x0 = np.array([0.5, -1.25, 2.0, 1.5])
    theirs = torch.vander(torch.tensor(x0), 5, increasing=increasing).numpy()
    np.testing.assert_allclose(pb.vander(pb.tensor(x0), 5, increasing).numpy(), theirs)
    assert pb.vander(pb.tensor([1, 2, 3])).tolist() == torch.vander(torch.tensor([1, 2, 3])
                                                                    ).tolist()
    assert tuple(pb.vander(pb.tensor(x0), 0).shape) == (4, 0)
    w = np.linspace(-1, 1, 20).reshape(4, 5)

    def f(x):
        return (pb.vander(x, 5, increasing=increasing) * pb.tensor(w)).sum()
    g, eps = pb.grad(f)(x0), 1e-6
    numeric = [(float(f(pb.tensor(x0 + eps * e))) - float(f(pb.tensor(x0 - eps * e)))) / (2 * eps)
               for e in np.eye(4)]
    np.testing.assert_allclose(g, numeric, rtol=1e-7)


def test_modules_as_torchs(torch) -> None:
    x = np.linspace(-2, 2, 12).reshape(3, 4)
    for name, a in [("Softmin", (1,)), ("Tanhshrink", ()), ("Threshold", (0.1, 20.0)),
                    ("Threshold", (0.1, 2.0, True)), ("Softshrink", (0.3,)), ("Hardshrink", ())]:
        ours, theirs = getattr(pb.nn, name)(*a), getattr(torch.nn, name)(*a)
        assert repr(ours) == repr(theirs)
        np.testing.assert_allclose(ours(pb.tensor(x)).numpy(), theirs(torch.tensor(x)).numpy(),
                                   rtol=1e-12)


def _program(x):
    return (pb.nn.functional.softmin(x, 1).sum() + pb.nn.functional.tanhshrink(x).sum()
            + pb.threshold(x, 0.2, -1.0).sum() + pb.broadcast_tensors(x, x[0])[1].exp().sum()
            + pb.cartesian_prod(x[0], x[1]).prod(1).sum() + pb.combinations(x[2]).sum()
            + pb.vander(x[0], 3).sum() + pb.addmv(x[0, :3], x[:, :3], x[1, 1:]).sum()
            + pb.addr(x, x[:, 0], x[0]).sum() + pb.rsub(x, 1.0).exp().sum()
            + x.take(pb.tensor([0, -1])).sum() + x.where(x > 0, 0.5).sum()
            + pb.view_as_complex(x.reshape(6, 2)).abs().sum()
            + pb.view_as_real(pb.complex(x, x)).sum())


def test_compile_grad_and_vmap_agree_with_eager() -> None:
    eager = pb.tensor(_X, requires_grad=True)
    _program(eager).backward()
    np.testing.assert_allclose(pb.grad(_program)(_X), eager.grad.numpy(), rtol=1e-12)
    compiled = pb.compile(_program)
    for scale in (1.0, 2.0):
        np.testing.assert_allclose(float(compiled(pb.tensor(_X * scale))),
                                   float(_program(pb.tensor(_X * scale))), rtol=1e-12)
    batch = np.stack([_X, _X * 2, -_X])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # batched natively: no loop per example
        batched = pb.vmap(_program)(pb.tensor(batch))
    np.testing.assert_allclose(batched.numpy(), [float(_program(pb.tensor(b))) for b in batch],
                               rtol=1e-12)


UTILITIES = [
    lambda m: m.bucketize(m.tensor([[0.5, 2.0], [3.0, -1.0]]), m.tensor([0.0, 1.0, 2.0])),
    lambda m: m.bucketize(m.tensor([0.5, 2.0]), m.tensor([0.0, 1.0, 2.0]), right=True,
                          out_int32=True),
    lambda m: m.tril_indices(3, 4, 1),
    lambda m: m.triu_indices(4, 3, -1),
    lambda m: m.triu_indices(3, 3, dtype=m.int32),
    lambda m: m.tril_indices(0, 3),
    lambda m: m.tensor([1.0, 2.0, 3.0, 2.5]).histc(3),
    lambda m: m.tensor(tuple(m.broadcast_shapes((2, 1), (3,), 1))),
    lambda m: m.tensor([m.is_floating_point(m.zeros(1)), m.is_complex(m.zeros(1)),
                        m.is_nonzero(m.tensor([2.0])), m.tensor(0).is_nonzero()]),
]


@pytest.mark.parametrize("k", range(len(UTILITIES)))
def test_utilities_as_torchs(k: int, torch) -> None:
    ours, theirs = UTILITIES[k](pb), UTILITIES[k](torch)
    assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")
    assert ours.tolist() == theirs.tolist()


ERRORS = [
    lambda m: m.broadcast_shapes((2, 1), (3, 2)),
    lambda m: m.broadcast_shapes((5, 2, 1), (4, 1, 3), (1, 3)),
    lambda m: m.broadcast_tensors(m.zeros(2), m.zeros(3)),
    lambda m: m.bucketize(m.tensor([0.5]), m.tensor([[0.0, 1.0]])),
    lambda m: m.tril_indices(3, 3, dtype=m.float32),
    lambda m: m.is_nonzero(m.zeros(2)),
    lambda m: m.is_nonzero(m.zeros(0)),
    lambda m: m.cartesian_prod(m.zeros(2, 2)),
    lambda m: m.combinations(m.zeros(2, 2)),
    lambda m: m.combinations(m.zeros(2), -1),
    lambda m: m.vander(m.zeros(2, 2)),
    lambda m: m.vander(m.zeros(2), -1),
    lambda m: m.addmv(m.zeros(2), m.zeros(2, 2, 2), m.zeros(2)),
    lambda m: m.addr(m.zeros(2, 2), m.zeros(2, 1), m.zeros(2)),
    lambda m: m.addbmm(m.zeros(2, 2), m.zeros(2, 2), m.zeros(2, 2, 2)),
    lambda m: m.positive(m.tensor([True])),
    lambda m: m.take(m.zeros(3), m.tensor([0.0])),
    lambda m: m.view_as_real(m.zeros(2)),
    lambda m: m.view_as_complex(m.zeros(2, 3)),
    lambda m: m.broadcast_tensors(m.zeros(2, 1), m.zeros(3), m.zeros(4, 1)),
    lambda m: m.mvlgamma(m.tensor([3.0]), 0),
    lambda m: m.heaviside(m.tensor([0.5]), m.tensor([1])),
    lambda m: m.frexp(m.tensor([1, 2])),
]


@pytest.mark.parametrize("k", range(len(ERRORS)))
def test_errors_read_as_torchs(k: int, torch) -> None:
    with pytest.raises(Exception) as theirs:
        ERRORS[k](torch)
    with pytest.raises(type(theirs.value)) as ours:
        ERRORS[k](pb)
    assert str(ours.value) == str(theirs.value).splitlines()[0]


_PADS = [(kind, d) for kind in ("ZeroPad", "ConstantPad", "ReflectionPad", "ReplicationPad",
                                "CircularPad") for d in (1, 2, 3)]


@pytest.mark.parametrize("kind,d", _PADS)
def test_padding_layers_as_torchs(kind: str, d: int, torch) -> None:
    x0 = np.random.default_rng(d).standard_normal((2, 3, 4, 5, 6)[-(d + 2):])
    for pad in ((1, 2, 0, 1, 1, 0)[:2 * d], 1):
        a = (pad, 1.5) if kind == "ConstantPad" else (pad,)
        ours, theirs = getattr(pb.nn, f"{kind}{d}d")(*a), getattr(torch.nn, f"{kind}{d}d")(*a)
        assert repr(ours) == repr(theirs)
        x, tx = pb.tensor(x0, requires_grad=True), torch.tensor(x0, requires_grad=True)
        y, ty = ours(x), theirs(tx)
        np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-12)
        w = np.linspace(-1, 1, ty.numel()).reshape(tuple(ty.shape))
        (y * pb.tensor(w)).sum().backward()
        (ty * torch.tensor(w)).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("name,a", [("Softmax2d", ()), ("UpsamplingNearest2d", (None, 2)),
                                    ("UpsamplingBilinear2d", ((6, 7),)),
                                    ("UpsamplingBilinear2d", (None, 2))])
def test_older_layer_names_as_torchs(name: str, a: tuple, torch) -> None:
    x0 = np.random.default_rng(0).standard_normal((2, 3, 4, 5))
    ours, theirs = getattr(pb.nn, name)(*a), getattr(torch.nn, name)(*a)
    assert repr(ours) == repr(theirs)
    np.testing.assert_allclose(ours(pb.tensor(x0)).numpy(), theirs(torch.tensor(x0)).numpy(),
                               rtol=1e-12)


def test_integer_operators_are_bitwise_as_torchs(torch) -> None:
    calls = [lambda m, x, b: x & 6, lambda m, x, b: x | 4, lambda m, x, b: x ^ 5,
             lambda m, x, b: ~x, lambda m, x, b: x << 2, lambda m, x, b: x >> 1,
             lambda m, x, b: b & ~b, lambda m, x, b: b | b, lambda m, x, b: b ^ True,
             lambda m, x, b: m.gcd(x, x + 4), lambda m, x, b: x.lcm(m.tensor(4)),
             lambda m, x, b: x.bitwise_and_(m.tensor(3)), lambda m, x, b: m.bitwise_not(b)]
    values, mask = [1, 2, 3, 12], [True, False, True, True]
    for call in calls:
        ours = call(pb, pb.tensor(values), pb.tensor(mask))
        theirs = call(torch, torch.tensor(values), torch.tensor(mask))
        assert ours.tolist() == theirs.tolist()
        assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")




def test_chain_matmul_warns_as_torch_does() -> None:
    # (torch 2.13's text, before its "(Triggered internally at ...)"; torch warns once
    # per process, so earlier tests here have used its one warning up)
    x = pb.tensor(np.arange(4.0).reshape(2, 2))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        pb.chain_matmul(x, x)
    assert [str(w.message) for w in seen] == [
        "torch.chain_matmul is deprecated and will be removed in a future PyTorch release. "
        "Use torch.linalg.multi_dot instead, which accepts a list of two or more tensors "
        "rather than multiple parameters."]
