"""All naming conventions of generated code, in one place.

>>> ns = Namespace()
>>> ns.fresh("x"), ns.fresh("x"), ns.fresh(None), ns.fresh("lambda"), grad_of("x")
('x', 'x_1', 't0', 'lambda_', 'g_x')
>>> grad_sum("W"), grad_sum(None), steps_of("h"), steps_of(None), steps_of("_")
('g_W_sum', 'sum', 'h_steps', None, None)
"""

from __future__ import annotations

import builtins
import keyword
import unicodedata

#: names the generated module binds itself; user names never shadow them
RESERVED = {"np", "ops", "guard", "saved", "grads", "consts"}
_BUILTINS = frozenset(dir(builtins))
GRAD_PREFIX = "g_"  # the gradient of ``x`` is ``g_x``
TEMP_PREFIX = "t"  # values without a user name: t0, t1, ...
TANGENT_PREFIX = "tan_"  # the tangent of input ``x`` is ``tan_x`` (forward mode)
CONSTANT = "c"  # an array bound into generated code as a constant: c, c_1, ...
SAVED = "saved"  # a residual no op names (split.py names the others after their op)
OUTPUT = "out"  # an output of a replayed graph (compiler/replay_build.py)
SEED = "seed"  # a cotangent fed to a replayed graph's backward
CAPTURED = "captured"  # a tensor a trace captured whose name the user's code does not say
STEPS_SUFFIX = "_steps"  # a loop's per-step values of ``x``, stacked: ``x_steps``
LOOP_INDEX = "i"  # the index of a generated ``for`` loop
LOOP_COUNT = "steps"  # the step count of a generated ``while`` loop
BRANCH = "branch"  # the branch a generated switch takes
GRAD_SUM = "sum"  # a loop's running sum of the gradients of a value it reads from outside
# (``g_W_sum``: ``grad_sum``)
TANGENT_OF = "tangent of"  # the comment over a tangent's statements (``grad of`` over a
GRAD_OF = "grad of"  # gradient's)


class Namespace:
    """Hands out unique Python identifiers, preferring the user's own names.

    A taken name gets the first free ``_1``, ``_2``, ... suffix; names are never given
    back, so the search for a base resumes after its last suffix (amortized O(1))."""

    def __init__(self, reserved: set | None = None) -> None:
        self.used = set(RESERVED) | set(reserved or ())
        self.counter = 0
        self.suffix: dict[str, int] = {}  # base -> the last suffix tried for it

    def fresh(self, hint: str | None) -> str:
        if hint:
            base = sanitize(hint)
        else:
            base = f"{TEMP_PREFIX}{self.counter}"
            self.counter += 1
        name = base
        if name in self.used:  # base_1, base_2, ...: every suffix below the last is taken
            n = self.suffix.get(base, 0) + 1
            name = f"{base}_{n}"
            while name in self.used:
                n += 1
                name = f"{base}_{n}"
            self.suffix[base] = n
        self.used.add(name)
        return name


def sanitize(hint: str) -> str:
    """A Python identifier for ``hint``, in the form Python itself reads it (NFKC:
    two hints that Python would read as one name never share one)."""
    if hint.isascii() and hint.isidentifier() and hint not in _BUILTINS \
            and not keyword.iskeyword(hint):
        return hint
    name = "".join(c if ("_" + c).isidentifier() else "_"
                   for c in unicodedata.normalize("NFKC", hint))
    if not name.isidentifier():  # empty, or a digit (or a mark) first
        name = "v_" + name
    if keyword.iskeyword(name) or name in _BUILTINS:
        name += "_"
    return name


def grad_of(name: str | None) -> str:
    """The name hint of the gradient of a value named ``name`` (``g_out`` unnamed)."""
    return GRAD_PREFIX + (name or "out")


def grad_sum(name: str | None) -> str:
    """The name hint of a loop's running sum of the gradients of ``name`` (``g_W_sum``)."""
    return f"{grad_of(name)}_{GRAD_SUM}" if name else GRAD_SUM


def steps_of(name: str | None) -> str | None:
    """The name hint of a loop's per-step values of ``name``, stacked (``h_steps``); None
    for no name or a throwaway one (``_``)."""
    return name + STEPS_SUFFIX if name and name.strip("_") else None
