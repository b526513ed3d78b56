"""numpy's least squares with traced arrays, composed of existing ops:
``np.linalg.lstsq`` is the pseudo-inverse (``linalg_pinv``, whose rule is torch's
pinv_backward) at numpy's ``rcond`` times ``b``, and ``np.polyfit`` is numpy's own
steps (the scaled Vandermonde matrix, lstsq, the coefficients unscaled).

lstsq's four results are numpy's: the solution, the residuals (the squared norms of
``b - a @ x`` per column when the rank is full and ``a`` is tall, else empty), the
rank (numpy's int32 scalar, also eagerly: no Tensor; under ``pb.grad`` it is read
from the values, a guard of the trace) and the
singular values, differentiable too. polyfit takes ``deg``, ``rcond``, ``w`` and
``full``; ``cov=True`` is refused (numpy's TypeError names it not differentiable).

>>> import numpy as np, pullback as pb
>>> y = pb.tensor([1., 3., 5.1], requires_grad=True)
>>> np.polyfit(np.arange(3.), y, 1)
tensor([2.0500, 0.9833], dtype=pullback.float64, grad_fn=<PermuteBackward0>)
"""

from __future__ import annotations

import warnings

import numpy as np

from .elementwise import to_dtype
from .factorizations import pinv
from .table import args
from .table.registry import public


def _numpy_lstsq(a, b, rcond=None):
    a, b = args.value(a), args.value(b)
    if np.ndim(a) != 2 or np.ndim(b) not in (1, 2) or a.shape[0] != b.shape[0]:
        raise args.Unsupported  # numpy's own error
    m, n = a.shape
    dtype = np.result_type(args.np_dtype(a), args.np_dtype(b), np.float64 if
                           args.np_dtype(a).kind in "iub" else args.np_dtype(a))
    if dtype.kind not in "f":
        raise args.Unsupported
    a, b = to_dtype(a, dtype), to_dtype(b, dtype)
    if rcond is None:
        rcond = np.finfo(dtype).eps * max(m, n)
    if 0 in (m, n):
        raise args.Unsupported
    x = pinv(a, rtol=max(rcond, 0.0)) @ b
    s = np.linalg.svd(a, compute_uv=False)
    rank = int(np.count_nonzero(s > max(rcond, np.finfo(dtype).eps) * s[0]))
    if rank == n and m > n:
        residuals = np.sum((b - a @ x) ** 2, axis=0)
        residuals = np.reshape(residuals, (-1,))
    else:
        residuals = np.zeros((0,), dtype)
    return x, residuals, np.int32(rank), s


def _numpy_lstsq_face(a, b, rcond=None):
    x, residuals, rank, s = _numpy_lstsq(a, b, rcond)
    return x, residuals, args.Kept(rank), s


def _numpy_polyfit_face(x, y, deg, rcond=None, full=False, w=None, cov=False):
    fit = _numpy_polyfit(x, y, deg, rcond, full, w, cov)
    return fit if not full else fit[:2] + (args.Kept(fit[2]),) + fit[3:]


public("linalg.lstsq_numpy", numpy={np.linalg.lstsq: _numpy_lstsq_face})(_numpy_lstsq)


def _numpy_polyfit(x, y, deg, rcond=None, full=False, w=None, cov=False):
    if cov:
        raise args.Unsupported
    order = int(deg) + 1
    x, y = args.value(x) + 0.0, args.value(y) + 0.0
    if deg < 0 or np.ndim(x) != 1 or np.size(x) == 0 or np.ndim(y) not in (1, 2) \
            or x.shape[0] != y.shape[0]:
        raise args.Unsupported  # numpy's own errors
    if rcond is None:
        rcond = x.shape[0] * np.finfo(args.np_dtype(x)).eps
    lhs, rhs = np.vander(x, order), y
    if w is not None:
        w = args.value(w) + 0.0
        if np.ndim(w) != 1 or w.shape[0] != y.shape[0]:
            raise args.Unsupported
        lhs = lhs * w[:, None]
        rhs = rhs * (w[:, None] if np.ndim(rhs) == 2 else w)
    scale = np.sqrt(np.sum(lhs * lhs, axis=0))
    c, resids, rank, s = _numpy_lstsq(lhs / scale, rhs, rcond)
    c = (c.T / scale).T
    if full:
        return c, resids, rank, s, rcond
    if rank != order:
        warnings.warn("Polyfit may be poorly conditioned", np.exceptions.RankWarning,
                      stacklevel=2)
    return c


public("polyfit", numpy={np.polyfit: _numpy_polyfit_face})(_numpy_polyfit)
