"""``autograd.backward`` and ``autograd.grad``: argument checks, then the engine."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from .. import dtypes
from ..ops.elementwise import clone
from ..ops.indexing import fill_op
from ..ops.subscripts import index_backward
from . import engine, messages, record
from .edges import grad_edge


def _as_tuple(x: Any) -> tuple:
    Tensor = record.Tensor
    if x is None:
        return ()
    if isinstance(x, Tensor):
        return (x,)
    return tuple(x)


def _root_grads(outputs: tuple, grads: tuple, create_graph: bool) -> list:
    """One seed gradient per output, checked as torch checks them (each pair first,
    then the counts)."""
    Tensor = record.Tensor
    seeds = []
    for i, (out, g) in enumerate(zip(outputs, grads)):
        if not isinstance(out, Tensor):
            raise TypeError(f"Expected output {i} to be a Tensor, got {type(out).__name__}")
        if g is None:
            if out._requires_grad:
                if out._data.size != 1:
                    raise RuntimeError(messages.IMPLICIT_SCALAR)
                if out._data.dtype.kind == "c":
                    raise RuntimeError(messages.IMPLICIT_REAL.format(
                        dtype=f"torch.{out.dtype.name}"))
            g = np.ones_like(out._data)
        elif isinstance(g, (Tensor, np.ndarray)):
            if g.shape != out.shape:
                raise RuntimeError(messages.SHAPE_MISMATCH.format(
                    i=i, g=messages.torch_size(g.shape), o=messages.torch_size(out.shape)))
            gd = g._data.dtype if isinstance(g, Tensor) else g.dtype
            if (gd.kind == "c") != (out._data.dtype.kind == "c"):
                raise RuntimeError(messages.COMPLEX_SEED_DTYPE.format(
                    i=i, g=f"torch.{dtypes.as_dtype(gd).name}", o=f"torch.{out.dtype.name}"))
            if isinstance(g, Tensor):
                g = g if create_graph else g._data
            if gd != out._data.dtype:  # torch casts the seed to the output's dtype
                g = g.to(out.dtype) if isinstance(g, Tensor) else g.astype(out._data.dtype)
        else:
            raise TypeError(messages.GRAD_NOT_TENSOR.format(typ=type(g).__name__))
        if create_graph and not isinstance(g, Tensor):
            g = _seed_tensor(np.asarray(g))
        seeds.append(g)
    if len(grads) != len(outputs):
        raise RuntimeError(messages.COUNT_MISMATCH.format(n=len(outputs), m=len(grads)))
    return seeds


def _seed_tensor(g: np.ndarray) -> Any:
    """A seed's Tensor; inside a trace (a gradient taken in a compiled function) a
    constant of the traced function, not an input captured from outside it, so that
    generated code neither takes it as an argument nor checks it on every call."""
    if record.TRACING and record.trace_hooks():
        return record.apply(clone, (g,), {})
    return record.Tensor._make(g)


def _root_edges(outputs: tuple) -> list:
    edges = []
    for i, out in enumerate(outputs):
        e = grad_edge(out)
        if e[0] is None:
            raise RuntimeError(messages.NO_GRAD_FN.format(i=i))
        edges.append(e)
    return edges


def backward(tensors: Any, grad_tensors: Any = None, retain_graph: bool | None = None,
             create_graph: bool = False, grad_variables: Any = None,
             inputs: Any = None) -> None:
    """Accumulate into ``.grad`` of the leaves (or of ``inputs``) the gradients of
    ``tensors``, weighted by ``grad_tensors``; one pass for several roots. Refused
    while this thread traces a function: generated code would not fill ``.grad``."""
    if record.trace_hooks():
        raise RuntimeError(messages.side_effect_in_trace("backward()"))
    run_backward(tensors, grad_tensors, retain_graph, create_graph, grad_variables, inputs)


def run_backward(tensors: Any, grad_tensors: Any = None, retain_graph: bool | None = None,
                 create_graph: bool = False, grad_variables: Any = None,
                 inputs: Any = None) -> None:
    """``backward`` itself (a checkpoint's recomputation runs it inside a backward)."""
    if grad_variables is not None:
        warnings.warn("`grad_variables` is deprecated. Use `grad_tensors` instead.",
                      FutureWarning, stacklevel=2)
        grad_tensors = grad_variables
    outputs = _as_tuple(tensors)
    grads = _as_tuple(grad_tensors) if grad_tensors is not None else (None,) * len(outputs)
    if inputs is not None:
        inputs = _as_tuple(inputs)
        if not inputs:
            raise RuntimeError(messages.EMPTY_INPUTS)
    if retain_graph is None:
        retain_graph = create_graph
    seeds = _root_grads(outputs, grads, create_graph)
    edges = _root_edges(outputs)
    task = engine.GraphTask(create_graph, retain_graph, accumulate=True)
    if inputs is not None:
        for t in inputs:  # torch retains the grad of non-leaf inputs (a leaf: no-op)
            _check_input(t)
            t.retain_grad()
        task.targets = _capture(task, inputs)
    if create_graph:
        messages.warn_once(messages.CREATE_GRAPH_CYCLE, stacklevel=3)
    elif inputs is None and engine.replay(edges, seeds, retain_graph) is not None:
        return  # a graph seen before: its cached generated backward ran
    engine.execute(task, edges, seeds)


def _check_input(t: Any) -> None:
    if not isinstance(t, record.Tensor):
        raise RuntimeError("all inputs have to be Tensors or GradientEdges, but got "
                           f"{type(t).__name__}")


def _capture(task: engine.GraphTask, inputs: tuple) -> set:
    targets = set()
    for t in inputs:
        _check_input(t)
        e = grad_edge(t)
        if e[0] is None:
            raise RuntimeError(messages.INPUT_NO_GRAD)
        task.captures.setdefault(e, len(task.captures))
        targets.add(e[0])
    return targets


def grad(outputs: Any, inputs: Any, grad_outputs: Any = None, retain_graph: bool | None = None,
         create_graph: bool = False, only_inputs: bool = True, allow_unused: bool | None = None,
         is_grads_batched: bool = False, materialize_grads: bool = False) -> Any:
    """The gradients of ``outputs`` with respect to ``inputs``, as a tuple (a dict when
    ``inputs`` is a dict); ``.grad`` is not touched."""
    if not only_inputs:
        warnings.warn("only_inputs argument is deprecated and is ignored now (defaults to "
                      "True). To accumulate gradient for other parts of the graph, please use "
                      "torch.autograd.backward.", FutureWarning, stacklevel=2)
    if materialize_grads and allow_unused is False:
        raise ValueError(messages.MATERIALIZE_UNUSED)
    if allow_unused is None:
        allow_unused = materialize_grads
    if isinstance(inputs, dict):
        result = grad(outputs, tuple(inputs.values()), grad_outputs, retain_graph,
                      create_graph, True, allow_unused, is_grads_batched, materialize_grads)
        return dict(zip(inputs.keys(), result))
    outs = _as_tuple(outputs)
    ins = _as_tuple(inputs)
    if not ins:
        raise RuntimeError(messages.EMPTY_GRAD_INPUTS)
    gouts = _as_tuple(grad_outputs) if grad_outputs is not None else (None,) * len(outs)
    if retain_graph is None:
        retain_graph = create_graph
    if is_grads_batched:
        return _grad_batched(outs, ins, gouts, retain_graph, create_graph, allow_unused,
                             materialize_grads)
    # while this thread traces, the backward's ops must reach the trace (as with
    # create_graph), and its results are detached as create_graph=False's are
    traced = not create_graph and bool(record.trace_hooks())
    seeds = _root_grads(outs, gouts, create_graph or traced)
    edges = _root_edges(outs)
    task = engine.GraphTask(create_graph or traced, retain_graph, accumulate=False)
    task.targets = _capture(task, ins)
    captured = None if create_graph or traced else engine.replay(edges, seeds, retain_graph,
                                                                   task.captures)
    if captured is None:
        captured = engine.execute(task, edges, seeds)
    result = tuple(_result(captured[task.captures[grad_edge(t)]], t, i, allow_unused,
                           materialize_grads) for i, t in enumerate(ins))
    return tuple(g.detach() if traced and g is not None else g for g in result)


def _result(g: Any, t: Any, i: int, allow_unused: bool, materialize: bool) -> Any:
    """One entry of grad()'s result: a Tensor of the input's dtype, or None/zeros."""
    Tensor = record.Tensor
    if g is None:
        if materialize and record.trace_hooks():  # (an equation of the trace, not a
            return fill_op(t, value=0, shape=t._data.shape)  # captured Tensor)
        if materialize:
            return Tensor._make(np.zeros_like(t._data))
        if not allow_unused:
            raise RuntimeError(messages.UNUSED_INPUT.format(i=i))
        return None
    if not isinstance(g, Tensor):
        g = Tensor._make(np.array(g, dtype=t._data.dtype))
    return g


def _grad_batched(outs: tuple, ins: tuple, gouts: tuple, retain_graph: bool,
                  create_graph: bool, allow_unused: bool, materialize: bool) -> tuple:
    """``is_grads_batched``: dim 0 of every grad_output indexes independent vector-Jacobian
    products (torch vmaps the backward; here the backward runs once per batch element)."""
    for i, (o, g) in enumerate(zip(outs, gouts)):
        if g is None or len(g.shape) == 0:
            raise ValueError(messages.BATCHED_NEEDS_DIM)
        if tuple(g.shape[1:]) != tuple(o.shape):
            raise RuntimeError(messages.BATCHED_SHAPE.format(
                i=i, g=messages.torch_size(g.shape[1:]), o=messages.torch_size(o.shape)))
    n = gouts[0].shape[0] if gouts else 0
    if not create_graph and not record.trace_hooks() and n:  # one batched backward
        task = engine.GraphTask(False, retain_graph, accumulate=False)
        task.targets = _capture(task, ins)
        seeds = [np.asarray(g._data if hasattr(g, "_data") else g, dtype=o._data.dtype)
                 for g, o in zip(gouts, outs)]
        captured = engine.batched_replay(_root_edges(outs), seeds, retain_graph, task.captures)
        if captured is not None:
            return tuple(_batched_result(captured[task.captures[grad_edge(t)]], t, i, n,
                                         allow_unused, materialize) for i, t in enumerate(ins))
    rows = [grad(outs, ins, [g[b] for g in gouts], retain_graph or b < n - 1, create_graph,
                 allow_unused=True) for b in range(n)]
    result = []
    for i, t in enumerate(ins):
        col = [r[i] for r in rows]
        if all(c is None for c in col):
            result.append(_result(None, t, i, allow_unused, materialize))
        else:
            result.append(stack_rows(col, t, create_graph))
    return tuple(result)


def _batched_result(g: Any, t: Any, i: int, n: int, allow_unused: bool,
                    materialize: bool) -> Any:
    """One entry of a batched grad()'s result: ``n`` gradients of ``t`` stacked."""
    if g is None and materialize:
        g = np.zeros((n,) + tuple(t.shape), t._data.dtype)
    return _result(None if g is None else record.Tensor._make(g), t, i, allow_unused, False)


def stack_rows(col: list, t: Any, create_graph: bool) -> Any:
    """Stack gradients shaped like ``t`` (None: zeros) along a new dim 0, differentiably
    under create_graph (per-example gradients; the rows of a Jacobian)."""
    Tensor = record.Tensor
    shape = (len(col),) + tuple(t.shape)
    if not create_graph:
        return Tensor._make(np.stack([np.zeros_like(t._data) if c is None else c._data
                                      for c in col]))
    out = None
    for b, c in enumerate(col):
        if c is not None:
            part = index_backward(c, shape=shape, index=b)
            out = part if out is None else out + part
    return out
