"""A front door's outputs are freed as soon as the caller drops them, by reference
counting alone: nothing the door builds around a call (the output tree put back
together) is a reference cycle that would keep each call's arrays alive until the
cyclic garbage collector happens to run (vmap's per-sample gradients are megabytes a
call: memory swung by hundreds of MB and each call paid page faults)."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import pullback as pb


def loss(p, x):
    return np.tanh(x @ p["w"]).sum() + (p["b"] ** 2).sum()


def _doors():
    return {
        "vmap(grad)": pb.vmap(pb.grad(loss), in_axes=(None, 0)),
        "grad": pb.grad(loss),
        "compile": pb.compile(lambda p, x: {"h": np.tanh(x @ p["w"]), "b": p["b"] * 2}),
    }


@pytest.mark.parametrize("name", list(_doors()))
def test_outputs_die_with_their_last_reference(name):
    door = _doors()[name]
    p = {"w": np.ones((3, 2)), "b": np.ones(2)}
    x = np.ones((4, 3))
    door(p, x)  # (the first call builds the variant)
    was = gc.isenabled()
    gc.disable()
    try:
        out = door(p, x)
        refs = [weakref.ref(a) for a in pb.tree_leaves(out)]  # (arrays or Tensors)
        assert refs
        del out
        assert [r() for r in refs] == [None] * len(refs)
    finally:
        if was:
            gc.enable()
