"""Random plain-numpy programs for pullback's transforms, checked against numpy itself.

The second fuzz family (the first, generator.py, checks torch-named programs against
torch). A program here is unmodified numpy code, a module with helpers and globals and
a function ``f(x)``, differentiated through one door: ``pb.grad``,
``pb.value_and_grad``, ``pb.jacrev``, ``pb.jacfwd``, ``pb.vjp``, ``pb.jvp``,
``pb.linearize`` or ``pb.hessian``. numpy_oracle.py runs it: the value must equal ``f`` run on plain
arrays, the derivative central finite differences in float64, or pullback must raise a
clear error. A derivative that differs with no error is a failure, whatever the program
does::

    import numpy as np
    import scipy.integrate
    def h1(ps):                      # a helper taking its parameters in a list
        a, b = ps
        return np.sum(a * b)
    def f(x):
        t0 = float(np.sum(np.tanh(x))) * 1.5
        return np.sum(t0) * 0.5 + np.sum(h1([np.sin(x), x])) * -1.25

A program is a sum of one to three terms; each term comes from a template of one
generator class (``CLASSES``), a feature flag:

- ``plain``: smooth numpy code (helpers, ufuncs, reductions, matmul): the baseline;
- ``containers``: parameters in lists, tuples, dicts, nested, ``**kwargs``, into
  helpers and into ``scipy.special`` functions the source pass routes;
- ``odeint``: ``scipy.integrate.odeint`` with the parameters in ``args`` at the top
  level or inside lists, tuples, dicts and nests; the field a ``def`` or a ``lambda``;
  ``y0`` from x (tiny systems, three time points);
- ``convert``: ``float()``, ``.item()``, ``.tolist()``, ``complex()``, comprehensions
  of ``float(v)``, next to unconverted paths (and ``int()`` used as an index);
- ``inplace``: ``np.add.at`` and the other ``ufunc.at``, ``np.copyto``, ``np.put``,
  ``np.putmask``, ``np.place``, ``np.fill_diagonal``, ``np.put_along_axis``, setitem
  and ``+=`` with duplicate indices;
- ``scalars``: the differentiated argument a Python float; Python scalars and numpy
  scalars meeting float32 arrays;
- ``effects``: the function mutates captured Python state (a global counter, a list,
  a dict, an attribute, a random generator) or prints; the state after each call must
  be numpy's, and the door must print as many lines as one numpy call;
- ``rebind``: globals, helpers, defaults, slices, ranges and captured containers
  rebound or mutated between calls (stale traces);
- ``casts``: ``astype(int)``, ``astype(bool)``, ``np.array(v, dtype=int)``, floor;
- ``layouts``: transposed, Fortran-ordered, reversed and broadcast inputs, transposed
  outputs, forward-mode doors (jacfwd, jvp, linearize, hessian) and functions without
  a rule;
- ``loops``: ``pb.scan`` (carries in tuples, reversed, several outputs),
  ``pb.fori_loop``, ``pb.while_loop`` with a trip count that depends on the data, and
  ``pb.cond`` on a traced predicate, in and around each other; numpy runs them as the
  Python loops they stand for.

``vjp`` and ``linearize`` also check that overwriting the caller's array after the
door returned leaves the pullback's result alone.

``ENABLED`` is what the default test run draws from. Every program is called three
times (values A, B, then A again), so stale traces and skipped effects show.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

CLASSES = ("plain", "containers", "odeint", "convert", "casts", "inplace", "scalars",
           "effects", "rebind", "layouts", "loops")

#: The classes whose bugs are fixed: the default run (tests/fuzz/test_numpy_fuzz.py)
#: draws only from these. Switch a class on once every failure it finds is fixed
#: (``PULLBACK_FUZZ_CLASSES=name python -m pytest tests/fuzz/test_numpy_fuzz.py``).
ENABLED = frozenset(CLASSES)
#: classes drawn only when named: ``items`` (loops writing a table's items at their
#: counters, ``R[i, j] = ...``), which the vmap fuzzer draws on their own, as the
#: ``loops`` class seldom does
NAMED_ONLY = ("items",)

REVERSE_DOORS = ("grad", "value_and_grad", "jacrev", "vjp")
FORWARD_DOORS = ("jacfwd", "jvp", "hessian", "linearize")
#: doors whose function returns a scalar (the others get a vector of the terms' sums)
SCALAR_DOORS = ("grad", "value_and_grad", "hessian")

SHAPES = ((3,), (4,), (2, 3), (3, 2), (2, 2))
LAYOUTS = ("C", "T", "F", "reversed", "broadcast")


@dataclass(frozen=True)
class Term:
    """One term of ``f``: module-level ``prelude`` source, ``body`` lines of ``f``, the
    term's expression; ``between``: module-level statements run before the 2nd and 3rd
    calls (cyclically); ``state``: globals ``f`` mutates (restored around each finite
    difference, compared after each call); ``tol``: f64, f32 or ode."""

    cls: str
    prelude: str = ""
    body: tuple = ()
    expr: str = "0.0"
    between: tuple = ()
    state: tuple = ()
    tol: str = "f64"
    no_hessian: bool = False
    label: str = ""  # the template and the variants it picked (to group failures)


@dataclass(frozen=True)
class NProgram:
    """``shape`` () with ``scalar``: x is a Python float; ``layout``: how x is passed;
    ``out_t``: a vector door's output is transposed (``np.stack([o, 2 * o]).T``)."""

    seed: int
    door: str
    shape: tuple
    terms: tuple
    coefs: tuple
    scalar: bool = False
    layout: str = "C"
    out_t: bool = False

    @property
    def classes(self) -> set:
        return {t.cls for t in self.terms}

    @property
    def tol(self) -> str:
        """The loosest of the terms' tolerances: an ODE beside a float32 term takes
        float32's step (float32 rounding over the ODE's small step is noise)."""
        kinds = {t.tol for t in self.terms}
        return "ode+f32" if {"ode", "f32"} <= kinds else "ode" if "ode" in kinds else \
            "f32" if "f32" in kinds else "f64"

    def source(self) -> str:
        head = ["import math", "import numpy as np", "import scipy.integrate",
                "import scipy.special", "import pullback as pb", ""]
        for t in self.terms:
            if t.prelude:
                head += [t.prelude.rstrip("\n"), ""]
        body = []
        for k, t in enumerate(self.terms):
            body += ["    " + line for line in t.body]
            body.append(f"    t{k} = {t.expr}")
        sums = [f"np.sum(t{k})" for k in range(len(self.terms))]
        if self.door in SCALAR_DOORS:
            body.append("    return " + " + ".join(
                f"{s} * {c!r}" for s, c in zip(sums, self.coefs)))
        else:
            body.append(f"    out = np.stack([{', '.join(sums)}])")
            body.append("    return np.stack([out, 2.0 * out]).T" if self.out_t else
                        "    return out")
        return "\n".join(head + ["def f(x):"] + body) + "\n"

    def data(self, k: int):
        """The k-th value of x (a float for a scalar program), laid out as ``layout``."""
        rng = np.random.default_rng([self.seed, k])
        if self.scalar:
            return float(rng.uniform(-1.2, 1.2))
        v = rng.uniform(-1.2, 1.2, self.shape)
        if self.layout == "T":
            return np.ascontiguousarray(v.T).T
        if self.layout == "F":
            return np.asfortranarray(v)
        if self.layout == "reversed":
            return np.ascontiguousarray(v[::-1])[::-1]
        if self.layout == "broadcast":
            return np.broadcast_to(v[:1], v.shape)  # rows all equal: a zero stride
        return v

    def between(self, call: int) -> list:
        """The statements to run before call ``call`` (1 or 2)."""
        return [t.between[(call - 1) % len(t.between)] for t in self.terms if t.between]

    def state(self) -> list:
        return [name for t in self.terms for name in t.state]


# --------------------------------------------------------------------- templates
SMOOTH = ("np.sin({})", "np.tanh({})", "{} ** 2", "np.exp(0.3 * {})", "np.cos({}) * {}",
          "1.0 / (1.0 + {} ** 2)")


class Draw:
    """Draws templates' variants with ``rng``; ``k`` names the term's globals."""

    def __init__(self, rng: random.Random, k: int, shape: tuple) -> None:
        self.rng, self.k, self.shape = rng, k, shape
        self.size, self.rank = int(np.prod(shape)), len(shape)
        self.picks: list = []

    def u(self, a: str) -> str:
        """A smooth function of ``a``."""
        return "(" + self.rng.choice(SMOOTH).format(a, a) + ")"

    def c(self) -> float:
        return self.rng.choice([0.5, -0.75, 1.5, 2.0, -1.25])

    def pick(self, *options):
        k = self.rng.randrange(len(options))
        self.picks.append(k)
        return options[k]


Template = Callable[[Draw], Term]
#: class -> [(template, least x.size it needs, works on a Python float x)]
TEMPLATES: dict = {c: [] for c in CLASSES + NAMED_ONLY}


def template(cls: str, size: int = 1, scalar: bool = False):
    def register(fn: Template) -> Template:
        TEMPLATES[cls].append((fn, size, scalar))
        return fn
    return register


def choose(rng: random.Random, cls: str, k: int, shape: tuple, scalar: bool) -> Term:
    fits = [fn for fn, n, s in TEMPLATES[cls] if np.prod(shape) >= n and (s or not scalar)]
    fn = rng.choice(fits)
    d = Draw(rng, k, shape)
    return replace(fn(d), label=f"{fn.__name__}{d.picks}")


def generate(seed: int, classes=None) -> NProgram:
    """The program drawn from ``seed``, its terms from ``classes`` (default ENABLED)."""
    rng = random.Random(seed)
    classes = sorted(ENABLED if classes is None else classes)
    doors = REVERSE_DOORS + (FORWARD_DOORS if "layouts" in classes else ())
    door = rng.choice(doors)
    scalar = "scalars" in classes and rng.random() < 0.4
    shape = () if scalar else rng.choice(SHAPES)
    layout, out_t = "C", False
    if "layouts" in classes and not scalar and rng.random() < 0.6:
        layout = rng.choice(LAYOUTS[1:])
        out_t = door not in SCALAR_DOORS and rng.random() < 0.4
    terms = []
    for k in range(rng.randint(1, 3)):
        cls = rng.choice(classes)
        if scalar and not any(s for _, _, s in TEMPLATES[cls]):
            cls = "scalars"
        terms.append(choose(rng, cls, k, shape, scalar))
    if door == "hessian" and any(t.no_hessian for t in terms):
        door = "jacfwd"
    if layout == "broadcast" and any("max" in t.expr + "".join(t.body) or "min(" in t.expr
                                     for t in terms):
        layout = "T"  # equal rows: ties in max/min, where the derivative is not defined
    coefs = tuple(rng.choice([1.0, 0.5, -1.25, 2.0]) for _ in terms)
    return NProgram(seed, door, shape, tuple(terms), coefs, scalar, layout, out_t)


def parse_classes(text: str | None) -> frozenset:
    """``"all"``, a comma-separated list of CLASSES, or None (ENABLED)."""
    if not text:
        return ENABLED
    names = CLASSES if text == "all" else tuple(c.strip() for c in text.split(","))
    unknown = set(names) - set(CLASSES)
    if unknown:
        raise ValueError(f"unknown fuzz classes {sorted(unknown)}; the classes: {CLASSES}")
    return frozenset(names)


def without_term(prog: NProgram, k: int) -> NProgram:
    return replace(prog, terms=prog.terms[:k] + prog.terms[k + 1:],
                   coefs=prog.coefs[:k] + prog.coefs[k + 1:])


from . import numpy_templates  # noqa: E402,F401  (registers the templates)
