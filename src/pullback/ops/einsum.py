"""``einsum``: one variadic primitive over an explicit equation, and the parsing that
makes torch's and numpy's equations explicit (implicit outputs, ``...``, sublists).

The gradient of an operand is an einsum of the output's gradient with the other
operands, written into the operand's subscripts: letters only that operand had are
broadcast back (``expand``), repeated ones (a diagonal) keep only the diagonal.

>>> explicit("ij,jk", [(2, 3), (3, 4)])
'ij,jk->ik'
>>> explicit("...j,...j", [(5, 2, 3), (2, 3)])
'ABj,Bj->AB'
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .elementwise import conj, to_dtype
from .shape import expand, reshape
from .table import args
from .table.registry import defop, is_traced, public

_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _einsum(*operands, equation, optimize):
    out = np.einsum(equation, *operands, optimize=optimize)
    # numpy may return a view of its operand ('ij->ji'): a result is a new array
    return out.copy() if any(np.may_share_memory(out, x) for x in operands) else out


def _rule(g, out, operands, i, equation, optimize):
    """The gradient of ``operands[i]``."""
    ins, out_sub = equation.split("->")
    subs = ins.split(",")
    mine, others = subs[i], [s for k, s in enumerate(subs) if k != i]
    seen = set(out_sub).union(*others)
    unique = "".join(dict.fromkeys(mine))
    present = "".join(c for c in unique if c in seen)
    rest = [conj(x) for k, x in enumerate(operands) if k != i]  # (torch's convention)
    if others or out_sub != present:
        g = einsum_op(g, *rest, equation=",".join([out_sub, *others]) + "->" + present,
                      optimize=len(rest) > 1)
    # letters only this operand had were summed out, and broadcast ones may be 1 in
    # ``g``: expanded back to the operand's sizes (a size it had as 1 is summed by fit_to)
    size = dict(zip(mine, operands[i].shape))
    shape = tuple(g.shape[present.index(c)] if c in present else 1 for c in unique)
    if shape != tuple(g.shape):
        g = reshape(g, shape)
    full = tuple(n if size[c] == 1 else size[c] for n, c in zip(shape, unique))
    if full != shape:
        g = expand(g, shape=full)
    return g if unique == mine else _diagonal(g, unique, mine, operands[i].shape)


def _diagonal(g, unique: str, mine: str, shape: tuple):
    """``g`` (subscripts ``unique``) written on the diagonals of ``mine``'s repeated
    letters (zero elsewhere): an einsum with identity matrices."""
    fresh = iter(c for c in _LETTERS if c not in mine)
    used: set = set()
    out, eyes, mats = "", [], []
    for c, n in zip(mine, shape):
        if c in used:
            f = next(fresh)
            out += f
            eyes.append(c + f)
            mats.append(np.eye(n, dtype=args.np_dtype(g)))
        else:
            used.add(c)
            out += c
    return einsum_op(g, *mats, equation=",".join([unique, *eyes]) + "->" + out,
                     optimize=False)


def _print(e: Any, a: list, lit: Any) -> str:
    opt = e.params["optimize"]
    return (f"np.einsum({lit(e.params['equation'])}, {', '.join(a)}"
            + (f", optimize={lit(opt)})" if opt else ")"))


def _batch(op, operands, batched, equation, optimize):
    """einsum over a batch: a letter of its own for the batch axis, in front of the
    batched operands' subscripts and of the result's."""
    ins, out = _explicit(equation.replace(" ", ""))
    b = next(c for c in _LETTERS if c not in equation)
    subs = [b + s if flag else s for s, flag in zip(ins.split(","), batched)]
    return einsum_op(*operands, equation=",".join(subs) + "->" + b + out, optimize=optimize)


def _explicit(equation: str) -> tuple:
    """(inputs, output) of an equation, the output numpy's implicit one where it has no
    ``->``: the letters that appear once, in order, after any ``...``."""
    if "->" in equation:
        ins, out = equation.split("->")
        return ins, out
    letters = equation.replace(",", "").replace(".", "")
    once = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    return equation, ("..." if "..." in equation else "") + once


einsum_op = defop("einsum", _einsum, "EinsumBackward0", variadic=True, vjp=(_rule,),
                  uses=("operands",), template=_print, aliases=True, batch=_batch)


# ----------------------------------------------------------------------- parsing
def _error(text: str) -> RuntimeError:
    return RuntimeError(f"einsum(): {text}")


def _terms(equation: str) -> tuple:
    """(input terms, output term or None): spaces dropped, characters checked."""
    eq = equation.replace(" ", "")
    ins, arrow, out = eq.partition("->")
    for k, c in enumerate(ins + out):
        if c not in _LETTERS and c not in ".,":
            raise _error(f"invalid subscript given at index {k} in the equation string, "
                         "subscripts must be in [a-zA-Z]")
    return ins.split(","), (out if arrow else None)


def _letters(term: str, k: int) -> tuple:
    """(letters before '...', letters after, whether it has '...')."""
    head, dots, tail = term.partition("...")
    if "." in head + tail:
        raise _error(f"found '.' for operand {k} " + (
            "for which an ellipsis was already found" if dots and "." in tail else
            "that is not part of any ellipsis"))
    return head, tail, bool(dots)


def explicit(equation: str, shapes: list) -> str:
    """torch's equation for operands of these shapes as an explicit one without '...'
    (unused capitals stand for the ellipsis' axes), checked as torch checks it."""
    terms, out = _terms(equation)
    if len(terms) > len(shapes):
        raise _error("fewer operands were provided than specified in the equation")
    if len(terms) < len(shapes):
        raise _error("more operands were provided than specified in the equation")
    parts = [_letters(t, k) for k, t in enumerate(terms)]
    widths = [len(s) - len(h) - len(t) for (h, t, d), s in zip(parts, shapes)]
    for k, ((h, t, d), s, w) in enumerate(zip(parts, shapes, widths)):
        if (w != 0 and not d) or w < 0:
            relation = "is more than" if d else "does not match"
            raise _error(f"the number of subscripts in the equation ({len(h) + len(t)}) "
                         f"{relation} the number of dimensions ({len(s)}) for operand {k}"
                         + ("" if d else " and no ellipsis was given"))
    used = set("".join(h + t for h, t, _ in parts) + (out or ""))
    spare = [c for c in _LETTERS[26:] + _LETTERS[:26] if c not in used]  # capitals first
    ell = "".join(spare[:max(widths, default=0)])
    ins = [h + (ell[len(ell) - w:] if w else "") + t for (h, t, _), w in zip(parts, widths)]
    if out is None:
        counts = "".join(ins)
        singles = sorted(c for c in set(counts) if counts.count(c) == 1 and c not in ell)
        out_term = ell + "".join(singles)
    else:
        oh, ot, od = _letters(out, len(terms))
        out_term = oh + (ell if od else "") + ot
    _check(ins, out_term, shapes)
    return ",".join(ins) + "->" + out_term


def _check(ins: list, out: str, shapes: list) -> None:
    for c in out:
        if out.count(c) > 1:
            raise _error(f"output subscript {c} appears more than once in the output")
        if not any(c in t for t in ins):
            raise _error(f"output subscript {c} does not appear in the equation for any "
                         "input operand")
    seen: dict = {}
    for k, (t, s) in enumerate(zip(ins, shapes)):
        mine: dict = {}
        for c, n in zip(t, s):
            if c in mine and mine[c] != n:
                raise _error(f"subscript {c} is repeated for operand {k} but the sizes "
                             f"don't match, {n} != {mine[c]}")
            mine[c] = n
            if seen.get(c, 1) != 1 and n != 1 and seen[c] != n:
                raise _error(f"subscript {c} has size {n} for operand {k} which does not "
                             f"broadcast with previously seen size {seen[c]}")
            seen[c] = n if n != 1 else seen.get(c, 1)


def _sublist(spec: tuple) -> tuple:
    """numpy's and torch's ``einsum(a, [0, 1], b, [1, 2], [0, 2])`` as (equation,
    operands); ints name subscripts, ``...`` an ellipsis."""
    def term(sub):
        return "".join("..." if s is Ellipsis else _LETTERS[s] for s in sub)
    pairs = len(spec) // 2
    eq = ",".join(term(spec[2 * k + 1]) for k in range(pairs))
    if len(spec) % 2:
        eq += "->" + term(spec[-1])
    return eq, [spec[2 * k] for k in range(pairs)]


def _numpy_einsum(*operands, out=None, dtype=None, order="K", casting="safe", optimize=False):
    args.plain(out)
    if isinstance(operands[0], str):
        equation, items = operands[0], list(operands[1:])
    else:
        equation, items = _sublist(operands)
    items = [x if is_traced(x) else np.asarray(x) for x in items]
    if dtype is not None:
        items = [to_dtype(x, np.dtype(dtype)) for x in items]
    eq = explicit(equation, [tuple(x.shape) for x in items])
    return einsum_op(*items, equation=eq,
                     optimize=optimize if isinstance(optimize, (bool, str)) else True)


@public("einsum", function=True, numpy={np.einsum: _numpy_einsum})
def einsum(*args_):
    if not args_ or (isinstance(args_[0], str) and len(args_) < 2):
        raise ValueError("einsum(): must specify the equation string and at least one "
                         "operand, or at least one operand and its subscripts list")
    if isinstance(args_[0], str):
        equation, operands = args_[0], list(args_[1:])
    else:
        equation, operands = _sublist(args_)
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = list(operands[0])
    for x in operands[1:]:
        if args.np_dtype(x) != args.np_dtype(operands[0]):
            raise RuntimeError(f"expected scalar type {args.dtype_name(operands[0])} but "
                               f"found {args.dtype_name(x)}")
    eq = explicit(equation, [tuple(x.shape) for x in operands])
    return einsum_op(*operands, equation=eq, optimize=len(operands) > 2)
