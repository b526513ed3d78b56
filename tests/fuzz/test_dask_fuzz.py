"""Random plain-numpy programs on Dask arrays: ``pb.value_and_grad`` and ``pb.compile`` of
each program, its input a chunked Dask array, agree with the same doors on the numpy
array (whose answers test_numpy_fuzz.py checks against numpy and finite differences),
or raise a clear error (a program Dask cannot run: never an internal one). Nothing is
computed at the call: the scheduler refuses until the results are computed together.

``PULLBACK_DASK_FUZZ=1000 python -m pytest tests/fuzz/test_dask_fuzz.py`` runs more.
"""

from __future__ import annotations

import contextlib
import io
import warnings
from dataclasses import replace

import numpy as np
import pytest

import pullback as pb

from .numpy_oracle import INTERNAL, _exec
from .numpy_programs import ENABLED, generate
from .seeds import chunk_id, chunks

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")

N_DEFAULT = 60
# effects and rebind change Python state per call; a program of a Python float has no
# array to chunk
CLASSES = ENABLED - {"effects", "rebind"}


def _refuse(*args, **kwargs):
    raise AssertionError("a Dask array was computed inside pullback")


def _doors(f) -> dict:
    return {"value_and_grad": pb.value_and_grad(f), "compile": pb.compile(f)}


def _results(out) -> list:
    leaves = list(out) if isinstance(out, tuple) else [out]
    return [np.asarray(v.numpy() if isinstance(v, pb.Tensor) else v) for v in leaves]


def _one(seed: int) -> str | None:
    prog = replace(generate(seed, CLASSES), door="value_and_grad", out_t=False)
    if prog.scalar:
        return None
    env: dict = {}
    _exec(prog.source(), env, f"dask {seed}")
    x = np.array(prog.data(0), order="C")
    lazy = da.from_array(x, chunks=max(1, x.shape[0] // 2) if x.ndim else ())
    for how, door in _doors(env["f"]).items():
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                want = _results(door(x))
        except Exception:  # noqa: BLE001 - refused on numpy: not compared
            return None
        try:
            with contextlib.redirect_stdout(io.StringIO()), \
                    dask.config.set(scheduler=_refuse):
                out = door(lazy)
            got = _results(dask.compute(out, scheduler="sync")[0])
        except Exception as e:  # noqa: BLE001 - a clear refusal is allowed
            if isinstance(e, INTERNAL) or isinstance(e, AssertionError):
                return f"seed {seed} {how}: {type(e).__name__}: {e}\n{prog.source()}"
            return None
        for k, (g, w) in enumerate(zip(got, want)):
            # (float32 inside: a chunked sum adds in another order than numpy's)
            rtol = 2e-5 if "f32" in prog.tol or np.float32 in (g.dtype, w.dtype) else 1e-9
            if g.shape != w.shape or g.dtype != w.dtype or not np.allclose(
                    g, w, rtol=rtol, atol=rtol, equal_nan=True):
                return (f"seed {seed} {how}, result {k}: on Dask {g.dtype}{g.shape} "
                        f"{np.round(g, 5).ravel()[:6]}, on numpy {w.dtype}{w.shape} "
                        f"{np.round(w, 5).ravel()[:6]}\n{prog.source()}")
    return None


@pytest.mark.parametrize("seeds", chunks("PULLBACK_DASK_FUZZ", N_DEFAULT), ids=chunk_id)
def test_random_programs_on_dask_arrays_agree_with_numpy_arrays(seeds) -> None:
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        failures = [m for seed in seeds if (m := _one(seed))]
    assert not failures, f"{len(failures)} programs disagree:\n" + "\n\n".join(failures[:3])
