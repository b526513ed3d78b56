"""Calls that used to crash or let an internal exception out: a guard failing on the
call that traced it, NaN guards, Python float arguments, tensors returned twice or
returned as they came in, and bad cache sizes."""

import warnings

import numpy as np
import pytest

import pullback as pb
from pullback import config
from pullback.compiler.cache import same_value


def logged_loss(x):
    """A loss read with .item() (a guard on its value) while training; the cut said (a
    bare .item() of a value with a gradient raises ConversionError under pb.grad)."""
    loss = (x * x).sum()
    pb.stop_gradient(loss).item()
    return loss * 2


@pytest.mark.parametrize("how", ["item", "tolist"])
def test_a_nan_logged_while_traced_holds_its_guard(how):
    @pb.compile
    def f(x):
        loss = (x * x).sum()
        getattr(loss, how)()
        return loss * 2

    for _ in range(3):
        x = pb.tensor([float("nan"), 1.0], requires_grad=True)
        out = f(x)
        assert np.isnan(out.item())
        out.backward()
        assert np.isnan(x.grad.numpy()[0]) and x.grad.numpy()[1] == 4.0
    info = f.cache.info
    assert (info.misses, info.hits, info.recompiles, info.fallbacks) == (1, 2, 0, 0)


def test_a_nan_logged_under_value_and_grad():
    vg = pb.value_and_grad(logged_loss)
    for _ in range(2):
        value, grad = vg(np.array([np.nan, 1.0]))
        assert np.isnan(value) and np.isnan(grad[0]) and grad[1] == 4.0
    assert (vg.cache.info.misses, vg.cache.info.hits) == (1, 1)


def test_guards_take_nan_for_nan():
    assert same_value(np.float32("nan"), float("nan"))
    assert same_value(np.array([np.nan, 1.0]), np.array([np.nan, 1.0]))
    assert not same_value(np.array([np.nan, 1.0]), np.array([np.nan, 2.0]))
    assert not same_value(np.float64(1.0), float("nan"))
    assert not same_value(np.array([1, 2]), np.array([1, 2, 3]))
    assert same_value(np.array([1, 2]), np.array([1, 2]))


def scaled_by(x, s):
    """float(s) of a Python float argument: a guard on s (traced at float32)."""
    return (x * s).sum() * float(s)


def test_float_of_a_float_argument_holds_its_guard_on_every_call():
    f = pb.compile(scaled_by)
    x0 = np.array([1.0, 2.0], np.float32)
    for s in (0.1, 0.1, 0.1, 0.3, 0.3):
        x = pb.tensor(x0, requires_grad=True)
        out = f(x, s)
        expected = scaled_by(pb.tensor(x0, requires_grad=True), s)
        assert out.dtype == expected.dtype == pb.float32  # was float64 when compiled
        np.testing.assert_allclose(out.item(), expected.item(), rtol=1e-6)
        out.backward()
        np.testing.assert_allclose(x.grad.numpy(), [s * s, s * s], rtol=1e-6)
    info = f.cache.info
    assert (info.misses, info.hits, info.recompiles, info.fallbacks) == (2, 3, 1, 0)


def test_float_argument_under_grad_keeps_the_traced_dtype():
    g = pb.grad(scaled_by)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(3):
            np.testing.assert_allclose(g(np.array([1.0, 2.0], np.float32), 0.1), [0.01, 0.01],
                                       rtol=1e-6)
    assert (g.cache.info.misses, g.cache.info.hits) == (1, 2)


def random_branch(x):
    if pb.rand(()) > 0.5:
        return (x * 2).sum()
    return (x * 3).sum()


@pytest.mark.parametrize("door", ["compile", "value_and_grad"])
def test_a_branch_on_random_numbers_retraces_instead_of_failing(door):
    """The traced draw and the generated code's draw differ: the guard fails on the
    call that traced it, which then traces again. (Every variant tried draws anew, so
    variants pile up to the limit, and then the function runs eagerly.)"""
    pb.manual_seed(0)
    x0 = np.array([1.0, 2.0], np.float32)
    seen = set()
    fn = pb.compile(random_branch) if door == "compile" else pb.value_and_grad(random_branch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # an unlucky run of draws may fall back, warned
        for _ in range(20):
            if door == "compile":
                x = pb.tensor(x0, requires_grad=True)
                value = fn(x)
                value.backward()
                value, grad = value.item(), x.grad.numpy()
            else:
                value, grad = fn(x0)
            c = grad[0]
            assert c in (2.0, 3.0)
            np.testing.assert_allclose(grad, [c, c])
            assert value == pytest.approx(c * 3)
            seen.add(float(c))
    assert seen == {2.0, 3.0}


def test_a_guard_failing_on_every_new_call_falls_back_to_eager():
    def always_new(x):
        # a new draw on every call: the generated code, run on the call that traced
        # it, draws what the trace drew (effects.py), so the guard holds there only
        return x * pb.rand(()).item()

    f = pb.compile(always_new)
    x = pb.tensor([1.0, 2.0], requires_grad=True)
    with config.override(recompile_limit=3):
        for _ in range(3):
            f(x)
        with pytest.warns(UserWarning, match=r"always_new .* was traced 3 times .*item\(\) "
                          r"of a traced value .* keeps failing\. Falling back to eager"):
            out = f(x)
        again = f(x)
    assert out.shape == again.shape == (2,)
    info = f.cache.info
    assert (info.misses, info.recompiles, info.fallbacks, info.size) == (3, 2, 2, 0)


def returns_twice(x, w):
    y = x * w
    return y, y, x, w


def weighted_sum(outs):
    return sum((o * (k + 1)).sum() for k, o in enumerate(outs))


@pytest.mark.parametrize("requires_grad", [True, False])
def test_compile_returns_a_tensor_twice_and_its_arguments(requires_grad):
    """As torch.compile: the repeated output is one tensor, returned arguments are the
    caller's tensors, and gradients match eager."""
    f = pb.compile(returns_twice)
    for _ in range(2):
        x, w = (pb.tensor(v, requires_grad=requires_grad) for v in ([1.0, 2.0], [3.0, 4.0]))
        outs = f(x, w)
        assert outs[0] is outs[1] and outs[2] is x and outs[3] is w
        np.testing.assert_allclose(outs[0].numpy(force=True), [3.0, 8.0])
        if requires_grad:
            weighted_sum(outs).backward()
            xe, we = (pb.tensor(v, requires_grad=True) for v in ([1.0, 2.0], [3.0, 4.0]))
            weighted_sum(returns_twice(xe, we)).backward()
            np.testing.assert_allclose(x.grad.numpy(), xe.grad.numpy())  # 3 w + 3
            np.testing.assert_allclose(w.grad.numpy(), we.grad.numpy())  # 3 x + 4
    assert f.cache.info.hits == 1


def test_compile_returns_a_captured_tensor_and_only_its_argument():
    w = pb.tensor([3.0, 4.0], requires_grad=True)
    f = pb.compile(lambda x: (x, x, w))
    x = pb.tensor([1.0, 2.0], requires_grad=True)
    a, b, c = f(x)
    assert a is x and b is x and c is w
    (a.sum() + 2 * c.sum()).backward()
    np.testing.assert_allclose(x.grad.numpy(), [1.0, 1.0])
    np.testing.assert_allclose(w.grad.numpy(), [2.0, 2.0])


def test_compiled_outputs_require_grad_as_in_eager():
    """A detached or no_grad output had the compiled region's grad_fn."""
    def f(x):
        with pb.no_grad():
            quiet = x * 4
        return x * 2, x.detach(), (x * 3).detach(), quiet, (x * 5).argmax()

    x = pb.tensor([1.0, 2.0], requires_grad=True)
    compiled = pb.compile(f)(x)
    assert [t.requires_grad for t in compiled] == [t.requires_grad for t in f(x)] == \
        [True, False, False, False, False]
    np.testing.assert_allclose(compiled[2].numpy(), [3.0, 6.0])


def test_value_and_grad_with_the_value_and_an_argument_in_aux():
    def f(x):
        loss = (x * x).sum()
        return loss, (loss, x)

    (value, (aux_loss, aux_x)), grad = pb.value_and_grad(f, has_aux=True)(np.array([1.0, 2.0]))
    assert value == aux_loss == 5.0
    np.testing.assert_allclose(aux_x, [1.0, 2.0])
    np.testing.assert_allclose(grad, [2.0, 4.0])


def test_a_compiled_function_called_inside_a_trace_is_inlined():
    """Its generated code would hide its ops from the outer trace (x.grad was None)."""
    square = pb.compile(lambda x: x * x)
    outer = pb.compile(lambda x: square(x).sum() * 2)
    for v in ([1.0, 2.0], [1.0, 2.0], [5.0, 2.0]):
        x = pb.tensor(v, requires_grad=True)
        out = outer(x)
        out.backward()
        assert out.item() == 2 * (v[0] ** 2 + v[1] ** 2)
        np.testing.assert_allclose(x.grad.numpy(), [4 * v[0], 4 * v[1]])
    assert square.cache.info.misses == 0


@pytest.mark.parametrize("maxsize", [-1, 0])
def test_compile_refuses_a_cache_size_below_one_when_decorating(maxsize):
    with pytest.raises(ValueError, match=rf"compile: maxsize must be at least 1 .*got {maxsize}"):
        pb.compile(maxsize=maxsize)
    with pytest.raises(ValueError, match="maxsize must be at least 1"):
        pb.compile(lambda x: x, maxsize=maxsize)
    with pytest.raises(TypeError, match="compile: maxsize must be an int, not float"):
        pb.compile(maxsize=2.0)


def test_a_config_cache_size_below_one_is_named():
    with config.override(cache_size=0):
        with pytest.raises(ValueError, match=r"config.cache_size must be at least 1 .*got 0"):
            pb.compile(lambda x: x)


@pytest.mark.parametrize("door, name", [(pb.grad, "grad"), (pb.value_and_grad, "value_and_grad"),
                                        (pb.func.grad_and_value, "grad_and_value")])
def test_grad_of_a_function_returning_a_pair_without_has_aux_is_refused(door, name):
    """As torch.func: the value and its copy came back as a pair, silently."""
    def f(x):
        loss = (x * x).sum()
        return loss, loss

    with pytest.raises(RuntimeError, match=rf"^{name}\(f\)\(\*args\): Expected f\(\*args\) to "
                       r"return a Tensor, got <class 'tuple'>"):
        door(f)(np.array([1.0, 2.0]))


@pytest.mark.parametrize("f, words", [
    (lambda x: x * 2, "return a scalar Tensor, got tensor with 1 dims"),
    (lambda x: (x.sum(), x.sum()), "got <class 'tuple'>; to return more than the value, "
     r"return \(value, aux\) and pass has_aux=True"),
    (lambda x: 3.0, "return a Tensor, got <class 'float'>")])
def test_a_non_scalar_output_is_a_type_error_as_in_jax_and_torchs_runtime_error(f, words):
    for x in (np.array([1.0, 2.0]), pb.tensor([1.0, 2.0], requires_grad=True)):  # both paths
        if "float" in words and isinstance(x, np.ndarray):
            continue  # numpy's face: a constant output, zeros (test_numpy_breadth.py)
        with pytest.raises(TypeError, match=words) as info:
            pb.grad(f)(x)
        assert isinstance(info.value, RuntimeError)


def test_python_floats_take_the_width_of_the_arrays_beside_them():
    """0.1 next to float64 arrays is 0.1 (not float32's 0.10000000149); next to
    float32 arrays the result stays float32, as eager; alone, the default dtype."""
    w64 = np.array([1.0, 3.0])
    g = pb.grad(lambda hp, w: hp["lam"] * (w * w).sum())({"lam": 0.1}, w64)
    assert g["lam"] == 10.0
    gw = pb.grad(lambda w, lam: lam * (w * w).sum())(w64, 0.1)
    np.testing.assert_array_equal(gw, 0.2 * w64)
    v, gw32 = pb.value_and_grad(lambda w, lam: lam * (w * w).sum())(w64.astype(np.float32), 0.1)
    assert v.dtype == gw32.dtype == np.float32
    out = pb.compile(lambda w, lam: w * lam)(pb.tensor([1.0, 2.0]), 0.1)
    assert out.dtype == (pb.tensor([1.0, 2.0]) * 0.1).dtype == pb.float32
    assert pb.vjp(lambda w, lam: w * lam, w64, 0.1)[1](np.ones(2))[1] == 4.0
