"""Errors name the front door as the user called it (JAX's ``pb.value_and_grad``,
torch.func's ``grad_and_value``), and a write into an array the function did not make
is refused saying what the user wrote, why, and the way out that works."""

import re

import numpy as np
import pytest

import pullback as pb
from pullback import func
from pullback.compiler import TraceError

X = np.array([1.0, 2.0, 3.0])


def pair(x):
    return (x * x).sum(), x


@pytest.mark.parametrize("door, name, x", [
    (pb.grad, "grad", X), (pb.value_and_grad, "value_and_grad", X),
    (func.grad, "grad", X), (func.grad_and_value, "grad_and_value", X),
    (lambda f: pb.grad(f, holomorphic=True), "grad", X + 0j),
    (lambda f: pb.value_and_grad(f, holomorphic=True), "value_and_grad", X + 0j)])
def test_each_door_names_itself(door, name, x):
    """pb.value_and_grad's errors said torch.func's grad_and_value; the holomorphic
    pb.grad's did too (it runs a value_and_grad inside)."""
    with pytest.raises(RuntimeError, match=rf"^{name}\(f\)\(\*args\): Expected f\(\*args\) "
                       "to return a Tensor, got <class 'tuple'>"):
        door(pair)(x)
    with pytest.raises(RuntimeError, match=rf"^{name}\(f\)\(\*args\): Expected f\(\*args\) "
                       "to return a scalar Tensor, got tensor with 1 dims"):
        door(lambda x: x * 2)(x)


def test_value_and_grad_and_grad_and_value_keep_their_own_results():
    f = lambda x: (x * x).sum()
    value, g = pb.value_and_grad(f)(X)
    g2, value2 = func.grad_and_value(f)(X)
    assert value == value2 == 14.0
    np.testing.assert_array_equal(g, g2)
    np.testing.assert_array_equal(pb.grad(f, holomorphic=True)(X.astype(complex)), 2 * X)
    np.testing.assert_array_equal(pb.grad(f)(X), 2 * X)  # (a cache of its own)


def test_keyword_only_arguments_name_the_function_and_the_way_out():
    def f(x, *, scale):
        return (scale * x ** 2).sum()

    with pytest.raises(TypeError, match=r"^value_and_grad: \S*f \(test_door_words.py:\d+\) takes "
                       r"keyword-only or \*\*kwargs arguments \(scale\); .*close over them"):
        pb.value_and_grad(f)(X, scale=2.0)
    np.testing.assert_array_equal(pb.grad(lambda x: f(x, scale=2.0))(X), 4 * X)


def test_a_nonlocal_array_rebound_binds_a_new_array_as_numpy_does():
    """``buf = buf + v`` for a nonlocal numpy array binds a new array (it was refused
    as a write of a gradient into the array, and pb.compile wrote into the old array,
    which another name still held)."""
    def f(x):
        buf = np.zeros(3)
        kept = buf

        def step():
            nonlocal buf
            buf = buf + x * 2

        step()
        return (buf ** 2).sum() + (kept * x).sum()

    assert f(X) == 56.0
    value, g = pb.value_and_grad(f)(X)
    assert value == 56.0
    np.testing.assert_array_equal(g, 8 * X)
    np.testing.assert_array_equal(pb.compile(lambda x: f(x) * x)(X).numpy(), 56.0 * X)


def test_a_global_array_rebound_follows_numpy_on_every_call():
    global total
    total = np.zeros(3)
    before = total

    def f(x):
        global total
        total = total + x
        return (total ** 2).sum()

    g = pb.grad(f)
    for n in (1, 2, 3):
        np.testing.assert_array_equal(g(X), 2 * n * X)
        np.testing.assert_array_equal(total, n * X)
    np.testing.assert_array_equal(before, 0.0)


class Model:
    def __init__(self) -> None:
        self.buf = np.zeros(3)

    def fill(self, x):
        self.buf[:] = x * 2
        return (self.buf ** 2).sum()

    def accumulate(self, x):
        for i in range(3):
            self.buf[i] += x[i]
        return (self.buf ** 2).sum()


def _refusal(method: str, line: str, way: str) -> str:
    return (rf"^{method} at test_door_words.py:\d+ \({re.escape(line)}\): writes a value "
            r"that needs a gradient into 'self.buf', a numpy array the function did not make "
            r"\(an attribute, a global or an enclosing function's array\): numpy stores only "
            r"numbers in it, so what is read back from it would carry no gradient .*; "
            + way)


@pytest.mark.parametrize("method, line", [("fill", "self.buf[:] = x * 2"),
                                          ("accumulate", "self.buf[i] += x[i]")])
def test_a_write_into_an_attribute_array_says_the_way_out(method, line):
    m = Model()
    with pytest.raises(TraceError, match=_refusal(method, line, "pass it as an argument")):
        pb.grad(lambda x: getattr(m, method)(x))(X)
    x = pb.tensor(X, requires_grad=True)
    with pytest.raises(TraceError, match=_refusal(method, line, r"make it in the function "
                       r"\(np.zeros, np.copy\(self.buf\)...\) and return it from the compiled")):
        pb.compile(lambda x: getattr(m, method)(x))(x)


def test_the_ways_out_work_as_numpy():
    def fill(x, buf):  # passed as an argument: written as numpy writes it
        buf[:] = x * 2
        return (buf ** 2).sum()

    m = Model()
    np.testing.assert_array_equal(pb.grad(fill)(X, m.buf), 8 * X)
    np.testing.assert_array_equal(m.buf, 2 * X)

    def accumulate(x, old):  # made in the function, returned beside the value
        buf = np.copy(old)
        buf += x
        return (buf ** 2).sum(), buf

    g, m.buf = pb.grad(accumulate, has_aux=True)(X, m.buf)
    np.testing.assert_array_equal(g, 6 * X)
    np.testing.assert_array_equal(m.buf, 3 * X)
