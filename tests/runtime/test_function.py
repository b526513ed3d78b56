"""Custom autograd Functions (reference section 7, E.13), each compared with torch."""

from __future__ import annotations

import numpy as np
import pytest
from custom_functions import cube, square_once

import pullback as pb

SECOND_TIME = r"^Trying to backward through the graph a second time"


def _exp(T):
    class Exp(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            seen.append(T.is_grad_enabled())
            r = x.exp()
            ctx.save_for_backward(r)
            return r

        @staticmethod
        def backward(ctx, g):
            (r,) = ctx.saved_tensors
            return g * r
    seen: list = []
    Exp.seen = seen
    return Exp


# ------------------------------------------------------------------ basics [7.1, 7.2, 7.15]
def test_forward_runs_without_grad_and_records_a_class_backward_node(both):
    def snippet(T):
        Exp = _exp(T)
        x = T.tensor([0., 1.], requires_grad=True)
        y = Exp.apply(x)
        node = y.grad_fn
        y.sum().backward()
        plain = Exp.apply(T.tensor([0.]))
        return (y, type(node).__name__, node.name(), node, Exp.seen, x.grad, plain,
                plain.grad_fn is None, node._forward_cls is Exp,
                type(node).__mro__[1].__name__, repr(y))
    both.same(snippet)


def test_setup_context_style(both):
    def snippet(T):
        class Mul(T.autograd.Function):
            @staticmethod
            def forward(a, b, scale=1.0):
                return a * b * scale

            @staticmethod
            def setup_context(ctx, inputs, output):
                a, b, scale = inputs
                ctx.scale = scale
                ctx.grad_on = T.is_grad_enabled()
                ctx.save_for_backward(a, b)

            @staticmethod
            def backward(ctx, g):
                a, b = ctx.saved_tensors
                return g * b * ctx.scale, g * a * ctx.scale, None
        a = T.tensor(2., requires_grad=True)
        b = T.tensor(3., requires_grad=True)
        out = Mul.apply(a, b, scale=2.0)
        out.backward()
        return out, out.grad_fn.grad_on, a.grad, b.grad
    both.same(snippet)


def test_setup_context_with_forward_taking_ctx_is_a_binding_error(both):
    def snippet(T):
        class S(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def setup_context(ctx, inputs, output):
                pass

            @staticmethod
            def backward(ctx, g):
                return g
        return S.apply(T.ones(2, requires_grad=True))
    both.raises(snippet, "missing a required argument: 'x'", TypeError)


# ------------------------------------------- needs_input_grad, non-tensor arguments [7.3]
def test_needs_input_grad_and_non_tensor_arguments(both):
    def snippet(T):
        class Scale(T.autograd.Function):
            @staticmethod
            def forward(ctx, x, w, k):
                ctx.k = k
                ctx.save_for_backward(x, w)
                return x * w * k

            @staticmethod
            def backward(ctx, g):
                seen.append(ctx.needs_input_grad)
                x, w = ctx.saved_tensors
                gx = g * w * ctx.k if ctx.needs_input_grad[0] else None
                gw = g * x * ctx.k if ctx.needs_input_grad[1] else None
                return gx, gw, None
        seen: list = []
        x = T.tensor([1., 2.], requires_grad=True)
        w = T.tensor([3., 4.])
        y = Scale.apply(x, w, 10)
        y.sum().backward()
        return seen, x.grad, y.grad_fn.next_functions[1], len(y.grad_fn.next_functions)
    both.same(snippet)


def test_needs_input_grad_under_no_grad_still_reports_requires_grad(both):
    def snippet(T):
        class P(T.autograd.Function):
            @staticmethod
            def forward(ctx, x, y):
                seen.append((ctx.needs_input_grad, T.is_grad_enabled()))
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g * 2, None
        seen: list = []
        with T.no_grad():
            out = P.apply(T.ones(2, requires_grad=True), 3)
        return seen, out
    both.same(snippet)


def test_keyword_arguments_reach_forward(both):
    def snippet(T):
        class KW(T.autograd.Function):
            @staticmethod
            def forward(ctx, x, k=2):
                return x * k

            @staticmethod
            def backward(ctx, g):
                return g * 3, None
        x = T.ones(1, requires_grad=True)
        y = KW.apply(x, k=3)
        y.sum().backward()
        return y, x.grad
    both.same(snippet)


# --------------------------------------------------- what backward returns [7.4, 7.5, 7.6]
def _returning(T, grads, forward=lambda x, y: x + y):
    class Bad(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            return forward(x, y)

        @staticmethod
        def backward(ctx, g):
            return grads(T, g)
    return Bad


def test_too_few_gradients(both):
    both.raises(lambda T: _returning(T, lambda T, g: g).apply(
        T.ones(2, requires_grad=True), T.ones(2, requires_grad=True)).sum().backward())


def test_too_many_gradients(both):
    both.raises(lambda T: _returning(T, lambda T, g: (g, g, g)).apply(
        T.ones(2, requires_grad=True), T.ones(2, requires_grad=True)).sum().backward())


def test_extra_trailing_nones_are_dropped(both):
    def snippet(T):
        x = T.ones(2, requires_grad=True)
        y = T.ones(2, requires_grad=True)
        _returning(T, lambda T, g: (g * 2, g, None, None)).apply(x, y).sum().backward()
        return x.grad, y.grad
    both.same(snippet)


def test_wrong_gradient_shape(both):
    text = both.raises(lambda T: _returning(T, lambda T, g: (T.ones(5), None)).apply(
        T.ones(3, requires_grad=True), T.ones(3)).sum().backward())
    assert text == ("Function BadBackward returned an invalid gradient at index 0 - got [5] "
                    "but expected shape compatible with [3]")


def test_gradient_that_broadcasts_to_the_input_is_summed_back(both):
    def snippet(T):
        x = T.ones(3, requires_grad=True)
        _returning(T, lambda T, g: (T.ones(2, 3), None)).apply(x, T.ones(3)).sum().backward()
        return x.grad
    both.same(snippet)


def test_gradient_of_another_dtype_is_cast(both):
    def snippet(T):
        x = T.ones(3, requires_grad=True)
        _returning(T, lambda T, g: (g.double(), None)).apply(x, T.ones(3)).sum().backward()
        return x.grad
    both.same(snippet)


def test_complex_gradient_for_a_real_input(both):
    both.raises(lambda T: _returning(T, lambda T, g: (g * 1j, None)).apply(
        T.ones(3, requires_grad=True), T.ones(3)).sum().backward())


def test_gradient_that_is_not_a_tensor(both):
    both.raises(lambda T: _returning(T, lambda T, g: (1.0, None)).apply(
        T.ones(3, requires_grad=True), T.ones(3)).sum().backward())


def test_gradient_for_a_non_tensor_argument(both):
    both.raises(lambda T: _returning(T, lambda T, g: (g, g)).apply(
        T.ones(3, requires_grad=True), 2.0).sum().backward())


def test_gradient_for_an_input_that_needs_none_is_dropped_unchecked(both):
    def snippet(T):
        x = T.ones(2, requires_grad=True)
        _returning(T, lambda T, g: (g, T.ones(7))).apply(x, T.ones(2)).sum().backward()
        return x.grad
    both.same(snippet)


def test_none_gradient_leaves_grad_none(both):
    def snippet(T):
        x = T.ones(2, requires_grad=True)
        y = T.ones(2, requires_grad=True)
        _returning(T, lambda T, g: (None, g), lambda x, y: x * 2 + y).apply(x, y) \
            .sum().backward()
        return x.grad, y.grad
    both.same(snippet)


def test_list_from_backward_counts_as_one_gradient(both):
    both.raises(lambda T: _returning(T, lambda T, g: [g, g]).apply(
        T.ones(2, requires_grad=True), T.ones(2, requires_grad=True)).sum().backward())


# ---------------------------------------------------------------- mark_dirty [7.7]
def _add_one(T, mark=True):
    class AddOne_(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            if mark:
                ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g
    return AddOne_


def test_mark_dirty(both):
    def snippet(T):
        a = T.ones(2, requires_grad=True)
        b = a * 1
        c = _add_one(T).apply(b)
        same = c is b
        c.sum().backward()
        return same, b._version, b.grad_fn.name(), a.grad
    both.same(snippet)


def test_forgetting_mark_dirty_is_not_detected(both):
    def snippet(T):
        b = T.ones(2, requires_grad=True) * 1
        c = _add_one(T, mark=False).apply(b)
        return c is b, b._version, c
    both.same(snippet)


def test_mark_dirty_on_a_leaf_that_requires_grad(both):
    text = both.raises(lambda T: _add_one(T).apply(T.ones(2, requires_grad=True)))
    assert "has been used in an in-place operation" in text


# --------------------------------------- mark_non_differentiable, materialize [7.8, 7.9]
def test_mark_non_differentiable(both):
    def snippet(T):
        class MaxF(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                idx = x.argmax()
                doubled = x * 2
                ctx.mark_non_differentiable(idx, doubled)
                return x * 3, idx, doubled

            @staticmethod
            def backward(ctx, g, g_idx, g_doubled):
                seen.extend([g_idx, g_doubled])
                return g * 3
        seen: list = []
        x = T.tensor([3., 1., 2.], requires_grad=True)
        v, i, d = MaxF.apply(x)
        (v * T.tensor([1., 10., 100.])).sum().backward()
        return v, i, d, seen, x.grad
    both.same(snippet)


def test_set_materialize_grads(both):
    def snippet(T):
        class Two(T.autograd.Function):
            @staticmethod
            def forward(ctx, x, materialize):
                ctx.set_materialize_grads(materialize)
                return x.clone(), x.clone()

            @staticmethod
            def backward(ctx, g1, g2):
                seen.append((g1, g2))
                return (g1 if g1 is not None else 0) + (g2 if g2 is not None else 0), None
        seen: list = []
        x = T.ones(2, requires_grad=True)
        a, _ = Two.apply(x, True)
        a.sum().backward()
        a, _ = Two.apply(x, False)
        a.sum().backward()
        return seen, x.grad
    both.same(snippet)


def test_returning_a_non_differentiable_input_gives_a_detached_alias(both):
    def snippet(T):
        class NDI(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.mark_non_differentiable(x)
                return x

            @staticmethod
            def backward(ctx, g):
                return g
        x = T.ones(2, requires_grad=True)
        o = NDI.apply(x)
        return o is x, o, o._version == x._version
    both.same(snippet)


# ------------------------------------------------------ double backward [7.10, 7.11]
def test_once_differentiable(both):
    def snippet(T):
        Sq = square_once(T)
        x = T.tensor([3.], requires_grad=True)
        (g1,) = T.autograd.grad(Sq.apply(x).sum(), x, create_graph=True)
        (g2,) = T.autograd.grad((Sq.apply(x) * x).sum(), x, create_graph=True)
        err = g2.grad_fn.next_functions[1][0]
        return g1, g2, err.name(), len(err.next_functions)
    both.same(snippet)

    def twice(T):
        return snippet(T)[1].sum().backward()
    text = both.raises(twice)
    assert text == ("trying to differentiate twice a function that was marked with "
                    "@once_differentiable")


def test_backward_written_with_ops_is_twice_differentiable(both):
    def snippet(T):
        Cube = cube(T)
        x = T.tensor(2., requires_grad=True)
        (d1,) = T.autograd.grad(Cube.apply(x), x, create_graph=True)
        (d2,) = T.autograd.grad(d1, x, create_graph=True)
        (d3,) = T.autograd.grad(d2, x)
        return d1, d2, d3
    both.same(snippet)


# ------------------------------------------------------------------------- misuse [7.12]
def test_instantiating_warns_and_calling_raises(both):
    def make(T):
        class F1(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g * 2
        return F1
    (warning,) = both.warnings(lambda T: make(T)())
    assert warning[0] == "DeprecationWarning" and "should not be instantiated" in warning[1]
    both.raises(lambda T: make(T)()(T.ones(2, requires_grad=True)))
    both.same(lambda T: make(T).forward(None, T.ones(2, requires_grad=True)).grad_fn)


def test_save_for_backward_of_a_non_tensor(both):
    def snippet(T):
        class SaveBad(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x, 3)
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g
        return SaveBad.apply(T.ones(2, requires_grad=True))
    both.raises(snippet, exc=TypeError)


def test_saved_none_stays_none(both):
    def snippet(T):
        class SaveNone(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                seen.append(ctx.saved_tensors)
                ctx.save_for_backward(x, None)
                return x * 2

            @staticmethod
            def backward(ctx, g):
                seen.append(ctx.saved_tensors)
                return g * 2
        seen: list = []
        x = T.ones(2, requires_grad=True)
        SaveNone.apply(x).sum().backward()
        return seen
    both.same(snippet)


def _doubling(T, name, *methods):
    """A Function doubling its input, with ``methods`` among backward and vjp."""
    body = {"forward": staticmethod(lambda ctx, x: x * 2)}
    body.update({m: staticmethod(lambda ctx, g: g * 2) for m in methods})
    return type(name, (T.autograd.Function,), body)


def test_missing_forward_backward_and_both_backward_and_vjp(both):
    def no_forward(T):
        class NoForward(T.autograd.Function):
            @staticmethod
            def backward(ctx, g):
                return g
        NoForward.apply(T.ones(2, requires_grad=True))

    def run(T, name, *methods):
        _doubling(T, name, *methods).apply(T.ones(2, requires_grad=True)).sum().backward()
    both.raises(lambda T: run(T, "NoBackward"), exc=NotImplementedError)
    both.raises(no_forward, exc=NotImplementedError)
    both.raises(lambda T: run(T, "Both", "backward", "vjp"))


def test_vjp_instead_of_backward(both):
    def snippet(T):
        x = T.ones(2, requires_grad=True)
        _doubling(T, "V", "vjp").apply(x).sum().backward()
        return x.grad
    both.same(snippet)


def test_function_node_is_not_callable(both):
    both.raises(lambda T: _exp(T).apply(T.ones(1, requires_grad=True)).grad_fn(T.ones(1)),
                exc=TypeError)


# -------------------------------------------------------- saved tensors [7.13]
def _id(T):
    class Id(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g
    return Id


def test_saved_input_modified_in_place(both):
    def snippet(T):
        h = T.ones(2, requires_grad=True) * 1
        y = _id(T).apply(h)
        h.add_(1)
        y.sum().backward()
    both.raises(snippet, "which is output 0 of Add, is at version 1; expected version 0")


def test_saved_output_modified_in_place_names_the_function(both):
    def snippet(T):
        y = _exp(T).apply(T.ones(2, requires_grad=True))
        y.add_(1)
        y.sum().backward()
    both.raises(snippet, "which is output 0 of Exp, is at version 1; expected version 0")


def test_saved_tensors_after_backward(both):
    def snippet(T):
        y = _id(T).apply(T.ones(2, requires_grad=True) * 1)
        y.sum().backward()
        return y.grad_fn.saved_tensors
    both.raises(snippet, SECOND_TIME)

    def retained(T):
        x = T.ones(2, requires_grad=True)
        y = _id(T).apply(x * 1)
        y.sum().backward(retain_graph=True)
        return y.grad_fn.saved_tensors, y.grad_fn.needs_input_grad, y.grad_fn.to_save
    both.same(retained)


# --------------------------------------------------- outputs [7.14, E.13, 1.10]
def test_input_returned_as_is_and_non_tensor_outputs(both):
    def snippet(T):
        class Ret(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x, 5

            @staticmethod
            def backward(ctx, g, _):
                return g
        x = T.ones(2, requires_grad=True)
        a, n = Ret.apply(x)
        same = a is x
        a.sum().backward()
        plain = T.ones(2)
        p, _ = Ret.apply(plain)
        return same, a, n, x.grad, p is plain, p._base is plain, a._is_view()
    both.same(snippet)


def test_same_tensor_returned_twice_is_one_object(both):
    def snippet(T):
        class Dup(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                out = x * 2
                return out, out

            @staticmethod
            def backward(ctx, g1, g2):
                seen.append((g1, g2))
                return g1 * 2 + g2 * 2
        seen: list = []
        x = T.ones(2, requires_grad=True)
        a, b = Dup.apply(x)
        (a + b).sum().backward()
        return a is b, a.output_nr, seen, x.grad
    both.same(snippet)


def test_multiple_outputs_and_output_nr(both):
    def snippet(T):
        class SinCos(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x.sin(), x.cos()

            @staticmethod
            def backward(ctx, gs, gc):
                (x,) = ctx.saved_tensors
                return gs * x.cos() - gc * x.sin()
        x = T.tensor([0.5, 1.0], requires_grad=True)
        s, c = SinCos.apply(x)
        (s * 2 + c * 3).sum().backward()
        return s, c, s.output_nr, c.output_nr, s.grad_fn is c.grad_fn, x.grad
    both.same(snippet)


def test_tuple_nested_and_list_outputs_pass_through(both):
    def snippet(T):
        class Nest(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2, (x * 3,), [x * 4]

            @staticmethod
            def backward(ctx, g, h, k):
                return g * 2
        x = T.ones(1, requires_grad=True)
        return Nest.apply(x)
    both.same(snippet)


def test_hooks_on_a_function_node(both):
    def snippet(T):
        log = []
        y = _exp(T).apply(T.tensor([0., 1.], requires_grad=True))
        y.grad_fn.register_prehook(lambda go: log.append(("pre", go)))
        y.grad_fn.register_hook(lambda gi, go: log.append(("post", gi, go)))
        y.sum().backward()
        return log
    both.same(snippet)


def test_function_inside_no_grad_records_nothing(both):
    def snippet(T):
        with T.no_grad():
            y = _exp(T).apply(T.ones(2, requires_grad=True))
        return y
    both.same(snippet)


def test_metadata_and_function_ctx_attributes(both):
    def snippet(T):
        y = _exp(T).apply(T.ones(2, requires_grad=True))
        node = y.grad_fn
        node.metadata["k"] = 1
        return (node.metadata, node.dirty_tensors, node.non_differentiable,
                node.needs_input_grad)
    both.same(snippet)


def test_function_on_float64_and_complex(both):
    def snippet(T):
        class Sq(T.autograd.Function):
            @staticmethod
            def forward(ctx, z):
                ctx.save_for_backward(z)
                return z * z

            @staticmethod
            def backward(ctx, g):
                (z,) = ctx.saved_tensors
                return g * (2 * z).conj()
        z = T.tensor([1 + 2j], requires_grad=True)
        Sq.apply(z).backward(T.tensor([1 + 0j]))
        x = T.tensor([1., 2.], dtype=T.float64, requires_grad=True)
        Sq.apply(x).sum().backward()
        return z.grad, x.grad
    both.same(snippet)


def test_gradient_reaches_through_chains_of_functions(rng):
    Exp = _exp(pb)
    x = pb.tensor(rng.standard_normal(4) * 0.1, requires_grad=True)
    Exp.apply(Exp.apply(x) * 2).sum().backward()
    expected = np.exp(2 * np.exp(x.detach().numpy())) * 2 * np.exp(x.detach().numpy())
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-5)


@pytest.mark.parametrize("retain", [False, True])
def test_function_node_frees_its_saved_tensors(retain):
    class Id(pb.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * 1

        @staticmethod
        def backward(ctx, g):
            ctx.saved_tensors  # noqa: B018 - reading them is the point
            return g
    y = Id.apply(pb.ones(2, requires_grad=True))
    y.sum().backward(retain_graph=retain)
    if retain:
        y.sum().backward()
    else:
        with pytest.raises(RuntimeError, match=SECOND_TIME):
            y.sum().backward()
