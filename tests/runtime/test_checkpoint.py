"""Activation checkpointing (torch.utils.checkpoint, 2.13), compared with torch."""

from __future__ import annotations

import pytest

import pullback as pb


def _ckpt(T):
    return T.utils.checkpoint


def _segment(T, log):
    def f(t, scale=1.0):
        log.append("start")
        a = t.exp()
        b = (a * scale).sin()
        log.append("end")
        return b
    return f


@pytest.mark.parametrize("reentrant", [False, True])
def test_gradients_and_recomputation(both, reentrant):
    def snippet(T):
        log: list = []
        x = T.tensor([0.5, 1.0, -1.0], requires_grad=True)
        y = _ckpt(T).checkpoint(_segment(T, log), x, use_reentrant=reentrant)
        after_forward = list(log)
        (y * T.tensor([1., 2., 3.])).sum().backward()
        return y, x.grad, after_forward, log
    both.same(snippet)


def test_use_reentrant_left_out_warns_and_means_true(both):
    def snippet(T):
        x = T.tensor([0.5, 1.0], requires_grad=True)
        y = _ckpt(T).checkpoint(lambda t: t.exp(), x)
        y.sum().backward()
        return type(y.grad_fn).__name__, x.grad
    both.same(snippet)
    (warning,) = both.warnings(snippet)
    assert warning[1].startswith("torch.utils.checkpoint: the use_reentrant parameter should be "
                                 "passed explicitly.")


def test_non_reentrant_saves_placeholders_not_tensors():
    x = pb.tensor([0.5, 1.0], requires_grad=True)
    y = pb.utils.checkpoint.checkpoint(lambda t: t.exp().sin(), x, use_reentrant=False)
    node = y.grad_fn
    kept = [type(s.packed).__name__ for s in node.saved if hasattr(s, "packed")]
    assert kept == ["_Holder"]
    assert type(node.next_functions[0][0].saved_out.packed).__name__ == "_Holder"


def test_preserves_the_random_state(both):
    def snippet(T):
        T.manual_seed(0)
        drawn = []

        def f(t):
            r = T.rand(3)
            drawn.append(r)
            return t * r
        x = T.ones(3, requires_grad=True)
        y = _ckpt(T).checkpoint(f, x, use_reentrant=False)
        after = T.rand(1)
        y.sum().backward()
        return (x.grad == drawn[0]).all(), (drawn[1] == drawn[0]).all(), (T.rand(1) != after)
    both.same(snippet)


def test_autograd_grad_and_inputs(both):
    def snippet(T):
        x = T.tensor([0.5, 1.0], requires_grad=True)
        y = _ckpt(T).checkpoint(lambda t: t.exp() * t, x, use_reentrant=False)
        return T.autograd.grad(y.sum(), x)
    both.same(snippet)

    def reentrant(T):
        x = T.tensor([0.5, 1.0], requires_grad=True)
        y = _ckpt(T).checkpoint(lambda t: t.exp() * t, x, use_reentrant=True)
        return T.autograd.grad(y.sum(), x)
    assert both.raises(reentrant).startswith("When use_reentrant=True, torch.utils.checkpoint "
                                             "is incompatible with .grad()")


def test_retain_graph_recomputes_per_backward(both):
    def snippet(T):
        log: list = []
        x = T.tensor([0.5, 1.0], requires_grad=True)
        y = _ckpt(T).checkpoint(_segment(T, log), x, use_reentrant=False).sum()
        y.backward(retain_graph=True)
        y.backward()
        return x.grad, log
    both.same(snippet)


def test_keyword_arguments_and_no_grad(both):
    def snippet(T):
        log: list = []
        x = T.tensor([0.5, 1.0], requires_grad=True)
        y = _ckpt(T).checkpoint(_segment(T, log), x, scale=2.0, use_reentrant=False)
        y.sum().backward()
        with T.no_grad():
            z = _ckpt(T).checkpoint(_segment(T, log), x, use_reentrant=False)
        return x.grad, z, log
    both.same(snippet)


def test_argument_errors(both):
    ck = lambda T, **kw: _ckpt(T).checkpoint(lambda t, **k: t * 2,  # noqa: E731
                                             T.ones(2, requires_grad=True), **kw)
    both.raises(lambda T: ck(T, use_reentrant=True, scale=2), exc=ValueError)
    both.raises(lambda T: ck(T, use_reentrant=True, debug=True), exc=ValueError)
    both.raises(lambda T: ck(T, use_reentrant=False, determinism_check="strict"),
                exc=ValueError)


def test_reentrant_warns_when_no_input_requires_grad(both):
    def snippet(T):
        return _ckpt(T).checkpoint(lambda t: t * 2, T.ones(2), use_reentrant=True)
    warnings = both.warnings(snippet)
    assert ("UserWarning", "None of the inputs have requires_grad=True. Gradients will be None") \
        in warnings


def test_recomputation_that_differs_is_an_error(both):
    def snippet(T):
        state = {"n": 0}

        def f(t):
            state["n"] += 1
            return t.exp() if state["n"] == 1 else t.reshape(1, 2).exp()
        x = T.tensor([0.5, 1.0], requires_grad=True)
        _ckpt(T).checkpoint(f, x, use_reentrant=False).sum().backward()
    text = both.raises(snippet, r"^torch.utils.checkpoint: Recomputed values for the following "
                                r"tensors have different metadata than during the forward pass")
    assert "tensor at position 0:\nsaved metadata: {'shape': (2,)" in text

    def fewer(T):
        state = {"n": 0}

        def f(t):
            state["n"] += 1
            return t.exp().sin() if state["n"] == 1 else t * 2
        x = T.tensor([0.5, 1.0], requires_grad=True)
        _ckpt(T).checkpoint(f, x, use_reentrant=False, early_stop=False).sum().backward()
    both.raises(fewer, r"^torch.utils.checkpoint: A different number of tensors was saved during "
                       r"the original forward and recomputation.\nNumber of tensors saved "
                       r"during forward: 2\nNumber of tensors saved during recomputation: 0.")


def test_context_fn(both):
    def snippet(T):
        log = []

        class Ctx:
            def __init__(self, name):
                self.name = name

            def __enter__(self):
                log.append(self.name)

            def __exit__(self, *exc):
                return False
        x = T.tensor([0.5, 1.0], requires_grad=True)
        y = _ckpt(T).checkpoint(lambda t: t.exp(), x, use_reentrant=False,
                                context_fn=lambda: (Ctx("forward"), Ctx("recompute")))
        y.sum().backward()
        return log, x.grad
    both.same(snippet)


def test_checkpoint_sequential(both):
    def snippet(T):
        fns = [lambda t: t.exp(), lambda t: t.sin(), lambda t: t * 3, lambda t: t.tanh()]
        x = T.tensor([0.1, 0.2], requires_grad=True)
        y = _ckpt(T).checkpoint_sequential(fns, 2, x, use_reentrant=False)
        y.sum().backward()
        return y, x.grad
    both.same(snippet)


def test_checkpoint_inside_compile_is_traced():
    @pb.compile
    def f(t):
        return pb.utils.checkpoint.checkpoint(lambda a: a.exp().sin(), t,
                                              use_reentrant=False).sum()
    x = pb.tensor([0.5, 1.0], requires_grad=True)
    for _ in range(2):
        x.grad = None
        f(x).backward()
    assert x.grad.numpy() == pytest.approx((x.detach().exp().cos() * x.detach().exp()).numpy())


def test_segment_with_several_outputs_and_lists(both):
    def snippet(T):
        log: list = []

        def f(t):
            log.append("run")
            a, b = t.exp().split(2)
            return T.cat([a * b, b.sin()])
        x = T.tensor([0.1, 0.2, 0.3, 0.4], requires_grad=True)
        y = _ckpt(T).checkpoint(f, x, use_reentrant=False)
        y.sum().backward()
        return y, x.grad, log
    both.same(snippet)
