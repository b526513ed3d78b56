"""The persistent-cache family: random programs run by a later process from the cache.

For a chunk of seeds of a family (numpy_programs.py's, each through one door from
``pb.grad`` to ``pb.hessian``, and ``pb.compile``; or generator.py's torch-name programs
on Tensors, through ``pb.value_and_grad`` and ``pb.compile`` then ``.backward()``; or
disk_modules.py's random models, two per program, one hyperparameter apart),
``check_chunk`` writes every program as a module of its own in a folder, then runs two
fresh interpreters on one ``PULLBACK_CACHE_DIR``:

- the writer calls each program on the values of call 0, then of call 1, tracing and
  writing the cache;
- the reader calls them in the other order, call 1 first: a later process's first call
  runs the code the writer kept for call 0's values (the same shapes), so a value the
  code baked in, or a variant found under another key, gives another result.

They agree when every result (values, derivatives, dtypes) is the writer's within
``RTOL`` (the same generated code runs on both sides) and every call that raised in one
raised the same type in the other (never an internal error: ``INTERNAL``). The reader
must find variants in the cache: a run where it found none fails (nothing was tested).
The numpy fuzz (test_numpy_fuzz.py) checks the writer's own answers against numpy and
finite differences.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import subprocess
import sys
import tempfile
import traceback
import warnings
from collections import Counter

import numpy as np

import pullback as pb
from pullback.compiler import disk_variants

from .disk_modules import model_source
from .disk_modules import runs as module_runs
from .generator import generate as generate_torch
from .numpy_oracle import INTERNAL as _INTERNAL
from .numpy_oracle import make_door
from .numpy_programs import CLASSES, generate

#: effects and rebind change Python state between calls, which a kept variant refuses
CLASSES_KEPT = frozenset(CLASSES) - {"effects", "rebind"}
RTOL = {"float64": 1e-12, "float32": 1e-6}
#: an error no user can act on, from either process (a defect, as in the other fuzzers;
#: not IndexError, which torch's names raise for an empty reduction, as torch does)
INTERNAL = tuple(f"{e.__name__}:" for e in _INTERNAL if e is not IndexError)
STATS: Counter = Counter()
HERE = os.path.dirname(os.path.abspath(__file__))


# ------------------------------------------------------------------- the programs
TORCH_HEAD = ("import pullback as T\nimport pullback.nn.functional as F\n"
              "from pullback import scan\n\n")
TORCH_TAIL = ("\n\ndef objective(*args):\n    outs = f(*args)\n"
              "    if isinstance(outs, tuple):\n"
              "        return outs[0] + (outs[1] * outs[1]).sum()\n    return outs\n")


def source(family: str, seed: int) -> str:
    """Program ``seed``'s module: the numpy family's ``f``, or the torch-name family's
    ``f`` and its ``objective`` (the loss, plus the second output's squares)."""
    if family == "numpy":
        return generate(seed, CLASSES_KEPT).source()
    if family == "modules":
        return model_source(seed)
    return TORCH_HEAD + generate_torch(seed).source() + TORCH_TAIL


def numpy_runs(seed: int, module) -> dict:
    """name -> (k -> results): the program's door on x_k, and pb.compile of ``f``."""
    prog = generate(seed, CLASSES_KEPT)
    door, compiled = make_door(prog.door, module.f), pb.compile(module.f)
    return {"door": lambda k: _results(door, prog.data(k)),
            "compile": lambda k: [np.asarray(compiled(prog.data(k)))]}


def torch_runs(seed: int, module) -> dict:
    """name -> (k -> results): pb.value_and_grad of the objective over the float
    inputs, and pb.compile of it then ``.backward()`` (a compiled function's backward
    from the cache) on Tensors."""
    prog = generate_torch(seed)
    pos = tuple(j for j, i in enumerate(prog.inputs) if i.kind == "x")
    door = pb.value_and_grad(module.objective, argnums=pos) if pos else None
    compiled = pb.compile(module.objective)
    tensors = lambda k: [pb.from_numpy(np.array(v)) for v in prog.data(k).values()]  # noqa: E731

    def backward(k: int) -> list:
        args = tensors(k)
        for j in pos:
            args[j].requires_grad_()
        out = compiled(*args)
        if pos and out.requires_grad:
            out.backward()
        return [out.detach().numpy()] + [
            np.asarray("no grad" if args[j].grad is None else args[j].grad.numpy())
            for j in pos]
    runs = {"compile": backward}
    if door is not None:
        runs["door"] = lambda k: _results(door, tensors(k))
    return runs


FAMILIES = {"numpy": numpy_runs, "torch": torch_runs, "modules": module_runs}


def _results(door, x) -> list:
    """The door's value and derivatives on ``x`` (one value, or the torch family's list
    of arguments) as arrays (an absent gradient as the string "None")."""
    if isinstance(x, list):
        value, got = door(*x)
    else:
        value, got = door(x)
    flat = [] if value is None else [value]
    flat += list(got) if isinstance(got, (tuple, list)) else [got]
    return [np.asarray("None" if v is None else v.numpy() if isinstance(v, pb.Tensor)
                       else v) for v in flat]


# ----------------------------------------------------------------- the two processes
def run_phase(family: str, folder: str, seeds: list, order: tuple) -> dict:
    """In a fresh interpreter: each program's runs on the values of the calls in
    ``order``; results saved per seed as ``<seed>.<order[0]>.npz``."""
    report: dict = {"results": {}}
    for seed in seeds:
        spec = importlib.util.spec_from_file_location(f"p{seed}", os.path.join(
            folder, f"p{seed}.py"))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        runs = FAMILIES[family](seed, module)
        got: dict = {}
        for k in order:
            for name, run in runs.items():
                try:
                    with contextlib.redirect_stdout(io.StringIO()):
                        got[f"{name}{k}"] = run(k)
                except Exception as e:  # noqa: BLE001 - compared with the other side
                    got[f"{name}{k}"] = f"{type(e).__name__}: {e}"
        report["results"][seed] = {
            key: v if isinstance(v, str) else len(v) for key, v in got.items()}
        np.savez(os.path.join(folder, f"{seed}.{order[0]}.npz"), **{
            f"{key}_{j}": a for key, v in got.items() if not isinstance(v, str)
            for j, a in enumerate(v)})
    report["hits"] = disk_variants.STATS["hits"]
    return report


def _phase(family: str, folder: str, seeds: list, order: tuple) -> dict:
    env = dict(os.environ, PULLBACK_CACHE_DIR=os.path.join(folder, "cache"),
               PYTHONPATH=os.path.dirname(HERE))
    script = ("import json, sys, warnings\nwarnings.simplefilter('ignore')\n"
              "import numpy as np\nnp.seterr(all='ignore')\n"
              "from fuzz.disk_oracle import run_phase\n"
              "print(json.dumps(run_phase(sys.argv[1], sys.argv[2], "
              "json.loads(sys.argv[3]), tuple(json.loads(sys.argv[4])))))")
    out = subprocess.run([sys.executable, "-c", script, family, folder, json.dumps(seeds),
                          json.dumps(order)], env=env, capture_output=True, text=True,
                         timeout=600, cwd=folder)
    if out.returncode != 0:
        raise RuntimeError(f"the {order} process failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.splitlines()[-1])


def _differ(a: np.ndarray, b: np.ndarray) -> str | None:
    if a.shape != b.shape or a.dtype != b.dtype:
        return f"{a.dtype}{a.shape}, the writer's {b.dtype}{b.shape}"
    if a.dtype.kind not in "fc":
        return None if np.array_equal(a, b) else f"{a.ravel()[:6]} != {b.ravel()[:6]}"
    rtol = RTOL.get(a.dtype.name, 1e-6)
    if np.allclose(a, b, rtol=rtol, atol=rtol, equal_nan=True):
        return None
    return f"{a.ravel()[:6]}, the writer's {b.ravel()[:6]}"


def compare(folder: str, seed: int, writer: dict, reader: dict) -> str | None:
    """The first disagreement between the reader's results for ``seed`` and the
    writer's."""
    with np.load(os.path.join(folder, f"{seed}.0.npz")) as w, \
            np.load(os.path.join(folder, f"{seed}.1.npz")) as r:
        for key, said in writer.items():
            heard = reader.get(key)
            for side, v in (("writer", said), ("reader", heard)):
                if isinstance(v, str) and v.startswith(INTERNAL):
                    return f"{key}: the {side} raised an internal error: {v}"
            if isinstance(said, str) or isinstance(heard, str):
                if type(said) is not type(heard) or said.split(":")[0] != heard.split(":")[0]:
                    return f"{key}: the writer gave {said!r}, the reader {heard!r}"
                continue
            if said != heard:
                return f"{key}: {heard} results, the writer's {said}"
            for j in range(said):
                d = _differ(r[f"{key}_{j}"], w[f"{key}_{j}"])
                if d:
                    return f"{key}, result {j}: {d}"
    STATS["programs agree"] += 1
    return None


def check_chunk(family: str, seeds) -> list:
    """[(seed, failure text)] for the programs ``seeds`` of ``family``."""
    seeds = list(seeds)
    with tempfile.TemporaryDirectory() as folder, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for seed in seeds:
            with open(os.path.join(folder, f"p{seed}.py"), "w") as f:
                f.write(source(family, seed))
        try:
            writer = _phase(family, folder, seeds, (0, 1))
            reader = _phase(family, folder, seeds, (1, 0))
        except RuntimeError:
            return [(seeds[0], traceback.format_exc())]
        STATS["programs"] += len(seeds)
        STATS["variants found by the reader"] += reader["hits"]
        failures = [(seed, d) for seed in seeds if (d := compare(
            folder, seed, writer["results"][str(seed)], reader["results"][str(seed)]))]
    return failures
