"""Tracing, the trace cache and the replay cache under threads: a trace records its own
thread's ops only, cache updates are locked, and a variant one thread traced is the
one the others run. Overlap is forced with Events and Barriers, never with sleeps."""

import sys
import threading

import numpy as np
import pytest

import pullback as pb
from pullback import config
from pullback.compiler import replay
from pullback.compiler.source import parsing

N_THREADS = 8
TIMEOUT = 60  # seconds: a deadlock fails the test instead of hanging it


@pytest.fixture(autouse=True)
def switch_often():
    """Threads take turns every microsecond (not every 5 ms), so that they interleave
    inside traces and cache updates: the old races showed up on every run."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(old)


def run_threads(target, n: int = N_THREADS) -> None:
    """Run ``target(k)`` in ``n`` threads; re-raise the first exception any of them hit."""
    errors = []

    def body(k):
        try:
            target(k)
        except BaseException as e:  # noqa: BLE001 - reported in the main thread
            errors.append(e)

    threads = [threading.Thread(target=body, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT)
    assert not any(t.is_alive() for t in threads), "a thread did not finish"
    if errors:
        raise errors[0]


def cube_sum(x):
    """sum(x^3) / 3: value and gradient (x^2) in closed form."""
    return (x * x * x).sum() / 3


def check_cube(x: np.ndarray, value, grad) -> None:
    np.testing.assert_allclose(float(value), (x ** 3).sum() / 3, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(grad), x ** 2, rtol=1e-5)


def data(n: int, k: int) -> np.ndarray:
    return np.linspace(-1.0, 1.0 + k, n).astype(np.float32)


def compiled_call(f, x: np.ndarray) -> tuple:
    t = pb.tensor(x, requires_grad=True)
    out = f(t)
    out.backward()
    return out.item(), t.grad.numpy()


def test_eight_threads_trace_and_call_one_function():
    """New shapes traced while other threads run cached ones; shapes shared between
    threads are traced once. A small cache evicts while others hit."""
    f = pb.compile(cube_sum, maxsize=3)
    vg = pb.value_and_grad(cube_sum)
    start = threading.Barrier(N_THREADS, timeout=TIMEOUT)

    def work(k):
        start.wait()
        for r in range(12):
            x = data(1 + (k + r) % 6, k)
            check_cube(x, *compiled_call(f, x))
            check_cube(x.astype(np.float64), *vg(x.astype(np.float64)))

    run_threads(work)
    info = f.cache.info
    assert info.fallbacks == 0 and info.recompiles == 0
    assert info.hits + info.misses == N_THREADS * 12
    assert info.size <= 3
    g = pb.compile(cube_sum)  # no evictions: every shape is traced exactly once
    run_threads(lambda k: [check_cube(data(1 + r % 6, 0), *compiled_call(g, data(1 + r % 6, 0)))
                           for r in range(6)])
    assert (g.cache.info.misses, g.cache.info.hits) == (6, N_THREADS * 6 - 6)


def test_eight_traces_at_once_record_only_their_own_thread():
    """Each thread's trace waits on a Barrier inside the traced function, so all eight
    traces are open together; each records its own ops, and no others."""
    inside = threading.Barrier(N_THREADS, timeout=TIMEOUT)

    def make(k):
        def f(x):
            y = x * (k + 1)
            inside.wait()  # Python code: it runs while tracing, not in generated code
            return (y * y).sum()
        return pb.compile(f)

    fns = [make(k) for k in range(N_THREADS)]

    def work(k):
        x = data(k + 2, k)
        t = pb.tensor(x, requires_grad=True)
        out = fns[k](t)
        out.backward()
        c = k + 1
        np.testing.assert_allclose(out.item(), (c * c * x * x).sum(), rtol=1e-5)
        np.testing.assert_allclose(t.grad.numpy(), 2 * c * c * x, rtol=1e-5)
        assert len(fns[k].cache.variants()[0].traced.graph.eqns) == 3  # mul, mul, sum

    run_threads(work)


def test_eager_work_and_grad_in_another_thread_while_a_trace_is_open():
    """The cases that leaked into another thread's trace: an in-place update under
    no_grad, eager autograd, pb.grad returning arrays, and another trace."""
    inside, resume = threading.Event(), threading.Event()
    p = pb.tensor([1.0, 2.0])

    @pb.compile
    def f(x):
        y = x * 2
        inside.set()
        assert resume.wait(TIMEOUT)
        return (y * y).sum()

    other = {}

    def meanwhile():
        assert inside.wait(TIMEOUT)
        with pb.no_grad():
            p.add_(1)  # raised "in-place add_() on a tensor captured ..." in f's trace
        w = pb.tensor([3.0, 4.0], requires_grad=True)
        (w * w).sum().backward()
        other["w_grad"] = w.grad.numpy()
        other["grad"] = pb.grad(cube_sum)(np.array([1.0, 2.0]))
        other["compiled"] = compiled_call(pb.compile(cube_sum), np.array([1.0, 3.0], "f4"))
        resume.set()

    helper = threading.Thread(target=meanwhile)
    helper.start()
    x = pb.tensor([1.0, 2.0, 3.0], requires_grad=True)
    out = f(x)
    helper.join(TIMEOUT)
    out.backward()
    np.testing.assert_allclose(x.grad.numpy(), [8.0, 16.0, 24.0])
    assert out.item() == 56.0
    assert len(f.cache.variants()[0].traced.graph.eqns) == 3
    assert p.tolist() == [2.0, 3.0]
    np.testing.assert_allclose(other["w_grad"], [6.0, 8.0])
    assert type(other["grad"]) is np.ndarray  # was a Tensor with a grad_fn
    np.testing.assert_allclose(other["grad"], [1.0, 4.0])
    check_cube(np.array([1.0, 3.0]), *other["compiled"])


def power_backward(k: int, depth: int) -> None:
    """x^(depth+1) summed, backward eagerly: the gradient is (depth+1) x^depth."""
    x0 = data(4, k)
    x = pb.tensor(x0, requires_grad=True)
    y = x
    for _ in range(depth):
        y = y * x
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), (depth + 1) * x0 ** depth, rtol=1e-5)


@pytest.fixture
def fresh_replay():
    replay.clear()
    yield
    replay.clear()


@pytest.mark.usefixtures("fresh_replay")
def test_replay_builds_a_structure_once_for_all_threads():
    """One graph structure, backward in eight threads at once: one sighting is
    interpreted, one thread builds its code, every other backward runs it."""
    start = threading.Barrier(N_THREADS, timeout=TIMEOUT)
    rounds = 10

    def work(k):
        start.wait()
        for _ in range(rounds):
            power_backward(k, 2)

    run_threads(work)
    assert replay.STATS == {"interpreted": 1, "built": 1, "cached": N_THREADS * rounds - 2}


@pytest.mark.usefixtures("fresh_replay")
def test_replay_cache_evicting_under_threads_counts_every_backward(monkeypatch):
    """Three structures and room for two: entries are evicted while other threads
    look them up; gradients stay right and every backward is counted once."""
    monkeypatch.setattr(config, "replay_cache_size", 2)
    start = threading.Barrier(N_THREADS, timeout=TIMEOUT)
    rounds = 10

    def work(k):
        start.wait()
        for r in range(rounds):
            power_backward(k, 1 + (k + r) % 3)

    run_threads(work)
    assert sum(replay.STATS.values()) == N_THREADS * rounds


class _Cycle:
    """Garbage only the cycle collector frees; its finalizer runs Python code, which is
    where the interpreter switches threads, even in the middle of a C function."""

    def __init__(self):
        self.me = self

    def __del__(self):
        sum(range(50))


def test_threads_converting_source_at_once_do_not_share_the_ast_depth():
    """CPython keeps one AST depth counter per interpreter: a thread switch inside a
    collection during one thread's parse let another thread's parse change it
    ("SystemError: AST constructor recursion depth mismatch", once in CI). The
    source pass parses and compiles under one lock."""
    codes = [f.__code__ for f in (cube_sum, check_cube, data, run_threads)]

    def work(k):
        for _ in range(40):
            for _ in range(100):
                _Cycle()
            for code in codes:
                node = parsing.parse_function(code)
                assert node is not None and node.name == code.co_name

    run_threads(work)
