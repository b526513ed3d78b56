"""Custom autograd Functions inside pb.compile, pb.grad and pb.vjp: one opaque IR step
whose adjoint calls the user's backward; compared with the eager Function (itself
compared with torch in tests/runtime/test_function.py)."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb


class Func(pb.autograd.Function):
    """The seed's 3*x + 2*y + exp(x) + exp(y)."""

    calls: list = []

    @staticmethod
    def forward(ctx, x, y):
        Func.calls.append("forward")
        expx, expy = pb.exp(x), pb.exp(y)
        ctx.save_for_backward(expx, expy)
        return 3 * x + 2 * y + expx + expy

    @staticmethod
    def backward(ctx, g):
        Func.calls.append("backward")
        expx, expy = ctx.saved_tensors
        return g * (3 + expx), g * (2 + expy)


class SinCos(pb.autograd.Function):
    @staticmethod
    def forward(ctx, x, scale):
        ctx.scale = scale
        ctx.save_for_backward(x)
        idx = x.argmax()
        ctx.mark_non_differentiable(idx)
        return x.sin() * scale, x.cos(), idx

    @staticmethod
    def backward(ctx, gs, gc, gi):
        (x,) = ctx.saved_tensors
        return gs * x.cos() * ctx.scale - gc * x.sin(), None


class Cube(pb.autograd.Function):
    @staticmethod
    def forward(x):
        return x ** 3

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * x * x * g


def _leaves(*values, dtype=np.float32):
    return [pb.tensor(np.array(v, dtype=dtype), requires_grad=True) for v in values]


def _eager_and_compiled(f, *values):
    """(value, grads) of ``f`` run eagerly and through pb.compile (called twice)."""
    results = []
    compiled = pb.compile(f)
    for fn in (f, compiled, compiled):
        xs = _leaves(*values)
        out = fn(*xs)
        out.backward()
        results.append((out.detach().numpy(), [x.grad.numpy() for x in xs]))
    return results, compiled


def test_compiled_function_matches_eager_and_calls_forward_and_backward_each_time(
        monkeypatch):
    monkeypatch.setattr(pb.config, "cache_dir", None)  # (it counts the trace's calls too)

    def f(x, y):
        z = Func.apply(x, y)
        return (z * z).sum()
    Func.calls.clear()
    results, compiled = _eager_and_compiled(f, [1., 2.], [3., 4.])
    for value, grads in results[1:]:
        np.testing.assert_allclose(value, results[0][0], rtol=1e-6)
        for g, e in zip(grads, results[0][1]):
            np.testing.assert_allclose(g, e, rtol=1e-6)
    # eager: forward, backward; tracing: forward (traced) + backward (adjoint, at trace
    # time); generated code: forward and backward on each of the two compiled calls
    assert Func.calls == ["forward", "backward"] + ["forward", "backward"] + \
        ["forward", "backward"] * 2
    assert compiled.cache.info.hits == 1


def test_generated_source_names_the_function():
    def f(x, y):
        z = Func.apply(x, y)
        return (z * z).sum()
    x, y = _leaves([1., 2.], [3., 4.])
    ins = pb.compiler.inspect(pb.compile(f), x, y)
    forward, backward = str(ins.forward), str(ins.backward)
    assert "z = Func.apply(x, y)" in forward
    assert "= Func_apply(x, y)  # Func.forward (a custom autograd.Function)" in forward
    assert "z = custom_function.outputs[0]" in forward
    assert "# grad of: z = Func.apply(x, y)" in backward
    assert "Func_apply.backward(custom_function, g_z)  # Func.backward" in backward
    assert "custom_function[runner=Func] x y" in str(ins.ir)


def test_multiple_outputs_non_tensor_argument_and_non_differentiable_output():
    def f(x):
        s, c, i = SinCos.apply(x, 2.0)
        return (s * 3 + c * 5).sum() + i * 0
    results, _ = _eager_and_compiled(f, [0.5, 1.5, 1.0])
    for value, grads in results[1:]:
        np.testing.assert_allclose(value, results[0][0], rtol=1e-6)
        np.testing.assert_allclose(grads[0], results[0][1][0], rtol=1e-6)


def test_only_some_outputs_used():
    def f(x):
        s, c, i = SinCos.apply(x, 1.0)
        return c.sum()
    results, _ = _eager_and_compiled(f, [0.5, 1.5])
    np.testing.assert_allclose(results[1][1][0], results[0][1][0], rtol=1e-6)
    np.testing.assert_allclose(results[1][1][0], -np.sin([0.5, 1.5]), rtol=1e-6)


def test_setup_context_style_and_backward_broadcasting_are_fitted():
    class Bcast(pb.autograd.Function):
        @staticmethod
        def forward(ctx, x, b):
            return x + b

        @staticmethod
        def backward(ctx, g):
            return g, g  # b was (1,): the broadcast gradient is summed back, as eager

    def f(x, b):
        return (Cube.apply(x) * Bcast.apply(x, b)).sum()
    results, _ = _eager_and_compiled(f, [1., 2.], [0.5])
    for value, grads in results[1:]:
        np.testing.assert_allclose(value, results[0][0], rtol=1e-6)
        for g, e in zip(grads, results[0][1]):
            assert g.shape == e.shape
            np.testing.assert_allclose(g, e, rtol=1e-6)


def test_pb_grad_and_value_and_grad_through_a_function():
    def loss(x, y):
        return (Func.apply(x, y) ** 2).sum()
    x, y = np.array([1., 2.]), np.array([3., 4.])
    gx, gy = pb.grad(loss, argnums=(0, 1))(x, y)
    xs = _leaves([1., 2.], [3., 4.], dtype=np.float64)
    loss(*xs).backward()
    np.testing.assert_allclose(gx, xs[0].grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(gy, xs[1].grad.numpy(), rtol=1e-12)
    value, g = pb.value_and_grad(lambda a: Cube.apply(a).sum())(np.array([1., 2.]))
    assert float(value) == 9.0
    np.testing.assert_allclose(g, [3., 12.])


def test_twice_differentiable_through_a_compiled_function():
    f = pb.compile(lambda a: Cube.apply(a).sum())
    x = pb.tensor([2.], requires_grad=True)
    (d1,) = pb.autograd.grad(f(x), x, create_graph=True)
    (d2,) = pb.autograd.grad(d1.sum(), x)
    assert d1.tolist() == [12.0] and d2.tolist() == [12.0]
    assert pb.grad(pb.grad(lambda a: Cube.apply(a).sum()))(np.array([2.]))[0] == 12.0


def test_vjp_of_a_function():
    out, pullback = pb.vjp(lambda a: Cube.apply(a), np.array([1., 2.]))
    (g,) = pullback(np.array([1., 1.]))
    np.testing.assert_allclose(out, [1., 8.])
    np.testing.assert_allclose(g, [3., 12.])


def test_function_returning_an_input_as_is():
    class Ident(pb.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 2

    def f(x):
        return (Ident.apply(x) * 3).sum()
    results, _ = _eager_and_compiled(f, [1., 2.])
    assert results[1][1][0].tolist() == results[0][1][0].tolist() == [6., 6.]


def test_backward_checks_run_in_generated_code():
    class Bad(pb.autograd.Function):
        shape = (2,)

        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return pb.ones(*Bad.shape)

    f = pb.compile(lambda a: Bad.apply(a).sum())
    f(pb.ones(2, requires_grad=True)).backward()
    Bad.shape = (5,)  # the generated backward calls Bad.backward again: its check runs
    with pytest.raises(RuntimeError, match=r"^Function BadBackward returned an invalid "
                                           r"gradient at index 0 - got \[5\]"):
        f(pb.ones(2, requires_grad=True)).backward()


def test_mark_dirty_cannot_be_compiled():
    class AddOne_(pb.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    f = pb.compile(lambda a: AddOne_.apply(a * 1).sum())
    with pytest.raises(RuntimeError, match="mark_dirty"):
        f(pb.ones(2, requires_grad=True))


def test_compiled_without_grad_still_calls_forward():
    f = pb.compile(lambda a: Cube.apply(a) + 1)
    with pb.no_grad():
        out = f(pb.tensor([1., 2.], requires_grad=True))
    assert out.tolist() == [2., 9.] and out.grad_fn is None


class SortF(pb.autograd.Function):
    """Sort with a non-differentiable index output; backward puts each gradient back
    at the position it came from (torch's [7.8], with a gather instead of index_add_)."""

    @staticmethod
    def forward(ctx, x):
        vals, idx = x.sort()
        ctx.mark_non_differentiable(idx)
        ctx.save_for_backward(idx)
        return vals, idx

    @staticmethod
    def backward(ctx, g_vals, g_idx):
        (idx,) = ctx.saved_tensors
        inverse = idx.sort()[1]  # where each original element went
        return g_vals[inverse]


def test_function_with_an_index_output_among_ops_with_several_outputs():
    def f(x):
        v, i = SortF.apply(x)
        a, b = v.split(2)
        return (pb.cat([a * 10, b]) * pb.arange(1., 5.)).sum() + i.sum() * 0
    results, _ = _eager_and_compiled(f, [3., 1., 2., 5.])
    for value, grads in results:
        np.testing.assert_allclose(value, results[0][0], rtol=1e-6)
        np.testing.assert_allclose(grads[0], [3., 10., 20., 4.], rtol=1e-6)
