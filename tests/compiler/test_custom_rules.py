"""pb.custom_vjp, pb.custom_jvp and pb.fixed_point: JAX's semantics (closed forms where
JAX's documentation gives them), central finite differences in float64, torch's
autograd.Function where torch can express the rule, and agreement of eager, compiled
and transformed calls, nested and on pytrees."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest
import torch

import pullback as pb

X = np.array([0.3, 1.1, -0.7])
Y = np.array([2.0, -1.5, 0.5])


def central(f, x, eps=1e-6):
    """The gradient of the scalar ``f`` at ``x`` by central differences."""
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = eps
        g[i] = (f(x + e) - f(x - e)) / (2 * eps)
    return g


# ---------------------------------------------------------------- the functions used
@pb.custom_vjp
def sin_times(x, y):
    return np.sin(x) * y


def sin_times_fwd(x, y):
    return sin_times(x, y), (np.cos(x), np.sin(x), y)


def sin_times_bwd(res, g):
    cos_x, sin_x, y = res
    return cos_x * g * y, sin_x * g


sin_times.defvjp(sin_times_fwd, sin_times_bwd)


@pb.custom_vjp
def clip_gradient(x):
    """JAX's example: the identity whose gradient is clipped to [-1, 1]."""
    return x


clip_gradient.defvjp(lambda x: (x, None), lambda _, g: (np.clip(g, -1, 1),))


@pb.custom_vjp
def sine(x):
    return np.sin(x)


# the residual is a function of x: a second derivative must differentiate it
sine.defvjp(lambda x: (sine(x), np.cos(x)), lambda cos_x, g: (cos_x * g,))


@pb.custom_jvp
def log1pexp(x):
    return np.log(1.0 + np.exp(x))


@log1pexp.defjvp
def log1pexp_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return log1pexp(x), (1 - 1 / (1 + np.exp(x))) * t


@pb.custom_jvp
def sin_times_j(x, y):
    return np.sin(x) * y


@sin_times_j.defjvp
def sin_times_j_jvp(primals, tangents):
    (x, y), (tx, ty) = primals, tangents
    return sin_times_j(x, y), np.cos(x) * tx * y + np.sin(x) * ty


# ------------------------------------------------------------------------ custom_vjp
def test_custom_vjp_every_reverse_door_agrees_with_the_closed_form():
    want_x, want_y = np.cos(X) * Y, np.sin(X)
    x = pb.tensor(X, requires_grad=True)
    y = pb.tensor(Y, requires_grad=True)
    out = sin_times(x, y)
    assert out.grad_fn.name() == "sin_timesBackward"
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), want_x)
    np.testing.assert_allclose(y.grad.numpy(), want_y)
    loss = lambda a, b: sin_times(a, b).sum()
    gx, gy = pb.grad(loss, argnums=(0, 1))(X, Y)
    np.testing.assert_allclose(gx, want_x)
    np.testing.assert_allclose(gy, want_y)
    value, gx = pb.value_and_grad(loss)(X, Y)
    np.testing.assert_allclose(value, (np.sin(X) * Y).sum())
    np.testing.assert_allclose(gx, want_x)
    _, pullback = pb.vjp(sin_times, X, Y)
    np.testing.assert_allclose(pullback(np.ones(3))[1], want_y)
    np.testing.assert_allclose(pb.jacrev(sin_times)(X, Y), np.diag(want_x))
    x.grad = None
    pb.compile(loss)(x, y).backward()
    np.testing.assert_allclose(x.grad.numpy(), want_x)
    np.testing.assert_allclose(central(lambda a: loss(a, Y), X), want_x, atol=1e-8)


def test_custom_vjp_matches_torch_autograd_function():
    class TorchSinTimes(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            ctx.save_for_backward(x, y)
            return torch.sin(x) * y

        @staticmethod
        def backward(ctx, g):
            x, y = ctx.saved_tensors
            return torch.cos(x) * g * y, torch.sin(x) * g

    tx = torch.tensor(X, requires_grad=True)
    ty = torch.tensor(Y, requires_grad=True)
    (TorchSinTimes.apply(tx, ty) ** 2).sum().backward()
    gx, gy = pb.grad(lambda a, b: (sin_times(a, b) ** 2).sum(), argnums=(0, 1))(X, Y)
    np.testing.assert_allclose(gx, tx.grad.numpy())
    np.testing.assert_allclose(gy, ty.grad.numpy())


def test_the_rule_is_used_not_the_derivative_of_the_function():
    # JAX's clip_gradient: d/dx (5 x) clipped to 1
    x = pb.tensor(X, requires_grad=True)
    (clip_gradient(x) * 5).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.ones(3))
    f = lambda a: (clip_gradient(a) * 5).sum()
    np.testing.assert_allclose(pb.grad(f)(X), np.ones(3))
    np.testing.assert_allclose(pb.grad(lambda a: (clip_gradient(a) * 0.5).sum())(X), 0.5)
    np.testing.assert_allclose(pb.grad(lambda a: pb.compile(f)(a))(X), np.ones(3))


def test_grad_of_grad_differentiates_the_residuals_again():
    # bwd returns cos(x) * g with cos(x) a residual of fwd: d2/dx2 sin = -sin
    d2 = pb.grad(lambda a: pb.grad(lambda b: sine(b).sum())(a).sum())(X)
    np.testing.assert_allclose(d2, -np.sin(X))
    np.testing.assert_allclose(pb.jacrev(pb.jacrev(lambda a: sine(a).sum()))(X),
                               np.diag(-np.sin(X)))
    x = pb.tensor(X, requires_grad=True)
    for fn in (lambda a: sine(a).sum(), pb.compile(lambda a: sine(a).sum())):
        (d1,) = pb.autograd.grad(fn(x), x, create_graph=True)
        (d2,) = pb.autograd.grad(d1.sum(), x)
        np.testing.assert_allclose(d1.detach().numpy(), np.cos(X))
        np.testing.assert_allclose(d2.numpy(), -np.sin(X))
    # mixed: d/dx d/dy of sin(x) y = cos(x)
    mixed = pb.grad(lambda a: pb.grad(lambda b: sin_times(a, b).sum())(Y).sum())(X)
    np.testing.assert_allclose(mixed, np.cos(X))


def test_the_vjp_is_differentiable_in_its_cotangent():
    g = pb.grad(lambda v: (pb.vjp(sine, X)[1](v)[0] ** 2).sum())(Y)
    np.testing.assert_allclose(g, 2 * np.cos(X) ** 2 * Y)


def test_custom_vjp_in_forward_mode_raises_jaxs_error():
    msg = r"can't apply forward-mode autodiff \(jvp\) to a custom_vjp function\. \(function sine"
    with pytest.raises(TypeError, match=msg):
        pb.jvp(sine, (X,), (Y,))
    with pytest.raises(TypeError, match=msg):
        pb.jacfwd(sine)(X)
    with pytest.raises(TypeError, match=msg):  # hessian is forward over reverse, as in JAX
        pb.hessian(lambda a: sine(a).sum())(X)
    fwad = pb.autograd.forward_ad
    with fwad.dual_level(), pytest.raises(TypeError, match=msg):
        sine(fwad.make_dual(pb.tensor(X), pb.tensor(Y)))


def test_generated_code_calls_the_users_rules_by_name():
    ins = pb.compiler.inspect(pb.grad(lambda a, b: sin_times(a, b).sum()), X, Y)
    assert "= sin_times_apply(a, b)  # sin_times_fwd: the fwd rule of sin_times" in ins.forward
    assert "sin_times_apply.backward(" in ins.forward
    assert "# sin_times_bwd: the bwd rule of sin_times" in ins.forward
    ins = pb.compiler.inspect(pb.grad(lambda a: log1pexp(a).sum()), X)
    assert "log1pexp_apply(a)  # log1pexp (pb.custom_jvp)" in ins.forward
    assert "# log1pexp_jvp transposed: the jvp rule of log1pexp" in ins.forward


def test_the_rule_runs_on_every_call_of_generated_code():
    calls = []

    @pb.custom_vjp
    def double(x):
        return 2 * x

    def fwd(x):
        calls.append("fwd")
        return 2 * x, None

    def bwd(_, g):
        calls.append("bwd")
        return (2 * g,)

    double.defvjp(fwd, bwd)
    g = pb.grad(lambda a: double(a).sum())
    for scale in (1.0, 2.0, 3.0):
        np.testing.assert_allclose(g(X * scale), 2.0)
    assert g.cache.info.misses == 1
    assert calls.count("fwd") >= 3 and calls.count("bwd") >= 3


def test_pytrees_in_and_out():
    @pb.custom_vjp
    def affine(p, x):
        return {"y": p["w"] * x + p["b"], "z": (x * x).sum()}

    def fwd(p, x):
        return affine(p, x), (p, x)

    def bwd(res, g):
        p, x = res
        return ({"w": (g["y"] * x).sum(), "b": g["y"].sum()},
                g["y"] * p["w"] + 2 * x * g["z"])

    affine.defvjp(fwd, bwd)
    p = {"w": np.array(2.0), "b": np.array(0.5)}
    loss = lambda p, x: (affine(p, x)["y"] ** 2).sum() + affine(p, x)["z"]
    ref = lambda p, x: ((p["w"] * x + p["b"]) ** 2).sum() + (x * x).sum()
    got, want = pb.grad(loss, argnums=(0, 1))(p, X), pb.grad(ref, argnums=(0, 1))(p, X)
    for k in ("w", "b"):
        np.testing.assert_allclose(got[0][k], want[0][k])
    np.testing.assert_allclose(got[1], want[1])
    # keywords are bound to positions, as JAX does
    np.testing.assert_allclose(pb.grad(lambda x: affine(x=x, p=p)["z"])(X), 2 * X)


def test_nondiff_argnums_pass_functions_first_to_bwd():
    @partial(pb.custom_vjp, nondiff_argnums=(0,))
    def apply(f, x):
        return f(x)

    def fwd(f, x):
        return apply(f, x), x

    def bwd(f, x, g):
        assert f is np.tanh
        return (g * (1 - np.tanh(x) ** 2),)

    apply.defvjp(fwd, bwd)
    np.testing.assert_allclose(pb.grad(lambda a: apply(np.tanh, a).sum())(X),
                               1 - np.tanh(X) ** 2)
    with pytest.raises(TypeError, match="custom_vjp function apply: argument 0 is in "
                                        "nondiff_argnums but is being differentiated"):
        apply(pb.tensor(X, requires_grad=True), pb.tensor(X))


def test_composes_with_autograd_function():
    class Exp(pb.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            r = x.exp()
            ctx.save_for_backward(r)
            return r

        @staticmethod
        def backward(ctx, g):
            (r,) = ctx.saved_tensors
            return g * r

    @pb.custom_vjp
    def sin_exp(x):  # a Function inside the function and its rules
        return Exp.apply(x).sin()

    sin_exp.defvjp(lambda x: (sin_exp(x), Exp.apply(x)), lambda e, g: (g * e.cos() * e,))
    f = lambda a: sin_exp(Exp.apply(a)).sum()  # and a Function around it
    e = np.exp(X)
    want = np.cos(np.exp(e)) * np.exp(e) * e
    np.testing.assert_allclose(pb.grad(f)(pb.tensor(X)).numpy(), want)
    x = pb.tensor(X, requires_grad=True)
    pb.compile(f)(x).backward()
    np.testing.assert_allclose(x.grad.numpy(), want)


def test_errors_name_the_function():
    @pb.custom_vjp
    def two(x, y):
        return x * y

    two.defvjp(lambda x, y: (two(x, y), (x, y)), lambda r, g: (g * r[1],))
    with pytest.raises(TypeError, match=r"bwd rule <lambda> for function two must produce a "
                                        r"tuple of length equal to the number of "
                                        r"differentiable arguments .*\(2\).*got a tuple of 1"):
        pb.grad(lambda a: two(a, a).sum())(X)

    @pb.custom_vjp
    def listed(x):
        return 2 * x

    listed.defvjp(lambda x: (listed(x), None), lambda r, g: ([g],))
    with pytest.raises(TypeError, match=r"for function listed must produce an output with the "
                                        r"same container \(pytree\) structure"):
        pb.grad(lambda a: listed(a).sum())(X)

    @pb.custom_vjp
    def unpaired(x):
        return 2 * x

    unpaired.defvjp(lambda x: unpaired(x), lambda r, g: (g,))
    with pytest.raises(TypeError, match="fwd rule <lambda> for function unpaired must produce a "
                                        "pair"):
        unpaired(pb.tensor(X, requires_grad=True))
    with pytest.raises(AttributeError, match="No VJP defined for custom_vjp function _ident "
                                             "using defvjp."):
        pb.custom_vjp(_ident)(pb.ones(2))
    with pytest.raises(AttributeError, match="No JVP defined for custom_jvp function _ident"):
        pb.custom_jvp(_ident)(pb.ones(2))

    @pb.custom_jvp
    def bad_jvp(x):
        return np.sin(x)

    bad_jvp.defjvp(lambda p, t: (bad_jvp(*p), [np.cos(p[0]) * t[0]]))
    for call in (lambda: pb.jvp(bad_jvp, (X,), (Y,)),
                 lambda: pb.grad(lambda a: bad_jvp(a).sum())(X)):
        with pytest.raises(TypeError, match="Custom JVP rule <lambda> for function bad_jvp "
                                            "must produce primal and tangent outputs with "
                                            "equal container"):
            call()


def _ident(x):
    return x


def test_differentiating_a_closed_over_value_raises():
    w = pb.tensor(Y, requires_grad=True)

    @pb.custom_vjp
    def scaled(x):
        return x * w

    scaled.defvjp(lambda x: (scaled(x), None), lambda r, g: (g * w,))
    with pytest.raises(TypeError, match="Detected differentiation of a custom_vjp function with "
                                        "respect to a closed-over value.*function scaled"):
        scaled(pb.tensor(X, requires_grad=True))

    @pb.custom_jvp
    def shifted(x):
        return x + w

    shifted.defjvp(lambda p, t: (shifted(*p), t[0]))
    with pytest.raises(TypeError, match="custom_jvp function with respect to a closed-over"):
        pb.grad(lambda a: shifted(a).sum())(X)
    # a closed-over constant is fine
    c = np.array(Y)

    @pb.custom_vjp
    def times_c(x):
        return x * c

    times_c.defvjp(lambda x: (times_c(x), None), lambda r, g: (g * c,))
    np.testing.assert_allclose(pb.grad(lambda a: times_c(a).sum())(X), Y)


# ------------------------------------------------------------------------ custom_jvp
def test_custom_jvp_rule_is_used_in_both_modes():
    # JAX's example: autodiff of log(1 + exp(x)) is nan where exp overflows (a Python
    # float is float64 on the numpy face, so at 1000 rather than JAX's float32 100)
    with np.errstate(over="ignore", invalid="ignore"):
        assert np.isnan(pb.grad(lambda x: np.log(1.0 + np.exp(x)))(1000.0))
        assert pb.grad(log1pexp)(1000.0) == 1.0
    _, t = pb.jvp(log1pexp, (np.array(100.0),), (np.array(1.0),))
    assert t == 1.0
    x = pb.tensor(100.0, dtype=pb.float64, requires_grad=True)
    log1pexp(x).backward()
    assert x.grad.item() == 1.0


def test_custom_jvp_every_door_agrees():
    want_x, want_y = np.cos(X) * Y, np.sin(X)
    _, t = pb.jvp(sin_times_j, (X, Y), (np.ones(3), np.zeros(3)))
    np.testing.assert_allclose(t, want_x)
    np.testing.assert_allclose(pb.jacfwd(sin_times_j)(X, Y), np.diag(want_x))
    np.testing.assert_allclose(pb.jacrev(sin_times_j, argnums=1)(X, Y), np.diag(want_y))
    gx, gy = pb.grad(lambda a, b: sin_times_j(a, b).sum(), argnums=(0, 1))(X, Y)
    np.testing.assert_allclose(gx, want_x)
    np.testing.assert_allclose(gy, want_y)
    x = pb.tensor(X, requires_grad=True)
    y = pb.tensor(Y, requires_grad=True)
    sin_times_j(x, y).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), want_x)
    x.grad = None
    pb.compile(lambda a, b: (sin_times_j(a, b) ** 2).sum())(x, y).backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.sin(X) * Y * want_x)
    fwad = pb.autograd.forward_ad
    with fwad.dual_level():
        out = sin_times_j(fwad.make_dual(pb.tensor(X), pb.ones(3, dtype=pb.float64)),
                          pb.tensor(Y))
        np.testing.assert_allclose(fwad.unpack_dual(out).tangent.numpy(), want_x)


def test_custom_jvp_second_derivatives():
    # log1pexp'' = sigmoid' ; by transposition (reverse over reverse), forward over
    # reverse (hessian), reverse over forward
    s = 1 / (1 + np.exp(-X))
    want = s * (1 - s)
    f = lambda a: log1pexp(a).sum()
    np.testing.assert_allclose(pb.grad(lambda a: pb.grad(f)(a).sum())(X), want)
    np.testing.assert_allclose(pb.hessian(f)(X), np.diag(want))
    jvp_sum = lambda a: pb.jvp(log1pexp, (a,), (np.ones(3),))[1].sum()
    np.testing.assert_allclose(pb.grad(jvp_sum)(X), want)
    diag = np.arange(3)
    np.testing.assert_allclose(pb.jacfwd(pb.jacfwd(log1pexp))(X)[diag, diag, diag], want)
    np.testing.assert_allclose(central(lambda a: pb.grad(f)(a).sum(), X), want, atol=1e-7)


def test_forward_mode_generated_code_calls_the_jvp_rule():
    from pullback.compiler.forward import program_of

    f = lambda a: log1pexp(a) * 2
    _, t = pb.jvp(f, (X,), (Y,))
    np.testing.assert_allclose(t, 2 * Y / (1 + np.exp(-X)))
    (variant,) = program_of(f, False).cache.variants()
    assert ("log1pexp_apply.jvp(t0, tan_a)  # log1pexp_jvp: the jvp rule of log1pexp"
            in variant.module.source)
    out, f_jvp = pb.linearize(f, X)
    np.testing.assert_allclose(f_jvp(Y), t)
    (variant,) = program_of(f, False, linear=True).cache.variants()
    assert "log1pexp_apply(" not in variant.tangent_module.source  # the forward ran once
    assert "log1pexp_apply.jvp(" in variant.tangent_module.source


def test_an_autograd_functions_jvp_in_traced_forward_mode():
    class Sin(pb.autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            ctx.save_for_backward(x)
            ctx.k = k
            return x.sin() * k, x.argmax()

        @staticmethod
        def backward(ctx, g, _):
            (x,) = ctx.saved_tensors
            return g * x.cos() * ctx.k, None

        @staticmethod
        def jvp(ctx, t, _):
            (x,) = ctx.saved_tensors
            return t * x.cos() * ctx.k, None

    f = lambda a: Sin.apply(a, 3.0)[0]
    xt = pb.tensor(X)
    _, t = pb.jvp(f, (xt,), (pb.tensor(Y),))
    np.testing.assert_allclose(t.numpy(), 3 * np.cos(X) * Y)
    np.testing.assert_allclose(pb.jacfwd(pb.jacfwd(f))(xt)[0, 0, 0].item(), -3 * np.sin(X[0]))
    x = pb.tensor(X, requires_grad=True)
    _, t = pb.jvp(f, (x,), (pb.ones(3, dtype=pb.float64),))
    t.sum().backward()  # the tangent keeps its graph on Tensors that require grad
    np.testing.assert_allclose(x.grad.numpy(), -3 * np.sin(X))


def test_defjvps_and_nondiff_argnums():
    @pb.custom_jvp
    def power(x, n):
        return x ** n

    power.defjvps(lambda t, ans, x, n: n * x ** (n - 1) * t, None)
    np.testing.assert_allclose(pb.grad(lambda a: power(a, 3.0).sum())(X), 3 * X ** 2)
    _, t = pb.jvp(lambda a: power(a, 3.0), (X,), (np.ones(3),))
    np.testing.assert_allclose(t, 3 * X ** 2)

    @partial(pb.custom_jvp, nondiff_argnums=(0,))
    def apply(f, x):
        return f(x)

    @apply.defjvp
    def apply_jvp(f, primals, tangents):
        assert f is np.sin
        return apply(f, *primals), np.cos(primals[0]) * tangents[0]

    np.testing.assert_allclose(pb.grad(lambda a: apply(np.sin, a).sum())(X), np.cos(X))
    np.testing.assert_allclose(pb.jvp(partial(apply, np.sin), (X,), (Y,))[1], np.cos(X) * Y)
    with pytest.raises(TypeError, match="Can't use ``defjvps`` with ``nondiff_argnums``"):
        apply.defjvps(None)


def test_custom_jvp_matches_finite_differences_on_a_pytree():
    @pb.custom_jvp
    def norm_and_sum(p):
        return {"n": np.sqrt((p["a"] ** 2).sum()), "s": (p["a"] * p["b"]).sum()}

    @norm_and_sum.defjvp
    def _(primals, tangents):
        (p,), (t,) = primals, tangents
        out = norm_and_sum(p)
        return out, {"n": (p["a"] * t["a"]).sum() / out["n"],
                     "s": (t["a"] * p["b"] + p["a"] * t["b"]).sum()}

    p = {"a": X, "b": Y}
    loss = lambda p: norm_and_sum(p)["n"] * 3 + norm_and_sum(p)["s"]
    g = pb.grad(loss)(p)
    np.testing.assert_allclose(g["a"], central(lambda a: loss({"a": a, "b": Y}), X), atol=1e-7)
    np.testing.assert_allclose(g["b"], central(lambda b: loss({"a": X, "b": b}), Y), atol=1e-7)


# ----------------------------------------------------------------------- fixed_point
def newton_sqrt(a):
    return lambda x: 0.5 * (x + a / x)


def test_fixed_point_sqrt_and_its_derivatives_autograds_example():
    distance = lambda x, y: np.abs(x - y)
    sqrt = lambda a: pb.fixed_point(newton_sqrt, a, 10.0, distance, 1e-10)
    a = np.array(2.0)
    np.testing.assert_allclose(sqrt(a), np.sqrt(2.0))
    np.testing.assert_allclose(pb.grad(sqrt)(a), 0.5 / np.sqrt(2.0), rtol=1e-10)
    np.testing.assert_allclose(pb.grad(pb.grad(sqrt))(a), -0.25 * 2.0 ** -1.5, rtol=1e-8)
    t = pb.tensor(2.0, dtype=pb.float64, requires_grad=True)
    (d1,) = pb.autograd.grad(sqrt(t), t, create_graph=True)
    (d2,) = pb.autograd.grad(d1, t)
    np.testing.assert_allclose(d2.item(), -0.25 * 2.0 ** -1.5, rtol=1e-8)


def test_fixed_point_of_a_tanh_layer_matches_the_implicit_formula_and_fd():
    rng = np.random.default_rng(0)
    W = 0.3 * rng.standard_normal((4, 4))
    b = rng.standard_normal(4)
    layer = lambda p: lambda x: np.tanh(p[0] @ x + p[1])
    loss = lambda W, b: (pb.fixed_point(layer, (W, b), np.zeros(4)) ** 2).sum()
    gW, gb = pb.grad(loss, argnums=(0, 1))(W, b)
    x = pb.fixed_point(layer, (W, b), np.zeros(4))
    D = 1 - np.tanh(W @ x + b) ** 2
    v = np.linalg.solve((np.eye(4) - D[:, None] * W).T, 2 * x)  # v = g + J^T v
    np.testing.assert_allclose(gb, D * v, rtol=1e-8)
    np.testing.assert_allclose(gW, np.outer(D * v, x), rtol=1e-8)
    np.testing.assert_allclose(gb, central(lambda c: loss(W, c), b), atol=1e-7)
    # one opaque step in the trace, whatever the number of iterations
    ir = pb.compiler.inspect(pb.grad(loss, argnums=(0, 1)), W, b).ir
    assert ir.count("custom_function[") == 1


def test_fixed_point_does_not_differentiate_the_iterations():
    seen = []

    def step(a):
        def f(x):
            seen.append(pb.is_grad_enabled() and getattr(x, "requires_grad", False))
            return 0.5 * (x + a / x)
        return f

    a = pb.tensor(2.0, dtype=pb.float64, requires_grad=True)
    root = pb.fixed_point(step, a, 1.0)
    assert len(seen) > 4 and not any(seen)  # no iteration recorded a graph
    root.backward()  # one step's vjp per adjoint iteration
    np.testing.assert_allclose(a.grad.item(), 0.5 / np.sqrt(2.0))


def test_fixed_point_without_convergence_raises():
    with pytest.raises(RuntimeError, match=r"fixed_point: no convergence after 50 iterations of "
                                           r"diverge"):
        def diverge(a):
            return lambda x: 2 * x + a
        pb.fixed_point(diverge, pb.tensor(1.0, requires_grad=True), 1.0, max_iter=50)


def test_fixed_point_names_the_curried_form_for_a_two_argument_step() -> None:
    """JAX's form f(a, x) failed inside with "missing 1 required positional argument"."""
    with pytest.raises(TypeError, match=r"f takes 2 arguments; .* lambda a: lambda x: g\(a, x\)"):
        pb.grad(lambda w: pb.fixed_point(lambda w, z: np.tanh(w * z + 1.0), w,
                                         np.zeros(2)).sum())(0.5)
