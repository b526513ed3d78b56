"""The front doors take pytrees: parameters in lists, tuples, dicts and namedtuples get
gradients in the same structure (as JAX's), numbers inside them are traced, not baked in."""

from __future__ import annotations

from collections import namedtuple

import numpy as np
import pytest
from ops import numeric_grad

import pullback as pb

Params = namedtuple("Params", ["w", "b"])
RNG = np.random.default_rng(0)
X = RNG.standard_normal((5, 3))
W, B = RNG.standard_normal((3, 2)), RNG.standard_normal(2)


def loss(p, x):
    w, b = (p["w"], p["b"]) if isinstance(p, dict) else (p[0], p[1])
    scale = p["lam"] if isinstance(p, dict) and "lam" in p else 1.0
    return (np.tanh(x @ w + b) ** 2).sum() * scale


def _fd(params_fn, leaf: np.ndarray) -> np.ndarray:
    return numeric_grad(lambda v: float(loss(params_fn(v), X)), leaf)


@pytest.mark.parametrize("make", [lambda w, b: [w, b], lambda w, b: (w, b),
                                  lambda w, b: {"w": w, "b": b}, Params],
                         ids=["list", "tuple", "dict", "namedtuple"])
def test_grad_of_a_container_keeps_its_structure(make):
    g = pb.grad(loss)(make(W, B), X)
    assert type(g) is type(make(W, B))
    gw, gb = (g["w"], g["b"]) if isinstance(g, dict) else g
    np.testing.assert_allclose(gw, _fd(lambda v: make(v, B), W), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gb, _fd(lambda v: make(W, v), B), rtol=1e-6, atol=1e-8)


def test_a_hyperparameter_in_a_dict_is_traced_not_baked_in():
    vg = pb.value_and_grad(loss)
    (v1, g1), (v10, g10) = vg({"w": W, "b": B, "lam": 1.0}, X), vg(
        {"w": W, "b": B, "lam": 10.0}, X)
    np.testing.assert_allclose(v10, 10 * v1)
    np.testing.assert_allclose(g10["w"], 10 * g1["w"])
    np.testing.assert_allclose(g1["lam"], v1)  # d(loss)/d(lam) = loss / lam
    assert isinstance(g1["lam"], float) and vg.cache.info.misses == 1


def test_tuple_argnums_over_trees_and_tensors():
    gp, gx = pb.grad(loss, argnums=(0, 1))([pb.tensor(W), pb.tensor(B)], pb.tensor(X))
    assert isinstance(gp, list) and all(isinstance(g, pb.Tensor) for g in gp + [gx])
    np.testing.assert_allclose(gx.numpy(), numeric_grad(lambda v: float(loss([W, B], v)), X),
                               rtol=1e-6, atol=1e-8)


def test_nested_inside_grad_of_grad_and_eager_paths():
    """The eager path (inside another transform) takes pytrees too."""
    def outer(s):
        return pb.grad(lambda p: (p[0] * s).sum() ** 2)([np.array([1.0, 2.0])])[0].sum()
    np.testing.assert_allclose(pb.grad(outer)(3.0), 24 * 3.0, rtol=1e-12)  # outer = 12 s^2


def test_compile_keeps_the_graph_to_tensors_in_a_list():
    @pb.compile
    def f(ps, x):
        return ((x @ ps[0] + ps[1]).tanh() ** 2).sum()

    w, b = pb.tensor(W, requires_grad=True), pb.tensor(B, requires_grad=True)
    f([w, b], pb.tensor(X)).backward()
    np.testing.assert_allclose(w.grad.numpy(), _fd(lambda v: [v, B], W), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(b.grad.numpy(), _fd(lambda v: [W, v], B), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("bad", [3, [np.ones(2), "a"], {"k": 2}])
def test_a_target_that_is_not_floats_is_refused(bad):
    with pytest.raises(TypeError, match=r"argument 0 \(argnums\)"):
        pb.grad(lambda p: 1.0)(bad)


@pytest.mark.parametrize("door", [pb.value_and_grad, pb.compile])
def test_containers_a_name_or_keys_leave_alike_are_two_variants(door):
    """Two namedtuples named P with their fields in other orders, two OrderedDicts with
    their keys in other orders: one cache for the function, a variant each (the first's
    read the other's fields in the wrong places: 42 where numpy gives 24)."""
    from collections import OrderedDict

    def f(p):
        first, second = (p.a, p.b) if hasattr(p, "a") else tuple(p.values())
        return first.sum() * 1.0 + second.sum() * 10.0

    x, y = np.ones(2), np.full(2, 2.0)
    P1, P2 = namedtuple("P", "a b"), namedtuple("P", "b a")
    g = door(f)
    for p in (P1(x, y), P2(x, y), OrderedDict(a=x, b=y), OrderedDict(b=y, a=x)):
        value = g(p)
        value = value[0] if door is pb.value_and_grad else value
        np.testing.assert_allclose(float(np.asarray(value)), f(p))
        if door is pb.value_and_grad:
            grads = g(p)[1]
            assert type(grads) is type(p)
            first, second = (grads.a, grads.b) if isinstance(p, tuple) else grads.values()
            np.testing.assert_allclose([first, second], [[1.0, 1.0], [10.0, 10.0]])
