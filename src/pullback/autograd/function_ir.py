"""A custom Function inside a trace (``pb.compile``, ``pb.grad``): one opaque step.

The tracer never sees what ``forward`` does. ``F.apply(x, y)`` runs it eagerly (with
this thread's tracers blind) and reports one equation for the call and one per output:

    call = custom_function[F](x, y)        # generated code: c_1(x, y), F.forward
    a    = custom_function_output[0](call)  # call.outputs[0]

``call`` is an object value (the call's ctx and outputs) that the forward passes to
the backward as a saved value. The adjoint meets the outputs first: each output's rule
hands its cotangent to the call as an ``OutputGrads`` (a value of the adjoint pass
only), and the call's rules emit one backward step for all of them:

    grads = custom_function_backward(call, g_a)   # c_1.backward(call, g_a), F.backward
    g_x   = custom_function_grad[0](grads)        # grads[0]

The rules run at trace time on the traced values like any VJP rule, so shapes, dtypes
and which inputs get a gradient are known when code is generated. In generated code
``F.forward`` and ``F.backward`` run on Tensors wrapping the arrays, with grad disabled,
and the backward's results get the eager engine's checks. Interpreted on Tensors (a
``create_graph`` backward through a compiled region) each step is the eager Function.
"""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np

from ..ir import Var, emit_zeros
from ..ops import OpDef
from . import forward_ad, function, record, tracer_hooks
from .function import backward_fn, call_function
from .grad_mode import STATE

_OBJECT = np.dtype(object)


class FunctionOp(OpDef):
    """An op of these steps: on IR values it records an equation; on Tensors (the IR
    interpreter under create_graph) it is the eager Function; on anything else it
    runs its forward (generated code does not call it: its template spells the call)."""

    __slots__ = ("eager", "tangent")  # tangent: the tangent pass's rule (forward mode)

    def __call__(self, *args: Any, **params: Any) -> Any:
        if any(isinstance(a, Var) for a in args):
            return OpDef.__call__(self, *args, **params)
        if self.eager is not None and any(isinstance(a, record.Tensor) for a in args):
            return self.eager(*args, **params)
        return self.forward(*args, **params)


def _op(name: str, forward: Any, vjp: tuple | None, template: Any, eager: Any = None,
        grad_fn: str | None = None) -> FunctionOp:
    op = FunctionOp(name, forward, grad_fn, vjp=vjp, aliases=True, pure=False, fresh=False,
                    elementwise=False, template=template)
    op.eager = eager
    op.tangent = None
    return op


def box(x: Any) -> np.ndarray:
    """``x`` as a 0-d object array: how an IR value holds a Python object."""
    a = np.empty((), dtype=_OBJECT)
    a[()] = x
    return a


def unbox(x: Any) -> Any:
    return x[()] if type(x) is np.ndarray and x.dtype == _OBJECT else x


class CallRecord:
    """What a traced call of a Function leaves: its ctx and its outputs."""

    __slots__ = ("ctx", "outputs")

    def __init__(self, ctx: Any, outputs: tuple) -> None:
        self.ctx = ctx
        self.outputs = outputs


class FunctionRunner:
    """Generated code's handle on one traced call site: ``runner(*args)`` runs forward,
    ``runner.backward(call, *grads)`` the backward of that call."""

    __slots__ = ("cls", "kwargs", "needs", "tensor_args")

    def __init__(self, cls: type, kwargs: dict, needs: tuple, tensor_args: tuple) -> None:
        self.cls = cls
        self.kwargs = kwargs
        self.needs = needs  # requires_grad of the arguments when it was traced
        self.tensor_args = tensor_args  # the arguments that were Tensors then

    def tensors(self, args: tuple) -> tuple:
        """The arguments as the Function saw them when traced: arrays at the Tensor
        positions become Tensors (generated code passes arrays)."""
        Tensor = record.Tensor
        return tuple(Tensor._make(a) if i in self.tensor_args and not isinstance(a, Tensor)
                     else a for i, a in enumerate(args))

    def __repr__(self) -> str:
        return self.cls.__qualname__

    def codegen_name(self) -> str:
        """Its name in generated code: ``Exp_apply(x)``, ``Exp_apply.backward(...)``."""
        return self.cls.__name__ + "_apply"

    def __call__(self, *args: Any) -> CallRecord:
        Tensor = record.Tensor
        prev = STATE.grad_enabled
        STATE.grad_enabled = False  # no node: generated code does the bookkeeping
        try:
            ctx, result = call_function(self.cls, self.tensors(args), self.kwargs, self.needs)
        finally:
            STATE.grad_enabled = prev
        outs = result if isinstance(result, tuple) else (result,)
        return CallRecord(ctx, tuple(o._data if isinstance(o, Tensor) else o for o in outs))

    def backward(self, call: CallRecord, *grads: Any) -> tuple:
        """The gradient of every argument of the call (None where there is none)."""
        ctx = call.ctx
        gs = [function._grad_in(g, meta, ctx.materialize_grads)
              for g, meta in zip(grads, ctx._outputs)]
        prev = STATE.grad_enabled
        STATE.grad_enabled = False
        try:
            result = backward_fn(self.cls)(ctx, *gs)
            per_tensor = ctx.check_grads(result, False,
                                         [self.needs[i] for i in ctx._tensor_args])
        finally:
            STATE.grad_enabled = prev
        return _per_argument(ctx, per_tensor)


    def jvp(self, call: CallRecord, *tangents: Any) -> tuple:
        """The tangent of every output of the call (None for the integer ones), from the
        Function's ``jvp`` given one tangent per argument (zeros where there is none)."""
        return _run_jvp(self.cls, call, tangents, eager=False)


def _run_jvp(cls: type, call: CallRecord, tangents: tuple, eager: bool) -> tuple:
    """``cls.jvp(ctx, ...)`` on a traced call: arrays in and out in generated code,
    Tensors under ``eager`` (the IR interpreted on Tensors keeps their graph)."""
    ctx, Tensor = call.ctx, record.Tensor
    ts = []
    for i in range(ctx._n_args):
        t = tangents[i] if i < len(tangents) else None
        if i not in ctx._tensor_args:
            ts.append(None)
        elif t is None:
            shape, dtype = ctx._input_meta[ctx._tensor_args.index(i)]
            ts.append(Tensor._make(np.zeros(shape, dtype)))
        else:
            ts.append(t if isinstance(t, Tensor) else Tensor._make(np.asarray(t)))
    prev = STATE.grad_enabled
    STATE.grad_enabled = eager and prev
    try:
        with forward_ad.paused():
            got = cls.jvp(ctx, *ts)
    finally:
        STATE.grad_enabled = prev
    got = got if isinstance(got, tuple) else (got,)
    out = []
    for meta, t in zip(ctx._outputs, got):
        if meta is None or meta[1].kind not in "fc" or t is None:
            out.append(None if meta is None or meta[1].kind not in "fc" else
                       np.zeros(meta[0], meta[1]))
            continue
        t = t if isinstance(t, Tensor) else Tensor._make(np.asarray(t))
        out.append(t if eager else np.asarray(t._data, meta[1]).reshape(meta[0]))
    return tuple(out)


def _per_argument(ctx: Any, per_tensor: list) -> tuple:
    out: list = [None] * ctx._n_args
    for i, g in zip(ctx._tensor_args, per_tensor):
        out[i] = g
    return tuple(out)


class OutputGrads:
    """The cotangents of a call's outputs, gathered by the adjoint pass (the output
    rules give one each, ``+`` merges them) until the call's rules emit the backward
    step, once, for all its inputs. Shaped like the call value so ``fit_to`` passes it."""

    shape = ()
    dtype = _OBJECT

    def __init__(self, grads: dict) -> None:
        self.grads = grads
        self.value: Var | None = None

    def __add__(self, other: OutputGrads) -> OutputGrads:
        merged = dict(self.grads)
        for i, g in other.grads.items():
            merged[i] = g if i not in merged else merged[i] + g
        return OutputGrads(merged)

    def backward(self, call: Var, runner: FunctionRunner) -> Var:
        if self.value is None:
            n = len(unbox(call._data).ctx._outputs)
            self.value = BACKWARD(call, *[self.grads.get(i) for i in range(n)], runner=runner)
        return self.value


# --------------------------------------------------------------------- the four ops
def _call_forward(*args: Any, runner: FunctionRunner) -> np.ndarray:
    return box(runner(*[unbox(a) for a in args]))


def _call_eager(*args: Any, runner: FunctionRunner) -> CallRecord:
    ctx, result = call_function(runner.cls, runner.tensors(args), runner.kwargs)
    return CallRecord(ctx, result if isinstance(result, tuple) else (result,))


def _describe(cls: type, which: int) -> str:
    """The comment generated code puts after a call of ``cls``'s forward or backward:
    the user's rules (``_pb_rules``, set by pb.custom_vjp and custom_jvp) or the method."""
    rules = getattr(cls, "_pb_rules", None)
    if rules is not None:
        return rules[which]
    return f"{cls.__qualname__}.{('forward', 'backward')[which]}" + (
        " (a custom autograd.Function)" if which == 0 else "")


def _call_template(e: Any, args: list, literal: Any) -> str:
    runner = e.params["runner"]
    return f"{literal(runner)}({', '.join(args)})  # {_describe(runner.cls, 0)}"


def _call_rule(j: int) -> Any:
    def rule(g: OutputGrads, out: Var, *inputs: Any, runner: FunctionRunner) -> Any:
        grads = g.backward(out, runner)
        if unbox(grads._data)[j] is None:
            return None  # backward gave this input no gradient when traced
        return GRAD(grads, index=j)
    return rule


_CALL_OPS: dict = {}


def call_op(cls: type, n_args: int, tensor_args: tuple) -> FunctionOp:
    """The op of calls of ``cls`` with ``n_args`` arguments, tensors at ``tensor_args``."""
    key = (cls, n_args, tensor_args)
    op = _CALL_OPS.get(key)
    if op is None:
        rules = tuple(_call_rule(j) if j in tensor_args else None for j in range(n_args))
        op = _CALL_OPS[key] = _op("custom_function", _call_forward,
                                  rules if tensor_args else None, _call_template,
                                  _call_eager, cls._backward_cls.__name__)
        op.tangent = _call_tangent
    return op


def _backward_forward(call: Any, *grads: Any, runner: FunctionRunner) -> np.ndarray:
    return box(runner.backward(unbox(call), *grads))


def _backward_eager(call: CallRecord, *grads: Any, runner: FunctionRunner) -> tuple:
    """Under create_graph: the eager node's own backward, differentiable."""
    ctx = call.ctx
    per_tensor = ctx.apply([g if g is None or isinstance(g, record.Tensor)
                            else record.Tensor._make(np.asarray(g)) for g in grads],
                           None, True)
    return _per_argument(ctx, per_tensor)


def _backward_template(e: Any, args: list, literal: Any) -> str:
    runner = e.params["runner"]
    return f"{literal(runner)}.backward({', '.join(args)})  # {_describe(runner.cls, 1)}"


BACKWARD = _op("custom_function_backward", _backward_forward, None, _backward_template,
               _backward_eager)
GRAD = _op("custom_function_grad", lambda grads, index: unbox(grads)[index], None,
           lambda e, args, _: f"{args[0]}[{e.params['index']}]")


def _output_rule(g: Any, out: Var, call: Var, index: int) -> OutputGrads:
    return OutputGrads({index: g})


def _output_template(e: Any, args: list, _: Any) -> str:
    return f"{args[0]}.outputs[{e.params['index']}]"


OUTPUT = _op("custom_function_output", lambda call, index: unbox(call).outputs[index],
             (_output_rule,), _output_template)
#: an output marked non-differentiable (or of an integer dtype): no rule
OUTPUT_NO_GRAD = _op("custom_function_output", lambda call, index: unbox(call).outputs[index],
                     None, _output_template)


# ------------------------------------------------------------------- forward mode
def _jvp_forward(call: Any, *tangents: Any, runner: FunctionRunner) -> np.ndarray:
    return box(runner.jvp(unbox(call), *tangents))


def _jvp_eager(call: CallRecord, *tangents: Any, runner: FunctionRunner) -> tuple:
    return _run_jvp(runner.cls, call, tangents, eager=True)


def _jvp_template(e: Any, args: list, literal: Any) -> str:
    runner = e.params["runner"]
    rules = getattr(runner.cls, "_pb_rules", None)
    what = rules[2] if rules is not None and len(rules) > 2 else \
        f"{runner.cls.__qualname__}.jvp"
    return f"{literal(runner)}.jvp({', '.join(args)})  # {what}"


JVP = _op("custom_function_jvp", _jvp_forward, None, _jvp_template, _jvp_eager)
TANGENT = _op("custom_function_tangent", lambda tangents, index: unbox(tangents)[index], None,
              lambda e, args, _: f"{args[0]}[{e.params['index']}]")


def _call_tangent(e: Any, tangents: list) -> Any:
    """The tangent pass's rule for a call: one step running the Function's ``jvp``
    (an object value, like the call's), which each output's tangent indexes."""
    ts = [t if t is not None or not isinstance(v, Var) or v.dtype.kind not in "fc"
          else emit_zeros(tuple(v.shape), v.dtype) for t, v in zip(tangents, e.inputs)]
    return JVP(e.out, *ts, runner=e.params["runner"])


def _output_tangent(e: Any, tangents: list) -> Any:
    (jv,) = tangents
    if jv is None or unbox(jv._data)[e.params["index"]] is None:
        return None
    return TANGENT(jv, index=e.params["index"])


OUTPUT.tangent = _output_tangent


# ------------------------------------------------------------------------ tracing
def traced_apply(cls: type, args: tuple, kwargs: dict) -> Any:
    """``cls.apply`` inside a trace: run it eagerly, unseen, and report the steps."""
    hooks = list(record.trace_hooks())
    dual = forward_ad.has_tangents(args)
    with tracer_hooks.untraced(), forward_ad.paused() if dual else contextlib.nullcontext():
        ctx, result = call_function(cls, args, kwargs)
    if ctx._dirty:
        raise RuntimeError(f"{cls.__qualname__}: a custom Function that modifies an input in "
                           "place (ctx.mark_dirty) cannot be compiled; call it outside the "
                           "compiled function")
    Tensor = record.Tensor
    outs = result if isinstance(result, tuple) else (result,)
    runner = FunctionRunner(cls, kwargs, ctx.needs_input_grad, ctx._tensor_args)
    call = Tensor._make(box(CallRecord(ctx, outs)))
    op = call_op(cls, len(args), ctx._tensor_args)
    for hook in hooks:
        hook(op, args, {"runner": runner}, call)
    for nr, o in enumerate(outs):
        if isinstance(o, Tensor):
            out_op = OUTPUT if o._grad_fn is ctx else OUTPUT_NO_GRAD
            for hook in hooks:
                hook(out_op, (call,), {"index": nr}, o)
    if dual:  # the outputs' tangents: the jvp's ops are traced, as any the program runs
        forward_ad.function_jvp(cls, ctx, args, result)
    return result


function.traced_apply = traced_apply
