"""Tensor.backward and autograd.backward (reference section 2, E.1, E.5, E.11, E.14),
each compared with torch."""

from __future__ import annotations

import pytest

import pullback as pb

SECOND_TIME = r"^Trying to backward through the graph a second time \(or directly access saved"


# ----------------------------------------------------------------- basics [2.1, 2.11, 2.12]
def test_scalar_backward_returns_none(both):
    def snippet(T):
        x = T.tensor([1., 2., 3.], requires_grad=True)
        r = (x ** 2).sum().backward()
        return r, x.grad
    both.same(snippet)


def test_broadcast_operands_reduce(both):
    def snippet(T):
        a = T.ones(3, 1, requires_grad=True)
        b = T.ones(4, requires_grad=True)
        c = T.tensor(2., requires_grad=True)
        (a * b * c).sum().backward()
        return a.grad, b.grad, c.grad
    both.same(snippet)


def test_broadcast_reduction_in_every_binary_op(both):
    def snippet(T):
        a = T.tensor([[1.], [2.]], requires_grad=True)
        b = T.tensor([3., 4., 5.], requires_grad=True)
        y = (a + b) * (a - b) / (b + 10) + (a ** b) + T.maximum(a, b)
        y.sum().backward()
        return y, a.grad, b.grad
    both.same(snippet, rtol=1e-5)


def test_fan_out_sums(both):
    def snippet(T):
        x = T.tensor(3., requires_grad=True)
        y = x * x + x
        y.backward()
        return y, x.grad
    both.same(snippet)


def test_accumulation_into_leaves_over_calls(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        (x ** 2).sum().backward()
        first = x.grad.clone()
        (x * 3).sum().backward()
        return first, x.grad
    both.same(snippet)


# --------------------------------------------------------------- implicit gradient [2.2]
def test_non_scalar_needs_gradient(both):
    both.raises(lambda T: (T.tensor([1., 2., 3.], requires_grad=True) * 2).backward())

    def snippet(T):
        x = T.tensor([1., 2., 3.], requires_grad=True)
        (x * 2).backward(T.tensor([1., 0.1, 0.01]))
        z = T.ones(1, requires_grad=True)
        (z * 2).backward()
        w = T.ones(1, 1, requires_grad=True)
        (w * 3).backward()
        return x.grad, z.grad, w.grad
    both.same(snippet)


def test_complex_output_needs_gradient(both):
    both.raises(lambda T: (T.tensor(1 + 1j, requires_grad=True) * 2).backward())


# ------------------------------------------------------------- gradient validation [2.3]
@pytest.mark.parametrize("shape", [(2,), (1, 3), (3, 1), ()])
def test_gradient_shape_mismatch(both, shape):
    both.raises(lambda T: (T.tensor([1., 2., 3.], requires_grad=True) * 2).backward(
        T.ones(shape)))


def test_gradient_shape_mismatch_scalar_output(both):
    both.raises(lambda T: (T.tensor([1., 2.], requires_grad=True) * 2).sum().backward(
        T.ones(1)))


def test_gradient_dtype_cast_and_expanded_gradient(both):
    def snippet(T):
        x = T.tensor([1., 2., 3.], requires_grad=True)
        (x * 2).backward(T.ones(3, dtype=T.float64))
        g1 = x.grad
        x.grad = None
        (x * 2).backward(T.tensor(1.).expand(3))
        g2 = x.grad
        x.grad = None
        (x * 2).sum().backward(T.tensor(5.))
        return g1, g2, x.grad
    both.same(snippet)


def test_gradient_must_be_tensor(both):
    both.raises(lambda T: (T.tensor([1., 2.], requires_grad=True) * 2).backward([1., 1.]),
                exc=TypeError, phrase="gradient")


# --------------------------------------------------------------------- no graph [2.4]
def test_backward_without_graph(both):
    both.raises(lambda T: T.ones(3).sum().backward())
    both.raises(lambda T: T.ones(3, requires_grad=True).sum().detach().backward())
    both.raises(lambda T: T.tensor([1.5, 2.5], requires_grad=True).long().sum().backward())

    def snippet(T):
        x = T.ones(3, requires_grad=True)
        x.sum().backward()
        x2 = T.ones((), requires_grad=True)
        x2.backward()
        x3 = T.ones(2, requires_grad=True)
        x3.backward(T.tensor([2., 3.]))
        return x.grad, x2.grad, x3.grad
    both.same(snippet)


# -------------------------------------------------------- freeing the graph [2.5-2.7, 3.6]
def test_second_backward_errors(both):
    def mul_twice(T):
        x = T.tensor([1., 2.], requires_grad=True)
        y = (x * x).sum()
        y.backward()
        y.backward()
    both.raises(mul_twice, SECOND_TIME)

    def retained(T):
        x = T.tensor([1., 2.], requires_grad=True)
        y = x.exp().sum()
        y.backward(retain_graph=True)
        y.backward()
        return x.grad
    both.same(retained)

    def third(T):
        x = T.tensor([1., 2.], requires_grad=True)
        y = x.exp().sum()
        y.backward(retain_graph=True)
        y.backward()
        y.backward()
    both.raises(third, SECOND_TIME)


def test_second_backward_ok_when_nothing_saved(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        y = (x + 1).sum()
        y.backward()
        y.backward()
        z = (x.view(2, 1).expand(2, 3) - 1).sum() + x.clone()[0]
        z.backward()
        z.backward()
        return x.grad
    both.same(snippet)

    def scalar_mul(T):  # mul saves its (wrapped scalar) other operand
        x = T.tensor([1., 2.], requires_grad=True)
        z = (x * 2).sum()
        z.backward()
        z.backward()
    both.raises(scalar_mul, SECOND_TIME)


def test_freed_error_only_when_freed_value_needed(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        e = x.exp()
        (e + 1).sum().backward()   # frees exp's saved output
        # a second graph over e: the add node saves nothing, exp is freed and needed
        (e * 1).sum().backward()
    both.raises(snippet, SECOND_TIME)


def test_freed_saved_tensor_access(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        y = x * x
        before = y.grad_fn._saved_self
        y.sum().backward()
        return before
    both.same(snippet)

    def after(T):
        x = T.tensor([1., 2.], requires_grad=True)
        y = x * x
        y.sum().backward()
        return y.grad_fn._saved_self
    both.raises(after, SECOND_TIME)


def test_saved_value_attributes(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        w = T.tensor([3., 4.])
        y = x * w
        e = x.exp()
        z = x * 2.5
        return (y.grad_fn._saved_self, y.grad_fn._saved_other, e.grad_fn._saved_result,
                z.grad_fn._saved_other, z.grad_fn._saved_self)
    both.same(snippet)


def test_partial_graph_freeing_by_second_root(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        h = x.exp()
        a = (h * 2).sum()
        b = (h * 3).sum()
        a.backward()   # frees exp (shared) and a's mul
        b.backward()
    both.raises(snippet, SECOND_TIME)


# --------------------------------------------------------------------- inputs= [2.9, 2.16]
def test_inputs_restricts_accumulation(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        w = T.tensor([3., 4.], requires_grad=True)
        y = (x * w).sum()
        y.backward(inputs=[x], retain_graph=True)
        first = (x.grad.clone(), w.grad)
        y.backward(inputs=w)
        second = (x.grad.clone(), w.grad.clone())
        h = x * 2
        (h * h).sum().backward(inputs=[h])
        third = (h.grad, x.grad, h.retains_grad)
        (x * 2).sum().backward(inputs=[x, w])
        return first, second, third, x.grad, w.grad
    both.same(snippet)


def test_inputs_errors(both):
    both.raises(lambda T: (T.ones(2, requires_grad=True) * 2).sum().backward(inputs=[]))
    both.raises(lambda T: (T.ones(2, requires_grad=True) * 2).sum().backward(
        inputs=[T.ones(2)]))


def test_inputs_non_leaf_accumulates(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        h = x * 2
        out = (h * h).sum()
        out.backward(inputs=[h], retain_graph=True)
        out.backward(inputs=[h, x])
        return h.grad, x.grad
    both.same(snippet)


def test_grad_variables_deprecated(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        T.autograd.backward((x * 2).sum(), grad_variables=None)
        T.autograd.backward((x * 2).sum(), grad_variables=T.tensor(3.))
        return x.grad
    both.same(snippet)
    assert both.warnings(snippet) == [
        ("FutureWarning", "`grad_variables` is deprecated. Use `grad_tensors` instead.")]


# ------------------------------------------------------------- several roots [2.10]
def test_autograd_backward_several_roots(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        T.autograd.backward([x * 2, (x ** 2).sum()], [T.ones(2), None])
        first = x.grad.clone()
        x.grad = None
        T.autograd.backward((x * 3).sum())
        second = x.grad.clone()
        T.autograd.backward([(x * 2).sum(), (x * 3).sum()])
        T.autograd.backward((x * 2, x * 5), grad_tensors=(T.ones(2), T.tensor([1., 2.])))
        return first, second, x.grad
    both.same(snippet)


def test_autograd_backward_errors(both):
    both.raises(lambda T: T.autograd.backward(
        [T.ones(2, requires_grad=True) * 2, T.ones(2, requires_grad=True) * 3], [T.ones(2)]))
    both.raises(lambda T: T.autograd.backward([T.ones(2, requires_grad=True) * 2], [None]))

    def second_root_no_grad(T):
        x = T.ones(2, requires_grad=True)
        T.autograd.backward([(x * 2).sum(), T.ones(2).sum()])
    both.raises(second_root_no_grad)


def test_several_roots_shared_subgraph_one_pass(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        h = x.exp()
        seen = []
        h.register_hook(lambda g: seen.append(g.clone()))
        T.autograd.backward([(h * 2).sum(), (h * 3).sum()])
        return seen, x.grad
    both.same(snippet)


# ----------------------------------------------------------------- no_grad [2.13]
def test_backward_inside_no_grad(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        y = (x * x).sum()
        with T.no_grad():
            y.backward()
        return x.grad
    both.same(snippet)


# ----------------------------------------------------------------- mixed dtypes [E.5]
def test_mixed_dtype_grads_keep_input_dtype(both):
    def snippet(T):
        a = T.tensor([1., 2.], dtype=T.float32, requires_grad=True)
        b = T.tensor([3., 4.], dtype=T.float64, requires_grad=True)
        c = T.tensor([0.5, 0.25], dtype=T.float16, requires_grad=True)
        y = (a * b).sum() + (a * c).sum()
        y.backward()
        return y, a.grad, b.grad, c.grad
    both.same(snippet, rtol=1e-3)


def test_python_scalar_in_float32_graph(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        y = (x * 0.1 + 1e-3) / 3.0
        y.sum().backward()
        return y, x.grad
    both.same(snippet)


# ---------------------------------------------------------- accumulation object [E.11]
def test_accumulation_in_place_then_out_of_place_under_create_graph(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        y = x * 2
        y.backward(T.ones(2), retain_graph=True)
        g_ref = x.grad
        y.backward(T.ones(2), retain_graph=True)
        same1 = g_ref is x.grad
        y.backward(T.ones(2), create_graph=True)
        return same1, g_ref is x.grad, g_ref, x.grad
    both.same(snippet)


CYCLE_WARNING = (
    "Using backward() with create_graph=True will create a reference cycle between the "
    "parameter and its gradient which can cause a memory leak. We recommend using "
    "autograd.grad when creating the graph to avoid this. If you have to use this function, "
    "make sure to reset the .grad fields of your parameters to None after use to break the "
    "cycle and avoid the leak.")


def test_create_graph_warning_once_per_process(both):
    """torch warns once per process (its text is in the reference, [2.14]); within this
    test session torch may already have warned, so torch is held to 'at most once'."""
    import importlib
    import warnings

    pb_messages = importlib.import_module("pullback.autograd.messages")

    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        (x ** 2).sum().backward(create_graph=True)
        (x ** 2).sum().backward(create_graph=True)
        T.autograd.grad((x ** 2).sum(), x, create_graph=True)
        return x.grad

    both.same(snippet)
    pb_messages.WARNED_ONCE.discard(CYCLE_WARNING)
    for lib, most in ((both.torch, 1), (pb, 1)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            snippet(lib)
        texts = [str(w.message) for w in caught]
        assert len(texts) <= most
        if lib is pb:
            assert texts == [CYCLE_WARNING]
            assert caught[0].category is UserWarning


# ---------------------------------------------------------------- calling nodes [E.14]
def test_calling_a_node(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        y = x ** 2
        return y.grad_fn(T.ones(2))
    both.same(snippet)
    both.raises(lambda T: (T.tensor([1., 2.], requires_grad=True) ** 2).grad_fn(),
                exc=TypeError)


def test_calling_a_two_input_node(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        w = T.tensor([3., 4.], requires_grad=True)
        y = x * w
        return y.grad_fn(T.ones(2))
    both.same(snippet)


# --------------------------------------------------------- graphs from many op kinds
def test_views_and_reductions_backward(both):
    def snippet(T):
        x = T.tensor([[1., 2., 3.], [4., 5., 6.]], requires_grad=True)
        y = (x.t().reshape(6)[1:4] * T.tensor([1., 2., 3.])).sum()
        z = x[1].max() + x.mean(0).sum() + x.sum(1, keepdim=True).sum() + x[:, 0].min()
        (y + z).backward()
        return x.grad
    both.same(snippet)


def test_leaf_used_as_root(both):
    def snippet(T):
        x = T.tensor(2., requires_grad=True)
        x.backward()
        x.backward(T.tensor(3.))
        return x.grad
    both.same(snippet)


def test_only_nodes_that_ran_are_freed(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        w = T.tensor([3., 4.], requires_grad=True)
        y = (x.exp() + w.exp()).sum()
        y.backward(inputs=[x])
        y.backward(inputs=[w])  # w's exp did not run the first time: still has its values
        return x.grad, w.grad
    both.same(snippet)

    def again(T):
        x = T.tensor([1., 2.], requires_grad=True)
        w = T.tensor([3., 4.], requires_grad=True)
        y = (x.exp() + w.exp()).sum()
        y.backward(inputs=[x])
        y.backward(inputs=[x])
    both.raises(again, SECOND_TIME)


def test_failed_backward_frees_what_ran(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        a = x.exp()
        c = a.sin() * 2
        a.add_(0)
        try:
            c.sum().backward()
        except RuntimeError:
            pass
        c.sum().backward()
    both.raises(snippet, SECOND_TIME)
