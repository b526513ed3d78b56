"""Higher-order derivatives through create_graph, and vector-Jacobian products
(reference 2.8, 3.7, E.11, section 14 items 12-14), compared with torch."""

from __future__ import annotations

import pytest


def test_third_derivative_of_cube(both):
    def snippet(T):
        x = T.tensor(2., requires_grad=True)
        y = x ** 3
        (dy,) = T.autograd.grad(y, x, create_graph=True)
        (d2y,) = T.autograd.grad(dy, x, create_graph=True)
        (d3y,) = T.autograd.grad(d2y, x)
        return dy, d2y, d3y
    both.same(snippet)


def test_backward_create_graph_then_backward_of_grad(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        y = (x ** 3).sum()
        y.backward(create_graph=True)
        g = x.grad
        first = (g, g.requires_grad, g.grad_fn.name(), type(g.grad_fn).__name__)
        x.grad = None
        g.sum().backward()
        return first, x.grad
    both.same(snippet)


def test_create_graph_accumulation_is_differentiable(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        (x ** 2).sum().backward(create_graph=True)
        (x ** 3).sum().backward(create_graph=True)
        g = x.grad
        (h,) = T.autograd.grad(g.sum(), x)
        return g, g.grad_fn.name(), h
    both.same(snippet)


def test_plain_backward_after_create_graph_accumulates_in_place(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        (x ** 2).sum().backward(create_graph=True)
        g = x.grad
        (x * 3).sum().backward()
        return g is x.grad, x.grad, x.grad._version
    both.same(snippet)


FUNCS = {
    "poly": lambda T, x: (x ** 3 - 2 * x ** 2 + x).sum(),
    "exp_log": lambda T, x: (x.exp() * (x + 3).log()).sum(),
    "trig": lambda T, x: (x.sin() * x.cos() + x.tanh()).sum(),
    "sigmoid": lambda T, x: (x.sigmoid() * x).sum(),
    "div": lambda T, x: (1 / (x * x + 1)).sum(),
    "sqrt": lambda T, x: ((x * x + 1).sqrt()).sum(),
    "pow_tensor": lambda T, x: ((x + 2) ** x).sum(),
    "rpow": lambda T, x: (2 ** x).sum(),
    "softmax": lambda T, x: (T.softmax(x, 0) * T.tensor([1., 2., 3.])).sum(),
    "log_softmax": lambda T, x: (T.log_softmax(x, 0) * T.tensor([1., 2., 3.])).sum(),
    "matmul": lambda T, x: (x @ T.tensor([[1., 2.], [3., 4.], [5., 6.]], dtype=T.float64)
                            * x[:2]).sum(),
    "views": lambda T, x: (x.view(3, 1).expand(3, 2) * x.unsqueeze(1)).t().reshape(6)[1:]
    .pow(2).sum(),
    "index": lambda T, x: (x[[0, 2, 2]] ** 2).sum() + x[1] ** 3,
    "mean_max": lambda T, x: (x * x).mean() + (x ** 2).max() + (x.view(1, 3) ** 2).sum(1)
    .mean(),
    "abs_relu": lambda T, x: ((x - 1).abs() ** 2 + (x * x).relu() * x).sum(),
    "where": lambda T, x: T.where(x > 0.5, x ** 2, x ** 3).sum(),
    "clamp": lambda T, x: (x.clamp(-1, 1.5) ** 2).sum(),
    "maximum": lambda T, x: (T.maximum(x * x, x + 1) * x).sum(),
}


@pytest.mark.parametrize("name", list(FUNCS))
def test_hessian_vector_products(both, name):
    def snippet(T):
        x = T.tensor([0.3, 0.7, 1.2], dtype=T.float64, requires_grad=True)
        y = FUNCS[name](T, x)
        (g,) = T.autograd.grad(y, x, create_graph=True)
        (hv,) = T.autograd.grad(g, x, grad_outputs=T.tensor([1., -2., 0.5], dtype=T.float64),
                                retain_graph=True)
        (gg,) = T.autograd.grad((g * g).sum(), x)
        # (the nodes inside g's graph are torch's fused backward kernels: compare values)
        return y, g.detach(), g.requires_grad, hv, gg
    both.same(snippet, rtol=1e-9, atol=1e-12)


def test_grad_of_grad_with_respect_to_two_inputs(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        w = T.tensor([3., 4.], requires_grad=True)
        y = (x * x * w).sum()
        gx, gw = T.autograd.grad(y, [x, w], create_graph=True)
        mixed = T.autograd.grad(gx.sum(), [x, w], retain_graph=True)
        return gx, gw, mixed, T.autograd.grad(gw.sum(), [x, w], allow_unused=True)
    both.same(snippet)


def test_second_derivative_of_linear_function_is_unused(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        (g,) = T.autograd.grad((x * 3).sum(), x, create_graph=True)
        return g, g.requires_grad
    both.same(snippet)


def test_grad_of_constant_gradient_has_no_graph(both):
    both.raises(lambda T: T.autograd.grad(
        T.autograd.grad((T.tensor([1., 2.], requires_grad=True) * 3).sum(),
                        T.tensor([0.]), allow_unused=True)))

    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        (g,) = T.autograd.grad((x * 3).sum(), x, create_graph=True)
        return T.autograd.grad(g.sum(), x)
    both.raises(snippet)


def test_create_graph_on_retained_and_hooked_graph(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        h = x ** 2
        h.retain_grad()
        y = (h * x).sum()
        y.backward(create_graph=True)
        hg = h.grad
        return hg, hg.requires_grad, x.grad
    both.same(snippet)


def test_create_graph_through_in_place_and_setitem(both):
    def snippet(T):
        x = T.tensor([1., 2., 3.], requires_grad=True)
        y = x * 1
        y.mul_(x)
        y[0] = x[1] ** 3
        (g,) = T.autograd.grad(y.sum(), x, create_graph=True)
        (h,) = T.autograd.grad(g.sum(), x)
        return y, g, h
    both.same(snippet)


def test_create_graph_of_nodes_called_directly(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        y = x ** 3
        g = y.grad_fn(T.ones(2))
        (h,) = T.autograd.grad(g.sum(), x)
        return g, h
    both.same(snippet)


# ---------------------------------------------------------------- vector-Jacobian products
def test_vjp_with_vector(both):
    def snippet(T):
        x = T.tensor([1., 2., 3.], requires_grad=True)
        v = T.tensor([0.5, -1., 2.])
        (x * 2).backward(v)
        first = x.grad.clone()
        x.grad = None
        T.autograd.backward([x * x, x.exp()], [v, T.ones(3)])
        return first, x.grad
    both.same(snippet)


def test_vjp_matrix_output(both):
    def snippet(T):
        x = T.tensor([[1., 2.], [3., 4.]], requires_grad=True)
        W = T.tensor([[0.5, -1.], [2., 0.25]], requires_grad=True)
        y = x @ W
        v = T.tensor([[1., 0.], [0., 1.]])
        y.backward(v)
        return x.grad, W.grad
    both.same(snippet)


def test_jacobian_rows_by_repeated_vjp(both):
    def snippet(T):
        x = T.tensor([1., 2., 3.], requires_grad=True)
        y = x.sin() * x.sum()
        rows = []
        for i in range(3):
            e = T.zeros(3)
            e[i] = 1.
            rows.append(T.autograd.grad(y, x, e, retain_graph=True)[0])
        return rows
    both.same(snippet)
