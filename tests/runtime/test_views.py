"""Writes through views and setitem (CopySlices), views whose base changed, views made
under no_grad (reference 6.8-6.10) and which reshapes are views, compared with torch."""

from __future__ import annotations

import pytest

MODIFIED = (r"^one of the variables needed for gradient computation has been modified by an "
            r"inplace operation: ")
VERSION_1_0 = r"is at version 1; expected version 0 instead\. Hint: "


# ------------------------------------------------------------------- views [6.8-6.10]
def test_in_place_on_view_of_non_leaf(both):
    def snippet(T):
        x = T.tensor([1., 2., 3.], requires_grad=True)
        y = x * 1
        v = y[:2]
        first = (v._is_view(), v._base is y)
        v.mul_(10)
        names = (y.grad_fn.name(), type(y.grad_fn).__name__, v.grad_fn.name())
        y.sum().backward()
        return first, names, y, v, x.grad
    both.same(snippet)


def test_setitem_masks_gradient(both):
    def snippet(T):
        x = T.tensor([1., 2., 3.], requires_grad=True)
        y = x * 1
        y[0] = 0.
        names = y.grad_fn.name()
        y.sum().backward()
        return names, y, x.grad
    both.same(snippet)


def test_setitem_with_tensor_value(both):
    def snippet(T):
        x = T.tensor([[1., 2., 3.], [4., 5., 6.]], requires_grad=True)
        w = T.tensor([10., 20.], requires_grad=True)
        y = x * 2
        y[:, 1] = w * w
        y[1, 2] = w[0]
        (y * T.tensor([[1., 2., 3.], [4., 5., 6.]])).sum().backward()
        return y, x.grad, w.grad
    both.same(snippet)


def test_setitem_advanced_index(both):
    def snippet(T):
        x = T.tensor([1., 2., 3., 4.], requires_grad=True)
        w = T.tensor([7., 8.], requires_grad=True)
        y = x * 1
        y[[0, 2]] = w
        m = y > 7.5
        y[m] = 0.
        (y * T.tensor([1., 2., 3., 4.])).sum().backward()
        return y, x.grad, w.grad, y.grad_fn.name()
    both.same(snippet)


def test_write_through_nested_views(both):
    def snippet(T):
        x = T.tensor([[1., 2., 3.], [4., 5., 6.]], requires_grad=True)
        y = x * 1
        v = y.t()[1:]          # a view of a view
        v.mul_(T.tensor([[2., 3.], [4., 5.]]))
        y.exp_()
        (y * y).sum().backward()
        return y, x.grad, v._base is y, v._version, y._version
    both.same(snippet, rtol=1e-5)


def test_view_of_view_grad_fn_after_base_write(both):
    def snippet(T):
        x = T.tensor([1., 2., 3., 4.], requires_grad=True)
        y = x * 1
        v = y.view(2, 2)
        w = v[0]
        y.mul_(2)
        w2 = w * 1
        w2.sum().backward()
        return w, x.grad
    both.same(snippet)


def test_view_read_after_base_modified(both):
    def snippet(T):
        x = T.tensor([1., 2., 3.], requires_grad=True)
        y = x * 1
        v = y[1:]
        y.mul_(x)
        out = (v * v).sum()
        out.backward()
        return v, v.grad_fn.name(), x.grad
    both.same(snippet)


def test_view_created_in_no_grad_modified_in_grad_mode(both):
    def leaf(T):
        x = T.tensor([1., 2.], requires_grad=True)
        with T.no_grad():
            v = x[:1]
        v.mul_(2)
    both.raises(leaf, r"^A view was created in no_grad mode and is being modified inplace "
                      r"with grad mode enabled\.")

    def non_leaf(T):
        x = T.tensor([1., 2.], requires_grad=True)
        y = x * 1
        with T.no_grad():
            vy = y[:1]
        vy.mul_(2)
    both.raises(non_leaf, r"^A view was created in no_grad mode")

    def allowed(T):
        x = T.tensor([1., 2.], requires_grad=True)
        with T.no_grad():
            v = x[:1]
            v.mul_(2)
        p = T.ones(2)
        with T.no_grad():
            pv = p[:1]
        pv.mul_(3)
        return x, p, pv
    both.same(allowed)

    def stale_grad_fn(T):
        x = T.tensor([1., 2.], requires_grad=True)
        with T.no_grad():
            v = x[:1]
            x.mul_(2)
        return v.grad_fn
    both.raises(stale_grad_fn, r"^A view was created in no_grad mode and its base or another "
                               r"view of its base has been modified inplace")


def test_view_of_plain_tensor_after_base_comes_to_require_grad(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        p = T.zeros(3)
        pv = p[1:]
        p.add_(x.sum())
        first = (pv.requires_grad, pv.is_leaf, pv.grad_fn.name())
        (pv * 2).sum().backward()
        return first, x.grad
    both.same(snippet)


def test_no_grad_view_of_leaf_is_a_requiring_leaf(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        with T.no_grad():
            v = x[:1]
        z = v * 2
        z.sum().backward()
        return v, z, x.grad, v.grad
    both.same(snippet)


def test_view_of_plain_tensor_written_with_requiring_value(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        p = T.zeros(3)
        p[1:] = x * 2
        first = (p.requires_grad, p.is_leaf, p.grad_fn.name())
        (p * T.tensor([1., 2., 3.])).sum().backward()
        return first, p, x.grad
    both.same(snippet)


def test_reading_saved_tensor_modified_through_view(both):
    def snippet(T):
        x = T.tensor([1., 2., 3.], requires_grad=True)
        y = x.exp()
        y[0] = 0.
        y.sum().backward()
    both.raises(snippet, MODIFIED + r".*" + VERSION_1_0)


def test_base_of_an_expanded_view_written(both):
    """The expanded view's gradient adds up over the broadcast dims (into its base's
    history after the write)."""
    def snippet(T):
        x = T.tensor([[-0.5, 0.25]], requires_grad=True)
        v = x * 1
        e = v.expand(3, 2)
        v.mul_(3)
        (e * T.arange(6.).reshape(3, 2)).sum().backward()
        return e, x.grad
    both.same(snippet)


# ------------------------------------------------------------------ view compatibility
@pytest.mark.parametrize("shape", [(2, 2, 4), (4, 2, 2), (16,), (2, 8)])
def test_view_where_the_strides_allow_one(both, shape):
    """torch's rule: a non-contiguous tensor has a view of a shape that splits only
    within its contiguous chunks (x.t() of 4x4 has (2, 2, 4), not (16,))."""
    def snippet(T):
        x = T.arange(16.).reshape(4, 4).requires_grad_()
        b = x * 1
        v = b.t().view(*shape)
        b.mul_(2)  # a view sees the write
        (v * T.arange(16.).reshape(shape)).sum().backward()
        return v, x.grad
    if shape in ((16,), (2, 8)):
        both.raises(snippet, r"^view size is not compatible with input tensor's size and "
                             r"stride")
    else:
        both.same(snippet)


@pytest.mark.parametrize("make", [
    lambda b: b.reshape(2, 8), lambda b: b.t().reshape(2, 2, 4), lambda b: b.t().reshape(16),
    lambda b: b[:, ::2].reshape(8), lambda b: b[:, 1:3].reshape(2, 2, 2),
    lambda b: b.t().unsqueeze(0).flatten(0, 1), lambda b: b.t().flatten()])
def test_reshape_is_a_view_where_the_strides_allow(both, make):
    """reshape: a view of a contiguous tensor (ViewBackward0), an alias of one whose
    strides allow it (ReshapeAliasBackward0), else a copy (UnsafeViewBackward0)."""
    def snippet(T):
        x = T.arange(16.).reshape(4, 4).requires_grad_()
        b = x * 1
        r = make(b)
        name = r.grad_fn.name()
        b.add_(1)
        r.sum().backward()
        return name, r, r._base is b, x.grad
    both.same(snippet)


@pytest.mark.parametrize("make", [
    lambda T, p: p.sum(1), lambda T, p: p.mean(0), lambda T, p: p.max(2).values,
    lambda T, p: T.softmax(p, 1), lambda T, p: p.log_softmax(0),
    lambda T, p: p.contiguous()[:, [0, 1]]])
def test_results_torch_makes_contiguous_have_views(both, make):
    """torch makes reductions, softmax and the indexing of a contiguous tensor
    contiguous whatever the input's strides (numpy keeps their order), so their
    flatten is a view that sees a later write."""
    def snippet(T):
        r = make(T, T.arange(24.).reshape(2, 3, 4).permute(2, 0, 1))
        flat = r.flatten()
        r.mul_(2)
        return flat._base is r, flat
    both.same(snippet)


@pytest.mark.parametrize("value", [
    lambda T: T.ones(2), lambda T: T.tensor(1.0), lambda T: T.ones(2, dtype=T.int64)])
def test_setitem_by_advanced_index_wants_the_dtype(both, value):
    """index_put_ refuses a tensor value of another dtype (a Python number is cast)."""
    def snippet(T):
        y = T.zeros(3, dtype=T.float64)
        y[[0, 2]] = 2.5
        y[[0, 1]] = value(T)
    both.raises(snippet, r"^Index put requires the source and destination dtypes match, got "
                         r"Double for the destination and (Float|Long) for the source\.$")


@pytest.mark.parametrize("read", [None, lambda v: v.grad_fn, lambda v: v.is_leaf,
                                  lambda v: v * 2])
def test_in_place_on_a_view_its_base_made_require_grad(both, read):
    """A view taken before its base came to require grad (by an in-place op) gets its
    grad_fn when something reads it; an in-place op on it before that is torch's leaf
    error."""
    def snippet(T):
        x = T.tensor(0.5, requires_grad=True)
        p = T.zeros(2, 4) + 1
        v = p[:, 2:3]
        p[0, :1].mul_(x)
        if read is not None:
            read(v)
        v.neg_()
        return v, p
    if read is None:
        both.raises(snippet, r"^a leaf Variable that requires grad is being used in an "
                             r"in-place operation\.$")
    else:
        both.same(snippet)
