"""Tensor hooks, Node pre/post hooks, post-accumulate hooks and the engine's order
(reference section 5 hooks, E.1, E.2), compared with torch."""

from __future__ import annotations

import pytest


def test_hook_replaces_or_keeps_grad(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        y = x * 3
        seen = []
        h1 = y.register_hook(lambda g: seen.append(g.clone()))
        y.register_hook(lambda g: g * 10)
        y.sum().backward()
        return seen, x.grad, type(h1).__name__, callable(h1.remove)
    both.same(snippet)


def test_leaf_hook_runs_before_accumulation(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        x.register_hook(lambda g: g * 100)
        (x * 2).sum().backward()
        return x.grad
    both.same(snippet)


def test_hooks_chain_in_order(both):
    def snippet(T):
        x = T.tensor([1.], requires_grad=True)
        y = x * 1
        log = []
        y.register_hook(lambda g: log.append(("A", g.item())) or g + 1)
        y.register_hook(lambda g: log.append(("B", g.item())) or g * 2)
        y.backward(T.tensor([1.]))
        return log, x.grad
    both.same(snippet)


def test_handle_remove_twice(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        h = x.register_hook(lambda g: g * 0)
        h.remove()
        (x * 2).sum().backward()
        h.remove()
        y = x * 1
        hy = y.register_hook(lambda g: g * 5)
        keep = y.register_hook(lambda g: g + 1)
        hy.remove()
        y.sum().backward()
        return x.grad, keep is not None
    both.same(snippet)


def test_handle_as_context_manager(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        y = x * 1
        with y.register_hook(lambda g: g * 5):
            y.sum().backward(retain_graph=True)
        first = x.grad.clone()
        y.sum().backward()
        return first, x.grad
    both.same(snippet)


def test_hook_on_tensor_without_grad(both):
    both.raises(lambda T: T.ones(2).register_hook(lambda g: g))
    both.raises(lambda T: (T.ones(2) * 2).register_hook(lambda g: g))
    both.raises(lambda T: T.ones(2).register_post_accumulate_grad_hook(lambda t: None))


def test_hook_may_not_change_size_or_type(both):
    def size(T):
        x = T.tensor([1., 2.], requires_grad=True)
        y = x * 2
        y.register_hook(lambda g: T.ones(3))
        y.sum().backward()
    both.raises(size)

    def dtype(T):
        x = T.tensor([1., 2.], requires_grad=True)
        y = x * 2

        def bad_hook(g):
            return g.double()
        y.register_hook(bad_hook)
        y.sum().backward()
    both.raises(dtype)

    def leaf_size(T):
        x = T.tensor([1., 2.], requires_grad=True)
        x.register_hook(lambda g: g.sum())
        (x * 2).sum().backward()
    both.raises(leaf_size)


def test_hooks_fire_for_autograd_grad(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        y = x * 2
        seen = []
        y.register_hook(lambda g: seen.append(g.clone()) or g * 2)
        return T.autograd.grad((y * y).sum(), x), seen
    both.same(snippet)


def test_retain_grad_sees_all_hooks(both):
    def snippet(T):
        x = T.tensor([1.], requires_grad=True)
        y = x * 1
        y.register_hook(lambda g: g * 2)
        y.retain_grad()
        y.register_hook(lambda g: g * 3)
        y.backward(T.tensor([1.]))
        return y.grad, x.grad
    both.same(snippet)


def test_node_hooks(both):
    def snippet(T):
        a = T.tensor([0., 0., 0.], requires_grad=True)
        b = a.clone()
        log = []
        h = b.grad_fn.register_hook(lambda gI, gO: log.append((gI, gO)))
        b.sum().backward(retain_graph=True)
        h.remove()
        a.grad = None
        h = b.grad_fn.register_prehook(lambda gO: (gO[0] * 2,))
        b.sum().backward(retain_graph=True)
        pre = a.grad
        h.remove()
        a.grad = None
        h = b.grad_fn.register_hook(lambda gI, gO: (gI[0] * 5,))
        b.sum().backward(retain_graph=True)
        post = a.grad
        h.remove()
        a.grad = None
        b.sum().backward()
        return log, pre, post, a.grad
    both.same(snippet)


def test_node_post_hook_with_unneeded_input(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        c = T.tensor([3., 4.])
        y = x * c
        log = []
        y.grad_fn.register_hook(lambda gI, gO: log.append((len(gI), gI[1], gO)))
        y.sum().backward()
        return log, x.grad
    both.same(snippet)


def test_node_prehook_multi_output(both):
    def snippet(T):
        x = T.tensor([[1., 5.], [3., 2.]], requires_grad=True)
        m = x.max(1)
        log = []
        m.values.grad_fn.register_prehook(lambda gO: log.append(len(gO)))
        (m.values * 2).sum().backward()
        return log, x.grad
    both.same(snippet)


def test_accumulate_grad_node_hooks(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        y = x * 2
        acc = y.grad_fn.next_functions[0][0]
        log = []
        acc.register_prehook(lambda gO: log.append(("pre", gO)) or (gO[0] * 3,))
        acc.register_hook(lambda gI, gO: log.append(("post", gI, gO)))
        y.sum().backward()
        return log, x.grad
    both.same(snippet)


def test_ordering(both):
    def snippet(T):
        x = T.tensor([1.], requires_grad=True)
        y = x * 2
        z = y * 3
        log = []
        z.grad_fn.register_prehook(lambda gO: log.append("z.grad_fn prehook"))
        z.grad_fn.register_hook(lambda gI, gO: log.append("z.grad_fn posthook"))
        z.register_hook(lambda g: log.append("z tensor hook"))
        y.grad_fn.register_prehook(lambda gO: log.append("y.grad_fn prehook"))
        y.register_hook(lambda g: log.append("y tensor hook"))
        x.register_hook(lambda g: log.append("x tensor hook (leaf)"))
        x.register_post_accumulate_grad_hook(
            lambda t: log.append(f"x post-accumulate (grad={t.grad.item()})"))
        z.backward()
        return log
    both.same(snippet)


def test_post_accumulate_grad_hook(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        seen = []
        h = x.register_post_accumulate_grad_hook(lambda p: seen.append(p.grad.clone()))
        (x * 3).sum().backward()
        (x * 1).sum().backward()
        h.remove()
        (x * 1).sum().backward()
        return seen, x.grad
    both.same(snippet)
    both.raises(lambda T: (T.ones(2, requires_grad=True) * 2)
                .register_post_accumulate_grad_hook(lambda p: None))


def test_post_accumulate_not_run_by_autograd_grad(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        seen = []
        x.register_post_accumulate_grad_hook(lambda p: seen.append(1))
        g = T.autograd.grad((x * 3).sum(), x)
        return g, seen
    both.same(snippet)


def test_hook_fires_once_with_summed_grad(both):
    def snippet(T):
        x = T.tensor(1., requires_grad=True)
        h = x * 1
        log = []
        h.register_hook(lambda g: log.append(("h", g.item())))
        x.register_hook(lambda g: log.append(("x", g.item())))
        y = h * 2 + h * 3
        y.backward()
        return log, x.grad
    both.same(snippet)


def test_topological_order(both):
    def snippet(T):
        x = T.tensor(1., requires_grad=True)
        log = []
        a = x * 2
        a.register_hook(lambda g: log.append("a"))
        b = a * 3
        b.register_hook(lambda g: log.append("b"))
        c = a * 4
        c.register_hook(lambda g: log.append("c"))
        d = b + c
        d.register_hook(lambda g: log.append("d"))
        d.backward()
        return log, x.grad
    both.same(snippet)


def test_order_among_ready_nodes_is_latest_first(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        log = []
        parts = []
        for i in range(5):
            p = x * (i + 1)
            p.register_hook(lambda g, i=i: log.append(i))
            parts.append(p)
        s = parts[2] + parts[0] + parts[4] + parts[1] + parts[3]
        s.sum().backward()
        return log, x.grad
    both.same(snippet)


def test_diamond_with_unequal_depths(both):
    def snippet(T):
        x = T.tensor(2., requires_grad=True)
        log = []
        a = x.exp()
        a.register_hook(lambda g: log.append("a"))
        b = a * a
        b.register_hook(lambda g: log.append("b"))
        c = b.sin() * a
        c.register_hook(lambda g: log.append("c"))
        d = c + a
        d.backward()
        return log, x.grad
    both.same(snippet, rtol=1e-4)


def test_hook_under_create_graph_sees_differentiable_grad(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        y = x ** 2
        seen = []
        y.register_hook(lambda g: seen.append((g.requires_grad, g.grad_fn is None)))
        (g,) = T.autograd.grad((y ** 2).sum(), x, create_graph=True)
        (h,) = T.autograd.grad(g.sum(), x)
        return seen, g, h
    both.same(snippet)


def test_hook_returning_new_grad_under_create_graph(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        y = x ** 2
        y.register_hook(lambda g: g * x)
        (g,) = T.autograd.grad(y.sum(), x, create_graph=True)
        (h,) = T.autograd.grad(g.sum(), x)
        return g, h
    both.same(snippet)


def test_hook_registered_during_backward_on_leaf(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        y = x * 2
        log = []

        def add_more(g):
            log.append("first")
            x.register_hook(lambda g: log.append("late") or g * 10)
        y.register_hook(add_more)
        y.sum().backward()
        return log, x.grad
    both.same(snippet)


def test_hook_on_view_output(both):
    def snippet(T):
        x = T.tensor([1., 2., 3.], requires_grad=True)
        v = x[1:]
        v.register_hook(lambda g: g * 10)
        (v * 1).sum().backward()
        return x.grad
    both.same(snippet)


def test_hook_removed_during_backward_still_fires_this_pass(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        y = x * 2
        log = []
        handles = []

        def first(g):
            log.append("first")
            handles[0].remove()
        handles.append(None)
        y.register_hook(first)
        handles[0] = y.register_hook(lambda g: log.append("second"))
        y.sum().backward()
        return log
    both.same(snippet)


def test_hooks_stay_with_old_value_retain_grad_moves_on_in_place(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        y = x * 2
        log = []
        y.register_hook(lambda g: log.append(("before", g.clone())))
        y.retain_grad()
        y.mul_(3)
        y.register_hook(lambda g: log.append(("after", g.clone())))
        (y * y).sum().backward()
        return log, y.grad, x.grad, y.retains_grad
    both.same(snippet)


def test_retained_view_after_base_modified(both):
    def snippet(T):
        x = T.tensor([1., 2., 3.], requires_grad=True)
        b = x * 1
        v = b[:2]
        v.retain_grad()
        b.mul_(2)
        (v * 1).sum().backward()
        return v.grad, x.grad, v.grad_fn.name()
    both.same(snippet)


def _mul_node(T):
    a = T.tensor([1., 2.], requires_grad=True)
    return a * 2


@pytest.mark.parametrize("register", [
    lambda T, b: b.grad_fn.register_prehook(lambda gO: (gO[0] * 2, gO[0])),
    lambda T, b: b.grad_fn.register_hook(lambda gI, gO: (gI[0],)),
    lambda T, b: b.grad_fn.register_prehook(lambda gO: (T.ones(3),)),
    lambda T, b: b.grad_fn.register_hook(lambda gI, gO: (T.ones(3), None)),
    lambda T, b: b.grad_fn.register_prehook(lambda gO: (gO[0].double(),)),
])
def test_node_hook_results_are_checked(both, register):
    def snippet(T):
        b = _mul_node(T)
        register(T, b)
        b.sum().backward()
    both.raises(snippet)


@pytest.mark.parametrize("register", [
    lambda T, b: b.grad_fn.register_prehook(lambda gO: (5,)),
    lambda T, b: b.grad_fn.register_hook(lambda gI, gO: (5, None)),
    lambda T, b: b.grad_fn.register_prehook(lambda gO: 5),
    lambda T, b: b.grad_fn.register_prehook(lambda gO: [gO[0]]),
    lambda T, b: b.register_hook(lambda g: 5),
    lambda T, b: b.register_hook(lambda g: [g]),
])
def test_hook_returning_non_tensor(both, register):
    def snippet(T):
        b = _mul_node(T)
        register(T, b)
        b.sum().backward()
    both.raises(snippet, exc=TypeError)


def test_node_hooks_returning_none_entries(both):
    def snippet(T):
        a = T.tensor([1., 2.], requires_grad=True)
        w = T.tensor([3., 4.], requires_grad=True)
        b = a * w
        b.grad_fn.register_hook(lambda gI, gO: (None, gI[1] * 10))
        b.sum().backward()
        return a.grad, w.grad
    both.same(snippet)


def test_tensor_hook_before_post_accumulate_on_every_backward(both):
    """Issue 23: on a second backward (the cached backward of a graph seen before) a
    leaf's tensor hook still fires before its post-accumulate-grad hook, in whichever
    order they were registered, and one registered between backwards joins in order."""
    def snippet(T):
        log = []
        w = T.ones(3, dtype=T.float64, requires_grad=True)
        w.register_post_accumulate_grad_hook(lambda t: log.append(("post", t.grad.sum().item())))
        (w * w).sum().backward()
        w.register_hook(lambda g: log.append("tensor"))
        for k in (2.0, 3.0):
            (w * k).sum().backward()
        return log
    both.same(snippet)
