"""Check a numpy_programs program against numpy and finite differences; shrink; report.

``check(prog)`` builds the program's module, then makes three calls (x = values A, B,
then A again; before the 2nd and 3rd the program's ``between`` statements run: a
rebinding or a mutation of what ``f`` captured). For each call:

- numpy: ``f`` on a plain C-ordered float64 copy of x gives the value and the state
  the call leaves (the globals ``f`` mutates); central finite differences of that
  ``f`` in float64, the state restored before every evaluation, give the Jacobian
  (second differences the Hessian);
- pullback: one door (``pb.grad``... made once for the three calls, so its cache and
  guards are exercised) on x as laid out (transposed, Fortran, broadcast...).

pullback agrees when its value equals numpy's (dtype too), its derivative equals the
finite differences, and the state after the call is numpy's; or when it raises an
error that is not an internal one (``INTERNAL``): refusing is allowed, a wrong number
is not. Where finite differences at two steps disagree (a jump or a kink inside the
step), the derivative is not compared.
"""

from __future__ import annotations

import contextlib
import copy
import io
import itertools
import linecache
import warnings
from collections import Counter
from dataclasses import dataclass, replace

import numpy as np

import pullback as pb

from .numpy_programs import NProgram, without_term

#: exception types that are a bug whatever the program: pullback's own code failing (an
#: IndexError too: generated code reading past a saved stack, never a clear refusal)
INTERNAL = (AttributeError, NameError, KeyError, IndexError, AssertionError, RecursionError,
            SystemError)
#: the words of Python's own TypeErrors on a wrong operand: inside pullback, a defect (a
#: value it lost), never a refusal the user can act on
INTERNAL_TYPE_ERRORS = ("unsupported operand type(s)", "'NoneType' object")

#: tolerance kind -> (value rtol, derivative rtol, atol scale, fd step, hessian step)
TOL = {"f64": (1e-10, 1e-5, 1e-6, 1e-5, 1e-3),
       "f32": (2e-6, 2e-3, 2e-3, 1e-2, 3e-2),
       "ode": (1e-6, 1e-4, 1e-5, 1e-4, 1e-2)}
TOL["ode+f32"] = tuple(max(a, b) for a, b in zip(TOL["ode"], TOL["f32"]))

STATS: Counter = Counter()
#: the errors pullback raised (accepted ones): "Type: first line" -> count
ERRORS: Counter = Counter()
_names = itertools.count()


@dataclass(frozen=True)
class Mismatch:
    door: str
    key: str  # value, dtype, derivative, shape, state, internal error
    call: int
    detail: str
    exc: str = ""

    @property
    def kind(self) -> tuple:
        return self.door, self.key, self.exc

    def __str__(self) -> str:
        return f"{self.door} (call {self.call}): {self.key}: {self.detail}"


class Fail(Exception):
    def __init__(self, m: Mismatch) -> None:
        super().__init__(str(m))
        self.mismatch = m


def _exec(src: str, env: dict, tag: str) -> None:
    """Run ``src`` in ``env`` under a file name linecache knows (the source pass reads
    the functions' source back)."""
    filename = f"<npfuzz {tag} #{next(_names)}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    exec(compile(src, filename, "exec"), env)


# ------------------------------------------------------------------------ state
def _snap(v):
    if isinstance(v, np.random.Generator):
        return copy.deepcopy(v.bit_generator.state)
    if isinstance(v, (list, dict, int, float)):
        return copy.deepcopy(v)
    return copy.deepcopy(dict(vars(v)))


def snapshot(env: dict, names: list) -> dict:
    return {n: _snap(env[n]) for n in names}


def restore(env: dict, snap: dict) -> None:
    for n, s in snap.items():
        cur = env[n]
        if isinstance(cur, np.random.Generator):
            cur.bit_generator.state = copy.deepcopy(s)
        elif isinstance(cur, list):
            cur[:] = copy.deepcopy(s)
        elif isinstance(cur, dict):
            cur.clear()
            cur.update(copy.deepcopy(s))
        elif isinstance(cur, (int, float)):
            env[n] = s
        else:
            vars(cur).clear()
            vars(cur).update(copy.deepcopy(s))


def _same_state(a, b) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_state(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same_state(x, y) for x, y in zip(a, b))
    try:
        return bool(np.allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float),
                                rtol=1e-9, atol=1e-12))
    except (TypeError, ValueError):
        return a == b


# -------------------------------------------------------------- numpy reference
def _plain(x):
    return x if isinstance(x, float) else np.array(x, dtype=np.float64, order="C")


def _eval(f, env, snap, x):
    restore(env, snap)
    with contextlib.redirect_stdout(io.StringIO()):  # what f prints: once per call
        return np.asarray(f(_plain(x)), dtype=np.float64)


def _shift(x, i: int, h: float):
    if isinstance(x, float):
        return x + h
    y = _plain(x)
    y.flat[i] += h
    return y


def fd_jacobian(f, env, snap, x, out_shape, h: float) -> np.ndarray:
    """d f / d x by central differences: shape out_shape + x's shape."""
    n = 1 if isinstance(x, float) else np.size(x)
    cols = [(_eval(f, env, snap, _shift(x, i, h)) - _eval(f, env, snap, _shift(x, i, -h)))
            / (2 * h) for i in range(n)]
    j = np.stack(cols, axis=-1)
    return j.reshape(tuple(out_shape) + np.shape(x))


def fd_hessian(f, env, snap, x, h: float) -> np.ndarray:
    n = 1 if isinstance(x, float) else np.size(x)
    hs = np.zeros((n, n))
    def at(i: int, j: int, a: float, b: float) -> float:
        return float(_eval(f, env, snap, _shift(_shift(x, i, a), j, b)))
    for i in range(n):
        for j in range(n):
            hs[i, j] = (at(i, j, h, h) - at(i, j, h, -h) - at(i, j, -h, h)
                        + at(i, j, -h, -h)) / (4 * h * h)
    return hs.reshape(np.shape(x) * 2)


# ------------------------------------------------------------------------ doors
def _cotangent(shape: tuple) -> np.ndarray:
    n = int(np.prod(shape))
    return np.linspace(-1.0, 1.3, n).reshape(shape) if n > 1 else np.full(shape, 0.7)


@contextlib.contextmanager
def _scribbled(x):
    """The caller's array (a writable one) overwritten for the time of the block, as a
    caller reusing its buffer (``x -= lr * g``) would."""
    if not (isinstance(x, np.ndarray) and x.flags.writeable):
        yield
        return
    saved = x.copy()
    x[...] = 123.0
    try:
        yield
    finally:
        x[...] = saved


def make_door(door: str, f):
    """x -> (value or None, derivative, how to get the reference from the Jacobian)."""
    if door in ("grad", "jacrev", "jacfwd", "hessian"):
        t = getattr(pb, door)(f)
        return lambda x: (None, t(x))
    if door == "value_and_grad":
        t = pb.value_and_grad(f)
        return lambda x: t(x)
    if door == "vjp":
        def vjp(x):
            out, pull = pb.vjp(f, x)
            with _scribbled(x):  # pull must not read the caller's array again
                return out, pull(_cotangent(np.shape(out)))[0]
        return vjp
    if door == "linearize":
        def linearize(x):
            out, f_jvp = pb.linearize(f, x)
            with _scribbled(x):
                return out, f_jvp(0.7 if isinstance(x, float) else _cotangent(np.shape(x)))
        return linearize

    def jvp(x):
        t = 0.7 if isinstance(x, float) else _cotangent(np.shape(x))
        return pb.jvp(f, (x,), (t,))
    return jvp


def reference(door: str, jac: np.ndarray, out_shape: tuple, x) -> np.ndarray:
    if door == "vjp":
        return np.tensordot(_cotangent(out_shape), jac, axes=len(out_shape))
    if door in ("jvp", "linearize"):
        t = 0.7 if isinstance(x, float) else _cotangent(np.shape(x))
        return np.tensordot(jac, t, axes=np.ndim(x))
    return jac


def close(got, want, rtol: float, ascale: float) -> str | None:
    got = np.asarray(got, dtype=np.float64)
    if got.shape != want.shape:
        return f"shape {got.shape}, want {want.shape}"
    atol = ascale * max(1.0, float(np.max(np.abs(want), initial=0.0)))
    if np.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True):
        return None
    return (f"max abs diff {np.max(np.abs(got - want)):.3g}\n  got  {np.round(got, 6)!r}"
            f"\n  want {np.round(want, 6)!r}")


# ------------------------------------------------------------------------ check
def check(prog: NProgram, make=None) -> Mismatch | None:
    """None if pullback agrees with numpy and finite differences (or raises a clear
    error) on all three calls, else the first mismatch. ``make(door, f)`` builds the
    door (default ``make_door``; the harness's own tests pass a broken one)."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            _check(prog, make or make_door)
        except Fail as e:
            return e.mismatch
    return None


def _check(prog: NProgram, make) -> None:
    env: dict = {}
    _exec(prog.source(), env, str(prog.seed))
    f, names = env["f"], prog.state()
    door = make(prog.door, f)
    STATS["programs"] += 1
    STATS["door " + prog.door] += 1
    for cls in prog.classes:
        STATS["class " + cls] += 1
    for call, k in enumerate([0, 1, 0]):
        for stmt in prog.between(call) if call else ():
            _exec(stmt, env, f"{prog.seed} between")
        x = prog.data(k)
        if not _one_call(prog, env, f, names, door, call, x):
            return


def _one_call(prog, env, f, names, door, call: int, x) -> bool:
    """Check one call; False when the program stops here (an error was raised)."""
    vtol, rtol, ascale, h, hh = TOL[prog.tol]
    before = snapshot(env, names)
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            want = f(_plain(x))
    except Exception as e:  # noqa: BLE001 - a template numpy itself refuses: skip it
        STATS[f"numpy raised {type(e).__name__}"] += 1
        return False
    after = snapshot(env, names)
    out_shape = np.shape(want)
    jac = fd_jacobian(f, env, before, x, out_shape, h)
    ref = fd_hessian(f, env, before, x, hh) if prog.door == "hessian" else \
        reference(prog.door, jac, out_shape, x)
    restore(env, before)
    mine = io.StringIO()
    try:
        with contextlib.redirect_stdout(mine):
            value, got = door(x)
    except Exception as e:  # noqa: BLE001 - refusing is allowed, an internal error not
        if isinstance(e, INTERNAL) or isinstance(e, TypeError) and any(
                words in str(e) for words in INTERNAL_TYPE_ERRORS):
            raise Fail(Mismatch(prog.door, "internal error", call,
                                f"{type(e).__name__}: {e}", type(e).__name__)) from e
        STATS[f"raised {type(e).__name__}"] += 1
        ERRORS[f"{type(e).__name__}: {str(e).splitlines()[0][:100] if str(e) else ''}"] += 1
        return False
    if names and not all(_same_state(a, b) for a, b in
                         zip(snapshot(env, names).values(), after.values())):
        raise Fail(Mismatch(prog.door, "state", call, f"after the call {snapshot(env, names)}"
                            f", numpy's {after}"))
    lines = (printed.getvalue().count("\n"), mine.getvalue().count("\n"))
    if lines[0] != lines[1]:
        raise Fail(Mismatch(prog.door, "prints", call, f"printed {lines[1]} lines, numpy "
                            f"{lines[0]}: {mine.getvalue()[:200]!r}"))
    if value is not None:
        _check_value(prog, call, value, want, vtol)
    if prog.door == "hessian" and prog.tol != "f64":
        # second differences of float32 values at a step float32 allows are noise at
        # the 1% level: the value and first derivatives are checked, not these
        STATS["derivative not compared (float32 hessian)"] += 1
        return True
    d = close(got, ref, rtol, ascale)
    if d is None:
        return True
    # a jump or a kink within the step? finite differences at a quarter step decide
    if prog.door == "hessian":
        ref2 = fd_hessian(f, env, before, x, hh / 4)
    else:
        ref2 = reference(prog.door, fd_jacobian(f, env, before, x, out_shape, h / 4),
                         out_shape, x)
    restore(env, after)
    if close(got, ref2, rtol, ascale) is None:
        return True
    if close(ref, ref2, rtol, ascale) is not None:
        STATS["derivative not compared (not smooth)"] += 1
        return True
    raise Fail(Mismatch(prog.door, "derivative", call, d))


def _check_value(prog, call: int, value, want, vtol: float) -> None:
    wd, gd = np.asarray(want).dtype, np.asarray(value).dtype
    if np.float32 in (wd, gd) and wd != gd:
        raise Fail(Mismatch(prog.door, "dtype", call, f"value's dtype {gd}, numpy's {wd}"))
    w = np.asarray(want, dtype=np.float64)
    d = close(value, w, vtol, vtol)
    if d:
        raise Fail(Mismatch(prog.door, "value", call, d))


# ---------------------------------------------------------------------- shrinking
def _candidates(prog: NProgram):
    for k in range(len(prog.terms)):
        if len(prog.terms) > 1:
            yield without_term(prog, k)
    if prog.layout != "C":
        yield replace(prog, layout="C")
    if prog.out_t:
        yield replace(prog, out_t=False)
    for door in ("value_and_grad", "grad"):
        if prog.door != door and (door in ("grad", "value_and_grad")) == \
                (prog.door in ("grad", "value_and_grad", "hessian")):
            yield replace(prog, door=door)


def shrink(prog: NProgram, failure: Mismatch, max_checks: int = 60) -> tuple:
    """(smaller program, its mismatch): drop terms, plain layouts, simpler doors while
    a mismatch of the same key stays."""
    checks, progress, stats = 0, True, STATS.copy()
    while progress and checks < max_checks:
        progress = False
        for cand in _candidates(prog):
            checks += 1
            m = check(cand)
            if m is not None and m.key == failure.key and m.exc == failure.exc:
                prog, failure, progress = cand, m, True
                break
    STATS.clear()
    STATS.update(stats)
    return prog, failure


LAYOUT_SRC = {"C": "", "T": "x = np.ascontiguousarray(x.T).T  # a transposed view\n",
              "F": "x = np.asfortranarray(x)\n",
              "reversed": "x = np.ascontiguousarray(x[::-1])[::-1]  # negative strides\n",
              "broadcast": "x = np.broadcast_to(x[:1], x.shape)  # a zero stride\n"}


def report(prog: NProgram, failure: Mismatch) -> str:
    """A runnable reproduction: the module, the calls, the mismatch."""
    classes = ", ".join(sorted(prog.classes))
    lines = [f"# pullback numpy fuzz: seed {prog.seed} ({classes}), door {prog.door}",
             f"# {failure}".replace("\n", "\n# "), prog.source(), "import pullback as pb",
             ""]
    door = {"vjp": "pb.vjp(f, x)[1](CT(f(x)))", "jvp": "pb.jvp(f, (x,), (CT(x),))",
            "linearize": "pb.linearize(f, x)[1](CT(x))"}.get(prog.door, f"pb.{prog.door}(f)(x)")
    if prog.door in ("vjp", "jvp", "linearize"):
        lines.insert(-1, "def CT(a):  # the (co)tangent\n    n = np.size(a)\n    return "
                     "np.linspace(-1.0, 1.3, n).reshape(np.shape(a)) if n > 1 else 0.7 + "
                     "0 * np.asarray(a)\n")
    for call, k in enumerate([0, 1, 0][:failure.call + 1]):
        for stmt in prog.between(call) if call else ():
            lines.append(stmt.rstrip("\n"))
        x = prog.data(k)
        lines.append(f"x = {x!r}" if isinstance(x, float) else
                     f"x = np.array({np.asarray(x).tolist()!r})\n{LAYOUT_SRC[prog.layout]}"
                     .rstrip("\n"))
        lines.append(f"print(f(x), {door})  # call {call}")
    return "\n".join(lines)
