"""``torch.autograd.functional``: vjp, jvp, jacobian, hessian, vhp and hvp of a function.

The same shapes, tuple nesting, ``create_graph`` / ``strict`` behaviour and messages as
torch 2.13. ``jvp`` and ``jacobian(strategy="forward-mode")`` run the function on dual
tensors (``forward_ad.py``: true forward mode); ``jvp`` of a function with a custom
Function that has no ``jvp`` takes torch's own way, the double-backward trick, which
``hvp`` uses too, as torch's does: for ``H v``, ``g(u) = H^T u`` is linear in a dummy
``u``, so the gradient of ``g(u) . v`` with respect to ``u`` is ``H v``; it needs the function's
backward to be differentiable (a ``once_differentiable`` Function is not).

>>> import pullback as pb
>>> from pullback.autograd.functional import jacobian, hessian
>>> jacobian(lambda x: x ** 2, pb.tensor([1., 2.]))
tensor([[2., 0.],
        [0., 4.]])
>>> hessian(lambda x: (x ** 3).sum(), pb.tensor([1., 2.]))
tensor([[ 6.,  0.],
        [ 0., 12.]])
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from . import forward_ad, messages, record
from .backward import grad, stack_rows
from .function import NO_JVP
from .grad_mode import STATE, enable_grad, set_grad_enabled

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]

V_NONE_OUTPUT = ("The vector v can only be None if the user-provided function returns a single "
                 "Tensor with a single element.")
V_NONE_INPUT = ("The vector v can only be None if the input to the user-provided function is a "
                "single Tensor with a single element.")


def _tensor(data: Any, requires_grad: bool = False) -> Any:
    t = record.Tensor._make(data)
    if requires_grad:
        t.requires_grad_()
    return t


def _zeros_like(t: Any, requires_grad: bool = False) -> Any:
    return _tensor(np.zeros_like(t._data), requires_grad)


# ---------------------------------------------------------------- argument handling
def _as_tuple(inp: Any, arg_name: str | None = None, fn_name: str | None = None) -> Any:
    """(whether ``inp`` was a tuple, ``inp`` as a tuple of Tensors); torch's messages."""
    if arg_name is None and fn_name is None:
        return inp if isinstance(inp, tuple) else tuple(inp) if isinstance(inp, list) \
            else (inp,)
    is_tuple = isinstance(inp, tuple)
    if not is_tuple:
        inp = (inp,)
    for i, el in enumerate(inp):
        if not isinstance(el, record.Tensor):
            where = (f"value at index {i} has type {type(el)}" if is_tuple else
                     f"given {arg_name} has type {type(el)}")
            raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a "
                            f"tuple of Tensors but the {where}.")
    return is_tuple, inp


def _tuple_postprocess(res: Any, to_unpack: Any) -> Any:
    """Undo ``_as_tuple`` (a pair of flags: for nested results, outer then inner)."""
    if isinstance(to_unpack, tuple):
        if not to_unpack[1]:
            res = tuple(el[0] for el in res)
        if not to_unpack[0]:
            res = res[0]
    elif not to_unpack:
        res = res[0]
    return res


def _grad_preprocess(inputs: tuple, create_graph: bool, need_graph: bool) -> tuple:
    """New Tensor objects for the inputs: linked to them only under create_graph."""
    return tuple(inp.view_as(inp) if create_graph and inp.requires_grad
                 else inp.detach().requires_grad_(need_graph) for inp in inputs)


def _grad_postprocess(inputs: Any, create_graph: bool) -> Any:
    if isinstance(inputs[0], record.Tensor):
        return inputs if create_graph else tuple(inp.detach() for inp in inputs)
    return tuple(_grad_postprocess(inp, create_graph) for inp in inputs)


def _validate_v(v: tuple, other: tuple, is_other_tuple: bool) -> None:
    if len(other) != len(v):
        if is_other_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(other)} but got "
                               f"{len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for idx, (el_v, el_other) in enumerate(zip(v, other)):
        if tuple(el_v.shape) != tuple(el_other.shape):
            prepend = f"Entry {idx} in " if is_other_tuple else ""
            raise RuntimeError(f"{prepend}v has invalid size: should be "
                               f"{messages.torch_size(el_other.shape)} but got "
                               f"{messages.torch_size(el_v.shape)}.")


_STRICT = {
    "hessian": ("The hessian of the user-provided function with respect to input {i} is "
                "independent of the input. This is not allowed in strict mode. You should "
                "ensure that your function is thrice differentiable and that the hessian "
                "depends on the inputs."),
    "jacobian": ("While computing the hessian, found that the jacobian of the user-provided "
                 "function with respect to input {i} is independent of the input. This is not "
                 "allowed in strict mode. You should ensure that your function is twice "
                 "differentiable and that the jacobian depends on the inputs (this would be "
                 "violated by a linear function for example)."),
    "grad_inputs": ("The gradient with respect to input {i} is independent of the inputs of the "
                    "user-provided function. This is not allowed in strict mode."),
    "outputs": ("Output {i} of the user-provided function does not require gradients. The "
                "outputs must be computed in a differentiable manner from the input when "
                "running in strict mode."),
}


def _check_requires_grad(inputs: tuple, input_type: str, strict: bool) -> None:
    if not strict:
        return
    for i, inp in enumerate(inputs):
        if inp is None:  # (only grad_inputs can hold None)
            raise RuntimeError(f"The output of the user-provided function is independent of "
                               f"input {i}. This is not allowed in strict mode.")
        if not inp.requires_grad:
            raise RuntimeError(_STRICT[input_type].format(i=i))


def _autograd_grad(outputs: tuple, inputs: tuple, grad_outputs: tuple | None = None,
                   create_graph: bool = False, retain_graph: bool | None = None,
                   is_grads_batched: bool = False) -> tuple:
    """autograd.grad that skips outputs that are None or need no grad (all None then)."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o is not None and o.requires_grad]
    if not pairs:
        return (None,) * len(inputs)
    return grad([o for o, _ in pairs], inputs, [g for _, g in pairs], allow_unused=True,
                create_graph=create_graph, retain_graph=retain_graph,
                is_grads_batched=is_grads_batched)


_FILL = {
    "back": ("The output of the user-provided function is independent of input {i}. This is "
             "not allowed in strict mode."),
    "back_trick": ("The gradient with respect to the input is independent of entry {i} in the "
                   "grad_outputs when using the double backward trick to compute forward mode "
                   "gradients. This is not allowed in strict mode."),
    "double_back": ("The jacobian of the user-provided function is independent of input {i}. "
                    "This is not allowed in strict mode."),
    "double_back_trick": ("The hessian of the user-provided function is independent of entry "
                          "{i} in the grad_jacobian. This is not allowed in strict mode as it "
                          "prevents from using the double backward trick to replace forward "
                          "mode AD."),
}


def _fill_in_zeros(grads: tuple, refs: tuple, strict: bool, create_graph: bool,
                   stage: str) -> tuple:
    """None gradients as zeros shaped like ``refs``, or torch's strict-mode errors."""
    res = []
    for i, g in enumerate(grads):
        if g is None:
            if strict:
                raise RuntimeError(_FILL[stage].format(i=i))
            g = _zeros_like(refs[i])
        elif strict and create_graph and not g.requires_grad:
            what = "jacobian" if "double" not in stage else "hessian"
            raise RuntimeError(f"The {what} of the user-provided function is independent of "
                               f"input {i}. This is not allowed in strict mode when "
                               "create_graph=True.")
        res.append(g)
    return tuple(res)


def _v_or_none(v: Any, ref: tuple, is_ref_tuple: bool, fn_name: str, create_graph: bool,
               none_message: str) -> Any:
    if v is not None:
        _, v = _as_tuple(v, "v", fn_name)
        v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
        _validate_v(v, ref, is_ref_tuple)
    elif len(ref) != 1 or ref[0].numel() != 1:
        raise RuntimeError(none_message)
    return v


def _outputs(func: Callable, inputs: tuple, fn_name: str, strict: bool) -> tuple:
    is_outputs_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function",
                                          fn_name)
    _check_requires_grad(outputs, "outputs", strict=strict)
    return is_outputs_tuple, outputs


# ------------------------------------------------------------------- the products
def _product(outputs: tuple, is_outputs_tuple: bool, grad_args: tuple, refs: tuple,
             is_result_tuple: bool, create_graph: bool, strict: bool, stage: str) -> tuple:
    """The last step every product shares: ``autograd.grad(*grad_args)`` (in grad mode
    under create_graph), None as zeros shaped like ``refs`` (or strict's errors), and
    the results detached unless create_graph, in the callers' tuple structure."""
    with set_grad_enabled(True if create_graph else STATE.grad_enabled):
        grad_res = _autograd_grad(*grad_args, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, refs, strict, create_graph, stage)
    return (_tuple_postprocess(_grad_postprocess(outputs, create_graph), is_outputs_tuple),
            _tuple_postprocess(_grad_postprocess(result, create_graph), is_result_tuple))


def vjp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple:
    """``(func(inputs), v^T J)``: the vector-Jacobian product, shaped like ``inputs``."""
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        is_outputs_tuple, outputs = _outputs(func, inputs, "vjp", strict)
        v = _v_or_none(v, outputs, is_outputs_tuple, "vjp", create_graph, V_NONE_OUTPUT)
    return _product(outputs, is_outputs_tuple, (outputs, inputs, v), inputs, is_inputs_tuple,
                    create_graph, strict, "back")


def jvp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple:
    """``(func(inputs), J v)``: the Jacobian-vector product, shaped like the outputs,
    by forward mode (``func`` runs once, on dual tensors)."""
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        v = _v_or_none(v, inputs, is_inputs_tuple, "jvp", create_graph, V_NONE_INPUT)
        if v is None:  # (a single one-element input)
            v = tuple(_tensor(np.ones_like(x._data)) for x in inputs)
        try:
            is_outputs_tuple, outputs, tangents = _dual_run(func, inputs, v, "jvp")
        except NotImplementedError as e:  # a custom Function without jvp: torch's own
            if str(e) != NO_JVP:          # way, the double-backward trick, needs none
                raise
            is_outputs_tuple, outputs, tangents = _double_back_jvp(func, inputs, v)
        _check_requires_grad(outputs, "outputs", strict=strict)
        if strict:  # torch's words for an input no output depends on
            dummies = tuple(_zeros_like(o, requires_grad=True) for o in outputs)
            _check_requires_grad(_autograd_grad(outputs, inputs, dummies, create_graph=True),
                                 "grad_inputs", strict=True)
        result = _fill_in_zeros(tangents, outputs, strict, create_graph, "back_trick")
    return (_tuple_postprocess(_grad_postprocess(outputs, create_graph), is_outputs_tuple),
            _tuple_postprocess(_grad_postprocess(result, create_graph), is_outputs_tuple))


def _double_back_jvp(func: Callable, inputs: tuple, v: tuple) -> tuple:
    """``J v`` as the gradient of ``(J^T u) . v`` in a dummy ``u`` (``J^T u`` is linear
    in ``u``): what torch's ``functional.jvp`` computes, for a function forward mode
    cannot run (a custom Function without ``jvp``)."""
    is_outputs_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided "
                                          "function", "jvp")
    dummies = tuple(_zeros_like(o, requires_grad=True) for o in outputs)
    grad_inputs = _autograd_grad(outputs, inputs, dummies, create_graph=True)
    pairs = [(g, t) for g, t in zip(grad_inputs, v) if g is not None]
    tangents = _autograd_grad(tuple(g for g, _ in pairs), dummies,
                              tuple(t for _, t in pairs), create_graph=True) if pairs \
        else (None,) * len(outputs)
    return is_outputs_tuple, outputs, tangents


def _dual_run(func: Callable, inputs: tuple, tangents: tuple, fn_name: str | None) -> tuple:
    """``func`` on dual tensors: (is_outputs_tuple, outputs, their tangents or None);
    the outputs are ``func``'s own (their tangents go with the level)."""
    with forward_ad.dual_level():
        duals = tuple(forward_ad.make_dual(x, t) for x, t in zip(inputs, tangents))
        is_outputs_tuple, outputs = _as_tuple(func(*duals),
                                              "outputs of the user-provided function", fn_name)
        tangents = tuple(forward_ad.unpack_dual(o).tangent for o in outputs)
    return is_outputs_tuple, outputs, tangents


def _second_order(func: Callable, inputs: Any, v: Any, create_graph: bool, strict: bool,
                  fn_name: str) -> tuple:
    """What vhp and hvp share: (is_inputs_tuple, inputs, outputs, jac, v)."""
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", fn_name)
    inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
    v = _v_or_none(v, inputs, is_inputs_tuple, fn_name, create_graph, V_NONE_INPUT)
    is_outputs_tuple, outputs = _outputs(func, inputs, fn_name, strict)
    if is_outputs_tuple or not isinstance(outputs[0], record.Tensor):
        raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")
    if outputs[0].numel() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {fn_name} should "
                           "contain a single element")
    jac = _autograd_grad(outputs, inputs, create_graph=True)
    _check_requires_grad(jac, "jacobian", strict=strict)
    return is_inputs_tuple, inputs, outputs, jac, v


def vhp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple:
    """``(func(inputs), v^T H)`` for a scalar function."""
    with enable_grad():
        is_inputs_tuple, inputs, outputs, jac, v = _second_order(func, inputs, v, create_graph,
                                                                 strict, "vhp")
    return _product(outputs, False, (jac, inputs, v), inputs, is_inputs_tuple, create_graph,
                    strict, "double_back")


def hvp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple:
    """``(func(inputs), H v)`` for a scalar function (by the double-backward trick)."""
    with enable_grad():
        is_inputs_tuple, inputs, outputs, jac, v = _second_order(func, inputs, v, create_graph,
                                                                 strict, "hvp")
        grad_jac = tuple(_zeros_like(inp, requires_grad=True) for inp in inputs)
        double_back = _autograd_grad(jac, inputs, grad_jac, create_graph=True)
        _check_requires_grad(jac, "hessian", strict=strict)
    return _product(outputs, False, (double_back, grad_jac, v), inputs, is_inputs_tuple,
                    create_graph, strict, "double_back_trick")


# -------------------------------------------------------------- jacobian and hessian
def _standard_basis(tensors: tuple, numels: tuple) -> tuple:
    """The identity of size sum(numels), split by columns into one chunk per tensor
    (each of its tensor's dtype): chunk i is (total, numels[i])."""
    total = sum(numels)
    chunks = []
    offset = 0
    for t, n in zip(tensors, numels):
        chunks.append(_tensor(np.eye(total, n, k=-offset, dtype=t._data.dtype)))
        offset += n
    return tuple(chunks)


def _split_rows(jac: Any, numels: tuple) -> list:
    """``jac`` cut along dim 0 into pieces of ``numels`` rows."""
    out, start = [], 0
    for n in numels:
        out.append(jac[start:start + n])
        start += n
    return out


def _jacfwd(func: Callable, inputs: Any, strict: bool, vectorize: bool,
            differentiable: bool = False) -> Any:
    """``jacobian(strategy="forward-mode")``: J times every basis vector of the inputs,
    by forward mode, one dual run per basis vector. As torch's forward mode, the
    result has a graph when an input requires grad (``differentiable``: the inputs
    count as requiring it, as hessian's inner jacobian makes them)."""
    if strict:
        raise RuntimeError('torch.autograd.functional.jacobian: `strict=True` and '
                           '`strategy="forward-mode"` are not supported together (yet). Please '
                           'either set `strict=False` or `strategy="reverse-mode"`.')
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
    if not vectorize:
        raise NotImplementedError("Computing Jacobian using forward-AD or forward-over-reverse "
                                  "Hessian isonly implemented for `vectorize=True`.")
    numels = tuple(inp.numel() for inp in inputs)
    differentiable = differentiable or any(inp.requires_grad for inp in inputs)
    basis = [t.reshape(sum(numels), *inp.shape)
             for t, inp in zip(_standard_basis(inputs, numels), inputs)]
    columns = []  # per basis vector: the outputs' tangents
    with enable_grad():
        for j in range(sum(numels)):
            is_outputs_tuple, outputs, tangents = _dual_run(
                func, inputs, tuple(b[j] for b in basis), None)
            columns.append(tangents)
        if not columns:  # no input element: the outputs' shapes from one plain call
            is_outputs_tuple, outputs = _as_tuple(func(*inputs), "outputs")
    result = []
    for k, out in enumerate(outputs):
        cols = [c[k] if c[k] is not None else _zeros_like(out) for c in columns]
        row, start = [], 0
        for n, inp in zip(numels, inputs):
            piece = cols[start:start + n]
            start += n
            if piece:  # (n, *out.shape) -> (*out.shape, n) -> (*out.shape, *inp.shape)
                rows = stack_rows(piece, out, differentiable)
                jac_ij = rows.permute(*range(1, rows.ndim), 0).reshape(*out.shape, *inp.shape)
            else:
                jac_ij = _tensor(np.zeros(tuple(out.shape) + tuple(inp.shape), out._data.dtype))
            row.append(jac_ij if differentiable else jac_ij.detach())
        result.append(row)
    return _tuple_postprocess(result, (is_outputs_tuple, is_inputs_tuple))


def jacobian(func: Callable, inputs: Any, create_graph: bool = False, strict: bool = False,
             vectorize: bool = False, strategy: str = "reverse-mode") -> Any:
    """The Jacobian of ``func`` at ``inputs``: ``out.shape + in.shape`` per pair, in
    tuples as torch nests them (outputs outer, inputs inner)."""
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode". '
                             'Hint: If your function has more outputs than inputs, '
                             '"forward-mode" tends to be more performant. Otherwise, prefer to '
                             'use "reverse-mode".')
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError(
                'torch.autograd.functional.jacobian: `create_graph=True` and '
                '`strategy="forward-mode"` are not supported together (yet). Please either '
                'set `create_graph=False` or `strategy="reverse-mode"`.')
        return _jacfwd(func, inputs, strict, vectorize)
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        is_outputs_tuple, outputs = _outputs(func, inputs, "jacobian", strict)
        if vectorize:
            if strict:
                raise RuntimeError("torch.autograd.functional.jacobian: `strict=True` and "
                                   "`vectorized=True` are not supported together. Please either "
                                   "set `strict=False` or `vectorize=False`.")
            jac = _jacobian_vectorized(inputs, outputs, create_graph)
        else:
            jac = tuple(_jacobian_rows(i, out, inputs, create_graph, strict)
                        for i, out in enumerate(outputs))
        jac = _grad_postprocess(jac, create_graph)
        return _tuple_postprocess(jac, (is_outputs_tuple, is_inputs_tuple))


def _jacobian_rows(i: int, out: Any, inputs: tuple, create_graph: bool, strict: bool) -> tuple:
    """d out / d input for every input, one backward per element of ``out``."""
    rows: list = [[] for _ in inputs]
    flat = out.reshape(-1)
    for j in range(out.numel()):
        vj = _autograd_grad((flat[j],), inputs, retain_graph=True, create_graph=create_graph)
        for k, (g, inp) in enumerate(zip(vj, inputs)):
            if g is None:
                if strict:
                    raise RuntimeError(f"Output {i} of the user-provided function is "
                                       f"independent of input {k}. This is not allowed in "
                                       "strict mode.")
                g = _zeros_like(inp)
            elif strict and create_graph and not g.requires_grad:
                raise RuntimeError(f"The jacobian of the user-provided function is independent "
                                   f"of input {i}. This is not allowed in strict mode when "
                                   "create_graph=True.")
            rows[k].append(g)
    return tuple(_stacked(r, inp, create_graph).reshape(*out.shape, *inp.shape)
                 for r, inp in zip(rows, inputs))


def _stacked(rows: list, like: Any, create_graph: bool) -> Any:
    out = stack_rows(rows, like, create_graph and any(r.requires_grad for r in rows))
    return out if out is not None else _tensor(np.zeros((len(rows),) + tuple(like.shape),
                                                        like._data.dtype))


def _jacobian_vectorized(inputs: tuple, outputs: tuple, create_graph: bool) -> tuple:
    """Every row at once: the standard basis of the (flattened) outputs as a batch of
    grad_outputs (torch vmaps the backward over it; here ``is_grads_batched``)."""
    numels = tuple(o.numel() for o in outputs)
    flat = tuple(o.reshape(-1) for o in outputs)
    vj = _autograd_grad(flat, inputs, _standard_basis(outputs, numels),
                        create_graph=create_graph, is_grads_batched=True)
    per_input = []
    for g, inp in zip(vj, inputs):
        if g is None:
            g = _tensor(np.zeros((sum(numels),) + tuple(inp.shape), inp._data.dtype))
        per_input.append([piece.reshape(*o.shape, *inp.shape)
                          for piece, o in zip(_split_rows(g, numels), outputs)])
    return tuple(zip(*per_input))


def hessian(func: Callable, inputs: Any, create_graph: bool = False, strict: bool = False,
            vectorize: bool = False, outer_jacobian_strategy: str = "reverse-mode") -> Any:
    """The Hessian of scalar ``func``: ``in.shape + in.shape``, tuples of tuples for
    several inputs."""
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def ensure_single_output_function(*inp: Any) -> Any:
        out = func(*inp)
        is_out_tuple, t_out = _as_tuple(out, "outputs of the user-provided function", "hessian")
        _check_requires_grad(t_out, "outputs", strict=strict)
        if is_out_tuple or not isinstance(out, record.Tensor):
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if out.numel() != 1:
            raise RuntimeError("The Tensor returned by the function given to hessian should "
                               "contain a single element")
        return out.squeeze()

    def jac_func(*inp: Any) -> Any:
        if outer_jacobian_strategy == "forward-mode":
            inp = tuple(t.requires_grad_(True) for t in inp)
        jac = jacobian(ensure_single_output_function, inp, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
        return jac

    if outer_jacobian_strategy == "forward-mode" and not create_graph:
        res = _jacfwd(jac_func, inputs, strict, vectorize, differentiable=True)
    else:
        res = jacobian(jac_func, inputs, create_graph=create_graph, strict=strict,
                       vectorize=vectorize, strategy=outer_jacobian_strategy)
    return _tuple_postprocess(res, (is_inputs_tuple, is_inputs_tuple))
