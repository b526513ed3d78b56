"""compiler/tracer.py: in-place writes inside a compiled function, functionalized as
torch would run them (tensors the function made, no_grad, dtypes, detach aliases)."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb


def matches_torch(torch, f, *values, grads=True):
    """``f(T, *inputs)`` under pb.compile (the traced call, then the generated code) and
    in torch: the same value, dtype, requires_grad and input gradients."""
    tx = [torch.tensor(v, requires_grad=grads) for v in values]
    want = f(torch, *tx)
    if want.requires_grad:
        want.backward()
    cf = pb.compile(lambda *a: f(pb, *a))
    for _ in range(2):
        px = [pb.tensor(v, requires_grad=grads) for v in values]
        got = cf(*px)
        assert (str(got.dtype), got.requires_grad) == (str(want.dtype).replace(
            "torch", "pullback"), want.requires_grad)
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-6)
        if got.requires_grad:
            got.backward()
        for p, t in zip(px, tx):
            assert (p.grad is None) == (t.grad is None)
            if t.grad is not None:
                np.testing.assert_allclose(p.grad.numpy(), t.grad.numpy(), rtol=1e-6)
    return cf


X = np.array([0.5, -0.25])


# ------------------------------------------------------- tensors the function made
@pytest.mark.parametrize("make", [
    lambda T, x: T.zeros_like(x), lambda T, x: T.ones(2, dtype=T.float64),
    lambda T, x: T.full((2,), 0.5, dtype=T.float64), lambda T, x: T.empty_like(x).fill_(1),
    lambda T, x: T.tensor([1.0, 2.0], dtype=T.float64),
    lambda T, x: T.from_numpy(np.zeros_like(x.detach().numpy())) if T is not pb
    else np.zeros_like(x)], ids=["zeros_like", "ones", "full", "empty_like", "tensor",
                                 "np.zeros_like"])
def test_writes_into_tensors_the_function_made(torch, make):
    def f(T, x):
        y = make(T, x)
        y.mul_(2)
        y[0] = x[1] * 3
        y += x
        return (y * y).sum()
    cf = matches_torch(torch, f, X)
    ir = pb.compiler.inspect(cf, pb.tensor(X, requires_grad=True)).ir
    assert "clone c" in ir and "captured" not in ir


def test_a_returned_tensor_the_function_made_is_new_on_every_call():
    cf = pb.compile(lambda x: (x.sum(), pb.zeros(2, dtype=pb.float64)))
    x = pb.tensor(X, requires_grad=True)
    first = cf(x)[1]
    first.add_(1)
    second = cf(x)[1]
    np.testing.assert_array_equal(second.numpy(), [0.0, 0.0])
    assert second is not first


def test_a_constant_only_read_is_not_copied():
    """pb.tensor(...) that nothing returns or views: generated code reads the constant."""
    cf = pb.compile(lambda x: (x * pb.tensor([1.0, 2.0], dtype=pb.float64)).sum())
    for x in (pb.tensor(X, requires_grad=True), pb.tensor(X)):  # with and without backward
        info = pb.compiler.inspect(cf, x)
        assert ".copy()" not in info.forward and info.saved == []


# ------------------------------------------------------------------- under no_grad
@pytest.mark.parametrize("write", [
    lambda T, v, x: v.exp_(), lambda T, v, x: v.mul_(x), lambda T, v, x: v[0].mul_(3),
    lambda T, v, x: v.__setitem__(0, 5.0), lambda T, v, x: v.copy_(x * 4)],
    ids=["exp_", "mul_ by an input", "through a view", "setitem", "copy_"])
def test_a_write_under_no_grad_keeps_the_targets_history(torch, write):
    """torch leaves the target's grad_fn as it was: its gradient reaches x through the
    clone as if the write had not happened, while later ops read the written value."""
    def f(T, x):
        v = x.clone()
        with T.no_grad():
            write(T, v, x)
        return (v * v * T.tensor([1.0, 2.0], dtype=T.float64)).sum()
    cf = matches_torch(torch, f, X)
    assert "keeps the history of" in pb.compiler.inspect(cf, pb.tensor(X, requires_grad=True)).ir


def test_a_write_under_no_grad_into_a_value_without_grad_stays_without(torch):
    def f(T, x):
        v = T.ones(2, dtype=T.float64)
        with T.no_grad():
            v.mul_(x)
        return (v * 2).sum()
    matches_torch(torch, f, X)


def test_a_view_read_anew_under_no_grad_keeps_its_gradient(torch):
    """The base was written with grad: the view's first read after that is under
    no_grad, yet later reads with grad differentiate through it, as in torch."""
    def f(T, x):
        v = x * 2
        s = v[0:1]
        v.mul_(3)
        with T.no_grad():
            t = s * 2
        return (s * s).sum() + t.sum()
    matches_torch(torch, f, X)


# ----------------------------------------------------------------------- dtypes
@pytest.mark.parametrize("shape", [(), (2,)])
def test_an_in_place_op_keeps_its_targets_dtype(torch, shape):
    def f(T, x, y):
        v = x + 0
        v -= y
        v.mul_(y)
        return v.sum()
    x, y = np.full(shape, 0.25, np.float32), np.array(-1.75)
    cf = matches_torch(torch, f, x, y)
    ir = pb.compiler.inspect(cf, pb.tensor(x, requires_grad=True),
                             pb.tensor(y, requires_grad=True)).ir
    assert "cast[dtype=float32]" in ir


def test_an_in_place_op_under_no_grad_keeps_dtype_and_history(torch):
    def f(T, x, y):
        v = x * 2
        with T.no_grad():
            v += y
        return (v * v).sum()
    matches_torch(torch, f, np.array([0.25, 1.5], np.float32), np.array(-1.75))


# ------------------------------------------------------------------ detach aliases
@pytest.mark.parametrize("alias", [lambda v: v.detach(), lambda v: v.data,
                                   lambda v: v[1:].detach(), lambda v: v.detach()[1:]],
                         ids=["detach", "data", "detach of a view", "view of a detach"])
def test_a_detached_alias_sees_writes_to_its_source(torch, alias):
    def f(T, x):
        v = x * 2
        d = alias(v)
        v += 1
        v[1:].mul_(x[:1])
        return (d * 3).sum() + (v * v).sum()
    matches_torch(torch, f, np.array([1.0, 2.0, 3.0]))


@pytest.mark.parametrize("alias", [lambda v: v.detach(), lambda v: v.data,
                                   lambda v: v[1:].detach()],
                         ids=["detach", "data", "detach of a view"])
def test_a_write_into_a_detached_alias_writes_its_source(torch, alias):
    """The source's memory changes but not its history; a gradient the alias takes
    from the write stays with the alias, also after it is read anew."""
    def f(T, x):
        v = x * 2
        d = alias(v)
        d.mul_(x[:1])
        w = (v * 3).sum()
        v.add_(1)
        return w + (d * d).sum() + (v * v).sum()
    matches_torch(torch, f, np.array([1.0, 2.0, 3.0]))


def test_a_write_through_a_detached_argument_is_refused():
    cf = pb.compile(lambda x: x.detach().add_(1).sum())
    with pytest.raises(pb.compiler.TraceError, match=r"through a view \(or detach\(\)\) of "
                                                     "an argument"):
        cf(pb.tensor(X))
