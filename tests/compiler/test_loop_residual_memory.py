"""loop_residuals keeps what the reverse loop needs and nothing the forward holds twice:
a tanh RNN's reverse loop computes ``1 - h * h`` again from the stacked ``h`` (the next
step's carry, arrays the forward keeps anyway) instead of stacking a new array per step."""

from __future__ import annotations

import tracemalloc

import numpy as np

import pullback as pb
from pullback.compiler import cache

STEPS, BATCH, HIDDEN = 30, 32, 32


def rnn(wx, wh, xs, h):
    for t in range(xs.shape[0]):
        h = pb.tanh(xs[t] @ wx + h @ wh)
    return (h * h).mean()


def _inputs():
    rng = np.random.default_rng(0)
    w = rng.standard_normal((2, HIDDEN, HIDDEN)) * 0.3
    return w[0], w[1], rng.standard_normal((STEPS, BATCH, HIDDEN)), np.zeros((BATCH, HIDDEN))


def test_the_forward_loop_stacks_the_tanh_outputs_and_the_reverse_computes_1_minus_h2():
    cache.reset()
    args = _inputs()
    vg = pb.value_and_grad(rnn, argnums=(0, 1))
    value, grads = vg(*args)
    forward_loop, reverse_loop = pb.compiler.inspect(vg, *args).forward.split("for i_1")
    assert "1 - " not in forward_loop and "1 - " in reverse_loop
    wx, wh = (pb.tensor(w, requires_grad=True) for w in args[:2])
    loss = rnn(wx, wh, pb.tensor(args[2]), pb.tensor(args[3]))  # eager
    loss.backward()
    np.testing.assert_allclose(value, loss.item(), rtol=1e-12)
    for g, w in zip(grads, (wx, wh)):
        np.testing.assert_allclose(g, w.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_its_peak_memory_is_one_hidden_state_per_step_and_a_little():
    cache.reset()
    args = _inputs()
    vg = pb.value_and_grad(rnn, argnums=(0, 1))
    vg(*args)
    tracemalloc.start()
    try:
        vg(*args)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    h = BATCH * HIDDEN * 8
    # measured: 44 h; 72 h when the forward stacked 1 - h * h too
    assert peak < (STEPS + 20) * h
