"""Grad modes: no_grad, enable_grad, set_grad_enabled, inference_mode, thread-locality
(reference section 4), compared with torch."""

from __future__ import annotations

import threading

INFERENCE_SAVE = r"^Inference tensors cannot be saved for backward\."


def test_no_grad_context(both):
    def snippet(T):
        x = T.ones(2, requires_grad=True)
        states = [T.is_grad_enabled()]
        with T.no_grad():
            states.append(T.is_grad_enabled())
            y = x * 2
            n = T.ones(2, requires_grad=True)
            m = n * 2
            v = x[0]
        states.append(T.is_grad_enabled())
        return states, y, n, m, v, v._is_view()
    both.same(snippet)


def test_no_grad_decorators_and_generators(both):
    def snippet(T):
        x = T.ones(2, requires_grad=True)

        @T.no_grad()
        def f(t):
            return t * 2, T.is_grad_enabled()

        @T.no_grad
        def g(t):
            return t * 2

        @T.no_grad()
        def gen():
            yield T.is_grad_enabled()
            yield T.is_grad_enabled()

        it = gen()
        first = next(it)
        between = T.is_grad_enabled()
        rest = list(it)
        return (f(x)[0].requires_grad, f(x)[1], g(x).requires_grad, first, between, rest,
                T.is_grad_enabled(), f.__name__)
    both.same(snippet)


def test_generator_sees_callers_changes_not_leaking(both):
    def snippet(T):
        @T.enable_grad()
        def gen():
            for _ in range(2):
                yield T.is_grad_enabled()

        with T.no_grad():
            got = list(gen())
            inside = T.is_grad_enabled()
        return got, inside, T.is_grad_enabled()
    both.same(snippet)


def test_enable_grad(both):
    def snippet(T):
        x = T.ones(2, requires_grad=True)
        with T.no_grad():
            with T.enable_grad():
                y = x * 2
            z = x * 2

        @T.enable_grad()
        def h(t):
            return t * 2

        @T.enable_grad
        def k(t):
            return t * 2

        with T.no_grad():
            hk = (h(x).requires_grad, k(x).requires_grad, T.is_grad_enabled())
        return y.requires_grad, z.requires_grad, hk
    both.same(snippet)


def test_set_grad_enabled_three_ways(both):
    def snippet(T):
        x = T.ones(2, requires_grad=True)
        out = []
        with T.set_grad_enabled(False):
            out.append((x * 2).requires_grad)
        out.append(T.is_grad_enabled())
        with T.set_grad_enabled(True):
            out.append((x * 2).requires_grad)
        T.set_grad_enabled(False)
        out.append((T.is_grad_enabled(), (x * 2).requires_grad))
        T.set_grad_enabled(True)
        out.append(T.is_grad_enabled())

        @T.set_grad_enabled(False)
        def k(t):
            return t * 2

        out.append((k(x).requires_grad, T.is_grad_enabled()))
        with T.no_grad():
            with T.set_grad_enabled(True):
                out.append((x * 2).requires_grad)
            out.append(T.is_grad_enabled())
        return out
    both.same(snippet)
    both.raises(lambda T: T.set_grad_enabled(), exc=TypeError)


def test_set_grad_enabled_plain_call_inside_context_is_undone_on_exit(both):
    def snippet(T):
        with T.no_grad():
            T.set_grad_enabled(True)
            inside = T.is_grad_enabled()
        return inside, T.is_grad_enabled()
    both.same(snippet)


def test_exception_restores_mode(both):
    def snippet(T):
        out = []
        for ctx in (T.no_grad, T.enable_grad, lambda: T.set_grad_enabled(False),
                    T.inference_mode):
            try:
                with ctx():
                    raise ValueError("boom")
            except ValueError:
                pass
            out.append(T.is_grad_enabled())

        @T.no_grad()
        def fails():
            raise KeyError("x")

        try:
            fails()
        except KeyError:
            pass
        out.append(T.is_grad_enabled())
        return out, T.is_inference_mode_enabled()
    both.same(snippet)


def test_context_objects_are_reusable(both):
    def snippet(T):
        ng = T.no_grad()
        out = []
        for _ in range(2):
            with ng:
                out.append(T.is_grad_enabled())
            out.append(T.is_grad_enabled())
        with ng:
            with ng:
                out.append(T.is_grad_enabled())
            out.append(T.is_grad_enabled())
        out.append(T.is_grad_enabled())
        return out
    both.same(snippet)


def test_inference_mode(both):
    def snippet(T):
        x = T.ones(2, requires_grad=True)
        with T.inference_mode():
            y = x * 2
            modes = (T.is_grad_enabled(), T.is_inference_mode_enabled())
        clone_grad = (y.clone() * x).requires_grad
        with T.inference_mode(mode=False):
            off = (T.is_inference_mode_enabled(), (x * 2).requires_grad)

        @T.inference_mode()
        def inf(t):
            return t * 2

        with T.inference_mode():
            w = T.ones(2, requires_grad=True)
            ww = (w.requires_grad, (w * 2).requires_grad)
        return (modes, y, y.is_inference(), x.is_inference(), (y + 1).is_inference(),
                y.clone().is_inference(), clone_grad, off, inf(x).is_inference(), ww,
                T.is_inference_mode_enabled())
    both.same(snippet)


def test_inference_tensor_restrictions(both):
    def make(T):
        x = T.ones(2, requires_grad=True)
        with T.inference_mode():
            y = x * 2
        return x, y

    def saved(T):
        x, y = make(T)
        return (y * x).sum().backward()
    both.raises(saved, INFERENCE_SAVE)
    both.raises(lambda T: make(T)[1].add_(1), r"^Inplace update to inference tensor outside")
    both.raises(lambda T: make(T)[1].requires_grad_(),
                r"^Setting requires_grad=True on inference tensor outside InferenceMode")

    def inside(T):
        with T.inference_mode():
            return T.ones(2, requires_grad=True) * 2
    both.same(inside)

    def inplace_inside(T):
        x, y = make(T)
        with T.inference_mode():
            y.add_(1)
        return y
    both.same(inplace_inside)


def test_inference_mode_decorator_without_parentheses(both):
    def snippet(T):
        @T.inference_mode
        def f(t):
            return t * 2, T.is_inference_mode_enabled()

        r, mode = f(T.ones(2, requires_grad=True))
        return r.is_inference(), mode, T.is_inference_mode_enabled()
    both.same(snippet)


def test_thread_local(both):
    def snippet(T):
        x = T.ones(2, requires_grad=True)
        res = []

        def worker():
            res.append((T.is_grad_enabled(), (x * 2).requires_grad))

        with T.no_grad():
            t = threading.Thread(target=worker)
            t.start()
            t.join()
            main = T.is_grad_enabled()
        T.set_grad_enabled(False)
        t = threading.Thread(target=worker)
        t.start()
        t.join()
        T.set_grad_enabled(True)
        return main, res
    both.same(snippet)


def test_thread_mode_does_not_leak_back(both):
    def snippet(T):
        def worker():
            T.set_grad_enabled(False)

        t = threading.Thread(target=worker)
        t.start()
        t.join()
        return T.is_grad_enabled()
    both.same(snippet)


def test_classes(both):
    def snippet(T):
        return (T.autograd.no_grad is T.no_grad, T.autograd.enable_grad is T.enable_grad,
                T.autograd.set_grad_enabled is T.set_grad_enabled,
                T.autograd.inference_mode is T.inference_mode,
                T.autograd.grad_mode.no_grad is T.no_grad,
                isinstance(T.no_grad, type), T.no_grad.__name__, T.set_grad_enabled.__name__)
    both.same(snippet)


def test_modes_do_not_affect_factories_requires_grad(both):
    def snippet(T):
        with T.no_grad():
            a = T.zeros(2, requires_grad=True)
            b = T.tensor([1.], requires_grad=True)
            c = T.ones(2).requires_grad_()
        return a, b, c
    both.same(snippet)


def test_backward_inside_no_grad_and_create_graph(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        y = (x ** 3).sum()
        with T.no_grad():
            (g,) = T.autograd.grad(y, x, create_graph=True)
            inside = T.is_grad_enabled()
        return g, inside
    both.same(snippet)


def test_generator_send_and_throw_keep_mode(both):
    def snippet(T):
        @T.no_grad()
        def gen():
            x = yield T.is_grad_enabled()
            out = [x]
            try:
                yield T.is_grad_enabled()
            except KeyError:
                out.append(("caught", T.is_grad_enabled()))
                yield T.is_grad_enabled()
            return out
        it = gen()
        a = next(it)
        b = it.send(5)
        c = it.throw(KeyError("k"))
        try:
            next(it)
        except StopIteration as e:
            d = e.value
        return a, b, c, d, T.is_grad_enabled()
    both.same(snippet)


def test_decorators_on_methods_and_shared_instances(both):
    def snippet(T):
        class M:
            @T.no_grad()
            def f(self, x):
                return x * 2

        ng = T.no_grad()

        @ng
        def f():
            return T.is_grad_enabled()

        @ng
        def g():
            return f()

        @T.set_grad_enabled(False)
        def gen():
            yield T.is_grad_enabled()

        return (M().f(T.ones(2, requires_grad=True)).requires_grad, f(), g(), list(gen()),
                T.is_grad_enabled())
    both.same(snippet)


def test_inference_mode_nesting(both):
    def snippet(T):
        x = T.ones(2, requires_grad=True)
        with T.inference_mode():
            with T.inference_mode(False):
                a = (T.is_inference_mode_enabled(), T.is_grad_enabled(), (x * 2).requires_grad)
            with T.no_grad():
                b = T.is_inference_mode_enabled()
            with T.enable_grad():
                y = x * 2
                c = (T.is_grad_enabled(), T.is_inference_mode_enabled(), y.requires_grad)
                x.add_(0)  # in-place on a leaf: allowed in inference mode
        return a, b, c, T.is_grad_enabled(), T.is_inference_mode_enabled(), x._version
    both.same(snippet)


def test_inference_mode_is_thread_local(both):
    def snippet(T):
        res = []

        def worker():
            res.append((T.is_inference_mode_enabled(), T.is_grad_enabled()))

        with T.inference_mode():
            t = threading.Thread(target=worker)
            t.start()
            t.join()
        return res
    both.same(snippet)


def test_inference_tensors_outside_the_mode(both):
    def snippet(T):
        x = T.ones(2, requires_grad=True)
        with T.inference_mode():
            y = T.ones(2)
        v = y[0]
        return ((x + y).requires_grad, (y * 1).is_inference(), v.is_inference(),
                y.detach().is_inference(), y.clone().requires_grad)
    both.same(snippet)

    def saved(T):
        with T.inference_mode():
            y = T.ones(2)
        return T.ones(2, requires_grad=True) * y
    both.raises(saved, INFERENCE_SAVE)

    def inplace_no_grad(T):
        x = T.ones(2, requires_grad=True)
        with T.inference_mode():
            y = x * 2
        with T.no_grad():
            y.add_(1)
    both.raises(inplace_no_grad, r"^Inplace update to inference tensor outside InferenceMode")
