"""torch.profiler's minimal API on pullback's profiler (``pullback.autograd.profiler``).

``profile(activities=[ProfilerActivity.CPU], record_shapes=..., profile_memory=...,
with_stack=...)`` records what ``pb.autograd.profiler.profile`` records, and has the
same results (``events()``, ``key_averages()``, ``export_chrome_trace``). pullback runs
on the CPU only: ``ProfilerActivity`` has ``CPU`` alone. torch's ``schedule``,
``on_trace_ready`` and ``step()`` (profiling some iterations of a loop) are not here.

>>> import pullback as pb
>>> with pb.profiler.profile(activities=[pb.profiler.ProfilerActivity.CPU]) as prof:
...     with pb.profiler.record_function("step"):
...         y = pb.ones(2) * 3
>>> [(e.name, e.cpu_parent and e.cpu_parent.name) for e in prof.events()]
[('step', None), ('aten::mul', 'step')]
"""

from __future__ import annotations

import enum
from typing import Iterable

from .autograd import profiler as _autograd_profiler
from .autograd.profiler import record_function


class ProfilerActivity(enum.Enum):
    """What a profiler records: pullback has the CPU only."""

    CPU = 0


class profile(_autograd_profiler.profile):
    """torch.profiler.profile: this thread's ops, backward nodes, ``record_function``
    ranges and generated functions (``compiled_detail``: one range per generated line)."""

    def __init__(self, activities: Iterable[ProfilerActivity] | None = None, *,
                 record_shapes: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, compiled_detail: bool = False) -> None:
        activities = [ProfilerActivity.CPU] if activities is None else list(activities)
        for a in activities:
            if not isinstance(a, ProfilerActivity):
                raise TypeError(f"profile: activities must be ProfilerActivity values, got "
                                f"{type(a).__name__}")
        super().__init__(enabled=bool(activities), record_shapes=record_shapes,
                         profile_memory=profile_memory, with_stack=with_stack,
                         compiled_detail=compiled_detail)
        self.activities = set(activities)


__all__ = ["profile", "record_function", "ProfilerActivity"]
