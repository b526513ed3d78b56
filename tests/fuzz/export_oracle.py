"""The export family: each random program ``pb.export``-ed and run where pullback is absent.

For a chunk of seeds, ``check_chunk`` draws each program (the numpy family, turned into
a ``value_and_grad`` program; or the torch-name family on pullback's Tensors, its
objective differentiated with respect to its ``x*`` inputs), exports it with the first
set of values as the example, and computes ``pb.value_and_grad``'s results in process
on the first and second sets of values. One fresh interpreter per chunk (``python -I``,
``pullback`` and ``torch`` blocked in ``sys.modules``: only numpy and scipy import) loads
every exported module and calls its ``forward``, ``value_and_grad`` and ``backward`` on the same
values. They agree when the values, the gradients (their structure too) and their
dtypes equal pullback's within ``RTOL``; a second call whose values would take another
path may raise the module's ``ValueError`` naming the guard or the constant argument.

A program pullback itself refuses must be refused by export too; a program export
refuses must get its ``ExportError`` (``export: ...``): those are counted by reason
(``REFUSALS``), any other error from export is a failure.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import warnings
from collections import Counter
from dataclasses import dataclass, field, replace

import numpy as np

import pullback as pb
from pullback.compiler.export import ExportError

from . import numpy_oracle, oracle
from .generator import generate as generate_torch
from .numpy_programs import CLASSES
from .numpy_programs import generate as generate_numpy

#: the numpy classes the export family draws: effects and rebind change Python state
#: around the calls, which an exported module (the traced computation) never replays
NUMPY_CLASSES = frozenset(CLASSES) - {"effects", "rebind"}
#: value and gradient tolerance by the result's dtype (the same code runs both sides)
RTOL = {"float64": 1e-10, "float32": 1e-5}
#: the errors the exported module may raise on the second set of values
GUARD_WORDS = ("the exported code is for",)

STATS: Counter = Counter()
#: export's refusals: first line -> count
REFUSALS: Counter = Counter()


@dataclass
class Case:
    """One exported program: its calls' arguments and pullback's results per call."""

    seed: int
    module: str
    calls: list = field(default_factory=list)  # [(args, (value, grads) or exception)]
    #: float32's tolerance as soon as an argument is float32: its rounding reaches the
    #: float64 results, where forward's code and value_and_grad's may round apart
    float32: bool = False


# ------------------------------------------------------------------- the programs
def numpy_program(seed: int):
    """(fn, args per call, argnums) of the numpy family's program ``seed``."""
    prog = replace(generate_numpy(seed, NUMPY_CLASSES), door="value_and_grad", out_t=False)
    env: dict = {}
    numpy_oracle._exec(prog.source(), env, f"{seed} export")
    return env["f"], [(prog.data(0),), (prog.data(1),)], 0


def torch_program(seed: int):
    """(fn, args per call, argnums) of the torch-name family's program ``seed`` on
    pullback's Tensors (its objective: the loss, plus the second output's squares)."""
    prog = generate_torch(seed)
    plain = oracle.build(prog, "pb")
    pos = tuple(k for k, i in enumerate(prog.inputs) if i.kind == "x")
    if not pos:
        return None
    fn = lambda *a: oracle._objective(plain(*a))  # noqa: E731
    calls = [tuple(pb.from_numpy(oracle._copy(v)) for v in prog.data(k).values())
             for k in (0, 1)]
    return fn, calls, pos


FAMILIES = {"numpy": numpy_program, "torch": torch_program}


def _np(v):
    return v.numpy() if hasattr(v, "numpy") else v


def _leaves(g) -> tuple:
    """(structure, leaves) of a gradient: one value, or a tuple or list of them."""
    if isinstance(g, (tuple, list)):
        return (type(g).__name__, len(g)), [np.asarray(_np(v)) for v in g]
    return ("single", 1), [np.asarray(_np(g))]


# --------------------------------------------------------------------- one program
def prepare(family: str, seed: int, folder: str) -> Case | str | None:
    """The exported program ``seed`` as a Case, or None when there is nothing to
    compare, or a failure's text."""
    drawn = FAMILIES[family](seed)
    if drawn is None:
        STATS["no input to differentiate"] += 1
        return None
    fn, calls, argnums = drawn
    STATS["programs"] += 1
    module = os.path.join(folder, f"m{family}{seed}.py")
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            pb.export(fn, *calls[0], argnums=argnums, path=module)
            exported = None
        except Exception as e:  # noqa: BLE001 - judged against value_and_grad below
            exported = e
        results = []
        door = pb.value_and_grad(fn, argnums=argnums)
        for args in calls:
            try:
                value, grads = door(*args)
                results.append((np.asarray(_np(value)), _leaves(grads)))
            except Exception as e:  # noqa: BLE001
                results.append(e)
    if isinstance(results[0], Exception):
        STATS["pullback refused"] += 1
        if exported is None:
            return (f"export succeeded where value_and_grad raised "
                    f"{type(results[0]).__name__}: {results[0]}")
        return None
    if isinstance(exported, ExportError) and str(exported).startswith("export: "):
        STATS["export refused"] += 1
        REFUSALS[_reason(str(exported))] += 1
        return None
    if exported is not None:
        return f"export raised {type(exported).__name__}: {exported}"
    STATS["exported"] += 1
    case = Case(seed, module, float32=any(np.asarray(_np(a)).dtype == np.float32
                                          for a in calls[0]))
    for k, (args, res) in enumerate(zip(calls, results)):
        if isinstance(res, Exception):
            break  # (pullback refused the second call: the module's answer not judged)
        names = []
        for j, a in enumerate(args):
            a = _np(a)
            name = os.path.join(folder, f"a{family}{seed}_{k}_{j}.npy")
            stored, zero, rev = _layout(np.asarray(a))
            np.save(name, stored, allow_pickle=False)
            names.append([name, type(a).__name__ == "float", np.shape(a), zero, rev])
        case.calls.append((names, res))
    return case


def _layout(a: np.ndarray) -> tuple:
    """(what to save, axes broadcast, axes reversed): the runner rebuilds ``a``'s zero
    and negative strides (a float32 sum over a broadcast view rounds otherwise);
    np.save keeps Fortran order itself."""
    zero = [i for i, st in enumerate(a.strides) if st == 0 and a.shape[i] > 1]
    rev = [i for i, st in enumerate(a.strides) if st < 0]
    return a[tuple(slice(0, 1) if i in zero else slice(None, None, -1) if i in rev
                   else slice(None) for i in range(a.ndim))], zero, rev


def _reason(text: str) -> str:
    """A refusal's first line without the function's name and line (to group them)."""
    line = text.splitlines()[0]
    return line.split(" reads ", 1)[-1] if " reads " in line else line[:120]


# ------------------------------------------------------------ the standalone runs
RUNNER = r"""
import importlib.util, json, sys, traceback
sys.modules['pullback'] = None
sys.modules['torch'] = None
import numpy as np

def leaves(g):
    if isinstance(g, (tuple, list)):
        return [type(g).__name__, len(g)], [np.asarray(v) for v in g]
    return ['single', 1], [np.asarray(g)]

def laid_out(v, shape, zero, rev):
    v = v[tuple(slice(None, None, -1) if i in rev else slice(None) for i in range(v.ndim))]
    return np.broadcast_to(v, shape) if zero else v

report = {}
for case in json.load(open(sys.argv[1])):
    out = report[case['module']] = []
    try:
        spec = importlib.util.spec_from_file_location('exported', case['module'])
        m = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(m)
    except Exception as e:
        out.append(['load', type(e).__name__ + ': ' + str(e), traceback.format_exc()])
        continue
    for k, names in enumerate(case['calls']):
        args = [float(np.load(n)) if is_float else laid_out(np.load(n), *how)
                for n, is_float, *how in names]
        try:
            value = m.forward(*args)
            value2, grads = m.value_and_grad(*args)
            how, gs = leaves(grads)
            gs += leaves(m.backward(*args))[1]  # (the default cotangent 1.0: the same)
            if any(g.dtype == object for g in gs):
                out.append(['object', [j for j, g in enumerate(gs) if g.dtype == object]])
                continue
            path = case['module'] + f'.{k}.npz'
            np.savez(path, value=np.asarray(value), value2=np.asarray(value2),
                     **{f'g{j}': g for j, g in enumerate(gs)})
            out.append(['ok', path, how])
        except Exception as e:
            out.append(['raised', type(e).__name__ + ': ' + str(e), traceback.format_exc()])
print(json.dumps(report))
"""


def run_standalone(cases: list, folder: str) -> dict:
    """module -> [per call: ["ok", results .npz, structure], ["object", leaves that are
    no arrays] or ["raised"|"load", text, traceback]], from one fresh interpreter
    where pullback cannot be imported."""
    manifest = os.path.join(folder, "manifest.json")
    with open(manifest, "w") as f:
        json.dump([{"module": c.module, "calls": [names for names, _ in c.calls]}
                   for c in cases], f)
    out = subprocess.run([sys.executable, "-I", "-c", RUNNER, manifest],
                         capture_output=True, text=True, timeout=600, cwd=folder)
    if out.returncode != 0:
        raise RuntimeError(f"the standalone runner failed:\n{out.stderr}")
    return json.loads(out.stdout)


def compare(case: Case, ran: list) -> str | None:
    """The first disagreement between the exported module's calls and pullback's."""
    for k, ((_, (value, (how, grads))), got) in enumerate(zip(case.calls, ran)):
        if got[0] == "load":
            return f"the module does not load: {got[1]}\n{got[2]}"
        if got[0] == "object":
            return (f"call {k}: gradients {got[1]} are not arrays (None?), where "
                    "value_and_grad gives arrays")
        if got[0] == "raised":
            if k > 0 and got[1].startswith("ValueError") and any(
                    w in got[1] for w in GUARD_WORDS):
                STATS["second call refused by a guard"] += 1
                continue
            return f"call {k}: the module raised {got[1]}\n{got[2]}"
        with np.load(got[1]) as res:
            n = got[2][1]
            mine = [res[f"g{j}"] for j in range(n)]
            pulled = [res[f"g{j}"] for j in range(n, 2 * n)]  # (backward's)
            for what, a, b in [("forward", res["value"], value),
                               ("value", res["value2"], value)] + [
                    (f"gradient {j}", g, w) for j, (g, w) in enumerate(zip(mine, grads))] + [
                    (f"backward's gradient {j}", g, w)
                    for j, (g, w) in enumerate(zip(pulled, grads))]:
                d = _differ(a, b, case.float32)
                if d:
                    return f"call {k}: {what}: {d}"
        if list(got[2]) != list(how):
            return f"call {k}: gradients as {got[2]}, value_and_grad gives {list(how)}"
        STATS["calls agree"] += 1
    return None


def _differ(got, want, float32: bool) -> str | None:
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return f"shape {got.shape}, pullback {want.shape}"
    if got.dtype != want.dtype:
        return f"dtype {got.dtype}, pullback {want.dtype}"
    if want.dtype.kind not in "fc":
        return None if np.array_equal(got, want) else f"{got} != {want}"
    rtol = RTOL["float32" if float32 else want.dtype.name] if want.dtype.name in RTOL \
        else 1e-5
    scale = max(1.0, float(np.nanmax(np.abs(want), initial=0.0))) if np.isfinite(
        want).any() else 1.0
    if np.allclose(got, want, rtol=rtol, atol=rtol * scale, equal_nan=True):
        return None
    return f"exported {got.ravel()[:6]}, pullback {want.ravel()[:6]}"


def check_chunk(family: str, seeds) -> list:
    """[(seed, failure text)] for the programs of ``seeds`` in ``family``."""
    failures, cases = [], []
    with tempfile.TemporaryDirectory() as folder, warnings.catch_warnings(), \
            np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        for seed in seeds:
            got = prepare(family, seed, folder)
            if isinstance(got, str):
                failures.append((seed, got))
            elif got is not None:
                cases.append(got)
        ran = run_standalone(cases, folder) if cases else {}
        for case in cases:
            d = compare(case, ran[case.module])
            if d:
                failures.append((case.seed, d))
    return sorted(failures)
