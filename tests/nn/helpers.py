"""Shared by the nn and optim tests: the same module built in pullback and in torch,
weights copied across, outputs and gradients compared."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

import pullback as pb

RTOL, ATOL = 1e-5, 1e-6


def copy_weights(pb_module: Any, torch_module: Any) -> None:
    """torch's parameters and buffers into the pullback module (load_state_dict)."""
    state = {k: pb.tensor(v.detach().numpy()) for k, v in torch_module.state_dict().items()}
    result = pb_module.load_state_dict(state)
    assert repr(result) == "<All keys matched successfully>"


def arrays(tree: Any) -> list:
    """The arrays of the tensors in a (nested) result, in order."""
    if isinstance(tree, (tuple, list)):
        return [a for t in tree for a in arrays(t)]
    return [tree.detach().numpy()]


def run_both(make: Callable, inputs: list, torch: Any, constants: tuple = ()) -> tuple:
    """Build ``make(lib)`` in both libraries (torch's weights copied), call it on
    ``inputs`` (numpy arrays; those at positions ``constants`` without a gradient),
    backpropagate a fixed random cotangent; return (pb, torch)
    as (outputs, parameter grads by name, input grads)."""
    results = []
    models = [make(pb), make(torch)]
    copy_weights(models[0], models[1])
    for lib, model in zip((pb, torch), models):
        xs = [lib.tensor(a.copy()) if i in constants else
              lib.tensor(a.copy(), requires_grad=True) for i, a in enumerate(inputs)]
        out = model(*xs)
        outs = out if isinstance(out, tuple) else (out,)
        rng = np.random.default_rng(1)
        loss = sum((o * lib.tensor(rng.standard_normal(o.shape).astype(np.float32))).sum()
                   for o in outs)
        loss.backward()
        grads = {k: p.grad.numpy().copy() for k, p in model.named_parameters()}
        xgrads = [None if x.grad is None else x.grad.numpy().copy() for x in xs]
        results.append(([o.detach().numpy().copy() for o in outs], grads, xgrads))
    return results[0], results[1]


def assert_close(a: Any, b: Any, rtol: float = RTOL, atol: float = ATOL) -> None:
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)


def assert_same_run(ours: tuple, theirs: tuple, rtol: float = RTOL, atol: float = ATOL) -> None:
    (outs, grads, xgrads), (touts, tgrads, txgrads) = ours, theirs
    assert len(outs) == len(touts)
    for o, t in zip(outs, touts):
        assert o.shape == t.shape
        assert_close(o, t, rtol, atol)
    assert grads.keys() == tgrads.keys()
    for k in grads:
        assert_close(grads[k], tgrads[k], rtol, atol)
    for g, t in zip(xgrads, txgrads):
        assert (g is None) == (t is None)
        if g is not None:
            assert_close(g, t, rtol, atol)
