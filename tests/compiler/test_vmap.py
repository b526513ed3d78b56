"""pb.vmap and pullback.func.vmap: composed with the other transforms, against loops,
finite differences and torch.func; axes, pytrees, randomness and errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import pullback as pb
from pullback import func

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated")
RNG = np.random.default_rng(0)


def mlp_loss(params, x, y):
    """Softmax cross-entropy of a two-layer tanh MLP on one example."""
    h = np.tanh(x @ params["w1"] + params["b1"])
    logits = h @ params["w2"] + params["b2"]
    return -(logits[y] - np.log(np.exp(logits).sum()))


def _params():
    return {"w1": RNG.standard_normal((5, 4)), "b1": RNG.standard_normal(4),
            "w2": RNG.standard_normal((4, 3)), "b2": RNG.standard_normal(3)}


def test_per_sample_gradients_match_a_loop_and_torch_func() -> None:
    params, xs, ys = _params(), RNG.standard_normal((6, 5)), RNG.integers(0, 3, 6)
    got = pb.vmap(pb.grad(mlp_loss), in_axes=(None, 0, 0))(params, xs, ys)
    for i in range(6):
        want = pb.grad(mlp_loss)(params, xs[i], ys[i])
        for k in params:
            np.testing.assert_allclose(got[k][i], want[k], rtol=1e-12, atol=1e-12)

    def tloss(p, x, y):
        h = torch.tanh(x @ p["w1"] + p["b1"])
        return torch.nn.functional.cross_entropy((h @ p["w2"] + p["b2"])[None], y[None])
    tp = {k: torch.tensor(v) for k, v in params.items()}
    tg = torch.func.vmap(torch.func.grad(tloss), in_dims=(None, 0, 0))(
        tp, torch.tensor(xs), torch.tensor(ys))
    for k in params:
        np.testing.assert_allclose(got[k], tg[k].numpy(), rtol=1e-10, atol=1e-12)


def test_per_sample_gradients_of_a_module_with_functional_call() -> None:
    pb.manual_seed(0)
    net = pb.nn.Sequential(pb.nn.Linear(4, 8), pb.nn.Tanh(), pb.nn.Linear(8, 3))
    params = {k: v.detach() for k, v in net.named_parameters()}
    x, y = pb.randn(5, 4), pb.tensor([0, 2, 1, 1, 0])

    def loss(p, x, y):
        out = func.functional_call(net, p, (x.unsqueeze(0),))
        return pb.nn.functional.cross_entropy(out, y.unsqueeze(0))
    got = func.vmap(func.grad(loss), in_dims=(None, 0, 0))(params, x, y)
    for i in range(5):
        net.zero_grad()
        pb.nn.functional.cross_entropy(net(x[i:i + 1]), y[i:i + 1]).backward()
        for k, p in net.named_parameters():
            np.testing.assert_allclose(got[k][i].numpy(), p.grad.numpy(), rtol=1e-5,
                                       atol=1e-6)


def test_grad_of_vmap_against_finite_differences_and_eager() -> None:
    f = lambda w, xs: pb.vmap(lambda x: np.tanh(x @ w).sum(), in_axes=0)(xs).sum()  # noqa
    w, xs = RNG.standard_normal((3, 2)), RNG.standard_normal((4, 3))
    g = pb.grad(f)(w, xs)
    eps, fd = 1e-6, np.zeros_like(w)
    for idx in np.ndindex(*w.shape):
        d = np.zeros_like(w)
        d[idx] = eps
        fd[idx] = (f(w + d, xs) - f(w - d, xs)) / (2 * eps)
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)
    wt = pb.tensor(w, requires_grad=True)  # eager: the batched ops record autograd
    pb.vmap(lambda x: pb.tanh(x @ wt).sum())(pb.tensor(xs)).sum().backward()
    np.testing.assert_allclose(wt.grad.numpy(), g, rtol=1e-12)


def test_vmap_composes_with_jacrev_jacfwd_hessian_and_itself() -> None:
    x = RNG.standard_normal((4, 3))
    jac = pb.vmap(pb.jacrev(np.sin))(x)
    assert jac.shape == (4, 3, 3)
    np.testing.assert_allclose(jac, np.stack([np.diag(np.cos(r)) for r in x]), atol=1e-12)
    np.testing.assert_allclose(pb.vmap(pb.jacfwd(np.sin))(x), jac, atol=1e-12)
    hess = pb.vmap(pb.hessian(lambda a: (a ** 3).sum()))(x)
    np.testing.assert_allclose(hess, np.stack([np.diag(6 * r) for r in x]), atol=1e-10)
    outer = pb.vmap(pb.vmap(lambda a, b: a * b, in_axes=(0, None)), in_axes=(None, 0))
    a, b = RNG.standard_normal(3), RNG.standard_normal(5)
    np.testing.assert_allclose(outer(a, b), np.outer(b, a))


def test_compiled_vmap_generates_batched_numpy_and_caches() -> None:
    f = pb.vmap(lambda x, w: np.tanh(x @ w), in_axes=(0, None))
    w = RNG.standard_normal((3, 2))
    for n in (4, 4, 4):
        x = RNG.standard_normal((n, 3))
        np.testing.assert_allclose(f(x, w), np.tanh(x @ w), rtol=1e-12)
    assert f.cache.info.misses == 1 and f.cache.info.hits == 2
    code = f.cache.variants()[0].module.source
    assert "np.tanh" in code and "for " not in code  # batched ops, no loop over examples
    inner = pb.compile(lambda x, w: f(x, w) * 2)  # inside another trace: its ops recorded
    np.testing.assert_allclose(inner(x, w), 2 * np.tanh(x @ w), rtol=1e-12)
    assert "for " not in pb.compiler.inspect(inner, x, w).forward


def test_tensor_path_matches_torch_func() -> None:
    x = RNG.standard_normal((4, 3))
    got = func.vmap(pb.dot)(pb.tensor(x), pb.tensor(x))
    want = torch.func.vmap(torch.dot)(torch.tensor(x), torch.tensor(x))
    np.testing.assert_allclose(got.numpy(), want.numpy())
    assert isinstance(got, pb.Tensor)
    assert func.vmap(lambda a: a * 2, in_dims=1)(pb.ones(3, 5)).shape == (5, 3)
    assert func.vmap(func.jacrev(pb.sin))(pb.ones(4, 3)).shape == (4, 3, 3)


def test_pytrees_in_and_out_axes_and_unbatched_outputs() -> None:
    f = lambda d, s: {"sum": d["a"] + d["b"], "c": s * 2.0}  # noqa: E731
    d = {"a": np.ones((2, 5)), "b": np.arange(5.0)}
    out = pb.vmap(f, in_axes=({"a": 1, "b": 0}, None), out_axes=({"c": 0, "sum": 1}))(d, 3.0)
    assert out["sum"].shape == (2, 5) and out["c"].shape == (5,)
    np.testing.assert_allclose(out["sum"], np.broadcast_to(1 + np.arange(5.0), (2, 5)))
    np.testing.assert_allclose(out["c"], 6.0)


def test_randomness_modes() -> None:
    x = np.zeros((4, 3))
    with pytest.raises(RuntimeError, match="randomness error mode"):
        func.vmap(lambda a: a + pb.randn(3))(pb.tensor(x))
    pb.manual_seed(0)
    same = func.vmap(lambda a: a + pb.randn(3), randomness="same")(pb.tensor(x)).numpy()
    assert np.all(same == same[0])
    diff = func.vmap(lambda a: a + pb.randn(3), randomness="different")(pb.tensor(x)).numpy()
    assert not np.allclose(diff[0], diff[1])


def test_data_dependent_python_control_flow_runs_per_example() -> None:
    f = lambda x: x * 2 if x.sum() > 0 else -x  # noqa: E731
    x = np.array([[1.0, 2.0], [-3.0, 1.0], [0.5, 0.5]])
    with pytest.warns(UserWarning, match="Python decision"):
        out = pb.vmap(f)(x)
    np.testing.assert_allclose(out, [[2.0, 4.0], [3.0, -1.0], [1.0, 1.0]])


def test_empty_batch_and_chunks() -> None:
    assert pb.vmap(np.tanh)(np.zeros((0, 3))).shape == (0, 3)
    x = RNG.standard_normal((7, 3))
    np.testing.assert_allclose(func.vmap(pb.sin, chunk_size=3)(pb.tensor(x)).numpy(),
                               np.sin(x), rtol=1e-12)


@pytest.mark.parametrize("call, error, text", [
    (lambda: func.vmap(pb.add)(pb.ones(3, 2), pb.ones(4, 2)), ValueError,
     "Expected all tensors to have the same size in the mapped dimension, got sizes "
     r"\[3, 4\]"),
    (lambda: func.vmap(pb.sin, in_dims=2)(pb.ones(3, 2)), ValueError,
     "expected in_dim to satisfy -2 <= in_dim < 2"),
    (lambda: func.vmap(pb.sin, in_dims=(0, 0))(pb.ones(3, 2)), ValueError,
     "in_dims is not compatible with the structure of `inputs`"),
    (lambda: func.vmap(lambda a: a, out_dims=None)(pb.ones(3, 2)), ValueError,
     "can not return a BatchedTensor when out_dim is None"),
    (lambda: func.vmap(lambda a, b: a + b)(pb.ones(3), 2.0), ValueError,
     "We cannot vmap over non-Tensor arguments"),
    (lambda: func.vmap(pb.sin, in_dims=(None,))(pb.ones(3)), ValueError,
     "Expected at least one Tensor to vmap over"),
    (lambda: func.vmap(pb.sin, randomness="foo"), RuntimeError,
     "Only allowed values for randomness"),
    (lambda: pb.vmap(np.add)(np.ones((3, 2)), np.ones((4, 2))), ValueError,
     "inconsistent sizes"),
    (lambda: pb.vmap(np.sin, in_axes=1)(np.ones(3)), ValueError,
     "its rank should be at least 2"),
    (lambda: pb.vmap(lambda a: a, out_axes=None)(np.ones(3)), ValueError,
     "out_axes is None"),
])
def test_bad_input_gets_torchs_or_jaxs_error(call, error, text) -> None:
    with pytest.raises(error, match=text):
        call()


def test_a_loop_for_ops_without_rules_warns_once_and_is_right() -> None:
    from pullback.ops.table import batching
    batching._WARNED.discard("trace")
    x = RNG.standard_normal((3, 2, 2))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        out = func.vmap(pb.trace)(pb.tensor(x))
    assert any("no batching rule for trace" in str(w.message) for w in seen)
    np.testing.assert_allclose(out.numpy(), np.trace(x, axis1=1, axis2=2))


def test_a_batched_value_written_into_an_unbatched_tensor_is_refused() -> None:
    buf = pb.zeros(2)

    def f(a):
        buf.add_(a)
        return a * 2
    with pytest.raises(RuntimeError, match="inplace arithmetic"):
        func.vmap(f)(pb.ones(3, 2))
    assert buf.numpy().tolist() == [0.0, 0.0]
    with pytest.raises(pb.compiler.TraceError, match="in-place add_.. on argument 'b'"):
        func.vmap(lambda a, b: b.add_(a), in_dims=(0, None))(pb.ones(3, 2), pb.ones(2))


def test_vmap_of_a_scan_batches_its_body_and_its_gradient() -> None:
    def rnn(xs, w, h0):
        def step(h, x):
            h = np.tanh(h @ w + x)
            return h, h.sum()
        h, ys = pb.scan(step, h0, xs)
        return h.sum() + ys.sum()
    xs, w = RNG.standard_normal((4, 7, 3)), RNG.standard_normal((3, 3)) * 0.5
    h0s = RNG.standard_normal((4, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no op loops over the examples
        got = pb.vmap(rnn, in_axes=(0, None, 0))(xs, w, h0s)
        grads = pb.vmap(pb.grad(rnn, argnums=1), in_axes=(0, None, None))(xs, w, h0s[0])
    np.testing.assert_allclose(got, [rnn(x, w, h) for x, h in zip(xs, h0s)], rtol=1e-12)
    np.testing.assert_allclose(grads, [pb.grad(rnn, argnums=1)(x, w, h0s[0]) for x in xs],
                               rtol=1e-10)
    # a carry only a batched constant reaches becomes batched inside the loop
    acc = lambda c, xs: pb.scan(lambda h, x: (h + c * x, h), np.zeros(2), xs)[0]  # noqa
    cs = RNG.standard_normal(3)
    np.testing.assert_allclose(pb.vmap(acc, in_axes=(0, None))(cs, xs[0][:, :2]),
                               [acc(c, xs[0][:, :2]) for c in cs], rtol=1e-12)


@pytest.mark.parametrize("name", ["grad", "jacrev", "jacfwd", "hessian", "vjp", "jvp"])
def test_vmap_of_each_transform_against_torch_func(name) -> None:
    x = RNG.standard_normal((3, 4))
    v = RNG.standard_normal((3, 4))
    f = lambda a: (pb.sin(a) * a).sum()  # noqa: E731
    tf = lambda a: (torch.sin(a) * a).sum()  # noqa: E731
    g = lambda a: pb.sin(a) * a  # noqa: E731
    tg = lambda a: torch.sin(a) * a  # noqa: E731
    if name == "vjp":
        mine = func.vmap(lambda a, c: func.vjp(g, a)[1](c)[0])(pb.tensor(x), pb.tensor(v))
        theirs = torch.func.vmap(lambda a, c: torch.func.vjp(tg, a)[1](c)[0])(
            torch.tensor(x), torch.tensor(v))
    elif name == "jvp":
        mine = func.vmap(lambda a, c: func.jvp(g, (a,), (c,))[1])(pb.tensor(x), pb.tensor(v))
        theirs = torch.func.vmap(lambda a, c: torch.func.jvp(tg, (a,), (c,))[1])(
            torch.tensor(x), torch.tensor(v))
    else:
        fn, tfn = (f, tf) if name in ("grad", "hessian") else (g, tg)
        mine = func.vmap(getattr(func, name)(fn))(pb.tensor(x))
        theirs = torch.func.vmap(getattr(torch.func, name)(tfn))(torch.tensor(x))
    np.testing.assert_allclose(mine.numpy(), theirs.numpy(), rtol=1e-10, atol=1e-12)


def test_vmap_of_cond_with_a_batched_and_an_unbatched_predicate() -> None:
    f = lambda x: pb.cond(x.sum() > 0, lambda v: v * 2, lambda v: -v ** 3, x)  # noqa: E731
    x = np.array([[1.0, 2.0], [-3.0, 1.0], [0.5, -2.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every element's branch picked, no loop
        np.testing.assert_allclose(pb.vmap(f)(x), [f(r) for r in x])
        np.testing.assert_allclose(pb.vmap(pb.grad(lambda v: f(v).sum()))(x),
                                   [pb.grad(lambda v: f(v).sum())(r) for r in x])
        g = lambda v, s: pb.cond(s > 0, lambda u: u * 2, lambda u: -u, v)  # noqa: E731
        np.testing.assert_allclose(pb.vmap(g, in_axes=(0, None))(x, -1.0), -x)


def test_vmap_of_a_while_loop_with_a_batched_condition() -> None:
    def newton_sqrt(a):
        return pb.while_loop(lambda s: np.abs(s[0] * s[0] - a) > 1e-10,
                             lambda s: (0.5 * (s[0] + a / s[0]), s[1] + 1), (a, 0))
    a = np.array([2.0, 9.0, 0.25, 100.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # one loop for the batch: no fallback
        root, steps = pb.vmap(newton_sqrt)(a)
        g = pb.grad(lambda a: pb.vmap(lambda v: newton_sqrt(v)[0])(a).sum())(a)
    np.testing.assert_allclose(root, [newton_sqrt(v)[0] for v in a], rtol=1e-15)
    assert steps.tolist() == [newton_sqrt(v)[1] for v in a]  # each element's own count
    np.testing.assert_allclose(g, 0.5 / np.sqrt(a), rtol=1e-9)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the reverse loop masked per element, not per element
        per = pb.vmap(pb.grad(lambda v: newton_sqrt(v)[0]))(a)
    np.testing.assert_allclose(per, 0.5 / np.sqrt(a), rtol=1e-9)


def test_draws_are_new_on_every_call_and_per_element_when_different() -> None:
    """A draw with no batched input is recorded in the batched program, not drawn once
    into a constant that every later call repeats; numpy's draws (whose size is not a
    param) differ per element with randomness="different"."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _check_draws()


def _check_draws() -> None:
    for mode in ("same", "different"):
        f = func.vmap(lambda p: pb.rand(3) + p, randomness=mode)
        assert not np.allclose(f(pb.zeros(2, 3)).numpy(), f(pb.zeros(2, 3)).numpy())
        g = pb.compile(func.vmap(lambda p: pb.rand(3) + p, randomness=mode))
        assert not np.allclose(g(pb.zeros(2, 3)).numpy(), g(pb.zeros(2, 3)).numpy())
    h = pb.vmap(lambda x: x + np.random.rand(3), randomness="different")
    first = h(np.zeros((4, 3)))
    assert not np.allclose(first[0], first[1]) and not np.allclose(first, h(np.zeros((4, 3))))
    same = pb.vmap(lambda x: x + np.random.rand(3), randomness="same")(np.zeros((4, 3)))
    assert np.allclose(same, same[:1])
    kept = func.vmap(lambda x: pb.nn.functional.dropout(x, 0.5), randomness="same")(
        pb.ones(4, 64)).numpy()
    assert kept.shape == (4, 64) and np.allclose(kept, kept[:1])


def test_jacobians_of_complex_inputs_need_holomorphic():
    z = np.array([0.3 + 0.2j, -1.2 + 0.5j])
    with pytest.raises(RuntimeError, match="jacrev: Expected all inputs to be real but "
                                           "received complex tensor at flattened input idx: 0"):
        func.jacrev(lambda v: (v * v).real)(pb.tensor(z))
    with pytest.raises(TypeError, match="jacfwd: input 0 is complex128; jacfwd takes real"):
        pb.jacfwd(lambda v: np.real(v * v))(z)
    np.testing.assert_allclose(pb.jacfwd(lambda v: v * v, holomorphic=True)(z), np.diag(2 * z))


def test_keyword_arguments_mapped_as_jax_and_passed_through_as_torch():
    assert func.vmap(lambda x, y: x + y)(pb.ones(2, 2), y=pb.ones(2, 2)).shape == (2, 2, 2)
    assert pb.vmap(lambda x, y: x + y)(np.ones((2, 3)), y=np.ones((2, 3))).shape == (2, 3)


def test_constant_outputs_broadcast_as_jax():
    x = np.arange(6.0).reshape(3, 2)
    np.testing.assert_allclose(pb.vmap(lambda a: np.ones(2))(x), np.ones((3, 2)))
    np.testing.assert_allclose(pb.vmap(lambda a: 1.0)(x), np.ones(3))
    assert pb.vmap(lambda: np.ones(2), axis_size=4)().shape == (4, 2)
