"""codegen: an IR graph becomes Python source that reads like hand-written numpy.

One statement per equation, the user's variable names where the tracer saw them,
a comment per user source line (``# grad of: ...`` over each backward block), and
``del`` of every value after its last use. The source is compiled once and kept in
``linecache`` under its own file name while the function lives, so tracebacks, pdb
and inspect show it. No text of a user object's ``repr`` goes into the source: values
of other than a few known types are constants bound in the module's globals.
"""

from __future__ import annotations

import functools
import itertools
import linecache
import math
import os
import secrets
import types
import warnings
import weakref
from typing import Any, Callable

import numpy as np

from pullback.ir import Graph, Namespace, Var, last_uses, naming
from pullback.ops import OPS
from pullback.ops import runtime as rt
from pullback.settings import config

from .codegen_ints import plain_ints
from .codegen_regions import REGIONS
from .inplace import IntoOp
from .regions import use_runner


class Module:
    """The generated source and its compiled function. Every live one is in ``MODULES``
    (the profiler swaps their functions for timed ones while it is on)."""

    def __init__(self, source: str, fn: Callable, filename: str) -> None:
        self.source = source
        self.fn = fn
        self.filename = filename
        MODULES.add(self)
        if _on_new is not None:
            _on_new(self)

    def __repr__(self) -> str:
        return self.source


MODULES: weakref.WeakSet = weakref.WeakSet()
_on_new: Callable | None = None


def on_new_module(listener: Callable | None) -> None:
    """Call ``listener(module)`` on each Module made from now on (None: stop)."""
    global _on_new
    _on_new = listener


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
        self.plain: set | None = None  # see plain_ints

    # ---------------------------------------------------------------- values
    def name(self, v: Var) -> str:
        n = self.names.get(v.id)
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
            if dead:
                lines.append("del " + ", ".join(dead))
        return lines

    def statement(self, e: Any, last: dict) -> list[str]:
        if isinstance(e.op, IntoOp):
            return self.into(e)
        rhs = self.expr(e)
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


#: numpy scalar types written inline, as ``np.<type>(<its Python value>)``
_NP_SCALARS = {t: f"np.{t.__name__}" for t in (
    np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
    np.uint64, np.float16, np.float32, np.float64, np.complex64, np.complex128)}
_PLAIN = (type(None), type(Ellipsis), bool, int, float, complex, str, bytes)
#: subclasses of these are written as their base value (an IntEnum as its int), taken by
#: the base's own conversion, which runs no code of the subclass
_TO_BASE = {int: int.__int__, float: float.__float__, str: str.__str__}
_MAX_INT_BITS = 64  # larger ints are bound: their text can be long (or over str's limit)


def _plain_literal(p: Any) -> str | None:
    """Source text for a value of a ``_PLAIN`` type (or a subclass in ``_TO_BASE``);
    None for anything else and for values better bound as constants."""
    tp = type(p)
    if tp not in _PLAIN:
        base = next((b for b in _TO_BASE if issubclass(tp, b)), None)
        if base is None or issubclass(tp, np.generic):  # (numpy's floats: _NP_SCALARS)
            return None
        p = _TO_BASE[base](p)
        tp = type(p)
        if tp is not base:
            return None
    if p is None or tp is bool or tp is str or tp is bytes:
        return repr(p)
    if p is Ellipsis:
        return "..."
    if tp is int:
        return repr(p) if p.bit_length() <= _MAX_INT_BITS else None
    if tp is float:
        return repr(p) if math.isfinite(p) else f"float('{p}')"
    # complex: not its repr, whose "(-0-0j)" loses the sign of the real zero
    return f"complex({_plain_literal(p.real)}, {_plain_literal(p.imag)})"


def _number_hint(p: Any, dtype: np.dtype) -> str | None:
    """The name of a number of ``dtype`` that says its value (``f32_1``, ``f64_neg2``,
    ``f32_0_5``); None where the text is long (a reader would not see 1/3 in a name)."""
    if type(p) not in (bool, int, float):
        return None
    text = repr(p) if type(p) is bool else repr(float(p))
    if type(p) is not bool and float(p).is_integer() and abs(p) < 1e6 and text != "-0.0":
        text = repr(int(p))
    if len(text) > _NUMBER_CHARS:
        return None
    return f"{dtype.kind}{dtype.itemsize * 8}_" + text.replace("e-", "e_").replace(
        "-", "neg").replace(".", "_").replace("+", "")


def _dtype_literal(d: np.dtype) -> str | None:
    """``np.float32`` for a plain numpy dtype; None for others (byte-swapped, with
    metadata, structured, ...)."""
    t = getattr(np, d.name, None)
    ok = d.name.isidentifier() and isinstance(t, type) and d.metadata is None
    return f"np.{d.name}" if ok and np.dtype(t) == d else None


def ops_namespace() -> types.SimpleNamespace:
    """``ops.<name>`` in generated code: the forward of an op without a template (one
    namespace, made again when an op is declared: ops are never redeclared; a later
    process's first call from the persistent cache spent ~0.1 ms per module making it)."""
    if _OPS_NAMESPACE[0] != len(OPS):
        _OPS_NAMESPACE[:] = len(OPS), types.SimpleNamespace(
            **{name: op.forward for name, op in OPS.items()})
    return _OPS_NAMESPACE[1]


_OPS_NAMESPACE: list = [-1, None]  # (how many ops it holds, the namespace)


def _is_chain(p: Any) -> bool:
    return bool(p) and isinstance(p[0], tuple) and p[0] and hasattr(p[0][0], "forward")


@functools.lru_cache(maxsize=4096)
def _comment_text(src: Any, label: str | None) -> str:
    where = f"{os.path.basename(src.filename)}:{src.lineno}"
    text = f"# {label}: {src.text}  ({where})" if label else f"# {where}: {src.text}"
    return "".join(c if c.isprintable() else " " for c in text)  # one line, however read


def _comment(e: Any, backward: str | None) -> str | None:
    src = e.block.src if backward and e.block is not None else e.src
    return None if src is None else _comment_text(src, backward)


def generate(graph: Graph, fn_name: str, env: dict | None = None,
             block: str = naming.GRAD_OF, dump: bool = True) -> Module:
    """Python source for ``graph`` as ``def fn_name(inputs): ... return outputs``.
    Backward equations (those with a ``block``) get ``# grad of:`` comments (``block``
    names them: ``tangent of`` in forward mode's code)."""
    em = _Emitter(graph)
    em.globals.update(env or {})
    em.label = block
    returned = {v.id for v in graph.outputs if type(v) is Var} | {v.id for v in graph.guards}
    for v, value in graph.consts.items():
        em.names[v.id] = em.bind(value) if v.id in returned else em.literal(value)
    params = [em.name(v) for v in graph.inputs]
    body = em.statements(graph, free=True)
    body[:0] = em.prologue
    outs = [em.bind(v) if type(v) is np.ndarray else em.literal(v) if v is not None
            else "None" for v in graph.outputs]
    if em.plain:  # (a loop's counter returned: numpy's int, as the trace has it)
        outs = [f"np.int64({o})" if type(v) is Var and v.id in em.plain else o
                for o, v in zip(outs, graph.outputs)]
    body.append("return " + (", ".join(outs) + ("," if len(outs) == 1 else "") if outs else "()"))
    for v in graph.inputs:  # guards on inputs are checked first
        for k in em.guards.get(v.id, ()):
            body.insert(0, f"guard({k}, {em.name(v)})")
    source = f"def {fn_name}({', '.join(params)}):\n" + "".join(
        f"    {line}\n" for line in body)
    return _compile(source, fn_name, em.globals, dump)


def from_source(source: str, fn_name: str, env: dict, code: types.CodeType | None = None
                ) -> Module:
    """The Module of ``source`` that ``generate`` wrote before (the persistent cache's
    hit), with numpy, ``rt``, ``ops`` and ``env`` as its globals; ``code``: its function's code
    object, compiled before from that source (else it is compiled now)."""
    return _compile(source, fn_name, {"np": np, "rt": rt, "ops": ops_namespace(), **env},
                    code=code)


def _targets(em: _Emitter, e: Any, last: dict) -> str:
    """What an equation assigns: its result's name; for several outputs the names of
    those read later, ``_`` for the others (``a0, _ = np.split(x, [2], axis=1)``)."""
    if e.out is not None:
        return em.name(e.out)
    names = [em.name(v) if v.id in last or v.id in em.guards else "_" for v in e.outs]
    return ", ".join(names) + ("," if len(names) == 1 else "") if names else "_"


def _inlined_transposes(graph: Graph, guards: dict) -> dict:
    """The transposes written where they are read, ``g_h = g_z @ w.T``, not bound to a
    temporary first: an ``x.T`` read once, by an equation that is not a region's with
    none between them (a loop binds names again: elsewhere a name is bound once, and a
    view read later sees what an earlier one would), neither returned nor guarded.
    Maps the id of each to ``(x, the index of its reader)``."""
    if not any(e.op.template == "{0}.T" for e in graph.eqns):
        return {}
    uses: dict[int, int] = {}
    reader: dict[int, int] = {}
    for i, e in enumerate(graph.eqns):
        for a in e.inputs:
            if type(a) is Var:
                uses[a.id] = uses.get(a.id, 0) + 1
                reader[a.id] = i
    for v in list(graph.outputs) + list(graph.guards):
        if type(v) is Var:
            uses[v.id] = uses.get(v.id, 0) + 2
    regions = [i for i, e in enumerate(graph.eqns) if e.op.name in REGIONS]
    inline: dict[int, tuple] = {}
    for i, e in enumerate(graph.eqns):
        if e.op.template != "{0}.T" or e.out is None or uses.get(e.out.id) != 1:
            continue
        x, j = e.inputs[0], reader.get(e.out.id)
        if (type(x) is Var and x.id not in inline and e.out.id not in guards
                and j is not None and not any(i < k <= j for k in regions)):
            inline[e.out.id] = (x, j)
    return inline


def _uniq(xs: tuple) -> list:
    return list({x.id: x for x in xs if type(x) is Var}.values())


def _worth_freeing(v: Var) -> bool:
    """Smaller values are not released early: a ``del`` costs more than it saves. (A
    length known only at run time, a while loop's steps, counts as large.)"""
    if None in v.shape:
        return True
    return math.prod(v.shape) * v.dtype.itemsize >= config.free_bytes


def _reuses_name(e: Any) -> bool:
    return isinstance(e.op, IntoOp) and (e.out.name is None or e.op.ufunc is None)


#: ufuncs with an augmented assignment; the commutative ones may write into either operand
_AUGMENTED = {np.add: "+", np.subtract: "-", np.multiply: "*", np.true_divide: "/"}
_COMMUTATIVE = (np.add, np.multiply)


#: the arithmetic whose Python numbers ``_Emitter.operands`` writes as 0-d arrays
_ARITHMETIC = frozenset(n + into for n in ("add", "sub", "rsub", "mul", "div")
                        for into in ("", "_into"))
_NUMBER_CHARS = 8  # the longest number written in a name (0.03125, 1e-05)
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


def _shared_buffers(graph: Graph) -> dict:
    """Temporaries that carry their final value's name from the start: ``t0 = x @ w;
    t0 += b; h = np.tanh(t0, out=t0)`` reads ``h = x @ w; h += b; np.tanh(h, out=h)``.
    Maps the id of each unnamed value of such a chain of out= writes (a value read only
    by the next write) and of the named result to that result."""
    uses: dict[int, int] = {}
    for e in graph.eqns:
        for a in e.inputs:
            if type(a) is Var:
                uses[a.id] = uses.get(a.id, 0) + 1
    for v in list(graph.outputs) + list(graph.guards):
        if type(v) is Var:
            uses[v.id] = uses.get(v.id, 0) + 2
    made = {e.out.id for e in graph.eqns if e.out is not None and e.op.name not in REGIONS
            and not isinstance(e.op, IntoOp)}
    chain: dict[int, list] = {}  # id of an unnamed buffer value -> the chain up to it
    shared: dict[int, Var] = {}
    for e in graph.eqns:
        if not isinstance(e.op, IntoOp):
            continue
        buf = e.inputs[e.op.out_arg]
        if uses.get(buf.id) != 1 or (buf.id not in chain and (
                buf.name is not None or buf.id not in made)):
            continue
        ids = chain.pop(buf.id, [buf.id])
        if e.out.name is None:
            chain[e.out.id] = ids + [e.out.id]
        else:
            shared.update((i, e.out) for i in ids + [e.out.id])
    return shared


def _last_uses(graph: Graph, shared: dict) -> dict:
    last = last_uses(graph)
    # an unnamed _into result lives on under its input's name; so does a named one whose
    # buffer carries its name
    for i, e in reversed(list(enumerate(graph.eqns))):
        if _reuses_name(e) or (isinstance(e.op, IntoOp) and e.out.id in shared):
            a = e.inputs[e.op.out_arg]
            last[a.id] = max(last.get(a.id, i), last.get(e.out.id, i))
    return last


_counter = itertools.count(1)
_STD = {"np", "rt", "ops", "__builtins__"}
#: a new file, never an existing one or a symlink's target
_DUMP_FLAGS = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
               | getattr(os, "O_CLOEXEC", 0))
_DUMP_TRIES = 8  # random names tried before giving up (a clash is a 1 in 2**32 event)
_DUMP_PREFIX_CHARS = 60  # of the function name in a file name: under 255 bytes in UTF-8
_dump_warned: set = set()  # dump directories already warned about


def set_dump_dir(path: Any) -> None:
    """Write every generated module to ``path`` as a .py file (None: stop); the same
    as setting ``pullback.config.dump_dir`` (or ``PULLBACK_DUMP_DIR``)."""
    config.dump_dir = None if path is None else os.fspath(path)


def _compile(source: str, fn_name: str, glb: dict, dump: bool = True,
             code: types.CodeType | None = None) -> Module:
    """Compile ``source`` (or take its function's ``code``) and keep it in ``linecache``
    for as long as its function lives (tracebacks and pdb show it; an evicted variant's
    source goes with it)."""
    filename = f"<pullback:{fn_name}:{next(_counter)}>"
    if code is None:
        exec(compile(source, filename, "exec"), glb)
        fn = glb.pop(fn_name)  # not in its own globals: no cycle, it dies with its holder
    else:
        fn = types.FunctionType(_renamed(code, filename), glb, fn_name)
    # mtime None: linecache.checkcache keeps the entry although no such file exists
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    weakref.finalize(fn, linecache.cache.pop, filename, None).atexit = False
    directory = config.dump_dir
    if directory and dump:
        _dump(directory, fn_name, source, glb)
    return Module(source, fn, filename)


def _renamed(code: types.CodeType, filename: str) -> types.CodeType:
    """``code`` (and the code objects in it) as compiled from ``filename``."""
    consts = tuple(_renamed(c, filename) if isinstance(c, types.CodeType) else c
                   for c in code.co_consts)
    return code.replace(co_filename=filename, co_consts=consts)


def _dump(directory: str, fn_name: str, source: str, glb: dict) -> None:
    """Write the module to a new file ``<fn_name>_<random>.py`` in ``directory``; a
    directory that cannot take it gets one warning, and compilation goes on."""
    header = ("# generated by pullback; the names it uses besides numpy:\n"
              "import numpy as np  # noqa: F401\n"
              "from pullback.transforms.codegen import ops_namespace\n"
              "from pullback.ops import runtime as rt  # noqa: F401\n"
              "ops = ops_namespace()\n"
              f"# bound at compile time: {sorted(k for k in glb if k not in _STD)}\n\n")
    try:
        os.makedirs(directory, exist_ok=True)
        fd = _create_new(directory, fn_name[:_DUMP_PREFIX_CHARS])
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(header + source)
    except OSError as e:
        if directory not in _dump_warned:
            _dump_warned.add(directory)
            warnings.warn(f"pullback cannot write generated code to the dump directory "
                          f"{directory!r} (pb.config.dump_dir): {e}; compiling on without "
                          "dumping", UserWarning, stacklevel=2)


def _create_new(directory: str, prefix: str) -> int:
    """A file descriptor of a file made now, under a name no one could guess."""
    for _ in range(_DUMP_TRIES):
        path = os.path.join(directory, f"{prefix}_{secrets.token_hex(4)}.py")
        try:
            return os.open(path, _DUMP_FLAGS, 0o600)
        except FileExistsError:
            continue
    raise FileExistsError(f"{_DUMP_TRIES} random file names in {directory!r} were taken")


# a region's body runs as generated code when its op runs on arrays (regions.py)
use_runner(lambda graph: generate(graph, "step", dump=False).fn)
