"""Run a generated program four ways and compare each with torch; shrink failures.

``check(prog)`` runs the program on two sets of input values (then on the first again):

- torch 2.13 eagerly: the reference (values, every intermediate value, gradients);
- pullback eagerly, ``.backward()``: every intermediate value (shape, dtype, values,
  requires_grad), the output and each input's ``.grad`` (None where torch's is None);
- ``pb.compile(f)``, one compiled function for all calls (the second set of values
  may fail a guard and retrace; the third call picks among the variants): outputs and
  ``.grad`` (None where torch's is None);
- ``pb.value_and_grad(f, argnums=<the x inputs>)`` on Tensors sharing the numpy arrays
  (the programs use torch's names, which ndarrays would not get: the numpy face): the
  value and the gradients (zeros where torch's is None, as ``torch.func.grad`` gives).

When torch raises, pullback must raise the same exception type at the same point
(forward or backward). ``check`` returns None or the first ``Mismatch``; ``shrink``
removes statements, loss terms and the second output while the same kind of mismatch
stays, and ``report`` prints the result as a runnable reproduction.
"""

from __future__ import annotations

import itertools
import linecache
import warnings
from collections import Counter
from dataclasses import dataclass, replace

import numpy as np
import torch
import torch.nn.functional as torchF

import pullback as pb
import pullback.nn.functional as pbF

from .generator import If, Line, NoGrad, Program

#: (rtol, atol scale) by dtype; atol is scale * max(1, largest |reference|)
TOL = {"float64": (1e-7, 1e-9), "float32": (1e-4, 1e-5)}

_names = itertools.count()
#: compare grad_fn names too (off: pullback names the nodes of composite ops such as
#: batched matmul and squeeze differently from torch; only grad_fn None-ness is checked)
CHECK_NAMES = False
#: the tolerance for every comparison in the program being checked: float32's as soon as
#: the program has a float32 value anywhere (its rounding reaches the float64 results)
_tol = ["float64"]

#: torch's error for a backward through a value an in-place op changed after an op saved
#: it. Compiled code (pb.compile, pb.grad) turns in-place ops on its own intermediates
#: into new SSA values (docs/design.md, "Mutation of inputs"), so it may compute the
#: gradient instead of raising.
VERSION_ERROR = "modified by an inplace operation"


@dataclass(frozen=True)
class Mismatch:
    """``stage``: eager, compile or grad; ``key``: what differs (value, grad, local,
    error, ...); ``call``: which call (0, 1: the two sets of values; 2: the first again)."""

    stage: str
    key: str
    call: int
    detail: str
    exc: str = ""  # the exception pullback raised, if that is the mismatch

    @property
    def kind(self) -> tuple:
        return self.stage, self.key, self.exc

    def __str__(self) -> str:
        return f"{self.stage} (call {self.call}): {self.key}: {self.detail}"


class Fail(Exception):
    def __init__(self, m: Mismatch) -> None:
        super().__init__(str(m))
        self.mismatch = m


def build(prog: Program, lib: str, with_locals: bool = False):
    """The program's ``f`` with ``T`` = torch or pullback."""
    src = prog.source(with_locals)
    filename = f"<fuzz {prog.seed} {lib} #{next(_names)}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    env = {"T": torch, "F": torchF, "scan": torch_scan} if lib == "torch" else \
        {"T": pb, "F": pbF, "scan": pb.scan}
    exec(compile(src, filename, "exec"), env)
    return env["f"]


def torch_scan(f, init, xs, reverse=False):
    """pb.scan's meaning, in torch: the Python loop, the ys stacked in index order."""
    carry, ys = init, [None] * len(xs)
    for i in range(len(xs) - 1, -1, -1) if reverse else range(len(xs)):
        carry, ys[i] = f(carry, xs[i])
    return carry, torch.stack(ys)


def _arg(lib, v: np.ndarray, req: bool):
    """A leaf tensor of ``lib`` (torch or pullback) holding a copy of ``v`` in ``v``'s
    memory layout (a transposed, Fortran-ordered or broadcast input stays one)."""
    t = lib.from_numpy(_copy(v))
    return t.requires_grad_() if req else t


def _copy(v: np.ndarray) -> np.ndarray:
    """A copy of ``v`` in its layout (a broadcast view of the first row stays one)."""
    if v.ndim >= 2 and v.size and v.strides[-2] == 0:
        return np.broadcast_to(np.array(v[..., :1, :]), v.shape)
    return np.array(v, order="K", copy=True)


def _dtype(t) -> str:
    return str(t.dtype).rsplit(".", 1)[-1]


def _np(t) -> np.ndarray:
    return np.asarray(t.detach().numpy()) if hasattr(t, "detach") else np.asarray(t)


def _err(e: BaseException) -> str:
    return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"


def _objective(outs):
    """The loss, plus (extra ** 2).sum() when the program returns a second output."""
    if isinstance(outs, tuple):
        return outs[0] + (outs[1] * outs[1]).sum()
    return outs


@dataclass
class Ref:
    """torch's results for one set of values."""

    error: tuple | None = None  # (where, exception type name, message)
    outs: list | None = None  # [(array, dtype, requires_grad)]
    grads: dict | None = None  # name -> array or None
    locals: dict | None = None  # name -> torch value
    total_req: bool = True


def run_torch(fn, prog: Program, data: dict) -> Ref:
    xs = set(prog.x_names)
    args = {k: _arg(torch, v, k in xs) for k, v in data.items()}
    try:
        result, loc = fn(**args)
    except Exception as e:  # noqa: BLE001 - the program's own error is the reference
        return Ref(error=("forward", type(e).__name__, str(e)))
    outs = result if isinstance(result, tuple) else (result,)
    ref = Ref(outs=[(_np(o), _dtype(o), o.requires_grad) for o in outs], locals=loc)
    total = _objective(result)
    ref.total_req = total.requires_grad
    if total.requires_grad:
        try:
            total.backward()
        except Exception as e:  # noqa: BLE001
            ref.error = ("backward", type(e).__name__, str(e))
            return ref
    ref.grads = {k: None if args[k].grad is None else args[k].grad.numpy() for k in xs}
    return ref


# ------------------------------------------------------------------- comparing
def close(want: np.ndarray, got, dtype: str) -> str | None:
    """None if ``got`` matches ``want`` (same shape; NaN and inf where it has them;
    the rest within the dtype's tolerance), else what differs."""
    got = np.asarray(got)
    want = np.asarray(want)
    if got.shape != want.shape:
        return f"shape {got.shape} != torch's {want.shape}"
    if want.dtype.kind not in "fc":
        if not np.array_equal(got, want):
            return f"{got!r} != torch's {want!r}"
        return None
    g = got.astype(np.float64)
    w = want.astype(np.float64)
    if not np.array_equal(np.isnan(g), np.isnan(w)):
        return f"NaN at different places: {got!r} != torch's {want!r}"
    inf = np.isinf(w)
    if not np.array_equal(np.isinf(g), inf) or not np.array_equal(g[inf], w[inf]):
        return f"inf at different places: {got!r} != torch's {want!r}"
    fin = np.isfinite(w)
    if not fin.any():
        return None
    rtol, ascale = TOL["float32" if "float32" in (dtype, _tol[0]) else "float64"]
    atol = ascale * max(1.0, float(np.abs(w[fin]).max()))
    err = np.abs(g[fin] - w[fin])
    bad = err > atol + rtol * np.abs(w[fin])
    if bad.any():
        return (f"max abs diff {err.max():.3g} (atol {atol:.2g}, rtol {rtol:g}):\n"
                f"  got   {got!r}\n  torch {want!r}")
    return None


def _node(t) -> str | None:
    """grad_fn's name; what reading it raised (torch's refusal of a multi-output
    view whose base was written since: both libraries must refuse it alike)."""
    try:
        fn = t.grad_fn
    except RuntimeError as e:
        return f"raises {e}"
    return None if fn is None else fn.name()


def _tensor_check(stage: str, call: int, what: str, ref_t, got_t, key: str = "value") -> None:
    """Shape, dtype, values, requires_grad and grad_fn's name of one pullback value
    against torch's."""
    if not isinstance(got_t, pb.Tensor):
        raise Fail(Mismatch(stage, "type", call, f"{what} is a {type(got_t).__name__}, "
                            f"torch's is a Tensor"))
    if _dtype(got_t) != _dtype(ref_t):
        raise Fail(Mismatch(stage, "dtype", call, f"{what}: {_dtype(got_t)} != torch's "
                            f"{_dtype(ref_t)}"))
    d = close(_np(ref_t), _np(got_t), _dtype(ref_t))
    if d:
        raise Fail(Mismatch(stage, key, call, f"{what}: {d}"))
    if got_t.requires_grad != ref_t.requires_grad:
        raise Fail(Mismatch(stage, "requires_grad", call, f"{what}.requires_grad is "
                            f"{got_t.requires_grad}, torch's {ref_t.requires_grad}"))
    mine, theirs = _node(got_t), _node(ref_t)
    if stage == "eager" and (mine is None) != (theirs is None) or CHECK_NAMES and \
            mine != theirs:
        raise Fail(Mismatch(stage, "grad_fn", call, f"{what}.grad_fn is {mine}, "
                            f"torch's {theirs}"))


def _grads_check(stage: str, call: int, ref: Ref, got: dict, none_is_zero: bool) -> None:
    for k, want in ref.grads.items():
        g = got[k]
        if want is None and not none_is_zero:
            if g is not None:
                raise Fail(Mismatch(stage, "grad None", call,
                                    f"{k}.grad is {g!r}; torch's is None"))
            continue
        if want is None:
            want = np.zeros_like(g if g is not None else 0.0)
        if g is None:
            raise Fail(Mismatch(stage, "grad None", call, f"{k}.grad is None; torch's is "
                                f"{want!r}"))
        d = close(want, _np(g), str(want.dtype))
        if d:
            raise Fail(Mismatch(stage, "grad", call, f"grad of {k}: {d}"))
        if hasattr(g, "dtype") and _dtype(g) != str(want.dtype):
            raise Fail(Mismatch(stage, "grad dtype", call,
                                f"grad of {k}: {_dtype(g)} != torch's {want.dtype}"))


def _expect_error(stage: str, call: int, ref: Ref, where: str, e: BaseException | None) -> None:
    """pullback raised ``e`` (or None) at ``where`` (forward or backward): so must torch
    have, with the same exception type."""
    want = ref.error if ref.error and ref.error[0] == where else None
    if want is None:
        if e is not None:
            raise Fail(Mismatch(stage, "error", call, f"raised in {where}: {_err(e)}; torch "
                                f"did not", type(e).__name__))
        return
    if e is None:
        raise Fail(Mismatch(stage, "error", call, f"did not raise in {where}; torch raised "
                            f"{want[1]}: {want[2].splitlines()[0]}"))
    if type(e).__name__ != want[1]:
        raise Fail(Mismatch(stage, "error type", call, f"raised {_err(e)} in {where}; torch "
                            f"raised {want[1]}: {want[2].splitlines()[0]}", type(e).__name__))


def _pb_args(prog: Program, data: dict) -> dict:
    xs = set(prog.x_names)
    return {k: _arg(pb, v, k in xs) for k, v in data.items()}


def check_eager(fn, prog: Program, data: dict, ref: Ref, call: int) -> None:
    args = _pb_args(prog, data)
    try:
        result, loc = fn(**args)
        e = None
    except Exception as ex:  # noqa: BLE001
        e = ex
    _expect_error("eager", call, ref, "forward", e)
    if ref.error and ref.error[0] == "forward":
        return
    for name, want in ref.locals.items():
        got = loc.get(name, "<missing>")
        if isinstance(want, torch.Tensor):
            _tensor_check("eager", call, name, want, got, key="local")
        elif got != want and not (want != want and got != got):
            raise Fail(Mismatch("eager", "local", call, f"{name} = {got!r}, torch's {want!r}"))
    total = _objective(result)
    if total.requires_grad != ref.total_req:
        raise Fail(Mismatch("eager", "requires_grad", call, f"the loss's requires_grad is "
                            f"{total.requires_grad}, torch's {ref.total_req}"))
    _expect_error("eager", call, ref, "backward", _backward(total, ref))
    if ref.error:
        return
    _grads_check("eager", call, ref, {k: args[k].grad for k in prog.x_names}, False)


def _backward(total, ref: Ref) -> Exception | None:
    """``total.backward()`` where torch's loss required grad: the error it raised."""
    if ref.total_req:
        try:
            total.backward()
        except Exception as ex:  # noqa: BLE001
            return ex
    return None


def check_compiled(cf, prog: Program, data: dict, ref: Ref, call: int) -> None:
    args = _pb_args(prog, data)
    try:
        result = cf(*args.values())
        e = None
    except Exception as ex:  # noqa: BLE001
        e = ex
    if e is not None and ref.error and ref.error[0] == "backward" and \
            type(e).__name__ == ref.error[1]:
        return  # torch raises in backward: raising as the function runs is fine too
    versions = ref.error is not None and VERSION_ERROR in ref.error[2]
    if versions and e is None:
        ref = replace(ref, error=None, grads=None)  # SSA: may compute the gradient
    _expect_error("compile", call, ref, "forward", e)
    if ref.error and ref.error[0] == "forward":
        return
    outs = result if isinstance(result, tuple) else (result,)
    if len(outs) != len(ref.outs):
        raise Fail(Mismatch("compile", "outputs", call, f"{len(outs)} outputs, torch "
                            f"{len(ref.outs)}"))
    for k, (o, (want, dt, req)) in enumerate(zip(outs, ref.outs)):
        if not isinstance(o, pb.Tensor):
            raise Fail(Mismatch("compile", "type", call, f"output {k} is {type(o).__name__}"))
        if _dtype(o) != dt:
            raise Fail(Mismatch("compile", "dtype", call, f"output {k}: {_dtype(o)} != {dt}"))
        d = close(want, _np(o), dt)
        if d:
            raise Fail(Mismatch("compile", "value", call, f"output {k}: {d}"))
        if o.requires_grad != req:
            raise Fail(Mismatch("compile", "requires_grad", call, f"output {k}."
                                f"requires_grad is {o.requires_grad}, torch's {req}"))
    e = _backward(_objective(result), ref)
    if versions and e is not None and VERSION_ERROR in str(e):
        return  # torch's own refusal (eagerly, after falling back): agreement too
    _expect_error("compile", call, ref, "backward", e)
    if ref.error or ref.grads is None:
        return
    _grads_check("compile", call, ref, {k: args[k].grad for k in prog.x_names}, False)


def check_grad(gf, prog: Program, data: dict, ref: Ref, call: int) -> None:
    arrays = [pb.from_numpy(_copy(a)) if isinstance(a, np.ndarray) else a
              for a in data.values()]
    try:
        value, grads = gf(*arrays)
        value, grads = value.numpy(), [g.numpy() for g in grads]  # (Tensors in, Tensors out)
        e = None
    except Exception as ex:  # noqa: BLE001
        e = ex
    if ref.error is not None and VERSION_ERROR in ref.error[2] and e is None:
        return  # SSA: compiled code may compute the gradient torch refuses to
    if _refused_conversion(e):
        STATS["grad refused a conversion torch cuts"] += 1
        return  # a functional transform refuses what torch's .item() cuts (JAX's rule)
    if ref.error is not None:
        if e is None:
            raise Fail(Mismatch("grad", "error", call, f"did not raise; torch raised "
                                f"{ref.error[1]} at {ref.error[0]}"))
        if type(e).__name__ != ref.error[1]:
            raise Fail(Mismatch("grad", "error type", call, f"raised {_err(e)}; torch "
                                f"raised {ref.error[1]}: {ref.error[2].splitlines()[0]}",
                                type(e).__name__))
        return
    if e is not None:
        raise Fail(Mismatch("grad", "error", call, f"raised {_err(e)}; torch did not",
                            type(e).__name__))
    want = ref.outs[0][0]
    if len(ref.outs) > 1:
        want = want + (ref.outs[1][0].astype(np.float64) ** 2).sum()
    d = close(want, np.asarray(value), ref.outs[0][1])
    if d:
        raise Fail(Mismatch("grad", "value", call, d))
    _grads_check("grad", call, ref, dict(zip(prog.x_names, grads)), True)


#: the conversions a functional transform refuses of a value that carries a gradient
_CONVERSIONS = ("float(", ".item()", ".tolist()", "complex(")


def _refused_conversion(e: Exception | None) -> bool:
    """pb.grad raised ConversionError naming a line that converts a value to a Python
    number (docs/reliability.md, "Values that leave the trace")."""
    return isinstance(e, pb.ConversionError) and e.src is not None and \
        any(c in e.src.text for c in _CONVERSIONS)


#: what the checked programs exercised (programs where torch raised, retraces, ...)
STATS: Counter = Counter()


def check(prog: Program, stages: tuple = ("eager", "compile", "grad")) -> Mismatch | None:
    """None if pullback agrees with torch on ``prog``, else the first mismatch."""
    return _run(prog, stages)


def _run(prog: Program, stages: tuple) -> Mismatch | None:
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            _check(prog, stages, STATS)
        except Fail as f:
            return f.mismatch
    return None


def _check(prog: Program, stages: tuple, stats: Counter) -> None:
    _tol[0] = "float64" if prog.mode in ("float64", "wild") else "float32"
    tf = build(prog, "torch", with_locals=True)
    pf = build(prog, "pb", with_locals=True)
    plain = build(prog, "pb")
    xs = prog.x_names
    pos = tuple(k for k, i in enumerate(prog.inputs) if i.kind == "x")
    cf = pb.compile(plain)
    gf = pb.value_and_grad(lambda *a: _objective(plain(*a)), argnums=pos)
    datas = [prog.data(0), prog.data(1)]
    refs = []
    stats["programs"] += 1
    stats["mode " + prog.mode] += 1
    for call, k in enumerate([0, 1, 0]):
        data = datas[k]
        if call < 2:
            refs.append(run_torch(tf, prog, data))
            if refs[-1].error:
                stats[f"torch raised in {refs[-1].error[0]} (call {call})"] += 1
        ref = refs[k]
        for stage in stages:
            try:
                if stage == "eager" and call < 2:
                    check_eager(pf, prog, data, ref, call)
                elif stage == "compile":
                    check_compiled(cf, prog, data, ref, call)
                elif stage == "grad" and xs:
                    check_grad(gf, prog, data, ref, call)
            except Fail:
                raise
            except Exception as e:  # noqa: BLE001 - a crash of the harness's own code
                raise Fail(Mismatch(stage, "crash", call, _err(e), type(e).__name__)) from e
    for name, fn in (("compile", cf), ("grad", gf)):
        info = fn.cache.info
        stats[f"{name}: traced more than once"] += info.misses > 1
        stats[f"{name}: guard failed, retraced"] += info.recompiles > 0
        stats[f"{name}: ran eagerly (fallback)"] += info.fallbacks > 0


# -------------------------------------------------------------------- shrinking
def _candidates(prog: Program):
    """Smaller programs, biggest cuts first."""
    if prog.extra:
        yield replace(prog, extra=None)
    for k in range(len(prog.loss)):
        if len(prog.loss) > 1:
            yield replace(prog, loss=prog.loss[:k] + prog.loss[k + 1:])
    body = prog.body
    for k in range(len(body)):
        yield replace(prog, body=body[:k] + body[k + 1:])
    for k, s in enumerate(body):
        if isinstance(s, If):
            yield replace(prog, body=body[:k] + s.then + body[k + 1:])
            yield replace(prog, body=body[:k] + s.orelse + body[k + 1:])
        elif isinstance(s, NoGrad):
            yield replace(prog, body=body[:k] + s.body + body[k + 1:])


def _substitutions(prog: Program, shapes: dict):
    """Programs with one use of a value replaced by an earlier value (an input first)
    of the same shape and dtype."""
    order = [i.name for i in prog.inputs if i.kind in "xc"] + prog.defined()
    for k, s in enumerate(prog.body):
        if not isinstance(s, Line):
            continue
        for j, a in enumerate(s.args):
            if a not in shapes or a.startswith(("x", "c")):
                continue
            for b in order:
                if b == a or b not in shapes or shapes[b] != shapes[a]:
                    continue
                if b not in (i.name for i in prog.inputs if i.kind in "xc") and (
                        b not in prog.defined()[:prog.defined().index(a)]
                        if a in prog.defined() else True):
                    continue
                args = s.args[:j] + (b,) + s.args[j + 1:]
                yield replace(prog, body=prog.body[:k] + (replace(s, args=args),)
                              + prog.body[k + 1:])


def _prune_inputs(prog: Program) -> Program:
    used = set(sum((s.uses for s in prog.body), ())) | {w for _, w in prog.loss} | \
        {v for v, _ in prog.loss} | {prog.extra}
    keep = tuple(i for i in prog.inputs if i.name in used or i.kind == "x" and
                 i.name == prog.inputs[0].name)
    return replace(prog, inputs=keep)


def shrink(prog: Program, failure: Mismatch, max_checks: int = 400) -> tuple:
    """(smaller program, its mismatch): greedy deletion while a mismatch of the same
    ``kind`` (stage, key, exception) stays."""
    checks = 0

    def fails(p: Program) -> Mismatch | None:
        nonlocal checks
        checks += 1
        m = check(p)
        return m if m is not None and m.kind == failure.kind else None

    progress = True
    while progress and checks < max_checks:
        progress = False
        for cand in _candidates(prog):
            m = fails(cand)
            if m:
                prog, failure, progress = cand, m, True
                break
        if progress:
            continue
        shapes = _shapes(prog)
        for cand in _substitutions(prog, shapes):
            m = fails(cand)
            if m:
                prog, failure, progress = cand, m, True
                break
    pruned = _prune_inputs(prog)
    m = check(pruned)
    if m is not None and m.kind == failure.kind:
        prog, failure = pruned, m
    return prog, failure


def _shapes(prog: Program) -> dict:
    """name -> (shape, dtype) of every value, from a torch run on the first values."""
    fn = build(prog, "torch", with_locals=True)
    xs = set(prog.x_names)
    args = {k: _arg(torch, v, k in xs) for k, v in prog.data(0).items()}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _, loc = fn(**args)
    except Exception:  # noqa: BLE001
        return {}
    return {k: (tuple(v.shape), _dtype(v)) for k, v in loc.items() if isinstance(v, torch.Tensor)}


def report(prog: Program, failure: Mismatch) -> str:
    """A runnable reproduction: the program, its data and the mismatch."""
    np.set_printoptions(precision=17, threshold=1000)
    lines = [f"# pullback fuzz: seed {prog.seed}, mode {prog.mode}", f"# {failure}".replace(
        "\n", "\n# "), "import numpy as np", "import torch", "import pullback as pb",
        "import pullback.nn.functional as pbF", "import torch.nn.functional as torchF",
        "", "T, F = pb, pbF  # or: T, F = torch, torchF", "", prog.source()]
    for k in (0, 1):
        items = ", ".join(f"{n}=np.{v!r}" for n, v in prog.data(k).items())
        lines.append(f"data{k} = dict({items})")
    for i in prog.inputs:
        if i.layout != "C":
            how = {"T": "np.ascontiguousarray(np.swapaxes(v, -1, -2)).swapaxes(-1, -2)",
                   "F": "np.asfortranarray(v)",
                   "B": "np.broadcast_to(v[..., :1, :], v.shape)"}[i.layout]
            lines.append(f"# {i.name} is passed as {how} (v its values), through from_numpy")
    lines.append(f"x_names = {prog.x_names!r}  # inputs that require grad")
    if prog.extra:
        lines.append("# the harness backpropagates out[0] + (out[1] * out[1]).sum()")
    np.set_printoptions()
    return "\n".join(lines)
