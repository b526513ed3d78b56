"""In-place ops, version counters, views and detach (reference sections 5.1-5.4 and 6),
compared with torch."""

from __future__ import annotations

import pytest

MODIFIED = (r"^one of the variables needed for gradient computation has been modified by an "
            r"inplace operation: ")
VERSION_1_0 = r"is at version 1; expected version 0 instead\. Hint: "


# ------------------------------------------------------------------ version counter [6.1]
def test_version_counter(both):
    def snippet(T):
        x = T.ones(3)
        out = [x._version]
        x.add_(1)
        out.append(x._version)
        x[0] = 5.
        out.append(x._version)
        x.mul_(2).sub_(1)
        out.append(x._version)
        y = x + 1
        out.append((x._version, y._version))
        v = x[1:]
        v.zero_()
        out.append((x._version, v._version))
        x.copy_(T.zeros(3))
        out.append(x._version)
        x += 1
        x *= 2
        x -= 1
        x /= 2
        out.append(x._version)
        x.fill_(3.)
        x.clamp_(0, 1)
        x.pow_(2)
        x.exp_()
        out.append(x._version)
        return out, x
    both.same(snippet)


def test_views_and_detach_share_the_counter(both):
    def snippet(T):
        x = T.tensor([1., 2., 3.], requires_grad=True)
        y = x * 2
        d = y.detach()
        first = (d.requires_grad, d.is_leaf, d.grad_fn, y._version, d._version)
        d[0] = 100.
        dx = x.detach()
        v = y.view(3, 1)
        v.mul_(1)
        return first, y, y._version, d._version, v._version, dx._version, x._version
    both.same(snippet)


def test_detach_shares_storage(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        d = x.detach()
        d.add_(1)
        return x, d, x._version
    both.same(snippet)


# --------------------------------------------------------------------- detach [5.2-5.4]
def test_modifying_detached_alias_breaks_backward(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        y = x.exp()
        y.detach().zero_()
        y.sum().backward()
    both.raises(snippet, MODIFIED + r".*output 0 of Exp.*" + VERSION_1_0)


def test_detach_in_place(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        y = x * 2
        r = y.detach_()
        return r is y, y, y._version
    both.same(snippet)
    both.raises(lambda T: (T.tensor([1., 2.], requires_grad=True) * 2)[:1].detach_())


def test_detach_in_place_on_leaf(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        x.detach_()
        return x
    both.same(snippet)


# ----------------------------------------------------------- saved-value check [6.2-6.4]
@pytest.mark.parametrize("make, name", [
    (lambda T, x: x.exp(), "Exp"),
    (lambda T, x: x.sigmoid(), "Sigmoid"),
    (lambda T, x: x.tanh(), "Tanh"),
    (lambda T, x: x.sqrt(), "Sqrt"),
])
def test_saved_output_modified(both, make, name):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        y = make(T, x)
        y.add_(1)
        y.sum().backward()
    both.raises(snippet, MODIFIED + r"\[torch\.FloatTensor \[2\]\], which is output 0 of "
                + name + ", " + VERSION_1_0)


def test_saved_input_modified_names_current_grad_fn(both):
    def snippet(T):
        c = T.tensor([1., 2.], requires_grad=True)
        h = c * 2
        p = h * h
        h.add_(1)
        p.sum().backward()
    both.raises(snippet, None)


def test_saved_leaf_modified_under_no_grad(both):
    def snippet(T):
        w = T.tensor([1., 2.], requires_grad=True)
        y = (w * w).sum()
        with T.no_grad():
            w.mul_(2)
        y.backward()
    both.raises(snippet, None)


def test_saved_plain_operand_modified(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        c = T.tensor([3., 4.])
        y = x * c
        c.add_(1)
        y.sum().backward()
    both.raises(snippet, None)


def test_saved_float64_2d_operand_message(both):
    def snippet(T):
        x = T.ones(2, 3, dtype=T.float64, requires_grad=True)
        c = T.ones(2, 3, dtype=T.float64)
        y = x * c
        c.mul_(2)
        c.mul_(2)
        y.sum().backward()
    both.raises(snippet, None)


def test_modification_only_checked_when_needed(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        y = x * 2
        y.add_(1)
        first = (y.grad_fn.name(), y._version)
        y.sum().backward()
        z = T.tensor([1., 2.], requires_grad=True)
        q = z + 0
        q.exp_()
        q.sum().backward()
        a = T.tensor([1., 2.], requires_grad=True)
        b = a * 3
        s = b + T.ones(2)
        b.mul_(2)       # add saved nothing: still fine
        s.sum().backward()
        return first, x.grad, z.grad, a.grad
    both.same(snippet)


def test_modification_after_backward_with_retain(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        y = x.exp()
        s = y.sum()
        s.backward(retain_graph=True)
        y.mul_(2)
        s.backward()
    both.raises(snippet, MODIFIED)


def test_pow_saves_its_result_for_either_input(both):
    """x ** c keeps its result (for c's rule) even when only x needs grad."""
    def snippet(T):
        x = T.tensor([0.5], requires_grad=True)
        p = (x * x + 0.25).pow(T.tensor([1.75]))
        saved = p.grad_fn._saved_result
        p.sub_(1)
        p.sum().backward()
        return saved
    both.raises(snippet, None)


def test_max_over_a_dim_saves_its_indices_not_its_input(both):
    def snippet(T):
        x = T.tensor([[0.9, 1.6], [0.8, 2.0]], requires_grad=True)
        v = x * 1
        m = v.max(dim=0)
        n = T.min(v, 1, keepdim=True)
        saved = m.values.grad_fn._saved_indices
        v -= 1
        (m.values.sum() + 2 * n.values.sum()).backward()
        return saved, x.grad
    both.same(snippet)


def test_modified_saved_value_not_needed_for_requested_grad(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        c = T.tensor([3., 4.])
        y = x * c      # saves c only (x's grad needs c)
        x2 = x.detach()
        x2.add_(0)     # bumps x's version: x itself was not saved
        y.sum().backward()
        return x.grad
    both.same(snippet)


# ------------------------------------------------------------- leaf refusals [6.5, 6.6]
@pytest.mark.parametrize("op", [
    lambda x: x.add_(1), lambda x: x.zero_(), lambda x: x.mul_(2), lambda x: x.exp_(),
    lambda x: x.copy_(x.detach() * 2), lambda x: x.fill_(1.), lambda x: x.clamp_(0, 1),
    lambda x: x.__iadd__(1), lambda x: x.__setitem__(slice(None), 0.),
    lambda x: x.__setitem__(Ellipsis, 0.),
])
def test_in_place_on_leaf_refused(both, op):
    both.raises(lambda T: op(T.tensor([1., 2.], requires_grad=True)),
                r"^a leaf Variable that requires grad is being used in an in-place operation\.$")


@pytest.mark.parametrize("op", [
    lambda x: x.__setitem__(0, 5.), lambda x: x[0].mul_(2), lambda x: x.view(2).add_(1),
    lambda x: x[:1].zero_(), lambda x: x.__setitem__(slice(1, None), 0.),
])
def test_in_place_on_view_of_leaf_refused(both, op):
    both.raises(lambda T: op(T.tensor([1., 2.], requires_grad=True)),
                r"^a view of a leaf Variable that requires grad is being used in an in-place "
                r"operation\.$")


def test_in_place_on_leaf_refused_leaves_data_untouched(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        try:
            x.add_(1)
        except RuntimeError:
            pass
        return x, x._version
    both.same(snippet)


def test_in_place_on_leaf_under_no_grad(both):
    def snippet(T):
        w = T.tensor([1., 2.], requires_grad=True)
        (w * w).sum().backward()
        with T.no_grad():
            w -= 0.1 * w.grad
            w.grad.zero_()
            w[0] = w[0] * 1
        first = (w, w.is_leaf, w.requires_grad, w.grad_fn, w._version)
        (w * w).sum().backward()
        return first, w.grad
    both.same(snippet)


# ------------------------------------------------------- in-place on non-leaves [6.4, 6.7]
def test_in_place_with_requiring_operand_makes_non_leaf(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        a = T.zeros(2)
        a.add_(x)
        first = (a.requires_grad, a.is_leaf, a.grad_fn.name())
        a.sum().backward()
        b = T.ones(2)
        b.mul_(x)
        b.mul_(x)
        b.sum().backward()
        return first, x.grad, b
    both.same(snippet)


def test_in_place_chain_gradients(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        y = x * 1
        y.mul_(x)
        y.add_(x)
        y.div_(x + 1)
        y.sub_(1)
        y.exp_()
        y.sum().backward()
        return y, x.grad
    both.same(snippet, rtol=1e-5)


def test_in_place_on_non_leaf_grad_fn_names(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        names = []
        y = x * 1
        for op in (lambda t: t.add_(1), lambda t: t.mul_(2), lambda t: t.sub_(1),
                   lambda t: t.div_(2), lambda t: t.exp_(), lambda t: t.neg_(),
                   lambda t: t.abs_(), lambda t: t.sqrt_(), lambda t: t.tanh_(),
                   lambda t: t.sigmoid_(), lambda t: t.relu_(), lambda t: t.pow_(2),
                   lambda t: t.clamp_(0, 1), lambda t: t.zero_(), lambda t: t.fill_(2.),
                   lambda t: t.copy_(x)):
            op(y)
            names.append(y.grad_fn.name())
        return names
    both.same(snippet)


def test_in_place_overwriting_a_saved_output_is_caught(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        y = x * 1
        y.exp_()       # saves its output (y, version 1)
        y.mul_(2)      # mul by a scalar saves only the scalar, but bumps y to version 2
        y.sum().backward()
    both.raises(snippet, MODIFIED + r".*which is output 0 of Exp, is at version 2; "
                                    r"expected version 1 instead")


def test_in_place_ops_that_save_nothing_chain_freely(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        y = x * 1
        y.add_(1)
        y.sub_(x)
        y.neg_()
        y.copy_(y * 3)
        y.add_(x)
        y.sum().backward()
        return y, x.grad
    both.same(snippet)


def test_in_place_returns_self(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        y = x * 1
        return y.add_(1) is y, y.mul_(2) is y, y.zero_() is y
    both.same(snippet)


def test_iadd_rebinds_to_same_object(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        y = x * 1
        before = y
        y += x
        y *= 2
        y.sum().backward()
        return y is before, y.grad_fn.name(), x.grad
    both.same(snippet)


def test_copy_gradients(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        w = T.tensor(3., requires_grad=True)
        y = x * 1
        y.copy_(w.expand(2) * 2)
        y.sum().backward()
        return y, x.grad, w.grad
    both.same(snippet)


def test_in_place_dtype_errors(both):
    both.raises(lambda T: T.ones(2, dtype=T.int64).add_(T.ones(2, dtype=T.float64)),
                r"^result type Double can't be cast to the desired output type Long$")
    both.raises(lambda T: T.ones(2).add_(T.ones(2, dtype=T.complex64)),
                r"^result type ComplexFloat can't be cast to the desired output type Float$")
    both.raises(lambda T: T.ones(2, dtype=T.bool).add_(T.ones(2, dtype=T.int64)),
                r"^result type Long can't be cast to the desired output type Bool$")

    def allowed(T):
        a = T.ones(2)
        a.add_(T.ones(2, dtype=T.float64))
        b = T.ones(2, dtype=T.int32)
        b.add_(T.ones(2, dtype=T.int64))
        return a, b
    both.same(allowed)


def test_in_place_broadcast_error(both):
    both.raises(lambda T: (T.ones(2, requires_grad=True) * 1).add_(T.ones(3, 2)))


# ------------------------------------------------------------- operands of in-place ops
def test_operand_that_is_the_target_is_saved_before_the_write(both):
    """y *= y: mul saves y as its operand, at the version the write then bumps."""
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        y = x + 0
        y *= y
        y.sum().backward()
    both.raises(snippet, MODIFIED + r".*output 0 of Mul.*" + VERSION_1_0)


def test_operand_read_by_no_rule_may_be_the_target(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        y = x + 0
        y += y
        y.sum().backward()
        return y, x.grad
    both.same(snippet)


def test_write_through_a_view_of_a_target_without_grad(both):
    """y[0].mul_(x) where only x requires grad: the old view's gradient is not asked for."""
    def snippet(T):
        x = T.tensor([2., 3.], requires_grad=True)
        y = T.ones(3, 2) + 0
        y[0].mul_(x)
        (y * T.arange(6.).reshape(3, 2)).sum().backward()
        return y, x.grad
    both.same(snippet)


OVERLAP = (r"^unsupported operation: some elements of the input tensor and the written-to "
           r"tensor refer to a single memory location\. Please clone\(\) the tensor before "
           r"performing the operation\.$")


@pytest.mark.parametrize("write", [
    lambda y: y.add_(y[0]), lambda y: y.mul_(y.t()), lambda y: y.copy_(y.t()),
    lambda y: y.view(4)[1:].add_(y.view(4)[:3]), lambda y: y.sub_(y.detach()[:1]),
    lambda y: y.__setitem__([0, 1], y), lambda y: y.__setitem__([0, 1], y[0])])
def test_operand_overlapping_the_target_is_refused(both, write):
    def snippet(T):
        with T.no_grad():
            write(T.arange(4.).reshape(2, 2) * 1)
    both.raises(snippet, OVERLAP)


@pytest.mark.parametrize("write", [
    lambda y: y.mul_(y), lambda y: y.copy_(y.detach()), lambda y: y[0].add_(y[1]),
    lambda y: y[0].add_(y[:, 0]), lambda y: y.__setitem__(0, y[:, 0]),
    lambda y: y.mul_(y[:1].expand(2, 2))])
def test_operand_that_is_the_target_or_disjoint_or_strided_passes(both, write):
    """Exactly the target's elements, other elements, or a strided operand (torch does
    not tell the overlap of a non-dense one) are fine."""
    def snippet(T):
        with T.no_grad():
            y = T.arange(4.).reshape(2, 2) * 1
            write(y)
            return y
    both.same(snippet)


def test_writing_an_expanded_tensor_is_refused(both):
    def snippet(T):
        with T.no_grad():
            T.ones(1, 2).expand(3, 2).exp_()
    both.raises(snippet, r"^unsupported operation: more than one element of the written-to "
                         r"tensor refers to a single memory location\.")
