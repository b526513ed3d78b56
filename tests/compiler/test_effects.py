"""Random draws, prints and logging inside transformed functions happen on every call,
in program order, with that call's values, as in eager code (compiler/effects.py)."""

import logging

import numpy as np
import pytest

import pullback as pb
from pullback.compiler.user_lines import TraceError

X = np.array([0.5, -1.0, 2.0])


def noisy(rs):
    draw = rs.standard_normal if isinstance(rs, np.random.Generator) else rs.randn

    def f(x):
        e = draw(3)
        return (x * x * e).sum()
    return f


def eager_grads(make, n):
    """Gradients of n calls of ``make(generator)``'s function, run eagerly."""
    f = make()
    out = []
    for _ in range(n):
        t = pb.tensor(X, requires_grad=True)
        f(t).backward()
        out.append(t.grad.numpy())
    return out


def standard(gen, n):
    return gen.standard_normal(n) if isinstance(gen, np.random.Generator) else gen.randn(n)


def run_door(door, f, n):
    if door == "compile":
        cf = pb.compile(f)
        out = []
        for _ in range(n):
            t = pb.tensor(X, requires_grad=True)
            cf(t).backward()
            out.append(t.grad.numpy())
        return out, cf.cache.info.misses
    g = pb.grad(f) if door == "grad" else pb.value_and_grad(f)
    out = [g(X) if door == "grad" else g(X)[1] for _ in range(n)]
    return out, g.cache.info.misses


@pytest.mark.parametrize("new", [lambda: np.random.RandomState(3),
                                 lambda: np.random.default_rng(3)])
@pytest.mark.parametrize("door", ["grad", "compile", "value_and_grad"])
def test_draws_are_fresh_and_the_same_stream_as_eager(new, door):
    want = eager_grads(lambda: noisy(new()), 4)
    rs = new()
    got, misses = run_door(door, noisy(rs), 4)
    assert misses == 1
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    after = new()
    standard(after, 12)
    np.testing.assert_array_equal(standard(rs, 2), standard(after, 2))  # advanced as eager


def test_one_grad_function_draws_anew_each_call_and_traces_once():
    rs = np.random.RandomState(0)
    g = pb.grad(noisy(rs))
    a, b = g(X), g(X)
    assert not np.allclose(a, b)
    assert g.cache.info.misses == 1


def test_numpy_global_generator_and_unused_draws_advance_as_in_eager():
    def f(x):
        np.random.rand(5)  # unused: eager code still draws it
        return (x * np.random.randn(3)).sum()

    np.random.seed(7)
    ref = np.random.RandomState(7)
    for _ in range(3):
        ref.rand(5)
        np.testing.assert_allclose(pb.grad(f)(X), ref.randn(3), rtol=1e-12)


def test_pullbacks_own_draws_keep_the_stream_on_the_call_that_traces():
    def f(x):
        return (x * pb.randn(3, dtype=pb.float64)).sum()

    pb.manual_seed(5)
    eager = []
    for _ in range(3):
        t = pb.tensor(X, requires_grad=True)
        f(t).backward()
        eager.append(t.grad.numpy())
    pb.manual_seed(5)
    cf = pb.compile(f)
    for want in eager:
        t = pb.tensor(X, requires_grad=True)
        cf(t).backward()
        np.testing.assert_allclose(t.grad.numpy(), want, rtol=1e-12)


def test_normal_and_uniform_are_differentiable_in_their_parameters():
    """Black-box VI's reparameterisation: gen.normal(mu, sigma) of traced values."""
    def elbo(params, gen):
        mu, log_sigma = params[:2], params[2:]
        z = gen.normal(mu, np.exp(log_sigma), size=(4, 2))
        u = gen.uniform(mu, mu + 1.0)
        return -((z - 1.0) ** 2).sum() + u.sum()

    p = np.array([0.1, -0.2, 0.3, -0.4])
    got = pb.grad(lambda q: elbo(q, np.random.default_rng(1)))(p)
    eps = 1e-6
    fd = [(elbo(p + eps * e, np.random.default_rng(1)) -
           elbo(p - eps * e, np.random.default_rng(1))) / (2 * eps) for e in np.eye(4)]
    np.testing.assert_allclose(got, fd, rtol=1e-6)


def test_a_draw_differentiable_in_no_parameter_names_itself():
    gen = np.random.default_rng(0)
    with pytest.raises(TypeError, match=r"Generator.gamma: a value that needs a gradient"):
        pb.grad(lambda x: gen.gamma(x).sum())(X + 2)


def test_shuffle_inside_a_trace_is_refused_with_the_alternative():
    rs = np.random.RandomState(0)
    idx = np.arange(3)

    def f(x):
        rs.shuffle(idx)
        return (x * x).sum()

    with pytest.raises(TraceError, match=r"RandomState.shuffle .* use RandomState.permutation"):
        pb.compile(f)(pb.tensor(X, requires_grad=True))


def test_shuffle_of_a_drawn_array_is_refused_with_the_alternative():
    """(found writing samples/bbvi.py: it took the reparameterised-draw path)"""
    rs = np.random.RandomState(0)

    def f(x):
        eps = rs.randn(4, 3)
        rs.shuffle(eps)
        return (x * eps).sum()

    with pytest.raises(TraceError, match=r"RandomState.shuffle .* use RandomState.permutation"):
        pb.grad(f)(X)


def test_create_graph_through_compiled_draws_uses_the_forwards_draws():
    rs = np.random.RandomState(2)
    cf = pb.compile(noisy(rs))
    e = np.random.RandomState(2).randn(3)
    t = pb.tensor(X, requires_grad=True)
    (g,) = pb.autograd.grad(cf(t), t, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), 2 * X * e, rtol=1e-12)
    (h,) = pb.autograd.grad(g.sum(), t)
    np.testing.assert_allclose(h.numpy(), 2 * e, rtol=1e-12)


# ---------------------------------------------------------------- prints, logging
def loss_printing(x):
    loss = (x * x).sum()
    print("loss", loss)
    print(f"item {loss.item():.2f} {float(loss)!r:>6}", end="|\n")
    print("pct %.1f" % loss)  # noqa: UP031 - the % spelling is what is tested
    return loss


@pytest.mark.parametrize("door", ["grad", "compile"])
def test_prints_run_on_every_call_with_that_calls_values(door, capsys):
    run = pb.grad(loss_printing) if door == "grad" else pb.compile(loss_printing)
    for k in (1.0, 2.0):
        arg = X * k if door == "grad" else pb.tensor(X * k, requires_grad=True)
        run(arg)
    out = capsys.readouterr().out.splitlines()
    if door == "grad":
        assert out == ["loss 5.25", "item 5.25   5.25|", "pct 5.2",
                       "loss 21.0", "item 21.00   21.0|", "pct 21.0"]
    else:
        assert out[0].startswith("loss tensor(5.2500") and out[3].startswith("loss tensor(21.")
        assert out[1::3] == ["item 5.25   5.25|", "item 21.00   21.0|"]
    assert run.cache.info.misses == 1  # .item() in a print is no guard


def test_generated_code_prints_as_written():
    info = pb.compiler.inspect(pb.grad(loss_printing), X)
    assert "print('loss', loss)" in info.forward


def test_logging_runs_each_call(caplog):
    log = logging.getLogger("pullback-test-effects")

    def f(x):
        loss = (x * x).sum()
        log.info("loss %.2f", loss)
        logging.getLogger("pullback-test-effects").warning(f"w {loss.item():.1f}")
        return loss

    g = pb.grad(f)
    with caplog.at_level(logging.INFO, logger="pullback-test-effects"):
        g(X)
        g(2 * X)
    assert [r.getMessage() for r in caplog.records] == ["loss 5.25", "w 5.2",
                                                        "loss 21.00", "w 21.0"]


def test_debug_print_without_source(capsys):
    g = pb.grad(eval("lambda x: pb.debug.print('x={} n={n}', x, n=2) or (x * x).sum()",
                     {"pb": pb}))
    g(X)
    g(X + 1)
    assert capsys.readouterr().out.splitlines() == ["x=[ 0.5 -1.   2. ] n=2",
                                                    "x=[1.5 0.  3. ] n=2"]


def test_prints_and_draws_keep_program_order(capsys):
    rs = np.random.RandomState(0)

    def f(x):
        print("before")
        e = rs.randn(3)
        print("drew", e)
        return (x * e).sum()

    g = pb.grad(f)
    g(X)
    g(X)
    ref = np.random.RandomState(0)
    want = []
    for _ in range(2):
        want += ["before", f"drew {ref.randn(3)}"]
    assert capsys.readouterr().out.splitlines() == want
