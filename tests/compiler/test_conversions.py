"""Values that leave the trace (docs/reliability.md, "Values that leave the trace").

Inside every functional transform, traced or eager, on both faces, ``float()``,
``complex()``, ``.item()`` and ``.tolist()`` of a value that carries a gradient raise
``pb.ConversionError`` naming the conversion, the user's line and the fix, where they
used to drop the gradient silently (issue 22's first table). What stays allowed: a
conversion compared right away, ``bool()``, ``int()``/``round()``, values without a
gradient, formatting inside print/logging, custom Functions, eager torch-face code and
``pb.compile`` on Tensors (torch's semantics: ``.item()`` is a cut). Casts to integer or
boolean dtypes on the numpy face carry no gradient, as numpy makes them.
"""

from __future__ import annotations

import logging

import numpy as np
import pytest
import torch
from ops import numeric_grad

import pullback as pb

pytestmark = pytest.mark.filterwarnings("ignore:Anomaly Detection has been enabled")

X = np.array([1.0, 2.0])
X3 = np.array([1.0, 2.5, 1.0])


# ------------------------------------------------------- issue 22's first table
def float_row(x):
    return float(np.sum(x ** 2)) * 3.0 + np.sum(x)


def tolist_row(x):
    return np.sum(np.array(x.tolist()) ** 2) + np.sum(x)


def item_row(x):
    return np.sum(x) * np.max(x).item()


def comprehension_row(x):
    return sum([float(v) ** 2 for v in x]) + np.sum(x)


#: each row: the program, its argument, the conversion named, and the program written
#: the differentiable way (the fix the message names), which must match finite differences
ROWS = {
    "float": (float_row, X, "float()", lambda x: np.sum(x ** 2) * 3.0 + np.sum(x)),
    "tolist": (tolist_row, X, ".tolist()", lambda x: np.sum(x ** 2) + np.sum(x)),
    "item": (item_row, X3, ".item()", lambda x: np.sum(x) * np.max(x)),
    "comprehension": (comprehension_row, X, "float()",
                      lambda x: sum([v ** 2 for v in x]) + np.sum(x)),
}


def _line_of(fn) -> str:
    return f"test_conversions.py:{fn.__code__.co_firstlineno + 1}"


@pytest.mark.parametrize("row", list(ROWS))
def test_each_row_raises_naming_the_conversion_line_and_fix(row):
    f, x, name, _ = ROWS[row]
    with pytest.raises(pb.ConversionError) as caught:
        pb.grad(f)(x)
    text = str(caught.value)
    assert text.startswith(f"grad: {name} of a value that carries a gradient at "
                           f"{_line_of(f)} (")
    assert "pb.stop_gradient(v)" in text and "detach()" in text and "keep the array" in text
    assert isinstance(caught.value, TypeError)  # as JAX's ConcretizationTypeError
    assert caught.value.conversion == name
    assert caught.value.src.lineno == f.__code__.co_firstlineno + 1


@pytest.mark.parametrize("row", list(ROWS))
def test_each_rows_differentiable_form_matches_finite_differences(row):
    _, x, _, fixed = ROWS[row]
    np.testing.assert_allclose(pb.grad(fixed)(x), numeric_grad(fixed, x), rtol=1e-6)


def test_the_cut_said_with_stop_gradient_is_the_cut():
    g = pb.grad(lambda x: float(pb.stop_gradient(np.sum(x ** 2))) * 3.0 + np.sum(x))(X)
    np.testing.assert_allclose(g, [1.0, 1.0])
    g = pb.grad(lambda x: np.sum(x) * pb.stop_gradient(np.max(x)).item())(X3)
    np.testing.assert_allclose(g, [2.5, 2.5, 2.5])


# ------------------------------------------------------------- every door, both faces
def _converts(x):
    return (x ** 2).sum() * float(x.sum())


def _eager_grad(f, x):
    with pb.autograd.detect_anomaly():  # anomaly mode: grad's and jvp's eager fallbacks
        return pb.grad(f)(x)


def _eager_jvp(f, x):
    with pb.autograd.detect_anomaly():
        return pb.jvp(f, (x,), (x * 0 + 1,))


DOORS = {
    "grad": lambda f, x: pb.grad(f)(x),
    "value_and_grad": lambda f, x: pb.value_and_grad(f)(x),
    "vjp": lambda f, x: pb.vjp(f, x),
    "jvp": lambda f, x: pb.jvp(f, (x,), (x * 0 + 1,)),
    "jacfwd": lambda f, x: pb.jacfwd(f)(x),
    "jacrev": lambda f, x: pb.jacrev(f)(x),
    "hessian": lambda f, x: pb.hessian(f)(x),
    "linearize": lambda f, x: pb.linearize(f, x),
    "grad of grad": lambda f, x: pb.grad(lambda y: pb.grad(f)(y).sum())(x),
    "jvp of grad": lambda f, x: pb.jvp(pb.grad(f), (x,), (x * 0 + 1,)),
    "vjp inside grad": lambda f, x: pb.grad(lambda y: pb.vjp(f, y)[0])(x),
    "grad eager fallback": _eager_grad,
    "jvp eager fallback": _eager_jvp,
}
FACES = {"numpy": lambda a: a.copy(), "torch": lambda a: pb.tensor(a)}


@pytest.mark.parametrize("face", list(FACES))
@pytest.mark.parametrize("door", list(DOORS))
def test_every_door_refuses_on_both_faces(door, face):
    x = FACES[face](np.array([1.0, 2.0, 3.0]))
    with pytest.raises(pb.ConversionError, match=r"float\(\) of a value that carries a "
                       rf"gradient at {_line_of(_converts)} \("):
        DOORS[door](_converts, x)


def test_grad_on_a_tensor_that_requires_grad_refuses_too():
    x = pb.tensor([1.0, 2.0], requires_grad=True)  # runs eagerly, with create_graph
    with pytest.raises(pb.ConversionError, match=r"^grad: \.item\(\)"):
        pb.grad(lambda t: t.sum() * t.max().item())(x)


CONVERSIONS = {  # name -> (what the message starts with, the program)
    "float": (r"grad: float\(\)", lambda x: x.sum() * float(x[0])),
    "complex": (r"grad: complex\(\)", lambda x: x.sum() * complex(x[0]).real),
    "item": (r"grad: \.item\(\)", lambda x: x.sum() * x[0].item()),
    "tolist": (r"grad: \.tolist\(\)", lambda x: x.sum() * sum(x.tolist())),
    "iterated": (r"grad: float\(\)", lambda x: sum(float(v) * v for v in x)),
}


@pytest.mark.parametrize("face", list(FACES))
@pytest.mark.parametrize("how", list(CONVERSIONS))
def test_each_conversion_is_refused_on_both_faces(how, face):
    x = FACES[face](np.array([1.0, 2.0]))
    start, f = CONVERSIONS[how]
    with pytest.raises(pb.ConversionError, match="^" + start):
        pb.grad(f)(x)


def test_a_python_float_argument_is_refused_too():
    with pytest.raises(pb.ConversionError, match=r"^grad: float\(\)"):
        pb.grad(lambda s: s * float(s))(2.0)


# ------------------------------------------------------------------ what stays allowed
def _logged(x):
    loss = (x ** 2).sum()
    print(f"loss {float(loss):.3f}", loss.item())
    logging.getLogger("conversions-test").warning("loss %f", loss)
    return loss


@pytest.mark.parametrize("door", ["grad", "grad eager fallback", "grad of grad"])
def test_formatting_inside_print_and_logging_is_allowed(door, capsys, caplog):
    x = np.array([1.0, 2.0])
    with caplog.at_level(logging.WARNING, logger="conversions-test"):
        g = DOORS[door](_logged, x)
    np.testing.assert_allclose(g, 2 * x if door != "grad of grad" else [2.0, 2.0])
    assert "loss 5.000 5.0" in capsys.readouterr().out
    assert "loss 5.000000" in caplog.text


def _branchy(x):
    if float(x.sum()) > 0 and x.max().item() < 10 and bool(x[0] > -5):
        return (x ** 2).sum()
    return (x ** 3).sum()


@pytest.mark.parametrize("face", list(FACES))
def test_conversions_compared_right_away_and_bool_guards_are_allowed(face):
    for v in ([1.0, 2.0], [-1.0, -2.0], [20.0, 1.0]):
        x = FACES[face](np.array(v))
        g = pb.grad(_branchy)(x)
        want = 2 * np.array(v) if sum(v) > 0 and max(v) < 10 else 3 * np.array(v) ** 2
        np.testing.assert_allclose(np.asarray(g), want)


def _indexed(x):
    n = int(x.sum()) % 3            # an index: its derivative is zero anyway
    k = x.argmax().item()           # an integer value: no gradient
    steps = round(np.sum(x) / 4.0)  # numpy's round(): a Python int
    out = x[n] * x[k]
    for _ in range(steps):
        out = out * 1.5
    return out


def test_int_index_trip_count_and_integer_values_are_allowed():
    x = np.array([1.5, 4.0, 2.2])  # (away from the steps of int() and round())
    g = pb.grad(_indexed)(x)
    np.testing.assert_allclose(g, numeric_grad(_indexed, x), rtol=1e-6)


def test_values_without_a_gradient_convert_freely():
    def f(x, w):
        with pb.no_grad():
            scale = float((x ** 2).sum())  # under no_grad: asked for
        return (x * w).sum() * scale * float(w.sum()) + float(pb.stop_gradient(x)[0])

    x, w = np.array([1.0, 2.0]), np.array([0.5, 0.25])
    np.testing.assert_allclose(pb.grad(f)(x, w), w * 5.0 * 0.75)


class _Scaled(pb.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * float(x.sum())  # its own derivative: conversions are its business

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x.sum().item() + (g * x).sum()


def test_a_custom_function_may_convert_its_inputs():
    x = np.array([1.0, 2.0])
    g = pb.grad(lambda y: _Scaled.apply(y).sum())(x)
    np.testing.assert_allclose(g, numeric_grad(lambda y: np.sum(y * y.sum()), x), rtol=1e-6)


def _torch_cut(x):
    return (x * x).sum() * x.sum().item()


def test_eager_torch_face_and_compile_on_tensors_keep_torchs_cut():
    want = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    _torch_cut(want).backward()  # torch: .item() is a documented cut
    for run in (_torch_cut, pb.compile(_torch_cut)):
        for _ in range(2):  # (compiled: traced, then generated code)
            x = pb.tensor([1.0, 2.0], dtype=pb.float64, requires_grad=True)
            run(x).backward()
            np.testing.assert_allclose(x.grad.numpy(), want.grad.numpy())


def test_a_compiled_function_refuses_its_cut_inside_a_functional_transform():
    cf = pb.compile(_torch_cut)
    x = pb.tensor([1.0, 2.0], dtype=pb.float64, requires_grad=True)
    cf(x).backward()  # traced with torch's cut (a variant that remembers it)
    np.testing.assert_allclose(x.grad.numpy(), [6.0, 12.0])
    line = rf"test_conversions.py:{_torch_cut.__code__.co_firstlineno + 1} "
    for run in (lambda: pb.vjp(cf, pb.tensor([1.0, 2.0], dtype=pb.float64)),  # its cache
                lambda: pb.grad(lambda t: cf(t))(x),  # eager: on a Tensor with a graph
                lambda: pb.grad(lambda t: cf(t))(np.array([1.0, 2.0]))):  # inlined
        with pytest.raises(pb.ConversionError, match=r"\.item\(\) of a value that carries "
                           rf"a gradient at {line}"):
            run()
    assert cf.cache.info.misses == 1  # the variant stays, for calls outside transforms
    y = pb.tensor([1.0, 2.0], dtype=pb.float64, requires_grad=True)
    cf(y).backward()
    np.testing.assert_allclose(y.grad.numpy(), [6.0, 12.0])


# ------------------------------------------------------------------- stop_gradient
def test_stop_gradient_on_both_faces_and_pytrees():
    tree = {"a": np.array([1.0, 2.0]), "b": [3.0, None]}
    assert pb.stop_gradient(tree)["a"] is tree["a"]  # plain values: as they are

    def f(x, t):
        cut = pb.stop_gradient({"x": x, "t": (t, 2)})
        assert type(cut["x"]) is type(x) and cut["t"][1] == 2
        return (x * cut["x"]).sum() + (t * cut["t"][0]).sum()

    for face in FACES.values():
        gx, gt = pb.grad(f, argnums=(0, 1))(face(np.array([1.0, 2.0])), pb.tensor([3.0]))
        np.testing.assert_allclose(np.asarray(gx), [1.0, 2.0])
        np.testing.assert_allclose(gt.numpy(), [3.0])


# --------------------------------------------------------- casts on the numpy face
def cast_int(x):
    return np.sum(((3 * x).astype(int)) ** 2 * 1.0) + np.sum(x ** 2)


def cast_bool(x):
    return np.sum((x - 1.0).astype(bool) * x)


def array_int(x):
    return np.sum(np.array(3 * x, dtype=int) * x)


def asarray_int(x):
    return np.sum(np.asarray(3 * x, dtype=np.int32) * x)


def round_scalar(x):
    return round(np.sum(x)) * x[0] + round(np.sum(x), 1) * x[1]


CASTS = [cast_int, cast_bool, array_int, asarray_int, round_scalar,
         lambda x: np.sum(np.array(3 * x, dtype=int) * x)]  # (a lambda: no source rewrite)
CAST_DOORS = {
    "grad": lambda f, x: pb.grad(f)(x),
    "vjp": lambda f, x: pb.vjp(f, x)[1](1.0)[0],
    "jacrev": lambda f, x: pb.jacrev(f)(x),
    "jacfwd": lambda f, x: pb.jacfwd(f)(x),
}


@pytest.mark.parametrize("door", list(CAST_DOORS))
@pytest.mark.parametrize("f", CASTS, ids=lambda f: f.__name__)
def test_integer_and_boolean_casts_carry_no_gradient(f, door):
    x = np.array([0.7, 1.1, 2.2, 0.1])  # away from the casts' steps
    np.testing.assert_allclose(CAST_DOORS[door](f, x), numeric_grad(f, x), atol=1e-7)


def test_round_is_numpys_on_zero_d_values():
    def f(x):
        s = np.sum(x)
        assert type(round(s)) is int and round(s) == round(float(pb.stop_gradient(s)))
        r = round(s, 1)
        assert r.shape == () and r.dtype == np.float64
        with pytest.raises(TypeError, match="doesn't define __round__"):
            round(x)  # an array has none, as numpy's
        return r * x[0]

    np.testing.assert_allclose(pb.grad(f)(np.array([1.25, 1.0])), [2.2, 0.0])
