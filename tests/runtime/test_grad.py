"""autograd.grad (reference section 3, E.3), compared with torch."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb
from pullback.compiler import replay

SECOND_TIME = r"^Trying to backward through the graph a second time"


def test_returns_tuple_and_leaves_grad_alone(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        y = (x ** 2).sum()
        g = T.autograd.grad(y, x)
        return type(g).__name__, len(g), g, x.grad, g[0].requires_grad
    both.same(snippet)


def test_several_inputs_and_outputs(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        w = T.tensor([3., 4.], requires_grad=True)
        y = x * w
        gx, gw = T.autograd.grad(y, [x, w], grad_outputs=T.ones(2))
        y1 = x * 2
        y2 = x * 3
        both_roots = T.autograd.grad([y1, y2], x, grad_outputs=[T.ones(2), T.ones(2)])
        return gx, gw, both_roots, x.grad, w.grad
    both.same(snippet)
    both.raises(lambda T: T.autograd.grad(T.ones(2, requires_grad=True) * 2,
                                          T.ones(2, requires_grad=True)))


def test_non_leaf_inputs(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        h = x * 2
        y = (h ** 2).sum()
        g = T.autograd.grad(y, h, retain_graph=True)
        gx_h = T.autograd.grad(y, [x, h])
        return g, x.grad, h.retains_grad, gx_h
    both.same(snippet)


def test_grad_fills_retained_grad_but_not_leaves(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        h = x * 2
        h.retain_grad()
        g = T.autograd.grad((h * h).sum(), x)
        return g, h.grad, x.grad
    both.same(snippet)


def test_unused_inputs(both):
    def f(T):
        x = T.tensor([1., 2.], requires_grad=True)
        u = T.tensor([5.], requires_grad=True)
        return (x * 2).sum(), [x, u]
    both.raises(lambda T: T.autograd.grad(*f(T)))
    both.same(lambda T: T.autograd.grad(*f(T), allow_unused=True))
    both.same(lambda T: T.autograd.grad(*f(T), materialize_grads=True))
    both.same(lambda T: T.autograd.grad(*f(T), allow_unused=True, materialize_grads=True))
    both.raises(lambda T: T.autograd.grad(*f(T), allow_unused=False, materialize_grads=True),
                exc=ValueError)


def test_unused_input_index(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        u = T.tensor([5.], requires_grad=True)
        return T.autograd.grad((x * 2).sum(), [u, x])
    both.raises(snippet)


def test_unused_non_leaf_input(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        h = x * 3
        return T.autograd.grad((x * 2).sum(), [x, h], allow_unused=True)
    both.same(snippet)


def test_inputs_or_outputs_without_grad(both):
    def with_plain_input(T):
        x = T.tensor([1., 2.], requires_grad=True)
        c = T.tensor([1., 2.])
        return T.autograd.grad((x * c).sum(), [x, c])
    both.raises(with_plain_input)

    def with_plain_output(T):
        x = T.tensor([1., 2.], requires_grad=True)
        c = T.tensor([1., 2.])
        return T.autograd.grad(c.sum(), [x])
    both.raises(with_plain_output)

    def second_output_plain(T):
        x = T.tensor([1., 2.], requires_grad=True)
        return T.autograd.grad([(x * 2).sum(), T.ones(())], [x])
    both.raises(second_output_plain)


def test_retain_graph_defaults_to_create_graph(both):
    def freed(T):
        x = T.tensor([1., 2.], requires_grad=True)
        y = x.exp().sum()
        T.autograd.grad(y, x)
        T.autograd.grad(y, x)
    both.raises(freed, SECOND_TIME)

    def kept(T):
        x = T.tensor([1., 2.], requires_grad=True)
        y = x.exp().sum()
        a = T.autograd.grad(y, x, retain_graph=True)
        b = T.autograd.grad(y, x, create_graph=True)
        c = T.autograd.grad(y, x)
        return a, b, c
    both.same(kept)


def test_create_graph_third_derivative(both):
    def snippet(T):
        x = T.tensor(2., requires_grad=True)
        y = x ** 3
        (dy,) = T.autograd.grad(y, x, create_graph=True)
        (d2y,) = T.autograd.grad(dy, x, create_graph=True)
        (d3y,) = T.autograd.grad(d2y, x)
        return dy, d2y, d3y, x.grad
    both.same(snippet)


def test_grads_batched(both):
    def snippet(T):
        x = T.tensor([1., 2., 3.], requires_grad=True)
        y = x * T.tensor([10., 20., 30.])
        (jac,) = T.autograd.grad(y, x, grad_outputs=T.eye(3), is_grads_batched=True)
        return jac
    both.same(snippet)


def test_grads_batched_create_graph_and_unused(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        u = T.tensor([1.], requires_grad=True)
        y = x ** 2
        jac, gu = T.autograd.grad(y, [x, u], grad_outputs=T.eye(2), is_grads_batched=True,
                                  create_graph=True, allow_unused=True)
        (h,) = T.autograd.grad(jac.sum(), x)
        return jac.detach(), jac.requires_grad, gu, h  # (torch's vmap names the node)
    both.same(snippet)


def test_grads_batched_shape_error(both):
    def snippet(T):
        x = T.tensor([1., 2., 3.], requires_grad=True)
        return T.autograd.grad(x * 2, x, grad_outputs=T.ones(2, 2), is_grads_batched=True)
    both.raises(snippet, r"^If `is_grads_batched=True`, we interpret the first dimension of "
                         r"each grad_output as the batch dimension")


def test_dict_and_sequence_forms(both):
    def snippet(T):
        x = T.tensor(1., requires_grad=True)
        w = T.tensor(2., requires_grad=True)
        y = x * w
        d = T.autograd.grad(y, {"x": x, "w": w}, retain_graph=True)
        return d, T.autograd.grad([x * 3], (x,)), T.autograd.grad((x * 3,), [x])
    both.same(snippet)


def test_grad_then_backward(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        y = (x * x).sum()
        (g,) = T.autograd.grad(y, x, retain_graph=True)
        y.backward()
        return g, x.grad
    both.same(snippet)


def test_grad_outputs_shape_mismatch_and_only_inputs(both):
    both.raises(lambda T: T.autograd.grad(
        T.tensor([1., 2.], requires_grad=True) * 2, T.ones(2, requires_grad=True),
        grad_outputs=T.ones(3)), r"^Mismatch in shape: grad_output\[0\]")

    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        return T.autograd.grad((x * 2).sum(), x, only_inputs=False)
    both.same(snippet)
    assert both.warnings(snippet)[0][0] == "FutureWarning"


def test_grad_outputs_count_mismatch(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        return T.autograd.grad([x * 2, x * 3], x, grad_outputs=[T.ones(2)])
    both.raises(snippet)


def test_grad_wrt_output_itself_and_detach_blocks(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        y = x * 2
        a = T.autograd.grad(y, y, T.tensor([5., 6.]))
        z = (y.detach() * x).sum()
        return a, T.autograd.grad(z, x)
    both.same(snippet)


def test_grad_wrt_leaf_root_itself(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        return T.autograd.grad(x, x, T.tensor([3., 4.]))
    both.same(snippet)


def test_grad_result_dtype_and_shape(both):
    def snippet(T):
        a = T.tensor([[1., 2.]], dtype=T.float64, requires_grad=True)
        b = T.tensor([3., 4., 5.], requires_grad=True)
        y = (a.t() * b).sum()
        return T.autograd.grad(y, [a, b])
    both.same(snippet)


def test_grad_with_hooks_on_intermediate(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        y = x * 2
        seen = []
        y.register_hook(lambda g: seen.append(g.clone()) or g * 2)
        g = T.autograd.grad((y * y).sum(), x)
        return seen, g, x.grad
    both.same(snippet)


def test_grad_of_leaf_hook_runs_and_changes_result(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        x.register_hook(lambda g: g * 10)
        return T.autograd.grad((x * 2).sum(), x), x.grad
    both.same(snippet)


def test_grad_only_runs_needed_part(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        w = T.tensor([3., 4.], requires_grad=True)
        log = []
        a = x * 2
        b = w * 3
        a.register_hook(lambda g: log.append("a"))
        b.register_hook(lambda g: log.append("b"))
        g = T.autograd.grad((a * b).sum(), x)
        return g, log
    both.same(snippet)


def test_is_grads_batched_runs_one_batched_backward_and_frees_the_graph(both):
    def snippet(T):
        x = T.tensor([0.5, -1.0, 2.0], requires_grad=True)
        y = T.sin(x) * x.sum()
        return T.autograd.grad(y, x, T.eye(3), is_grads_batched=True)
    both.same(snippet)
    w = pb.tensor(np.random.default_rng(0).standard_normal((4, 4)), requires_grad=True)
    x = pb.tensor(np.random.default_rng(1).standard_normal(4), requires_grad=True)
    unused = pb.ones(2, requires_grad=True)
    y = pb.tanh(x @ w)
    built = replay.STATS["built"]
    gx, gw, gu = pb.autograd.grad(y, (x, w, unused), pb.eye(4), is_grads_batched=True,
                                  materialize_grads=True)
    assert replay.STATS["built"] == built + 1  # one generated backward for the 4 rows
    for b in range(4):
        want = pb.autograd.grad(pb.tanh(x @ w), (x, w), pb.eye(4)[b])
        np.testing.assert_allclose(gx[b].numpy(), want[0].numpy(), rtol=1e-12)
        np.testing.assert_allclose(gw[b].numpy(), want[1].numpy(), rtol=1e-12)
    assert gu.shape == (4, 2) and not gu.numpy().any()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.sum().backward()
