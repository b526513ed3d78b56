"""pb.jvp, pb.linearize, pb.jacfwd, pb.jacrev and pb.hessian against torch.func:
pytrees, argnums, has_aux, the errors, and composition with pb.grad, pb.vjp and
pb.compile."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb

RNG = np.random.default_rng(0)
X = RNG.standard_normal(3)
Y = RNG.standard_normal((2, 3))


def _t(torch, a):
    return torch.from_numpy(np.array(a))


def _leaves(torch, tree) -> list:
    return [t.detach().numpy() for t in torch.utils._pytree.tree_leaves(tree)]


def _close(got, want) -> None:
    got = [np.asarray(g) for g in pb.tree_leaves(got)]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


def f_pb(x, y):
    return pb.tanh(y @ x) * x.sum(), {"s": (x * y).sum(0)}


def f_torch(x, y):  # (torch tensors: the same function in their methods)
    return (y @ x).tanh() * x.sum(), {"s": (x * y).sum(0)}


# --------------------------------------------------------------------------------- jvp
def test_jvp_matches_torch_func(torch) -> None:
    tx, ty = RNG.standard_normal(3), RNG.standard_normal((2, 3))
    out, tan = pb.jvp(f_pb, (X, Y), (tx, ty))
    want_out, want_tan = torch.func.jvp(f_torch, (_t(torch, X), _t(torch, Y)),
                                        (_t(torch, tx), _t(torch, ty)))
    _close(out, _leaves(torch, want_out))
    _close(tan, _leaves(torch, want_tan))
    assert isinstance(out[1], dict) and isinstance(tan[1]["s"], np.ndarray)


def test_jvp_pytree_primals_and_aux() -> None:
    def f(d):
        return (d["a"] * d["b"]).sum(), d["a"] * 2

    out, tan, aux = pb.jvp(f, ({"a": X, "b": X},), ({"a": np.ones(3), "b": np.zeros(3)},),
                           has_aux=True)
    np.testing.assert_allclose(out, (X * X).sum())
    np.testing.assert_allclose(tan, X.sum())
    np.testing.assert_allclose(aux, 2 * X)


def test_jvp_kinds_follow_the_primals() -> None:
    assert pb.jvp(lambda z: z * 2, (1.5,), (1.0,)) == (3.0, 2.0)
    out, tan = pb.jvp(pb.exp, (pb.tensor(X),), (pb.ones(3, dtype=pb.float64),))
    assert isinstance(tan, pb.Tensor) and np.allclose(tan.numpy(), np.exp(X))


def test_jvp_is_cached() -> None:
    def f(x):
        return pb.sin(x) * x

    for _ in range(3):
        pb.jvp(f, (X,), (X,))
    from pullback.compiler.forward import program_of
    info = program_of(f, False).cache.info
    assert (info.misses, info.hits) == (1, 2)


def test_jvp_errors_are_torch_funcs(torch) -> None:
    cases = [lambda J, x: J(torch.sin if J is torch.func.jvp else pb.sin, x, x),
             lambda J, x: J(torch.sin if J is torch.func.jvp else pb.sin, (x,), (x, x))]
    for case in cases:
        with pytest.raises(RuntimeError) as want:
            case(torch.func.jvp, _t(torch, X))
        with pytest.raises(RuntimeError) as got:
            case(pb.jvp, X)
        assert str(got.value).split(" Got ")[0] == str(want.value).split(" Got ")[0]
    with pytest.raises(RuntimeError, match="different size"):
        pb.jvp(pb.sin, (X,), (np.ones(4),))
    with pytest.raises(RuntimeError, match=r"should be a tuple: \(output, aux\)"):
        pb.jvp(lambda x: x, (X,), (X,), has_aux=True)
    with pytest.raises(RuntimeError, match="return only tensors"):
        pb.jvp(lambda x: (x, 2), (X,), (X,))


def test_linearize_matches_jvp() -> None:
    def f(x, y):
        return pb.sin(y @ x) * pb.exp(x[0])

    out, f_jvp = pb.linearize(f, X, Y)
    for _ in range(2):
        tx, ty = RNG.standard_normal(3), RNG.standard_normal((2, 3))
        want_out, want_tan = pb.jvp(f, (X, Y), (tx, ty))
        np.testing.assert_allclose(out, want_out)
        np.testing.assert_allclose(f_jvp(tx, ty), want_tan, rtol=1e-12)


def test_linearized_tangent_program_does_not_rerun_the_function() -> None:
    from pullback.compiler.forward import program_of

    def f(x):
        return pb.sin(x) * pb.exp(x)

    pb.linearize(f, X)
    (variant,) = program_of(f, False, linear=True).cache.variants()
    src = variant.tangent_module.source
    assert "np.exp(" not in src and "np.sin(" not in src
    assert "# tangent of:" in src and "# grad of:" not in src


# -------------------------------------------------------------------- jacfwd, jacrev
@pytest.mark.parametrize("argnums", [0, 1, (0, 1), (1,)])
@pytest.mark.parametrize("which", ["jacfwd", "jacrev"])
def test_jacobians_match_torch_func(torch, which, argnums) -> None:
    got = getattr(pb, which)(f_pb, argnums=argnums)(X, Y)
    want = getattr(torch.func, which)(f_torch, argnums=argnums)(_t(torch, X), _t(torch, Y))
    _close(got, _leaves(torch, want))


@pytest.mark.parametrize("which", ["jacfwd", "jacrev"])
def test_jacobians_has_aux_and_pytree_args(torch, which) -> None:
    def f(d):
        return d["w"] @ d["v"], d["v"].sum()

    args = {"w": Y, "v": X}
    jac, aux = getattr(pb, which)(f, has_aux=True)(args)
    want, want_aux = getattr(torch.func, which)(f, has_aux=True)(
        {k: _t(torch, v) for k, v in args.items()})
    assert set(jac) == {"w", "v"}
    _close([jac["v"], jac["w"]], [want["v"].numpy(), want["w"].numpy()])
    np.testing.assert_allclose(aux, X.sum())


def test_jacobian_argnums_out_of_range(torch) -> None:
    with pytest.raises(RuntimeError) as want:
        torch.func.jacfwd(torch.sin, argnums=3)(_t(torch, X))
    with pytest.raises(RuntimeError) as got:
        pb.jacfwd(pb.sin, argnums=3)(X)
    assert str(got.value) == str(want.value)


# --------------------------------------------------------------------------- hessian
def test_hessian_matches_torch_func(torch) -> None:
    def g(x, y):
        return (pb.sin(x) * (y ** 2).sum(0)).sum()

    def tg(x, y):
        return (torch.sin(x) * (y ** 2).sum(0)).sum()

    got = pb.hessian(g, argnums=(0, 1))(X, Y)
    want = torch.func.hessian(tg, argnums=(0, 1))(_t(torch, X), _t(torch, Y))
    _close(got, _leaves(torch, want))


def test_hessian_of_a_non_scalar_function_is_refused() -> None:
    with pytest.raises(RuntimeError, match=r"hessian\(f\)\(\*args\): Expected f\(\*args\) to "
                       r"return a scalar Tensor, got tensor with 1 dims"):
        pb.hessian(lambda x: x * 2)(X)


# ----------------------------------------------------------------------- composition
def test_grad_of_jvp() -> None:
    got = pb.grad(lambda x: pb.jvp(lambda z: pb.sin(z).sum(), (x,), (np.ones(3),))[1])(X)
    np.testing.assert_allclose(got, -np.sin(X))


def test_jacfwd_of_grad_is_the_hessian(torch) -> None:
    def f(x):
        return (pb.exp(x) * x[0]).sum()

    want = torch.func.hessian(lambda x: (torch.exp(x) * x[0]).sum())(_t(torch, X))
    _close(pb.jacfwd(pb.grad(f))(X), [want.numpy()])
    _close(pb.jacrev(pb.grad(f))(X), [want.numpy()])
    _close(pb.jacfwd(pb.jacfwd(f))(X), [want.numpy()])


def test_jvp_inside_compile_and_on_tensors_with_a_graph() -> None:
    cf = pb.compile(lambda z: pb.jvp(pb.exp, (z,), (pb.ones_like(z),))[1])
    np.testing.assert_allclose(cf(pb.tensor(X)).numpy(), np.exp(X))
    x = pb.tensor(X, requires_grad=True)
    out, tan = pb.jvp(lambda z: (z ** 2).sum(), (x,), (pb.ones(3, dtype=pb.float64),))
    tan.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.ones(3))


def test_jvp_of_vjp_is_a_hessian_vector_product() -> None:
    def g(x):
        return pb.vjp(lambda z: (z ** 3).sum(), x)[1](1.0)[0]

    _, hvp = pb.jvp(g, (X,), (np.ones(3),))
    np.testing.assert_allclose(hvp, 6 * X)


def test_custom_functions_take_their_jvp() -> None:
    class Cube(pb.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.x = x
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            return g * 3 * ctx.x ** 2

        @staticmethod
        def jvp(ctx, t):
            return t * 30 * ctx.x ** 2  # (ten times the truth: it is the one used)

    for _ in range(2):
        out, tan = pb.jvp(Cube.apply, (X,), (np.ones(3),))
        np.testing.assert_allclose(tan, 30 * X ** 2)
    out, f_jvp = pb.linearize(Cube.apply, X)
    np.testing.assert_allclose(f_jvp(np.ones(3)), 30 * X ** 2)

    class NoJvp(pb.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    with pytest.raises(NotImplementedError, match="You must implement the jvp function"):
        pb.jvp(NoJvp.apply, (X,), (X,))


@pytest.mark.parametrize("which", ["jacfwd", "jacrev"])
def test_jacobians_with_a_static_argument(which) -> None:
    jac = getattr(pb, which)(lambda x, n: x ** n)
    for _ in range(2):
        np.testing.assert_allclose(jac(X, 3), np.diag(3 * X ** 2))
    np.testing.assert_allclose(jac(X, 2), np.diag(2 * X))
