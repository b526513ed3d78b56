"""The op-case table: every op in ``pullback.ops.OPS`` with inputs, params and torch's
equivalent expression. One table serves the eager tests here and the compiler's tests.

A ``Case`` calls one op: ``case.fn(*values)`` runs ``OPS[case.op](*args, **case.params)``
with the case's constants filled in, where ``values = case.inputs(dtype, seed)`` are
numpy arrays (or Tensors made from them) for its ``Arg`` positions, and
``case.grad_argnums`` are the positions (among those values) that are differentiable.
``case.torch(T, *tensors)`` is the same computation in torch (``T`` is the torch module),
written so that its ``grad_fn`` is torch's node for this op.

>>> from ops.cases import CASES, by_id
>>> c = by_id("mul-3x4,4")
>>> x, y = c.inputs(seed=0)
>>> c.fn(x, y).shape, c.grad_argnums
((3, 4), (0, 1))
"""

from __future__ import annotations

from typing import Any, Callable

import mpmath
import numpy as np
import scipy.special

from pullback.ops import shape as S
from pullback.ops import subscripts as SUB

from .case_types import A, Arg, Case, _c, float_outputs, outputs  # noqa: F401
from .cases_conv import CONV_OP_CASES
from .cases_fft import FFT_CASES
from .cases_linalg import (
    DECOMPOSITION_CASES,
    FACTORIZATION_CASES,
    NORM_CASES,
    PRODUCT_CASES,
    SPECTRAL_CASES,
)
from .cases_multi import MULTI_CASES
from .cases_nn import NN_OP_CASES
from .cases_scipy import SCIPY_CASES
from .cases_shapes import SHAPES_CASES

R34, R4 = A((3, 4)), A((4,))


def _scipy(name: str) -> Callable:
    """scipy.special's function ``name`` in float64, rounded to the inputs' dtype: the
    reference where torch has none (betainc) or cannot differentiate (igamma in a)."""
    return lambda *xs: getattr(scipy.special, name)(*map(np.float64, xs)).astype(xs[-1].dtype)


def _gammainc_da(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """dP/da by mpmath's numerical derivative at 30 digits."""
    with mpmath.workdps(30):
        return np.array([float(mpmath.diff(lambda s, v=float(v): mpmath.gammainc(
            s, 0, v, regularized=True), float(u))) for u, v in
            zip(a.ravel(), x.ravel())]).reshape(a.shape).astype(a.dtype)


def _betainc_d(k: int) -> Callable:
    """dI_x(a, b)/da (k = 0) or /db (k = 1) by mpmath's numerical derivative."""

    def run(a: np.ndarray, b: np.ndarray, x: np.ndarray) -> np.ndarray:
        a, b, x = np.broadcast_arrays(a, b, x)
        out = []
        with mpmath.workdps(30):
            for u, v, w in zip(a.ravel(), b.ravel(), x.ravel()):
                p = [float(u), float(v)]

                def f(s, p=p, w=float(w)):
                    q = list(p)
                    q[k] = s
                    return mpmath.betainc(q[0], q[1], 0, w, regularized=True)

                out.append(float(mpmath.diff(f, p[k])))
        return np.array(out).reshape(x.shape).astype(x.dtype)

    return run


def _tvjp(fwd: Callable, shape: tuple) -> Callable:
    """torch's backward of ``fwd`` at ``shape`` as a function of the incoming gradient:
    the node torch records for it under create_graph."""
    def run(T, g):
        x0 = T.zeros(shape, dtype=g.dtype, requires_grad=True)
        return T.autograd.grad(fwd(T, x0), x0, g, create_graph=True)[0]
    return run


def _copy_slices(T, base, src):
    b = base.clone()
    b[:, 1:3] = src
    return b


IDX = np.array([0, 2, 2])
MASK = np.array([[True, False, True, False], [False, False, True, True],
                 [True, True, False, False]])
CHAIN_SLICE = ((SUB.slice_view, {"index": (slice(None), slice(1, 3))}),)
CHAIN_SELECT_SLICE = ((SUB.select, {"index": 1}), (SUB.slice_view, {"index": slice(0, 2)}))
# a broadcast in the chain: the view sees each base element twice
CHAIN_EXPAND = ((S.expand, {"shape": (2, 3, 4)}), (SUB.slice_view, {"index": (slice(None), 1)}))

SHAPE_CASES = [
    _c("sum_to", R34, p={"shape": (1, 4)}, torch=lambda T, x: x.sum_to_size(1, 4)),
    _c("sum_to", A((2, 3, 4)), p={"shape": (3, 1)}, torch=lambda T, x: x.sum_to_size(3, 1),
       torch_name=False),  # torch: a keepdim sum then a view (ViewBackward0)
    _c("sum_to", A((3,)), p={"shape": ()}, torch=lambda T, x: x.sum(), torch_name=False),
    _c("expand", A((3, 1)), p={"shape": (2, 3, 4)}, torch=lambda T, x: x.expand(2, 3, 4)),
    _c("expand", A(()), p={"shape": (2, 3)}, torch=lambda T, x: x.expand(2, 3)),
    _c("view", R34, p={"shape": (2, 6)}, torch=lambda T, x: x.view(2, 6)),
    _c("view", A(()), p={"shape": (1,)}, torch=lambda T, x: x.view(1)),
    _c("reshape", R34, p={"shape": (12,)},
       torch=lambda T, x: T.ops.aten._unsafe_view(x, [12])),
    _c("reshape_alias", R34, p={"shape": (3, 2, 2)},  # (torch: of a column-major copy)
       torch=lambda T, x: x.mT.contiguous().mT.reshape(3, 2, 2)),
    _c("unsqueeze", R34, p={"dim": 2}, torch=lambda T, x: x.unsqueeze(2)),
    _c("unsqueeze", A(()), p={"dim": 0}, torch=lambda T, x: x.unsqueeze(0)),
    _c("squeeze", A((3, 1, 4)), p={"dim": (1,)}, torch=lambda T, x: x.squeeze(1)),
    _c("squeeze_all", A((1, 3, 1)), p={"dim": (0, 2)}, torch=lambda T, x: x.squeeze()),
    _c("squeeze_dims", A((1, 3, 1)), p={"dim": (0, 2)},
       torch=lambda T, x: x.squeeze((0, 2))),
    _c("squeeze", A(()), p={"dim": ()}, torch=lambda T, x: x.squeeze(-1)),
    _c("transpose", A((2, 3, 4)), p={"dim0": 0, "dim1": 2},
       torch=lambda T, x: x.transpose(0, 2)),
    _c("t", R34, torch=lambda T, x: x.t()),
    _c("t", A((3,)), torch=lambda T, x: x.t()),
    _c("permute", A((2, 3, 4)), p={"dims": (2, 0, 1)}, torch=lambda T, x: x.permute(2, 0, 1)),
    _c("select", R34, p={"index": 1}, torch=lambda T, x: x[1]),
    _c("select", R34, p={"index": (slice(None), 2)}, tag="col", torch=lambda T, x: x[:, 2]),
    _c("select", A((2, 3, 4)), p={"index": (Ellipsis, 1)}, torch=lambda T, x: x[..., 1]),
    _c("select", A((2, 3, 4)), p={"index": (slice(None), 2)}, tag="method",
       torch=lambda T, x: x.select(1, -1)),
    _c("slice", R34, p={"index": (slice(None), slice(1, 3))}, torch=lambda T, x: x[:, 1:3]),
    _c("slice", A((5,)), p={"index": slice(None, None, 2)}, torch=lambda T, x: x[::2]),
    _c("slice", R34, p={"index": (0, slice(1, None))}, tag="row", torch=lambda T, x: x[0, 1:]),
    _c("index_unsqueeze", R34, p={"index": (slice(None), None)},
       torch=lambda T, x: x[:, None]),
    _c("alias", R34, p={"index": (Ellipsis,)}, torch=lambda T, x: x[...]),
    _c("select_backward", R4, p={"shape": (3, 4), "index": 1},
       torch=_tvjp(lambda T, x: x[1], (3, 4))),
    _c("slice_backward", A((3, 2)), p={"shape": (3, 4), "index": (slice(None), slice(1, 3))},
       torch=_tvjp(lambda T, x: x[:, 1:3], (3, 4))),
    _c("index_unsqueeze_backward", A((3, 1, 4)), p={"shape": (3, 4),
                                                    "index": (slice(None), None)},
       torch=_tvjp(lambda T, x: x[:, None], (3, 4))),
    _c("alias_backward", R34, p={"shape": (3, 4), "index": (Ellipsis,)},
       torch=lambda T, g: g.clone(), torch_name=False),  # torch's alias backward is no node
    _c("index", A((4, 3)), p={"index": IDX}, torch=lambda T, x: x[T.tensor(IDX)]),
    _c("index", R34, p={"index": MASK}, tag="mask", torch=lambda T, x: x[T.tensor(MASK)]),
    _c("index", R34, p={"index": (np.array([0, 2]), np.array([3, 3]))}, tag="pairs",
       torch=lambda T, x: x[T.tensor([0, 2]), T.tensor([3, 3])]),
    _c("index_backward", A((3, 3)), p={"shape": (4, 3), "index": IDX},
       torch=_tvjp(lambda T, x: x[T.tensor(IDX)], (4, 3))),
    _c("view_chain", R34, p={"chain": CHAIN_SLICE},
       torch=lambda T, x: T.as_strided(x, (3, 2), (4, 1), 1)),
    _c("view_chain", R34, p={"chain": CHAIN_SELECT_SLICE}, tag="select.slice",
       torch=lambda T, x: T.as_strided(x, (2,), (1,), 4)),
    _c("embed", A((3, 2)), p={"shape": (3, 4), "chain": CHAIN_SLICE},
       torch=lambda T, g: T.as_strided_scatter(T.zeros(3, 4, dtype=g.dtype), g,
                                               (3, 2), (4, 1), 1)),
    _c("view_chain", R34, p={"chain": CHAIN_EXPAND}, tag="expand", torch_name=False,
       torch=lambda T, x: x.expand(2, 3, 4)[:, 1]),
    _c("embed", A((2, 4)), p={"shape": (3, 4), "chain": CHAIN_EXPAND}, tag="expand",
       torch=_tvjp(lambda T, x: x.expand(2, 3, 4)[:, 1], (3, 4)), torch_name=False),
    _c("view_scatter", R34, A((3, 2)), p={"chain": CHAIN_SLICE}, torch=_copy_slices),
    _c("view_scatter", R34, 0.0, p={"chain": CHAIN_SLICE}, torch=lambda T, b: _copy_slices(
        T, b, 0.0)),
    _c("index_put", A((4, 3)), A((2, 3)), p={"index": np.array([0, 2])},
       torch=lambda T, x, v: x.index_put((T.tensor([0, 2]),), v)),
    _c("index_put", A((4, 3)), A((3,)), p={"index": np.array([3, 1])},
       torch=lambda T, x, v: x.index_put((T.tensor([3, 1]),), v)),
    _c("index_put", A((4, 3)), 0.5, p={"index": np.array([1])},
       torch=lambda T, x: x.index_put((T.tensor([1]),), T.tensor(0.5, dtype=x.dtype))),
    _c("copy", R34, R4, torch=lambda T, d, s: d.clone().copy_(s)),
    _c("fill", R34, p={"value": 2.5}, torch=lambda T, x: x.clone().fill_(2.5)),
    _c("zero", R34, torch=lambda T, x: x.clone().zero_()),
]

LINALG_CASES = [
    _c("mm", R34, A((4, 5)), torch=lambda T, x, y: T.mm(x, y)),
    _c("mv", R34, R4, torch=lambda T, x, v: T.mv(x, v)),
    _c("dot", R4, R4, torch=lambda T, x, y: T.dot(x, y)),
    _c("bmm", A((2, 3, 4)), A((2, 4, 5)), torch=lambda T, x, y: T.bmm(x, y)),
    # broadcast batches: torch's matmul folds them into mm and a view
    _c("bmm", A((2, 3, 4)), A((4, 5)), torch=lambda T, x, y: x @ y, torch_name=False),
    _c("bmm", A((2, 1, 3, 4)), A((3, 4, 2)), torch=lambda T, x, y: x @ y, torch_name=False),
    _c("addmm", A((5,)), R34, A((4, 5)), torch=lambda T, b, x, w: T.addmm(b, x, w)),
    _c("addmm", A((3, 5)), R34, A((4, 5)), torch=lambda T, b, x, w: T.addmm(b, x, w)),
]

_BIN = [(R34, R4), (A((2, 1, 3)), A((4, 1))), (A(()), A((3,)))]
_KINK = [-1.0, 0.0, 0.5, 2.0]
NAN = float("nan")
# torch's NaN rules: the gradient passes a NaN of relu, goes to the NaN of a max/min (to
# the first along a dim) and to both sides of maximum/minimum where either is NaN
_NAN_ROWS = [[1.0, NAN, 3.0], [NAN, NAN, 0.0], [2.0, 2.0, 1.0]]
_NAN_X, _NAN_Y = [NAN, 1.0, NAN, 1.0, 2.0], [1.0, NAN, NAN, 1.0, 1.0]
_V34 = [[0.5, -1.25, 2.0, 0.125], [1.5, 0.25, -0.75, 1.0], [-0.25, 0.875, 0.375, 1.25]]
_V234 = (np.arange(24.0).reshape(2, 3, 4) * 7 % 24 / 4 - 3).tolist()  # no ties


def _extreme(op: str, values: Any, dim: int | None, keepdim: bool, **kw: Any) -> Case:
    """A max_dim/min_dim case on these values against torch's max(dim)/min(dim): both
    outputs, the values and the indices (the first extreme, a NaN first)."""
    name, d = op.removesuffix("_dim"), 0 if dim is None else dim
    return _c(op, A(values=values), p={"dim": dim, "keepdim": keepdim},
              torch=lambda T, x: getattr(x, name)(d, keepdim=keepdim), **kw)


def _binary(op: str, tfn: Callable, **kw: Any) -> list:
    second = kw.pop("second", None)
    cases = []
    for x, y in _BIN:
        if second:
            y = A(y.shape, second)
        cases.append(_c(op, x, y, torch=tfn, **kw))
    return cases


MATH_CASES = [
    *_binary("add", lambda T, x, y: T.add(x, y)),
    _c("add", R34, 2.0, torch=lambda T, x: x + 2.0),
    *_binary("sub", lambda T, x, y: T.sub(x, y)),
    _c("sub", R34, 2.0, torch=lambda T, x: x - 2.0),
    _c("rsub", R34, 2.0, torch=lambda T, x: 2.0 - x),
    _c("rsub", R34, R4, torch=lambda T, x, y: T.rsub(x, y), torch_name=False),  # RsubBackward0
    *_binary("mul", lambda T, x, y: T.mul(x, y)),
    _c("mul", R34, 2.0, torch=lambda T, x: x * 2.0),
    *_binary("div", lambda T, x, y: T.div(x, y), second="away"),
    _c("div", R34, 2.0, torch=lambda T, x: x / 2.0),
    _c("reciprocal", A((3, 4), "away"), torch=lambda T, x: x.reciprocal()),
    _c("reciprocal", A(()), torch=lambda T, x: x.reciprocal()),
    _c("neg", R34, torch=lambda T, x: -x),
    _c("neg", A(()), torch=lambda T, x: -x),
    _c("pow_scalar", R34, p={"exponent": 2.0}, torch=lambda T, x: x ** 2.0),
    _c("pow_scalar", R34, p={"exponent": 3}, torch=lambda T, x: x ** 3),
    _c("pow_scalar", A((3, 4), "pos"), p={"exponent": 0.5}, torch=lambda T, x: x ** 0.5),
    _c("pow_scalar", A((3, 4), "pos"), p={"exponent": -1.5}, torch=lambda T, x: x ** -1.5),
    _c("pow_scalar", R34, p={"exponent": 0}, torch=lambda T, x: x ** 0),
    _c("pow_scalar", A(values=[0.0, 1.0]), p={"exponent": 2.0}, torch=lambda T, x: x ** 2.0,
       fd=False),
    _c("pow_scalar", A(values=[0.0, 1.0]), p={"exponent": 0.5}, torch=lambda T, x: x ** 0.5,
       fd=False),
    _c("pow_scalar", A(values=[0.0, -1.0, NAN]), p={"exponent": 0},
       torch=lambda T, x: x ** 0, fd=False),
    _c("pow_scalar", A(values=[0.0, 2.0]), p={"exponent": -1.0}, torch=lambda T, x: x ** -1.0,
       fd=False),
    _c("pow", A((3, 4), "pos"), R4, torch=lambda T, x, y: T.pow(x, y)),
    _c("pow", A((), "pos"), A((3,)), torch=lambda T, x, y: T.pow(x, y)),
    # at x = 0: no y-gradient where y >= 0 (0 ** 0 included), no x-gradient where y == 0
    _c("pow", A(values=[0.0, 0.0, 0.0, 0.0, 0.0, 1.0, -1.0, 2.0]),
       A(values=[2.0, 0.0, -1.0, 0.5, -0.5, 0.0, 2.0, 0.5]),
       torch=lambda T, x, y: T.pow(x, y), fd=False),
    _c("pow", A(values=[0.0, 0.0, 3.0]), A(()), tag="zero-y", torch=lambda T, x, y: T.pow(x, y),
       fd=False),
    _c("rpow_scalar", R34, p={"base": 2.0}, torch=lambda T, x: 2.0 ** x),
    _c("rpow_scalar", A(()), p={"base": 0.5}, torch=lambda T, x: 0.5 ** x),
    *[_c("rpow_scalar", A(values=[-1.0, 0.0, 0.5, 2.0]), p={"base": b},
         torch=lambda T, x, b=b: b ** x, fd=False) for b in (0.0, -0.0, 1.0, -2.0)],
    _c("exp", R34, torch=lambda T, x: x.exp()),
    _c("exp", A(()), torch=lambda T, x: x.exp()),
    _c("log", A((3, 4), "pos"), torch=lambda T, x: x.log()),
    _c("log", A(values=[0.0, 1.0]), torch=lambda T, x: x.log(), fd=False),
    _c("sqrt", A((3, 4), "pos"), torch=lambda T, x: x.sqrt()),
    _c("sqrt", A(values=[0.0, 4.0]), torch=lambda T, x: x.sqrt(), fd=False),
    _c("sin", R34, torch=lambda T, x: x.sin()),
    _c("cos", R34, torch=lambda T, x: x.cos()),
    _c("tanh", R34, torch=lambda T, x: x.tanh()),
    _c("tanh", A(()), torch=lambda T, x: x.tanh()),
    _c("abs", A((3, 4), "away"), torch=lambda T, x: x.abs()),
    _c("abs", A(values=_KINK), torch=lambda T, x: x.abs(), fd=False),
    _c("sigmoid", R34, torch=lambda T, x: x.sigmoid()),
    _c("relu", A((3, 4), "away"), torch=lambda T, x: x.relu()),
    _c("relu", A(values=_KINK), torch=lambda T, x: x.relu(), fd=False),
    _c("relu", A(values=[NAN, -1.0, 0.0, 1.0]), tag="nan", torch=lambda T, x: x.relu(),
       fd=False),
    _c("sign", A((3, 4), "away"), torch=lambda T, x: x.sign()),
    _c("sign", A(values=_KINK), torch=lambda T, x: x.sign(), fd=False),
    # complex: z / |z| (torch's sgn, SgnBackward0) has a gradient, which abs's second
    # derivative reads
    _c("sgn", A((3, 4), "complex"), tag="complex", torch=lambda T, x: x.sgn(),
       second_order=False),
    _c("abs", A((3, 4), "complex"), tag="complex", torch=lambda T, x: x.abs(),
       second_order=False),  # (the harness's second order is real; see
    # tests/compiler/test_forward_first_class.py: the Hessian through |fft(x)|**2)
    # torch's sign (and so abs's gradient) is 0 at NaN
    _c("sign", A(values=[NAN, -1.0, 0.5]), tag="nan", torch=lambda T, x: x.sign(), fd=False),
    _c("abs", A(values=[NAN, -1.0, 0.5]), tag="nan", torch=lambda T, x: x.abs(), fd=False),
    _c("clamp", A((3, 4), "grid"), p={"min": -0.5, "max": 0.5},
       torch=lambda T, x: x.clamp(-0.5, 0.5)),
    _c("clamp", A((3, 4), "grid"), p={"min": -0.5, "max": None}, tag="min",
       torch=lambda T, x: x.clamp(min=-0.5)),
    _c("clamp", A((3, 4), "grid"), p={"min": None, "max": 0.5}, tag="max",
       torch=lambda T, x: x.clamp(max=0.5)),
    _c("clamp", A(values=[-1.0, -0.5, 0.0, 0.5, 1.0]), p={"min": -0.5, "max": 0.5},
       torch=lambda T, x: x.clamp(-0.5, 0.5), fd=False),
    _c("clamp", A(values=[NAN, 1.0, 0.0]), p={"min": -0.5, "max": 0.5}, tag="nan",
       torch=lambda T, x: x.clamp(-0.5, 0.5), fd=False),
    _c("clamp_min", A((3, 4), "grid"), p={"min": -0.5}, torch=lambda T, x: x.clamp_min(-0.5)),
    _c("clamp_max", A((3, 4), "grid"), p={"max": 0.5}, torch=lambda T, x: T.clamp_max(x, 0.5)),
    # on the bound: g passes (x >= min); a NaN: NaN, gradient 0
    _c("clamp_min", A(values=[NAN, -0.5, 0.0, -1.0]), p={"min": -0.5}, tag="edges",
       fd=False, torch=lambda T, x: x.clamp_min(-0.5)),
    _c("clamp_max", A(values=[NAN, 0.5, 0.0, 1.0]), p={"max": 0.5}, tag="edges",
       fd=False, torch=lambda T, x: x.clamp_max(0.5)),
    _c("hardshrink", A((3, 4), "grid"), p={"lambd": 0.5}, torch=lambda T, x: x.hardshrink()),
    _c("softshrink", A((3, 4), "grid"), p={"lambd": 0.25},
       torch=lambda T, x: T.nn.functional.softshrink(x, 0.25)),
    # on the bounds: 0 and gradient 0; a NaN: NaN, its gradient passes
    _c("hardshrink", A(values=[NAN, -0.5, 0.5, 1.0]), p={"lambd": 0.5}, tag="edges",
       fd=False, torch=lambda T, x: T.hardshrink(x, 0.5)),
    _c("softshrink", A(values=[NAN, -0.5, 0.5, -1.0]), p={"lambd": 0.5}, tag="edges",
       fd=False, torch=lambda T, x: T.nn.functional.softshrink(x, 0.5)),
    _c("where", A((3, 4), "bool"), R34, R34, torch=lambda T, c, x, y: T.where(c, x, y)),
    _c("where", A((3, 1), "bool"), R4, A(()), torch=lambda T, c, x, y: T.where(c, x, y)),
    _c("where", A((3, 4), "bool"), R34, 0.0, torch=lambda T, c, x: T.where(c, x, 0.0)),
    _c("cast", R34, p={"dtype": np.dtype(np.float64)}, torch=lambda T, x: x.to(T.float64)),
    _c("cast", A(()), p={"dtype": np.dtype(np.float64)}, torch=lambda T, x: x.to(T.float64)),
    _c("clone", R34, torch=lambda T, x: x.clone()),
    _c("clone_contiguous", R34, torch=lambda T, x: x.mT.contiguous().mT.contiguous()),
    *_binary("maximum", lambda T, x, y: T.maximum(x, y)),
    _c("maximum", A(values=[1.0, 1.0, 0.0]), A(values=[1.0, 0.0, 1.0]), fd=False,
       torch=lambda T, x, y: T.maximum(x, y)),
    *_binary("minimum", lambda T, x, y: T.minimum(x, y)),
    _c("minimum", A(values=[1.0, 1.0, 0.0]), A(values=[1.0, 0.0, 1.0]), fd=False,
       torch=lambda T, x, y: T.minimum(x, y)),
    _c("maximum", A(values=_NAN_X), A(values=_NAN_Y), fd=False,
       torch=lambda T, x, y: T.maximum(x, y)),
    _c("minimum", A(values=_NAN_X), A(values=_NAN_Y), fd=False,
       torch=lambda T, x, y: T.minimum(x, y)),
]

REDUCTION_CASES = [
    _c("sum_all", R34, torch=lambda T, x: x.sum()),
    _c("sum_all", A(()), torch=lambda T, x: x.sum()),
    _c("sum_dim", R34, p={"dim": (1,), "keepdim": False}, torch=lambda T, x: x.sum(1)),
    _c("sum_dim", A((2, 3, 4)), p={"dim": (0, 2), "keepdim": True},
       torch=lambda T, x: x.sum((0, 2), keepdim=True)),
    _c("mean_all", R34, torch=lambda T, x: x.mean()),
    _c("mean_all", A(()), torch=lambda T, x: x.mean()),
    _c("mean_dim", R34, p={"dim": (0,), "keepdim": False}, torch=lambda T, x: x.mean(0)),
    _c("mean_dim", A((2, 3, 4)), p={"dim": (0, 2), "keepdim": True},
       torch=lambda T, x: x.mean((0, 2), keepdim=True)),
    _c("max_all", R34, torch=lambda T, x: x.max()),
    _c("max_all", A(values=[1.0, 1.0, 0.0]), torch=lambda T, x: x.max(), fd=False),
    _c("min_all", R34, torch=lambda T, x: x.min()),
    _c("min_all", A(values=[0.0, 1.0, 0.0]), torch=lambda T, x: x.min(), fd=False),
    _extreme("max_dim", _V34, 1, False),
    _extreme("max_dim", _V234, 0, True),
    _extreme("max_dim", [[1.0, 1.0, 0.0], [2.0, 3.0, 3.0]], 1, False, tag="ties", fd=False),
    _extreme("min_dim", _V34, 0, False),
    _extreme("min_dim", [[1.0, 0.0, 0.0], [2.0, 3.0, 2.0]], 1, True, tag="ties", fd=False),
    # NaN
    _c("max_all", A(values=[NAN, 1.0, 2.0]), tag="nan", torch=lambda T, x: x.max(), fd=False),
    _c("max_all", A(values=[1.0, NAN, NAN, 2.0]), tag="nan", torch=lambda T, x: x.max(),
       fd=False),
    _c("min_all", A(values=[1.0, NAN, 2.0]), tag="nan", torch=lambda T, x: x.min(), fd=False),
    _extreme("max_dim", _NAN_ROWS, 1, False, tag="nan", fd=False),
    _extreme("min_dim", _NAN_ROWS, 0, False, tag="nan", fd=False),
    # 0-d inputs (dim 0 and -1 name no axis: a sum over none, a max over all, None)
    _c("sum_dim", A(()), p={"dim": (), "keepdim": False}, torch=lambda T, x: x.sum(0)),
    _c("mean_dim", A(()), p={"dim": (), "keepdim": True},
       torch=lambda T, x: x.mean(-1, keepdim=True)),
    _extreme("max_dim", 0.75, None, False),
    _extreme("min_dim", -0.5, None, True),
    # the softmax rules' sums: over one dim, or every axis
    _c("sum_dim", R34, p={"dim": 1, "keepdim": True}, torch=lambda T, x: x.sum(1, True)),
    _c("sum_dim", R34, p={"dim": None, "keepdim": True},
       torch=lambda T, x: x.sum((0, 1), keepdim=True)),
    # empty inputs: a sum is 0 and a mean NaN over no elements; empty gradients
    _c("sum_all", A((0, 3)), torch=lambda T, x: x.sum()),
    _c("sum_dim", A((0, 3)), p={"dim": (0,), "keepdim": False}, torch=lambda T, x: x.sum(0)),
    _c("mean_all", A((0,)), torch=lambda T, x: x.mean()),
    _c("mean_all", A((0, 3)), torch=lambda T, x: x.mean()),
    _c("mean_dim", A((0, 3)), p={"dim": (0,), "keepdim": True},
       torch=lambda T, x: x.mean(0, keepdim=True)),
    _c("mean_dim", A((2, 0, 3)), p={"dim": (1,), "keepdim": False},
       torch=lambda T, x: x.mean(1)),
    _c("mean_dim", A((2, 0, 3)), p={"dim": (2,), "keepdim": False},
       torch=lambda T, x: x.mean(2)),
]


def _losses(op: str, x: Arg, y: Arg, fname: str) -> list:
    return [_c(op, x, y, p={"reduction": r},
               torch=lambda T, a, b, r=r: getattr(T.nn.functional, fname)(a, b, reduction=r))
            for r in ("mean", "sum", "none")]


NN_CASES = [
    _c("softmax", R34, p={"dim": 1}, torch=lambda T, x: T.softmax(x, 1)),
    _c("softmax", A((2, 3, 4)), p={"dim": 0}, torch=lambda T, x: T.softmax(x, 0)),
    _c("log_softmax", R34, p={"dim": 1}, torch=lambda T, x: T.log_softmax(x, 1)),
    _c("log_softmax", A((2, 3, 4)), p={"dim": 2}, torch=lambda T, x: T.log_softmax(x, 2)),
    _c("softmax", A(()), p={"dim": None}, torch=lambda T, x: T.softmax(x, 0)),
    _c("log_softmax", A(()), p={"dim": None}, torch=lambda T, x: T.log_softmax(x, -1)),
    _c("softmax", A((0, 3)), p={"dim": 0}, torch=lambda T, x: T.softmax(x, 0)),
    _c("log_softmax", A((2, 0, 3)), p={"dim": 1}, torch=lambda T, x: T.log_softmax(x, 1)),
    *_losses("binary_cross_entropy_with_logits", R34, A((3, 4), "unit"),
             "binary_cross_entropy_with_logits"),
    *_losses("binary_cross_entropy", A((3, 4), "unit"), A((3, 4), "unit", grad=False),
             "binary_cross_entropy"),
    # weight (broadcast over rows) and pos_weight: torch differentiates input and target only
    *[_c("binary_cross_entropy_with_logits_weighted", R34, A((3, 4), "unit"),
         A((4,), "pos", grad=False), A((3, 4), "pos", grad=False), p={"reduction": r},
         torch=lambda T, x, t, w, pw, r=r: T.nn.functional.binary_cross_entropy_with_logits(
             x, t, weight=w, pos_weight=pw, reduction=r)) for r in ("mean", "sum", "none")],
    *[_c("binary_cross_entropy_weighted", A((3, 4), "unit"), A((3, 4), "unit", grad=False),
         A((4,), "pos", grad=False), p={"reduction": r},
         torch=lambda T, x, t, w, r=r: T.nn.functional.binary_cross_entropy(
             x, t, weight=w, reduction=r)) for r in ("mean", "sum", "none")],
    _c("clamp_min_eps", A((3, 4), "pos"), torch=lambda T, x: T.clamp_min(x, 1e-12)),
    *_losses("mse_loss", R34, R34, "mse_loss"),
    _c("complex", R34, A((4,)), torch_name=False,
       torch=lambda T, x, y: T.complex(x, y.expand(3, 4))),
    _c("imag", R34, torch_name=False,
       torch=lambda T, x: T.complex(x, T.zeros_like(x)).imag),
    _c("take_rows", A((5, 3)), A((5,), "int"),
       torch=lambda T, x, t: x[T.arange(5), t]),
    _c("put_rows", A((5,)), A((5,), "int"), p={"num_classes": 3}, torch_name=False,
       torch=lambda T, v, t: T.zeros(5, 3, dtype=v.dtype).index_put((T.arange(5), t), v)),
]

_TIES34, _TIES4 = A((3, 4), "ties"), A((4,), "ties")
FORWARD_ONLY_CASES = [
    _c("zeros_like", R34, torch=lambda T, x: T.zeros_like(x)),
    _c("conj", R34, torch_name=False, torch=lambda T, x: x.conj()),
    _c("real", R34, torch_name=False, torch=lambda T, x: x.real),
    _c("detach", R34, torch=lambda T, x: x.detach()),
    *[_c(op, _TIES34, _TIES4, torch=lambda T, x, y, op=op: getattr(T, op)(x, y))
      for op in ("gt", "ge", "lt", "le", "eq", "ne")],
    _c("gt", R34, 0.5, torch=lambda T, x: x > 0.5),
    _c("logical_not", A((3, 4), "bool"), torch=lambda T, x: T.logical_not(x)),
    _c("logical_and", A((3, 4), "bool"), A((4,), "bool"),
       torch=lambda T, x, y: T.logical_and(x, y)),
    _c("logical_or", A((3, 4), "bool"), A((4,), "bool"),
       torch=lambda T, x, y: T.logical_or(x, y)),
    _c("in_range", _TIES34, p={"min": -0.5, "max": 0.5},
       torch=lambda T, x: (x >= -0.5) & (x <= 0.5)),
    _c("in_range", _TIES34, p={"min": None, "max": 0.5}, tag="max",
       torch=lambda T, x: x <= 0.5),
    _c("isnan", A(values=[NAN, 1.0, float("inf")]), torch=lambda T, x: x.isnan()),
    _c("argmax", R34, p={"dim": 1, "keepdim": False}, torch=lambda T, x: x.argmax(1)),
    _c("argmin", R34, p={"dim": 0, "keepdim": True}, torch=lambda T, x: x.argmin(0, True)),
    _c("argmax", R34, p={"dim": None, "keepdim": True},
       torch=lambda T, x: x.argmax(keepdim=True)),
    _c("argmax", A(values=_NAN_ROWS), p={"dim": 1, "keepdim": False},
       torch=lambda T, x: x.argmax(1)),
    _c("argmin", A(values=_NAN_ROWS), p={"dim": 1, "keepdim": False},
       torch=lambda T, x: x.argmin(1)),
    _c("argmax", A(()), p={"dim": None, "keepdim": False}, torch=lambda T, x: x.argmax(0)),
    _c("index_mask", A(values=0, domain="int"), p={"shape": (), "dim": None, "keepdim": False},
       torch=lambda T, i: T.ones((), dtype=T.bool)),
    _c("index_mask", A(values=[[5]], domain="int"), p={"shape": (3, 3), "dim": None,
                                                      "keepdim": True},
       torch=lambda T, i: T.nn.functional.one_hot(i.reshape(()), 9).reshape(3, 3).bool()),
    _c("index_mask", A((3,), "int", high=4), p={"shape": (3, 4), "dim": 1, "keepdim": False},
       torch=lambda T, i: T.nn.functional.one_hot(i, 4).bool()),
    _c("index_mask", A((1, 4), "int"), p={"shape": (3, 4), "dim": 0, "keepdim": True},
       torch=lambda T, i: T.nn.functional.one_hot(i[0], 3).T.bool()),
    _c("one_hot", A((5,), "int"), p={"num_classes": 3, "dtype": np.dtype(np.float32)},
       torch=lambda T, t: T.nn.functional.one_hot(t, 3).float()),
]

F32 = np.dtype(np.float32)
RANDOM_CASES = [
    _c("uniform", p={"shape": (3, 4), "dtype": F32}, rng_seed=7,
       reference=lambda: np.random.default_rng(7).random((3, 4)).astype(F32)),
    _c("normal", p={"shape": (2, 3), "dtype": F32}, rng_seed=7,
       reference=lambda: np.random.default_rng(7).standard_normal((2, 3)).astype(F32)),
    _c("integers", p={"low": 2, "high": 9, "shape": (5,), "dtype": np.dtype(np.int64)},
       rng_seed=7, reference=lambda: np.random.default_rng(7).integers(2, 9, size=(5,))),
]

INF = float("inf")
_UNIT34, _POS34, _AWAY34, _GRID34 = A((3, 4), "unit"), A((3, 4), "pos"), A((3, 4), "away"), \
    A((3, 4), "grid")
_EDGES = [NAN, INF, -INF, 1.0, -0.0, 0.0, -2.5]


def _unary(op: str, x: Arg, method: str | None = None, **kw: Any) -> Case:
    name = method or op
    return _c(op, x, torch=lambda T, t: getattr(t, name)(), **kw)


# kinks, ties, zeros and NaN: the gradients are torch's (each note says which rule)
POINTWISE_CASES = [
    # numpy's cbrt (torch has none: its sign(x) |x|^(1/3) as the oracle)
    _c("cbrt", A((3, 4), "away"), torch_name=False,
       torch=lambda T, x: x.sign() * x.abs() ** (1 / 3)),
    # numpy's spacing: a step function of x, zero gradient (torch's nextafter has none)
    _c("spacing", A(values=[[1.5, -3.0, 0.75], [5.0, -0.3, 12.0]]), torch_name=False,
       torch=lambda T, x: T.nextafter(x.detach(), x.detach().sign() * float("inf"))
       - x.detach() + 0 * x),
    # numpy's nextafter: torch's gradient (one in x, zero in the direction y)
    _c("nextafter", R34, A(values=[0.0, 9.0, -9.0, 1.0]), torch=lambda T, x, y: T.nextafter(x, y)),
    _unary("tan", _UNIT34), _unary("tan", A(values=[-1.0, 0.5, 1.2, 0.0])),
    _unary("asin", _UNIT34), _unary("acos", _UNIT34), _unary("atan", R34),
    _unary("sinh", R34), _unary("cosh", R34), _unary("asinh", R34),
    _unary("acosh", A(values=[[1.5, 2.0, 3.0], [1.25, 4.0, 1.1]])), _unary("atanh", _UNIT34),
    # at +-1: inf gradients (1 / sqrt(0)); outside: NaN
    _unary("asin", A(values=[-1.0, 1.0, 1.5, NAN]), tag="edges", fd=False),
    _unary("acos", A(values=[-1.0, 1.0, 1.5]), tag="edges", fd=False),
    _unary("atanh", A(values=[-1.0, 1.0, 0.0]), tag="edges", fd=False),
    _unary("acosh", A(values=[1.0, 0.5]), tag="edges", fd=False),
    _unary("deg2rad", R34), _unary("rad2deg", R34), _unary("rsqrt", _POS34),
    _unary("rsqrt", A(values=[0.0, -1.0, INF]), tag="edges", fd=False),
    _unary("sinc", R34), _unary("sinc", A(())),
    # sinc's gradient is 0 at 0 (torch's masked_fill), also in second order
    _unary("sinc", A(values=[0.0, 1.0, -2.0, 0.5]), tag="zero", fd=False),
    _unary("exp2", R34), _unary("expm1", R34), _unary("expm1", A(())),
    _unary("log2", _POS34), _unary("log10", _POS34), _unary("log1p", _UNIT34),
    _unary("log2", A(values=[0.0, -1.0]), tag="edges", fd=False),
    _unary("log1p", A(values=[-1.0, -2.0, 0.0]), tag="edges", fd=False),
    _c("logit", _UNIT34, p={"eps": None}, torch=lambda T, x: T.logit(x)),
    # no eps: inf at 0 and 1, NaN outside [0, 1]; eps: 0 outside [eps, 1 - eps], its
    # ends included in the gradient
    _c("logit", A(values=[0.0, 1.0, -0.1, 1.2, NAN, 0.5]), p={"eps": None}, tag="edges",
       torch=lambda T, x: T.logit(x), fd=False),
    _c("logit", A(values=[0.0, 1.0, 0.25, 0.75, 0.5, NAN, 0.1]), p={"eps": 0.25},
       torch=lambda T, x: T.logit(x, 0.25), fd=False),
    # angle of a real number: 0 or pi (0 at -0.0, as torch), a zero gradient
    _unary("angle", R34),
    _unary("angle", A(values=[-1.0, -0.0, 0.0, 2.0, NAN]), tag="edges", fd=False),
    # nan_to_num: the gradient times isfinite(x)
    _c("nan_to_num", R34, p={"nan": 0.0, "posinf": None, "neginf": None},
       torch=lambda T, x: T.nan_to_num(x)),
    _c("nan_to_num", A(values=[NAN, INF, -INF, 1.0]), p={"nan": 1.0, "posinf": 2.0,
                                                        "neginf": -2.0},
       torch=lambda T, x: T.nan_to_num(x, 1.0, 2.0, -2.0), fd=False),
    # rounding: zero gradients (the grid has no ties and no integers)
    _unary("floor", _GRID34), _unary("ceil", _GRID34), _unary("trunc", _GRID34),
    _unary("round", _GRID34), _unary("frac", _GRID34), _unary("frac", A(())),
    _unary("round", A(values=[0.5, 1.5, 2.5, -0.5, -1.5]), tag="half-even", fd=False),
    _unary("floor", A(values=[NAN, INF, -0.0, 2.0]), tag="edges", fd=False),
    _c("round_decimals", _GRID34, p={"decimals": 1},
       torch=lambda T, x: T.round(x, decimals=1)),
    _c("round_decimals", A(values=[1234.5, -15.0, 0.3]), p={"decimals": -1},
       torch=lambda T, x: T.round(x, decimals=-1), fd=False),
    *_binary("atan2", lambda T, x, y: T.atan2(x, y)),
    # at (0, 0) both gradients are 0 (torch masks the reciprocal of x^2 + y^2)
    _c("atan2", A(values=[0.0, 1.0, 0.0]), A(values=[0.0, 0.0, -1.0]), tag="zero",
       torch=lambda T, x, y: T.atan2(x, y), fd=False),
    *_binary("hypot", lambda T, x, y: T.hypot(x, y)),
    # NaN at (0, 0) (0 / 0, as torch)
    _c("hypot", A(values=[0.0, 3.0]), A(values=[0.0, 4.0]), tag="zero",
       torch=lambda T, x, y: T.hypot(x, y), fd=False),
    *_binary("logaddexp", lambda T, x, y: T.logaddexp(x, y)),
    _c("logaddexp", A(values=[-INF, INF, 1.0]), A(values=[-INF, 1.0, INF]), tag="inf",
       torch=lambda T, x, y: T.logaddexp(x, y), fd=False),
    *_binary("logaddexp2", lambda T, x, y: T.logaddexp2(x, y)),
    *_binary("fmax", lambda T, x, y: T.fmax(x, y)),
    *_binary("fmin", lambda T, x, y: T.fmin(x, y)),
    # ties: all to x (not split, unlike maximum); a NaN side: all to the other
    _c("fmax", A(values=[1.0, 1.0, NAN, 2.0, NAN]), A(values=[1.0, 0.0, 1.0, NAN, NAN]),
       torch=lambda T, x, y: T.fmax(x, y), fd=False),
    _c("fmin", A(values=[1.0, 1.0, NAN, 2.0, NAN]), A(values=[1.0, 0.0, 1.0, NAN, NAN]),
       torch=lambda T, x, y: T.fmin(x, y), fd=False),
    *_binary("remainder", lambda T, x, y: T.remainder(x, y), second="away"),
    *_binary("fmod", lambda T, x, y: T.fmod(x, y), second="away"),
    # y's gradient is -g floor(x / y) (trunc for fmod); at y = 0 -inf, the value NaN
    _c("remainder", A(values=[5.5, -5.5, 5.5, 1.0]), A(values=[2.0, 2.0, -2.0, 0.0]),
       tag="edges", torch=lambda T, x, y: T.remainder(x, y), fd=False),
    _c("fmod", A(values=[5.5, -5.5, 5.5, 1.0]), A(values=[2.0, 2.0, -2.0, 0.0]),
       tag="edges", torch=lambda T, x, y: T.fmod(x, y), fd=False),
    # a Python number as y: torch's node is RemainderBackward0 (FmodBackward0) there
    _c("remainder", R34, 1.5, torch=lambda T, x: T.remainder(x, 1.5), torch_name=False),
    _c("fmod", R34, -1.5, torch=lambda T, x: T.fmod(x, -1.5), torch_name=False),
    *_binary("copysign", lambda T, x, y: T.copysign(x, y), second="away"),
    # x's gradient is out / x, 0 at x = 0; y's is 0
    _c("copysign", A(values=[0.0, -0.0, 2.0, -3.0, 1.0]), A(values=[-1.0, 1.0, -0.0, 0.0, NAN]),
       tag="edges", torch=lambda T, x, y: T.copysign(x, y), fd=False),
    _c("xlogy", R34, A((3, 4), "pos"), torch=lambda T, x, y: T.xlogy(x, y)),
    _c("xlogy", A(()), A((3,), "pos"), torch=lambda T, x, y: T.xlogy(x, y)),
    # x = 0: the value 0 (NaN for a NaN y); x's gradient 0 where y <= 0 too
    _c("xlogy", A(values=[0.0, 0.0, 0.0, 1.0, 2.0]), A(values=[0.0, -1.0, NAN, 0.0, 3.0]),
       tag="edges", torch=lambda T, x, y: T.xlogy(x, y), fd=False),
    _c("lerp", R34, R34, _UNIT34, torch=lambda T, x, e, w: T.lerp(x, e, w)),
    _c("lerp", A((3, 1)), R4, A((4,), "unit"), torch=lambda T, x, e, w: T.lerp(x, e, w)),
    _c("lerp_scalar", R34, R34, p={"weight": 0.3}, torch=lambda T, x, e: T.lerp(x, e, 0.3)),
    _c("lerp_scalar", R34, R4, p={"weight": 0.75}, torch=lambda T, x, e: T.lerp(x, e, 0.75)),
    _c("addcmul", R34, R34, R4, p={"value": 1}, torch=lambda T, x, a, b: T.addcmul(x, a, b)),
    _c("addcmul", R4, A((3, 1)), R4, p={"value": -0.5},
       torch=lambda T, x, a, b: T.addcmul(x, a, b, value=-0.5)),
    _c("addcdiv", R34, R34, _AWAY34, p={"value": 1}, torch=lambda T, x, a, b: T.addcdiv(x, a, b)),
    _c("addcdiv", A(()), R4, A((3, 1), "away"), p={"value": 2.0},
       torch=lambda T, x, a, b: T.addcdiv(x, a, b, value=2.0)),
    # special functions
    _unary("erf", R34), _unary("erfc", R34), _unary("erfinv", _UNIT34),
    _unary("erf", A(values=[INF, -INF, NAN, 0.0]), tag="edges", fd=False),
    _unary("erfinv", A(values=[1.0, -1.0, 0.0, 1.5, NAN]), tag="edges", fd=False),
    _unary("lgamma", _POS34), _unary("digamma", _POS34),
    _unary("lgamma", A(values=[-2.5, -0.5, 0.3, 1.0, 2.0, 10.0])),
    # lgamma's poles: inf (gradient: digamma, -inf at 0, NaN at negative integers)
    _unary("lgamma", A(values=[0.0, -1.0, INF]), tag="poles", fd=False),
    # (polygamma(1) is inf at every pole; torch's is 6.6e32 at -1, sin(-pi)'s rounding)
    _unary("digamma", A(values=[0.0, -0.0, -0.5]), tag="poles", fd=False),
    _c("polygamma", _POS34, p={"n": 1}, torch=lambda T, x: T.polygamma(1, x)),
    _c("polygamma", A(values=[-2.5, -0.5, 0.3, 3.0]), p={"n": 2},
       torch=lambda T, x: T.polygamma(2, x)),
    # bessel.py: torch.special's (i1 and i1e: 1/2 at 0; both sides of |x| = 20,
    # where the kernels switch from the power series to Hankel's asymptotic series)
    _unary("i0", A(values=[[0.0, 0.5, -1.5, 3.0], [-2.5, 4.0, 1.0, -0.25]])),
    _unary("i0", A(values=[-19.0, 21.0]), tag="large", fd=False),
    _c("special_i0e", A(values=[0.5, -1.5, 3.0, -19.0, 21.0]), torch=lambda T, x: T.special.i0e(x)),
    _c("special_i1", A(values=[0.5, -1.5, 3.0, -4.0]), torch=lambda T, x: T.special.i1(x)),
    _c("special_i1", A(values=[-19.0, 21.0]), torch=lambda T, x: T.special.i1(x), tag="large",
       fd=False),
    _c("special_i1e", A(values=[0.5, -1.5, 3.0, -19.0, 21.0]), torch=lambda T, x: T.special.i1e(x)),
    # at 0 (a kink of i0e, i1e; second derivatives of the 1/2 branch are not defined there)
    _c("special_i0e", A(values=[0.0, -0.0]), torch=lambda T, x: T.special.i0e(x), tag="zero",
       fd=False),
    _c("special_i1", A(values=[0.0]), torch=lambda T, x: T.special.i1(x), tag="zero", fd=False),
    _c("special_i1e", A(values=[0.0]), torch=lambda T, x: T.special.i1e(x), tag="zero",
       fd=False),
    _c("special_i1e", R34, torch=lambda T, x: T.special.i1e(x), tag="normal"),
    _c("special_erfcx", A(values=[-2.0, -0.3, 0.0, 0.4, 1.5, 4.5, 30.0]),
       torch=lambda T, x: T.special.erfcx(x)),
    _c("special_log_ndtr", A(values=[-40.0, -6.0, -1.0, 0.0, 0.5, 3.0, 9.0]),
       torch=lambda T, x: T.special.log_ndtr(x)),
    _c("special_ndtri", A(values=[0.01, 0.05, 0.2, 0.5, 0.7, 0.9, 0.99]),
       torch=lambda T, x: T.special.ndtri(x)),
    _c("special_ndtri", A(values=[0.0, 1e-30, 1.0, 1.5, NAN]), tag="edges", fd=False,
       torch=lambda T, x: T.special.ndtri(x)),
    _c("special_xlog1py", R34, A((3, 4), "pos"), torch=lambda T, x, y: T.special.xlog1py(x, y)),
    _c("special_xlog1py", A(()), A((3,), "unit"), torch=lambda T, x, y: T.special.xlog1py(x, y)),
    # x = 0: the value 0 (NaN for a NaN y); x's gradient 0 where y <= -1 too
    _c("special_xlog1py", A(values=[0.0, 0.0, 0.0, 1.0, 2.0]),
       A(values=[-1.0, -2.0, NAN, 0.0, 3.0]), tag="edges",
       torch=lambda T, x, y: T.special.xlog1py(x, y), fd=False),
    # gammainc, gammaincc, betainc: differentiable in x (the shape parameters raise);
    # the series (x < a + 1), the continued fraction, small a, a >= 12
    _c("special_gammainc", A((3, 4), "pos", grad=False), A((3, 4), "pos"),
       torch=lambda T, a, x: T.special.gammainc(a, x)),
    _c("special_gammainc", A(values=[0.3, 0.3, 2.0, 15.0, 15.0, 40.0], grad=False),
       A(values=[0.5, 2.0, 5.0, 10.0, 20.0, 38.0]), tag="branches",
       torch=lambda T, a, x: T.special.gammainc(a, x)),
    _c("special_gammaincc", A((4,), "pos", grad=False), A((3, 1), "pos"),
       torch=lambda T, a, x: T.special.gammaincc(a, x)),
    _c("special_gammaincc", A(values=[0.3, 0.3, 2.0, 15.0, 15.0, 40.0], grad=False),
       A(values=[0.5, 2.0, 5.0, 10.0, 20.0, 38.0]), tag="branches",
       torch=lambda T, a, x: T.special.gammaincc(a, x)),
    # in a too (torch has no derivative there): the series, the fraction, small a, a >= 12
    _c("special_gammainc", A((3, 4), "pos"), A((3, 4), "pos"), reference=_scipy("gammainc"),
       tag="a", second_order=False),
    _c("special_gammainc", A(values=[0.3, 0.3, 0.4, 2.0, 15.0, 15.0, 40.0]),
       A(values=[0.5, 2.0, 1.2, 5.0, 10.0, 20.0, 38.0]), tag="branches-a",
       reference=_scipy("gammainc"), second_order=False),
    _c("special_gammaincc", A((4,), "pos"), A((3, 1), "pos"), reference=_scipy("gammaincc"),
       tag="a", second_order=False),
    _c("special_gammainc_da", A(values=[0.3, 0.4, 2.0, 15.0, 15.0], grad=False),
       A(values=[0.5, 1.2, 5.0, 10.0, 20.0]), reference=_gammainc_da),
    # x = 0, x < 0 (NaN), a = 0 (1 for x > 0), inf
    _c("special_gammainc", A(values=[2.0, 2.0, 0.0, 3.0, 1.0], grad=False),
       A(values=[0.0, -1.0, 2.0, INF, NAN]), tag="edges", fd=False,
       torch=lambda T, a, x: T.special.gammainc(a, x)),
    _c("special_betainc", A((3, 4), "pos", grad=False), A((3, 4), "pos", grad=False),
       A((3, 4), "unit"), reference=_scipy("betainc")),
    _c("special_betainc", A(values=[0.5, 3.0, 20.0, 2.0], grad=False),
       A(values=[0.7, 2.0, 30.0, 50.0], grad=False), A(values=[0.9, 0.2, 0.45, 0.01]),
       tag="branches", reference=_scipy("betainc")),
    _c("special_betainc", A((), "pos", grad=False), A((4,), "pos", grad=False),
       A((3, 1), "unit"), reference=_scipy("betainc")),
    # in a and b too: both sides of the mean (the fraction, its symmetry)
    _c("special_betainc", A((3, 4), "pos"), A((3, 4), "pos"), A((3, 4), "unit"),
       reference=_scipy("betainc"), tag="ab", second_order=False),
    _c("special_betainc", A(values=[0.5, 3.0, 20.0, 2.0]), A(values=[0.7, 2.0, 30.0, 50.0]),
       A(values=[0.9, 0.2, 0.45, 0.01]), tag="branches-ab", reference=_scipy("betainc"),
       second_order=False),
    _c("special_betainc_da", A(values=[0.5, 3.0, 20.0], grad=False),
       A(values=[0.7, 2.0, 30.0], grad=False), A(values=[0.9, 0.2, 0.45]),
       reference=_betainc_d(0)),
    _c("special_betainc_db", A(values=[0.5, 3.0, 20.0], grad=False),
       A(values=[0.7, 2.0, 30.0], grad=False), A(values=[0.9, 0.2, 0.45]),
       reference=_betainc_d(1)),
]

def _median(values: Any, dim: int, keepdim: bool, **kw: Any) -> Case:
    """A median_dim case against torch's median(dim): both outputs, the values and the
    indices (the stable sort's lower middle)."""
    return _c("median_dim", A(values=values), p={"dim": dim, "keepdim": keepdim},
              torch=lambda T, x: x.median(dim, keepdim=keepdim), **kw)


_ZEROS = [[2.0, 0.0, 3.0, 0.5], [0.0, 1.5, 0.0, 2.0], [0.0, 0.0, 0.0, 1.0],
          [1.0, 2.0, -0.5, 3.0]]  # slices with one, two, three and no zeros
_TIES_ROWS = [[1.0, 3.0, 3.0], [2.0, 0.0, 0.0], [-1.0, 2.0, 0.5]]
STATISTICS_CASES = [
    _c("prod_all", R34, torch=lambda T, x: x.prod()),
    _c("prod_all", A(()), torch=lambda T, x: x.prod()),
    _c("prod_all", A((0, 3)), torch=lambda T, x: x.prod()),
    # zeros: the product of the others (exact, also in the second order, which the
    # polynomial lets finite differences check)
    _c("prod_all", A(values=[2.0, 0.0, 3.0]), tag="zero", torch=lambda T, x: x.prod()),
    _c("prod_all", A(values=[2.0, 0.0, 3.0, 0.0]), tag="zeros", torch=lambda T, x: x.prod()),
    _c("prod_dim", R34, p={"dim": (1,), "keepdim": False}, torch=lambda T, x: x.prod(1)),
    _c("prod_dim", A((2, 3, 4)), p={"dim": (0,), "keepdim": True},
       torch=lambda T, x: x.prod(0, keepdim=True)),
    _c("prod_dim", A(values=_ZEROS), p={"dim": (1,), "keepdim": False}, tag="zeros",
       torch=lambda T, x: x.prod(1)),
    _c("prod_others", R34, p={"dim": (1,)}, torch_name=False,
       torch=lambda T, x: T.autograd.grad(x.prod(1).sum(), x, create_graph=True)[0]),
    # prod_others' own gradient (prod's second order) is exact at zeros; its second
    # order (prod's third) misses the terms through a zero
    _c("prod_others", A(values=_ZEROS), p={"dim": (1,)}, tag="zeros", torch_name=False,
       torch=lambda T, x: T.autograd.grad(x.prod(1).sum(), x, create_graph=True)[0],
       second_order=False),
    _c("prod_others", A(values=_ZEROS), p={"dim": None}, tag="all", torch_name=False,
       torch=lambda T, x: T.autograd.grad(x.prod(), x, create_graph=True)[0],
       second_order=False),
    _c("cumsum", R34, p={"dim": 1, "reverse": False}, torch=lambda T, x: x.cumsum(1)),
    _c("cumsum", A((2, 3, 4)), p={"dim": 0, "reverse": True}, torch_name=False,
       torch=lambda T, x: x.flip(0).cumsum(0).flip(0)),
    _c("cumsum", A(()), p={"dim": None, "reverse": False}, torch=lambda T, x: x.cumsum(0)),
    _c("cumprod", R34, p={"dim": 1}, torch=lambda T, x: x.cumprod(1)),
    _c("cumprod", A(()), p={"dim": None}, torch=lambda T, x: x.cumprod(0)),
    # zeros: first order exact (torch's O(n) rule); the second order misses the terms
    # through a zero (torch's differentiable O(n^2) form has them)
    _c("cumprod", A(values=_ZEROS), p={"dim": 1}, tag="zeros", second_order=False,
       torch=lambda T, x: x.cumprod(1)),
    _c("aminmax", A(values=_V34), p={"dim": None, "keepdim": False},
       torch=lambda T, x: T.aminmax(x)),
    _c("aminmax", A(values=_V234), p={"dim": (1,), "keepdim": True},
       torch=lambda T, x: x.aminmax(dim=1, keepdim=True)),
    # ties: split evenly, as amax's and amin's
    _c("aminmax", A(values=_TIES_ROWS), p={"dim": (1,), "keepdim": False}, tag="ties",
       fd=False, torch=lambda T, x: T.aminmax(x, dim=1)),
    _c("logcumsumexp", R34, p={"dim": 1}, torch=lambda T, x: x.logcumsumexp(1)),
    _c("logcumsumexp", A((2, 3, 4)), p={"dim": 0, "reverse": True}, torch_name=False,
       torch=lambda T, x: x.flip(0).logcumsumexp(0).flip(0)),
    _c("logcumsumexp", A(()), p={"dim": None}, torch=lambda T, x: T.logcumsumexp(x, 0)),
    # -inf after the first element adds nothing (its gradient 0); large values stay finite
    _c("logcumsumexp", A(values=[[1.0, -INF, 2.0], [1000.0, 999.0, -1000.0]]), p={"dim": 1},
       tag="inf", fd=False, torch=lambda T, x: x.logcumsumexp(1)),
    _c("cummax", A(values=_V34), p={"dim": 1}, torch=lambda T, x: x.cummax(1)),
    _c("cummax", A(values=_V234), p={"dim": 0}, torch=lambda T, x: T.cummax(x, 0)),
    _c("cummax", A(()), p={"dim": None}, torch=lambda T, x: x.cummax(0)),
    # ties: the last element that reached the running max; a NaN stays, at its index
    _c("cummax", A(values=_TIES_ROWS), p={"dim": 1}, tag="ties", fd=False,
       torch=lambda T, x: x.cummax(1)),
    _c("cummax", A(values=[[1.0, NAN, 3.0, NAN], [NAN, 0.5, 2.0, 1.0]]), p={"dim": 1},
       tag="nan", fd=False, torch=lambda T, x: x.cummax(1)),
    _c("cummin", A(values=_V34), p={"dim": 0}, torch=lambda T, x: x.cummin(0)),
    _c("cummin", A(values=_TIES_ROWS), p={"dim": 1}, tag="ties", fd=False,
       torch=lambda T, x: T.cummin(x, 1)),
    _c("cummin", A(()), p={"dim": None}, torch=lambda T, x: x.cummin(-1)),
    _c("var", R34, p={"dim": (1,), "correction": 1, "keepdim": False},
       torch=lambda T, x: x.var(1)),
    _c("var", A((2, 3, 4)), p={"dim": None, "correction": 0, "keepdim": False},
       torch=lambda T, x: x.var(correction=0)),
    _c("var", A((2, 3, 4)), p={"dim": (0, 2), "correction": 2, "keepdim": True},
       torch=lambda T, x: x.var((0, 2), correction=2, keepdim=True)),
    _c("std", R34, p={"dim": (0,), "correction": 1, "keepdim": True},
       torch=lambda T, x: x.std(0, keepdim=True)),
    _c("std", R34, p={"dim": None, "correction": 1, "keepdim": False},
       torch=lambda T, x: x.std()),
    # a constant slice: std 0, gradient 0 (torch masks it)
    _c("std", A(values=[[1.0, 1.0], [1.0, 2.0]]), p={"dim": (1,), "correction": 1,
                                                   "keepdim": False},
       tag="constant", torch=lambda T, x: x.std(1), fd=False),
    _c("logsumexp", R34, p={"dim": (1,), "keepdim": False},
       torch=lambda T, x: x.logsumexp(1)),
    _c("logsumexp", A((2, 3, 4)), p={"dim": (0, 2), "keepdim": True},
       torch=lambda T, x: x.logsumexp((0, 2), keepdim=True)),
    _c("logsumexp", A(values=[[-INF, -INF], [INF, 1.0], [1000.0, 1000.0]]),
       p={"dim": (1,), "keepdim": False}, tag="inf", torch=lambda T, x: x.logsumexp(1),
       fd=False),
    _c("nansum", R34, p={"dim": None, "keepdim": False}, torch=lambda T, x: x.nansum()),
    _c("nansum", A(values=[[NAN, 1.0], [2.0, NAN]]), p={"dim": (1,), "keepdim": True},
       torch=lambda T, x: x.nansum(1, keepdim=True), fd=False),
    _c("nanmedian_all", R34, torch=lambda T, x: x.nanmedian()),
    _c("nanmedian_all", A(values=[[1.0, NAN, 2.0], [2.0, NAN, 3.0]]), tag="nan", fd=False,
       torch=lambda T, x: T.nanmedian(x)),
    _c("nanmedian_dim", A(values=_V34), p={"dim": 1, "keepdim": False},
       torch=lambda T, x: x.nanmedian(1)),
    # NaN skipped; ties: the stable sort's first (a slice of NaN only: torch's index is its
    # selection algorithm's, not checked here)
    _c("nanmedian_dim", A(values=[[1.0, NAN, 3.0, 2.0], [2.0, 2.0, NAN, 1.0],
                                  [5.0, NAN, 1.0, NAN]]), p={"dim": 1, "keepdim": True},
       tag="nan", fd=False, torch=lambda T, x: x.nanmedian(1, keepdim=True)),
    _c("median_all", R34, torch=lambda T, x: x.median()),
    # ties split evenly (evenly_distribute_backward), NaN: to the NaN
    _c("median_all", A(values=[2.0, 1.0, 1.0, 0.0, 1.0]), tag="ties",
       torch=lambda T, x: x.median(), fd=False),
    _c("median_all", A(values=[2.0, NAN, 1.0]), tag="nan", torch=lambda T, x: x.median(),
       fd=False),
    _median(_V34, 1, False), _median(_V34, 0, True),
    _median([[1.0, 1.0, 0.0, 2.0], [3.0, 2.0, 3.0, 3.0]], 1, False, tag="ties", fd=False),
    _c("amax", R34, p={"dim": (1,), "keepdim": False}, torch=lambda T, x: x.amax(1)),
    _c("amin", A((2, 3, 4)), p={"dim": (0, 2), "keepdim": True},
       torch=lambda T, x: x.amin((0, 2), keepdim=True)),
    # ties: split evenly; a NaN result: NaN gradients everywhere (g / 0 * mask)
    _c("amax", A(values=_TIES_ROWS), p={"dim": (1,), "keepdim": False}, tag="ties",
       torch=lambda T, x: x.amax(1), fd=False),
    _c("amin", A(values=_TIES_ROWS), p={"dim": None, "keepdim": False}, tag="ties",
       torch=lambda T, x: x.amin(), fd=False),
    _c("amax", A(values=[1.0, NAN, 2.0]), p={"dim": None, "keepdim": False}, tag="nan",
       torch=lambda T, x: x.amax(), fd=False),
]

_EDGE_VALUES = A(values=_EDGES)
NONDIFF_CASES = [
    *[_c(op, _EDGE_VALUES, torch=lambda T, x, op=op: getattr(T, op)(x))
      for op in ("isinf", "isfinite", "isposinf", "isneginf", "signbit")],
    _c("logical_xor", A((3, 4), "bool"), A((4,), "bool"),
       torch=lambda T, x, y: T.logical_xor(x, y)),
    _c("floor_divide", A((3, 4), grad=False), A((4,), "away", grad=False),
       torch=lambda T, x, y: T.div(x, y, rounding_mode="floor")),
    _c("argmedian", A(values=_V34), p={"dim": 1, "keepdim": False},
       torch=lambda T, x: x.median(1).indices),
    _c("argmedian", A(values=_NAN_ROWS), p={"dim": 1, "keepdim": True},
       torch=lambda T, x: x.median(1, keepdim=True).indices),
    _c("count_nonzero", A(values=_ZEROS), p={"dim": (1,)},
       torch=lambda T, x: T.count_nonzero(x, 1)),
    _c("count_nonzero", A(values=_ZEROS), p={"dim": None}, torch=lambda T, x: T.count_nonzero(x)),
    _c("argsort", A(values=_V34), p={"dim": 1, "descending": False, "stable": True},
       torch=lambda T, x: x.argsort(dim=1, stable=True)),
    # equal elements keep their order, also descending; NaN is the largest
    _c("argsort", A(values=[[1.0, NAN, 1.0, 3.0, NAN, -1.0]]),
       p={"dim": 1, "descending": True, "stable": True},
       torch=lambda T, x: x.argsort(dim=1, descending=True, stable=True)),
    _c("argsort", A(values=[[1.0, NAN, 1.0, 3.0, NAN, -1.0]]),
       p={"dim": 1, "descending": False, "stable": True}, tag="nan",
       torch=lambda T, x: x.argsort(dim=1, stable=True)),
    _c("nonzero", A(values=_ZEROS), torch=lambda T, x: x.nonzero()),
    _c("searchsorted", A(values=[-1.0, 0.0, 0.5, 2.0], grad=False),
       A(values=[[-2.0, 0.0, 0.25], [0.5, 2.0, 3.0]], grad=False), p={"side": "right"},
       torch=lambda T, s, x: T.searchsorted(s, x, right=True)),  # (np.interp's segments)
    # ties: the smallest of the most frequent values, at its last index (torch.mode's)
    _c("mode_index", A(values=[[1.0, 2.0, 2.0, 1.0, 3.0], [4.0, 4.0, 0.0, 1.0, 0.0]]),
       p={"dim": 1}, torch=lambda T, x: x.mode(1).indices),
    _c("mode_index", A(values=[[1.0, 2.0], [1.0, 1.0], [0.0, 2.0]]), p={"dim": 0},
       torch=lambda T, x: x.mode(0).indices),
    *[_c(op, A((3, 4), "int", high=13), A((4,), "int", high=7),
         torch=lambda T, x, y, op=op: getattr(T, op)(x, y))
      for op in ("bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",
                 "bitwise_right_shift", "gcd", "lcm")],
    _c("bitwise_and", A((3, 4), "bool"), A((4,), "bool"),
       torch=lambda T, x, y: T.bitwise_and(x, y)),
    _c("bitwise_not", A((3, 4), "int", high=9), torch=lambda T, x: T.bitwise_not(x)),
    _c("bitwise_not", A((3, 4), "bool"), torch=lambda T, x: ~x),
]

CASES: list[Case] = (SHAPE_CASES + LINALG_CASES + MATH_CASES + REDUCTION_CASES + NN_CASES
                     + FORWARD_ONLY_CASES + RANDOM_CASES + MULTI_CASES + POINTWISE_CASES
                     + STATISTICS_CASES + NONDIFF_CASES + DECOMPOSITION_CASES
                     + PRODUCT_CASES + NORM_CASES + SPECTRAL_CASES + FACTORIZATION_CASES
                     + SHAPES_CASES + CONV_OP_CASES + NN_OP_CASES + FFT_CASES
                     + SCIPY_CASES)
DIFF_CASES = [c for c in CASES if c.differentiable]
FD_CASES = [c for c in DIFF_CASES if c.fd]
SECOND_ORDER_CASES = [c for c in FD_CASES if c.second_order]


def by_id(case_id: str) -> Case:
    return _BY_ID[case_id]


def ids(cases: list) -> list:
    return [c.id for c in cases]


_BY_ID = {c.id: c for c in CASES}
if len(_BY_ID) != len(CASES):  # pragma: no cover - a table edit gave two cases one id
    raise ValueError("op cases with the same id (add a tag): "
                     f"{sorted({c.id for c in CASES if ids(CASES).count(c.id) > 1})}")
