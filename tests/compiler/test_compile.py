"""pb.compile: the compiled region behaves like any other node of the graph."""

import re
import warnings

import numpy as np
import pytest

import pullback as pb


def _xw():
    rng = np.random.default_rng(0)
    x = pb.tensor(rng.standard_normal((4, 3)).astype(np.float32), requires_grad=True)
    w = pb.tensor(rng.standard_normal((3, 2)).astype(np.float32), requires_grad=True)
    return x, w


def f(x, w):
    return (pb.tanh(x @ w) * 2).sum()


def test_second_call_hits_cache_and_matches_eager():
    x, w = _xw()
    cf = pb.compile(f)
    for _ in range(3):
        x.grad = w.grad = None
        cf(x, w).backward()
    got = (x.grad.numpy().copy(), w.grad.numpy().copy())
    x.grad = w.grad = None
    f(x, w).backward()
    np.testing.assert_allclose(got[0], x.grad.numpy(), rtol=1e-5)
    np.testing.assert_allclose(got[1], w.grad.numpy(), rtol=1e-5)
    assert cf.cache.info.misses == 1 and cf.cache.info.hits == 2


def test_grad_fn_links_into_surrounding_eager_graph():
    x, w = _xw()
    cf = pb.compile(lambda a, b: pb.tanh(a @ b))
    a = x * 3  # eager before
    out = cf(a, w)
    assert type(out.grad_fn).__name__ == "CompiledFunctionBackward"
    assert out.grad_fn.next_functions[0][0] is a.grad_fn
    (out ** 2).sum().backward()  # eager after
    x2, w2 = pb.tensor(x.detach().numpy(), requires_grad=True), pb.tensor(
        w.detach().numpy(), requires_grad=True)
    (pb.tanh((x2 * 3) @ w2) ** 2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), x2.grad.numpy(), rtol=1e-5)
    np.testing.assert_allclose(w.grad.numpy(), w2.grad.numpy(), rtol=1e-5)


def test_hooks_and_retain_grad_on_compiled_outputs():
    x, w = _xw()
    cf = pb.compile(lambda a, b: a @ b)
    out = cf(x, w)
    out.retain_grad()
    seen = []
    out.register_hook(lambda g: seen.append(g.shape) or g * 2)
    out.sum().backward()
    assert seen == [(4, 2)]
    np.testing.assert_allclose(out.grad.numpy(), np.ones((4, 2)) * 2)
    np.testing.assert_allclose(w.grad.numpy(), x.detach().numpy().T @ (np.ones((4, 2)) * 2),
                               rtol=1e-5)


def test_second_backward_raises_like_eager_and_retain_graph_allows_it():
    x, w = _xw()
    cf = pb.compile(f)
    y = cf(x, w)
    y.backward(retain_graph=True)
    y.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward()


def test_create_graph_through_compiled_code_gives_higher_order():
    cf = pb.compile(lambda x: (x ** 3).sum())
    x = pb.tensor([2.0], requires_grad=True)
    for _ in range(2):  # the second call runs generated code
        (g,) = pb.autograd.grad(cf(x), x, create_graph=True)
    assert g.item() == pytest.approx(12.0)
    (g2,) = pb.autograd.grad(g.sum(), x, create_graph=True)
    assert g2.item() == pytest.approx(12.0)
    (g3,) = pb.autograd.grad(g2.sum(), x)
    assert g3.item() == pytest.approx(6.0)


def test_no_grad_call_returns_plain_tensors():
    x, w = _xw()
    cf = pb.compile(f)
    with pb.no_grad():
        y = cf(x, w)
    assert y.grad_fn is None and not y.requires_grad


def test_multiple_outputs_and_partial_use():
    x, w = _xw()
    cf = pb.compile(lambda a, b: (a @ b, (a * a).sum()))
    p, q = cf(x, w)
    q.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * x.detach().numpy(), rtol=1e-6)
    assert w.grad is None


def test_guard_failure_retraces_and_the_limit_falls_back_with_a_warning():
    def g(x):
        if x.sum() > 0:
            return x * 2
        return x * 3
    cg = pb.compile(g)
    assert cg(pb.tensor([1.0])).item() == 2
    assert cg(pb.tensor([-1.0])).item() == -3
    assert cg.cache.info.recompiles == 1
    assert cg(pb.tensor([5.0])).item() == 10  # first variant's guard holds again
    counter = pb.compile(lambda x: x * float(x.sum().item()))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for k in range(12):
            assert counter(pb.tensor([float(k)])).item() == float(k * k)
    messages = [str(w.message) for w in caught]
    assert any("Falling back to eager" in m and "item()" in m and "test_compile.py" in m
               for m in messages)


def test_errors_name_the_function_and_line():
    with pytest.raises(pb.compiler.TraceError, match=r"no_tensor .*test_compile.py:\d+"):
        def no_tensor(x):
            return 3
        pb.compile(no_tensor)(pb.ones(2))
    with pytest.raises(TypeError, match="unhashable static argument of type set"):
        pb.compile(lambda x, opts: x * 2)(pb.ones(2), {1, 2})
    glob = pb.ones(3)

    def mutates(x):
        glob.add_(x)  # with a gradient: a write into a captured tensor's history
        return x * 1
    with pytest.raises(pb.compiler.TraceError, match=re.escape("glob.add_(x)")):
        pb.compile(mutates)(pb.ones(3, requires_grad=True))


def test_a_captured_buffer_written_without_gradient_is_written_on_every_call():
    """As a BatchNorm's running statistics: the generated code writes the new value
    back into the tensor; the call that traces writes it once, as eager code."""
    counter, total = pb.zeros((), dtype=pb.int64), pb.zeros(3)

    def step(x):
        counter.add_(1)
        with pb.no_grad():
            total.add_(x * 2)
        return (x * x).sum()

    f = pb.compile(step)
    for k in range(3):
        x = pb.full((3,), float(k + 1), requires_grad=True)
        f(x).backward()
        np.testing.assert_allclose(x.grad.numpy(), 2 * x.detach().numpy())
    assert counter.item() == 3 and total.tolist() == [12.0, 12.0, 12.0]
    assert f.cache.info.misses == 1


def test_captured_parameters_receive_gradients():
    w = pb.tensor([1.0, 2.0], requires_grad=True)
    loss = pb.compile(lambda x: (x * w).sum())
    for _ in range(2):
        w.grad = None
        loss(pb.tensor([3.0, 4.0])).backward()
    np.testing.assert_allclose(w.grad.numpy(), [3.0, 4.0])
    with pb.no_grad():
        w.mul_(2)  # an optimizer step: the compiled code sees the new value
    assert loss(pb.tensor([1.0, 1.0])).item() == 6.0


def test_random_ops_draw_anew_each_call():
    cf = pb.compile(lambda x: x * pb.rand(3))
    x = pb.ones(3)
    assert not np.allclose(cf(x).numpy(), cf(x).numpy())


def test_generated_code_shows_in_tracebacks():
    cf = pb.compile(lambda x: pb.log(x).sum())
    x = pb.ones(2)
    cf(x)
    import traceback
    try:
        cf(pb.ones(3, dtype=pb.int64) * 0 + pb.tensor("a" and [1, 2, 3]))
    except Exception:  # noqa: BLE001 - any error: just check the traceback text
        pass
    src = cf.cache.variants()[0].forward.source
    assert "np.log(x)" in src
    fname = cf.cache.variants()[0].forward.filename
    import linecache
    assert "np.log(x)" in "".join(linecache.getlines(fname))
    assert traceback is not None


def test_dump_dir_writes_every_module(tmp_path):
    pb.compiler.set_dump_dir(tmp_path)
    try:
        pb.compile(lambda x: x.exp().sum())(pb.ones(2, requires_grad=True))
    finally:
        pb.compiler.set_dump_dir(None)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert any("forward" in n for n in names) and all(n.endswith(".py") for n in names)


def test_open_ended_slices_in_generated_code():
    f = pb.grad(lambda x: (x[1:] * 2).sum() + (x[::2] ** 2).sum() + x[:-1].sum())
    x = np.arange(5.0)
    want = np.array([1.0, 3.0, 7.0, 3.0, 10.0])
    np.testing.assert_allclose(f(x), want)
    np.testing.assert_allclose(f(x), want)  # generated code


def test_writes_through_views_inside_compiled_functions_match_eager(torch):
    def f(m, x):
        y = x * 1
        y[0] = 0.0
        v = y[1:]
        v.mul_(10)
        z = y * 2
        y.add_(1)
        return (v * z[1:]).sum() + y.sum()
    cf = pb.compile(lambda x: f(pb, x))
    for _ in range(2):
        x = pb.tensor([1.0, 2.0, 3.0], requires_grad=True)
        out = cf(x)
        out.backward()
    tx = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    tout = f(torch, tx)
    tout.backward()
    assert out.item() == pytest.approx(tout.item())
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())
    ir = pb.compiler.inspect(cf, x).ir
    assert "view_scatter" in ir and "view_chain" in ir


def test_index_tensors_are_guarded_not_frozen():
    f = pb.compile(lambda x, i: x[i].sum())
    x = pb.tensor([1.0, 2.0, 3.0], requires_grad=True)
    assert f(x, pb.tensor([0, 1])).item() == 3.0
    out = f(x, pb.tensor([2, 2]))
    assert out.item() == 6.0
    out.backward()
    np.testing.assert_allclose(x.grad.numpy(), [0.0, 0.0, 2.0])
