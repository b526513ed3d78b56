"""gradcheck and gradgradcheck (reference section 8, 13.4), compared with torch."""

from __future__ import annotations

import inspect
import sys

import numpy as np
import pytest
from custom_functions import square_once

import pullback as pb

MISMATCH = r"^Jacobian mismatch for output 0 with respect to input 0,\nnumerical:"


def _wrong_sin(T, factor=2.0):
    class WrongSin(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sin()

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * x.cos() * factor
    return WrongSin


def _x(T):
    return T.tensor([0.0, 1.0], dtype=T.float64, requires_grad=True)


def test_signatures_and_defaults_are_torch(torch):
    for name in ("gradcheck", "gradgradcheck"):
        mine = inspect.signature(getattr(pb.autograd, name)).parameters
        theirs = inspect.signature(getattr(torch.autograd, name)).parameters
        assert [(p.name, p.kind, p.default) for p in mine.values()] == \
            [(p.name, p.kind, p.default) for p in theirs.values()]


def test_passing_checks(both):
    def snippet(T):
        x = T.tensor([0.3, -1.2, 2.0], dtype=T.float64, requires_grad=True)
        w = T.tensor([1.5, 0.5, -0.7], dtype=T.float64, requires_grad=True)
        k = T.tensor([2.0, 1.0, 3.0], dtype=T.float64)
        return (T.autograd.gradcheck(lambda a, b: (a * b).sin(), (x, w)),
                T.autograd.gradcheck(T.exp, x),
                T.autograd.gradcheck(lambda a: (a.exp(), a.sum()), (x,)),
                T.autograd.gradcheck(lambda a, c, s: a * c * s, (x, k, 3.0)),
                T.autograd.gradcheck(lambda a, b: (a * b).tanh(), (x, w), fast_mode=True),
                T.autograd.gradgradcheck(lambda a: (a ** 3).sum(), (x,)),
                T.autograd.gradgradcheck(lambda a, b: (a * b).sin(), (x, w), fast_mode=True),
                T.autograd.gradcheck(_wrong_sin(T, 1.0).apply, (x,)),
                T.autograd.gradgradcheck(_wrong_sin(T, 1.0).apply, (x,)))
    both.same(snippet)


def test_failure_text(both):
    text = both.raises(lambda T: T.autograd.gradcheck(_wrong_sin(T).apply, (_x(T),)), MISMATCH)
    assert text == ("Jacobian mismatch for output 0 with respect to input 0,\n"
                    "numerical:tensor([[1.0000, 0.0000],\n        [0.0000, 0.5403]], "
                    "dtype=pullback.float64)\n"
                    "analytical:tensor([[2.0000, 0.0000],\n        [0.0000, 1.0806]], "
                    "dtype=pullback.float64)\n")
    both.same(lambda T: T.autograd.gradcheck(_wrong_sin(T).apply, (_x(T),),
                                             raise_exception=False))
    both.same(lambda T: [c.__name__ for c in
                         sys.modules[T.__name__ + ".autograd.gradcheck"].GradcheckError.__mro__])


def test_fast_mode_failure_text(both):
    text = both.raises(lambda T: T.autograd.gradcheck(_wrong_sin(T).apply, (_x(T),),
                                                      fast_mode=True), MISMATCH)
    head, slow = text.split("\n\nThe above quantities", 1)
    assert float(head.split("analytical:")[1]) == pytest.approx(
        2 * float(head.split("numerical:")[1].split("\n")[0]), rel=1e-6)
    assert slow.startswith(" relating the numerical and analytical jacobians are computed \n"
                           "in fast mode. See: https://github.com/pytorch/pytorch/issues/53876")
    assert "Numerical:\n tensor([[1.0000, 0.0000],\n        [0.0000, 0.5403]]" in slow
    assert slow.endswith("The max per-element difference (slow mode) is: 1.0000000000001665.\n")


def test_float32_warning(both):
    def snippet(T):
        x = T.tensor([0.1, 0.7, -0.3], requires_grad=True)
        return T.autograd.gradcheck(T.sin, (x,), raise_exception=False, atol=1e-2, rtol=1e-2)
    (warning,) = both.warnings(snippet)
    assert warning[1].startswith("Input #0 requires gradient and is not a double precision")
    assert warning[1].endswith(" ")


def test_no_input_requires_grad(both):
    both.raises(lambda T: T.autograd.gradcheck(T.sin, (T.ones(3, dtype=T.float64),)),
                exc=ValueError)


def test_input_with_a_zero_stride(both):
    both.raises(lambda T: T.autograd.gradcheck(
        T.sin, (T.ones(3, dtype=T.float64, requires_grad=True).expand(2, 3),)))


def test_undefined_output_gradients(both):
    def no_undef(T):
        class NoUndef(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.set_materialize_grads(False)
                return x.clone()

            @staticmethod
            def backward(ctx, g):
                if g is None:
                    return T.ones(2, dtype=T.float64)
                return g
        return NoUndef

    x = lambda T: T.tensor([1., 2.], dtype=T.float64, requires_grad=True)  # noqa: E731
    text = both.raises(lambda T: T.autograd.gradcheck(no_undef(T).apply, (x(T),)))
    assert text.startswith("Expected all input grads to be undefined or zero")
    (warning,) = both.warnings(lambda T: T.autograd.gradcheck(no_undef(T).apply, (x(T),),
                                                              raise_exception=False))
    assert warning[1].startswith("Backwards compatibility: New undefined gradient support")
    both.same(lambda T: T.autograd.gradcheck(no_undef(T).apply, (x(T),),
                                             check_undefined_grad=False))


def test_backward_not_multiplied_by_grad_output(both):
    def snippet(T):
        class Sticky(_wrong_sin(T, 1.0)):  # sin, with a backward that adds 1 for g = 0
            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return g * x.cos() + (1.0 if float(g.abs().sum()) == 0 else 0.0)
        return T.autograd.gradcheck(Sticky.apply, (_x(T),))
    assert both.raises(snippet) == "backward not multiplied by grad_output"


def test_nondeterministic_backward(both):
    def snippet(T):
        calls = []

        class Jitter(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                calls.append(1)
                return g * (2 + 1e-9 * len(calls))
        return T.autograd.gradcheck(Jitter.apply, (_x(T),))
    text = both.raises(snippet, r"^Backward is not reentrant")
    assert "The tolerance for nondeterminism was 0.0." in text
    both.same(lambda T: T.autograd.gradcheck(lambda a: a * 2, (_x(T),), nondet_tol=1e-6))


def test_gradgradcheck_of_once_differentiable(both):
    def snippet(T):
        x = T.tensor([1., 2.], dtype=T.float64, requires_grad=True)
        T.autograd.gradgradcheck(square_once(T).apply, (x,), grad_outputs=(
            T.tensor([0.5, -0.25], dtype=T.float64, requires_grad=True),))
    text = both.raises(snippet, MISMATCH)
    assert "numerical:tensor([[ 1.0000,  0.0000],\n        [ 0.0000, -0.5000]]" in text
    assert "analytical:tensor([[0., 0.],\n        [0., 0.]]" in text


def test_complex_inputs_and_outputs(both):
    def snippet(T):
        z = T.tensor([0.3 + 1j, -0.5 - 0.2j, 1.0 + 0.5j], dtype=T.complex128,
                     requires_grad=True)
        return (T.autograd.gradcheck(lambda t: (t * t.conj()).real.sum(), (z,)),
                T.autograd.gradcheck(T.exp, (z,)),
                T.autograd.gradcheck(T.exp, (z,), fast_mode=True))
    both.same(snippet)

    def wrong(T):
        class WrongC(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return g * x.conj() * 3
        z = T.tensor([1 + 1j, 2 - 1j], dtype=T.complex128, requires_grad=True)
        T.autograd.gradcheck(WrongC.apply, (z,))
    text = both.raises(wrong, r"^While considering the imaginary part of complex outputs only, "
                              r"Jacobian mismatch for output 0 with respect to input 0,")
    assert "numerical:tensor([[ 2.0000+2.0000j,  0.0000+0.0000j]," in text


def test_optional_checks_pass_on_correct_functions(both):
    def snippet(T):
        x = T.tensor([0.3, -1.2], dtype=T.float64, requires_grad=True)
        w = T.tensor([1.5, 0.5], dtype=T.float64, requires_grad=True)
        f = lambda a, b: ((a * b).sin(), (a.exp() * b).sum())  # noqa: E731
        return (T.autograd.gradcheck(f, (x, w), check_batched_grad=True),
                T.autograd.gradcheck(f, (x, w), check_forward_ad=True,
                                     check_batched_forward_grad=True),
                T.autograd.gradcheck(f, (x, w), check_grad_dtypes=True, masked=True),
                T.autograd.gradcheck(f, (x, w), check_forward_ad=True, check_backward_ad=False),
                T.autograd.gradgradcheck(f, (x, w), check_batched_grad=True,
                                         gen_non_contig_grad_outputs=True))
    both.same(snippet)


def _wrong_jvp_sin(T):
    class WrongJvpSin(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sin()

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * x.cos()

        @staticmethod
        def jvp(ctx, t):
            (x,) = ctx.saved_tensors
            return t * x.cos() * 2
    return WrongJvpSin


def test_forward_mode_check_fails_on_a_wrong_jvp():
    text = ""
    try:
        pb.autograd.gradcheck(_wrong_jvp_sin(pb).apply, (_x(pb),), check_forward_ad=True,
                              check_backward_ad=False)
    except pb.autograd.GradcheckError as e:
        text = str(e)
    assert text.startswith("Jacobian computed with forward mode mismatch for output 0 with "
                           "respect to input 0,\n")


def test_forward_mode_check_needs_a_jvp(both):
    """A Function without jvp: forward mode raises torch's NotImplementedError."""
    both.raises(lambda T: T.autograd.gradcheck(_wrong_sin(T).apply, (_x(T),),
                                               check_forward_ad=True, check_backward_ad=False),
                exc=NotImplementedError)


def test_assertions_on_flag_combinations(both):
    f = lambda T: T.sin  # noqa: E731
    both.raises(lambda T: T.autograd.gradcheck(f(T), _x(T), check_backward_ad=False),
                exc=AssertionError)
    both.raises(lambda T: T.autograd.gradcheck(f(T), _x(T), check_batched_grad=True,
                                               check_backward_ad=False), exc=AssertionError)
    both.raises(lambda T: T.autograd.gradcheck(f(T), _x(T), check_batched_forward_grad=True),
                exc=AssertionError)
    both.raises(lambda T: T.autograd.gradgradcheck(f(T), _x(T), check_rev_over_rev=False),
                exc=AssertionError)


def test_function_without_differentiable_outputs(both):
    def snippet(T):
        x = T.tensor([0.5, 1.5], dtype=T.float64, requires_grad=True)
        return T.autograd.gradcheck(lambda a: (a > 1).double(), (x,))
    both.same(snippet)


def test_gradcheck_does_not_disturb_the_inputs():
    x = pb.tensor(np.linspace(-1, 1, 5), dtype=pb.float64, requires_grad=True)
    before = x.detach().numpy().copy()
    assert pb.autograd.gradcheck(lambda a: a.tanh(), (x,), fast_mode=True)
    assert pb.autograd.gradcheck(lambda a: a.tanh(), (x,))
    np.testing.assert_array_equal(x.detach().numpy(), before)
    assert x.grad is None and x._version == 0


def test_ops_with_several_outputs(both):
    def snippet(T):
        x = T.tensor([0.3, -1.2, 2.0, 0.7], dtype=T.float64, requires_grad=True)
        return (T.autograd.gradcheck(lambda a: a.sort()[0] * T.arange(4.).double(), (x,)),
                T.autograd.gradcheck(lambda a: a.split(2), (x,)),
                T.autograd.gradcheck(lambda a: T.stack([a, a.sin()]).sum(0), (x,),
                                     fast_mode=True),
                T.autograd.gradgradcheck(lambda a: (a.split(2)[0] * a.split(2)[1]).sum(), (x,)))
    both.same(snippet)
