"""All naming conventions of generated code, in one place.

>>> ns = Namespace()
>>> ns.fresh("x"), ns.fresh("x"), ns.fresh(None), ns.fresh("lambda"), grad_of("x")
('x', 'x_1', 't0', 'lambda_', 'g_x')
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
