"""``gradcheck`` and ``gradgradcheck``: analytical gradients against finite differences.

torch 2.13's signatures, defaults, checks and messages. The numerical Jacobian perturbs
each element of each input that requires grad in place (central differences, ``eps``);
the analytical one is one ``autograd.grad`` per output element, computed twice (the
results must agree within ``nondet_tol``). Jacobians are laid out as torch prints them:
one row per input element, one column per output element. Complex inputs give the
conjugate Wirtinger derivative; complex outputs are checked as their real and imaginary
parts. ``fast_mode`` compares ``v^T J u`` for random ``u``, ``v`` instead. There are no
sparse tensors in pullback, so ``masked`` changes nothing; ``check_forward_ad`` checks the
forward-mode Jacobian (``functional.jacobian(strategy="forward-mode")``: dual tensors,
a custom Function's ``jvp``), real inputs only.

>>> import pullback as pb
>>> from pullback.autograd import gradcheck
>>> x = pb.tensor([0.5, 1.5], dtype=pb.float64, requires_grad=True)
>>> gradcheck(lambda t: (t * t).sin(), (x,))
True
"""

from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy as np

from ..ops.sampling import GENERATOR
from . import record
from .backward import grad
from .gradcheck_checks import (
    allclose,
    as_tuple,
    central,
    check_backward_mul_by_grad_output,
    check_batched_backward,
    check_batched_forward,
    check_undefined_backward_mode,
    diff_inputs,
    forward_check,
    is_tensor,
    numerical_jacobians,
    wrap,
)
from .gradcheck_messages import (
    FAST_MODE_SLOW,
    FAST_OK_IN_SLOW,
    FLOAT32_INPUT,
    NO_INPUT_REQUIRES_GRAD,
    NONDETERMINISTIC,
    STRIDE_ZERO,
    GradcheckError,
    notallclose,
)

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


def _differentiable_outputs(out: Any) -> tuple:
    return tuple(o for o in as_tuple(out) if o.requires_grad)


# ------------------------------------------------------------------ the public API
def _check_flags(flags: dict, either: str, needs: tuple) -> None:
    """torch's checks of the ``check_*`` options: one of the two names in ``either`` is
    True, and for each "option needed" in ``needs``, option=True only with needed=True."""
    first, second = either.split()
    if not (flags[first] or flags[second]):
        raise AssertionError(f"Expected at least one of {first} or {second} to be True")
    for option, needed in (pair.split() for pair in needs):
        if flags[option] and not flags[needed]:
            raise AssertionError(f"Setting {option}=True requires {needed} to be True")


def gradcheck(func: Callable[..., Any], inputs: Any, *, eps: float = 1e-6, atol: float = 1e-5,
              rtol: float = 1e-3, raise_exception: bool = True, nondet_tol: float = 0.0,
              check_undefined_grad: bool = True, check_grad_dtypes: bool = False,
              check_batched_grad: bool = False, check_batched_forward_grad: bool = False,
              check_forward_ad: bool = False, check_backward_ad: bool = True,
              fast_mode: bool = False, masked: bool | None = None) -> bool:
    """Check ``func``'s gradients at ``inputs`` (a Tensor or a tuple) against finite
    differences: True, or a GradcheckError (False with ``raise_exception=False``)."""
    _check_flags(dict(check_forward_ad=check_forward_ad, check_backward_ad=check_backward_ad,
                      check_batched_grad=check_batched_grad,
                      check_batched_forward_grad=check_batched_forward_grad),
                 "check_forward_ad check_backward_ad",
                 ("check_batched_grad check_backward_ad",
                  "check_batched_forward_grad check_forward_ad"))
    try:
        return _gradcheck(func, as_tuple(inputs), eps, atol, rtol, nondet_tol,
                          check_undefined_grad, check_grad_dtypes, check_batched_grad,
                          check_batched_forward_grad, check_forward_ad, check_backward_ad,
                          fast_mode)
    except GradcheckError:
        if raise_exception:
            raise
        return False


def _gradcheck(func: Callable, inputs: tuple, eps: float, atol: float, rtol: float,
               nondet_tol: float, check_undefined_grad: bool, check_grad_dtypes: bool,
               check_batched_grad: bool, check_batched_forward_grad: bool,
               check_forward_ad: bool, check_backward_ad: bool, fast_mode: bool) -> bool:
    _check_inputs(inputs)
    func_out = func(*inputs)
    outputs = _differentiable_outputs(func_out)
    check = _fast_check if fast_mode else _slow_check
    if check_backward_ad:
        complex_out = [i for i, o in enumerate(outputs) if o.is_complex()]
        if any(o.is_complex() for o in as_tuple(func_out)):
            for part, imag in (("imag", True), ("real", False)):
                part_fn = _part_of_outputs(func, part)
                part_out = part_fn(*inputs)
                check(part_fn, part_out, inputs, _differentiable_outputs(part_out), eps, rtol,
                      atol, check_grad_dtypes, nondet_tol, complex_out, imag)
        else:
            check(func, func_out, inputs, outputs, eps, rtol, atol, check_grad_dtypes,
                  nondet_tol, None, False)
    if check_forward_ad:
        forward_check(func, func_out, inputs, eps, rtol, atol)
    if check_batched_forward_grad:
        check_batched_forward(func, inputs)
    if not check_backward_ad:
        return True
    if check_batched_grad:
        for i, o in enumerate(outputs):
            check_batched_backward(inputs, o, i)
    check_backward_mul_by_grad_output(outputs, inputs)
    if check_undefined_grad:
        check_undefined_backward_mode(func, outputs, inputs)
    return True


def _check_inputs(inputs: tuple) -> None:
    any_requires_grad = False
    for idx, inp in enumerate(inputs):
        if is_tensor(inp) and inp.requires_grad:
            if inp._data.dtype not in (np.float64, np.complex128):
                warnings.warn(FLOAT32_INPUT.format(idx=idx), UserWarning, stacklevel=3)
            if any(st == 0 and n > 1 for st, n in zip(inp._data.strides, inp._data.shape)):
                raise RuntimeError(STRIDE_ZERO.format(idx=idx))
            any_requires_grad = True
    if not any_requires_grad:
        raise ValueError(NO_INPUT_REQUIRES_GRAD)


def _part_of_outputs(func: Callable, part: str) -> Callable:
    """``func`` with its complex outputs replaced by their real or imaginary parts."""
    def fn(*inputs: Any) -> tuple:
        return tuple(getattr(o, part) if o.is_complex() else o for o in as_tuple(func(*inputs)))
    fn.__name__ = f"{part}_of_{getattr(func, '__name__', 'func')}"
    return fn


# ----------------------------------------------------------------------- slow mode
def _vjp_rows(output: Any, diff: list, v: np.ndarray | None = None) -> list:
    """Per input, the list of vector-Jacobian products of ``output``: one per output
    element (rows of the Jacobian) or one with ``v``."""
    vectors = [v.reshape(output.shape)] if v is not None else [
        np.eye(output.numel(), dtype=output._data.dtype)[j].reshape(output.shape)
        for j in range(output.numel())]
    rows: list = [[] for _ in diff]
    for vec in vectors:
        gs = grad(output, diff, wrap(vec), retain_graph=True, allow_unused=True)
        for r, g in zip(rows, gs):
            r.append(None if g is None else g._data.copy())
    return rows


def _stack_rows(rows: list, diff: list, n: int) -> tuple:
    """(jacobians (input numel, n), dtypes ok, sizes ok) from ``_vjp_rows``."""
    jacs, types_ok, sizes_ok = [], True, True
    for r, inp in zip(rows, diff):
        jac = np.zeros((inp.numel(), n), inp._data.dtype)
        for j, g in enumerate(r):
            if g is None:
                continue
            if g.shape != inp._data.shape:
                sizes_ok = False
            elif g.dtype != inp._data.dtype:
                types_ok = False
            jac[:, j] = g.reshape(-1)
        jacs.append(jac)
    return jacs, types_ok, sizes_ok


def _analytical_jacobians(inputs: tuple, output: Any, nondet_tol: float,
                          check_grad_dtypes: bool, v: np.ndarray | None = None) -> list:
    """Per input that requires grad: d output / d input as (input numel, output numel)
    (one column with ``v``), computed twice to catch a nondeterministic backward."""
    diff = diff_inputs(inputs)
    n = 1 if v is not None else output.numel()
    first, types_ok, sizes_ok = _stack_rows(_vjp_rows(output, diff, v), diff, n)
    second, _, _ = _stack_rows(_vjp_rows(output, diff, v), diff, n)
    reentrant = all(a.size == 0 or np.abs(a - b).max() <= nondet_tol
                    for a, b in zip(first, second))
    if not types_ok and check_grad_dtypes:
        raise GradcheckError("Gradient has dtype mismatch")
    if not sizes_ok:
        raise GradcheckError("Analytical gradient has incorrect size")
    if not reentrant:
        raise GradcheckError(NONDETERMINISTIC.format(tol=nondet_tol))
    return first


def _slow_check(func: Callable, func_out: Any, inputs: tuple, outputs: tuple, eps: float,
                rtol: float, atol: float, check_grad_dtypes: bool, nondet_tol: float,
                complex_indices: list | None, test_imag: bool) -> bool:
    tensors = [o for o in as_tuple(func_out) if is_tensor(o)]
    if not outputs:
        return _check_no_differentiable_outputs(func, inputs, tensors, eps)
    numerical = list(zip(*numerical_jacobians(func, inputs, tensors, eps)))
    numerical = [nj for o, nj in zip(tensors, numerical) if o.requires_grad]
    for i, o in enumerate(outputs):
        analytical = _analytical_jacobians(inputs, o, nondet_tol, check_grad_dtypes)
        for j, (a, n) in enumerate(zip(analytical, numerical[i])):
            if not allclose(a, n, rtol, atol):
                raise GradcheckError(notallclose(wrap(a), wrap(n), i, j, complex_indices,
                                                 test_imag))
    return True


def _check_no_differentiable_outputs(func: Callable, inputs: tuple, outputs: list,
                                     eps: float) -> bool:
    for jacs in numerical_jacobians(func, inputs, outputs, eps):
        if any(np.any(j != 0) for j in jacs):
            raise GradcheckError("Numerical gradient for function expected to be zero")
    return True


# ----------------------------------------------------------------------- fast mode
def _random_vector(rng: np.random.Generator, n: int, dtype: np.dtype) -> np.ndarray:
    v = rng.random(n).astype(dtype)
    return v / np.linalg.norm(v)


def _fast_check(func: Callable, func_out: Any, inputs: tuple, outputs: tuple, eps: float,
                rtol: float, atol: float, check_grad_dtypes: bool, nondet_tol: float,
                complex_indices: list | None, test_imag: bool) -> bool:
    """v^T J u for random unit ``u`` (per input) and ``v`` (per output), numerically
    (one directional difference per input) and analytically (one backward per output)."""
    rng = np.random.default_rng(0)  # (torch also draws them from a generator of its own)
    diff = diff_inputs(inputs)
    us = []
    for inp in diff:
        real = np.dtype(inp._data.real.dtype)
        us.append((_random_vector(rng, inp.numel(), real), _random_vector(rng, inp.numel(), real))
                  if inp.is_complex() else _random_vector(rng, inp.numel(), real))
    vs = [_random_vector(rng, o.numel(), o._data.dtype) for o in outputs]
    tensors = [o for o in as_tuple(func_out) if is_tensor(o)]
    if not outputs:
        return _check_no_differentiable_outputs(func, inputs, tensors, eps)
    positions = [k for k, o in enumerate(tensors) if o.requires_grad]
    numerical = []  # [input][output]
    for inp, u in zip(diff, us):
        x = inp._data
        if inp.is_complex():
            dx = central(func, inputs, x, None, u[0].reshape(x.shape) * eps, eps)
            dy = central(func, inputs, x, None, u[1].reshape(x.shape) * eps * 1j, eps)
            ju = [a + 1j * b for a, b in zip(dx, dy)]
        else:
            ju = central(func, inputs, x, None, u.reshape(x.shape) * eps, eps)
        numerical.append([(v * ju[k]).sum() for k, v in zip(positions, vs)])
    for j, (o, v) in enumerate(zip(outputs, vs)):
        vjs = _analytical_jacobians(inputs, o, nondet_tol, check_grad_dtypes, v)
        for i, (vj, u) in enumerate(zip(vjs, us)):
            vj = vj[:, 0]
            if isinstance(u, tuple):
                a = vj.real.dot(u[0]) + 1j * vj.imag.dot(u[1])
                tol = atol * (float(u[0].sum()) + float(u[1].sum())) * float(v.sum())
            else:
                a = vj.dot(u)
                tol = atol * float(u.sum()) * float(v.sum())
            n = numerical[i][j]
            if not allclose(np.asarray(a), np.asarray(n), rtol, tol):
                raise GradcheckError(
                    notallclose(_scalar(a), _scalar(n), j, i, complex_indices, test_imag)
                    + _slow_mode_report(func, inputs, outputs, i, j, rtol, atol, eps))
    return True


def _scalar(x: Any) -> Any:
    x = np.asarray(x).item()
    return complex(x) if isinstance(x, complex) else float(x)


def _slow_mode_report(func: Callable, inputs: tuple, outputs: tuple, i: int, j: int,
                      rtol: float, atol: float, eps: float) -> str:
    """The fast-mode failure's slow-mode Jacobians of input ``i`` and output ``j``."""
    numerical = numerical_jacobians(func, inputs, list(outputs), eps)[i][j]
    analytical = _analytical_jacobians(inputs, outputs[j], float("inf"), False)[i]
    max_diff = float(np.abs(numerical - analytical).max()) if numerical.size else 0.0
    text = FAST_MODE_SLOW.format(numerical=wrap(numerical), analytical=wrap(analytical),
                                 max_diff=max_diff)
    if allclose(analytical, numerical, rtol, atol):
        text += FAST_OK_IN_SLOW
    return text


# -------------------------------------------------------------------- gradgradcheck
def gradgradcheck(func: Callable[..., Any], inputs: Any, grad_outputs: Any = None, *,
                  eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
                  gen_non_contig_grad_outputs: bool = False, raise_exception: bool = True,
                  nondet_tol: float = 0.0, check_undefined_grad: bool = True,
                  check_grad_dtypes: bool = False, check_batched_grad: bool = False,
                  check_fwd_over_rev: bool = False, check_rev_over_rev: bool = True,
                  fast_mode: bool = False, masked: bool = False) -> bool:
    """gradcheck of the function that maps (inputs, grad_outputs) to ``func``'s input
    gradients (with create_graph): the second derivatives. ``grad_outputs`` default to
    random values in [-1, 1) (pullback's generator: ``pb.manual_seed`` fixes them)."""
    _check_flags(dict(check_fwd_over_rev=check_fwd_over_rev,
                      check_rev_over_rev=check_rev_over_rev,
                      check_undefined_grad=check_undefined_grad,
                      check_batched_grad=check_batched_grad),
                 "check_fwd_over_rev check_rev_over_rev",
                 ("check_undefined_grad check_rev_over_rev",
                  "check_batched_grad check_rev_over_rev"))
    tupled_inputs = as_tuple(inputs)
    if grad_outputs is None:
        outputs = _differentiable_outputs(func(*tupled_inputs))
        tupled_grad_outputs = tuple(_random_like(x, gen_non_contig_grad_outputs)
                                    for x in outputs)
    else:
        tupled_grad_outputs = as_tuple(grad_outputs)
    n_out = len(tupled_grad_outputs)
    diff_args = {i for i, x in enumerate(tupled_inputs) if is_tensor(x) and x.requires_grad}
    diff_grads = {i for i, x in enumerate(tupled_grad_outputs) if x.requires_grad}

    def new_func(*args: Any) -> tuple:
        input_args = tuple(x.requires_grad_() if i in diff_args else x
                           for i, x in enumerate(args[:-n_out]))
        outputs = _differentiable_outputs(func(*input_args))
        gos = tuple(x.requires_grad_() if i in diff_grads else x
                    for i, x in enumerate(args[-n_out:]))
        diff = tuple(x for i, x in enumerate(input_args) if i in diff_args)
        grad_inputs = grad(outputs, diff, gos, create_graph=True, allow_unused=True)
        return tuple(g for g in grad_inputs if g is not None)

    return gradcheck(new_func, tupled_inputs + tupled_grad_outputs, eps=eps, atol=atol,
                     rtol=rtol, raise_exception=raise_exception, nondet_tol=nondet_tol,
                     check_undefined_grad=check_undefined_grad,
                     check_grad_dtypes=check_grad_dtypes, check_batched_grad=check_batched_grad,
                     fast_mode=fast_mode, check_forward_ad=check_fwd_over_rev,
                     check_backward_ad=check_rev_over_rev, masked=masked)


def _random_like(x: Any, noncontiguous: bool) -> Any:
    """torch.testing.make_tensor(x.shape, low=-1, high=1, requires_grad=True): of x's
    dtype when it is floating or complex, else float64."""
    dtype = x._data.dtype if x._data.dtype.kind in "fc" else np.dtype(np.float64)
    shape = tuple(x.shape)
    draw = lambda: GENERATOR.rng.random(shape) * 2 - 1  # noqa: E731
    data = np.array(draw() + 1j * draw() if dtype.kind == "c" else draw(), dtype=dtype)
    if noncontiguous and data.size > 1:  # every other element of a buffer twice as long
        buf = np.zeros(shape[:-1] + (2 * shape[-1],), dtype) if shape else data
        buf[..., ::2] = data
        data = buf[..., ::2]
    t = record.Tensor._make(data)
    t.requires_grad_()
    return t
