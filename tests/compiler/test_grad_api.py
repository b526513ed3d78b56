"""pb.grad / pb.value_and_grad / pb.vjp: kinds in, kinds out; argnums; aux; nesting."""

import numpy as np
import pytest

import pullback as pb


def loss(w, x):
    return (pb.tanh(x @ w) ** 2).mean()


def _data():
    rng = np.random.default_rng(1)
    return rng.standard_normal((3, 2)), rng.standard_normal((4, 3))


def _reference(w, x, torch):
    tw = torch.tensor(w, requires_grad=True)
    tx = torch.tensor(x, requires_grad=True)
    v = (torch.tanh(tx @ tw) ** 2).mean()
    v.backward()
    return v.item(), tw.grad.numpy(), tx.grad.numpy()


def test_numpy_in_numpy_out_matches_torch(torch):
    w, x = _data()
    g = pb.grad(loss)
    for _ in range(2):  # trace, then cached generated code
        gw = g(w, x)
    assert isinstance(gw, np.ndarray) and gw.dtype == np.float64
    v, tw, _ = _reference(w, x, torch)
    np.testing.assert_allclose(gw, tw, rtol=1e-10)
    assert g.cache.info.hits == 1


def test_argnums_tuple_and_value(torch):
    w, x = _data()
    (v, (gw, gx)) = pb.value_and_grad(loss, argnums=(0, 1))(w, x)
    rv, tw, tx = _reference(w, x, torch)
    assert v == pytest.approx(rv)
    np.testing.assert_allclose(gw, tw, rtol=1e-10)
    np.testing.assert_allclose(gx, tx, rtol=1e-10)


def test_tensors_in_tensors_out():
    w, x = _data()
    gw = pb.grad(loss)(pb.tensor(w), pb.tensor(x))
    assert isinstance(gw, pb.Tensor) and gw.dtype == pb.float64


def test_python_float_in_float_out_and_grad_of_grad():
    assert pb.grad(lambda a: a ** 3)(2.0) == pytest.approx(12.0)
    assert isinstance(pb.grad(lambda a: a ** 3)(2.0), float)
    assert pb.grad(pb.grad(lambda a: a ** 3))(2.0) == pytest.approx(12.0)
    assert pb.grad(pb.grad(pb.grad(lambda a: a ** 3)))(2.0) == pytest.approx(6.0)


def test_has_aux():
    w, x = _data()
    (v, aux), gw = pb.value_and_grad(lambda w, x: (loss(w, x), x.sum()), has_aux=True)(w, x)
    assert aux == pytest.approx(x.sum())
    g, aux2 = pb.grad(lambda w, x: (loss(w, x), x.sum()), has_aux=True)(w, x)
    np.testing.assert_allclose(g, gw)


def test_non_scalar_output_is_refused_with_torch_func_wording():
    with pytest.raises(RuntimeError, match=r"grad\(f\)\(\*args\): Expected f\(\*args\) to "
                                           r"return a scalar Tensor, got tensor with 1 dims"):
        pb.grad(lambda a: a * 2)(np.ones(3))


def test_unused_argument_gets_zeros():
    g = pb.grad(lambda a, b: (a * 2).sum(), argnums=1)(np.ones(2), np.ones(3))
    np.testing.assert_array_equal(g, np.zeros(3))


def test_vjp_returns_output_and_function(torch):
    x = np.array([1.0, 2.0, 3.0])
    out, vjp_fn = pb.vjp(pb.sin, x)
    np.testing.assert_allclose(out, np.sin(x))
    (g,) = vjp_fn(np.ones(3))
    np.testing.assert_allclose(g, np.cos(x))
    (g2,) = vjp_fn(np.full(3, 2.0))  # vjp_fn can be called again
    np.testing.assert_allclose(g2, 2 * np.cos(x))


def test_python_control_flow_on_static_ints():
    def f(w, n):
        h = w
        for _ in range(n):
            h = h * w
        return h.sum()
    g = pb.grad(f)
    assert g(np.array([2.0]), 2)[0] == pytest.approx(12.0)  # d/dw w^3
    assert g(np.array([2.0]), 3)[0] == pytest.approx(32.0)  # d/dw w^4: another variant


@pytest.mark.parametrize("door", [pb.grad, pb.value_and_grad, pb.jacrev, pb.jacfwd])
def test_argnums_errors_are_one_kind_in_every_door(door) -> None:
    """One check of argnums for every door: out of range, not an int, twice; a
    ValueError (JAX's kind) that is also the RuntimeError torch.func raises."""
    f = lambda x, y: (x * y).sum()
    x = np.ones(2)
    for argnums, text in [(2, "Got argnum=2, but only 2 positional inputs"),
                          ((0, -3), "Got argnum=-3, but only 2 positional inputs"),
                          (1.0, "Expected argnums to be int or tuple of ints, got float"),
                          ((0, 0), r"argnums elements must be unique, got \(0, 0\)")]:
        for kind in (ValueError, RuntimeError):
            with pytest.raises(kind, match=text):
                door(f, argnums=argnums)(x, x)
