"""Engine semantics: derivatives at kinks (E.4), deep graphs without recursion (E.12),
freeing, and bad input getting clear errors; compared with torch."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import pullback as pb

KINKS = {
    "relu at 0": (lambda T, t: T.relu(t), [0., -1., 2.]),
    "abs at 0": (lambda T, t: T.abs(t), [0., -1., 2.]),
    "sqrt at 0": (lambda T, t: T.sqrt(t), [0., 4.]),
    "clamp at bounds": (lambda T, t: t.clamp(0., 1.), [0., 1., -1., 2., 0.5]),
    "clamp min only": (lambda T, t: t.clamp(min=0.), [0., -1., 1.]),
    "clamp max only": (lambda T, t: t.clamp(max=1.), [1., 2., 0.]),
    "max() ties": (lambda T, t: t.max(), [1., 1., 0.]),
    "max() three ties": (lambda T, t: t.max(), [2., 2., 2.]),
    "min() ties": (lambda T, t: t.min(), [0., 1., 0.]),
    "max(dim) ties": (lambda T, t: t.max(0).values, [1., 1., 0.]),
    "min(dim) ties": (lambda T, t: t.min(0)[0], [0., 1., 0.]),
    "max(dim) 2d ties": (lambda T, t: t.view(2, 2).max(1).values * T.tensor([1., 2.]),
                         [3., 3., 1., 1.]),
    "maximum ties": (lambda T, t: T.maximum(t, T.tensor([1., 1., 1.])), [1., 1., 0.]),
    "minimum ties": (lambda T, t: T.minimum(t, T.tensor([1., 1., 1.])), [1., 2., 0.]),
    "sign": (lambda T, t: T.sign(t), [2., 0., -1.]),
    "x**0 at 0": (lambda T, t: t ** 0, [0.]),
    "x**2 at 0": (lambda T, t: t ** 2, [0.]),
    "x**0.5 at 0": (lambda T, t: t ** 0.5, [0.]),
    "log at 0": (lambda T, t: T.log(t), [0.]),
    "where": (lambda T, t: T.where(t > 0, t, T.zeros(1)), [-1., 2., 0.]),
    "x/0": (lambda T, t: t / 0., [1., -1.]),
    "0/0": (lambda T, t: t / t, [0.]),
    "relu of negative zero": (lambda T, t: T.relu(t), [-0.]),
}


@pytest.mark.parametrize("name", list(KINKS))
def test_derivative_at_kinks(both, name):
    f, v = KINKS[name]

    def snippet(T):
        t = T.tensor(v, requires_grad=True)
        y = f(T, t)
        y.sum().backward()
        return y, t.grad
    both.same(snippet)


def test_kinks_in_float64_and_second_order(both):
    def snippet(T):
        t = T.tensor([0., 1., -1.], dtype=T.float64, requires_grad=True)
        y = (t.abs() * t + t.relu() ** 2 + t.clamp(-1., 1.) ** 2).sum()
        (g,) = T.autograd.grad(y, t, create_graph=True)
        (h,) = T.autograd.grad(g.sum(), t)
        return g.detach(), h
    both.same(snippet)


# --------------------------------------------------------------------------- deep graphs
def test_deep_chain_backward_without_recursion(both):
    def snippet(T):
        x = T.ones(1, requires_grad=True)
        y = x
        for _ in range(100_000):
            y = y * 1.0
        y.backward()
        return x.grad
    both.same(snippet)


def test_deep_chain_is_garbage_collected():
    x = pb.ones(1, requires_grad=True)
    y = x.exp()
    first = weakref.ref(y.grad_fn)
    for _ in range(100_000):
        y = y * 1.0
    last = weakref.ref(y.grad_fn)
    del y
    assert first() is None and last() is None  # freed by reference counting alone
    y = x * x
    for _ in range(1_000):
        y = y.sin() * 0.5
    y.sum().backward(create_graph=True)  # x.grad's graph holds x: a reference cycle
    probe = weakref.ref(x.grad.grad_fn)
    del x, y
    gc.collect()
    assert probe() is None


def test_deep_chain_autograd_grad_and_create_graph(both):
    def snippet(T):
        x = T.tensor(1.5, requires_grad=True)
        y = x
        for _ in range(2_000):
            y = y * 1.0001
        (g,) = T.autograd.grad(y, x, create_graph=True)
        (h,) = T.autograd.grad(g * x, x)
        return g.detach(), h
    both.same(snippet, rtol=1e-4)


def test_wide_graph(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        total = x * 0
        for i in range(2_000):
            total = total + x * (i % 7)
        total.sum().backward()
        return x.grad
    both.same(snippet)


def test_root_given_twice(both):
    """backward([a, b, a]): the seeds of a repeated root add up (the walk from the
    roots must count the edges below it once)."""
    def snippet(T):
        x = T.tensor([[1., 2., 3.], [4., 5., 6.]], requires_grad=True)
        y = T.tensor([.5, -1., 2.], requires_grad=True)
        a, b = x * y, (x + y).exp()
        T.autograd.backward([a, b, a], [T.ones(2, 3), T.full((2, 3), .5), T.full((2, 3), 2.)])
        s = (x * y).sum()
        (ga,) = T.autograd.grad([s, s], [y])
        return x.grad, y.grad, ga
    both.same(snippet)


def test_graph_released_after_backward():
    x = pb.tensor([1., 2.], requires_grad=True)
    h = x.exp()
    y = (h * h).sum()
    node = h.grad_fn
    y.backward()
    assert node._freed and node.saved_out is None


def test_graph_kept_with_retain_graph():
    x = pb.tensor([1., 2.], requires_grad=True)
    h = x.exp()
    y = (h * h).sum()
    y.backward(retain_graph=True)
    assert not h.grad_fn._freed and h.grad_fn.saved_out is not None


# --------------------------------------------------------------------------- bad input
def test_bad_gradient_arguments(both):
    both.raises(lambda T: (T.tensor([1., 2.], requires_grad=True) * 2).backward(3.0),
                exc=TypeError)
    both.raises(lambda T: T.autograd.backward(
        [T.ones(2, requires_grad=True) * 2], ["a"]), exc=TypeError,
        phrase=r"^gradients can be either Tensors or None, but got str")
    both.raises(lambda T: T.autograd.grad((T.ones(2, requires_grad=True) * 2).sum(), [1.0]))
    both.raises(lambda T: T.autograd.backward(1.0), exc=TypeError)


def test_non_tensor_outputs(torch):
    """torch fails an internal assert here; pullback names the problem."""
    for lib in (torch, pb):
        with pytest.raises((TypeError, AssertionError), match="to be a (torch.)?Tensor"):
            lib.autograd.backward([1.0])
        with pytest.raises((TypeError, AssertionError), match="to be a (torch.)?Tensor"):
            lib.autograd.grad([2.0], [lib.ones(2, requires_grad=True)])


def test_bad_inputs_argument(both):
    both.raises(lambda T: T.autograd.grad((T.ones(2, requires_grad=True) * 2).sum(), []),
                r"^`inputs` argument to `grad\(\)` cannot be empty\.$")


def test_grad_outputs_wrong_dtype_is_cast(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        return T.autograd.grad(x * 2, x, T.tensor([1., 1.], dtype=T.float64))
    both.same(snippet)


def test_grad_outputs_complex_for_real_output(both):
    both.raises(lambda T: T.autograd.grad(
        T.ones(2, requires_grad=True) * 2, T.ones(2, requires_grad=True),
        T.ones(2, dtype=T.complex64)))


@pytest.mark.parametrize("flag", [1, 0, None, "yes", np.bool_(True)])
def test_requires_grad_rejects_non_bool(both, flag):
    both.raises(lambda T: T.ones(2).requires_grad_(flag), exc=TypeError)
    both.raises(lambda T: setattr(T.ones(2), "requires_grad", flag))


def test_numpy_on_requiring_tensor(both):
    both.raises(lambda T: T.ones(2, requires_grad=True).numpy(),
                r"^Can't call numpy\(\) on Tensor that requires grad\. Use "
                r"tensor\.detach\(\)\.numpy\(\) instead\.")


@pytest.mark.parametrize("shapes", [((4, 2), (3,)), ((3,), (4, 2)), ((2, 3, 4), (5, 4)),
                                    ((2, 1), (3, 4))])
def test_broadcast_errors(both, shapes):
    a, b = shapes
    both.raises(lambda T: T.ones(a, requires_grad=True) * T.ones(b))
    both.raises(lambda T: T.ones(a) + T.ones(b))


def test_in_place_shape_errors(both):
    both.raises(lambda T: T.ones(4, 2).add_(T.ones(3)))
    both.raises(lambda T: T.ones(2).copy_(T.ones(3)))
    both.raises(lambda T: (T.ones(2, requires_grad=True) * 1).mul_(T.ones(3, 2)))
    both.raises(lambda T: T.where(T.ones(2) > 0, T.ones(3), T.ones(4)))
