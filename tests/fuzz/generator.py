"""Random programs over pullback's op table, written once and run in pullback and torch.

A program is a function of named tensors, a list of statements over a module ``T``
(``pullback`` or ``torch``) and ``F`` (its ``nn.functional``); it prints as the Python
source that runs it, the same text for both libraries::

    def f(x0, x1, c2, w0, w1):
        v0 = T.tanh(x0) * x1                   # x*: float inputs that require grad
        v1 = v0.sum(1, keepdim=True)           # c*: constants (no grad), i*: int index,
        v2 = v0 * 1                            # m*: bool masks, w*: the loss's weights
        v2[1:] = v2[1:] * 2
        if float(v1.sum()) > 0:
            v3 = T.relu(v2)
        else:
            v3 = v2.exp()
        loss = (v1 * w0).sum() + (v3 * w1).sum()
        return loss

``generate(seed)`` draws one program, deterministically from the seed (which also
draws its mode: float64, float32, mixed dtypes, or "wild" without domain checks, where
NaN and inf appear). Every value's shape, dtype and a bound on its values (an
interval) are tracked while drawing, so that ops get operands they accept (shapes
that broadcast, positive arguments of log/sqrt, denominators away from 0, no
overflow) and programs are valid in torch. ``Program.data(k)`` draws the k-th set of
input values (the oracle calls the function on two: compiled code reuses or retraces
its trace on the second); rank-2 and higher float inputs arrive C-ordered, transposed,
Fortran-ordered or as broadcast views (``Input.layout``, kept by both libraries'
``from_numpy``). ``oracle.py`` runs a program four ways and compares them;
``oracle.shrink`` removes statements while the failure stays.

Reproduce a failure by its seed (from the repository's root)::

    PYTHONPATH=tests python -m fuzz 1234            # check seed 1234; shrink and print it
    PYTHONPATH=tests python -m fuzz 1234 --show     # just print the program and its data
    PYTHONPATH=tests python -m fuzz 0:10000         # check a range of seeds
    PULLBACK_FUZZ=10000 python -m pytest tests/fuzz # the same from pytest

Every defect this fuzzer found is fixed; test_found.py keeps each one's program as a
regression test. A defect found later is fixed, or kept out of the programs with an
exclusion marked ``FOUND:`` and a strict xfail in test_found.py until it is.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

import numpy as np

from .pieces import Pieces
from .rearranging import Rearranging
from .statements import If, Line, NoGrad, fill  # noqa: F401  (oracle reads them here)

# ----------------------------------------------------------------------------- modes
#: mode -> (weight, float dtypes of the inputs, domain checks)
MODES = {
    "float64": (70, ("float64",), True),
    "float32": (14, ("float32",), True),
    "mixed": (10, ("float64", "float32"), True),
    # no domain checks: log/sqrt of negatives, division by ~0, overflow -> NaN and inf
    "wild": (6, ("float64",), False),
}

#: the largest magnitude a value may reach (beyond it, ops that grow values are not drawn)
LIMIT = {"float64": 1e6, "float32": 1e3}


def _limit(dtype: str) -> float:
    return LIMIT.get(dtype, 1e6)


# ----------------------------------------------------------------------- the program
@dataclass(frozen=True)
class Input:
    """One argument: ``kind`` x (float, requires grad), c (float constant), w (the
    loss's weight for one value), i (int64 index in [-high, high)), m (bool mask).
    ``domain`` (floats): normal (clipped to +-3), grid (multiples of 1/4 in [-2, 2]:
    exact zeros and ties, on every kink), pos (0.5..2), unit (0.1..0.9)."""

    name: str
    shape: tuple
    dtype: str
    kind: str
    domain: str = "normal"
    high: int = 0
    uid: int = 0
    #: rank >= 2 floats: C, T (a transposed view), F (Fortran order) or B (a broadcast
    #: view, every row the first: a zero stride, read-only)
    layout: str = "C"

    def laid_out(self, v: np.ndarray) -> np.ndarray:
        if self.layout == "T":
            return np.ascontiguousarray(np.swapaxes(v, -1, -2)).swapaxes(-1, -2)
        if self.layout == "B":
            return np.broadcast_to(v[..., :1, :], v.shape)
        return np.asfortranarray(v) if self.layout == "F" else v

    def sample(self, rng: np.random.Generator) -> np.ndarray:
        s, d = self.shape, self.domain
        if self.kind == "i":  # domain "nonneg": class labels in [0, high)
            low = 0 if d == "nonneg" else -self.high
            return rng.integers(low, self.high, s).astype(np.int64)
        if self.kind == "m":
            return rng.random(s) < 0.5
        if d == "grid":
            v = rng.integers(-8, 9, s) / 4
        elif d == "pos":
            v = rng.uniform(0.5, 2.0, s)
        elif d == "unit":
            v = rng.uniform(0.1, 0.9, s)
        else:
            v = np.clip(rng.standard_normal(s), -3, 3)
        return self.laid_out(np.asarray(v, dtype=self.dtype))


DOMAIN_BOUNDS = {"normal": (-3.0, 3.0), "grid": (-2.0, 2.0), "pos": (0.5, 2.0),
                 "unit": (0.1, 0.9)}

@dataclass(frozen=True)
class Program:
    """A program: its inputs, statements, the loss (a weighted sum of values, one
    ``(value, weight input)`` per term) and optionally a second output."""

    seed: int
    mode: str
    inputs: tuple
    body: tuple
    loss: tuple
    extra: str | None = None  # a second output; the harness adds (extra ** 2).sum()
    note: str = ""

    @property
    def x_names(self) -> list:
        return [i.name for i in self.inputs if i.kind == "x"]

    def source(self, with_locals: bool = False) -> str:
        """The program as Python: ``def f(...)`` over ``T`` and ``F``. With
        ``with_locals`` it also returns ``locals()`` (every value, for the eager check)."""
        lines = [f"def f({', '.join(i.name for i in self.inputs)}):"]
        for s in self.body:
            lines += s.render("    ")
        terms = " + ".join(f"({v} * {w}).sum()" for v, w in self.loss) or "0.0"
        lines.append(f"    loss = {terms}")
        ret = "loss" + (f", {self.extra}" if self.extra else "")
        if with_locals:
            ret = f"({ret}), dict(locals())"
        lines.append(f"    return {ret}")
        return "\n".join(lines) + "\n"

    def data(self, k: int) -> dict:
        """The k-th set of input values: name -> numpy array (each input's values
        depend only on the seed, k and the input, not on the rest of the program)."""
        return {i.name: i.sample(np.random.default_rng([self.seed, k, i.uid]))
                for i in self.inputs}

    def defined(self) -> list:
        """Names the statements assign, in order."""
        out = []
        for s in self.body:
            if s.out:
                out += [n.strip() for n in s.out.split(",") if n.strip()]
        return out


# ----------------------------------------------------------------- values while drawing
@dataclass
class Val:
    """A value while drawing: shape, dtype, bound on its values, whether it requires
    grad, its alias family (the name of the base it views), and flags."""

    name: str
    shape: tuple
    dtype: str
    lo: float = 0.0
    hi: float = 0.0
    req: bool = False
    family: str = ""
    contig: bool = True
    writable: bool = True  # may be written in place (no input, no expanded view)
    kind: str = "float"  # float, bool, int

    def __post_init__(self) -> None:
        self.lo, self.hi = _cap(self.lo), _cap(self.hi)
        assert self.lo <= self.hi or self.lo != self.lo, (self.lo, self.hi)

    @property
    def numel(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def mag(self) -> float:
        return max(abs(self.lo), abs(self.hi))


def _hull(*ivs: tuple) -> tuple:
    return min(i[0] for i in ivs), max(i[1] for i in ivs)


def _mul_iv(a: tuple, b: tuple) -> tuple:
    p = [a[0] * b[0], a[0] * b[1], a[1] * b[0], a[1] * b[1]]
    return min(p), max(p)


def _bcast(*shapes: tuple) -> tuple | None:
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        return None


def _pow(b: float, e: float) -> float:
    try:
        return _cap(b ** e)
    except (OverflowError, ZeroDivisionError):
        return 1e100


def _cap(v: float) -> float:
    """Bounds are kept within +-1e100 (wild programs overflow; the bound need not)."""
    return min(max(float(v), -1e100), 1e100)


class Gen(Pieces, Rearranging):
    """Draws one program. ``rng`` is a ``random.Random``; every choice goes through it."""

    def __init__(self, seed: int, mode: str | None = None) -> None:
        self.rng = random.Random(seed)
        self.seed = seed
        if mode is None:
            names = list(MODES)
            mode = self.rng.choices(names, [MODES[m][0] for m in names])[0]
        self.mode = mode
        self.dtypes = MODES[mode][1]
        self.checks = MODES[mode][2]
        self.inputs: list[Input] = []
        self.body: list = []
        self.vals: dict[str, Val] = {}
        self.used: set[str] = set()
        self.n_inputs = 0
        self.n_vals = 0
        self.base_shape = self._shape(self.rng.choice([0, 1, 2, 2, 3]))
        self.written: set[str] = set()  # alias families written in place

    # ------------------------------------------------------------------ helpers
    def _dim(self) -> int:
        return self.rng.choices([0, 1, 2, 3, 4], [3, 20, 30, 30, 17])[0]

    def _shape(self, rank: int) -> tuple:
        return tuple(self._dim() for _ in range(rank))

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def new_name(self) -> str:
        self.n_vals += 1
        return f"v{self.n_vals - 1}"

    def new_input(self, shape: tuple, kind: str = "x", dtype: str | None = None,
                  domain: str | None = None, high: int = 0) -> Val:
        uid = self.n_inputs
        self.n_inputs += 1
        name = f"{kind}{uid}"
        if kind in "xcw":
            dtype = dtype or self.rng.choice(self.dtypes)
            domain = domain or self.rng.choices(["normal", "grid", "pos"], [70, 20, 10])[0]
            lo, hi = DOMAIN_BOUNDS[domain]
            vkind = "float"
        elif kind == "i":
            dtype, domain, lo, hi, vkind = "int64", domain or "int", -high, high, "int"
        else:
            dtype, domain, lo, hi, vkind = "bool", "mask", 0, 1, "bool"
        # the layout from its own generator: the programs stay those the seeds drew before
        layout = "C"
        if kind in "xc" and len(shape) >= 2:
            layout = random.Random(self.seed * 1000 + uid).choice("CCCCTFB")
        self.inputs.append(Input(name, tuple(shape), dtype, kind, domain, high, uid, layout))
        v = Val(name, tuple(shape), dtype, lo, hi, req=kind == "x", family=name,
                writable=False, kind=vkind)
        if kind != "w":
            self.vals[name] = v
        return v

    def add(self, stmt, val: Val | None = None) -> None:
        self.body.append(stmt)
        self.used.update(stmt.uses)
        if val is not None:
            self.vals[val.name] = val

    def floats(self, pred=None) -> list:
        return [v for v in self.vals.values() if v.kind == "float" and (pred is None or pred(v))]

    def pick(self, pred=None) -> Val | None:
        """A float value, favouring recent ones (values are reused)."""
        vs = self.floats(pred)
        if not vs:
            return None
        weights = [1.0 + 3.0 * k / len(vs) for k in range(len(vs))]
        return self.rng.choices(vs, weights)[0]

    def operand_for(self, a: Val, exact: bool = False, avoid: str = "") -> Val:
        """A float value whose shape broadcasts with ``a``'s (to exactly ``a``'s shape
        when ``exact``): an existing one (not of the alias family ``avoid``) or a new
        input."""
        if self.chance(0.6):
            if exact:
                cands = self.floats(lambda v: _bcast(v.shape, a.shape) == a.shape)
            else:
                cands = self.floats(lambda v: _bcast(v.shape, a.shape) is not None
                                    and len(_bcast(v.shape, a.shape)) <= 4)
            cands = [v for v in cands if v.family != avoid]
            if cands:
                return self.rng.choice(cands)
        shape = list(a.shape)
        r = self.rng.random()
        if r < 0.3 and shape:  # drop leading dims
            shape = shape[self.rng.randint(1, len(shape)):]
        elif r < 0.6 and shape:  # some dims to 1
            shape = [1 if self.chance(0.5) else d for d in shape]
        elif r < 0.7 and not exact and len(shape) < 4:  # a new leading dim
            shape = [self.rng.choice([1, 2, 3])] + shape
        elif r < 0.8 and not exact and shape:  # a 1 in a that becomes n
            shape = [self._dim() if d == 1 else d for d in shape]
        kind = "x" if self.chance(0.75) else "c"
        return self.new_input(tuple(shape), kind, dtype=self.rng.choice(self.dtypes))

    def out_val(self, shape: tuple, dtype: str, iv: tuple, req: bool, family: str = "",
                contig: bool = True, writable: bool = True, kind: str = "float") -> Val:
        name = self.new_name()
        return Val(name, tuple(shape), dtype, _cap(iv[0]), _cap(iv[1]), req,
                   family or name, contig, writable, kind)

    def ok_mag(self, iv: tuple, dtype: str) -> bool:
        return not self.checks or max(abs(iv[0]), abs(iv[1])) <= _limit(dtype)

    def promote(self, *vals: Val) -> str:
        """torch's result dtype for float values of these dtypes and ranks: a
        dimensioned tensor's dtype wins over a 0-d one's of the same category."""
        dims = [v.dtype for v in vals if v.rank > 0 and v.kind == "float"]
        pool = dims or [v.dtype for v in vals if v.kind == "float"] or ["float32"]
        return "float64" if "float64" in pool else "float32"

    # ------------------------------------------------------------------ positivity
    def positive(self, a: Val, lo_min: float = 0.05) -> tuple:
        """(template piece for ``$0`` made positive, its interval): ``$0`` itself when
        its bound allows (or in wild mode), else ``($0.abs() + 0.5)`` and the like."""
        if not self.checks or a.lo >= lo_min:
            return "$0", (a.lo, a.hi)
        m = a.mag
        r = self.rng.random()
        if r < 0.4:
            return "($0.abs() + 0.5)", (0.5, m + 0.5)
        if r < 0.7 and m * m + 0.25 <= _limit(a.dtype):
            return "($0 * $0 + 0.25)", (0.25, m * m + 0.25)
        if r < 0.85 and a.hi <= 10:
            lo = math.exp(a.lo)
            if lo >= lo_min:
                return "$0.exp()", (lo, math.exp(a.hi))
        return "T.sigmoid($0)", (1 / (1 + math.exp(min(-a.lo, 700))) or 1e-300, 1.0)

    def nonzero(self, a: Val) -> tuple:
        if not self.checks or a.lo >= 0.1 or a.hi <= -0.1:
            return "$0", (a.lo, a.hi)
        if self.chance(0.5):
            return "($0.abs() + 0.5)", (0.5, a.mag + 0.5)
        return "(1 + $0 * $0)", (1.0, 1 + a.mag ** 2)

    # ---------------------------------------------------------------- unary ops
    def unary_choices(self, a: Val) -> list:
        """(templates, interval) for elementwise ops of ``a`` that its bound allows."""
        lo, hi, dt = a.lo, a.hi, a.dtype
        m = a.mag
        out = []

        def sq(iv):
            return (0.0 if iv[0] <= 0 <= iv[1] else min(iv[0] ** 2, iv[1] ** 2),
                    max(iv[0] ** 2, iv[1] ** 2))

        if not self.checks or hi <= (30 if dt == "float64" else 8):
            out.append((["T.exp($0)", "$0.exp()"],
                        (math.exp(min(lo, 700)), math.exp(min(hi, 700)))))
        p, piv = self.positive(a)
        out.append(([f"T.log({p})", f"{p}.log()"], (math.log(piv[0]) if piv[0] > 0 else -1e300,
                                                  math.log(max(piv[1], 1e-300)))))
        p, piv = self.positive(a)
        out.append(([f"T.sqrt({p})", f"{p}.sqrt()", f"{p} ** 0.5"],
                    (math.sqrt(max(piv[0], 0)), math.sqrt(max(piv[1], 0)))))
        out.append((["T.sin($0)", "$0.sin()", "T.cos($0)", "$0.cos()"], (-1.0, 1.0)))
        out.append((["T.tanh($0)", "$0.tanh()"], (math.tanh(lo), math.tanh(hi))))
        out.append((["T.sigmoid($0)", "$0.sigmoid()"], (0.0, 1.0)))
        out.append((["T.abs($0)", "$0.abs()", "abs($0)"], (0.0, m)))
        out.append((["-$0", "T.neg($0)", "$0.neg()"], (-hi, -lo)))
        out.append((["T.relu($0)", "$0.relu()", "F.relu($0)"], (max(lo, 0.0), max(hi, 0.0))))
        out.append((["T.sign($0)", "$0.sign()"], (-1.0, 1.0)))
        if self.ok_mag(sq((lo, hi)), dt):
            out.append((["$0 * $0", "$0 ** 2", "$0.pow(2)", "T.pow($0, 2)"], sq((lo, hi))))
        if self.ok_mag((m ** 3, m ** 3), dt):
            out.append((["$0 ** 3", "T.pow($0, 3)"], (lo ** 3, hi ** 3)))
        n, niv = self.nonzero(a)
        if niv[0] > 0 or niv[1] < 0 or not self.checks:
            inv = (1 / niv[1], 1 / niv[0]) if niv[0] > 0 or niv[1] < 0 else (-1e300, 1e300)
            out.append(([f"1 / {n}", f"{n} ** -1", f"1.5 / {n}", f"T.div(1, {n})"],
                        (min(inv) * 1.5 if min(inv) < 0 else min(inv),
                         max(inv) * 1.5 if max(inv) > 0 else max(inv))))
        if not self.checks or hi <= 20:
            out.append((["2.0 ** $0", "T.pow(2.0, $0)"],
                        (2.0 ** min(lo, 1000), 2.0 ** min(hi, 1000))))
        s = self.rng.choice([0.5, 2.0, -1.5, 3.0, 1.0])
        t = self.rng.choice([1.0, -0.5, 2.0])
        out.append(([f"$0 * {s}", f"{s} * $0", f"$0 / {1 / s}"], _mul_iv((lo, hi), (s, s))))
        out.append(([f"$0 + {t}", f"{t} + $0", f"$0 - {t}"], (lo - abs(t), hi + abs(t))))
        out.append(([f"{t} - $0"], (t - hi, t - lo)))
        c1, c2 = sorted(self.rng.sample([-1.0, -0.5, 0.0, 0.5, 1.0], 2))
        out.append(([f"T.clamp($0, {c1}, {c2})", f"$0.clamp({c1}, {c2})",
                     f"T.clip($0, min={c1}, max={c2})"],
                    (min(max(lo, c1), c2), max(min(hi, c2), c1))))
        out.append(([f"$0.clamp(min={c1})", f"T.clamp($0, min={c1})"], (max(lo, c1), max(hi, c1))))
        out.append(([f"$0.clamp(max={c2})"], (min(lo, c2), min(hi, c2))))
        out.append((["$0.clone()", "$0 * 1"], (lo, hi)))
        out += self.more_unary_choices(a)
        return [c for c in out if self.ok_mag(c[1], dt)]

    def more_unary_choices(self, a: Val) -> list:
        """The trigonometric, hyperbolic, special and rounding functions."""
        lo, hi, dt, m = a.lo, a.hi, a.dtype, a.mag
        out = []
        if m <= 1.2 or not self.checks:
            out.append((["T.tan($0)", "$0.tan()"], (math.tan(max(lo, -1.5)),
                                                    math.tan(min(hi, 1.5)))))
        out.append((["T.atan($0)", "T.arctan($0)", "T.asinh($0)", "T.erf($0)", "$0.erf()",
                     "T.tanh($0) * 0.5"], (max(-1.6, min(lo, 0.0) - 1), 1.6)))
        out.append((["T.asin(T.tanh($0) * 0.9)", "T.acos(T.tanh($0) * 0.9)",
                     "T.atanh(T.tanh($0) * 0.9)", "T.erfinv(T.tanh($0) * 0.9)"], (-1.5, 3.15)))
        out.append((["T.acosh($0 * $0 + 1.25)", "T.acosh($0.abs() + 1.5)"],
                    (0.69, math.acosh(m * m + 1.5) + 1)))
        out.append((["T.erfc($0)", "T.sigmoid($0) * 2"], (0.0, 2.0)))
        out.append((["T.sinc($0)", "$0.sinc()"], (-0.25, 1.0)))
        if m <= (10 if dt == "float64" else 5) or not self.checks:
            e = math.exp(min(m, 700))
            out.append((["T.sinh($0)", "T.cosh($0)", "T.expm1($0)", "T.exp2($0)"],
                        (-e, e)))
        p, piv = self.positive(a, lo_min=0.25)
        big = math.log(max(piv[1], 1e-300)) + 2
        out.append(([f"T.log2({p})", f"T.log10({p})", f"T.log1p({p})", f"{p}.rsqrt()",
                     f"T.lgamma({p})", f"T.digamma({p})"],
                    (-max(5.0, 1 / math.sqrt(max(piv[0], 1e-300))), max(big * piv[1], 5.0))))
        out.append((["T.floor($0)", "T.ceil($0)", "T.round($0)", "T.trunc($0)", "$0.frac()",
                     "T.round($0, decimals=1)"], (lo - 1, hi + 1)))
        out.append((["T.deg2rad($0)", "T.nan_to_num($0)", "T.square($0) * 0.1"],
                    (min(lo, 0.0) - 0.1 * m * m, max(hi, 0.0) + 0.1 * m * m)))
        return out

    def gen_unary(self) -> bool:
        a = self.pick()
        if a is None:
            return False
        templates, iv = self.rng.choice(self.unary_choices(a))
        t = self.rng.choice(templates)
        self.add(Line(t, (a.name,), (v := self.out_val(a.shape, a.dtype, iv, a.req,
                                                       contig=a.contig)).name), v)
        return True

    def gen_detach_cast(self) -> bool:
        a = self.pick()
        if a is None:
            return False
        if self.mode == "mixed" and self.chance(0.7):
            t, dt = self.rng.choice([("$0.float()", "float32"), ("$0.double()", "float64"),
                                     ("$0.to(T.float32)", "float32"),
                                     ("$0.to(T.float64)", "float64")])
            if a.mag > _limit("float32") and dt == "float32":
                return False
            v = self.out_val(a.shape, dt, (a.lo, a.hi), a.req, contig=a.contig)
            if dt == a.dtype:  # torch returns a itself
                v.family, v.writable = a.family, a.writable
        else:
            t = self.rng.choice(["$0.detach()", "$0.detach() * $0", "$0.data * 2"])
            iv = {"$0.detach()": (a.lo, a.hi), "$0.data * 2": (2 * a.lo, 2 * a.hi)}.get(
                t, _mul_iv((a.lo, a.hi), (a.lo, a.hi)))
            if not self.ok_mag(iv, a.dtype):
                return False
            v = self.out_val(a.shape, a.dtype, iv, a.req and t == "$0.detach() * $0",
                             contig=a.contig)
            if t == "$0.detach()":  # shares a's memory: a write to it writes a
                v.family, v.writable, v.contig = a.family, a.writable, a.contig
        self.add(Line(t, (a.name,), v.name), v)
        return True

    def gen_softmax(self) -> bool:
        a = self.pick()
        if a is None:
            return False
        d = self.rng.randrange(-a.rank, a.rank) if a.rank else self.rng.choice([0, -1])
        n = max(a.shape[d], 1) if a.rank else 1
        if self.chance(0.5):
            t = self.rng.choice([f"T.softmax($0, dim={d})", f"$0.softmax({d})",
                                 f"F.softmax($0, dim={d})"])
            iv = (0.0, 1.0)
        else:
            t = self.rng.choice([f"T.log_softmax($0, dim={d})", f"$0.log_softmax(dim={d})",
                                 f"F.log_softmax($0, {d})"])
            iv = (a.lo - a.hi - math.log(n), 0.0)
        v = self.out_val(a.shape, a.dtype, iv, a.req, contig=a.contig)
        self.add(Line(t, (a.name,), v.name), v)
        return True

    # --------------------------------------------------------------- binary ops
    def gen_binary(self) -> bool:
        a = self.pick()
        if a is None:
            return False
        b = self.operand_for(a)
        shape = _bcast(a.shape, b.shape)
        dt = self.promote(a, b)
        A, B = (a.lo, a.hi), (b.lo, b.hi)
        req = a.req or b.req
        op = self.rng.choices(["add", "sub", "mul", "div", "pow", "max", "where", "mask", "more"],
                              [20, 15, 25, 12, 8, 10, 8, 4, 12])[0]
        if op == "add":
            t, iv = self.rng.choice([("$0 + $1", None), ("T.add($0, $1)", None),
                                     ("$0.add($1)", None), ("$0.add($1, alpha=0.5)", 0.5)])
            k = iv or 1.0
            iv = (A[0] + k * min(B[0], B[1] * 1), A[1] + k * B[1]) if k > 0 else None
        elif op == "sub":
            t = self.rng.choice(["$0 - $1", "T.sub($0, $1)", "$0.sub($1)"])
            iv = (A[0] - B[1], A[1] - B[0])
        elif op == "mul":
            t = self.rng.choice(["$0 * $1", "T.mul($0, $1)", "$0.mul($1)", "T.multiply($0, $1)"])
            iv = _mul_iv(A, B)
        elif op == "div":
            n, niv = self.nonzero(b)
            n = n.replace("$0", "$1")
            t = self.rng.choice([f"$0 / {n}", f"T.div($0, {n})", f"$0.div({n})"])
            if niv[0] > 0 or niv[1] < 0:
                iv = _mul_iv(A, (1 / niv[1], 1 / niv[0]))
            else:
                iv = (-1e300, 1e300)
        elif op == "pow":
            # a base >= 0.1 in every mode, wild included (no NaN of a negative base), or
            # half the time |a| ** |b|: bases of exactly 0 on grid data
            p, piv = self.positive(a, lo_min=0.1)
            if p == "$0" and a.lo < 0.1:
                p, piv = "($0.abs() + 0.5)", (0.5, a.mag + 0.5)
            e = "$1"
            if self.chance(0.5):
                p, piv, e, B = "$0.abs()", (0.0, a.mag), "$1.abs()", (0.0, b.mag)
            if self.checks and b.mag > 4:
                return False
            t = self.rng.choice([f"{p} ** {e}", f"T.pow({p}, {e})", f"{p}.pow({e})"])
            cands = [_pow(base, ex) for base in piv for ex in B]
            iv = (min(cands + [1.0]), max(cands + [1.0]))
        elif op == "max":
            if self.chance(0.5):
                t = self.rng.choice(["T.maximum($0, $1)", "$0.maximum($1)", "T.max($0, $1)"])
                iv = (max(A[0], B[0]), max(A[1], B[1]))
            else:
                t = self.rng.choice(["T.minimum($0, $1)", "$0.minimum($1)", "T.min($0, $1)"])
                iv = (min(A[0], B[0]), min(A[1], B[1]))
        elif op == "where":
            t = self.rng.choice(["T.where($0 > $1, $0, $1)", "T.where($1 < 0, $0, $1)",
                                 "T.where($0 >= 0.5, $1, $0)", "T.where($0 > 0, $0, 0.0)"])
            iv = _hull(A, B, (0.0, 0.0))
            if t.endswith("0.0)"):
                shape, dt, req = a.shape, a.dtype, a.req
        elif op == "mask":  # a float times a bool
            t = self.rng.choice(["$0 * ($1 > 0)", "($1 <= 0.5) * $0"])
            iv = _hull(A, (0.0, 0.0))
            dt, req = a.dtype, a.req
        else:
            t, iv = self.more_binary(a, b)
        if iv is None or not self.ok_mag(iv, dt):
            return False
        v = self.out_val(shape, dt, iv, req, contig=a.contig and b.contig)
        self.add(Line(t, (a.name, b.name), v.name), v)
        return True

    def more_binary(self, a: Val, b: Val) -> tuple:
        """(template, interval) of a two-operand function of ``a`` and ``b``."""
        A, B = (a.lo, a.hi), (b.lo, b.hi)
        m = a.mag + b.mag
        n, niv = self.nonzero(b)
        n = n.replace("$0", "$1")
        p, piv = self.positive(b, lo_min=0.25)
        p = p.replace("$0", "$1")
        choices = [
            (self.rng.choice(["T.atan2($0, $1)", "T.arctan2($0, $1)"]), (-3.15, 3.15)),
            ("T.hypot($0, $1)", (0.0, m)),
            (self.rng.choice(["T.logaddexp($0, $1)", "T.logaddexp2($0, $1)"]),
             (max(A[0], B[0]), max(A[1], B[1]) + 1)),
            (self.rng.choice(["T.fmax($0, $1)", "T.fmin($0, $1)"]), _hull(A, B)),
            (self.rng.choice(["T.copysign($0, $1)"]), (-a.mag, a.mag)),
            (self.rng.choice(["T.lerp($0, $1, 0.3)", "T.lerp($0, $1, 0.75)",
                              "$0.lerp($1, T.sigmoid($1))"]), _hull(A, B, (-m, m))),
            (self.rng.choice(["T.addcmul($0, $1, $0, value=0.5)", "$0.addcmul($1, $1)"]),
             (-m - m * m, m + m * m)),
        ]
        if niv[0] > 0 or niv[1] < 0:
            k = 1 / min(abs(niv[0]), abs(niv[1]))
            choices += [(self.rng.choice([f"T.remainder($0, {n})", f"T.fmod($0, {n})",
                                          f"$0.remainder({n})"]), (-max(abs(niv[0]),
                                                                        abs(niv[1])), max(
                                                                  abs(niv[0]), abs(niv[1])))),
                        (f"T.addcdiv($0, $0, {n}, value=0.5)", (-a.mag * (1 + k), a.mag * (1 + k)))]
        if piv[0] > 0:
            choices.append((f"T.xlogy($0, {p})", (-a.mag * (abs(math.log(piv[0])) + abs(
                math.log(piv[1]))), a.mag * (abs(math.log(piv[0])) + abs(math.log(piv[1]))))))
        return self.rng.choice(choices)

    def gen_stat(self) -> bool:
        """The statistics reductions: prod, cumsum, cumprod, var, std, logsumexp, amax,
        amin, nansum, median."""
        a = self.pick()
        if a is None:
            return False
        op = self.rng.choice(["prod", "cumsum", "cumprod", "var", "std", "logsumexp",
                              "amax", "amin", "nansum", "median"])
        keep = self.chance(0.35)
        kw = ", keepdim=True" if keep else ""
        if a.rank == 0 or op == "median" or self.chance(0.25):  # every element
            red, shape = max(a.numel, 1), ()
            t = {"cumsum": "$0.flatten().cumsum(0)", "cumprod": "$0.flatten().cumprod(0)",
                 "logsumexp": f"T.logsumexp($0, {tuple(range(a.rank))})"}.get(op, f"$0.{op}()")
            if op in ("cumsum", "cumprod"):
                shape = (a.numel,)
            if op in ("var", "std") and a.numel < 2:
                return False
            if op in ("amax", "amin", "median") and a.numel == 0:
                return False
        else:
            d = self.rng.randrange(-a.rank, a.rank)
            n = a.shape[d]
            red = max(n, 1)
            shape = tuple(1 if i == d % a.rank else s for i, s in enumerate(a.shape)) if keep \
                else tuple(s for i, s in enumerate(a.shape) if i != d % a.rank)
            if op in ("cumsum", "cumprod"):
                shape, t = a.shape, self.rng.choice([f"$0.{op}({d})", f"T.{op}($0, dim={d})"])
            elif op in ("amax", "amin") and n == 0:
                return False
            elif op in ("var", "std") and n < 2:
                return False
            else:
                t = self.rng.choice([f"$0.{op}({d}{kw})", f"T.{op}($0, {d}{kw})"])
        lo, hi, m = a.lo, a.hi, a.mag
        if op == "prod" or op == "cumprod":
            if self.checks and m ** red > _limit(a.dtype):
                return False
            iv = (-max(m, 1) ** red, max(m, 1) ** red)
        elif op in ("cumsum", "nansum"):
            iv = (min(lo * red, lo, 0.0), max(hi * red, hi, 0.0))
        elif op in ("var", "std"):
            iv = (0.0, 4 * m * m + 1)
        elif op == "logsumexp":
            iv = (lo, hi + math.log(red) + 1)
        else:
            iv = (lo, hi)
        if not self.ok_mag(iv, a.dtype):
            return False
        v = self.out_val(shape, a.dtype, iv, a.req, contig=a.contig)
        self.add(Line(t, (a.name,), v.name), v)
        return True

    def gen_where_mask(self) -> bool:
        """where with a bool value (a comparison kept as a value, or a mask input)."""
        a = self.pick()
        if a is None:
            return False
        b = self.operand_for(a)
        shape = _bcast(a.shape, b.shape)
        if self.chance(0.5):
            c = self.new_input(tuple(d for d in shape[self.rng.randint(0, len(shape)):]), "m")
            cname = c.name
        else:
            src = self.operand_for(a)
            if _bcast(src.shape, shape) is None:
                return False
            c = self.out_val(src.shape, "bool", (0, 1), False, kind="bool", contig=False)
            cmp_ = self.rng.choice(["$0 > 0", "$0 <= 0.5", "$0 < 0", "$0.ge(0.25)", "$0.lt(0)"])
            self.add(Line(cmp_, (src.name,), c.name), c)
            cname = c.name
        shape = _bcast(shape, c.shape)
        v = self.out_val(shape, self.promote(a, b), _hull((a.lo, a.hi), (b.lo, b.hi)),
                         a.req or b.req, contig=a.contig and b.contig)
        self.add(Line("T.where($0, $1, $2)", (cname, a.name, b.name), v.name), v)
        return True

    # -------------------------------------------------------------- reductions
    def gen_reduce(self) -> bool:
        a = self.pick()
        if a is None:
            return False
        op = self.rng.choice(["sum", "sum", "mean", "max", "min"])
        keep = self.chance(0.35)
        kw = ", keepdim=True" if keep else ""
        n_all = max(a.numel, 1)
        full = self.chance(0.3)
        if full:
            t = self.rng.choice([f"$0.{op}()", f"T.{op}($0)"])
            shape, red = (), n_all
        elif a.rank == 0:  # dim 0 or -1 of a 0-d value
            d = self.rng.choice([0, -1])
            t = self.rng.choice([f"$0.{op}({d}{kw})", f"T.{op}($0, {d})"])
            if op in ("max", "min"):
                t = f"$0.{op}({d}{kw}).values"
            shape, red = (), 1
        else:
            if op in ("sum", "mean") and self.chance(0.3) and a.rank >= 2:
                dims = tuple(sorted(self.rng.sample(range(a.rank), self.rng.randint(1, a.rank))))
                dims = tuple(d - a.rank if self.chance(0.3) else d for d in dims)
                dspec = repr(dims)
            else:
                d = self.rng.randrange(-a.rank, a.rank)
                dims, dspec = (d,), str(d)
            pos = {d % a.rank for d in dims}
            red = max(int(np.prod([a.shape[d] for d in pos])), 1)
            shape = tuple(1 if i in pos else s for i, s in enumerate(a.shape)) if keep else \
                tuple(s for i, s in enumerate(a.shape) if i not in pos)
            if op in ("sum", "mean"):
                t = self.rng.choice([f"$0.{op}({dspec}{kw})", f"T.{op}($0, {dspec}{kw})",
                                     f"$0.{op}(dim={dspec}{kw})"])
            else:
                t = self.rng.choice([f"$0.{op}({dspec}{kw}).values", f"T.{op}($0, {dspec}{kw})[0]",
                                     f"$0.{op}(dim={dspec}{kw})[0]"])
        if op == "sum":
            iv = (min(a.lo * red, a.lo), max(a.hi * red, a.hi))
        else:
            iv = (a.lo, a.hi)
        if not self.ok_mag(iv, a.dtype):
            return False
        v = self.out_val(shape, a.dtype, iv, a.req, contig=a.contig)
        self.add(Line(t, (a.name,), v.name), v)
        return True

    # ------------------------------------------------------------------ matmul
    def gen_matmul(self) -> bool:
        a = self.pick(lambda v: 1 <= v.rank <= 3)
        if a is None:
            return False
        n = a.shape[-1]
        m = self._dim()
        if a.rank == 1:
            bshape = self.rng.choice([(n,), (n, m), (self.rng.choice([1, 2]), n, m)])
        elif a.rank == 2:
            bshape = self.rng.choice([(n,), (n, m), (n, m), (self.rng.choice([1, 2]), n, m)])
        else:
            bshape = self.rng.choice([(n,), (n, m), (a.shape[0], n, m), (1, n, m)])
        transposed = len(bshape) >= 2 and self.chance(0.25)
        want = bshape[:-2] + (bshape[-1], bshape[-2]) if transposed else bshape
        cands = self.floats(lambda v: v.shape == want and v.name != a.name)
        b = self.rng.choice(cands) if cands and self.chance(0.6) else \
            self.new_input(want, "x" if self.chance(0.8) else "c", dtype=a.dtype)
        bt = "$1"
        if transposed:
            bt = self.rng.choice(["$1.mT", "$1.transpose(-1, -2)"] + (
                ["$1.t()", "$1.T", "T.t($1)"] if len(bshape) == 2 else []))
        out = np.matmul(np.zeros(a.shape), np.zeros(bshape)).shape
        if a.rank == 1 and len(bshape) == 1:
            t = self.rng.choice([f"$0 @ {bt}", f"T.matmul($0, {bt})", f"$0.dot({bt})"])
        elif a.rank == 2 and len(bshape) == 2:
            t = self.rng.choice([f"$0 @ {bt}", f"T.mm($0, {bt})", f"$0.mm({bt})",
                                 f"$0.matmul({bt})"])
        else:
            t = self.rng.choice([f"$0 @ {bt}", f"T.matmul($0, {bt})", f"$0.matmul({bt})"])
        k = max(n, 1)
        iv = _mul_iv((a.lo, a.hi), (b.lo, b.hi))
        iv = (min(iv[0] * k, 0.0), max(iv[1] * k, 0.0))
        dt = self.promote(a, b) if a.dtype == b.dtype else None
        if dt is None:
            return False  # torch's matmul wants one dtype
        if not self.ok_mag(iv, dt):
            return False
        v = self.out_val(out, dt, iv, a.req or b.req, contig=a.contig and b.contig)
        self.add(Line(t, (a.name, b.name), v.name), v)
        return True

    # ------------------------------------------------------------------- shapes
    def _factor(self, numel: int) -> tuple:
        if numel == 0:
            shape = [self.rng.choice([0, 1, 2, 3]) for _ in range(self.rng.randint(1, 3))]
            shape[self.rng.randrange(len(shape))] = 0
            return tuple(shape)
        dims, left = [], numel
        for p in (2, 3, 5, 7):
            while left % p == 0:
                dims.append(p)
                left //= p
        if left > 1:
            dims.append(left)
        self.rng.shuffle(dims)
        out = []
        for d in dims:
            if out and self.chance(0.5):
                out[-1] *= d
            else:
                out.append(d)
        while len(out) < 4 and self.chance(0.25):
            out.insert(self.rng.randint(0, len(out)), 1)
        return tuple(out) if out else ()

    def gen_shape(self) -> bool:
        a = self.pick()
        if a is None:
            return False
        r = a.rank
        ops = ["reshape", "flatten", "unsqueeze"]
        if r >= 1:
            ops += ["permute", "squeeze", "expand", "transpose"]
        else:  # dim 0 or -1 of a 0-d value
            ops += ["zerod"]
        op = self.rng.choice(ops)
        contig, writable, family = a.contig, a.writable, a.family
        if op == "zerod":
            t, shape = self.rng.choice([("$0.squeeze(0)", ()), ("$0.squeeze(-1)", ()),
                                        ("$0.transpose(0, -1)", ()), ("$0.flatten(0, -1)", (1,)),
                                        ("$0.unsqueeze(-1)", (1,))])
        elif op == "reshape":
            shape = self._factor(a.numel)
            spec = list(shape)
            if a.numel > 0 and spec and self.chance(0.3):
                spec[self.rng.randrange(len(spec))] = -1
            s = ", ".join(map(str, spec))
            tuple_s = "(" + s + ("," if len(spec) == 1 else "") + ")"
            choices = [f"$0.reshape({tuple_s})", f"T.reshape($0, {tuple_s})"]
            if spec:
                choices.append(f"$0.reshape({s})")
            if a.contig or self.chance(0.3):  # (non-contiguous: a view where the strides
                # allow one, else torch's RuntimeError)
                choices.append(f"$0.view({tuple_s})" if not spec else f"$0.view({s})")
            t = self.rng.choice(choices)
        elif op == "flatten":
            if r >= 2 and self.chance(0.5):
                s, e = sorted(self.rng.sample(range(r), 2))
                t = f"$0.flatten({s}, {e})"
                shape = a.shape[:s] + (int(np.prod(a.shape[s:e + 1])),) + a.shape[e + 1:]
            else:
                t = self.rng.choice(["$0.flatten()", "T.flatten($0)"])
                shape = (a.numel,)
        elif op == "unsqueeze":
            if r == 0:
                t, shape = self.rng.choice([("$0[None]", (1,)), ("$0.reshape(1, 1)", (1, 1))])
            else:
                d = self.rng.randint(-r - 1, r)
                t = self.rng.choice([f"$0.unsqueeze({d})", f"T.unsqueeze($0, {d})"])
                shape = list(a.shape)
                shape.insert(d % (r + 1), 1)
        elif op == "permute":
            perm = list(range(r))
            self.rng.shuffle(perm)
            t = self.rng.choice([f"$0.permute({', '.join(map(str, perm))})",
                                 f"T.permute($0, {tuple(perm)})"])
            shape = tuple(a.shape[p] for p in perm)
            contig = contig and perm == sorted(perm)
        elif op == "transpose":
            if r == 1:
                t, shape = "$0.t()", a.shape
            else:
                d0, d1 = self.rng.sample(range(-r, r), 2)
                if (d0 - d1) % r == 0:
                    return False
                t = self.rng.choice([f"$0.transpose({d0}, {d1})", f"T.transpose($0, {d0}, {d1})"]
                                    + (["$0.t()", "T.t($0)", "$0.T"] if r == 2 else [])
                                    + (["$0.mT"] if r >= 2 else []))
                shape = list(a.shape)
                if t in ("$0.t()", "T.t($0)", "$0.T", "$0.mT"):
                    d0, d1 = -1, -2
                shape[d0], shape[d1] = shape[d1], shape[d0]
                contig = False
        elif op == "squeeze":
            ones = [i for i, s in enumerate(a.shape) if s == 1]
            if ones and self.chance(0.6):
                sel = self.rng.sample(ones, self.rng.randint(1, len(ones)))
                if len(sel) == 1 and self.chance(0.6):
                    d = sel[0] - (r if self.chance(0.3) else 0)
                    t = self.rng.choice([f"$0.squeeze({d})", f"T.squeeze($0, {d})"])
                else:
                    t = f"$0.squeeze({tuple(sorted(sel))})"
                shape = tuple(s for i, s in enumerate(a.shape) if i not in sel)
            else:
                d = self.rng.randrange(-r, r)
                if a.shape[d] == 1:
                    return False
                t = self.rng.choice(["$0.squeeze()", f"$0.squeeze({d})"])
                shape = tuple(s for s in a.shape if s != 1) if t == "$0.squeeze()" else a.shape
        else:  # expand
            shape = [self._dim() if s == 1 and self.chance(0.7) else s for s in a.shape]
            lead = [self.rng.choice([1, 2, 3]) for _ in range(self.rng.choice([0, 0, 1]))]
            if len(lead) + r > 4:
                lead = []
            spec = lead + [-1 if s == o and self.chance(0.5) else s
                           for s, o in zip(shape, a.shape)]
            shape = lead + shape
            t = f"$0.expand({', '.join(map(str, spec))})" if spec else "$0.expand(())"
            contig, writable = False, False
        v = self.out_val(tuple(shape), a.dtype, (a.lo, a.hi), a.req, family=family,
                         contig=contig, writable=writable)
        self.add(Line(t, (a.name,), v.name), v)
        return True

    # ----------------------------------------------------------------- indexing
    def _basic_index(self, shape: tuple) -> str | None:
        """A random basic index for ``shape`` (ints, slices, None, ...), as source."""
        r = len(shape)
        items = []
        k = self.rng.randint(1, max(1, r))
        for d in range(min(k, r)):
            n = shape[d]
            c = self.rng.random()
            if c < 0.3 and n > 0:
                items.append(str(self.rng.randrange(-n, n)))
            elif c < 0.8:
                lo = self.rng.choice([None, 0, 1, -1, 2])
                hi = self.rng.choice([None, None, -1, 2, 3, 1])
                st = self.rng.choice([None, None, 2])
                items.append(f"{'' if lo is None else lo}:{'' if hi is None else hi}"
                             + ("" if st is None else f":{st}"))
            else:
                items.append(":")
        if self.chance(0.15):
            items.insert(self.rng.randint(0, len(items)), "None")
        if self.chance(0.15) and r > 0:
            items.insert(0, "...")
        if not items:
            return None
        return ", ".join(items)

    def _index_shape(self, shape: tuple, idx: str) -> tuple | None:
        try:
            return np.zeros(shape)[eval(f"np.s_[{idx}]")].shape
        except (IndexError, ValueError, TypeError):
            return None

    def gen_index(self) -> bool:
        a = self.pick(lambda v: v.rank >= 1)
        if a is None:
            return False
        c = self.rng.random()
        if c < 0.55:
            idx = self._basic_index(a.shape)
            shape = idx and self._index_shape(a.shape, idx)
            if shape is None:
                return False
            v = self.out_val(shape, a.dtype, (a.lo, a.hi), a.req, family=a.family,
                             contig=False, writable=a.writable)
            self.add(Line(f"$0[{idx}]", (a.name,), v.name), v)
            return True
        if c < 0.7:  # a list of ints on one dim
            d = self.rng.randrange(a.rank)
            n = a.shape[d]
            if n == 0:
                return False
            lst = [self.rng.randrange(-n, n) for _ in range(self.rng.randint(1, 3))]
            idx = ", ".join([":"] * d + [repr(lst)])
            shape = self._index_shape(a.shape, idx)
            v = self.out_val(shape, a.dtype, (a.lo, a.hi), a.req, contig=False)
            self.add(Line(f"$0[{idx}]", (a.name,), v.name), v)
            return True
        if c < 0.82:  # an int index tensor (data: a guard on its value when compiled)
            n = a.shape[0]
            if n == 0:
                return False
            i = self.new_input((self.rng.randint(1, 3),), "i", high=n)
            shape = i.shape + a.shape[1:]
            v = self.out_val(shape, a.dtype, (a.lo, a.hi), a.req, contig=False)
            self.add(Line("$0[$1]", (a.name, i.name), v.name), v)
            return True
        if c < 0.92:  # a bool mask: the length depends on the data, so it is summed at once
            if self.chance(0.5):
                m, args = self.rng.choice(["$0 > 0", "$0.abs() < 1"]), (a.name,)
            else:
                m = "$1"
                args = (a.name, self.new_input(a.shape[:self.rng.randint(1, a.rank)], "m").name)
            t = self.rng.choice([f"$0[{m}].sum()", f"($0[{m}] * 2).sum()",
                                 f"T.sum($0[{m}] * $0[{m}])"])
            k = max(a.numel, 1)
            iv = _hull((a.lo * k, a.hi * k), (0.0, 0.0), (2 * a.lo * k, 2 * a.hi * k),
                       (0.0, a.mag ** 2 * k))
            if not self.ok_mag(iv, a.dtype):
                return False
            v = self.out_val((), a.dtype, iv, a.req)
            self.add(Line(t, args, v.name), v)
            return True
        # data-dependent int: y[int(h.argmax()) % n]
        h = self.pick(lambda v: v.numel >= 1)
        n = a.shape[0]
        if h is None or n == 0:
            return False
        v = self.out_val(a.shape[1:], a.dtype, (a.lo, a.hi), a.req, family=a.family,
                         contig=False, writable=a.writable)
        t = self.rng.choice([f"$1[int($0.argmax()) % {n}]", f"$1[int(T.argmin($0)) % {n}]"])
        self.add(Line(t, (h.name, a.name), v.name), v)
        return True

    # ---------------------------------------------------------------- in place
    def _write(self, target: Val, iv: tuple, req: bool) -> None:
        """Every value of ``target``'s family may now hold values in ``iv``."""
        for v in self.vals.values():
            if v.family == target.family:
                v.lo, v.hi = _cap(min(v.lo, iv[0])), _cap(max(v.hi, iv[1]))
                v.req = v.req or req

    def gen_copy(self) -> Val | None:
        a = self.pick()
        if a is None:
            return None
        t = self.rng.choice(["$0 * 1", "$0.clone()", "$0 + 0", "T.zeros_like($0)",
                             "T.ones_like($0)", "zeros"])
        if t == "zeros":
            dt = "T.float64" if a.dtype == "float64" else "T.float32"
            shp = ", ".join(map(str, a.shape))
            t = self.rng.choice([f"T.zeros({shp}, dtype={dt})" if shp else
                                 f"T.zeros((), dtype={dt})",
                                 f"T.zeros(({shp}{',' if len(a.shape) == 1 else ''}), dtype={dt})"])
            args, iv, req = (), (0.0, 0.0), False
        else:
            args = (a.name,)
            iv = {"T.zeros_like($0)": (0.0, 0.0), "T.ones_like($0)": (1.0, 1.0)}.get(
                t, (a.lo, a.hi))
            req = a.req and "like" not in t
        v = self.out_val(a.shape, a.dtype, iv, req, contig=a.contig)
        self.add(Line(t, args, v.name), v)
        return v

    def gen_inplace(self) -> bool:
        targets = self.floats(lambda v: v.writable and v.kind == "float")
        t = self.rng.choice(targets) if targets and self.chance(0.6) else self.gen_copy()
        if t is None:
            return False
        c = self.rng.random()
        idx = None
        if t.rank >= 1 and c < 0.6:
            if self.chance(0.8):
                idx = self._basic_index(t.shape)
            else:
                n = t.shape[0]
                if n:
                    idx = repr(sorted({self.rng.randrange(n) for _ in range(2)}))
        tshape = t.shape if idx is None else self._index_shape(t.shape, idx)
        if tshape is None:
            return False
        view = "$0" if idx is None else f"$0[{idx}]"
        tv = Val("_", tshape, t.dtype, t.lo, t.hi, t.req)
        form = self.rng.choice(["set", "set", "unary", "binary", "scalar"])
        if idx is None and form == "set":
            form = "binary"
        if form == "set":
            r = self.rng.random()
            if r < 0.4:
                s = self.rng.choice([0.0, 0.5, -1.0])
                line, iv, req = Line(f"{view} = {s}", (t.name,)), (s, s), False
            elif r < 0.7:
                k = self.rng.choice([2, -1.5, 0.5])
                line = Line(f"{view} = {view} * {k}", (t.name,))
                iv, req = _mul_iv((t.lo, t.hi), (k, k)), t.req
            else:
                b = self.operand_for(tv, exact=True, avoid=t.family)
                line, iv, req = Line(f"{view} = $1", (t.name, b.name)), (b.lo, b.hi), b.req
        elif form == "unary":
            cands = [("exp_()", (math.exp(t.lo), math.exp(t.hi))) if t.hi < 10 else None,
                     ("tanh_()", (-1.0, 1.0)), ("sigmoid_()", (0.0, 1.0)),
                     ("sin_()", (-1.0, 1.0)), ("neg_()", (-t.hi, -t.lo)),
                     ("abs_()", (0.0, t.mag)),
                     ("relu_()", (0.0, max(t.hi, 0.0))),
                     ("zero_()", (0.0, 0.0)), ("fill_(0.25)", (0.25, 0.25)),
                     ("clamp_(-0.5, 0.5)", (-0.5, 0.5)), ("clamp_(min=0.0)", (0.0, max(t.hi, 0))),
                     ("pow_(2)", (0.0, t.mag ** 2)) if self.ok_mag((0, t.mag ** 2), t.dtype)
                     else None,
                     ("sqrt_()", (0.0, math.sqrt(t.mag))) if t.lo >= 0.05 or not self.checks
                     else None,
                     ("log_()", (math.log(max(t.lo, 1e-300)), math.log(max(t.hi, 1e-300))))
                     if t.lo >= 0.05 or not self.checks else None]
            m, iv = self.rng.choice([c for c in cands if c])
            line, req = Line(f"{view}.{m}", (t.name,)), t.req
        elif form == "binary":
            b = self.operand_for(tv, exact=True)
            ops = [("+=", "add_", (t.lo + b.lo, t.hi + b.hi)),
                   ("-=", "sub_", (t.lo - b.hi, t.hi - b.lo)),
                   ("*=", "mul_", _mul_iv((t.lo, t.hi), (b.lo, b.hi))),
                   (None, "copy_", (b.lo, b.hi))]
            aug, meth, iv = self.rng.choice(ops)
            if aug and idx is None and self.chance(0.5):
                line = Line(f"$0 {aug} $1", (t.name, b.name))
            else:
                line = Line(f"{view}.{meth}($1)", (t.name, b.name))
            req = t.req or b.req
        else:
            s = self.rng.choice([2.0, -0.5, 3])
            m = self.rng.choice(["mul_", "add_", "div_", "sub_"])
            line = Line(f"{view}.{m}({s})", (t.name,))
            iv = {"mul_": _mul_iv((t.lo, t.hi), (s, s)), "div_": _mul_iv((t.lo, t.hi),
                  (1 / s, 1 / s)), "add_": (t.lo + s, t.hi + s)}.get(m, (t.lo - s, t.hi - s))
            req = t.req
        iv = _hull(iv, (t.lo, t.hi)) if idx is not None else iv
        if not self.ok_mag(iv, t.dtype):
            return False
        if idx is not None and idx.startswith("[") and form != "set":
            self.add(line)  # y[[0, 1]].add_(b) writes into a copy: y stays as it was
            return True
        if self.chance(0.1):
            line = NoGrad((line,))
            req = False
        self.add(line)
        self.written.add(t.family)
        self._write(t, iv, req)
        return True

    # ------------------------------------------------------------- control flow
    def gen_branch(self) -> bool:
        h = self.pick()
        a = self.pick()
        if h is None or a is None:
            return False
        # thresholds no exact result lands on (x - x, logaddexp2(-1, -1) are 0.0 in numpy
        # and within rounding of it in torch, which would take the other branch)
        conds = ["float($0.sum()) > 0.1", "$0.sum().item() > 0.1", "bool(($0 > 0.1).any())",
                 "float($0.max()) > 0.6", "$0.mean() < -0.1", "$0.min().item() < -0.6"]
        cond = Line(self.rng.choice(conds), (h.name,))
        arms = []
        choices = self.unary_choices(a)
        for _ in range(2):
            templates, iv = self.rng.choice(choices)
            arms.append((self.rng.choice(templates), iv))
        name = self.new_name()
        iv = _hull(arms[0][1], arms[1][1])
        v = Val(name, a.shape, a.dtype, iv[0], iv[1], a.req, name)
        self.add(If(cond, (Line(arms[0][0], (a.name,), name),),
                    (Line(arms[1][0], (a.name,), name),), out=name), v)
        return True

    def gen_loop(self) -> bool:
        """``scan(step, carry, T.stack([...]))``: pb.scan on pullback's side, the Python
        loop it stands for on torch's (oracle.py binds ``scan``); the carry keeps its
        shape and dtype, each step reads a slice of the stack."""
        h = self.pick()
        if h is None:
            return False
        s = self.pick(lambda v: v.shape == h.shape and v.dtype == h.dtype)
        if s is None:
            s = self.new_input(h.shape, "x", dtype=h.dtype)
        steps = ["$1", "T.sin($1)", "$1 * 0.5"][:self.rng.randint(1, 3)]
        body, bound = self.rng.choice([("T.tanh(c * 0.5 + s)", 1.0),
                                       ("T.sin(c) * 0.5 + s * 0.25", 0.5 + 0.25 * s.mag),
                                       ("c * 0.5 + T.tanh(s)", max(h.mag, 2.0))])
        bound = max(bound, h.mag)
        out, iv = self.rng.choice([("[0]", (-bound, bound)),
                                   ("[1].sum(0)", (-len(steps) * bound * max(s.mag, 1.0),
                                                   len(steps) * bound * max(s.mag, 1.0)))])
        reverse = ", reverse=True" if self.chance(0.3) else ""
        t = f"scan(lambda c, s: ({body}, c * s), $0, T.stack([{', '.join(steps)}]){reverse}){out}"
        if not self.ok_mag(iv, h.dtype):
            return False
        v = self.out_val(h.shape, h.dtype, iv, h.req or s.req)
        self.add(Line(t, (h.name, s.name), v.name), v)
        return True

    def gen_scalar_from_data(self) -> bool:
        h = self.pick(lambda v: v.numel >= 1)
        a = self.pick()
        if h is None or a is None:
            return False
        # (pb.grad refuses a conversion of a value with a gradient, JAX's rule, where
        # torch cuts it; the detached spellings keep those programs compared in grad)
        t, iv = self.rng.choice([("$1 * float($0.sum())", (-h.mag * h.numel, h.mag * h.numel)),
                                 ("$1 * float($0.detach().sum())",
                                  (-h.mag * h.numel, h.mag * h.numel)),
                                 ("$1 + $0.mean().item()", (h.lo, h.hi)),
                                 ("$1 + $0.detach().mean().item()", (h.lo, h.hi)),
                                 ("$1 * $0.max().item()", (h.lo, h.hi)),
                                 ("$1 * $0.detach().max().item()", (h.lo, h.hi)),
                                 ("$1 * len($0)" if h.rank else "$1 * $0.numel()", (0, h.numel))])
        iv = _mul_iv((a.lo, a.hi), iv) if "*" in t else (a.lo + iv[0], a.hi + iv[1])
        if not self.ok_mag(iv, a.dtype):
            return False
        v = self.out_val(a.shape, a.dtype, iv, a.req, contig=a.contig)
        self.add(Line(t, (h.name, a.name), v.name), v)
        return True

    def gen_no_grad(self) -> bool:
        a = self.pick()
        if a is None:
            return False
        templates, iv = self.rng.choice(self.unary_choices(a))
        v = self.out_val(a.shape, a.dtype, iv, False, contig=a.contig)
        t = self.rng.choice(templates)
        self.add(NoGrad((Line(t, (a.name,), v.name),), out=v.name), v)
        return True

    # ------------------------------------------------------------------- losses
    def gen_loss_fn(self) -> bool:
        a = self.pick(lambda v: v.numel >= 1)
        if a is None:
            return False
        c = self.rng.random()
        if c < 0.4:
            b = self.new_input(a.shape, self.rng.choice("xc"), dtype=a.dtype)
            t, iv = "F.mse_loss($0, $1)", (0.0, (a.mag + b.mag) ** 2)
            args = (a.name, b.name)
        elif c < 0.7:
            b = self.new_input(a.shape, "c", dtype=a.dtype, domain="unit")
            t, iv = "F.binary_cross_entropy_with_logits($0, $1)", (0.0, a.mag + 1)
            args = (a.name, b.name)
        else:
            if a.rank != 2 or a.shape[1] == 0:
                return False
            i = self.new_input((a.shape[0],), "i", domain="nonneg", high=a.shape[1])
            t = "F.cross_entropy($0, $1)"
            iv = (0.0, 2 * a.mag + math.log(a.shape[1]) + 1)
            args = (a.name, i.name)
        if not self.ok_mag(iv, a.dtype):
            return False
        v = self.out_val((), a.dtype, iv, a.req or any(self.vals[n].req for n in args[1:]))
        self.add(Line(t, args, v.name), v)
        return True

    # ------------------------------------------------------------------ program
    GENERATORS = {
        "unary": 22, "binary": 24, "reduce": 12, "matmul": 7, "shape": 12, "index": 9,
        "inplace": 12, "branch": 5, "where_mask": 3, "softmax": 4, "detach_cast": 3,
        "scalar_from_data": 2, "no_grad": 1, "loss_fn": 2, "join": 4, "split": 4, "stat": 6,
        "rearrange": 4, "gather": 4, "loop": 3,
    }

    def program(self) -> Program:
        for k in range(self.rng.randint(1, 3)):
            shape = tuple(d if self.chance(0.7) else 1 for d in self.base_shape)
            if self.chance(0.3) and shape:
                shape = shape[self.rng.randint(0, len(shape)):]
            self.new_input(shape, "x" if k == 0 or self.chance(0.85) else "c")
        n = self.rng.choice([2, 4, 6, 8, 10, 14])
        names = list(self.GENERATORS)
        weights = [self.GENERATORS[k] for k in names]
        tries = 0
        while len(self.body) < n and tries < 6 * n:
            tries += 1
            kind = self.rng.choices(names, weights)[0]
            getattr(self, "gen_" + kind)()
        # the loss: every value not used since (and a few more), each times a weight
        inputs = {i.name for i in self.inputs}
        terms = []
        for name, v in reversed(list(self.vals.items())):
            if name in inputs or v.kind != "float":
                continue
            if name not in self.used or self.chance(0.25):
                terms.append(v)
        if not terms or not any(v.req for v in terms):
            req = [v for v in self.vals.values() if v.req and v.kind == "float"]
            terms.append(self.rng.choice(req) if req else next(iter(self.vals.values())))
        terms.reverse()
        loss = tuple((v.name, self.new_input(v.shape, "w", dtype=v.dtype).name) for v in terms)
        extra = None
        outs = [v for v in self.vals.values() if v.name not in inputs and v.kind == "float"
                and v.name not in dict(loss)]
        if outs and self.chance(0.15):
            extra = self.rng.choice(outs).name
        elif self.chance(0.03):  # the same tensor twice: `return loss, loss`
            extra = "loss"
        return Program(self.seed, self.mode, tuple(self.inputs), tuple(self.body), loss, extra)

def generate(seed: int, mode: str | None = None) -> Program:
    """The program drawn from ``seed`` (in ``mode``, else one drawn from the seed)."""
    return Gen(seed, mode).program()

