"""Saved-tensor hooks (reference E.8; torch.autograd.graph), compared with torch."""

from __future__ import annotations

import threading

import pytest

import pullback as pb
from pullback.autograd.graph import saved_tensors_hooks


def _logging_hooks(T, log):
    def pack(t):
        log.append(("pack", tuple(t.shape), t.requires_grad, T.is_grad_enabled()))
        return t.detach().clone()

    def unpack(p):
        log.append(("unpack", tuple(p.shape), T.is_grad_enabled()))
        return p
    return pack, unpack


def test_pack_and_unpack_every_saved_tensor(both):
    def snippet(T):
        log: list = []
        x = T.tensor([1., 2.], requires_grad=True)
        with T.autograd.graph.saved_tensors_hooks(*_logging_hooks(T, log)):
            h = x * 1
            y = h.exp()
            z = (y * h).sum()
            w = x * T.ones(2)  # only the operand that does not require grad is saved
        z.backward(retain_graph=True)
        w.sum().backward()
        return log, x.grad
    both.same(snippet)


def test_pack_sees_the_tensor_itself(both):
    def snippet(T):
        seen = []
        x = T.ones(2, requires_grad=True)
        with T.autograd.graph.saved_tensors_hooks(lambda t: seen.append(t is x) or t,
                                                  lambda p: p):
            (x * x).sum().backward()
        return seen, x.grad
    both.same(snippet)


def test_packed_values_are_not_version_checked(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        with T.autograd.graph.saved_tensors_hooks(lambda t: t.detach().clone(), lambda p: p):
            h = x * 1
            y = (h * h).sum()
        with T.no_grad():
            h.add_(10)
        y.backward()
        return x.grad
    both.same(snippet)


def test_unpack_must_return_a_tensor(both):
    def snippet(T):
        x = T.ones(2, requires_grad=True)
        with T.autograd.graph.saved_tensors_hooks(lambda t: 1, lambda p: p):
            y = x.exp()
        y.sum().backward()
    both.raises(snippet, exc=TypeError)


def test_innermost_hooks_win(both):
    def snippet(T):
        log = []
        x = T.ones(2, requires_grad=True)
        with T.autograd.graph.saved_tensors_hooks(lambda t: ("outer", t), lambda p: p[1]):
            with T.autograd.graph.saved_tensors_hooks(lambda t: ("inner", t),
                                                      lambda p: log.append(p[0]) or p[1]):
                y = x.exp()
        y.sum().backward()
        return log, x.grad
    both.same(snippet)


def test_saved_accessor_goes_through_unpack(both):
    def snippet(T):
        log = []
        x = T.tensor([0., 1.], requires_grad=True)
        with T.autograd.graph.saved_tensors_hooks(lambda t: t.detach() * 1,
                                                  lambda p: log.append(1) or p):
            y = x.exp()
        r = y.grad_fn._saved_result
        return r, r is y, log
    both.same(snippet)


def test_double_backward_through_packed_tensors(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        with T.autograd.graph.saved_tensors_hooks(lambda t: t.detach(), lambda p: p):
            y = (x ** 3).sum()
            e = x.exp().sum()
        (g,) = T.autograd.grad(y, x, create_graph=True)
        (ge,) = T.autograd.grad(e, x, create_graph=True)
        return g, T.autograd.grad(g.sum(), x), T.autograd.grad(ge.sum(), x)
    both.same(snippet)


def test_custom_function_saves_through_the_hooks(both):
    def snippet(T):
        class F(T.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                r = a * 2
                ctx.save_for_backward(a, r)
                return r

            @staticmethod
            def backward(ctx, g):
                a, r = ctx.saved_tensors
                return g * 2
        log: list = []
        x = T.ones(2, requires_grad=True)
        with T.autograd.graph.saved_tensors_hooks(*_logging_hooks(T, log)):
            y = F.apply(x)
        y.sum().backward()
        return log, x.grad
    both.same(snippet)


def test_save_on_cpu_and_disable(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        with T.autograd.graph.save_on_cpu():
            y = (x.exp() * x).sum()
        y.backward()
        return x.grad
    both.same(snippet)

    def disabled(T):
        with T.autograd.graph.disable_saved_tensors_hooks("hooks are off here"):
            with T.autograd.graph.save_on_cpu(pin_memory=True):
                pass
    assert both.raises(disabled) == "hooks are off here"


def test_hooks_are_per_thread_and_end_with_the_block():
    packed = []
    x = pb.ones(2, requires_grad=True)
    out = {}

    def other():
        out["node"] = (x * x).grad_fn

    with saved_tensors_hooks(lambda t: packed.append(1) or t, lambda p: p):
        t = threading.Thread(target=other)
        t.start()
        t.join()
    assert packed == []  # the other thread's node saved its tensors as usual
    assert type(out["node"].saved[0]).__name__ == "SavedTensor"
    y = x * x
    assert packed == [] and type(y.grad_fn.saved[0]).__name__ == "SavedTensor"
    from pullback.autograd.grad_mode import _NODE_EXTRAS
    assert "saved_tensors_hooks" not in _NODE_EXTRAS


def test_in_place_ops_and_views_pack_too():
    log = []
    x = pb.tensor([1., 2., 3.], requires_grad=True)
    with saved_tensors_hooks(lambda t: log.append(tuple(t.shape)) or t.detach().clone(),
                             lambda p: p):
        y = x * 1
        y.mul_(x)       # in place: saves its operands
        y[1:].exp_()    # through a view: saves its result
    y.sum().backward()
    assert log == [(3,), (3,), (2,)]
    expected = (2 * x.detach()).numpy()
    expected[1:] = (2 * x.detach() * (x.detach() ** 2).exp()).numpy()[1:]
    assert x.grad.numpy() == pytest.approx(expected)


def test_ops_with_several_outputs_pack_what_they_save(both):
    def snippet(T):
        log: list = []
        x = T.tensor([3., 1., 2., 5.], requires_grad=True)
        with T.autograd.graph.saved_tensors_hooks(*_logging_hooks(T, log)):
            values, idx = x.sort()
            a, b = (x * 2).split(2)
            y = (values * T.tensor([1., 10., 100., 1000.])).sum() + (a * b).sum()
        y.backward()
        return log, x.grad
    both.same(snippet)
