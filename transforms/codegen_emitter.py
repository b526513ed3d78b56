"""codegen's writer (``_Emitter``): the text of each equation of a graph, one statement
per equation (a region's in its own lines: ``codegen_regions.py``), names the user's
where the tracer saw them, numbers in float arithmetic as 0-d arrays bound once, and
``del`` after a value's last use.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from pullback.ir import Graph, Namespace, Var, naming
from pullback.ops import runtime as rt

from .codegen_ints import plain_ints
from .codegen_loop_names import name_starts
from .codegen_modules import ops_namespace
from .codegen_plan import (
    _inlined_transposes,
    _last_uses,
    _reuses_name,
    _shared_buffers,
    _worth_freeing,
)
from .codegen_regions import REGIONS
from .codegen_text import (
    _NP_SCALARS,
    _comment,
    _dtype_literal,
    _is_chain,
    _number_hint,
    _plain_literal,
)
from .inplace import IntoOp


class _Emitter:
    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.guards: dict[int, list] = {}  # var id -> guard indices checked once it exists
        for k, v in enumerate(graph.guards):
            self.guards.setdefault(v.id, []).append(k)
        self.ns = Namespace()
        self.names: dict[int, str] = {}
        self.globals: dict[str, Any] = {"np": np, "rt": rt, "ops": ops_namespace()}
        self.bound: dict[int, str] = {}  # id of a bound constant -> its name
        self.label = naming.GRAD_OF  # the comment over backward equations
        self.shared: dict[int, Var] = {}  # see _shared_buffers
        self.numbers: dict[tuple, str] = {}  # (dtype, number) -> its 0-d array's name
        self.looping = 0  # how deep in loops' bodies the statements being written are
        self.prologue: list[str] = []  # the typed scalars loops read, made once first
        self.sum_starts: dict[tuple, str] = {}  # (id of a loop, carry) -> an outer sum
        self.unused_starts: set[str] = set()  # their zeros, written before a loop around
        self.plain: set | None = None  # see plain_ints
        self.const_values: dict | None = None  # id of a constant Var -> its value
        self.unread: dict = {}  # id of a constant Var not read yet -> its value
        self.read_numbers: dict = {}  # see codegen_loop_numbers.numbers_read

    # ---------------------------------------------------------------- values
    def name(self, v: Var) -> str:
        n = self.names.get(v.id)
        if n is None and v.id in self.unread:  # a constant: bound once something reads it
            n = self.names[v.id] = self.literal(self.unread.pop(v.id))
        if n is None:
            named = self.shared.get(v.id)  # a buffer called by its final value's name
            n = self.name(named) if named is not None and named is not v else \
                self.ns.fresh(v.name)
            self.names[v.id] = n
        return n

    def literal(self, p: Any) -> str:
        """``p`` as source text: a Var's name, a literal of a known type, else the name
        of a constant bound in the module. No user object's ``repr`` is ever written."""
        tp = type(p)
        if tp is Var:
            return self.name(p)
        if tp is slice:
            return f"slice({self.literal(p.start)}, {self.literal(p.stop)}, {self.literal(p.step)})"
        if tp is tuple and not _is_chain(p):
            inner = ", ".join(self.literal(q) for q in p)
            return f"({inner},)" if len(p) == 1 else f"({inner})"
        if tp in _NP_SCALARS:  # np.float32(...) stays a float32: not a weak Python float
            text = f"{_NP_SCALARS[tp]}({self.literal(p.item())})"
            return self.scalar(p, text) if self.looping else text
        if tp is np.ndarray and p.ndim == 0 and type(p[()]) in _NP_SCALARS:
            # a 0-d array (a folded seed's 1.0) as its scalar: arithmetic reads either
            # alike (what the function returns stays an array: generate binds it)
            return self.literal(p[()])
        if issubclass(tp, np.dtype):
            return _dtype_literal(p) or self.bind(p)
        return _plain_literal(p) or self.bind(p)

    def operands(self, e: Any) -> list[str]:
        """The text of ``e``'s inputs; in arithmetic on float arrays of the result's dtype,
        a Python number is a 0-d array of that dtype bound once (``f32_1``): numpy 2
        converts a Python number on every call (about 0.3 us, as long as the arithmetic on
        16 floats), and computes alike with the 0-d array (a weak number takes the
        array's dtype)."""
        inputs = e.inputs  # (two Vars, the usual case, first: every equation passes here)
        if e.op.name not in _ARITHMETIC or (type(inputs[0]) is Var and type(inputs[-1]) is Var) \
                or not _arithmetic_on_arrays(e):
            return [self.literal(a) for a in inputs]
        return [self.number(a, e.out.dtype) if type(a) in (int, float) else self.literal(a)
                for a in e.inputs]

    def number(self, p: int | float, dtype: np.dtype) -> str:
        """The name of the 0-d array of ``dtype`` holding ``p``, which says its value
        (``f32_1``, ``f64_neg2``, ``f32_0_5``); ``p``'s literal where its text is long
        (a reader would not see 1/3 in a name) or the dtype cannot hold it."""
        if type(p) is int and p.bit_length() > _EXACT_INT_BITS:
            return self.literal(p)
        key = (dtype.str, repr(float(p)))  # (-0.0 is not 0.0)
        name = self.numbers.get(key)
        if name is None:
            hint = _number_hint(p, dtype)
            if hint is None or not abs(p) <= float(np.finfo(dtype).max):
                return self.literal(p)
            name = self.numbers[key] = self.bind(np.array(p, dtype), hint)
        return name

    def plain_ints(self) -> set:
        """The ids of the loop counters written as Python ints (codegen_ints.py)."""
        if self.plain is None:
            self.plain = plain_ints(self.graph, self.guards)
        return self.plain

    def scalar(self, p: np.generic, text: str) -> str:
        """The local name of the numpy scalar ``p`` (written ``text``) that a loop's body
        reads: made once before the function's first statement, as ``f64_0 =
        np.float64(0.0)`` (a call in the body costs about 70 ns on every step)."""
        key = (p.dtype.str, text)
        name = self.numbers.get(key)
        if name is None:
            hint = _number_hint(p.item(), p.dtype) or f"{p.dtype.kind}{p.dtype.itemsize * 8}"
            name = self.numbers[key] = self.ns.fresh(hint)
            self.prologue.append(f"{name} = {text}")
        return name

    def bind(self, value: Any, name_hint: str | None = None) -> str:
        """The name of ``value`` as a constant of the module (one name per object): ``c``,
        ``name_hint``, or the ``codegen_name`` the value's class gives it (a custom
        Function's call)."""
        name = self.bound.get(id(value))  # (the module's globals keep the object alive)
        if name is None:
            hint = getattr(type(value), "codegen_name", None)
            hint = name_hint or (hint(value) if hint else naming.CONSTANT)
            name = self.bound[id(value)] = self.ns.fresh(hint)
            self.globals[name] = value
        return name

    def subscript(self, index: Any) -> str:
        parts = index if type(index) is tuple else (index,)
        return ", ".join(self._colon(p) if type(p) is slice else self.literal(p)
                         for p in parts) or "()"

    def _colon(self, p: slice) -> str:
        """``a:b:c`` for a slice inside a subscript."""
        text = lambda s: "" if s is None else self.literal(s)
        out = f"{text(p.start)}:{text(p.stop)}"
        return out if p.step is None else f"{out}:{text(p.step)}"

    # ------------------------------------------------------------ statements
    def statements(self, graph: Graph, free: bool) -> list[str]:
        """One statement per equation of ``graph`` (a region's in its own lines), with
        the user's source lines as comments; ``free``: ``del`` values after their last
        use (not inside a loop's body, whose values the next step binds again)."""
        self.looping += not free
        lines = self._statements(graph, free)
        self.looping -= not free
        return lines

    def _statements(self, graph: Graph, free: bool) -> list[str]:
        self.shared.update(_shared_buffers(graph))
        last = _last_uses(graph, self.shared)
        lines: list[str] = []
        prev_comment = None
        input_ids = {v.id for v in graph.inputs} | {v.id for v in graph.consts}
        # (a loop's body binds its values to the carries' names: there each keeps one)
        inline = _inlined_transposes(graph, self.guards) if free else {}
        name_starts(self, graph)
        for i, e in enumerate(graph.eqns):
            c = _comment(e, self.label if e.block is not None else None)
            if c is not None and c != prev_comment:
                lines.append(c)
                prev_comment = c
            if e.out is not None and e.out.id in inline:  # read as x.T where it is read
                x, j = inline[e.out.id]
                self.names[e.out.id] = f"{self.literal(x)}.T"
                last[x.id] = max(last.get(x.id, i), j)
                continue
            region = REGIONS.get(e.op.name)
            if region is not None:
                lines += region(self, e, last)
                if self.unused_starts:
                    lines = _without_starts(lines, self.unused_starts)
            else:
                lines += self.statement(e, last)
            for v in e.outs:
                for k in self.guards.get(v.id, ()):
                    lines.append(f"guard({k}, {self.name(v)})")
            if not free:
                continue
            reads = _uniq(e.inputs)
            if inline:
                reads = _uniq(tuple(inline[a.id][0] if a.id in inline else a for a in reads))
            dead = list(dict.fromkeys(  # (a pack's values share one name)
                self.name(a) for a in reads
                if a.id not in input_ids and last.get(a.id) == i and _worth_freeing(a)))
            if dead:  # (never a name the equation binds again: a loop's start and end;
                # nor zeros not written, ``unused_starts``)
                bound = {self.names.get(v.id) for v in e.outs} | self.unused_starts
                dead = [n for n in dead if n not in bound]
            if dead:
                lines.append("del " + ", ".join(dead))
        return lines

    def statement(self, e: Any, last: dict) -> list[str]:
        if isinstance(e.op, IntoOp):
            return self.into(e)
        rhs = self.filled(e) if e.op.name == "clone" else None
        rhs = rhs or self.expr(e)
        if not e.outs:  # run for its effect (a print)
            return [rhs]
        return [f"{_targets(self, e, last)} = {rhs}"]

    def into(self, e: Any) -> list[str]:
        """A ufunc writing into its input's buffer: ``t += h`` where the operator has
        one (faster than ``out=``), else ``np.tanh(t, out=t)``; a named result that does
        not share the buffer's name is bound to it after (``g_w = t``)."""
        buf = self.literal(e.inputs[e.op.out_arg])
        if _reuses_name(e) or e.out.id in self.shared:  # the buffer's name lives on
            self.names[e.out.id] = buf
            name = None
        else:
            name = self.name(e.out)
        aug = _augmented(e)
        if aug is not None:
            other = self.operands(e)[1 - e.op.out_arg]
            lines = [f"{buf} {aug}= {other}"]
            return lines if name is None else lines + [f"{name} = {buf}"]
        rhs = self.expr(e)
        return [rhs] if name is None else [f"{name} = {rhs}"]

    def filled(self, e: Any) -> str | None:
        """``np.full((5, 6), np.inf)`` for a copy of a constant array holding one number
        (``R = np.full(...)`` in the user's code), as a reader writes it; else None."""
        x = e.inputs[0]
        if type(x) is not Var:
            return None
        if self.const_values is None:
            self.const_values = {v.id: value for v, value in self.graph.consts.items()}
        value = self.const_values.get(x.id)
        if type(value) is not np.ndarray or value.size < 2 or value.dtype.kind not in "biuf":
            return None
        first = value.flat[0]
        if not (value == first).all() and not (np.isnan(first) and np.isnan(value).all()):
            return None
        number = first.item()
        text = repr(number) if type(number) is not float or math.isfinite(number) else \
            "np.nan" if number != number else "np.inf" if number > 0 else "-np.inf"
        if type(number) is float and number == 0 and math.copysign(1, number) < 0:
            return None  # (-0.0: keep the constant)
        return f"np.full({self.literal(value.shape)}, {text}, {self.literal(value.dtype)})"

    def expr(self, e: Any) -> str:
        """The right-hand side for ``e``: the op's template, else ``ops.<name>(...)``."""
        args = self.operands(e)
        op = e.op
        if isinstance(op, IntoOp) and op.ufunc is not None:  # (a ufunc, else rt's helper)
            space = "np" if isinstance(op.ufunc, np.ufunc) else "rt"
            return f"{space}.{op.ufunc.__name__}({', '.join(args)}, out={args[op.out_arg]})"
        tpl = op.template
        if callable(tpl):
            return tpl(e, args, self.literal)
        params = {k: (self.subscript(v) if k == "index" and tpl else
                      self.literal(v[0] if k == "dim" and isinstance(v, tuple) and len(v) == 1
                                   else v))
                  for k, v in e.params.items()}
        if op.variadic:  # "np.stack([{tensors}], axis={dim})": the list by its name
            params[op.arg_names[0]] = ", ".join(args)
        if tpl is not None:
            shape = None if e.out is None else self.literal(e.out.shape)
            return tpl.format(*args, out_shape=shape, **params)
        return f"ops.{op.name}({', '.join(args + [f'{k}={v}' for k, v in params.items()])})"


def _targets(em: _Emitter, e: Any, last: dict) -> str:
    """What an equation assigns: its result's name; for several outputs the names of
    those read later, ``_`` for the others (``a0, _ = np.split(x, [2], axis=1)``)."""
    if e.out is not None:
        return em.name(e.out)
    names = [em.name(v) if v.id in last or v.id in em.guards else "_" for v in e.outs]
    return ", ".join(names) + ("," if len(names) == 1 else "") if names else "_"


def _uniq(xs: tuple) -> list:
    return list({x.id: x for x in xs if type(x) is Var}.values())


def _without_starts(lines: list[str], names: set[str]) -> list[str]:
    """``lines`` without the statements (at their own level) binding ``names``, and
    without those names in its ``del`` lines: the zeros an inner loop's sum would have
    started from, written before the loop that adds into its outer sum instead
    (``codegen_loop_buffers._inner_sum``): they are read nowhere."""
    out = []
    for line in lines:
        name = line.partition(" = ")[0]
        if name in names:
            continue
        if line.startswith("del "):
            kept = [n for n in line[4:].split(", ") if n not in names]
            if not kept:
                continue
            line = "del " + ", ".join(kept)
        out.append(line)
    return out


#: ufuncs with an augmented assignment; the commutative ones may write into either operand
_AUGMENTED = {np.add: "+", np.subtract: "-", np.multiply: "*", np.true_divide: "/"}
_COMMUTATIVE = (np.add, np.multiply)
#: the arithmetic whose Python numbers ``_Emitter.operands`` writes as 0-d arrays
_ARITHMETIC = frozenset(n + into for n in ("add", "sub", "rsub", "mul", "div")
                        for into in ("", "_into"))
_EXACT_INT_BITS = 53  # ints a float64 holds exactly


def _arithmetic_on_arrays(e: Any) -> bool:
    """Whether ``e`` is arithmetic with a float result whose Var inputs all are arrays
    (not 0-d: numpy's scalars compute faster with a Python number) of its dtype."""
    out = e.out
    if out is None or out.dtype.kind != "f" or not out.shape:
        return False
    return all(a.shape and a.dtype == out.dtype for a in e.inputs if type(a) is Var)


def _augmented(e: Any) -> str | None:
    """The operator of ``buffer op= other`` for an out= equation (numpy's in-place
    operators cast like ``out=``; the inplace pass checked the buffer has the result's
    shape and dtype), None where there is none."""
    op = e.op
    aug = _AUGMENTED.get(op.ufunc)
    if aug is None or len(e.inputs) != 2 or (op.out_arg != 0 and op.ufunc not in _COMMUTATIVE):
        return None
    return aug
