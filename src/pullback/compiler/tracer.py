"""The tracer: runs the user's function for real once and records every op into IR.

Python control flow just runs. When the program turns a traced value into a Python
value (``bool``, ``float``, ``.item()``, ``.tolist()``, ``.numpy()``, ``np.asarray``)
the tracer records a guard: the generated code checks it on every later call, and a
failed guard sends the call back to be traced again.
"""

from __future__ import annotations

import linecache
import os
import re
import sys
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import numpy as np

from ..autograd import record
from ..autograd.grad_mode import STATE
from ..ir import Builder, Eqn, Graph, Var, naming, squashed
from ..numpy_face import NumpyTensor
from ..ops import OpDef
from ..ops.elementwise import cast
from ..ops.sampling import GENERATOR, set_state_of, state_of
from ..ops.shape import copy, detach, view_chain, view_scatter
from ..tensor import Tensor
from ..user_code import is_user_file


class TraceError(Exception):
    """The function cannot be compiled; the message names the function and line."""


@dataclass(frozen=True)
class SourceLine:
    filename: str
    lineno: int
    function: str
    text: str

    def __str__(self) -> str:
        return f"{os.path.basename(self.filename)}:{self.lineno}"


@dataclass
class Guard:
    """A traced value that became a Python value: it must be the same next time."""

    var: Var
    how: str
    expected: Any
    src: SourceLine | None

    def describe(self) -> str:
        where = f" at {self.src} ({self.src.text})" if self.src else ""
        return f"{self.how}() of a traced value was {_brief(self.expected)}{where}"


class StandInRead(Exception):
    """A trace read a value it holds only a stand-in of (``Tracer.stood_in``): it is
    made again on the real values (``trace_call``)."""


def _brief(value: Any) -> str:
    """A guard's value as a message shows it: small values whole, arrays by shape."""
    if isinstance(value, np.ndarray) and value.size > 4:
        return f"an array of shape {value.shape} ({value.dtype})"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def user_frame() -> Any:
    """The innermost frame that is not pullback's own code (nor code it generated,
    such as the op bindings, whose file names start with ``<pullback``)."""
    f = sys._getframe(1)
    while f is not None and not is_user_file(f.f_code.co_filename):
        f = f.f_back
    return f


_LINES: dict[tuple, SourceLine] = {}


def source_of(frame: Any) -> SourceLine | None:
    if frame is None:
        return None
    code = frame.f_code
    key = (code, frame.f_lineno)
    line = _LINES.get(key)
    if line is None:
        if len(_LINES) > 100_000:
            _LINES.clear()
        text = linecache.getline(code.co_filename, frame.f_lineno).strip()
        line = _LINES[key] = SourceLine(code.co_filename, frame.f_lineno, code.co_name, text)
    return line


class Tracer:
    """Records the ops run on Tensors while it is active (see ``trace``)."""

    def __init__(self, fn: Callable) -> None:
        self.fn = fn
        self.builder = Builder()
        self.var_of: dict[int, Var] = {}
        self.keep: list = []  # tensors kept alive so their ids stay unique
        self.inputs: list[Var] = []
        self.captures: list[tuple[Tensor, Var]] = []
        self.guards: list[Guard] = []
        # id of the tensor at the root of some memory -> the other tensors sharing it
        # (views, and detach()ed aliases, which are views of it for in-place writes)
        self.views: dict[int, list] = {}
        self.detached: dict[int, Tensor] = {}  # id of a detach()ed alias -> its source
        self.stale: set[int] = set()  # views whose memory was written since they were read
        self.fail: TraceError | None = None
        # id of a random generator the traced code drew from -> (it, its state before):
        # the generated code makes the same draws again on the call that traced it
        self.rewinds: dict[int, tuple] = {}
        # id of a generator the traced code made or seeded with a seed -> it: its draws
        # are the same on every call, constants of the trace (effects.seeding)
        self.seeded: dict[int, Any] = {}
        # id of a captured tensor written in place (a BatchNorm's running statistics)
        # -> (it, its value before): generated code writes its new value back into it
        self.written: dict[int, tuple] = {}
        # state outside the function that the traced code changed (a captured list, an
        # object's attribute, a global: mutations.py) -> (the object changed, how to put
        # it back, what was there): put back when the trace ends, as generated code, run
        # on this call too, makes the change again
        self.changed: dict[Any, tuple] = {}
        # ("name" or "attr", name, "value" or "content") -> whether every change the trace
        # saw to it is made again by generated code (its guard may be left out: captured.py)
        self.unguarded: dict[tuple, bool] = {}
        self.writes: list[tuple] = []  # (equation, target) of the changes generated code makes
        self.notes: list[str] = []  # why a converted loop ran unrolled (loop_runtime.py)
        # the first conversion that cut a gradient (pb.compile's torch semantics allow
        # it): (how, SourceLine); its variant refuses to run inside a functional transform
        self.cut: tuple | None = None
        # whether a long scan may leave stand-ins for its outputs (control_flow.py
        # STAND_IN_FROM); ids of the values computed from them; what read one first
        self.may_stand_in = False
        self.stand_ins: set[int] = set()
        self.stand_in_read: str | None = None

    # ------------------------------------------------------------ bookkeeping
    def will_draw(self, gen: Any) -> None:
        """The traced code is about to draw from ``gen``: when the trace ends, ``gen``
        goes back to where it is now, so that the generated code, run on this call
        too, draws what eager code would (same stream, same values)."""
        if id(gen) not in self.rewinds:
            self.rewinds[id(gen)] = (gen, state_of(gen))

    def will_change(self, key: Any, target: Any, restore: Callable, before: Any) -> None:
        """The traced code is about to change ``target`` (state outside the function):
        when the trace ends, ``restore(target, before)`` puts back what is there now."""
        if key not in self.changed:
            self.changed[key] = (target, restore, before)

    def unguard(self, key: tuple, replayed: bool) -> None:
        """A change to ``key`` (see ``unguarded``) was made again by generated code, or
        not (``replayed`` False, which stays)."""
        self.unguarded[key] = self.unguarded.get(key, True) and replayed

    def wrote(self, target: Any) -> None:
        """The equation just recorded makes a change to ``target`` on every call."""
        self.writes.append((self.builder.eqns[-1], target))

    def _put_back(self) -> None:
        """Undo the changes the trace made to state outside the function, and drop the
        writes into objects only the trace holds (a list the function made and handed
        to a helper that appends to it): nobody can see them."""
        _restore(self.changed)
        if not self.writes:
            self.changed = {}
            return
        ours = _counts([t for t, _, _ in self.changed.values()], 1)
        ours = _counts([t for _, t in self.writes], 2, ours)  # (the entry and the effect)
        dead = set()
        for e, t in self.writes:  # (``t``, a local name, as ``_REFS``'s ``obj``)
            if _references(t) - _REFS <= ours.get(id(t), 0):
                dead.add(id(e))
        del e, t
        if dead:
            self.builder.eqns = [e for e in self.builder.eqns if id(e) not in dead]
        self.changed, self.writes = {}, []

    def add_input(self, t: Tensor, name: str) -> Var:
        v = Var(t._data.shape, t._data.dtype, t._data, name=name)
        self._bind(t, v)
        self.inputs.append(v)
        return v

    def _bind(self, t: Tensor, v: Var) -> None:
        self.var_of[id(t)] = v
        self.keep.append(t)

    def value_of(self, a: Any) -> Any:
        if isinstance(a, Tensor):
            if id(a) in self.stale:
                self._refresh(a)
            v = self.var_of.get(id(a))
            if v is None:  # a tensor from outside the function: an implicit input
                v = Var(a._data.shape, a._data.dtype, a._data, name=_outer_name(a))
                self._bind(a, v)
                self.captures.append((a, v))
            return v
        if isinstance(a, np.ndarray):
            return self.builder.const(a)
        return a

    def _emit(self, op: Any, inputs: tuple, params: dict, value: Any, src: Any,
              keeps_history: bool = False, nograd: bool | None = None) -> Var:
        out = Var(value.shape, value.dtype, value)
        nograd = not STATE.grad_enabled if nograd is None else nograd
        self.builder.eqns.append(Eqn(op, inputs, out, params, src, nograd=nograd,
                                     keeps_history=keeps_history))
        self._taint(inputs, (out,))
        return out

    def _taint(self, inputs: tuple, outs: tuple) -> None:
        """Values computed from a stand-in are stand-ins (every equation the trace
        records passes here)."""
        if self.stand_ins and any(isinstance(v, Var) and v.id in self.stand_ins
                                  for v in inputs):
            self.stand_ins.update(v.id for v in outs)

    def _refresh(self, t: Tensor) -> None:
        """A view read after its memory was written in place: take it from its base
        anew (with a gradient unless the view was taken under no_grad, whatever the
        grad mode of the read); a detach()ed alias takes its source's value, with no
        gradient through it (an alias written with grad since keeps that history, as
        in torch)."""
        self.stale.discard(id(t))
        src = source_of(user_frame())
        if t._base is not None:
            base = self.value_of(t._base)
            self._bind(t, self._emit(view_chain, (base,), {"chain": t._view_chain},
                                     t._data.copy(), src, nograd=t._view_no_grad))
            return
        old = self.var_of[id(t)]
        new = self._emit(detach, (self.value_of(self.detached[id(t)]),), {},
                         t._data.copy(), src)
        if t._requires_grad:
            new = self._emit(copy, (old, new), {}, t._data.copy(), src, keeps_history=True)
        new.name = old.name
        self._bind(t, new)

    def same_value(self, t: Tensor, source: Tensor) -> None:
        """``t``, made outside the op table, holds ``source``'s value (its own memory)."""
        self._bind(t, self.value_of(source))

    def read_as_source(self, copy: Tensor) -> None:
        """``copy``, a clone nothing wrote into since, is read as the value it was cloned
        from: the clone goes, and its readers (and guards) read that value."""
        old = self.var_of[id(copy)]
        made = next(e for e in self.builder.eqns if e.out is old)
        new = made.inputs[0]
        self.builder.eqns.remove(made)
        for e in self.builder.eqns:
            if any(v is old for v in e.inputs):
                e.inputs = tuple(new if v is old else v for v in e.inputs)
        for g in self.guards:
            if g.var is old:
                g.var = new
        self.var_of[id(copy)] = new

    # ------------------------------------------------------------------ hooks
    def on_op(self, op: Any, args: tuple, params: dict, result: Tensor,
              inplace: bool = False) -> None:
        frame = user_frame()
        src = source_of(frame)
        if op.shape_from_data:
            where = f" at {src} ({src.text})" if src else ""
            raise TraceError(f"{_fname(self.fn)}: {op.name}(){where} gives a result whose "
                             "shape depends on the data, which a trace cannot follow; call "
                             "it outside pb.compile and pb.grad (eagerly)")
        if inplace:
            self._check_inplace(op, result, src, args)
            old, args = args[0], (result,) + tuple(args[1:])
        inputs = tuple(self.value_of(a) for a in args)
        if inplace:  # the SSA form of an in-place op: a new value for the same tensor
            if old is not result:  # the target's old value autograd saved: a backward
                self._bind(old, inputs[0])  # run inside this trace reads it
            self._bind(result, self._functional(op, inputs, params, result, src))
            self._written(result, src)
        elif op.multi:
            self._outputs(op, inputs, params, result, src, args)
        else:
            if not op.is_view:  # (a trace for Dask's arrays keeps only large values' shapes)
                result._data = squashed(result._data)
            self._bind(result, self._emit(op, inputs, params, result._data, src))
            if (op.is_view or op is detach) and isinstance(args[0], Tensor):
                self._alias(result, args[0], op)
        if frame is not None:
            self._name_locals(frame)

    def stood_in(self, tensors: Any) -> None:
        """``tensors`` hold stand-ins, not their values (a long scan's outputs, or
        values computed from those): reading one ends the trace (``on_concrete``)."""
        self.stand_ins.update(self.var_of[id(t)].id for t in tensors
                              if isinstance(t, Tensor) and id(t) in self.var_of)

    def _outputs(self, op: Any, inputs: tuple, params: dict, results: tuple, src: Any,
                 args: tuple) -> None:
        """One equation for the outputs of a multi-output op (each a view of the first
        input for split & co.)."""
        outs = tuple(Var(t._data.shape, t._data.dtype, t._data) for t in results)
        self.builder.eqns.append(Eqn(op, inputs, outs, params, src,
                                     nograd=not STATE.grad_enabled))
        self._taint(inputs, outs)
        for t, v in zip(results, outs):
            self._bind(t, v)
            if op.is_view and isinstance(args[0], Tensor):
                self._alias(t, args[0], op)

    def _alias(self, t: Tensor, source: Tensor, op: Any) -> None:
        """``t`` shares ``source``'s memory: a view, or a detach()ed alias."""
        if op is detach:
            self.detached[id(t)] = source
        root, _ = self._storage(t)
        self.views.setdefault(id(root), []).append(t)

    def _storage(self, t: Tensor) -> tuple[Tensor, tuple]:
        """The tensor at the root of ``t``'s memory (through views and detach()ed
        aliases) and the view chain that takes it to ``t``."""
        chain: tuple = ()
        while True:
            if t._base is not None:
                chain, t = t._view_chain + chain, t._base
            elif id(t) in self.detached:
                t = self.detached[id(t)]
            else:
                return t, chain

    def _functional(self, op: Any, inputs: tuple, params: dict, t: Tensor,
                    src: Any) -> Var:
        """The new value of ``t`` after an in-place op: cast to ``t``'s dtype (an in-place
        op keeps its target's dtype); under no_grad ``t`` keeps its history."""
        keep = not STATE.grad_enabled
        dtype = t._data.dtype
        if any(getattr(a, "dtype", dtype) != dtype for a in inputs):  # may promote
            with np.errstate(all="ignore"):
                value = np.asarray(op.forward(*[a._data if isinstance(a, Var) else a
                                                for a in inputs], **params))
            if value.dtype != dtype:
                inputs, params = (self._emit(op, inputs, params, value, src, keep),), \
                    {"dtype": dtype}
                op = cast
        out = self._emit(op, inputs, params, t._data.copy(), src, keep)
        out.name = self.var_of[id(t)].name
        return out

    def _written(self, t: Tensor, src: Any) -> None:
        """After an in-place write to ``t``: a written view updates its base (as
        view_scatter of the new view value); a written detach()ed alias updates the
        memory it shares, whose history stays as it was; every other view of that
        memory goes stale."""
        base = t._base if t._base is not None else t
        if base is not t:
            self._scatter(base, t, t._view_chain, not STATE.grad_enabled, src)
        root, chain = self._storage(base)
        if root is not base:
            self._scatter(root, base, chain, True, src)
        for v in self.views.get(id(root), ()):
            if v is not t and v is not base:
                self.stale.add(id(v))

    def _scatter(self, base: Tensor, view: Tensor, chain: tuple, keep: bool,
                 src: Any) -> None:
        """``base`` takes ``view``'s new value where the chain puts it."""
        old = self.value_of(base)
        self._bind(base, self._emit(view_scatter, (old, self.var_of[id(view)]),
                                    {"chain": chain}, base._data.copy(), src, keep))

    def _check_inplace(self, op: Any, t: Tensor, src: SourceLine | None,
                       args: tuple = ()) -> None:
        where = f" at {src} ({src.text})" if src else ""
        if self._outside(t) and t._base is None and not _records(t, args):
            self.value_of(t)  # a buffer updated outside the graph (running statistics):
            return            # an input of generated code, written back at its end
        if self._outside(t):
            raise TraceError(f"{_fname(self.fn)}: in-place {op.name}_() on a tensor captured "
                             f"from outside the compiled function{where}; pass it as an "
                             "argument and return the new value instead")
        if self._is_input(t):
            raise TraceError(f"{_fname(self.fn)}: in-place {op.name}_() on argument "
                             f"'{self.var_of[id(t)].name}'{where}; compiled functions must not "
                             "mutate their inputs")
        root, _ = self._storage(t)
        if root is not t and self._outside(root) and root._base is None and \
                self._through_detach(t) and not _records(t, args):
            self.value_of(root)  # a write through .data / detach() of a captured tensor,
            return               # recording no gradient (Embedding's max_norm renorm, as
            # torch's under no_grad): its history stays; generated code writes it back
        if root is not t and (self._outside(root) or self._is_input(root)):
            raise TraceError(f"{_fname(self.fn)}: in-place {op.name}_() through a view (or "
                             f"detach()) of an argument or captured tensor{where}; compiled "
                             "functions must not mutate their inputs")

    def _through_detach(self, t: Tensor) -> bool:
        """Whether ``t`` reaches its memory's root through a detach()ed alias."""
        while True:
            if id(t) in self.detached:
                return True
            if t._base is None:
                return False
            t = t._base

    def _outside(self, t: Tensor) -> bool:
        return id(t) not in self.var_of or any(c is t for c, _ in self.captures)

    def _is_input(self, t: Tensor) -> bool:
        return any(self.var_of[id(t)] is i for i in self.inputs)

    def on_write(self, t: Tensor) -> None:
        """An in-place op is about to write into ``t``: a captured tensor's value before
        the trace's first write is put back when the trace ends (``written``)."""
        if id(t) in self.var_of and not self._outside(t):
            t = self._storage(t)[0]  # (through .data of a captured tensor)
        if id(t) not in self.written and self._outside(t) and t._base is None:
            self.written[id(t)] = (t, t._data.copy())

    def must_be_real(self, t: Any, how: str) -> None:
        """Refuse to go on when ``t``'s value is read (``how``) and it is a stand-in:
        the trace is made again on the real values (the flag too: the user's code may
        catch the error)."""
        if self.stand_ins and isinstance(t, Tensor) and id(t) in self.var_of \
                and self.value_of(t).id in self.stand_ins:
            self.stand_in_read = f"{how} at {source_of(user_frame())}"
            raise StandInRead(self.stand_in_read)

    def on_concrete(self, t: Tensor, how: str) -> None:
        self.must_be_real(t, how)
        if how in ("repr", "error"):
            return  # (shown, or an op that failed on it: no guard)
        if id(t) not in self.var_of and not t._requires_grad:
            return  # a constant's value may be read freely
        v = self.value_of(t)
        value = t._data.copy() if how in ("numpy", "__array__", "tolist", "tensor",
                                          "index") else (
            t._data.item() if how == "item" else bool(t._data))
        self.guards.append(Guard(v, how, value, source_of(user_frame())))

    def knows(self, t: Tensor) -> bool:
        """Whether ``t`` is a value the trace computed (an index of its values is read
        at run time: ``TensorMethods.__getitem__``), not a constant or a capture."""
        return not self._outside(t)

    def _name_locals(self, frame: Any) -> None:
        """Adopt the user's variable names for traced values bound to locals."""
        for name, val in frame.f_locals.items():
            if type(val) is Tensor or type(val) is NumpyTensor:
                v = self.var_of.get(id(val))
                if v is not None and v.name is None:
                    v.name = name

    # ------------------------------------------------------------------ running
    def __enter__(self) -> Tracer:
        self.will_draw(GENERATOR.rng)  # pb.randn & co. read it
        record.start_tracing(self.on_op, self.on_concrete, self.on_write, self.knows)
        return self

    def __exit__(self, *exc: object) -> None:
        record.stop_tracing(self.on_op, self.on_concrete, self.on_write, self.knows)
        for gen, state in self.rewinds.values():
            set_state_of(gen, state)
        for t, old in self.written.values():  # the generated code writes them again
            np.copyto(t._data, old)
        self._put_back()

    def graph(self, outputs: list) -> Graph:
        _name_assignments(self.builder.eqns)
        captured = {id(t): v for t, v in self.captures}
        for t, _ in self.written.values():  # the buffers' new values, into their memory
            new = self.var_of[id(t)]
            if new is not captured[id(t)]:
                self.builder.eqns.append(Eqn(COPY_INTO, (captured[id(t)], new), (), {}))
        return Graph(self.inputs + [v for _, v in self.captures], self.builder.eqns,
                     outputs, self.builder.consts, name=_fname(self.fn),
                     guards=[g.var for g in self.guards])


def _counts(targets: list, each: int, into: dict | None = None) -> dict:
    into = {} if into is None else into
    for t in targets:
        into[id(t)] = into.get(id(t), 0) + each
    return into


def _restore(changed: dict) -> None:
    for target, restore, before in reversed(changed.values()):
        restore(target, before)


def _references(target: Any) -> int:
    """The references to ``target`` (as ``sys.getrefcount`` counts them from here)."""
    return sys.getrefcount(target)


def _own_references() -> int:
    obj: list = []
    return _references(obj)


#: what ``_references`` counts for an object only a local name refers to
_REFS = _own_references()


def _records(t: Tensor, args: tuple) -> bool:
    """Whether an in-place op on ``t`` with ``args`` records a gradient."""
    return STATE.grad_enabled and any(
        isinstance(a, Tensor) and (a._requires_grad or a._base is not None and
                                   a._base._requires_grad) for a in (t, *args))


#: ``np.copyto(buffer, new)``: a captured tensor's new value, written into its memory at
#: the end of generated code (impure: kept although nothing reads it)
COPY_INTO = OpDef("copy_into", lambda into, new: (), pure=False, fresh=False,
                  outputs=tuple, template="np.copyto({0}, {1})")

_ASSIGN = re.compile(r"^([A-Za-z_]\w*)\s*(?::[^=]+)?=(?!=)")


def _name_assignments(eqns: list) -> None:
    """``loss = f(z)``: the last op of that line made ``loss`` (for values no later
    op saw in the caller's locals, such as the returned one)."""
    last: dict = {}
    for e in eqns:
        if e.src is not None:
            last[e.src] = e
    for src, e in last.items():
        m = _ASSIGN.match(src.text)
        if m and e.out is not None and e.out.name is None:
            e.out.name = m.group(1)


class _Names(threading.local):
    known: dict | None = None  # id of a tensor -> the name to trace it by, if captured


_NAMES = _Names()


@contextmanager
def capture_names(names: dict) -> Iterator[None]:
    """Inside: a tensor a trace captures whose id is in ``names`` gets that name (a
    compiled module's parameters are named after their dotted names)."""
    old, _NAMES.known = _NAMES.known, names
    try:
        yield
    finally:
        _NAMES.known = old


def _outer_name(t: Tensor) -> str:
    """The name the user's code knows a captured tensor by (closure or global)."""
    known = _NAMES.known
    if known is not None and id(t) in known:
        return known[id(t)]
    frame = user_frame()
    if frame is not None:
        for scope in (frame.f_locals, frame.f_globals):
            for name, value in scope.items():
                if value is t:
                    return name
    return naming.CAPTURED


def _fname(fn: Callable) -> str:
    return getattr(fn, "__qualname__", getattr(fn, "__name__", repr(fn)))


def def_line(fn: Callable) -> str:
    code = getattr(fn, "__code__", None)
    if code is None:
        return _fname(fn)
    return f"{_fname(fn)} ({os.path.basename(code.co_filename)}:{code.co_firstlineno})"


def active_tracer() -> Tracer | None:
    """The innermost tracer recording (the one ``record.apply`` reports to last)."""
    for hook in reversed(record.trace_hooks()):
        tracer = getattr(hook, "__self__", None)
        if isinstance(tracer, Tracer):
            return tracer
    return None
