"""Random plain-numpy programs under ``pb.vmap``: the function and its gradient
(``jacrev``) over a batch of inputs agree with a Python loop over the batch, or vmap
raises the clear error the loop raises. Loops writing a table's items (the ``items``
class, drawn on their own) run under jacfwd too, and their item ops never per element.

``PULLBACK_VMAP_FUZZ=1000 python -m pytest tests/fuzz/test_vmap_fuzz.py`` runs more.
"""

from __future__ import annotations

import contextlib
import io
import os
import warnings

import numpy as np
import pytest

import pullback as pb
from pullback.ops.table import batching

from .numpy_oracle import INTERNAL, _exec
from .numpy_programs import ENABLED, generate

N = int(os.environ.get("PULLBACK_VMAP_FUZZ", 100))
N_ITEMS = max(N // 10, 1)
CHUNK = 50
# programs with Python effects (prints, writes into state, rebinding) repeat them per
# example in a loop and once under vmap, by design: they are left out here
CLASSES = ENABLED - {"effects", "rebind", "containers"}


def _batch(prog) -> list:
    return [np.asarray(prog.data(k), dtype=float) for k in (0, 1, 0)]


def _run(fn, *args):
    with contextlib.redirect_stdout(io.StringIO()), np.errstate(all="ignore"):
        return fn(*args)


def _one(seed: int, classes: frozenset = CLASSES) -> str | None:
    prog = generate(seed, classes)
    env: dict = {}
    _exec(prog.source(), env, f"vmap {seed}")  # (its source known: loops convert)
    f = env["f"]
    xs = _batch(prog)
    doors = [("f", f), ("jacrev", pb.jacrev(f))]
    if "items" in classes:
        doors.append(("jacfwd", pb.jacfwd(f)))
    for how, fn in doors:
        try:  # (a program of a Python float: vmap's examples are 0-d arrays, as JAX's)
            want = [np.asarray(_run(fn, x)) for x in xs]
        except Exception:  # noqa: BLE001 - refused per example: vmap may refuse too
            return None
        try:
            got = np.asarray(_run(pb.vmap(fn), np.stack(xs)))
        except Exception as e:  # noqa: BLE001
            if isinstance(e, INTERNAL):
                return f"seed {seed} {how}: internal error {type(e).__name__}: {e}"
            return None
        want = np.stack(want)
        # (float32 programs: a batched sum adds in another order than one example's)
        rtol = 2e-5 if np.float32 in (got.dtype, want.dtype) else 1e-7
        if got.shape != want.shape or not np.allclose(got, want, rtol=rtol, atol=rtol * 1e-2,
                                                      equal_nan=True):
            return (f"seed {seed} {how}: vmap gives {np.round(got, 5)!r}, a loop "
                    f"{np.round(want, 5)!r}\n{prog.source()}")
    return None


@pytest.mark.parametrize("start", range(0, N, CHUNK), ids=lambda s: f"seeds{s}-{s + CHUNK - 1}")
def test_vmap_of_random_programs_agrees_with_a_loop(start: int) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        failures = [m for seed in range(start, min(start + CHUNK, N)) if (m := _one(seed))]
    assert not failures, f"{len(failures)} programs disagree:\n" + "\n\n".join(failures[:3])


def test_vmap_of_random_item_writing_loops(monkeypatch) -> None:
    looped = []

    def counted(op, *args, **params):
        if op.name in ("item", "item_put", "item_add"):
            looped.append(op.name)
        return loop(op, *args, **params)
    loop = batching.loop
    monkeypatch.setattr(batching, "loop", counted)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        failures = [m for seed in range(N_ITEMS) if (m := _one(seed, frozenset({"items"})))]
    assert not failures, f"{len(failures)} programs disagree:\n" + "\n\n".join(failures[:3])
    assert not looped, f"item ops ran once per batch element: {sorted(set(looped))}"
