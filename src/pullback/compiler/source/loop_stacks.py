"""What a converted loop does with the values its body appends (``appends.py``) and
with a while region's carries, for ``loop_runtime.py`` and ``loop_regions.py``: the
Python loop appends them to lists; a region gives them as per-step outputs, a scan's or
a while loop's (``while_stacking``: stacked as long as it ran)."""

from __future__ import annotations

from typing import Any, Callable

from ..control_flow import while_loop, while_stacking


def split_step(out: tuple, lists: list) -> tuple:
    """``(carries, mids, test)`` of the part of a step before its ``if test: break``;
    the values it appends (a fourth item, with ``outs``) appended to ``lists``."""
    if lists:
        for items, v in zip(lists, out[3]):
            items.append(v)
    return out[:3]


def append_outs(out: tuple, lists: list) -> tuple:
    """The carries of a step's ``out``, its last ``len(lists)`` values appended to
    ``lists``."""
    if not lists:
        return out
    n = len(out) - len(lists)
    for items, v in zip(lists, out[n:]):
        items.append(v)
    return tuple(out[:n])


def step_ys(out: Any, outs: int) -> tuple:
    """A scan step's (carries, per-step outputs) from a body's values."""
    out = tuple(out)
    return (out[:len(out) - outs], out[len(out) - outs:]) if outs else (out, None)


def while_region(more: Callable, step: Callable, init: tuple, at: int, brk: bool,
                  done: bool, outs: int) -> tuple:
    """A while region's carries (``flag_last``) and, with ``outs``, the stacked
    per-step outputs ``step`` gives after its carries."""
    if not outs:
        return flag_last(while_loop(more, step, init), at, brk, done)
    carry, ys = while_stacking(more, lambda c: step_ys(step(c), outs), init)
    return (*flag_last(carry, at, brk, done), *ys)


def flag_last(out: Any, at: int, brk: bool, done: bool) -> tuple:
    """A while region's carries after its counter (before ``at``) and its break flag
    (at ``at`` with ``brk``); with ``done``, the flag last."""
    out = tuple(out)
    carries = out[at + brk:]
    return (*carries, out[at]) if done else carries
