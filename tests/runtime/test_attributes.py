"""Tensor autograd attributes: requires_grad, grad, grad_fn, is_leaf, retains_grad
(reference section 1, E.15, E.16), each compared with torch."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import pullback as pb
from pullback.autograd import messages


# ------------------------------------------------------------------ requires_grad [1.1-1.4]
def test_requires_grad_defaults_and_kwarg(both):
    both.same(lambda T: (T.ones(3).requires_grad, T.ones(3, requires_grad=True).requires_grad,
                         T.tensor([1., 2.], requires_grad=True)))
    both.same(lambda T: T.zeros(2, dtype=T.complex64, requires_grad=True))
    both.same(lambda T: T.tensor([1., 2.], dtype=T.float64, requires_grad=True))


@pytest.mark.parametrize("factory", [
    lambda T: T.tensor([1, 2], requires_grad=True),
    lambda T: T.zeros(2, dtype=T.int64, requires_grad=True),
    lambda T: T.ones(2, dtype=T.int32, requires_grad=True),
    lambda T: T.tensor([True], requires_grad=True),
    lambda T: T.arange(3, requires_grad=True),
    lambda T: T.full((2,), 1, dtype=T.int64, requires_grad=True),
])
def test_integer_factory_cannot_require_grad(both, factory):
    both.raises(factory)


@pytest.mark.parametrize("make", [
    lambda T: T.ones(2, dtype=T.int64),
    lambda T: T.tensor([True, False]),
    lambda T: T.ones(2, dtype=T.complex64),
])
def test_requires_grad_method_on_non_float(both, make):
    def snippet(T):
        t = make(T)
        t.requires_grad_()
        return t
    if "complex" in str(make(both.torch).dtype):
        both.same(snippet)  # the method wording says "floating point" but complex is fine
    else:
        both.raises(snippet)
        both.raises(lambda T: setattr(make(T), "requires_grad", True))


def test_requires_grad_method_returns_self(both):
    def snippet(T):
        a = T.ones(2)
        r = a.requires_grad_()
        first = (r is a, a.requires_grad)
        a.requires_grad_(False)
        second = a.requires_grad
        a.requires_grad = True
        return first, second, a.requires_grad, a.is_leaf, a.grad_fn
    both.same(snippet)


def test_propagation(both):
    def snippet(T):
        T.manual_seed(0)
        x = T.ones(2, 2)
        y = T.ones(2, 2)
        w = T.ones(2, 2, requires_grad=True)
        a = x + y
        b = a + w
        return (a, b, (w > 0), w.argmax(), w * 0, w.long(), (w == w), w.sum().item(),
                w.double(), w.float() is w, w.to(T.float32) is w)
    both.same(snippet)


def test_requires_grad_on_non_leaf(both):
    def make(T):
        x = T.ones(2, requires_grad=True)
        return x * 2
    both.raises(lambda T: setattr(make(T), "requires_grad", False))
    both.raises(lambda T: make(T).requires_grad_(False))
    both.raises(lambda T: setattr(make(T), "requires_grad", True))
    both.same(lambda T: make(T).requires_grad_(True))


# ----------------------------------------------------------------------- .grad [1.5-1.7]
def test_grad_accumulates_in_place(both):
    def snippet(T):
        x = T.tensor([1., 2., 3.], requires_grad=True)
        before = x.grad
        (x * 2).sum().backward()
        first = x.grad.clone()
        g1 = x.grad
        (x * x).sum().backward()
        same_object = x.grad is g1
        meta = (x.grad.shape == x.shape, x.grad.dtype, x.grad.requires_grad, x.grad.grad_fn)
        x.grad = None
        (x ** 2).sum().backward()
        third = x.grad.clone()
        x.grad.zero_()
        d = T.tensor([1., 2.], dtype=T.float64, requires_grad=True)
        (d * 3).sum().backward()
        return before, first, x.grad, same_object, meta, third, d.grad
    both.same(snippet)


def test_grad_assignment_checks(both):
    def leaf(T):
        return T.ones(3, requires_grad=True)
    both.raises(lambda T: setattr(leaf(T), "grad", T.ones(2)))
    both.raises(lambda T: setattr(leaf(T), "grad", T.ones(2, 3)))
    both.raises(lambda T: setattr(leaf(T), "grad", T.ones(3, dtype=T.float64)),
                r"attempting to assign a gradient with dtype 'double' to a tensor with "
                r"grad_dtype 'Float'")
    both.raises(lambda T: setattr(leaf(T), "grad", T.ones(3, dtype=T.float16)),
                r"attempting to assign a gradient with dtype 'c10::Half' to a tensor with "
                r"grad_dtype 'Float'")
    both.raises(lambda T: setattr(T.ones(2, dtype=T.float64), "grad", T.ones(2)),
                r"attempting to assign a gradient with dtype 'float' to a tensor with "
                r"grad_dtype 'Double'")
    both.raises(lambda T: setattr(leaf(T), "grad", [1., 2., 3.]), exc=TypeError)
    both.raises(lambda T: setattr(leaf(T), "grad", 3.0), exc=TypeError)

    def ok(T):
        x = leaf(T)
        x.grad = T.full((3,), 5.)
        T.ones(3).grad = None
        t = T.ones(3)
        t.grad = T.ones(3)
        return x.grad, t.grad, t.requires_grad
    both.same(ok)


def test_grad_assignment_keeps_object_and_accumulates_into_it(both):
    def snippet(T):
        x = T.ones(2, requires_grad=True)
        g = T.full((2,), 5.)
        x.grad = g
        (x * 3).sum().backward()
        return x.grad is g, g
    both.same(snippet)


def test_non_leaf_grad_warns_every_access(both):
    def snippet(T):
        x = T.ones(2, requires_grad=True)
        y = x * 2
        y.sum().backward()
        got = [y.grad, y.grad]
        got.append(T.ones(2).grad)  # plain tensor: no warning
        got.append(x.grad)  # leaf: no warning
        y.retain_grad()
        got.append(y.grad)  # retained: no warning
        return got
    ws = both.warnings(snippet)
    assert len(ws) == 2 and ws[0][0] == "UserWarning"
    assert ws[0][1].startswith("The .grad attribute of a Tensor that is not a leaf Tensor")
    both.same(snippet)


# ------------------------------------------------------------------- grad_fn [1.8-1.10]
GRAD_FN_EXPRS = {
    "x+1": lambda T, x, W, v: x + 1, "x+x": lambda T, x, W, v: x + x,
    "1+x": lambda T, x, W, v: 1 + x, "x-1": lambda T, x, W, v: x - 1,
    "1-x": lambda T, x, W, v: 1 - x,
    "x*2": lambda T, x, W, v: x * 2, "x*x": lambda T, x, W, v: x * x,
    "x/2": lambda T, x, W, v: x / 2, "2/x": lambda T, x, W, v: 2 / x,
    "-x": lambda T, x, W, v: -x,
    "x**2": lambda T, x, W, v: x ** 2, "x**x": lambda T, x, W, v: x ** x,
    "2**x": lambda T, x, W, v: 2 ** x,
    "exp": lambda T, x, W, v: x.exp(), "log": lambda T, x, W, v: x.log(),
    "sin": lambda T, x, W, v: x.sin(), "cos": lambda T, x, W, v: x.cos(),
    "sqrt": lambda T, x, W, v: x.sqrt(),
    "tanh": lambda T, x, W, v: x.tanh(), "sigmoid": lambda T, x, W, v: x.sigmoid(),
    "relu": lambda T, x, W, v: x.relu(), "abs": lambda T, x, W, v: x.abs(),
    "clamp": lambda T, x, W, v: x.clamp(0, 1),
    "maximum": lambda T, x, W, v: T.maximum(x, x * 2),
    "sum()": lambda T, x, W, v: x.sum(), "sum(0)": lambda T, x, W, v: x.sum(0),
    "mean()": lambda T, x, W, v: x.mean(), "mean(1)": lambda T, x, W, v: x.mean(1),
    "max()": lambda T, x, W, v: x.max(), "max(1)[0]": lambda T, x, W, v: x.max(1)[0],
    "min()": lambda T, x, W, v: x.min(), "min(1).values": lambda T, x, W, v: x.min(1).values,
    "x@W": lambda T, x, W, v: x @ W, "mm": lambda T, x, W, v: T.mm(x, W),
    "v@v": lambda T, x, W, v: v @ v, "x@v": lambda T, x, W, v: x @ v,
    "t()": lambda T, x, W, v: x.t(), "T": lambda T, x, W, v: x.T,
    "view": lambda T, x, W, v: x.view(6), "reshape": lambda T, x, W, v: x.reshape(6),
    "transpose.reshape": lambda T, x, W, v: x.transpose(0, 1).reshape(6),
    "transpose": lambda T, x, W, v: x.transpose(0, 1),
    "permute": lambda T, x, W, v: x.permute(1, 0),
    "x[0]": lambda T, x, W, v: x[0], "x[:, 1:]": lambda T, x, W, v: x[:, 1:],
    "x[[0, 1]]": lambda T, x, W, v: x[[0, 1]],
    "unsqueeze": lambda T, x, W, v: x.unsqueeze(0),
    "squeeze": lambda T, x, W, v: x.unsqueeze(0).squeeze(0),
    "expand": lambda T, x, W, v: x.expand(4, 2, 3),
    "clone": lambda T, x, W, v: x.clone(), "double": lambda T, x, W, v: x.double(),
    "where": lambda T, x, W, v: T.where(x > 0, x, 0.),
    "softmax": lambda T, x, W, v: T.softmax(x, 1),
    "log_softmax": lambda T, x, W, v: T.log_softmax(x, 1),
    "F.linear": lambda T, x, W, v: T.nn.functional.linear(x, W.t()),
    "F.linear bias": lambda T, x, W, v: T.nn.functional.linear(
        x, W.t(), T.zeros(4, requires_grad=True)),
    "F.mse_loss": lambda T, x, W, v: T.nn.functional.mse_loss(x, T.zeros(2, 3)),
    "F.cross_entropy": lambda T, x, W, v: T.nn.functional.cross_entropy(
        x, T.tensor([0, 2])),
    "F.bce_with_logits": lambda T, x, W, v: T.nn.functional.binary_cross_entropy_with_logits(
        x, T.ones(2, 3)),
    "F.bce": lambda T, x, W, v: T.nn.functional.binary_cross_entropy(
        x.sigmoid(), T.ones(2, 3)),
}


@pytest.mark.parametrize("name", list(GRAD_FN_EXPRS))
def test_grad_fn_names(both, name):
    def snippet(T):
        x = T.tensor([[0.5, 1.0, 1.5], [2.0, 2.5, 3.0]], requires_grad=True)
        W = T.tensor([[1., 2., 3., 4.], [5., 6., 7., 8.], [9., 1., 2., 3.]],
                     requires_grad=True)
        v = T.tensor([1., 2., 3.], requires_grad=True)
        out = GRAD_FN_EXPRS[name](T, x, W, v)
        return out, out.grad_fn.name(), type(out.grad_fn).__name__
    both.same(snippet)


def test_node_api(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        y = T.tensor([3., 4.], requires_grad=True)
        m = x * y
        z = m + 2
        s = z.sum()
        acc = m.grad_fn.next_functions[0][0]
        w = x * T.ones(2)
        c = 3 * x
        return (s.grad_fn, type(s.grad_fn).__name__,
                isinstance(s.grad_fn, T.autograd.graph.Node),
                isinstance(acc, T.autograd.graph.Node),
                s.grad_fn.next_functions, z.grad_fn.next_functions,
                m.grad_fn.next_functions, type(acc).__name__, acc.name(), acc.variable is x,
                acc.next_functions, x.grad_fn, w.grad_fn.next_functions,
                c.grad_fn.next_functions, s.grad_fn.metadata,
                type(s.grad_fn.metadata).__name__,
                repr(s.grad_fn).startswith("<SumBackward0 object at 0x"),
                repr(acc).startswith("<AccumulateGrad object at 0x"))
    both.same(snippet)


def test_accumulate_grad_node_reused(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        a = x * 2
        b = x + 1
        c = a * b
        acc_a = a.grad_fn.next_functions[0][0]
        acc_b = b.grad_fn.next_functions[0][0]
        d = x.exp()
        return (acc_a is acc_b, d.grad_fn.next_functions[0][0] is acc_a,
                c.grad_fn.next_functions[0][0] is a.grad_fn)
    both.same(snippet)


def test_multi_output_next_functions(both):
    def snippet(T):
        x = T.tensor([1., 2., 3., 4.], requires_grad=True)
        mx = T.max(x.view(2, 2), 1)
        u = mx.values * 2
        return (u.grad_fn.next_functions, mx.values.grad_fn, mx.indices,
                mx.values.output_nr if hasattr(mx.values, "output_nr") else 0)
    both.same(snippet)


def test_nodes_identity_through_views_and_names(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        y = x * 1
        y[0] = 0.
        acc = (x * 1).grad_fn.next_functions[0][0]
        return (type(y.grad_fn).__name__, y.grad_fn.name(), type(acc).__name__, acc.name(),
                type(x.grad_fn).__name__)
    both.same(snippet)


# ----------------------------------------------------------------------- is_leaf [1.11]
def test_is_leaf_rules(both):
    def snippet(T):
        x = T.ones(2, requires_grad=True)
        p = T.ones(2)
        with T.no_grad():
            q = x * 2
        d = (x * 2).detach()
        c = x.double()
        r = T.rand(2).requires_grad_()
        return (x.is_leaf, p.is_leaf, (p * 2).is_leaf, (x * 2).is_leaf, q, d, c,
                r.is_leaf, x.to(T.float32) is x, c.grad_fn.name())
    both.same(snippet)


# --------------------------------------------------------------- retains_grad [1.12, E.10]
def test_retain_grad(both):
    def snippet(T):
        x = T.ones(2, requires_grad=True)
        y = x * 3
        before = (x.retains_grad, y.retains_grad)
        y.retain_grad()
        y.retain_grad()
        (y * y).sum().backward()
        x.retain_grad()
        return before, y.retains_grad, y.grad, x.grad, x.retains_grad
    both.same(snippet)
    both.raises(lambda T: T.ones(2).retain_grad())
    both.raises(lambda T: setattr(T.ones(2, requires_grad=True) * 3, "retains_grad", False),
                "attribute 'retains_grad' of .* objects is not writable", exc=AttributeError)


def test_retained_grad_accumulates_across_backward(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        h = x * 3
        h.retain_grad()
        out = (h * h).sum()
        out.backward(retain_graph=True)
        first = h.grad.clone()
        g = h.grad
        out.backward()
        return first, h.grad, g is h.grad, x.grad
    both.same(snippet)


def test_retained_grad_is_plain_tensor(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        h = x * 3
        h.retain_grad()
        (h ** 2).sum().backward()
        return h.grad, h.grad.requires_grad, h.grad.grad_fn, h.grad.is_leaf
    both.same(snippet)


# -------------------------------------------------------------------- data / misc
def test_data_shares_storage_not_version(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        y = x.exp()
        y.data.zero_()
        v = y._version
        y.sum().backward()
        d = x.data
        return v, x.grad, d, d.requires_grad, d.is_leaf
    both.same(snippet)


def test_data_setter(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        x.data = T.tensor([5., 6.])
        (x * x).sum().backward()
        return x, x.grad
    both.same(snippet)


def test_output_nr_and_version_attributes(both):
    def snippet(T):
        x = T.tensor([1., 2., 3., 4.], requires_grad=True)
        a, b = x.view(2, 2).max(1)
        return x._version, a.output_nr, b.output_nr, (x * 2).output_nr
    both.same(snippet)


@pytest.mark.parametrize("factory", [
    lambda T: T.ones(2, requires_grad=1),
    lambda T: T.tensor([1.], requires_grad=1),
    lambda T: T.zeros_like(T.ones(2), requires_grad=1),
    lambda T: T.full((2,), 1., requires_grad="yes"),
])
def test_factory_requires_grad_must_be_bool(both, factory):
    both.raises(factory, exc=TypeError)
    both.raises(lambda T: T.randn(2, requires_grad=1), r"^randn\(\)", exc=TypeError)
    both.same(lambda T: T.zeros(2, requires_grad=None))


def test_comparison_methods_do_not_require_grad(both):
    def snippet(T):
        x = T.tensor([[1., 2.], [0., 4.]], requires_grad=True)
        y = x.detach()
        return (x.eq(y), x.ne(y), x.gt(1), x.ge(1), x.lt(2), x.le(2), x.eq(y).all(),
                x.all(), x.any(), x.all(1), x.any(0, keepdim=True), (x * 0).any())
    both.same(snippet)


def test_float_of_a_tensor_that_requires_grad_warns_once(monkeypatch):
    """torch 2.13 warns (once per process) on float() and complex() of a tensor that
    requires grad while grad mode is on, and not on int(), .item() or bool(); so does
    pullback (its own once-set emptied here, as a new process would start)."""
    monkeypatch.setattr(messages, "WARNED_ONCE", set())
    t = pb.tensor(2.0, requires_grad=True)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        int(t), t.item(), bool(t), float(t.detach())
        with pb.no_grad():  # (LBFGS's float(loss) runs so: torch's does not warn)
            float(t)
        assert seen == []
        float(t)
        complex(t * 2)
        h = np.zeros(2)
        h[0] += t  # (numpy's item write takes float(): torch warns there too)
    assert [str(w.message) for w in seen] == [
        "Converting a tensor with requires_grad=True to a scalar may lead to unexpected "
        "behavior.\nConsider using tensor.detach() first."]
