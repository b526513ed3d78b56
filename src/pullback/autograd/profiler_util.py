"""The profiler's results: events, their averages, torch's table and Chrome's trace.

torch.autograd.profiler_util's classes for a CPU-only library: a ``FunctionEvent`` is
one timed range (an op, a backward node, a ``record_function`` label, a compiled
region), an ``EventList`` holds them in start order, and ``key_averages`` sums them
per name (and per input shapes when asked) into ``FunctionEventAvg`` rows. Times are
microseconds (floats) as in torch; memory is bytes of the arrays a range made.

>>> ev = FunctionEvent(0, "aten::mul", 0, 1_000, 4_000, input_shapes=[[3], [3]])
>>> child = FunctionEvent(1, "aten::to", 0, 2_000, 3_000)
>>> ev.append_cpu_child(child)
>>> ev.cpu_time_total, ev.self_cpu_time_total
(3.0, 2.0)
>>> print(EventList([ev, child]).key_averages().table(sort_by="cpu_time_total"))
... # doctest: +NORMALIZE_WHITESPACE
-------------  ------------  ------------  ------------  ------------  ------------  ------------
         Name    Self CPU %      Self CPU   CPU total %     CPU total  CPU time avg    # of Calls
-------------  ------------  ------------  ------------  ------------  ------------  ------------
    aten::mul        66.67%       2.000us       100.00%       3.000us       3.000us             1
     aten::to        33.33%       1.000us        33.33%       1.000us       1.000us             1
-------------  ------------  ------------  ------------  ------------  ------------  ------------
Self CPU time total: 3.000us
<BLANKLINE>
"""

from __future__ import annotations

import json
import os
from typing import Any

SPACING = 2
COLUMN_WIDTH = 12


def format_time(time_us: float) -> str:
    """torch's spelling of a duration given in microseconds."""
    if time_us >= 1e6:
        return f"{time_us / 1e6:.3f}s"
    if time_us >= 1e3:
        return f"{time_us / 1e3:.3f}ms"
    return f"{time_us:.3f}us"


def format_share(time_us: float, total_us: float) -> str:
    return "NaN" if total_us == 0 else f"{time_us * 100.0 / total_us:.2f}%"


def format_memory(nbytes: int) -> str:
    """torch's spelling of a byte count (``1.50 KB``, ``48 B``)."""
    for unit, size in (("GB", 1024 ** 3), ("MB", 1024 ** 2), ("KB", 1024)):
        if abs(nbytes) >= size:
            return f"{nbytes / size:.2f} {unit}"
    return f"{nbytes} B"


class _Times:
    """The ``*_str`` spellings torch's events and averages share."""

    @property
    def cpu_time(self) -> float:
        """The average time of one call (microseconds)."""
        return 0.0 if self.count == 0 else self.cpu_time_total / self.count

    @property
    def cpu_time_str(self) -> str:
        return format_time(self.cpu_time)

    @property
    def cpu_time_total_str(self) -> str:
        return format_time(self.cpu_time_total)

    @property
    def self_cpu_time_total_str(self) -> str:
        return format_time(self.self_cpu_time_total)


class FunctionEvent(_Times):
    """One timed range on one thread: ``start_ns``/``end_ns`` from ``perf_counter_ns``.
    ``kind`` is its trace category: ``cpu_op`` (ops, backward nodes, compiled regions)
    or ``user_annotation`` (``record_function``)."""

    count = 1
    is_op = False  # an op of the table (ops do not nest: see profiler.op_start)

    def __init__(self, id: int, name: str, thread: int, start_ns: int, end_ns: int = -1,
                 input_shapes: list | None = None, sequence_nr: int = -1,
                 kind: str = "cpu_op", stack: list | None = None) -> None:
        self.id = id
        self.name = name
        self.thread = thread
        self.start_ns = start_ns
        self.end_ns = end_ns
        self.input_shapes = input_shapes if input_shapes is not None else []
        self.sequence_nr = sequence_nr
        self.kind = kind
        self.stack = stack if stack is not None else []
        self.self_memory = 0  # bytes of the arrays this range itself made
        self.cpu_children: list[FunctionEvent] = []
        self.cpu_parent: FunctionEvent | None = None

    @property
    def key(self) -> str:
        return self.name

    @property
    def is_user_annotation(self) -> bool:
        return self.kind == "user_annotation"

    def append_cpu_child(self, child: FunctionEvent) -> None:
        self.cpu_children.append(child)
        child.cpu_parent = self

    @property
    def cpu_time_total(self) -> float:
        return max(self.end_ns - self.start_ns, 0) / 1e3

    @property
    def self_cpu_time_total(self) -> float:
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    @property
    def cpu_memory_usage(self) -> int:
        return self.self_memory + sum(c.cpu_memory_usage for c in self.cpu_children)

    @property
    def self_cpu_memory_usage(self) -> int:
        return self.self_memory

    @property
    def time_range(self) -> tuple:
        """(start, end) in microseconds."""
        return self.start_ns / 1e3, self.end_ns / 1e3

    def __repr__(self) -> str:
        return (f"<FunctionEvent id={self.id} name={self.name} cpu_time={self.cpu_time_str} "
                f"start_us={self.start_ns / 1e3:.3f} end_us={self.end_ns / 1e3:.3f} "
                f"cpu_children={[c.id for c in self.cpu_children]} thread={self.thread} "
                f"input_shapes={self.input_shapes} cpu_memory_usage={self.cpu_memory_usage} "
                f"seq_nr={self.sequence_nr}>")


class FunctionEventAvg(_Times):
    """The events of one key summed: ``count`` calls, total and self times."""

    def __init__(self) -> None:
        self.key: str | None = None
        self.count = 0
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.cpu_memory_usage = 0
        self.self_cpu_memory_usage = 0
        self.input_shapes: Any = None
        self.stack: list = []
        self.cpu_parent: Any = None
        self.cpu_children: list = []
        self.is_user_annotation = False

    def add(self, other: Any) -> FunctionEventAvg:
        if self.key is None:  # the first event's fields, as torch takes them
            self.key = other.key
            self.input_shapes = other.input_shapes
            self.is_user_annotation = other.is_user_annotation
            self.cpu_parent = other.cpu_parent
            self.cpu_children = other.cpu_children
            self.stack = other.stack
        self.count += other.count
        self.cpu_time_total += other.cpu_time_total
        self.self_cpu_time_total += other.self_cpu_time_total
        self.cpu_memory_usage += other.cpu_memory_usage
        self.self_cpu_memory_usage += other.self_cpu_memory_usage
        return self

    __iadd__ = add

    def __repr__(self) -> str:
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total_str}"
                f" cpu_time={self.cpu_time_str} input_shapes={self.input_shapes} "
                f"cpu_memory_usage={self.cpu_memory_usage}>")


class EventList(list):
    """A list of events (or of averages) with torch's summaries."""

    def __init__(self, *args: Any, profile_memory: bool = False) -> None:
        super().__init__(*args)
        self._profile_memory = profile_memory

    @property
    def self_cpu_time_total(self) -> float:
        return sum(e.self_cpu_time_total for e in self)

    def key_averages(self, group_by_input_shapes: bool = False) -> EventList:
        """One row per name (per name and input shapes with ``group_by_input_shapes``)."""
        stats: dict = {}
        for e in self:
            key = (e.key, str(e.input_shapes)) if group_by_input_shapes else e.key
            stats.setdefault(key, FunctionEventAvg()).add(e)
        rows = EventList(stats.values(), profile_memory=self._profile_memory)
        if not group_by_input_shapes:
            for r in rows:
                r.input_shapes = ""
        return rows

    def total_average(self) -> FunctionEventAvg:
        total = FunctionEventAvg()
        for e in self:
            total.add(e)
        total.key = "Total"
        return total

    def table(self, sort_by: str | None = None, row_limit: int = 100,
              max_name_column_width: int = 55, max_shapes_column_width: int = 80,
              header: str | None = None, top_level_events_only: bool = False) -> str:
        """torch's table: Name, Self CPU %, Self CPU, CPU total %, CPU total, CPU time avg,
        (CPU Mem, Self CPU Mem,) # of Calls (, Input Shapes), sorted by the attribute
        ``sort_by`` (largest first), then ``Self CPU time total``."""
        return build_table(self, sort_by, row_limit, max_name_column_width,
                           max_shapes_column_width, header, top_level_events_only)

    def export_chrome_trace(self, path: str | os.PathLike) -> None:
        """Write the events as Chrome's trace-event JSON (chrome://tracing, Perfetto)."""
        with open(path, "w") as f:
            json.dump(chrome_trace(self), f)

    def __str__(self) -> str:
        return self.table()


def build_table(events: list, sort_by: str | None, row_limit: int, max_name: int | None,
                max_shapes: int | None, header: str | None, top_only: bool) -> str:
    if len(events) == 0:
        return ""
    memory = getattr(events, "_profile_memory", False)
    if sort_by is not None:
        events = sorted(events, key=lambda e: getattr(e, sort_by), reverse=True)
    shapes = any(e.input_shapes is not None and len(e.input_shapes) > 0 for e in events)
    name_width = max(len(e.key) for e in events) + 4
    if max_name is not None:
        name_width = min(name_width, max_name)
    headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
    if memory:
        headers += ["CPU Mem", "Self CPU Mem"]
    headers.append("# of Calls")
    widths = [name_width] + [COLUMN_WIDTH] * (len(headers) - 1)
    if shapes:
        shapes_width = max(len(str(e.input_shapes)) for e in events) + 4
        if max_shapes is not None:
            shapes_width = min(shapes_width, max_shapes)
        headers.append("Input Shapes")
        widths.append(shapes_width)
    row = "".join("{: >" + str(w) + "}" + " " * SPACING for w in widths)
    sep = "".join("-" * w + " " * SPACING for w in widths)
    line_length = sum(w + SPACING for w in widths) - SPACING
    total = sum(e.self_cpu_time_total for e in events)
    out = []
    if header is not None:
        out += ["=" * line_length, header]
    if top_only:
        out += ["=" * line_length, "This report only display top-level ops statistics"]
    out += [sep, row.format(*headers), sep]
    shown = 0
    for e in events:
        if shown == row_limit:
            break
        if top_only and e.cpu_parent is not None:
            continue
        shown += 1
        name = e.key
        if max_name is not None and len(name) >= max_name - 3:
            name = name[:max_name - 3] + "..."
        values = [name, format_share(e.self_cpu_time_total, total),
                  e.self_cpu_time_total_str, format_share(e.cpu_time_total, total),
                  e.cpu_time_total_str, e.cpu_time_str]
        if memory:
            values += [format_memory(e.cpu_memory_usage), format_memory(e.self_cpu_memory_usage)]
        values.append(e.count)
        if shapes:
            values.append(str(e.input_shapes)[:shapes_width])
        out.append(row.format(*values))
    out += [sep, f"Self CPU time total: {format_time(total)}"]
    return "".join(line + "\n" for line in out)


def chrome_trace(events: list) -> dict:
    """Chrome's trace-event format: one complete event (``ph`` "X", ``ts`` and ``dur``
    in microseconds) per range, process and thread names as metadata events, and a flow
    (``ph`` "s" then "f", category "fwdbwd", as torch's) from each forward op to the
    backward node it made, when both were recorded."""
    pid = os.getpid()
    threads = sorted({e.thread for e in events})
    trace: list = [{"ph": "M", "name": "process_name", "pid": pid, "tid": 0,
                    "args": {"name": "python"}}]
    trace += [{"ph": "M", "name": "thread_name", "pid": pid, "tid": t,
               "args": {"name": f"thread {t} (python)"}} for t in threads]
    for e in events:
        args: dict = {}
        if e.input_shapes:
            args["Input Dims"] = e.input_shapes
        if e.sequence_nr >= 0:
            args["Sequence number"] = e.sequence_nr
        if e.stack:
            args["Stack"] = e.stack
        trace.append({"ph": "X", "cat": e.kind, "name": e.name, "pid": pid, "tid": e.thread,
                      "ts": e.start_ns / 1e3, "dur": e.cpu_time_total, "args": args})
    return {"traceEvents": trace + _flows(events, pid), "displayTimeUnit": "ms"}


def _flows(events: list, pid: int) -> list:
    ops = {e.sequence_nr: e for e in events if e.is_op and e.sequence_nr >= 0}
    flows = []
    for e in events:
        op = ops.get(e.sequence_nr) if not e.is_op and e.sequence_nr >= 0 else None
        if op is not None:
            flow = {"id": e.sequence_nr, "pid": pid, "cat": "fwdbwd", "name": "fwdbwd"}
            flows.append({"ph": "s", "tid": op.thread, "ts": op.start_ns / 1e3, **flow})
            flows.append({"ph": "f", "bp": "e", "tid": e.thread, "ts": e.start_ns / 1e3, **flow})
    return flows
