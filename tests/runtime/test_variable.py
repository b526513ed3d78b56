"""The legacy Variable (reference section 12, E.7), compared with torch."""

from __future__ import annotations


def test_variable_is_a_leaf_alias(both):
    def snippet(T):
        t = T.tensor([1., 2.])
        v = T.autograd.Variable(t)
        v2 = T.autograd.Variable(t, requires_grad=True)
        (v2 * 2).sum().backward()
        t.add_(1)  # shared memory and version counter
        return (type(v).__name__, v, v is t, v2, v2.grad, t.requires_grad,
                v._version, isinstance(t, T.autograd.Variable),
                isinstance(v2, T.autograd.Variable), isinstance(3, T.autograd.Variable),
                issubclass(T.Tensor, T.autograd.Variable))
    both.same(snippet)


def test_variable_of_a_non_leaf(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        y = x * 2
        v = T.autograd.Variable(y)
        return v, v.grad_fn is None, v is y
    both.same(snippet)


def test_variable_arguments(both):
    def snippet(T):
        t = T.tensor([1., 2.])
        return (T.autograd.Variable(), T.autograd.Variable(None), T.autograd.Variable(t, True),
                T.autograd.Variable(t, requires_grad=1), T.autograd.Variable(t, volatile=False))
    both.same(snippet)


def test_volatile_warns_and_is_ignored(both):
    def snippet(T):
        return T.autograd.Variable(T.tensor([1., 2.]), volatile=True)
    both.same(snippet)
    (warning,) = both.warnings(snippet)
    assert warning == ("UserWarning", "volatile was removed and now has no effect. Use "
                                      "`with torch.no_grad():` instead.")


def test_variable_errors(both):
    t = lambda T: T.ones(2)  # noqa: E731
    both.raises(lambda T: T.autograd.Variable([1., 2.]), exc=TypeError)
    both.raises(lambda T: T.autograd.Variable(t(T), foo=1), exc=TypeError)
    both.raises(lambda T: T.autograd.Variable(t(T), 1, 2, 3, 4, 5, 6), exc=TypeError)
    both.raises(lambda T: T.autograd.Variable(t(T), True, requires_grad=True), exc=TypeError)
    both.raises(lambda T: T.autograd.Variable(t(T), requires_grad=1.5), exc=TypeError)
    both.raises(lambda T: T.autograd.Variable(t(T), True, True), exc=ValueError)
    both.raises(lambda T: T.autograd.Variable(T.tensor([1, 2]), requires_grad=True))
    both.raises(lambda T: T.autograd.Variable(t(T), _grad_fn=3), exc=TypeError)
