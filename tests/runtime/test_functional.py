"""torch.autograd.functional (reference section 9.1-9.6), compared with torch."""

from __future__ import annotations

import pytest
from custom_functions import cube


def F(T):
    return T.autograd.functional


def cube_sum(x):
    return (x ** 3).sum()


# ------------------------------------------------------------------------ jacobian [9.1]
def test_jacobian_shapes_and_nesting(both):
    def snippet(T):
        x = T.tensor([1., 2., 3.])
        return (F(T).jacobian(lambda a: a ** 2, x),
                F(T).jacobian(lambda a: a.sum(0), T.ones(2, 3)),
                F(T).jacobian(lambda a, b: a * b, (T.tensor([1., 2.]), T.tensor([3., 4.]))),
                F(T).jacobian(lambda a: (a * 2, a.sum()), T.ones(2)),
                F(T).jacobian(lambda a, b: (a * b, a + b), (T.ones(2), T.ones(2))),
                F(T).jacobian(lambda a: a.exp(), T.tensor(0.5)),
                F(T).jacobian(lambda a, b: (a * b).sum(), (T.ones(2), T.ones(3, 1))))
    both.same(snippet)


@pytest.mark.parametrize("kind", ["vectorize", "forward"])
def test_jacobian_strategies_agree(both, kind):
    opts = {"vectorize": True} if kind == "vectorize" else \
        {"vectorize": True, "strategy": "forward-mode"}

    def snippet(T):
        def f(a, b):
            return (a * b).sin(), (a.exp() * 2).sum(), b.t()
        a, b = T.tensor([[0.5, 1.0]]), T.tensor([[2.0, 3.0]])
        return (F(T).jacobian(f, (a, b), **opts),
                F(T).jacobian(lambda x: x ** 2, T.tensor([1., 2., 3.]), **opts),
                F(T).jacobian(lambda x: T.ones(3), T.tensor([1., 2.]), **opts))
    both.same(snippet)


def test_jacobian_independent_output_and_strict(both):
    both.same(lambda T: F(T).jacobian(lambda a: T.ones(3), T.tensor([1., 2.])))
    text = both.raises(lambda T: F(T).jacobian(lambda a: T.ones(3), T.tensor([1., 2.]),
                                               strict=True))
    assert text.startswith("Output 0 of the user-provided function does not require gradients.")
    both.raises(lambda T: F(T).jacobian(lambda a, b: a * 2, (T.ones(2), T.ones(2)),
                                        strict=True))
    both.raises(lambda T: F(T).jacobian(lambda a: a * 2, T.ones(2), strict=True,
                                        vectorize=True))
    both.raises(lambda T: F(T).jacobian(lambda a: a * 2, T.ones(2), strict=True,
                                        strategy="forward-mode", vectorize=True))
    both.raises(lambda T: F(T).jacobian(lambda a: a * 2, T.ones(2),
                                        strategy="forward-mode"), exc=NotImplementedError)
    both.raises(lambda T: F(T).jacobian(lambda a: a * 2, T.ones(2), create_graph=True,
                                        strategy="forward-mode"), exc=NotImplementedError)
    both.raises(lambda T: F(T).jacobian(lambda a: a * 2, T.ones(2), strategy="sideways"),
                exc=AssertionError)


def test_forward_mode_jacobian_keeps_a_graph_when_an_input_requires_grad(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        J = F(T).jacobian(lambda a: a ** 3, x, vectorize=True, strategy="forward-mode")
        (g,) = T.autograd.grad(J.sum(), x)
        return J.detach(), J.requires_grad, g
    both.same(snippet)


def test_jacobian_create_graph(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        J = F(T).jacobian(lambda a: a ** 3, x, create_graph=True)
        (g,) = T.autograd.grad(J.sum(), x)
        Jv = F(T).jacobian(lambda a: a ** 3, x, create_graph=True, vectorize=True)
        (gv,) = T.autograd.grad(Jv.sum(), x)
        return J.requires_grad, g, gv
    both.same(snippet)


def test_inputs_must_be_tensors(both):
    both.raises(lambda T: F(T).jacobian(lambda a: a, [T.ones(1)]), exc=TypeError)
    both.raises(lambda T: F(T).jacobian(lambda a, b: a, (T.ones(1), 2.0)), exc=TypeError)
    both.raises(lambda T: F(T).vjp(lambda a: [a], T.ones(1), T.ones(1)), exc=TypeError)


# ------------------------------------------------------------------------- hessian [9.3]
def test_hessian(both):
    def snippet(T):
        fwd = F(T).hessian(cube_sum, T.tensor([1., 2.]), vectorize=True,
                           outer_jacobian_strategy="forward-mode")
        return (F(T).hessian(cube_sum, T.tensor([1., 2.])),
                F(T).hessian(lambda a, b: (a * b).sum(), (T.ones(2), T.ones(2))),
                F(T).hessian(cube_sum, T.tensor([1., 2.]), vectorize=True),
                fwd.detach(), fwd.requires_grad,  # (torch's forward mode keeps a graph)
                F(T).hessian(lambda a: (a ** 2).sum() * a.sum(), T.ones(2, 2)))
    both.same(snippet)
    both.raises(lambda T: F(T).hessian(cube_sum, T.tensor([1., 2.]),
                                       outer_jacobian_strategy="forward-mode"),
                exc=NotImplementedError)


def test_hessian_needs_a_scalar_function(both):
    both.raises(lambda T: F(T).hessian(lambda v: v ** 2, T.tensor([1., 2.])))
    both.raises(lambda T: F(T).hessian(lambda v: (v.sum(), v.sum()), T.tensor([1., 2.])))
    both.raises(lambda T: F(T).hessian(lambda v: (v * 2).sum(), T.tensor([1., 2.]),
                                       strict=True))


# ------------------------------------------------------------------------------ vjp [9.4]
def test_vjp(both):
    def snippet(T):
        x = T.tensor([1., 2., 3.])
        out, v = F(T).vjp(lambda a: a ** 2, x, T.ones(3))
        out2, v2 = F(T).vjp(lambda t: (t ** 2).sum(), x)
        out3, vs = F(T).vjp(lambda a, b: a * b, (T.ones(2), T.full((2,), 3.)), T.ones(2))
        out4, v4 = F(T).vjp(lambda a: (a * 2, a.sum()), x, (T.ones(3), T.tensor(2.)))
        return out, v, out2, v2, out3, vs, out4, v4
    both.same(snippet)


def test_vjp_errors(both):
    x = lambda T: T.tensor([1., 2., 3.])  # noqa: E731
    text = both.raises(lambda T: F(T).vjp(lambda a: a ** 2, x(T)))
    assert text == ("The vector v can only be None if the user-provided function returns a "
                    "single Tensor with a single element.")
    both.raises(lambda T: F(T).vjp(lambda a: a ** 2, x(T), T.ones(2)))
    both.raises(lambda T: F(T).vjp(lambda a: (a, a), x(T), T.ones(3)))
    both.raises(lambda T: F(T).vjp(lambda a: (a, a), x(T), (T.ones(3), T.ones(2))))
    both.raises(lambda T: F(T).vjp(lambda a, b: a * 2, (x(T), x(T)), T.ones(3), strict=True))


def test_vjp_create_graph_and_strict(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        out, v = F(T).vjp(lambda a: a ** 3, x, T.ones(2), create_graph=True)
        (g,) = T.autograd.grad(v.sum(), x)
        return out, v, g
    both.same(snippet)
    both.raises(lambda T: F(T).vjp(lambda a: a * 2, T.ones(2, requires_grad=True), T.ones(2),
                                   create_graph=True, strict=True))


# ------------------------------------------------------------------------------ jvp [9.5]
def test_jvp(both):
    def snippet(T):
        x = T.tensor([1., 2., 3.])
        a = F(T).jvp(lambda a: a ** 2, x, T.ones(3))
        b = F(T).jvp(lambda s: s * T.tensor([1., 2.]), T.tensor(3.))
        c = F(T).jvp(lambda a, b: (a * b, a.sin()), (x, x * 2), (T.ones(3), T.zeros(3)))
        return a, b, c
    both.same(snippet)


def test_jvp_errors_and_strict(both):
    text = both.raises(lambda T: F(T).jvp(lambda a: a ** 2, T.tensor([1., 2., 3.])))
    assert text == ("The vector v can only be None if the input to the user-provided function "
                    "is a single Tensor with a single element.")
    both.raises(lambda T: F(T).jvp(lambda a: a ** 2, T.ones(3), T.ones(2)))
    both.raises(lambda T: F(T).jvp(lambda a: T.ones(2), T.ones(3), T.ones(3), strict=True))
    both.raises(lambda T: F(T).jvp(lambda a, b: a * 2, (T.ones(2), T.ones(2)),
                                   (T.ones(2), T.ones(2)), strict=True))


def test_jvp_create_graph(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        out, t = F(T).jvp(lambda a: a ** 3, x, T.ones(2), create_graph=True)
        (g,) = T.autograd.grad(t.sum(), x)
        return out, t, g
    both.same(snippet)


# ---------------------------------------------------------------------- hvp, vhp [9.6]
def test_hvp_and_vhp(both):
    def snippet(T):
        x = T.tensor([1., 2.])
        a = F(T).hvp(cube_sum, x, T.tensor([1., 0.]))
        b = F(T).vhp(cube_sum, x, T.tensor([1., 0.]))
        c = F(T).hvp(lambda p, q: (p * q * q).sum(), (x, x * 3), (T.ones(2), T.ones(2)))
        d = F(T).vhp(lambda s: s ** 3, T.tensor(2.))
        return a, b, c, d
    both.same(snippet)


@pytest.mark.parametrize("name", ["hvp", "vhp"])
def test_hvp_and_vhp_errors(both, name):
    fn = lambda T: getattr(F(T), name)  # noqa: E731
    text = both.raises(lambda T: fn(T)(lambda t: t ** 2, T.tensor([1., 2.]), T.ones(2)))
    assert text == (f"The Tensor returned by the function given to {name} should contain a "
                    "single element")
    both.raises(lambda T: fn(T)(lambda t: (t.sum(),), T.tensor([1., 2.]), T.ones(2)))
    both.raises(lambda T: fn(T)(cube_sum, T.tensor([1., 2.])))
    both.raises(lambda T: fn(T)(lambda t: (t * 2).sum(), T.tensor([1., 2.]), T.ones(2),
                                strict=True))


def test_create_graph_products(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        _, h = F(T).hvp(cube_sum, x, T.tensor([1., 1.]), create_graph=True)
        _, v = F(T).vhp(cube_sum, x, T.tensor([1., 1.]), create_graph=True)
        H = F(T).hessian(cube_sum, x, create_graph=True)
        return (T.autograd.grad(h.sum(), x), T.autograd.grad(v.sum(), x),
                T.autograd.grad(H.sum(), x))
    both.same(snippet)


def test_functional_on_a_custom_function(both):
    def snippet(T):
        Cube = cube(T)
        x = T.tensor([1., 2.])
        return (F(T).jacobian(Cube.apply, x), F(T).hessian(lambda a: Cube.apply(a).sum(), x),
                F(T).jvp(Cube.apply, x, T.ones(2)))
    both.same(snippet)
