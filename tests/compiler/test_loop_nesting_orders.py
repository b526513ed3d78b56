"""Nesting in every order (issue 17): loops in loops, each program through every front
door and composition of doors (grad of grad, jacrev or jacfwd of grad, hessian, vmap of
grad, jvp, pb.compile with create_graph), against central finite differences (float64).

The programs are small (a few steps of two-element carries) so the whole sweep costs
a few seconds: what it checks is that every composition traces, verifies and agrees."""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest

import pullback as pb

from .test_loop_writes import soft_dtw  # (soft-DTW as the loop-writes tests write it)

RNG = np.random.default_rng(0)
XS = RNG.standard_normal((3, 2)) * 0.5
P, Q = RNG.random(4), RNG.random(4)
W = np.array([0.7, -0.4])


def scan_in_scan(w):
    def outer(c, x):
        def inner(h, _):
            return np.tanh(h * w + x), None
        h, _ = pb.scan(inner, c, None, length=2)
        return h, h.sum()
    c, ys = pb.scan(outer, np.zeros(2) + 0.1, XS)
    return ys.sum() + (c * c).sum()


def remat_in_scan(w):
    def outer(c, x):
        def inner(h, _):
            return np.tanh(h * w + x), None
        h, _ = pb.scan(inner, c, None, length=4, remat=2)
        return h, h.sum()
    c, ys = pb.scan(outer, np.zeros(2) + 0.1, XS, remat=True)
    return ys.sum() + (c * c).sum()


def for_in_for(w):
    h, total = np.zeros(2) + 0.1, 0.0
    for x in XS:
        for _ in range(3):
            h = np.tanh(h * w + x)
        total = total + h.sum()
    return total + (h * h).sum()


def while_in_for(w):
    total = 0.0
    for x in XS:
        v = 0.1
        while v < 1.5:  # (a trip count of the data: 4 or 5 steps)
            v = v * 1.7 + (w * w).sum() * 0.1 + x.sum() * 0.01
        total = total + v * w.sum()
    return total


def break_in_for(w):
    total = 0.0
    for i in range(3):
        h = w * 0.5
        for j in range(6):
            h = np.sin(h) + XS[i] * 0.3
            if j >= i + 2:
                break
        total = total + (h * h).sum()
    return total


def while_loop_in_scan(w):
    def step(c, x):
        v = pb.while_loop(lambda v: v.sum() < 2.0, lambda v: v * 1.3 + w * w * 0.1,
                          c * 0 + 0.5)
        return c + v * x, (v * w).sum()
    c, ys = pb.scan(step, np.ones(2), XS)
    return ys.sum() + (c * w).sum()


def soft_dtw_4x4(w):
    """soft-DTW of a 4x4 cost matrix that two parameters shape."""
    return soft_dtw((P[:, None] - Q[None, :] * w[0]) ** 2 + w[1])


def rnn_cond(w):
    def step(h, x):
        a = np.tanh(h * w + x)
        h = pb.cond(a.sum() > 0, lambda: a * 1.5, lambda: a * a)
        return h, h.sum()
    h, ys = pb.scan(step, np.zeros(2) + 0.2, XS)
    return ys.sum() + (h * h).sum()


PROGRAMS = {f.__name__: f for f in (scan_in_scan, remat_in_scan, for_in_for, while_in_for,
                                     break_in_for, while_loop_in_scan, soft_dtw_4x4,
                                     rnn_cond)}


def fd(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        a, b = x.copy(), x.copy()
        a[i] += eps
        b[i] -= eps
        g[i] = (f(a) - f(b)) / (2 * eps)
    return g


@cache
def expected(name: str) -> tuple:
    """(gradient, Hessian) of the program at W by central differences."""
    f = PROGRAMS[name]
    hessian = np.stack([fd(lambda u, k=k: fd(f, u, 1e-4)[k], W, 1e-4) for k in range(W.size)])
    return fd(f, W), hessian


def compiled_create_graph(f):
    """pb.compile, backward with create_graph twice (the second call runs generated code),
    then the gradient of the gradient's sum."""
    cf = pb.compile(f)
    for _ in range(2):
        x = pb.tensor(W, requires_grad=True)
        (g,) = pb.autograd.grad(cf(x), x, create_graph=True)
    (gg,) = pb.autograd.grad(g.sum(), x)
    assert cf.cache.info.fallbacks == 0
    return np.concatenate([g.detach().numpy(), gg.numpy()])


V = np.array([0.3, 1.1])
DOORS = {
    "grad": (lambda f: pb.grad(f)(W), lambda g, H: g),
    "jacrev": (lambda f: pb.jacrev(f)(W), lambda g, H: g),
    "jacfwd": (lambda f: pb.jacfwd(f)(W), lambda g, H: g),
    "jvp": (lambda f: pb.jvp(f, (W,), (V,))[1], lambda g, H: g @ V),
    "vmap(grad)": (lambda f: pb.vmap(pb.grad(f))(np.stack([W, W])),
                   lambda g, H: np.stack([g, g])),
    "grad(vmap.sum)": (lambda f: pb.grad(lambda u: pb.vmap(f)(np.stack([u, u])).sum())(W),
                       lambda g, H: 2 * g),
    "jacrev(vmap(grad))": (lambda f: pb.jacrev(lambda u: pb.vmap(pb.grad(f))(
        np.stack([u, u])).sum(0))(W), lambda g, H: 2 * H),
    "hessian": (lambda f: pb.hessian(f)(W), lambda g, H: H),
    "grad(grad.sum)": (lambda f: pb.grad(lambda u: pb.grad(f)(u).sum())(W),
                       lambda g, H: H.sum(0)),
    "jacrev(grad)": (lambda f: pb.jacrev(pb.grad(f))(W), lambda g, H: H),
    "jacfwd(grad)": (lambda f: pb.jacfwd(pb.grad(f))(W), lambda g, H: H),
    "compile+create_graph": (compiled_create_graph,
                             lambda g, H: np.concatenate([g, H.sum(0)])),
}


@pytest.mark.parametrize("door", list(DOORS))
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_nested_loops_through_every_door(name: str, door: str) -> None:
    run, want = DOORS[door]
    g, H = expected(name)
    np.testing.assert_allclose(np.asarray(run(PROGRAMS[name]), dtype=np.float64),
                               want(g, H), rtol=1e-5, atol=1e-6)


def test_a_gradient_inside_vmap_is_differentiated_through() -> None:
    """pb.vmap traces its function on its own: a pb.grad inside it records a backward
    the outer transform differentiates (it was a constant: zeros, 'Output seems
    independent of input')."""
    def f(w):
        return (np.sin(w) * w[0]).sum()
    per_row = pb.vmap(pb.grad(f))
    want = 2 * pb.hessian(f)(W)
    np.testing.assert_allclose(per_row(np.stack([W, W])), np.stack([pb.grad(f)(W)] * 2))
    for door in (pb.jacrev, pb.jacfwd):
        np.testing.assert_allclose(door(lambda u: per_row(np.stack([u, u])).sum(0))(W),
                                   want, rtol=1e-12)
    t = pb.tensor(W, requires_grad=True)
    out = pb.vmap(lambda z: pb.autograd.grad((z.sin() * z[0]).sum(), z,
                                             create_graph=True)[0])(t[None]).sum()
    np.testing.assert_allclose(pb.autograd.grad(out, t)[0].numpy(), want.sum(0) / 2,
                               rtol=1e-12)
