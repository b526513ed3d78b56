"""numpy's polynomial functions with traced coefficients, composed of existing ops:
``polyder``, ``polyint``, ``poly``, ``roots``, ``polyadd``, ``polysub``, ``polymul`` and
``polydiv`` (``polyval`` and ``polyfit`` are in numpy_extras.py and numpy_fitting.py).

- ``polyder`` / ``polyint`` take numpy's steps (the coefficients times, or over, their
  powers); ``polyint``'s constants ``k`` may require grad too.
- ``poly`` multiplies the factors ``(x - r)`` up in turn, as numpy's convolutions do;
  from a square matrix, its eigenvalues are the roots (``np.linalg.eigvals``'s
  gradient). A complex result whose roots come in conjugate pairs is real, as numpy's
  (a reading of the values: a guard of the trace under ``pb.grad``).
- ``roots`` is numpy's: the eigenvalues of the companion matrix, real when all are
  (as ``np.linalg.eigvals``), with numpy's zeros for trailing zero coefficients. Its
  gradient is eig's, defined where the roots are distinct. Which coefficients are zero
  is read (a guard of the trace).
- ``polyadd`` / ``polysub`` align the powers with leading zeros, ``polymul`` is
  ``convolve``; ``polydiv`` is numpy's long division, quotient and remainder both
  differentiable (numpy drops the remainder's leading near-zeros: read from the values).
- ``np.polynomial.polynomial.polyval2d`` / ``polygrid2d`` (numpy dispatches them on
  their arguments) are numpy's Horner steps along each coordinate in turn; ``polyval``
  itself, ``chebval`` & co. and the classes' ``Polynomial(c)(x)`` do not dispatch and
  convert the coefficients with ``np.array``: inside a front door the source pass
  routes them to numpy_series.py (``compiler/numpy_polynomial.py``); ``polyval3d`` and
  calls outside a front door refuse Tensor coefficients as torch's ``numpy()`` does.

>>> import numpy as np, pullback as pb
>>> p = pb.tensor([1., -3., 2.], requires_grad=True)
>>> np.polyder(p)
tensor([ 2., -3.], dtype=pullback.float64, grad_fn=<MulBackward0>)
>>> np.sort(np.roots(p))
tensor([1., 2.], grad_fn=<SortBackward0>)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .elementwise import is_complex, real, to_dtype
from .shape import detach, reshape
from .table import args
from .table.registry import is_traced, public


def _coefficients(p: Any) -> Any:
    p = args.value(p)
    p = p if is_traced(p) else np.asarray(p)
    return reshape(p, (1,)) if np.ndim(p) == 0 else p


def _typed(v: Any, dtype: Any) -> Any:
    return to_dtype(v, dtype) if is_traced(v) else np.asarray(v, dtype)


def _numpy_polyder(p, m=1):
    m = int(m)
    p = _coefficients(p)
    if m < 0 or np.ndim(p) != 1 or isinstance(p, np.poly1d):
        raise args.Unsupported  # numpy's ValueError (and its poly1d form)
    for _ in range(m):
        powers = np.arange(p.shape[0] - 1, 0, -1)
        p = _typed(p[:-1], np.result_type(args.np_dtype(p), powers)) * powers
    return p


public("polyder", numpy={np.polyder: _numpy_polyder})(_numpy_polyder)


def _numpy_polyint(p, m=1, k=None):
    m = int(m)
    p = _coefficients(p)
    if m < 0:
        raise args.Unsupported  # numpy's ValueError
    if k is None:
        k = np.zeros(m, float)
    k = k if is_traced(k) else np.asarray(k)
    if np.ndim(k) == 0:
        k = reshape(k, (1,)) if is_traced(k) else k.reshape(1)
    if k.shape[0] == 1 and m > 1:
        k = k[0] * np.ones(m, float)
    if m < 0 or k.shape[0] < m or np.ndim(p) != 1:
        raise args.Unsupported  # numpy's ValueError
    for i in range(m):
        powers = np.arange(p.shape[0], 0, -1)
        p = _typed(p, np.result_type(args.np_dtype(p), powers, 1.0)) / powers
        last = k[i:i + 1]
        dtype = np.result_type(args.np_dtype(p), args.np_dtype(last))
        p = np.concatenate([_typed(p, dtype), _typed(last, dtype)])
    return p


public("polyint", numpy={np.polyint: _numpy_polyint})(_numpy_polyint)


def _numpy_poly(seq_of_zeros):
    z = _coefficients(seq_of_zeros)
    if not is_traced(z):
        raise args.Unsupported
    shape = tuple(np.shape(z))
    if len(shape) == 2 and shape[0] == shape[1] and shape[0] != 0:
        z = np.linalg.eigvals(z)
    elif len(shape) == 1:
        z = to_dtype(z, np.dtype(np.mintypecode(args.np_dtype(z).char)))
    else:
        raise args.Unsupported  # numpy's ValueError
    if z.shape[0] == 0:
        raise args.Unsupported  # numpy's 1.0 (no gradient to keep)
    dtype = np.dtype(args.np_dtype(z))
    a = np.ones((1,), dtype)
    zero = np.zeros((1,), dtype)
    for i in range(z.shape[0]):
        a = np.concatenate([a, zero]) - z[i] * np.concatenate([zero, a])
    if is_complex(a):
        r = np.asarray(detach(z)).astype(complex)
        if np.all(np.sort(r) == np.sort(r.conjugate())):
            a = real(a) * 1  # (a new array, as numpy's copy)
    return a


public("poly", numpy={np.poly: _numpy_poly})(_numpy_poly)


def _numpy_roots(p):
    p = _coefficients(p)
    if np.ndim(p) != 1 or not is_traced(p):
        raise args.Unsupported  # numpy's ValueError
    nonzero = np.flatnonzero(np.asarray(detach(p)))
    if nonzero.size == 0:
        raise args.Unsupported  # numpy's empty array (no gradient)
    trailing = p.shape[0] - int(nonzero[-1]) - 1
    p = p[int(nonzero[0]):int(nonzero[-1]) + 1]
    if args.np_dtype(p).kind not in "fc":
        p = to_dtype(p, np.float64)
    n = p.shape[0]
    dtype = np.dtype(args.np_dtype(p))
    if n > 1:
        first = reshape(-p[1:] / p[0], (1, n - 1))
        A = np.concatenate([first, np.eye(n - 2, n - 1, dtype=dtype)]) if n > 2 else first
        r = np.linalg.eigvals(A)
    else:
        r = to_dtype(p[:0], np.float64)  # (numpy's empty float64 array)
    if trailing:
        r = np.concatenate([r, np.zeros(trailing, args.np_dtype(r))])
    return r


public("roots", numpy={np.roots: _numpy_roots})(_numpy_roots)


def _pair(a1: Any, a2: Any) -> tuple:
    """Two coefficient sequences, 1-d (numpy's ``atleast_1d``); a poly1d or an array of
    more dimensions goes to numpy."""
    if isinstance(a1, np.poly1d) or isinstance(a2, np.poly1d):
        raise args.Unsupported  # (numpy's poly1d result)
    a1, a2 = _coefficients(a1), _coefficients(a2)
    if np.ndim(a1) != 1 or np.ndim(a2) != 1:
        raise args.Unsupported
    return a1, a2


def _padded(a: Any, n: int) -> Any:
    """``a`` after ``n`` leading zeros of its dtype (numpy's alignment of the powers)."""
    return a if n <= 0 else np.concatenate([np.zeros(n, args.np_dtype(a)), a])


def _numpy_polyadd(a1, a2):
    a1, a2 = _pair(a1, a2)
    diff = a2.shape[0] - a1.shape[0]
    return _padded(a1, diff) + _padded(a2, -diff)


def _numpy_polysub(a1, a2):
    a1, a2 = _pair(a1, a2)
    diff = a2.shape[0] - a1.shape[0]
    return _padded(a1, diff) - _padded(a2, -diff)


def _numpy_polymul(a1, a2):
    return np.convolve(*_pair(a1, a2))


def _numpy_polydiv(u, v):
    """numpy's long division: each quotient coefficient in turn, the remainder's
    leading near-zeros (numpy's ``allclose``, read from the values: a guard of the
    trace) dropped."""
    u, v = _pair(u, v)
    u, v = u + 0.0, v + 0.0
    dtype = np.result_type(args.np_dtype(u), args.np_dtype(v))
    u, v = _typed(u, dtype), _typed(v, dtype)
    m, n = u.shape[0] - 1, v.shape[0] - 1
    scale = 1.0 / v[0]
    r, q = u, []
    for k in range(m - n + 1):
        d = scale * r[k]
        q.append(np.reshape(d, (1,)))
        r = np.concatenate([r[:k], r[k:k + n + 1] - d * v, r[k + n + 1:]])
    quotient = np.concatenate(q) if q else np.zeros((1,), dtype)
    while r.shape[0] > 1 and np.allclose(np.asarray(detach(r[0]) if is_traced(r)
                                                    else r[0]), 0, rtol=1e-14):
        r = r[1:]
    return quotient, r


def _power_series(x: Any, c: Any, tensor: bool = True) -> Any:
    """``np.polynomial.polynomial.polyval(x, c, tensor)`` with traced values: Horner's
    rule from the highest power (the powers along ``c``'s first axis)."""
    c, x = args.value(c), args.value(x)
    if np.ndim(c) == 0:
        c = reshape(c, (1,)) if is_traced(c) else np.reshape(c, (1,))
    if args.np_dtype(c).kind in "biu?":
        c = c + 0.0
    if tensor and np.ndim(x) and (is_traced(x) or isinstance(x, np.ndarray)):
        grown = tuple(c.shape) + (1,) * np.ndim(x)
        c = reshape(c, grown) if is_traced(c) else np.reshape(c, grown)
    y = c[-1] + x * 0
    for i in range(2, c.shape[0] + 1):
        y = c[-i] + y * x
    return y


def _points(*xs: Any) -> list:
    xs = [args.value(x) for x in xs]
    if any(np.shape(x) != np.shape(xs[0]) for x in xs[1:]):
        raise ValueError("x, y are incompatible")
    return xs


def _polyval2d(x, y, c):
    x, y = _points(x, y)
    return _power_series(y, _power_series(x, c), tensor=False)


def _polygrid2d(x, y, c):
    return _power_series(args.value(y), _power_series(args.value(x), c))


_P = np.polynomial.polynomial
public("polynomial.polyval2d", numpy={_P.polyval2d: _polyval2d})(_polyval2d)
public("polynomial.polygrid2d", numpy={_P.polygrid2d: _polygrid2d})(_polygrid2d)
public("polyadd", numpy={np.polyadd: _numpy_polyadd})(_numpy_polyadd)
public("polysub", numpy={np.polysub: _numpy_polysub})(_numpy_polysub)
public("polymul", numpy={np.polymul: _numpy_polymul})(_numpy_polymul)
public("polydiv", numpy={np.polydiv: _numpy_polydiv})(_numpy_polydiv)
