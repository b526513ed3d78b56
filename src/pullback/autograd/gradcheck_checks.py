"""gradcheck's finite differences and its checks beyond the Jacobians: the backward is
linear in grad_output, handles undefined output gradients, batches (``is_grads_batched``)
and, with ``check_forward_ad``, the forward-mode Jacobian."""

from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy as np

from . import engine, functional, record
from .backward import _capture, grad
from .edges import grad_edge
from .gradcheck_messages import (
    BACKWARD_NOT_MUL,
    UNDEFINED_NOT_HANDLED,
    UNDEFINED_NOT_ZERO,
    UNDEFINED_WARNING,
    GradcheckError,
    batched_mismatch,
    batched_raised,
    notallclose,
)


def as_tuple(x: Any) -> tuple:
    return x if isinstance(x, tuple) else tuple(x) if isinstance(x, list) else (x,)


def is_tensor(x: Any) -> bool:
    return isinstance(x, record.Tensor)


def diff_inputs(inputs: tuple) -> list:
    return [t for t in inputs if is_tensor(t) and t.requires_grad]


def wrap(a: Any) -> Any:
    return record.Tensor._make(np.asarray(a))


def allclose(a: Any, b: Any, rtol: float, atol: float) -> bool:
    t = np.result_type(a, b)
    return bool(np.allclose(np.asarray(a, t), np.asarray(b, t), rtol=rtol, atol=atol))


# ------------------------------------------------------------- finite differences
def _outputs_of(func: Callable, inputs: tuple) -> list:
    """The tensor outputs' values, flattened copies (in the caller's grad mode, as torch:
    gradgradcheck's function takes a gradient inside)."""
    return [o._data.reshape(-1).copy() for o in as_tuple(func(*inputs)) if is_tensor(o)]


def central(func: Callable, inputs: tuple, x: np.ndarray, index: Any, delta: Any,
            eps: float) -> list:
    """(f(x + delta) - f(x - delta)) / (2 eps) per output, perturbing ``x`` in place at
    ``index`` (all of it when ``index`` is None), as torch perturbs ``input.data``."""
    target = slice(None) if index is None else index
    orig = x.copy() if index is None else x[index]
    x[target] = orig - delta
    lo = _outputs_of(func, inputs)
    x[target] = orig + delta
    hi = _outputs_of(func, inputs)
    x[target] = orig
    return [(b - a) / (2 * eps) for a, b in zip(lo, hi)]


def numerical_jacobians(func: Callable, inputs: tuple, outputs: list, eps: float) -> list:
    """Per input that requires grad, per tensor output: (input numel, output numel)."""
    result = []
    for inp in diff_inputs(inputs):
        x = inp._data
        cplx = x.dtype.kind == "c"
        jacs = [np.zeros((x.size, o._data.size), x.dtype if cplx else o._data.dtype)
                for o in outputs]
        for k, index in enumerate(np.ndindex(x.shape)):
            cols = central(func, inputs, x, index, eps, eps)
            if cplx:  # the conjugate Wirtinger derivative: d/dx + i d/dy
                dy = central(func, inputs, x, index, eps * 1j, eps)
                cols = [c + 1j * d for c, d in zip(cols, dy)]
            for jac, col in zip(jacs, cols):
                jac[k, :] = col
        result.append(jacs)
    return result


# ---------------------------------------------------- the backward's other checks
def check_backward_mul_by_grad_output(outputs: tuple, inputs: tuple) -> bool:
    """Zero grad_outputs must give zero gradients, of the inputs' dtypes and sizes."""
    diff = diff_inputs(inputs)
    if not diff:
        raise GradcheckError("no Tensors requiring grad found in input")
    gs = grad(outputs, diff, [wrap(np.zeros_like(o._data)) for o in outputs], allow_unused=True)
    for gi, di in zip(gs, diff):
        if gi is None:
            continue
        if np.any(gi._data != 0):
            raise GradcheckError(BACKWARD_NOT_MUL)
        if gi._data.dtype != di._data.dtype:
            raise GradcheckError("grad is incorrect type")
        if gi.shape != di.shape:
            raise GradcheckError("grad is incorrect size")
    return True


def _grads_from(outputs: list, seeds: list, diff: list) -> list:
    """The inputs' gradients with some output gradients undefined (a None seed): the
    nodes that receive one still run (torch's UndefinedGrad), with None."""
    task = engine.GraphTask(create_graph=False, retain_graph=True, accumulate=False)
    task.targets = _capture(task, diff)
    captured = engine.execute(task, [grad_edge(o) for o in outputs], seeds)
    return [captured[task.captures[grad_edge(t)]] for t in diff]


def check_undefined_backward_mode(func: Callable, outputs: tuple, inputs: tuple) -> bool:
    """Every backward must cope with undefined output gradients: all of them at once,
    then one at a time, and give zero (or no) gradients for what is undefined."""
    diff = diff_inputs(inputs)
    if not diff:
        raise GradcheckError("no Tensors requiring grad found in input")
    checks = [(tuple(o for o in as_tuple(func(*inputs)) if o.requires_grad), None)]
    if len(checks[0][0]) > 1:
        for k in range(len(outputs)):
            checks.append((tuple(o for o in as_tuple(func(*inputs)) if o.requires_grad), k))
    for outs, undefined in checks:
        seeds = [None if undefined is None or k == undefined else np.zeros_like(o._data)
                 for k, o in enumerate(outs)]
        try:
            gs = _grads_from(list(outs), seeds, diff)
        except RuntimeError as e:
            warnings.warn(UNDEFINED_WARNING, UserWarning, stacklevel=4)
            raise GradcheckError(UNDEFINED_NOT_HANDLED) from e
        for g in gs:
            if g is not None and np.any(np.asarray(getattr(g, "_data", g)) != 0):
                warnings.warn(UNDEFINED_WARNING, UserWarning, stacklevel=4)
                raise GradcheckError(UNDEFINED_NOT_ZERO)
    return True


def check_batched_backward(inputs: tuple, output: Any, output_idx: int) -> bool:
    """``is_grads_batched`` (torch vmaps the backward) against one backward per row."""
    diff = diff_inputs(inputs)
    rng = np.random.default_rng(0)
    grad_outputs = [rng.standard_normal(output.shape).astype(output._data.dtype)
                    for _ in range(2)]

    def vjp(g: Any, batched: bool = False) -> list:
        gs = grad(output, diff, g, retain_graph=True, allow_unused=True,
                  is_grads_batched=batched)
        lead = (2,) if batched else ()
        return [np.zeros(lead + inp.shape, inp._data.dtype) if x is None else x._data
                for x, inp in zip(gs, diff)]

    expected = [np.stack(rows) for rows in zip(*(vjp(wrap(g)) for g in grad_outputs))]
    try:
        result = vjp(wrap(np.stack(grad_outputs)), batched=True)
    except RuntimeError as ex:
        raise GradcheckError(batched_raised(ex)) from ex
    for input_idx, (res, exp) in enumerate(zip(result, expected)):
        if not allclose(res, exp, 1e-5, 1e-8):
            raise GradcheckError(batched_mismatch(output_idx, input_idx, wrap(res), wrap(exp)))
    return True


# -------------------------------------------------------------------- forward mode
def _restricted(func: Callable, inputs: tuple, positions: list) -> Callable:
    """``func`` as a function of the inputs at ``positions`` only, returning the tensor
    outputs as a tuple."""
    def f(*diff: Any) -> tuple:
        args = list(inputs)
        for k, d in zip(positions, diff):
            args[k] = d
        return tuple(o for o in as_tuple(func(*args)) if is_tensor(o))
    return f


def _real_inputs_only(inputs: tuple) -> list:
    positions = [k for k, t in enumerate(inputs) if is_tensor(t) and t.requires_grad]
    if any(inputs[k].is_complex() for k in positions):
        raise NotImplementedError("check_forward_ad with complex inputs: pullback's forward "
                                  "mode (the double-backward trick) is checked on real inputs "
                                  "only")
    return positions


def forward_check(func: Callable, func_out: Any, inputs: tuple, eps: float, rtol: float,
                  atol: float) -> bool:
    """The forward-mode Jacobian against finite differences."""
    positions = _real_inputs_only(inputs)
    tensors = [o for o in as_tuple(func_out) if is_tensor(o)]
    numerical = numerical_jacobians(func, inputs, tensors, eps)  # [input][output]
    jac = functional.jacobian(_restricted(func, inputs, positions),
                              tuple(inputs[k].detach() for k in positions),
                              strategy="forward-mode", vectorize=True)
    diff_out = [k for k, o in enumerate(tensors) if o.requires_grad]
    for i, k in enumerate(diff_out):
        for j, n in enumerate(inputs[p] for p in positions):
            a = jac[k][j].detach().numpy().reshape(tensors[k].numel(), n.numel()).T
            if not allclose(a, numerical[j][k], rtol, atol):
                raise GradcheckError(notallclose(wrap(a), wrap(numerical[j][k]), i, j, None,
                                                 forward=True))
    return True


def check_batched_forward(func: Callable, inputs: tuple) -> bool:
    """Forward-mode products for a batch of tangents at once (through the forward-mode
    Jacobian) against one ``functional.jvp`` per tangent."""
    rng = np.random.default_rng(0)
    for input_idx in _real_inputs_only(inputs):
        x = inputs[input_idx]
        f = _restricted(func, inputs, [input_idx])
        tangents = [rng.standard_normal(x.shape).astype(x._data.dtype) for _ in range(2)]
        expected = [np.stack(rows) for rows in zip(*(
            [o.numpy() for o in functional.jvp(f, x.detach(), wrap(t))[1]]
            for t in tangents))]
        try:
            jac = functional.jacobian(f, (x.detach(),), strategy="forward-mode",
                                      vectorize=True)
        except RuntimeError as ex:
            raise GradcheckError(batched_raised(ex, forward=True)) from ex
        for exp, row in zip(expected, jac):
            j = row[0].numpy()
            res = np.stack([np.tensordot(j, t, axes=t.ndim) for t in tangents])
            if not allclose(res, exp, 1e-5, 1e-8):
                raise GradcheckError(batched_mismatch(input_idx, input_idx, wrap(res),
                                                      wrap(exp), forward=True))
    return True
