"""Parameters in containers at the torch-named entry points (docs/reliability.md,
"Parameters in containers"): custom Functions, autograd.functional, backward and
checkpoint take what torch takes (optimizers: tests/nn/test_optim.py), and treat
Tensors inside lists, tuples and dicts as torch does (the ``both`` fixture runs each
snippet on torch too).
Inside pullback's front doors a custom Function refuses traced values in containers,
where torch's silence would be a wrong gradient or a stale compiled value."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb
from pullback.compiler import TraceError


def _products(T):
    class Products(T.autograd.Function):
        """x times every tensor of the list ``ws`` (torch does not track ``ws``)."""

        @staticmethod
        def forward(ctx, x, ws):
            ctx.save_for_backward(x, *ws)
            for w in ws:
                x = x * w
            return x

        @staticmethod
        def backward(ctx, g):
            _, *ws = ctx.saved_tensors
            for w in ws:
                g = g * w
            return g, None

    return Products


def test_a_function_does_not_track_tensors_in_a_list_eagerly(both):
    """As torch: the list's tensors get no gradient and no edge, without a word."""
    def snippet(T):
        x = T.tensor([1.0, 2.0], requires_grad=True)
        w = T.tensor([3.0, 4.0], requires_grad=True)
        y = _products(T).apply(x, [w])
        y.sum().backward()
        return y, x.grad, w.grad, len(y.grad_fn.next_functions)
    both.same(snippet)

    def no_tracked_input(T):
        w = T.tensor([3.0, 4.0], requires_grad=True)
        _products(T).apply(T.tensor([1.0, 2.0]), [w]).sum().backward()
    both.raises(no_tracked_input, "does not require grad")


def test_a_function_refuses_traced_values_in_containers_inside_transforms():
    """pb.grad would return zeros and pb.compile would keep the first call's value
    (both did): the call is refused, naming the Function and the argument."""
    Products = _products(pb)
    x = pb.tensor([1.0, 2.0])
    calls = {
        "grad": lambda: pb.grad(lambda w: Products.apply(x, [w]).sum())(np.array([3.0, 4.0])),
        "eager grad": lambda: pb.grad(lambda w: Products.apply(x, [w]).sum())(
            pb.tensor([3.0, 4.0], requires_grad=True)),
        "compile": lambda: pb.compile(lambda x, w: Products.apply(x, (w,)).sum())(
            x, pb.tensor([3.0, 4.0])),
        "keyword": lambda: pb.grad(lambda w: Products.apply(x, ws={"a": w}["a"][None]).sum()
                                   )(np.array([3.0, 4.0])),
        "jvp": lambda: pb.jvp(lambda w: Products.apply(x, [w]), (np.array([3.0, 4.0]),),
                              (np.ones(2),)),
    }
    for name, call in calls.items():
        with pytest.raises(TraceError, match=r"Products.apply: (argument 2|keyword argument "
                                             r"'ws') holds a traced Tensor") as info:
            call()
        assert "apply(x, *ws)" in str(info.value), name


def test_a_function_gets_tensors_as_separate_arguments_inside_transforms():
    """The spelling the error asks for: every tensor an argument of its own."""
    class Scale(pb.autograd.Function):
        @staticmethod
        def forward(ctx, x, *ws):
            ctx.save_for_backward(x, *ws)
            out = x
            for w in ws:
                out = out * w
            return out

        @staticmethod
        def backward(ctx, g):
            x, *ws = ctx.saved_tensors
            total = x
            for w in ws:
                total = total * w
            return (g * total / x,) + tuple(g * total / w for w in ws)

    def loss(ws):
        return Scale.apply(pb.tensor([1.0, 2.0], dtype=pb.float64), *ws).sum()

    ws = [np.array([3.0, 4.0]), np.array([0.5, 2.0])]
    got = pb.grad(loss)(ws)
    np.testing.assert_allclose(got[0], [0.5, 4.0])
    np.testing.assert_allclose(got[1], [3.0, 8.0])


def test_functional_backward_and_checkpoint_take_what_torchs_take(both):
    f = lambda a, b: a * b.sum()  # noqa: E731
    for how in ("jacobian", "vjp"):
        both.raises(lambda T, how=how: getattr(T.autograd.functional, how)(
            f, [T.ones(2), T.ones(1)], *(() if how == "jacobian" else (T.ones(2),))),
            "must be either a Tensor or a tuple of Tensors", TypeError)
    both.raises(lambda T: T.autograd.functional.jacobian(
        lambda a: a[0], ((T.ones(2),),)), "the value at index 0 has type", TypeError)

    def nested_inputs(T):
        w = T.ones(2, requires_grad=True)
        (w * 2).sum().backward(inputs=[[w]])
    both.raises(nested_inputs, "all inputs have to be Tensors or GradientEdges, but got list")

    def checkpointed(T):
        from importlib import import_module
        checkpoint = import_module(T.__name__ + ".utils.checkpoint").checkpoint
        w1 = T.tensor([1.0, 2.0], requires_grad=True)
        w2 = T.tensor([3.0], requires_grad=True)
        y = checkpoint(lambda ws: (ws["a"][0] * ws["b"]).sum(), {"a": [w1], "b": w2},
                       use_reentrant=False)
        y.backward()
        return w1.grad, w2.grad
    both.same(checkpointed)
