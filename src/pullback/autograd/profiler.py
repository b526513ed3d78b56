"""torch.autograd.profiler for pullback: which ops, backward nodes and compiled regions
ran, for how long (``time.perf_counter_ns``), on what shapes and making how many bytes.

>>> import pullback as pb
>>> x = pb.ones(3, 4, requires_grad=True)
>>> with pb.autograd.profiler.profile(record_shapes=True) as prof:
...     y = (x * 2).sum()
...     y.backward()
>>> [e.name for e in prof.function_events]       # doctest: +NORMALIZE_WHITESPACE
['aten::mul', 'aten::sum', 'autograd::engine::evaluate_function: SumBackward0',
 'SumBackward0', 'autograd::engine::evaluate_function: MulBackward0', 'MulBackward0',
 'autograd::engine::evaluate_function: torch::autograd::AccumulateGrad',
 'torch::autograd::AccumulateGrad']
>>> prof.function_events[0].input_shapes
[[3, 4], []]

How it hooks in, and why it costs nothing when off: the recorder's op dispatch checks one
global flag (``record.PROFILING``, set only while some thread profiles) before and after
an op; the engine picks its node runner once per backward call, as anomaly mode does;
generated functions are swapped for timed wrappers while a profiler is on (every live
codegen ``Module``, and the ones made meanwhile: ``compiler/profiled.py``, through
``on_profiling``) and swapped back after. Each thread
records its own ranges: a profiler sees the thread that entered it.
"""

from __future__ import annotations

import re
import threading
import time
from typing import Any, Callable

from . import record
from .anomaly_mode import user_frames
from .profiler_util import EventList, FunctionEvent

ALREADY_ENABLED = "Profiler is already enabled on this thread"
NOT_REENTRANT = "Profiler context manager is not reentrant"
NOT_FINISHED = "Profiler didn't finish running"
NO_GPU = "profile: use_cuda=True needs a GPU; pullback runs on the CPU only"
EVALUATE = "autograd::engine::evaluate_function: "

clock = time.perf_counter_ns
_LOCAL = threading.local()  # .rec: this thread's Recorder while it profiles
_LOCK = threading.Lock()
_ACTIVE = 0  # recorders on, over all threads


class Recorder:
    """The ranges one profiler records on its thread: ``events`` in start order,
    ``stack`` the open ones (the last is the parent of a new range)."""

    def __init__(self, record_shapes: bool, profile_memory: bool, with_stack: bool,
                 compiled_detail: bool) -> None:
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.compiled_detail = compiled_detail
        self.thread = threading.get_native_id()
        self.events: list[FunctionEvent] = []
        self.stack: list[FunctionEvent] = []

    def push(self, name: str, kind: str = "cpu_op", shapes: list | None = None,
             seq: int = -1, start: int | None = None) -> FunctionEvent:
        ev = FunctionEvent(len(self.events), name, self.thread, clock() if start is None
                           else start, input_shapes=shapes, sequence_nr=seq, kind=kind,
                           stack=_stack() if self.with_stack and kind == "cpu_op" else None)
        if self.stack:
            self.stack[-1].append_cpu_child(ev)
        self.events.append(ev)
        self.stack.append(ev)
        return ev

    def close(self, ev: FunctionEvent, made: Any = None) -> None:
        """End ``ev`` now (and the ranges an exception left open above it); ``made``:
        what it returned, whose bytes count as its memory."""
        end = clock()
        if ev not in self.stack:
            return
        while True:
            top = self.stack.pop()
            top.end_ns = end
            if top is ev:
                break
        if self.profile_memory and made is not None:
            ev.self_memory += nbytes(made)

    def shapes(self, args: tuple) -> list | None:
        return [list(getattr(a, "shape", ())) for a in args] if self.record_shapes else None


def current() -> Recorder | None:
    """This thread's recorder, or None when it does not profile."""
    return getattr(_LOCAL, "rec", None)


def is_enabled() -> bool:
    """Whether this thread profiles now."""
    return record.PROFILING and current() is not None


def nbytes(value: Any) -> int:
    """The bytes of the arrays in ``value`` (a Tensor, an array, or a tuple of them)."""
    if isinstance(value, (tuple, list)):
        return sum(nbytes(v) for v in value)
    data = getattr(value, "_data", value)
    return int(getattr(data, "nbytes", 0))


def _stack() -> list:
    """The user's frames, innermost first, as torch spells them: ``file(line): function``."""
    return [f"{f.filename}({f.lineno}): {f.name}" for f in reversed(user_frames())]


# ------------------------------------------------------------------------ op names
_NAMES: dict = {}


def aten_name(op: Any) -> str:
    """torch's name for an op of the table: ``aten::`` and the op torch's grad_fn name
    says (``SumBackward1`` -> ``aten::sum``, ``IndexSelectBackward0`` ->
    ``aten::index_select``); ops without a grad_fn name keep their own.

    >>> from pullback.ops import OPS
    >>> aten_name(OPS["sum_dim"]), aten_name(OPS["log1p"]), aten_name(OPS["eq"])
    ('aten::sum', 'aten::log1p', 'aten::eq')
    """
    name = _NAMES.get(op)
    if name is None:
        m = re.fullmatch(r"(\w+?)Backwards?\d*", op.grad_fn or "")
        base = re.sub(r"(?<=[a-z])(?=[A-Z])", "_", m.group(1)).lower() if m else op.name
        name = _NAMES[op] = "aten::" + base
    return name


# ------------------------------------------------------------ what the layers call
def op_start(op: Any) -> None:
    """The recorder's dispatch, before ``op`` runs (only while ``record.PROFILING``). An
    op's forward runs on arrays, so ops do not nest: an op range still open here is one
    whose op raised, and it ends now."""
    rec = current()
    if rec is not None:
        stack = rec.stack
        if stack and stack[-1].is_op:
            rec.close(stack[-1])
        rec.push(aten_name(op)).is_op = True


def op_end(op: Any, args: tuple, result: Any) -> None:
    """The recorder's dispatch, after ``op`` made ``result`` from ``args``."""
    rec = current()
    if rec is None or not rec.stack or not rec.stack[-1].is_op:
        return  # (a profiler entered inside the op: it did not see the start)
    ev = rec.stack[-1]
    if rec.record_shapes:
        ev.input_shapes = rec.shapes(args)
    node = getattr(result, "_grad_fn", None)
    if node is not None:
        ev.sequence_nr = node._seq
    rec.close(ev, result)


class Range:
    """A range on this thread's profiler, if it has one (else nothing happens).
    ``made``, if set inside, counts as the range's memory."""

    def __init__(self, name: str, kind: str = "cpu_op", args: tuple = ()) -> None:
        self.name, self.kind, self.args = name, kind, args

    def __enter__(self) -> Range:
        rec = self.rec = current()
        if rec is not None:
            self.ev = rec.push(self.name, self.kind, rec.shapes(self.args))
        return self

    def __exit__(self, *exc: object) -> None:
        if self.rec is not None:
            self.rec.close(self.ev, getattr(self, "made", None))


def function_range(cls: type, args: tuple) -> Range:
    """A custom Function's forward, named after its class (as torch names it)."""
    return Range(cls.__name__, "cpu_op", args)


def profiled_runner(run: Callable) -> Callable:
    """The engine's node runner under the profiler: each node a range ``autograd::engine::
    evaluate_function: <name>`` (hooks included) around the range of the node itself."""

    def run_profiled(task: Any, node: Any, grads: list, captured: list) -> Any:
        rec = current()
        ev = rec.push(EVALUATE + node.name())
        try:
            return run(task, node, grads, captured, _apply_node)
        finally:
            rec.close(ev)

    return run_profiled


def _apply_node(node: Any, grads: list, needs: list, create_graph: bool) -> Any:
    rec = current()
    ev = rec.push(node.name(), shapes=rec.shapes(grads), seq=node._seq)
    out = None
    try:
        out = node.apply(grads, needs, create_graph)
        return out
    finally:
        rec.close(ev, out)


# --------------------------------------------------------------------- on and off
#: called with True when the first profiler starts, False when the last one stops:
#: the compiler times its generated functions then (compiler/profiled.py registers)
_SWITCHES: list = []


def on_profiling(switch: Callable) -> None:
    """Call ``switch(on)`` as profiling starts (True) and stops (False) in any thread."""
    _SWITCHES.append(switch)


def _start(rec: Recorder) -> None:
    global _ACTIVE
    if current() is not None:
        raise RuntimeError(ALREADY_ENABLED)
    _LOCAL.rec = rec
    with _LOCK:
        _ACTIVE += 1
        if _ACTIVE == 1:
            for switch in _SWITCHES:
                switch(True)
            record.set_profiling(True, op_start, op_end)


def _stop() -> None:
    global _ACTIVE
    _LOCAL.rec = None
    with _LOCK:
        _ACTIVE -= 1
        if _ACTIVE == 0:
            record.set_profiling(False)
            for switch in _SWITCHES:
                switch(False)


class profile:
    """torch.autograd.profiler.profile: a context manager recording this thread's ops
    (``aten::mul``), backward nodes (``autograd::engine::evaluate_function:
    MulBackward0`` around ``MulBackward0``), custom Functions (their class name),
    ``record_function`` ranges and generated functions (``compiled::f_forward``;
    ``compiled_detail=True`` adds a range per generated statement inside). A profiler
    already on in this thread is refused (torch's message)."""

    def __init__(self, enabled: bool = True, *, use_cuda: bool = False,
                 record_shapes: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, use_cpu: bool = True,
                 compiled_detail: bool = False) -> None:
        if use_cuda:
            raise ValueError(NO_GPU)
        self.enabled = enabled
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.use_cpu = use_cpu
        self.compiled_detail = compiled_detail
        self.entered = False
        self.function_events: EventList | None = None
        self._rec: Recorder | None = None

    def __enter__(self) -> profile:
        if not self.enabled:
            return self
        if self.entered:
            raise RuntimeError(NOT_REENTRANT)
        rec = Recorder(self.record_shapes, self.profile_memory, self.with_stack,
                       self.compiled_detail)
        _start(rec)
        self.entered, self._rec = True, rec
        return self

    def __exit__(self, *exc: object) -> None:
        if not self.enabled or self._rec is None:
            return
        rec, self._rec = self._rec, None
        _stop()
        end = clock()
        for ev in rec.stack:  # (ranges still open: a record_function left entered)
            ev.end_ns = end
        self.function_events = EventList(rec.events, profile_memory=self.profile_memory)

    def _finished(self) -> EventList:
        if self.function_events is None:
            raise RuntimeError(NOT_FINISHED)
        return self.function_events

    def events(self) -> EventList:
        """The recorded events, in start order (torch.profiler's name for them)."""
        return self._finished()

    def key_averages(self, group_by_input_shape: bool = False) -> EventList:
        """One row per name (and input shapes, with ``group_by_input_shape``)."""
        return self._finished().key_averages(group_by_input_shape)

    def table(self, sort_by: str | None = None, row_limit: int = 100,
              max_name_column_width: int = 55, header: str | None = None,
              top_level_events_only: bool = False) -> str:
        return self._finished().table(sort_by=sort_by, row_limit=row_limit,
                                      max_name_column_width=max_name_column_width,
                                      header=header,
                                      top_level_events_only=top_level_events_only)

    def export_chrome_trace(self, path: Any) -> None:
        """Write a trace chrome://tracing and Perfetto load (complete events, in us)."""
        self._finished().export_chrome_trace(path)

    @property
    def self_cpu_time_total(self) -> float:
        return self._finished().self_cpu_time_total

    def total_average(self) -> Any:
        return self._finished().total_average()

    def __str__(self) -> str:
        return self._finished().table()


class record_function:
    """A labelled range of the user's, as a context manager or a decorator (torch's
    ``record_function``); nothing is recorded when this thread does not profile.
    Ranges nest: a range's self time is its time minus its children's."""

    def __init__(self, name: str, args: str | None = None) -> None:
        self.name = name
        self.args = args

    def __enter__(self) -> record_function:
        self._range = Range(self.name, "user_annotation").__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._range.__exit__(*exc)

    def __call__(self, fn: Callable) -> Callable:
        name = self.name

        def wrapped(*args: Any, **kwargs: Any) -> Any:
            with record_function(name):
                return fn(*args, **kwargs)

        wrapped.__name__, wrapped.__qualname__ = fn.__name__, fn.__qualname__
        wrapped.__doc__, wrapped.__wrapped__ = fn.__doc__, fn
        return wrapped


__all__ = ["profile", "record_function", "EventList", "FunctionEvent"]
