"""pb.autograd.forward_ad against torch.autograd.forward_ad: the API, its errors,
in-place ops, levels, and gradients of tangents."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb
import pullback.autograd.forward_ad as fwAD

X = np.array([0.5, -1.0, 2.0])
T = np.array([1.0, 2.0, -1.0])


def _raised(call) -> tuple:
    try:
        call()
    except Exception as e:  # noqa: BLE001 - compared with torch's
        return type(e), str(e)
    raise AssertionError("did not raise")


def _both(torch, call) -> None:
    """``call(lib, fw, x, t)`` raises the same error in torch and in pullback."""
    want = _raised(lambda: call(torch, torch.autograd.forward_ad, torch.from_numpy(X),
                                torch.from_numpy(T)))
    got = _raised(lambda: call(pb, fwAD, pb.tensor(X), pb.tensor(T)))
    assert got == (want[0], want[1].replace("torch.", "pullback."))


ERRORS = {
    "outside_level": lambda L, fw, x, t: fw.make_dual(x, t),
    "size": lambda L, fw, x, t: _in_level(fw, lambda: fw.make_dual(x, L.ones(4))),
    "int_primal": lambda L, fw, x, t: _in_level(fw, lambda: fw.make_dual(L.arange(3), t)),
    "int_tangent": lambda L, fw, x, t: _in_level(fw, lambda: fw.make_dual(x, L.arange(3))),
    "level": lambda L, fw, x, t: _in_level(fw, lambda: fw.make_dual(x, t, level=5)),
    "twice": lambda L, fw, x, t: _in_level(fw, lambda: fw.make_dual(fw.make_dual(x, t), t)),
    "nested": lambda L, fw, x, t: _in_level(fw, lambda: fw.enter_dual_level()),
    "exit_other": lambda L, fw, x, t: _in_level(fw, lambda: fw.exit_dual_level(level=3)),
    "exit_none": lambda L, fw, x, t: fw.exit_dual_level(),
}


def _in_level(fw, call):
    with fw.dual_level():
        return call()


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_match_torch(torch, name) -> None:
    _both(torch, ERRORS[name])


def test_unpack_dual(torch) -> None:
    x, t = pb.tensor(X), pb.tensor(T)
    assert fwAD.unpack_dual(x) == (x, None)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, t)
        u = fwAD.unpack_dual(d)
        assert type(u).__name__ == "UnpackedDualTensor" and u._fields == ("primal", "tangent")
        assert u.tangent is t and u.primal._base is x and d._base is x
        assert fwAD.unpack_dual(u.primal).tangent is None
        y = d * 2
    assert fwAD.unpack_dual(y).tangent is None  # the level is gone, and its tangents


def _torch_tangent(torch, f):
    fw = torch.autograd.forward_ad
    with fw.dual_level():
        return fw.unpack_dual(f(torch, fw.make_dual(torch.from_numpy(X),
                                                   torch.from_numpy(T)))).tangent.numpy()


def _pb_tangent(f):
    with fwAD.dual_level():
        return fwAD.unpack_dual(f(pb, fwAD.make_dual(pb.tensor(X), pb.tensor(T)))).tangent.numpy()


PROGRAMS = {
    "chain": lambda L, d: (L.sin(d) * d.exp()).cumsum(0).flip(0),
    "inplace": lambda L, d: (d * 2).add_(d),
    "inplace_into_plain": lambda L, d: L.zeros(3, dtype=d.dtype).mul_(3).add_(d * d),
    "views": lambda L, d: d.reshape(3, 1).expand(3, 2).t()[1],
    "multi": lambda L, d: d.reshape(1, 3).max(1).values + d.sort().values,
    "no_grad": lambda L, d: _no_grad(L, lambda: d.tanh()),
    "detach": lambda L, d: d.detach() * d,
    "mask": lambda L, d: d[d > 0],
    "where": lambda L, d: L.where(d > 0, d, d * d),
    "setitem": lambda L, d: _setitem(L, d),
    "write_into_a_view": lambda L, d: _write_view(L, d),
    "complex_abs": lambda L, d: L.complex(d, d * 2).abs(),
    "unbind": lambda L, d: L.stack(d.unbind(0)[::-1]),
}


def _setitem(L, d):
    z = L.zeros(3, dtype=d.dtype)
    z[1:] = d[:2] * 3
    return z


def _write_view(L, d):
    y = d * 1
    y[:2].mul_(d[1:])
    return y


def _no_grad(L, f):
    with L.no_grad():
        return f()


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_tangents_match_torch(torch, name) -> None:
    np.testing.assert_allclose(_pb_tangent(PROGRAMS[name]), _torch_tangent(torch, PROGRAMS[name]),
                               rtol=1e-12)


def test_gradient_of_a_tangent_matches_torch(torch) -> None:
    def grads(L, fw, x):
        with fw.dual_level():
            d = fw.make_dual(x, L.ones(3, dtype=x.dtype))
            t = fw.unpack_dual((L.sin(d) * d).sum()).tangent
        return L.autograd.grad(t, x)[0].numpy()

    got = grads(pb, fwAD, pb.tensor(X, requires_grad=True))
    want = grads(torch, torch.autograd.forward_ad, torch.tensor(X, requires_grad=True))
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_dual_level_as_decorator() -> None:
    @fwAD.dual_level()
    def f(x):
        return fwAD.unpack_dual(fwAD.make_dual(x, pb.ones(3, dtype=x.dtype)) ** 2).tangent

    np.testing.assert_allclose(f(pb.tensor(X)).numpy(), 2 * X)


def _cube(L):
    class Cube(L.autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            ctx.save_for_backward(x)
            ctx.x, ctx.k = x, k  # (jvp reads ctx.x: torch's saved_tensors are backward's)
            return x ** 3 * k

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * x ** 2 * ctx.k, None

        @staticmethod
        def jvp(ctx, t, _k):
            return t * 3 * ctx.x ** 2 * ctx.k
    return Cube


def test_custom_function_jvp_matches_torch(torch) -> None:
    f = lambda L, d: _cube(L).apply(d, 2.0).sin()  # noqa: E731
    np.testing.assert_allclose(_pb_tangent(f), _torch_tangent(torch, f), rtol=1e-12)


def test_custom_function_without_jvp_is_refused(torch) -> None:
    def call(L, fw, x, t):
        class NoJvp(L.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                return a * 2

            @staticmethod
            def backward(ctx, g):
                return g * 2
        return _in_level(fw, lambda: NoJvp.apply(fw.make_dual(x, t)))
    _both(torch, call)


def test_a_dual_tensor_prints_its_tangent(torch) -> None:
    def text(L, fw):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        with fw.dual_level():
            return [repr(fw.make_dual(x * 1, L.tensor([1.0, 2.0]))),
                    repr(fw.make_dual(L.tensor([[1.0, 2.0], [3.0, 4.0]]), L.ones(2, 2)))]
    assert text(pb, fwAD) == text(torch, torch.autograd.forward_ad)


def test_transforms_called_on_dual_tensors_propagate_tangents() -> None:
    """pb.compile, pb.grad and pb.vjp on dual tensors run eagerly: their results carry
    tangents (forward over reverse for grad and vjp)."""
    f = pb.compile(lambda x: (x.sin() * x).sum())
    g = pb.grad(lambda x: (x ** 3).sum())
    with fwAD.dual_level():
        d = fwAD.make_dual(pb.tensor(X), pb.tensor(T))
        tf = fwAD.unpack_dual(f(d)).tangent.item()
        tg = fwAD.unpack_dual(g(d)).tangent.detach().numpy()
        tv = fwAD.unpack_dual(pb.vjp(lambda x: x ** 2, d)[1](pb.ones(3, dtype=d.dtype))[0])
    np.testing.assert_allclose(tf, ((np.cos(X) * X + np.sin(X)) * T).sum())
    np.testing.assert_allclose(tg, 6 * X * T)
    np.testing.assert_allclose(tv.tangent.detach().numpy(), 2 * T)
