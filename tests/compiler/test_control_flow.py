"""pb.scan, pb.fori_loop, pb.while_loop, pb.cond, pb.switch: loops and branches traced
once as regions, run as Python loops and ifs in generated code, differentiated by
reverse loops. Checked against central finite differences (float64), torch, the same
program unrolled, and eager mode."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from ops import numeric_grad as fd

import pullback as pb
from pullback.compiler import TraceError

RNG = np.random.default_rng(0)
XS = RNG.standard_normal((6, 3))
W = RNG.standard_normal((3, 3)) * 0.5


def rnn(xs, w):
    def step(h, x):
        h = np.tanh(h @ w + x)
        return h, h.sum()
    h, ys = pb.scan(step, np.zeros(3), xs)
    return ys.sum() + (h * h).sum()


def rnn_unrolled(xs, w):
    h, total = np.zeros(3), 0.0
    for x in xs:
        h = np.tanh(h @ w + x)
        total = total + h.sum()
    return total + (h * h).sum()


def source_of(fn, *args):
    return pb.compiler.inspect(fn, *args).forward


# ------------------------------------------------------------------------------ scan
def test_scan_gradient_three_ways(torch) -> None:
    g = pb.grad(rnn, argnums=(0, 1))(XS, W)
    np.testing.assert_allclose(g[1], fd(lambda w: rnn_unrolled(XS, w), W), rtol=1e-6)
    np.testing.assert_allclose(g[0], fd(lambda xs: rnn_unrolled(xs, W), XS), rtol=1e-6)
    unrolled = pb.grad(rnn_unrolled, argnums=(0, 1))(XS, W)
    for a, b in zip(g, unrolled):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    tw, tx = torch.tensor(W, requires_grad=True), torch.tensor(XS, requires_grad=True)
    h, total = torch.zeros(3, dtype=torch.float64), 0.0
    for x in tx:
        h = torch.tanh(h @ tw + x)
        total = total + h.sum()
    (total + (h * h).sum()).backward()
    np.testing.assert_allclose(g[1], tw.grad.numpy(), rtol=1e-12)


def test_scan_eager_and_compiled_tensors_agree() -> None:
    def model(xs, w):
        def step(h, x):
            h = pb.tanh(h @ w + x)
            return h, h.sum()
        h, ys = pb.scan(step, pb.zeros(3, dtype=pb.float64), xs)
        return ys.sum() + (h * h).sum()
    compiled = pb.compile(model)
    for k in range(3):  # values that change between calls: one trace
        w = pb.tensor(W + 0.1 * k, requires_grad=True)
        xs = pb.tensor(XS, requires_grad=True)
        model(xs, w).backward()
        eager = w.grad.numpy().copy(), xs.grad.numpy().copy()
        w.grad = xs.grad = None
        out = compiled(xs, w)
        out.backward()
        np.testing.assert_allclose(float(out), rnn(XS, W + 0.1 * k), rtol=1e-12)
        np.testing.assert_allclose(w.grad.numpy(), eager[0], rtol=1e-12)
        np.testing.assert_allclose(xs.grad.numpy(), eager[1], rtol=1e-12)
    assert compiled.cache.info.misses == 1


def test_scan_generated_code_is_a_loop_whose_length_does_not_grow() -> None:
    short = source_of(pb.grad(rnn, argnums=1), XS[:2], W)
    long = source_of(pb.grad(rnn, argnums=1), np.tile(XS, (50, 1)), W)
    assert "for i in range(2):" in short and "for i in range(300):" in long
    assert "range(300 - 1, -1, -1)" in long  # the reverse loop
    assert abs(len(long) - len(short)) < 40  # (digits, and a del of a large array)
    assert "ops." not in long


def test_scan_second_order_and_forward_mode() -> None:
    def f(w):
        return rnn(XS[:3], w)

    def f_unrolled(w):
        return rnn_unrolled(XS[:3], w)
    np.testing.assert_allclose(pb.hessian(f)(W), pb.hessian(f_unrolled)(W), atol=1e-12)
    np.testing.assert_allclose(pb.jacfwd(f)(W), pb.grad(f)(W), atol=1e-12)
    np.testing.assert_allclose(pb.grad(lambda w: pb.grad(f)(w).sum())(W),
                               fd(lambda w: pb.grad(f_unrolled)(w).sum(), W), rtol=1e-5)
    jvp = pb.jvp(f, (W,), (np.ones_like(W),))[1]
    np.testing.assert_allclose(jvp, pb.grad(f)(W).sum(), rtol=1e-12)


def test_scan_pytrees_reverse_and_no_xs() -> None:
    def f(a):
        def step(c, x):
            return {"s": c["s"] + x["u"] * a, "p": c["p"] * x["v"]}, (c["s"], None)
        init = {"s": np.zeros(2), "p": np.ones(2)}
        c, (ss, _) = pb.scan(step, init, {"u": XS[:, :2], "v": XS[:, 1:]}, reverse=True)
        return (c["s"] * c["p"]).sum() + (ss ** 2).sum()

    def f_loop(a):
        s, p, ss = np.zeros(2), np.ones(2), [None] * 6
        for i in range(5, -1, -1):
            ss[i] = s
            s, p = s + XS[i, :2] * a, p * XS[i, 1:]
        return (s * p).sum() + (np.stack(ss) ** 2).sum()
    np.testing.assert_allclose(f(0.7), f_loop(0.7), rtol=1e-12)
    np.testing.assert_allclose(pb.grad(f)(0.7), fd(f_loop, 0.7), rtol=1e-6)
    counted = pb.grad(lambda a: pb.scan(lambda c, _: (c * a, None), 1.0, length=4)[0])
    np.testing.assert_allclose(counted(0.5), 4 * 0.5 ** 3)


def test_scan_of_length_zero() -> None:
    def f(w):
        h, ys = pb.scan(lambda h, x: (h * w + x, h), np.ones(3), np.zeros((0, 3)))
        return h.sum() + ys.sum() + w.sum()
    assert pb.grad(f)(np.ones(3)).tolist() == [1.0, 1.0, 1.0]
    assert pb.scan(lambda c, x: (c, c), 1.0, np.zeros((0,)))[1].shape == (0,)


def test_fori_loop() -> None:
    def f(x):
        return pb.fori_loop(0, 5, lambda i, v: v * x + i, 1.0)

    def f_loop(x):
        v = 1.0
        for i in range(5):
            v = v * x + i
        return v
    assert f(1.3) == pytest.approx(f_loop(1.3))
    np.testing.assert_allclose(pb.grad(f)(1.3), fd(f_loop, 1.3), rtol=1e-7)
    with pytest.raises(TypeError, match="pb.fori_loop: upper must be an int or a 0-d integer "
                                        "array, got float"):
        pb.fori_loop(0, 2.5, lambda i, v: v, 1.0)


def test_fori_loop_traced_bound_is_a_while_region() -> None:
    """An upper bound the trace does not fix (an int array argument, a 0-d value the
    function computed) is a while region over (i, val), as in JAX: one trace over every
    bound, reverse-differentiable."""
    def f(x, n):
        return pb.fori_loop(0, n, lambda i, v: v * x + i, 1.0)

    def f_loop(x, n):
        v = 1.0
        for i in range(int(n)):
            v = v * x + i
        return v
    g = pb.grad(f)
    for n in (0, 3, 7):
        assert f(1.3, np.array(n)) == pytest.approx(f_loop(1.3, n))
        np.testing.assert_allclose(g(1.3, np.array(n)), fd(lambda x, n=n: f_loop(x, n), 1.3),
                                   rtol=1e-7, atol=1e-9)
    assert g.cache.info.misses == 1
    assert "while True:" in source_of(g, 1.3, np.array(2))

    def computed(x):
        n = (x > 0).sum() + 1  # 0-d int64, computed in the function
        return pb.fori_loop(1, n, lambda i, v: v * np.sin(x) * i, x).sum()
    x = np.array([0.3, -0.5, 0.8])
    np.testing.assert_allclose(pb.grad(computed)(x), fd(computed, x), rtol=1e-7)
    t = pb.tensor(1.3, dtype=pb.float64, requires_grad=True)  # eager, a Tensor bound
    f(t, pb.tensor(3)).backward()
    assert float(t.grad) == pytest.approx(3 * 1.3 ** 2 + 1)


# ----------------------------------------------------------------------- while_loop
def newton_sqrt(a):
    return pb.while_loop(lambda x: np.abs(x * x - a) > 1e-12, lambda x: 0.5 * (x + a / x), a)


def test_while_loop_reverse_mode_traces_once_over_trip_counts() -> None:
    g = pb.grad(newton_sqrt)
    for a in (2.0, 9.0, 100.0, 1e6):  # up to ~20 steps
        np.testing.assert_allclose(g(a), 0.5 / np.sqrt(a), rtol=1e-9)
    assert g(1.0) == 1.0  # no step ran: the program is x = a (as unrolled, as in torch)
    assert g.cache.info.misses == 1 and g.cache.info.recompiles == 0
    np.testing.assert_allclose(pb.hessian(newton_sqrt)(4.0), -0.25 * 4.0 ** -1.5, rtol=1e-6)
    assert "while True:" in source_of(g, 2.0)


def test_while_loop_eager_is_python() -> None:
    assert newton_sqrt(9.0) == pytest.approx(3.0)
    t = pb.tensor(9.0, dtype=pb.float64, requires_grad=True)
    newton_sqrt(t).backward()
    assert float(t.grad) == pytest.approx(1 / 6)


# -------------------------------------------------------------------- cond, switch
def test_cond_both_branches_one_trace() -> None:
    def f(x, w):
        return pb.cond(x.sum() > 0, lambda x: np.sin(x * w), lambda x: np.cos(x) * w, x).sum()
    g = pb.grad(f, argnums=(0, 1))
    x = np.array([0.3, 0.5])
    for s in (1.0, -1.0, 1.0):
        gx, gw = g(s * x, 1.5)
        np.testing.assert_allclose(gx, fd(lambda v: f(v, 1.5), s * x), rtol=1e-7)
        np.testing.assert_allclose(gw, fd(lambda w, s=s: f(s * x, w), 1.5), rtol=1e-7)
    assert g.cache.info.misses == 1
    assert "if " in source_of(g, x, 1.5) and "else:" in source_of(g, x, 1.5)


def test_switch_clamps_and_differentiates() -> None:
    branches = [lambda x: x, lambda x: 2 * x, lambda x: (3 * x).sum() * x]
    assert pb.switch(7, branches, np.ones(1)).tolist() == [3.0]
    h = pb.grad(lambda x, k: pb.switch(k, branches, x).sum())
    x = np.array([0.3, 0.5])
    assert h(x, np.int64(2)).tolist() == pytest.approx([4.8, 4.8])
    assert h(x, np.int64(-3)).tolist() == [1.0, 1.0]


# -------------------------------------------------------------------------- errors
def test_bad_bodies_name_the_problem() -> None:
    with pytest.raises(TypeError, match="pb.scan at test_control_flow.py:[0-9]+ .*carry leaf 0 "
                                        "came in as float64\\[3\\] and went out "
                                        "as float64\\[3,3\\]"):
        pb.grad(lambda w: pb.scan(lambda h, x: (h[None] * w, x), np.ones(3), XS)[0].sum())(W)
    with pytest.raises(TypeError, match=r"pb.cond at test_control_flow.py:\d+ \(pb.grad.*\): "
                                        "the branches must return the same shapes"):
        pb.grad(lambda x: pb.cond(x.sum() > 0, lambda x: x, lambda x: x.sum(), x).sum())(
            np.ones(2))

    def branching(w):
        def step(h, x):
            if (h * w).sum() > 0:  # a Python if on a traced value inside the body
                h = h * 2
            return h, None
        return pb.scan(step, np.ones(3), XS)[0].sum()
    with pytest.raises(TraceError, match="loop body turns a traced value into a Python value"):
        pb.grad(branching)(W)
    seen = []

    def effect(w):
        def step(h, x):
            seen.append(1)
            return h * w, None
        return pb.scan(step, np.ones(3), XS)[0].sum()
    with pytest.raises(TraceError, match="loop body changes state outside it"):
        pb.grad(effect)(np.ones(3))


# --------------------------------------------------------------------------- memory
@pytest.mark.parametrize("reverse", [False, True])
def test_scan_remat_keeps_a_carry_per_block_and_the_same_gradient(reverse) -> None:
    xs = RNG.standard_normal((400, 3))

    def loss(remat):
        def f(w):
            def step(h, x):
                h = pb.tanh(h @ w + x)
                return h, h.sum()
            h, ys = pb.scan(step, pb.zeros(3, dtype=pb.float64), pb.tensor(xs),
                            remat=remat, reverse=reverse)
            return ys.sum() + (h * h).sum()
        return pb.compile(f)

    grads, saved = [], []
    for remat in (False, True, 7):
        w = pb.tensor(W, requires_grad=True)
        loss(remat)(w).backward()
        grads.append(w.grad.numpy())
        info = pb.compiler.inspect(loss(remat), pb.tensor(W, requires_grad=True))
        # (what the loops keep: the xs and their block view are the argument's memory)
        saved.append(sum(s.nbytes for s in info.saved
                         if s.name.startswith("scan") or "_steps" in s.name))
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(grads[2], grads[0], rtol=1e-12, atol=1e-13)
    # every step's residuals (400 x two 3-vectors: the carry, whose view h.T the reverse
    # loop takes again, and h_steps, tanh's outputs: the reverse loop computes 1 - h**2
    # again) against one carry per block of 20 steps (of 7 steps: 57 blocks, and the 1
    # step left over keeps its residuals)
    assert saved[0] == 400 * 2 * 3 * 8 and saved[1] == 20 * 3 * 8
    assert saved[2] == 57 * 3 * 8 + 2 * 3 * 8


@pytest.mark.parametrize("remat", [True, 3])
def test_scan_remat_through_grad_reads_the_carry_each_step_started_from(remat) -> None:
    """The reverse of a ``remat`` block runs the step again: the step's new carry and
    the carry it started from are both live there (the gradient of ``h * w`` reads the
    old ``h``). pb.grad's code once gave them one name: a wrong gradient, silently."""
    xs = np.linspace(-1, 1, 16).reshape(8, 2)

    def loss(w, remat):
        h, hs = pb.scan(lambda h, x: (np.tanh(h * w + x), h), np.zeros(2), xs,
                        remat=remat)
        return hs.sum() + (h * h).sum()

    want = fd(lambda w: loss(w, False), np.asarray(0.5))
    np.testing.assert_allclose(pb.grad(loss)(0.5, remat), want, rtol=1e-7)
    np.testing.assert_allclose(pb.value_and_grad(loss)(0.5, remat)[1], want, rtol=1e-7)
    np.testing.assert_allclose(pb.grad(loss)(0.5, remat), pb.grad(loss)(0.5, False),
                               rtol=1e-12)


def test_scan_in_a_compiled_module() -> None:
    """A module whose forward is a scan, compiled: one trace, the module's parameters
    read inside the body, its gradients those of eager mode."""
    class Cell(pb.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = pb.nn.Linear(3, 3).double()

        def forward(self, xs):
            h, hs = pb.scan(lambda h, x: (pb.tanh(self.lin(h) + x),) * 2,
                            pb.zeros(3, dtype=pb.float64), xs)
            return hs.sum()
    pb.manual_seed(0)
    cell = Cell()
    xs = pb.tensor(XS)
    cell(xs).backward()
    eager = [p.grad.numpy().copy() for p in cell.parameters()]
    cell.zero_grad()
    compiled = pb.compile(cell)
    for _ in range(2):
        cell.zero_grad()
        compiled(xs).backward()
        for p, e in zip(cell.parameters(), eager):
            np.testing.assert_allclose(p.grad.numpy(), e, rtol=1e-12)
    assert compiled.cache.info.misses == 1


def test_loops_in_threads() -> None:
    """Four threads tracing and running the same and different loops at once."""
    g = pb.grad(rnn, argnums=1)
    expected = [pb.grad(rnn_unrolled, argnums=1)(XS * k, W) for k in range(8)]
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda k: g(XS * k, W), range(8)))
        roots = list(pool.map(lambda a: pb.grad(newton_sqrt)(a), [2.0, 9.0, 16.0, 25.0]))
    for a, b in zip(got, expected):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(roots, [0.5 / np.sqrt(a) for a in (2.0, 9.0, 16.0, 25.0)],
                               rtol=1e-9)


def test_nan_flows_through_a_loop() -> None:
    """A NaN in one step's input reaches the carry and its gradient, as in numpy."""
    xs = XS.copy()
    xs[2, 1] = np.nan
    value, grad = pb.value_and_grad(rnn, argnums=1)(xs, W)
    assert np.isnan(value) and np.isnan(grad).any()
    assert np.isnan(rnn_unrolled(xs, W))


def test_a_while_loop_inside_a_scan() -> None:
    """A while loop's trip count may differ from step to step of the scan around it: its
    saved carries are not stacked across steps (the reverse body runs it again)."""
    def ws(w):
        def step(c, x):
            v = pb.while_loop(lambda v: v < x, lambda v: v * w + 0.3, 0.0)
            return c + v, None
        return pb.scan(step, 0.0, np.array([1.0, 2.0, 0.5]))[0]

    def unrolled(w):
        c = 0.0
        for x in (1.0, 2.0, 0.5):
            v = 0.0
            while v < x:
                v = v * w + 0.3
            c = c + v
        return c
    assert ws(1.2) == pytest.approx(unrolled(1.2))
    np.testing.assert_allclose(pb.grad(ws)(1.2), fd(unrolled, 1.2), rtol=1e-6)


def test_what_a_reviewer_found() -> None:
    """A body updating its carry in place (eagerly: not into the caller's init or the
    ys of earlier steps, as JAX's immutable values); a body or branch returning a
    number; a switch of one branch; a predicate that is not a scalar."""
    def inplace(w):
        def step(c, x):
            c *= w
            c += x
            return c, c
        init = np.zeros(2)
        c, ys = pb.scan(step, init, np.arange(6.0).reshape(3, 2))
        return ys.sum() + c.sum(), init
    value, init = inplace(1.5)
    assert init.tolist() == [0.0, 0.0]
    assert value == pytest.approx(pb.value_and_grad(lambda w: inplace(w)[0])(1.5)[0])
    np.testing.assert_allclose(pb.grad(lambda w: inplace(w)[0])(1.5),
                               fd(lambda w: inplace(w)[0], 1.5), rtol=1e-6)
    assert pb.grad(lambda w: pb.scan(lambda c, x: (c * w, 0.0), w, XS)[0])(0.9) == \
        pytest.approx(7 * 0.9 ** 6)
    assert pb.grad(lambda w: pb.cond(w > 0, lambda: 0.0, lambda: w))(-1.0) == 1.0
    one = pb.grad(lambda x: pb.switch((x > 0).astype(np.int64), [lambda a: a * 3], x))
    assert one(1.0) == 3.0
    with pytest.raises(TypeError, match="the predicate must be a scalar, got shape"):
        pb.grad(lambda x: pb.cond(x > 0, lambda: x, lambda: 2 * x).sum())(np.ones(1))
