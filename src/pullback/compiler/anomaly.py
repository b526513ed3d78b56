"""Anomaly mode over compiled code: a compiled region's backward, run with anomaly
detection on, is the IR interpreted equation by equation, so that the equation that
raises (or first makes a NaN, with ``check_nan``) adds the user's line to the node's
forward traceback. The eager part of anomaly mode is ``autograd/anomaly_mode.py``;
this is the compiler's, as generated code's ``out=`` forms (``IntoOp``) are."""

from __future__ import annotations

from typing import Any

import numpy as np

from pullback.transforms.inplace import IntoOp

from ..autograd.anomaly_mode import has_nan, is_anomaly_check_nan_enabled
from ..ir import Graph, evaluate


def _source_frame(e: Any) -> str:
    """An equation's user line (the IR records it) as a traceback frame."""
    src = e.src
    return f'  File "{src.filename}", line {src.lineno}, in {src.function}\n    {src.text}\n'


def _blame(node: Any, e: Any) -> None:
    """The node's forward traceback, ending with the line equation ``e`` came from."""
    meta = node.metadata
    call = meta.setdefault("forward_call_", meta.get("traceback_", []))
    meta["traceback_"] = list(call) + ([_source_frame(e)] if e.src is not None else [])


def run_graph(node: Any, graph: Graph, inputs: list) -> list:
    """A compiled region's backward in anomaly mode: the IR interpreted equation by
    equation, so that the equation that raises, or (with check_nan) the first one that
    makes a NaN, adds the user's line the IR recorded for it to the node's traceback
    (the warning before the error shows it)."""
    first_nan: list = []

    def step(e: Any, args: tuple) -> Any:
        op = e.op
        try:  # (an out= form writes into a buffer generated code owns: not so here)
            value = op.ufunc(*args) if isinstance(op, IntoOp) else op(*args, **e.params)
        except Exception:
            _blame(node, e)
            raise
        if is_anomaly_check_nan_enabled() and not first_nan and has_nan(value):
            first_nan.append(e)
        return value

    with np.errstate(all="ignore"):
        outs = evaluate(graph, inputs, step=step)
    if first_nan and any(has_nan(o) for o in outs):
        _blame(node, first_nan[0])
    return outs
