"""The cached backward (compiler/replay.py): a graph seen before runs generated code.

Every program here runs several times: the first backward is interpreted, the second
builds the generated backward, later ones only call it. The gradients must equal the
interpreter's bit for bit, errors must be torch's, and hooks keep the interpreter.
"""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb
import pullback.nn.functional as F
from pullback import config
from pullback.compiler import replay


@pytest.fixture(autouse=True)
def fresh_cache():
    replay.clear()
    with config.override(replay=config.replay, replay_after=config.replay_after):
        yield
    replay.clear()


def _rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def _f32(*shape: int, seed: int = 0) -> np.ndarray:
    return _rng(seed).standard_normal(shape).astype(np.float32)


# ------------------------------------------------------------------ programs
def chain(*ws):
    h = ws[-1]
    for w in ws[:-1]:
        h = pb.tanh(h * w + h)
    return h.sum()


def mlp(w1, b1, w2, b2):
    x = pb.from_numpy(_f32(8, 6, seed=1))
    y = pb.tensor([0, 1, 2, 1, 0, 2, 2, 1])
    return F.cross_entropy(pb.tanh(x @ w1 + b1) @ w2 + b2, y)


def rnn(wx, wh, b):
    xs = pb.from_numpy(_f32(5, 4, 3, seed=2))
    h = pb.zeros(4, 3)
    for t in range(xs.shape[0]):
        h = pb.tanh(xs[t] @ wx + h @ wh + b)
    return (h * h).mean()


def views_and_scalars(x, y):
    a = x[:, 1:] * 2.0 - x[0, 1:] / 3      # slices, a select, Python scalars
    b = (a.exp() + y.t()[:, :3].sum(0, keepdim=True).exp()).sqrt()
    return (b * -0.0 + b ** 2).mean(1).sum() + x.sum() * 0.5


def reused_leaf(x, w):
    z = x * w + x * x                       # x feeds three products: summed gradients
    return (z * w).sum() + (x @ w).sum()


def mixed_dtypes(x, w):
    y = x.to(pb.float64) * w                # float32 leaf in a float64 graph: a cast back
    return y.relu().sum() + (x * 0).sum()


def pieces(x, w):
    a, b, c = (x * w).split([1, 2, 1], 1)  # one node, three outputs; c gets no gradient
    rows = pb.stack(x.unbind(0)[::-1], 1)
    return (pb.cat([b.tanh(), a * 2], 1) * pb.einsum("ij,ji->i", x, rows)[:, None]).sum()


def ordering(x, w):
    s = (x * w).sort(1, descending=True)
    t = x.topk(2, 0, largest=False)
    return (s.values[:, :2] * t.values[:, :3].T).sum() + x.max(1).values.sum()


PROGRAMS = {
    "chain": (chain, [(4,)] * 7),
    "pieces": (pieces, [(4, 4), (4,)]),
    "ordering": (ordering, [(3, 4), (4,)]),
    "mlp": (mlp, [(6, 5), (5,), (5, 3), (3,)]),
    "rnn": (rnn, [(3, 3), (3, 3), (3,)]),
    "views_and_scalars": (views_and_scalars, [(3, 4), (4, 3)]),
    "reused_leaf": (reused_leaf, [(4,), (4,)]),
    "mixed_dtypes": (mixed_dtypes, [(5,), (5,)]),
}


def _leaves(shapes: list, dtype=np.float32, seed: int = 3) -> list:
    rng = _rng(seed)
    return [pb.tensor(rng.standard_normal(s).astype(dtype), requires_grad=True)
            for s in shapes]


def _backward_grads(fn, shapes, cached: bool, repeats: int = 4) -> list:
    config.replay = cached
    result = []
    for _ in range(repeats):
        leaves = _leaves(shapes)
        if fn is mixed_dtypes:
            leaves[1] = pb.tensor(leaves[1].detach().numpy().astype(np.float64),
                                  requires_grad=True)
        fn(*leaves).backward()
        result.append([(t.grad.numpy().copy(), t.grad.dtype) for t in leaves])
    return result


def _assert_same(got: list, want: list) -> None:
    for run_got, run_want in zip(got, want):
        for (g, gd), (w, wd) in zip(run_got, run_want):
            assert gd == wd
            assert g.shape == w.shape
            np.testing.assert_array_equal(g, w)  # bit for bit, not approximately


# -------------------------------------------------------------- same gradients
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_cached_backward_equals_interpreter(name):
    fn, shapes = PROGRAMS[name]
    want = _backward_grads(fn, shapes, cached=False)
    assert replay.STATS == {"interpreted": 0, "built": 0, "cached": 0}
    got = _backward_grads(fn, shapes, cached=True)
    _assert_same(got, want)
    assert replay.STATS == {"interpreted": 1, "built": 1, "cached": 2}


def test_generated_source_is_straight_line_numpy():
    fn, shapes = PROGRAMS["chain"]
    _backward_grads(fn, shapes, cached=True, repeats=2)
    plans = [e.plan for e in replay._CACHE.values() if isinstance(e.plan, replay.Plan)]
    assert len(plans) == 1
    src = plans[0].source
    assert src.startswith("def cached_backward(") and "np.tanh" not in src
    assert "for " not in src and "ops." not in src  # no loops, no op-table calls


def test_generated_source_of_pieces_joins_and_zero_fills():
    fn, shapes = PROGRAMS["pieces"]
    _backward_grads(fn, shapes, cached=True, repeats=2)
    src = next(e.plan.source for e in replay._CACHE.values()
               if isinstance(e.plan, replay.Plan))
    # split's gradient joins its pieces' (zeros for the one none reached); unbind's
    # stacks its rows'
    assert "np.concatenate([" in src and "np.zeros((4, 1), np.float32)" in src
    assert "np.stack([" in src and "np.einsum('i,ji->ij', t3, operands_1)" in src


def test_accumulates_into_existing_grads_like_the_interpreter():
    def run(cached: bool) -> tuple:
        config.replay = cached
        x, w = _leaves([(3,), (3,)])
        for _ in range(4):                     # .grad accumulates in place across steps
            (pb.tanh(x * w) * x).sum().backward()
        return x.grad.numpy().copy(), w.grad.numpy().copy(), x.grad._version
    want, got = run(False), run(True)
    for g, w in zip(got[:2], want[:2]):
        np.testing.assert_array_equal(g, w)
    assert got[2] == want[2]
    assert replay.STATS["cached"] == 2


def test_several_roots_with_grad_tensors():
    def run(cached: bool) -> list:
        config.replay = cached
        out = []
        for _ in range(3):
            x, y = _leaves([(2, 3), (3,)])
            a, b = x * y, (x + y).exp()
            pb.autograd.backward([a, b, a], [pb.ones(2, 3), pb.full((2, 3), 0.5),
                                             pb.full((2, 3), 2.0)])
            out.append([(x.grad.numpy().copy(), x.grad.dtype),
                        (y.grad.numpy().copy(), y.grad.dtype)])
        return out
    _assert_same(run(True), run(False))
    assert replay.STATS["cached"] == 1


def test_retain_graph_runs_the_cached_backward_again():
    x, w = _leaves([(4,), (4,)])
    y = (x * w).tanh().sum()
    for _ in range(3):
        y.backward(retain_graph=True)
    assert replay.STATS == {"interpreted": 1, "built": 1, "cached": 1}
    config.replay = False
    x2, w2 = (pb.tensor(t.detach().numpy(), requires_grad=True) for t in (x, w))
    y2 = (x2 * w2).tanh().sum()
    for _ in range(3):
        y2.backward(retain_graph=True)
    np.testing.assert_array_equal(x.grad.numpy(), x2.grad.numpy())
    np.testing.assert_array_equal(w.grad.numpy(), w2.grad.numpy())


# ------------------------------------------------------------------- grad()
def test_grad_captures_equal_interpreter():
    def run(cached: bool) -> list:
        config.replay = cached
        out = []
        for _ in range(3):
            x, w, unused = _leaves([(3,), (3,), (2,)])
            h = pb.tanh(x * w)
            loss = (h * h).sum()
            gx, gh, gu = pb.autograd.grad(loss, (x, h, unused), allow_unused=True)
            assert gu is None
            out.append([(gx.numpy().copy(), gx.dtype), (gh.numpy().copy(), gh.dtype)])
            assert x.grad is None  # grad() leaves .grad alone
        return out
    _assert_same(run(True), run(False))
    assert replay.STATS == {"interpreted": 1, "built": 1, "cached": 1}


def test_grad_of_grad_second_backward_is_cached():
    """The HVP pattern: a create_graph gradient (interpreted), then a plain grad of it."""
    def run(cached: bool) -> list:
        config.replay = cached
        out = []
        for _ in range(3):
            w1, b1, w2, b2 = _leaves(PROGRAMS["mlp"][1])
            ps = (w1, b1, w2, b2)
            gs = pb.autograd.grad(mlp(*ps), ps, create_graph=True)
            dot = sum((g * g).sum() for g in gs)
            out.append([(h.numpy().copy(), h.dtype) for h in pb.autograd.grad(dot, ps)])
        return out
    _assert_same(run(True), run(False))
    assert replay.STATS["cached"] == 1  # create_graph passes never enter the cache


# ------------------------------------------------------------------- errors
def _second_backward_message(cached: bool) -> str:
    config.replay = cached
    for _ in range(3):
        x, w = _leaves([(3,), (3,)])
        y = (x * w).sum()
        y.backward()
    with pytest.raises(RuntimeError) as e:
        y.backward()
    return str(e.value)


def test_second_backward_raises_as_interpreted():
    want = _second_backward_message(False)
    got = _second_backward_message(True)
    assert "Trying to backward through the graph a second time" in got
    assert got == want
    assert replay.STATS["cached"] == 1


def _inplace_message(cached: bool) -> tuple:
    config.replay = cached
    for _ in range(3):
        x = pb.tensor([1., 2., 3.], requires_grad=True)
        y = x * 2
        z = (y * y).sum()
        z.backward()
    y = x * 2
    z = (y.tanh() * y).sum()
    y.add_(1)  # y is saved by both products
    with pytest.raises(RuntimeError) as e:
        z.backward()
    return str(e.value), x.grad.numpy().copy()


def test_inplace_modification_raises_as_interpreted():
    want = _inplace_message(False)
    got = _inplace_message(True)
    assert "modified by an inplace operation" in got[0]
    assert got[0] == want[0]
    np.testing.assert_array_equal(got[1], want[1])


def test_freed_saved_values_after_a_cached_backward():
    for _ in range(3):
        x, w = _leaves([(3,), (3,)])
        y = x * w
        y.sum().backward()
    assert replay.STATS["cached"] == 1
    with pytest.raises(RuntimeError, match="second time"):
        _ = y.grad_fn._saved_self
    z = x + w  # nothing saved: a graph that may run backward again
    for _ in range(2):
        z.sum().backward()


# ------------------------------------------------------------------- hooks
@pytest.mark.parametrize("kind", ["tensor_hook", "leaf_hook", "retain_grad", "prehook",
                                  "node_hook", "post_accumulate"])
def test_hooks_keep_the_interpreter(kind):
    seen = []
    for _ in range(4):
        x, w = _leaves([(3,), (3,)])
        h = pb.tanh(x * w)
        if kind == "tensor_hook":
            h.register_hook(lambda g: seen.append(1))
        elif kind == "leaf_hook":
            x.register_hook(lambda g: seen.append(1))
        elif kind == "retain_grad":
            h.retain_grad()
        elif kind == "prehook":
            h.grad_fn.register_prehook(lambda gs: seen.append(1))
        elif kind == "node_hook":
            h.grad_fn.register_hook(lambda gi, go: seen.append(1))
        else:
            w.register_post_accumulate_grad_hook(lambda t: seen.append(1))
        (h * h).sum().backward()
        if kind == "retain_grad":
            assert h.grad is not None
            seen.append(1)
    assert len(seen) == 4
    assert replay.STATS == {"interpreted": 4, "built": 0, "cached": 0}


def test_create_graph_and_inputs_are_interpreted():
    for _ in range(3):
        x, w = _leaves([(3,), (3,)])
        (x * w).sum().backward(create_graph=True)
        (x * w).sum().backward(inputs=[w])
    assert replay.STATS == {"interpreted": 0, "built": 0, "cached": 0}


# ------------------------------------------------------------------- keys
def _key(fn, shapes, dtype=np.float32) -> tuple:
    leaves = _leaves(shapes, dtype)
    y = fn(*leaves)
    from pullback.autograd.edges import grad_edge
    w = replay.walk([grad_edge(y)], [np.ones_like(y.numpy(force=True))], None)
    return w.key


def test_keys_tell_shapes_dtypes_and_scalars_apart():
    base = _key(chain, [(4,)] * 3)
    assert _key(chain, [(4,)] * 3) == base                 # same structure: same key
    assert _key(chain, [(5,)] * 3) != base                 # shapes
    assert _key(chain, [(4,)] * 3, np.float64) != base     # dtypes
    assert _key(chain, [(4,)] * 4) != base                 # structure
    assert _key(lambda x: (x * 2.0).sum(), [(3,)]) != _key(lambda x: (x * 3.0).sum(), [(3,)])
    assert _key(lambda x: (x * 0.0).sum(), [(3,)]) != _key(lambda x: (x * -0.0).sum(), [(3,)])


def test_changing_shapes_each_step_never_builds():
    for n in range(2, 8):
        x = pb.ones(n, requires_grad=True)
        (x * x).sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), np.full(n, 2, np.float32))
    assert replay.STATS == {"interpreted": 6, "built": 0, "cached": 0}


def test_alternating_shapes_each_get_their_own_backward():
    for step in range(6):
        n = 3 if step % 2 else 5
        x = pb.tensor(np.arange(n, dtype=np.float32), requires_grad=True)
        (x * x * x).sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), 3 * np.arange(n, dtype=np.float32) ** 2)
    assert replay.STATS == {"interpreted": 2, "built": 2, "cached": 2}


def test_the_cache_forgets_the_least_recently_used(monkeypatch):
    monkeypatch.setattr(config, "replay_cache_size", 2)
    for n in (2, 3, 4, 2):  # 2 is forgotten when 4 arrives
        for _ in range(2):
            x = pb.ones(n, requires_grad=True)
            (x * x).sum().backward()
    assert replay.STATS == {"interpreted": 4, "built": 4, "cached": 0}
    assert len(replay._CACHE) == 2


def test_advanced_index_params_are_interpreted():
    for _ in range(3):
        x = pb.ones(5, requires_grad=True)
        x[np.array([0, 2, 2])].sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), [1, 0, 2, 0, 0])
    assert replay.STATS == {"interpreted": 3, "built": 0, "cached": 0}


def test_a_backward_that_does_not_build_stays_interpreted(monkeypatch):
    def fail(*args):
        raise TypeError("a rule that does not run on IR values")
    monkeypatch.setattr(replay, "build", fail)
    for _ in range(4):
        x, w = _leaves([(3,), (3,)])
        (x * w).sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), w.detach().numpy())
    assert replay.STATS == {"interpreted": 4, "built": 0, "cached": 0}


def test_switched_off():
    config.replay = False
    for _ in range(3):
        x, w = _leaves([(3,), (3,)])
        (x * w).sum().backward()
    assert replay.STATS == {"interpreted": 0, "built": 0, "cached": 0}
    assert not replay._CACHE
