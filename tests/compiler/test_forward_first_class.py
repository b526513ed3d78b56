"""Forward mode as a first-class path (issue 24, part 2, and its lesser points): jacfwd,
hessian and jacrev on any memory layout; a numpy function without a rule refused by
forward mode as by reverse mode; one evaluation of the function (its draws and prints)
for all the columns of jacfwd; nansum's tangent; pb.linearize of a pb.grad; the second
derivative through complex abs; det at a singular matrix; writes into arguments and
copies of the primals under vjp/jvp/jacfwd/jacrev/linearize; repeated argnums;
cholesky(upper=True); Embedding(max_norm) under pb.compile. Each against float64 finite
differences, torch, or both."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb
from pullback.autograd import forward_ad as fwAD

RNG = np.random.default_rng(0)
M = RNG.standard_normal((2, 3))


def _jac_fd(f, x, eps=1e-6):
    """Central finite differences of ``f`` (array -> array) at float64 ``x``:
    shape f(x).shape + x.shape."""
    x = np.array(x, dtype=np.float64)
    cols = []
    for i in np.ndindex(x.shape):
        hi, lo = x.copy(), x.copy()
        hi[i] += eps
        lo[i] -= eps
        cols.append((np.asarray(f(hi)) - np.asarray(f(lo))) / (2 * eps))
    out = np.stack(cols, axis=-1)
    return out.reshape(np.shape(f(x)) + x.shape)


# ------------------------------------------------------------------ memory layouts
LAYOUTS = {
    "transposed": lambda: M.T,
    "fortran": lambda: np.asfortranarray(M),
    "broadcast": lambda: np.broadcast_to(M[0], (2, 3)),
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_jacobians_and_hessian_on_any_layout(layout: str) -> None:
    x = LAYOUTS[layout]()
    f = lambda a: np.sin(a) * a[..., :1]  # noqa: E731
    want = _jac_fd(f, x)
    np.testing.assert_allclose(pb.jacfwd(f)(x), want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(pb.jacrev(f)(x), want, rtol=1e-6, atol=1e-8)
    loss = lambda a: (np.sin(a) ** 2).sum()  # noqa: E731
    h = pb.hessian(loss)(x)
    np.testing.assert_allclose(h, _jac_fd(pb.grad(loss), np.array(x)), rtol=1e-6, atol=1e-8)
    assert np.abs(h).sum() > 1  # (it was all zeros)


def test_jacrev_of_a_transposed_output() -> None:
    f = lambda a: a.T * 2  # noqa: E731
    np.testing.assert_allclose(pb.jacrev(f)(M), _jac_fd(f, M), atol=1e-8)
    np.testing.assert_allclose(pb.jacfwd(f)(M), _jac_fd(f, M), atol=1e-8)


# ------------------------------------------------------ a missing rule, in both modes
NO_RULE = {  # (interp, trapezoid, lstsq, average, cov, polyder, roots, ediff1d, nanmedian,
    # polymul, sort_complex, cumulative_sum, float_power, matrix_transpose, divmod,
    # unstack, apply_over_axes: ops/numpy_*.py now)
    "compress": lambda a: np.compress([True, False, True], a),
    "astype": lambda a: np.astype(a, np.float32),
}


@pytest.mark.parametrize("name", sorted(NO_RULE))
def test_a_numpy_function_without_a_rule_refuses_a_tangent(name: str) -> None:
    fn = NO_RULE[name]
    x = pb.tensor([1.0, 2.0, 3.0], dtype=pb.float64)
    with pytest.raises(TypeError, match=rf"numpy\.{name} is not differentiable.*forward"):
        with fwAD.dual_level():
            fn(fwAD.make_dual(x, pb.ones_like(x)))
    with pytest.raises(TypeError, match=rf"numpy\.{name} is not differentiable.*tangent"):
        with fwAD.dual_level(), pb.no_grad():  # (grad mode does not stop tangents)
            fn(fwAD.make_dual(x, pb.ones_like(x)))
    with pytest.raises(TypeError, match=rf"numpy\.{name} is not differentiable.*requires"):
        fn(x.clone().requires_grad_())
    with pytest.raises(TypeError, match=rf"numpy\.{name} is not differentiable"):
        pb.autograd.functional.jacobian(fn, x, strategy="forward-mode", vectorize=True)
    with pytest.raises(TypeError, match=rf"numpy\.{name} is not differentiable"):
        pb.jacfwd(fn)(x.numpy())
    with fwAD.dual_level():  # a value without a tangent still runs
        np.testing.assert_allclose(np.asarray(fn(x)), np.asarray(fn(x.numpy())))


# ------------------------------------------------- one evaluation for every column
def test_jacfwd_and_hessian_draw_and_print_once(capsys) -> None:
    x = np.array([0.5, -1.0, 2.0])

    def f(a):
        print("called")
        return np.sin(a) * rng.standard_normal(3)

    for door, want in ((pb.jacfwd, lambda e: np.diag(np.cos(x) * e)),
                       (pb.jacrev, lambda e: np.diag(np.cos(x) * e)),
                       (pb.hessian, lambda e: np.diag(-np.sin(x) * e))):
        fn = (lambda a: f(a).sum()) if door is pb.hessian else f
        rng = np.random.default_rng(7)
        got = door(fn)(x)
        mirror = np.random.default_rng(7)
        drawn = mirror.standard_normal(3)
        np.testing.assert_allclose(got, want(drawn), atol=1e-12)
        assert rng.standard_normal() == mirror.standard_normal()  # one draw, as numpy
        assert capsys.readouterr().out == "called\n"


# ------------------------------------------------------------------ nansum, nanmean
@pytest.mark.parametrize("name", ["nansum", "nanmean"])
def test_jacfwd_of_a_nan_reduction_is_finite_on_clean_entries(torch, name: str) -> None:
    x = np.array([1.0, np.nan, 3.0, -2.0])
    f = lambda a: getattr(np, name)(a ** 2)  # noqa: E731
    got = pb.jacfwd(f)(x)
    want = torch.func.jacfwd(lambda a: getattr(torch, name)(a ** 2))(torch.tensor(x))
    np.testing.assert_allclose(got, want.numpy(), atol=1e-12)
    clean = ~np.isnan(x)
    np.testing.assert_allclose(got[clean], pb.jacrev(f)(x)[clean], atol=1e-12)
    assert np.isfinite(got).all()


# ----------------------------------------------------------- linearize of a gradient
LINEARIZED = {
    "tanh": lambda v: np.tanh(v).sum(),
    "sqrt": lambda v: np.sqrt(v).sum(),
    "reciprocal": lambda v: (1 / v).sum(),
    "det": lambda v: np.linalg.det(v.reshape(2, 2)),
}


@pytest.mark.parametrize("name", sorted(LINEARIZED))
def test_linearize_of_grad(name: str) -> None:
    f = LINEARIZED[name]
    v = np.array([1.0, 2.0, 3.0, 5.0])
    t = np.array([0.3, -1.0, 0.5, 2.0])
    out, f_jvp = pb.linearize(pb.grad(f), v)
    np.testing.assert_allclose(out, pb.grad(f)(v))
    np.testing.assert_allclose(f_jvp(t), _jac_fd(pb.grad(f), v) @ t, rtol=1e-6, atol=1e-8)


# ------------------------------------------------------ second order through |z|
@pytest.mark.parametrize("n", [3, 4])
def test_hessian_through_complex_abs(torch, n: int) -> None:
    x = np.random.default_rng(n).standard_normal(n)

    def loss(a):
        return (np.abs(np.fft.fft(a)) ** 2).sum()

    want = 2 * n * np.eye(n)  # sum |fft(x)|^2 = n sum x^2 (Parseval, unnormalised)
    ref = torch.autograd.functional.hessian(lambda a: (torch.fft.fft(a).abs() ** 2).sum(),
                                            torch.tensor(x))
    np.testing.assert_allclose(ref.numpy(), want, atol=1e-10)
    np.testing.assert_allclose(pb.hessian(loss)(x), want, atol=1e-10)
    np.testing.assert_allclose(pb.jacfwd(pb.grad(loss))(x), want, atol=1e-10)
    a = pb.tensor(x, requires_grad=True)
    g, = pb.autograd.grad((pb.fft.fft(a).abs() ** 2).sum(), a, create_graph=True)
    rows = [pb.autograd.grad(g[i], a, retain_graph=True)[0].numpy() for i in range(n)]
    np.testing.assert_allclose(np.stack(rows), want, atol=1e-10)


def test_tangent_and_second_derivative_of_complex_abs_against_torch(torch) -> None:
    z = np.random.default_rng(3).standard_normal(4) + 1j * np.random.default_rng(4) \
        .standard_normal(4)
    t = np.random.default_rng(5).standard_normal(4) + 0.5j
    _, tan = pb.jvp(lambda a: np.abs(a) ** 3, (z,), (t,))
    _, want = torch.func.jvp(lambda a: a.abs() ** 3, (torch.tensor(z),), (torch.tensor(t),))
    np.testing.assert_allclose(tan, want.numpy(), atol=1e-12)
    zt = pb.tensor(z, requires_grad=True)
    g, = pb.autograd.grad((zt.abs() ** 3).sum(), zt, create_graph=True)
    gg, = pb.autograd.grad((g * pb.tensor(t)).real.sum(), zt)
    ref = torch.tensor(z, requires_grad=True)
    rg, = torch.autograd.grad((ref.abs() ** 3).sum(), ref, create_graph=True)
    rgg, = torch.autograd.grad((rg * torch.tensor(t)).real.sum(), ref)
    np.testing.assert_allclose(gg.numpy(), rgg.numpy(), atol=1e-10)


# ------------------------------------------------------------------ det, singular
SINGULAR = {
    "rank1": [[1.0, 2.0], [2.0, 4.0]],
    "rank2": [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]],
    "zero row": [[0.0, 0.0, 0.0], [1.0, 2.0, 0.5], [3.0, -1.0, 2.0]],
}


@pytest.mark.parametrize("name", sorted(SINGULAR))
def test_det_gradient_at_a_singular_matrix_is_the_adjugate(torch, name: str) -> None:
    a = np.array(SINGULAR[name])
    got = pb.grad(np.linalg.det)(a)
    np.testing.assert_allclose(got, _jac_fd(np.linalg.det, a), atol=1e-6)
    ref = torch.tensor(a, requires_grad=True)  # (torch's SVD path: create_graph)
    want, = torch.autograd.grad(torch.linalg.det(ref), ref, create_graph=True)
    np.testing.assert_allclose(got, want.detach().numpy(), atol=1e-10)
    t = pb.tensor(a, requires_grad=True)
    pb.linalg.det(t).backward()
    np.testing.assert_allclose(t.grad.numpy(), got, atol=1e-10)


def test_det_batch_mixing_singular_and_invertible_and_its_hessian(torch) -> None:
    a = np.stack([np.array(SINGULAR["rank2"]), np.eye(3) + 0.1 * RNG.standard_normal((3, 3))])
    f = lambda m: np.linalg.det(m).sum()  # noqa: E731
    np.testing.assert_allclose(pb.grad(f)(a), _jac_fd(f, a), atol=1e-6)
    b = a[1]
    want = torch.autograd.functional.hessian(torch.linalg.det, torch.tensor(b))
    np.testing.assert_allclose(pb.hessian(np.linalg.det)(b), want.numpy(), atol=1e-10)


# -------------------------------------------------- writes into arguments, copies
def _writes(a):
    a[0] = 5.0
    a *= 2
    return (a ** 3).sum()


def _writes_numpy(a):  # what numpy does to the caller's array
    a = a.copy()
    a[0] = 5.0
    a *= 2
    return a


def test_transforms_let_the_function_write_into_its_argument() -> None:
    x = np.array([1.0, 2.0, 3.0])
    v = np.array([0.5, -1.0, 2.0])
    grad = _jac_fd(_writes, x)
    doors = {  # (one call each: the second would see the first's writes, as in numpy)
        "grad": lambda y: pb.grad(_writes)(y),
        "vjp": lambda y: pb.vjp(_writes, y)[1](1.0)[0],
        "jvp": lambda y: pb.jvp(_writes, (y,), (v,))[1],
        "jacfwd": lambda y: pb.jacfwd(_writes)(y),
        "jacrev": lambda y: pb.jacrev(_writes)(y),
        "linearize": lambda y: pb.linearize(_writes, y)[1](v),
    }
    for name, door in doors.items():
        y = x.copy()
        want = grad @ v if name in ("jvp", "linearize") else grad
        np.testing.assert_allclose(door(y), want, atol=1e-6, err_msg=name)
        np.testing.assert_array_equal(y, _writes_numpy(x), err_msg=name)


def test_vjp_and_linearize_keep_the_primals_they_were_given() -> None:
    y = np.array([1.0, 2.0, 3.0])
    _, pull = pb.vjp(lambda a: (a ** 3).sum(), y)
    _, f_jvp = pb.linearize(lambda a: (a ** 3).sum(), y)
    y -= 0.5  # the caller's update (x -= lr * g) after the call
    np.testing.assert_allclose(pull(1.0)[0], [3.0, 12.0, 27.0])
    np.testing.assert_allclose(f_jvp(np.ones(3)), 42.0)
    t = pb.tensor([1.0, 2.0], dtype=pb.float64)
    _, pull = pb.vjp(lambda a: (a ** 2).sum(), t)
    with pb.no_grad():
        t.sub_(1.0)
    np.testing.assert_allclose(pull(pb.tensor(1.0, dtype=pb.float64))[0].numpy(), [2.0, 4.0])


# ------------------------------------------------------------------ repeated argnums
@pytest.mark.parametrize("door", ["grad", "value_and_grad", "jacfwd", "jacrev", "hessian"])
def test_repeated_argnums_are_refused(door: str) -> None:
    f = lambda a, b: (a * b * a).sum()  # noqa: E731
    x = np.array([1.0, 2.0])
    with pytest.raises(RuntimeError, match=r"argnums elements must be unique, got \(0, 0\)"):
        getattr(pb, door)(f, argnums=(0, 0))(x, x)
    with pytest.raises(RuntimeError, match=r"unique, got \(1, -1\)"):
        getattr(pb, door)(f, argnums=(1, -1))(x, x)


# ------------------------------------------------------------ cholesky(upper=True)
def test_cholesky_upper_factors_the_upper_triangle(torch) -> None:
    a = np.array([[4.0, 2.0, 0.4], [1.0, 3.0, 0.2], [-7.0, 9.0, 2.0]])  # not symmetric
    np.testing.assert_allclose(np.linalg.cholesky(pb.tensor(a), upper=True).numpy(),
                               np.linalg.cholesky(a, upper=True), atol=1e-12)
    np.testing.assert_allclose(pb.linalg.cholesky(pb.tensor(a), upper=True).numpy(),
                               np.linalg.cholesky(a, upper=True), atol=1e-12)
    w = RNG.standard_normal((3, 3))
    got = pb.grad(lambda m: (np.linalg.cholesky(m, upper=True) * w).sum())(a)
    ref = torch.tensor(a, requires_grad=True)
    (torch.linalg.cholesky(ref, upper=True) * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(got, ref.grad.numpy(), atol=1e-10)
    sym = (a + a.T) / 2 + 10 * np.eye(3)  # on a symmetric input: finite differences
    f = lambda m: (np.linalg.cholesky((m + m.T) / 2, upper=True) * w).sum()  # noqa: E731
    np.testing.assert_allclose(pb.grad(f)(sym), _jac_fd(f, sym), atol=1e-6)


# ------------------------------------------------------ Embedding(max_norm) compiled
def test_embedding_max_norm_under_compile_matches_eager_and_torch(torch) -> None:
    weight = RNG.standard_normal((5, 3)) * 2
    idx = np.array([0, 2, 2, 4])
    scale = np.arange(3.0)

    def make():
        e = pb.nn.Embedding(5, 3, max_norm=1.0).double()
        with pb.no_grad():
            e.weight.copy_(pb.tensor(weight))
        return e

    compiled_e, eager_e = make(), make()
    f = pb.compile(lambda i: (compiled_e(i) ** 2 * pb.tensor(scale)).sum())
    ref = torch.nn.Embedding(5, 3, max_norm=1.0).double()
    with torch.no_grad():
        ref.weight.copy_(torch.tensor(weight))
    for _ in range(2):
        got = f(pb.tensor(idx))
        want = (eager_e(pb.tensor(idx)) ** 2 * pb.tensor(scale)).sum()
        tv = (ref(torch.tensor(idx)) ** 2 * torch.tensor(scale)).sum()
        got.backward()
        want.backward()
        tv.backward()
        np.testing.assert_allclose(got.item(), want.item(), rtol=1e-12)
        np.testing.assert_allclose(got.item(), tv.item(), rtol=1e-12)
    for e in (compiled_e, eager_e):
        np.testing.assert_allclose(e.weight.detach().numpy(), ref.weight.detach().numpy(),
                                   rtol=1e-12)
        np.testing.assert_allclose(e.weight.grad.numpy(), ref.weight.grad.numpy(), rtol=1e-12)
