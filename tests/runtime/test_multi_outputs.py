"""Nodes with several outputs and the views split, unbind and chunk return, against
torch: output_nr and next_functions ([1.10]), saved indices, hooks and retain_grad per
output, zeros for the outputs no gradient reached, and torch's refusals of in-place
writes into multi-output views ([6.9]) and of reading one after its base changed."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb


def _y(T):
    x = T.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    return x, x * 1


# ----------------------------------------------------------------- the node
def test_next_functions_name_the_output_index(both):
    """[1.10]: the outputs of a split share one node; an edge names the output."""
    def snippet(T):
        x = T.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
        a, b = x.split(2)
        c = a + b
        mx = T.max(x.view(2, 2), 1)
        u = mx.values * 2
        return (a.grad_fn.name(), a.grad_fn is b.grad_fn, a.output_nr, b.output_nr,
                [nr for _, nr in c.grad_fn.next_functions], c.grad_fn.next_functions[1][0],
                u.grad_fn.next_functions, mx.indices.output_nr, mx.indices.grad_fn)
    both.same(snippet)


def test_sorts_node_has_the_values_only(both):
    def snippet(T):
        x = T.tensor([[3.0, 1.0, 2.0], [0.5, 2.5, 1.5]], requires_grad=True)
        s = x.sort(1)
        log = []
        s.values.grad_fn.register_prehook(lambda g: log.append(len(g)))
        (s.values * T.tensor([1.0, 2.0, 3.0])).sum().backward()
        return log, x.grad, s.indices.requires_grad, s.values.grad_fn.name()
    both.same(snippet)


def test_saved_indices(both):
    def snippet(T):
        x = T.tensor([[3.0, 1.0, 2.0], [0.5, 2.5, 1.5]], requires_grad=True)
        return (x.max(1).values.grad_fn._saved_indices, x.sort(0).values.grad_fn._saved_indices,
                x.topk(2).values.grad_fn._saved_indices)
    both.same(snippet)
    both.raises(lambda T: T.tensor([1.0, 0.0], requires_grad=True).sort().values.grad_fn
                ._saved_values, exc=AttributeError)


def test_missing_output_gradients_are_zeros(both):
    def snippet(T):
        x, y = _y(T)
        a, b, c = y.view(2, 2).unbind(1) + (y,)
        g1 = T.autograd.grad(b.sum(), x, retain_graph=True)
        p, q = y.split([1, 3])
        g2 = T.autograd.grad((q * q).sum(), x, create_graph=True)
        return g1, g2, T.autograd.grad(g2[0].sum(), x)
    both.same(snippet)


def test_hooks_and_retain_grad_per_output(both):
    def snippet(T):
        x, y = _y(T)
        a, b = y.chunk(2)
        seen = []
        a.register_hook(lambda g: seen.append(("a", g.tolist())))
        b.register_hook(lambda g: g * 10)
        b.retain_grad()
        (a * 2 + b * 3).sum().backward()
        return seen, b.grad, x.grad
    both.same(snippet)


def test_saved_indices_modified_in_place(both):
    def sort(T):
        x, y = _y(T)
        s = y.sort()
        s.indices.add_(0)
        s.values.sum().backward()

    def topk(T):
        x, y = _y(T)
        t = y.topk(2)
        t.values.add_(1)  # its values are not saved: fine
        t.values.sum().backward()
        return x.grad
    both.raises(sort)
    both.same(topk)


def test_return_type_repr(both):
    def snippet(T):
        x = T.tensor([3.0, 1.0, 2.0])
        return [repr(f(x)).split("(")[0].rsplit(".", 1)[-1] for f in (
            lambda t: t.sort(), lambda t: t.topk(1), lambda t: t.max(0), lambda t: t.min(0))]
    both.same(snippet)


# ----------------------------------------------------- multi-output views
INPLACE = {
    "unbind [6.9]": lambda T, y: y.unbind()[0].mul_(2),
    "split": lambda T, y: y.split(2)[1].add_(1),
    "split_with_sizes": lambda T, y: y.split([1, 3])[0].mul_(2),
    "chunk": lambda T, y: y.chunk(2)[0].zero_(),
    "one piece": lambda T, y: y.split(4)[0].mul_(2),
    "a view of a piece": lambda T, y: y.split(2)[0].view(2).mul_(2),
    "a slice of a piece": lambda T, y: y.split(2)[0][0:1].mul_(2),
    "item assignment": lambda T, y: y.unbind()[1].copy_(T.tensor(5.0)),
    "a leaf's piece": lambda T, y: y._base_leaf.split(2)[0].mul_(2),
    "a piece with a value that requires grad": lambda T, y: T.ones(4).split(2)[0].mul_(
        y[0]),
    "a piece taken under no_grad": lambda T, y: _no_grad_piece(T, y).mul_(2),
}


def _no_grad_piece(T, y):
    with T.no_grad():
        return y.split(2)[0]


@pytest.mark.parametrize("name", list(INPLACE))
def test_inplace_on_a_multi_output_view_raises(both, name):
    fn = INPLACE[name]

    def snippet(T):
        x, y = _y(T)
        y._base_leaf = x
        fn(T, y)
    both.raises(snippet)


def test_inplace_without_grad_writes_the_base(both):
    def snippet(T):
        x, y = _y(T)
        a, b = y.split(2)
        with T.no_grad():
            a.mul_(10)
        z = T.ones(4)
        p, q = z.chunk(2)
        q.add_(1)
        d = y.unbind()[3].detach()
        d.add_(100)
        (y * y).sum().backward()
        return y, z, x.grad
    both.same(snippet)


READ_AFTER = {
    "grad_fn": lambda T, a: a.grad_fn,
    "is_leaf": lambda T, a: a.is_leaf,
    "an op": lambda T, a: a * 2,
    "backward through it": lambda T, a: a.sum().backward(),
}


@pytest.mark.parametrize("how", ["the base", "a sibling under no_grad"])
@pytest.mark.parametrize("name", list(READ_AFTER))
def test_reading_a_piece_after_its_base_changed_raises(both, name, how):
    def snippet(T):
        x, y = _y(T)
        a, b = y.unbind()[:2]
        if how == "the base":
            y.mul_(2)
        else:
            with T.no_grad():
                b.add_(1)
        READ_AFTER[name](T, b if how == "the base" else a)
    both.raises(snippet, "is a view and its base or another view of its base has been modified")


def test_requires_grad_of_a_stale_piece_does_not_raise(both):
    def snippet(T):
        x, y = _y(T)
        a, b = y.split(2)
        y.mul_(2)
        return a.requires_grad, b.requires_grad, a._base is y
    both.same(snippet)


def test_tensor_split_pieces_are_plain_views(both):
    """tensor_split (and numpy's split) make slices: writable in place, CopySlices."""
    def snippet(T):
        x, y = _y(T)
        a, b = y.tensor_split(2)
        a.mul_(x[3])
        (y * y).sum().backward()
        return y, a, y.grad_fn.name(), x.grad
    both.same(snippet)


def test_compiled_write_into_a_piece_under_no_grad(torch):
    def f(m, x):
        y = x * 1
        with m.no_grad():
            a, b = y.split(2)
            b.mul_(3)
        return (y * y).sum()

    xs = np.array([1.0, 2.0, 3.0, 4.0])
    t = torch.tensor(xs, requires_grad=True)
    f(torch, t).backward()
    compiled = pb.compile(lambda x: f(pb, x))
    for _ in range(2):
        p = pb.tensor(xs, requires_grad=True)
        out = compiled(p)
        out.backward()
        assert out.item() == pytest.approx(f(torch, torch.tensor(xs)).item())
        np.testing.assert_allclose(p.grad.numpy(), t.grad.numpy())
    np.testing.assert_allclose(pb.grad(lambda x: f(pb, x))(xs), t.grad.numpy())
