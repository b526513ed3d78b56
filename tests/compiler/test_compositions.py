"""Random compositions of the front doors: grad, value_and_grad, vjp and compile nested
up to three deep, closed over, on containers, around random small programs. Each
composite is differentiated by ``pb.grad`` and by eager ``backward()`` and checked
against float64 central finite differences of the composite itself (which runs the
transforms on plain arrays). ``PULLBACK_COMPOSE=2000 python -m pytest
tests/compiler/test_compositions.py`` draws more."""

from __future__ import annotations

import os

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ops import numeric_grad

import pullback as pb

EXAMPLES = int(os.environ.get("PULLBACK_COMPOSE", "60"))
X = np.array([0.4, -0.7, 1.1])
U = np.array([0.9, -1.3, 0.6])
W = np.array([1.2, 0.5, -0.8])

UNARY = {"sin": np.sin, "cos": np.cos, "tanh": np.tanh, "square": lambda v: v * v,
         "scale": lambda v: v * 0.7, "exp": lambda v: np.exp(v * 0.5),
         "pb_sin": pb.sin, "mean_shift": lambda v: v - v.mean()}
BINARY = {"add": lambda a, b: a + b, "mul": lambda a, b: a * b}


def program(steps: list):
    """A scalar function of a 3-vector: the steps run on a stack that starts ``[x]``."""
    def p(x):
        stack = [x]
        for s in steps:
            if s == "x":
                stack.append(x)
            elif s in UNARY:
                stack.append(UNARY[s](stack.pop()))
            elif len(stack) > 1:
                b, a = stack.pop(), stack.pop()
                stack.append(BINARY[s](a, b))
        return (stack[-1] * W).sum()
    return p


def _sum(v):
    return v.sum()


# each layer takes a scalar function of a 3-vector and returns another
LAYERS = {
    "grad": lambda h: lambda x: _sum(pb.grad(h)(x) * U),
    "value_and_grad": lambda h: lambda x: (lambda vg: vg[0] + _sum(vg[1] * U))(
        pb.value_and_grad(h)(x)),
    "vjp": lambda h: lambda x: (lambda o: _sum(o[1](U)[0]) + _sum(o[0] * W))(
        pb.vjp(lambda y: h(y) * y, x)),
    "compile": lambda h: pb.compile(h),
    "grad_of_dict": lambda h: lambda x: _sum(pb.grad(lambda p: h(p["x"]) * p["s"])(
        {"x": x, "s": 1.5})["x"] * U),
    "closed_over": lambda h: lambda x: _sum(pb.grad(lambda y: h(y * x))(U) * W),
    "argnums": lambda h: lambda x: _sum(pb.grad(lambda a, b: h(a * b), argnums=(0, 1))(
        x, W)[1] * U),
}

steps = st.lists(st.sampled_from(["x", *UNARY, *BINARY]), min_size=1, max_size=6)
layers = st.lists(st.sampled_from(sorted(LAYERS)), min_size=1, max_size=3)


def compose(prog: list, names: list):
    h = program(prog)
    for name in names:
        h = LAYERS[name](h)
    return h


def _float(v) -> float:
    return float(v.item() if isinstance(v, pb.Tensor) else v)


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(prog=steps, names=layers)
def test_random_composition_matches_finite_differences(prog, names):
    h = compose(prog, names)
    fd = numeric_grad(lambda x: _float(h(x)), X, eps=1e-5)
    tol = dict(rtol=1e-5, atol=1e-6 * (1 + np.abs(fd).max()))
    np.testing.assert_allclose(pb.grad(h)(X), fd, **tol, err_msg=f"grad {prog} {names}")
    x = pb.tensor(X, requires_grad=True)
    out = h(x)
    if out.requires_grad:
        out.backward()
    eager = np.zeros(3) if x.grad is None else x.grad.numpy()  # (torch's None: no path)
    np.testing.assert_allclose(eager, fd, **tol, err_msg=f"eager {prog} {names}")
    np.testing.assert_allclose(pb.grad(pb.compile(h))(X), fd, **tol,
                               err_msg=f"grad of compile {prog} {names}")


def test_the_deepest_compositions_once_each():
    """Every layer directly inside every other, around one program with all ops."""
    prog = ["sin", "x", "mul", "tanh", "x", "add", "square", "exp"]
    for outer in LAYERS:
        for inner in LAYERS:
            h = compose(prog, [inner, outer])
            fd = numeric_grad(lambda x, h=h: _float(h(x)), X, eps=1e-5)
            np.testing.assert_allclose(pb.grad(h)(X), fd, rtol=1e-5,
                                       atol=1e-6 * (1 + np.abs(fd).max()),
                                       err_msg=f"{inner} in {outer}")


def test_no_perturbation_confusion():
    """d/dx [x * d/dy (x + y)] = 1: the inner derivative must not see the outer x."""
    f = lambda x: x * pb.grad(lambda y: x + y)(1.0)
    assert pb.grad(f)(2.0) == 1.0
    g = lambda x: x * pb.vjp(lambda y: x * y, 1.0)[1](1.0)[0]  # d/dx x^2 = 2x
    assert pb.grad(g)(3.0) == 6.0


def test_grad_of_grad_through_an_in_place_write_into_a_view():
    """The inner backward reads the value autograd saved before ``y[1:] *= y[0]``: the
    outer trace must know it as that value (it was a stale captured constant)."""
    def inner(x):
        y = x * 1.0
        y[1:] *= y[0]
        return np.sum(y * y)

    outer = pb.grad(lambda x: (pb.grad(inner)(x) ** 2).sum())
    for x in (np.array([0.5, 1.0, 1.5]), np.array([2.0, -1.0, 0.3])):  # traced, then cached
        fd = numeric_grad(lambda a: float((pb.grad(inner)(a.copy()) ** 2).sum()), x)
        np.testing.assert_allclose(outer(x), fd, rtol=1e-6, atol=1e-6)
