"""Tensor methods of pullback/tensor_extras.py: in-place forms (values and gradients as
torch 2.13's), fill_diagonal_, the random fills, and what scripts ask of a tensor."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb

_X = np.array([[0.5, -1.25, 2.0], [1.5, 0.25, -0.75], [-0.25, 0.875, 0.375]])

INPLACE = {
    "clip_": lambda m, y: y.clip_(-0.5, 0.5),
    "sign_": lambda m, y: y.sign_() * y,
    "square_": lambda m, y: y.square_(),
    "fix_": lambda m, y: y.fix_() + y,
    "renorm_": lambda m, y: y.renorm_(2, 0, 1.0),
    "addmm_": lambda m, y: y.addmm_(y * 2, y * 3, beta=0.5),
    "addmv_": lambda m, y: y[0].addmv_(y * 1, y[1] * 1),
    "addr_": lambda m, y: y.addr_(y[0] * 1, y[1] * 1, alpha=2),
    "addbmm_": lambda m, y: y.addbmm_(y.unsqueeze(0) * 1, y.unsqueeze(0) * 2),
    "baddbmm_": lambda m, y: y.unsqueeze(0).baddbmm_(y.unsqueeze(0) * 1, y.unsqueeze(0) * 2),
    "divide_": lambda m, y: y.divide_(2.0),
    "multiply_": lambda m, y: y.multiply_(y * 2),
    "subtract_": lambda m, y: y.subtract_(y.detach() ** 2, alpha=2),
    "true_divide_": lambda m, y: y.true_divide_(3),
    "absolute_": lambda m, y: y.absolute_(),
    "eq_": lambda m, y: y.eq_(0.5),
    "lt_": lambda m, y: y.lt_(y * 0),
    "greater_equal_": lambda m, y: y.greater_equal_(0.25),
    "float_power_": lambda m, y: y.abs().float_power_(2.0),
    "mvlgamma_": lambda m, y: (y.abs() + 2).mvlgamma_(2),
    "xlogy_": lambda m, y: y.xlogy_(y.detach().abs() + 1),
    "arctan2_": lambda m, y: y.arctan2_(y.detach() + 2),
}


@pytest.mark.parametrize("name", list(INPLACE))
def test_inplace_forms_match_torch(name: str, torch) -> None:
    x, tx = pb.tensor(_X, requires_grad=True), torch.tensor(_X, requires_grad=True)
    y, ty = INPLACE[name](pb, x * 1), INPLACE[name](torch, tx * 1)
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-12)
    if ty.requires_grad:
        y.sum().backward()
        ty.sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)


def test_inplace_forms_under_grad_and_compile() -> None:
    def f(x):
        y = x * 1
        y.clip_(-1.0, 1.0)
        y.addmm_(x, x, beta=0.5)
        return y.square_().sum()
    eager = pb.tensor(_X, requires_grad=True)
    f(eager).backward()
    np.testing.assert_allclose(pb.grad(f)(_X), eager.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(float(pb.compile(f)(pb.tensor(_X))), float(f(pb.tensor(_X))))


def test_inplace_errors_as_torchs(torch) -> None:
    for m in (torch, pb):
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
            m.tensor(_X, requires_grad=True).clip_(0, 1)
    with pytest.raises(RuntimeError) as theirs:
        torch.tensor([1.0]).float_power_(2)
    with pytest.raises(RuntimeError) as ours:
        pb.tensor([1.0]).float_power_(2)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("shape,wrap", [((3, 3), False), ((5, 2), True), ((7, 2), False),
                                        ((2, 5), False), ((7, 3), True), ((2, 2, 2), False)])
def test_fill_diagonal_as_torchs(shape: tuple, wrap: bool, torch) -> None:
    ours = pb.zeros(*shape).fill_diagonal_(2.0, wrap)
    assert ours.tolist() == torch.zeros(*shape).fill_diagonal_(2.0, wrap).tolist()
    x = pb.tensor(np.ones(shape), requires_grad=True)
    (x * 3).fill_diagonal_(0.5).sum().backward()
    tx = torch.tensor(np.ones(shape), requires_grad=True)
    (tx * 3).fill_diagonal_(0.5).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())


def test_random_fills() -> None:
    pb.manual_seed(0)
    b = pb.zeros(1000).bernoulli_(0.25)
    assert set(b.tolist()) <= {0.0, 1.0} and 150 < float(b.sum()) < 350
    assert bool((pb.zeros(100).exponential_(2.0) > 0).all())
    r = pb.zeros(200).random_(3, 7)
    assert set(r.tolist()) == {3.0, 4.0, 5.0, 6.0}
    assert set(pb.zeros(50, dtype=pb.int64).random_(2).tolist()) == {0, 1}
    assert bool((pb.zeros(100).geometric_(0.5) >= 1).all())
    assert bool((pb.zeros(10).log_normal_() > 0).all())
    assert pb.zeros(10).cauchy_().shape == (10,)
    with pytest.raises(RuntimeError, match="random_ expects 'from' to be less than 'to'"):
        pb.zeros(2).random_(5, 5)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        pb.zeros(2, requires_grad=True).bernoulli_()


def test_what_scripts_ask_of_a_tensor(torch) -> None:
    for m in (pb, torch):
        x = m.zeros(2, 3)
        assert x.t().stride() == (1, 3) and x.stride(1) == 1
        assert x.nelement() == 6 and x.ndimension() == 2
        assert x.itemsize == 4 and x.nbytes == 24
        assert x.is_cpu and not x.is_sparse and not x.is_quantized and not x.is_meta
        assert m is torch or x.pin_memory() is x  # (torch's needs an accelerator)
        assert not x.is_pinned() and x.share_memory_() is x
        assert not x.is_conj() and not x.is_neg() and x.resolve_conj() is x
        assert x.is_signed() and not x.byte().is_signed()
        assert x.is_same_size(m.ones(2, 3)) and not x.is_same_size(m.ones(3, 2))
        assert str(x.char().dtype).endswith("int8") and str(x.short().dtype).endswith("int16")
        assert str(x.cfloat().dtype).endswith("complex64")
        assert str(x.cdouble().dtype).endswith("complex128")


PUTS = [
    lambda m, x: x.index_put((m.tensor([0, 2]), m.tensor([1, -1])), x[0, :2] * 3),
    lambda m, x: x.index_put((m.tensor([0, 2, 0]), m.tensor([1, -1, 1])), x[1, :3] * 3,
                             accumulate=True),
    lambda m, x: x.index_put((m.tensor([0, 0, -1]),), x[1] * 2, accumulate=True),
    lambda m, x: m.index_put(x, (m.tensor([1]),), m.tensor(5.0, dtype=x.dtype)),
    lambda m, x: x.put(m.tensor([0, 5, -1]), x[2, :3] ** 2),
    lambda m, x: x.put(m.tensor([[0, 5], [5, 11]]), x[:2, :2] * 2, accumulate=True),
    lambda m, x: (x * 1).index_put_((m.tensor([2]), m.tensor([3])), x[0, 0] * 4),
    lambda m, x: (x * 1).put_(m.tensor([1, 1]), x[0, 2:] * 4, accumulate=True),
    # (index tensors for the leading dimensions only, broadcast together)
    lambda m, x: x.reshape(3, 2, 2).index_put((m.tensor([[0], [2]]), m.tensor([1, 1])),
                                              x[0, :2] * 3, accumulate=True).reshape(3, 4),
]


@pytest.mark.parametrize("k", range(len(PUTS)))
def test_index_put_and_put_match_torch(k: int, torch) -> None:
    x0 = np.arange(12.0).reshape(3, 4) / 7
    x, tx = pb.tensor(x0, requires_grad=True), torch.tensor(x0, requires_grad=True)
    y, ty = PUTS[k](pb, x), PUTS[k](torch, tx)
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-12)
    w = np.linspace(-1, 1, 12).reshape(3, 4)
    (y * pb.tensor(w)).sum().backward()
    (ty * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)


def test_index_put_under_grad_and_compile() -> None:
    def f(x):
        return (x.index_put((pb.tensor([0, 0]),), x[1] * 2, accumulate=True).sum()
                + x.put(pb.tensor([3, 4]), x[2, :2] ** 2).exp().sum())
    x0 = np.arange(12.0).reshape(3, 4) / 7
    eager = pb.tensor(x0, requires_grad=True)
    f(eager).backward()
    # (a Tensor argument: on numpy's face, x.put is numpy's in-place put)
    np.testing.assert_allclose(pb.grad(f)(pb.tensor(x0)).numpy(), eager.grad.numpy(),
                               rtol=1e-12)
    np.testing.assert_allclose(float(pb.compile(f)(pb.tensor(x0))), float(f(pb.tensor(x0))))
