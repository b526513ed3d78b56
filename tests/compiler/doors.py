"""The front doors of the one cache loop, each as ``door(f) -> (fn, call)``: ``fn``
has ``fn.cache``, and ``call(x)`` returns ``(value or None, gradient)`` as numpy."""

import numpy as np

import pullback as pb


def via_compile(f):
    cf = pb.compile(f)

    def call(x):
        t = pb.tensor(x, requires_grad=True)
        out = cf(t)
        out.backward()
        return out.item(), t.grad.numpy()
    return cf, call


def via_grad(f):
    g = pb.grad(f)
    return g, lambda x: (None, g(x))


def via_value_and_grad(f):
    vg = pb.value_and_grad(f)

    def call(x):
        value, grad = vg(x)
        return float(value), grad
    return vg, call


def via_vjp(f):
    """``pb.vjp`` of a ``pb.compile`` function: it goes through that function's cache."""
    cf = pb.compile(f)

    def call(x):
        out, vjp_fn = pb.vjp(cf, x)
        (grad,) = vjp_fn(np.ones(()))
        return float(out), grad
    return cf, call
