"""The generated code of loops reads like hand-written numpy: item writes in place,
``np.full`` for a filled table, stacked steps and gradient sums named after the user's
values, a while body that reads what its condition computed."""

import re
import warnings

import numpy as np
from pullback.transforms.codegen_loop_facts import REGION_OPS
from pullback.transforms.codegen_regions import REGIONS

import pullback as pb

from .test_loop_writes import soft_dtw


def rnn(xs, h, W):
    for t in range(xs.shape[0]):
        h = np.tanh(xs[t] @ W + h)
    return h.sum()


def newton(x, a):
    y = x
    while np.abs(y * y - a).max() > 1e-6:
        y = y - (y * y - a) / (2 * y)
    return (y * x).sum()


RNG = np.random.default_rng(0)


def _code(fn, *args):
    info = pb.compiler.inspect(pb.compile(fn), *[pb.tensor(a).requires_grad_() for a in args])
    return info.forward, info.backward


def test_soft_dtw_writes_its_table_in_place_and_names_its_steps() -> None:
    D = RNG.random((3, 4))
    fwd, bwd = _code(soft_dtw, D)
    assert "R = np.full((4, 5), np.inf, np.float64)" in fwd
    assert "R[0, 0] = 0.0" in fwd
    assert "index_put" not in fwd and ".copy()" not in fwd and "R[0, 0]\n" not in fwd
    assert "i_steps" in fwd and "scan" not in fwd
    assert "g_D_sum = np.zeros_like(D)" in bwd and re.search(r"\bsum_", bwd) is None
    # the table keeps its name through both loops; the inner loop adds into g_D_sum,
    # so no zeros are made for a sum of its own
    assert re.search(r"\bR_\d", fwd) is None and bwd.count("np.zeros_like(D)") == 1
    g = pb.grad(soft_dtw)(D)
    assert "zeros_like" not in pb.compiler.inspect(pb.grad(soft_dtw), D).forward.replace(
        "g_D_sum = np.zeros_like(D)", "")
    eps, want = 1e-6, np.zeros_like(D)
    for k in np.ndindex(D.shape):
        d = np.zeros_like(D)
        d[k] = eps
        want[k] = (soft_dtw(D + d) - soft_dtw(D - d)) / (2 * eps)
    np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-8)


def test_rnn_sums_its_weight_gradient_by_name() -> None:
    xs, h = RNG.standard_normal((5, 2, 3)), RNG.standard_normal((2, 3))
    W = RNG.standard_normal((3, 3))
    _, bwd = _code(rnn, xs, h, W)
    assert "g_W_sum = np.zeros_like(W)" in bwd and "g_W_sum += " in bwd
    assert "return g_xs, g_h, g_W_sum" in bwd.replace("g_h_1", "g_h")


def test_while_body_reads_what_its_condition_computed() -> None:
    x, a = RNG.random(3) + 1, RNG.random(3) + 2
    fwd, _ = _code(newton, x, a)
    statements = [line for line in fwd.splitlines() if not line.strip().startswith("#")]
    assert sum("y * y" in line for line in statements) == 1
    assert "y_steps" in fwd and "while_" not in fwd
    y = x.copy()
    while np.abs(y * y - a).max() > 1e-6:
        y = y - (y * y - a) / (2 * y)
    np.testing.assert_allclose(pb.compile(newton)(pb.tensor(x), pb.tensor(a)).item(),
                               (y * x).sum(), rtol=1e-12)


def test_export_writes_no_unread_constant(tmp_path) -> None:
    path = tmp_path / "dtw.py"
    pb.export(soft_dtw, RNG.random((3, 4)), path=str(path))
    text = path.read_text()
    assert "np.full((4, 5), np.inf, np.float64)" in text and "[np.inf, np.inf" not in text


def test_loops_running_one_body_keep_their_own_last_values() -> None:
    # vmap's fallback runs one loop per batch element, all with the same body: their
    # last values are not called by the body's carry name (each loop binds it again)
    def f(x):
        return np.stack([np.sum(pb.fori_loop(0, 0, lambda i, v: np.cos(v) * v, x))])

    xs = RNG.standard_normal((3, 4))
    with warnings.catch_warnings():  # (vmap says once per process that scan loops)
        warnings.simplefilter("ignore", UserWarning)
        got = pb.vmap(f)(xs)
    np.testing.assert_allclose(np.ravel(got), xs.sum(axis=1))


def test_the_region_ops_loop_naming_knows_are_those_codegen_writes() -> None:
    assert set(REGION_OPS) == set(REGIONS)


def kalman_nll(params, ys):
    a, q, r = params[0], np.exp(params[1]), np.exp(params[2])
    m, P, nll = 0.0, 1.0, 0.0
    for t in range(ys.shape[0]):
        m_pred, P_pred = a * m, a * a * P + q
        S = P_pred + r
        K, v = P_pred / S, ys[t] - m_pred
        nll = nll + 0.5 * (np.log(2 * np.pi * S) + v * v / S)
        m, P = m_pred + K * v, (1 - K) * P_pred
    return nll


def test_a_number_summed_over_steps_is_summed_as_a_number() -> None:
    """A 0-d running sum is rebound (``g_a_sum = g_a_sum + g_a``): numpy's in-place add
    on a 0-d array costs ~20x an add of numbers, and a scalar loop does little else."""
    params, ys = np.array([0.9, -1.0, -0.5]), RNG.standard_normal(30)
    code = pb.compiler.inspect(pb.grad(kalman_nll), params, ys).forward
    assert "g_a_sum = g_a_sum + g_a" in code and "_sum +=" not in code
    eps, want = 1e-6, np.zeros(3)
    for k in range(3):
        d = np.zeros(3)
        d[k] = eps
        want[k] = (kalman_nll(params + d, ys) - kalman_nll(params - d, ys)) / (2 * eps)
    np.testing.assert_allclose(pb.grad(kalman_nll)(params, ys), want, rtol=1e-6)


def test_soft_dtw_on_a_table_large_enough_to_free_runs() -> None:
    """Its dead zeros are neither written nor freed (``del`` of a name never bound raised
    UnboundLocalError from 32x32 up, where the backward frees its large values)."""
    D = RNG.random((32, 32))
    value, g = pb.value_and_grad(soft_dtw)(D)
    np.testing.assert_allclose(value, soft_dtw(D), rtol=1e-12)
    d = np.zeros_like(D)
    d[5, 7] = 1e-6
    want = (soft_dtw(D + d) - soft_dtw(D - d)) / 2e-6
    np.testing.assert_allclose(g[5, 7], want, rtol=1e-5, atol=1e-9)
