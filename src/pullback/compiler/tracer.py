"""The tracer: runs the user's function for real once and records every op into IR.

Python control flow just runs. When the program turns a traced value into a Python
value (``bool``, ``float``, ``.item()``, ``.tolist()``, ``.numpy()``, ``np.asarray``)
the tracer records a guard: the generated code checks it on every later call, and a
failed guard sends the call back to be traced again.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..autograd import record
from ..autograd.grad_mode import STATE
from ..ir import Builder, Eqn, Graph, Var, squashed
from ..numpy_face import NumpyTensor
from ..ops import OpDef
from ..ops.sampling import GENERATOR, set_state_of
from ..ops.shape import detach
from ..ops.writes import copy, view_chain
from ..tensor import Tensor
from .trace_names import name_assignments, outer_name
from .tracer_constants import ConstantReads
from .tracer_outside import OutsideChanges
from .tracer_writes import InplaceWrites
from .user_lines import Guard, StandInRead, TraceError, fname, source_of, user_frame


class Tracer(InplaceWrites, OutsideChanges, ConstantReads):
    """Records the ops run on Tensors while it is active (see ``trace``); its in-place
    writes (tracer_writes.py), changes outside the function (tracer_outside.py) and
    the numpy arrays it reads as constants (tracer_constants.py) are rooms of their own."""

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
        self.notes: list[str] = []  # why a converted loop ran unrolled (source/region_attempts.py)
        # the first conversion that cut a gradient (pb.compile's torch semantics allow
        # it): (how, SourceLine); its variant refuses to run inside a functional transform
        self.cut: tuple | None = None
        # whether a long scan may leave stand-ins for its outputs (control_flow.py
        # STAND_IN_FROM); ids of the values computed from them; what read one first
        self.may_stand_in = False
        self.stand_ins: set[int] = set()
        self.stand_in_read: str | None = None
        # each use of a numpy array as a constant (a Var, or an equation's parameters)
        # with what it read, and the loop bodies' graphs holding such Vars: a use whose
        # array was written before the trace ended reads its copy (tracer_constants.py)
        self.const_reads: list = []
        self.param_reads: list = []
        self.last_reads: dict = {}  # id of an array -> its last use's _Read
        self.baked: dict = {}  # id of an array written after a use -> it
        self.body_graphs: list = []

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
                v = Var(a._data.shape, a._data.dtype, a._data, name=outer_name(a))
                self._bind(a, v)
                self.captures.append((a, v))
            return v
        if isinstance(a, np.ndarray):
            return self.constant(a)
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
            raise TraceError(f"{fname(self.fn)}: {op.name}(){where} gives a result whose "
                             "shape depends on the data, which a trace cannot follow; call "
                             "it outside pb.compile and pb.grad (eagerly)")
        if inplace:
            self._check_inplace(op, result, src, args)
            old, args = args[0], (result,) + tuple(args[1:])
        inputs = tuple(self.value_of(a) for a in args)
        first = len(self.builder.eqns)
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
        self.read_params(first)
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
        """Adopt the user's variable names for traced values bound to locals (not the
        source pass's own names, ``__pb_app_hs__``: temporaries read better)."""
        for name, val in frame.f_locals.items():
            if (type(val) is Tensor or type(val) is NumpyTensor) \
                    and not name.startswith("__pb_"):
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
        try:  # (before the changes made outside are put back)
            if exc[0] is None:
                self.settle_constants()
        finally:
            self._put_back()

    def graph(self, outputs: list) -> Graph:
        name_assignments(self.builder.eqns)
        captured = {id(t): v for t, v in self.captures}
        for t, _ in self.written.values():  # the buffers' new values, into their memory
            new = self.var_of[id(t)]
            if new is not captured[id(t)]:
                self.builder.eqns.append(Eqn(COPY_INTO, (captured[id(t)], new), (), {}))
        return Graph(self.inputs + [v for _, v in self.captures], self.builder.eqns,
                     outputs, self.builder.consts, name=fname(self.fn),
                     guards=[g.var for g in self.guards])


#: ``np.copyto(buffer, new)``: a captured tensor's new value, written into its memory at
#: the end of generated code (impure: kept although nothing reads it)
COPY_INTO = OpDef("copy_into", lambda into, new: (), pure=False, fresh=False,
                  outputs=tuple, template="np.copyto({0}, {1})")


def active_tracer() -> Tracer | None:
    """The innermost tracer recording (the one ``record.apply`` reports to last)."""
    for hook in reversed(record.trace_hooks()):
        tracer = getattr(hook, "__self__", None)
        if isinstance(tracer, Tracer):
            return tracer
    return None
