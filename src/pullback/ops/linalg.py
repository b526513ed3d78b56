"""Matrix and tensor products, and the public functions that choose among them: torch
names the node after the product it ran (mm, mv, dot, bmm, addmm); outer, inner, kron,
tensordot and matrix_power are compositions of products and views, as torch's are; vdot,
trace and cross are primitives."""

from __future__ import annotations

import numpy as np

from .. import dtypes
from .diagonals import diagonal_op
from .elementwise import conj, mul
from .reductions import sum_dim
from .reshaping import movedim
from .shape import (
    permute_op,
    reshape,
    reshape_op,
    squeeze_dim,
    t_op,
    transpose_op,
    unsqueeze_op,
)
from .table import args, batching
from .table.registry import OPS, defop, public

_PRODUCT = dict(template="{0} @ {1}", fresh=True)


# ---------------------------------------------------------------- batching rules
def _mm_batch(op, operands, batched):
    """mm over a batch: one mm when only the left matrix is batched (its rows stacked),
    else bmm (an unbatched operand as a view of the batch)."""
    (x, y), size = operands, batching.size_of(operands, batched)
    if x.shape[-1] == 1:  # an outer product (a vector's gradient): a broadcast product
        return mul(x, y)
    if not batched[1]:
        _, n, k = x.shape
        return reshape_op(mm_op(reshape_op(x, shape=(size * n, k)), y),
                          shape=(size, n, y.shape[1]))
    return bmm(x if batched[0] else batching.with_batch(x, size), y)


def _mv_batch(op, operands, batched):
    (x, v), size = operands, batching.size_of(operands, batched)
    if not batched[1]:
        return reshape_op(mv(reshape_op(x, shape=(-1, x.shape[-1])), v),
                          shape=(size, x.shape[1]))
    x = x if batched[0] else batching.with_batch(x, size)
    return reshape_op(bmm(x, unsqueeze_op(v, dim=2)), shape=(size, x.shape[1]))


def _dot_batch(op, operands, batched):
    """dot (vdot: of the conjugate) over a batch: an mv, or a product summed."""
    x, y = operands
    if op.name == "vdot":
        x = conj(x)
    if batched == (True, False):
        return mv(x, y)
    if batched == (False, True):
        return mv(y, x)
    return sum_dim(mul(x, y), dim=(1,), keepdim=False)


def _addmm_batch(op, operands, batched):
    b, x, w = operands
    product = _mm_batch(mm_op, (x, w), batched[1:]) if any(batched[1:]) else mm_op(x, w)
    return batching.elementwise(OPS["add"], (b, product), (batched[0], any(batched[1:])))


def _bmm_batch(op, operands, batched):
    """bmm broadcasts its leading axes: both operands to one rank first (an unbatched
    one too: its batch view before its own leading axes, else a batch of 4 met a
    stack of 2 matrices as one broadcast axis)."""
    size = batching.size_of(operands, batched)
    rank = max(batching.ndim(a) - b for a, b in zip(operands, batched))
    return bmm(*[batching.align(a if b else batching.with_batch(a, size), rank)
                 for a, b in zip(operands, batched)])

mm_op = defop("mm", np.matmul, "MmBackward0",
              vjp=(lambda g, out, x, y: mm_op(g, conj(t_op(y))),
                   lambda g, out, x, y: mm_op(conj(t_op(x)), g)),
              uses=("y", "x"), torch_args=("self", "mat2"), batch=_mm_batch, **_PRODUCT)
mv = defop("mv", np.matmul, "MvBackward0",
           vjp=(lambda g, out, x, v: mm_op(unsqueeze_op(g, dim=1), conj(unsqueeze_op(v, dim=0))),
                lambda g, out, x, v: mv(conj(t_op(x)), g)),
           uses=("v", "x"), torch_args=("self", "vec"), batch=_mv_batch, **_PRODUCT)
dot = defop("dot", np.dot, "DotBackward0",
            vjp=(lambda g, out, x, y: g * conj(y),
                 lambda g, out, x, y: g * conj(x)),
            uses=("y", "x"), torch_args=("self", "tensor"), template="{0} @ {1}",
            batch=_dot_batch)
# batched (and broadcast-batched) products; the caller sums the batch dims away
bmm = defop("bmm", np.matmul, "BmmBackward0",
            vjp=(lambda g, out, x, y: bmm(g, conj(transpose_op(y, dim0=-1, dim1=-2))),
                 lambda g, out, x, y: bmm(conj(transpose_op(x, dim0=-1, dim1=-2)), g)),
            uses=("y", "x"), torch_args=("self", "mat2"), **_PRODUCT, batch=_bmm_batch)
addmm = defop("addmm", lambda b, x, w: np.add(b, np.matmul(x, w)), "AddmmBackward0",
              vjp=(lambda g, out, b, x, w: g,
                   lambda g, out, b, x, w: mm_op(g, conj(t_op(w))),
                   lambda g, out, b, x, w: mm_op(conj(t_op(x)), g)),
              uses=("", "w", "x"), torch_args=("self", "mat1", "mat2"),
              template="{0} + {1} @ {2}", fresh=True, batch=_addmm_batch)


def _numpy_matmul(a, b):
    for i, v in enumerate((a, b)):
        if np.ndim(v) == 0:
            raise ValueError(f"matmul: Input operand {i} does not have enough dimensions (has 0,"
                             " gufunc core with signature (n?,k),(k,m?)->(n?,m?) requires 1)")
    return _matmul(a, b)  # numpy's promotion and gufunc errors: no torch checks


# ------------------------------------------------ torch's checks of a product's operands
_CPP = {"float32": "float", "float64": "double", "int64": "long int", "int32": "int",
        "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
        "float16": "c10::Half", "bool": "bool", "complex64": "c10::complex<float>",
        "complex128": "c10::complex<double>"}


def _torch_face(*xs) -> bool:
    """Whether every operand is a torch-face Tensor (the numpy face keeps numpy's rules)."""
    return all(getattr(getattr(type(x), "_pb_dispatch", None), "priority", None) == 1
               for x in xs)


def _dt(x) -> np.dtype:
    return np.dtype(getattr(x, "_data", x).dtype)


def _name(x) -> str:
    return dtypes.as_dtype(_dt(x))._scalar_name


def _m1m2(a, b) -> str:
    return (f"expected m1 and m2 to have the same dtype, but got: {_CPP.get(_dt(a).name)} != "
            f"{_CPP.get(_dt(b).name)}")


def _rows(shape) -> int:
    return int(np.prod(shape[:-1], dtype=np.int64))


def _check_matmul(a, b) -> None:
    """torch's dtype and shape errors for ``a @ b``, per case as torch words them."""
    p, q, same = a.ndim, b.ndim, _dt(a) == _dt(b)
    if p == 1 and q == 1:
        if not same:
            raise RuntimeError("dot : expected both vectors to have same dtype, but found "
                               f"{_name(a)} and {_name(b)}")
        if a.shape[0] != b.shape[0]:
            raise RuntimeError(f"inconsistent tensor size, expected tensor [{a.shape[0]}] and "
                               f"src [{b.shape[0]}] to have the same number of elements, but "
                               f"got {a.shape[0]} and {b.shape[0]} elements respectively")
        return
    if q == 1:
        if not same:
            raise RuntimeError("addmv input tensors must have the same dtype, but got "
                               f"{_name(b)}, {_name(a)}, and {_name(b)}")
        if a.shape[-1] != b.shape[0]:
            n = _rows(a.shape)
            raise RuntimeError(f"size mismatch, got input ({n}), mat ({n}x{a.shape[-1]}), "
                               f"vec ({b.shape[0]})")
        return
    if q == 2:
        if not same:
            raise RuntimeError(_m1m2(a, b))
        if a.shape[-1] != b.shape[0]:
            n = _rows(a.shape) if p > 1 else 1
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({n}x{a.shape[-1]} "
                               f"and {b.shape[0]}x{b.shape[1]})")
        return
    batch = args.broadcast_shape(Meta(a.shape[:-2] if p > 2 else ()),
                                 Meta(b.shape[:-2]))
    if not same:
        raise RuntimeError(f"expected scalar type {_name(a)} but found {_name(b)}")
    if a.shape[-1] != b.shape[-2]:
        n = int(np.prod(batch, dtype=np.int64))
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{n}, {a.shape[-1]}] but got: [{n}, {b.shape[-2]}].")


class Meta:
    """A shape, for ``args.broadcast_shape``."""

    def __init__(self, shape) -> None:
        self.shape = tuple(shape)


def _as_operand(x):
    return x if args.is_traced(x) or isinstance(x, np.ndarray) else np.asarray(x)


def _numpy_dot(a, b, out=None):
    args.plain(out)
    a, b = args.value(a), args.value(b)
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return mul(a, b)
    if np.ndim(b) < 2 or (np.ndim(b) == 2 and np.ndim(a) <= 2):
        return matmul(_as_operand(a), _as_operand(b))
    # numpy's N-d dot: a's last axis with b's second-to-last, b's other axes after a's
    sa, sb = np.shape(a), np.shape(b)
    if sa[-1] != sb[-2]:
        raise ValueError(f"shapes {sa} and {sb} not aligned: {sa[-1]} (dim {len(sa) - 1}) != "
                         f"{sb[-2]} (dim {len(sb) - 2})")
    return _contract(_as_operand(a), _as_operand(b), (len(sa) - 1,), (len(sb) - 2,))


@public("matmul", function=True, method=("matmul", "dot"),
        numpy={np.matmul: _numpy_matmul, np.dot: _numpy_dot})
def matmul(input, other):
    a, b = input.ndim, other.ndim
    if a == 0 or b == 0:
        raise RuntimeError("both arguments to matmul need to be at least 1D, but they are "
                           f"{a}D and {b}D")
    if _torch_face(input, other):
        _check_matmul(input, other)
    return _matmul(input, other)


def _matmul(input, other):
    a, b = input.ndim, other.ndim
    if a == 1 and b == 1:
        return dot(input, other)
    if a == 2 and b == 2:
        return mm_op(input, other)
    if a == 2 and b == 1:
        return mv(input, other)
    if a == 1 and b == 2:
        return squeeze_dim(mm_op(unsqueeze_op(input, dim=0), other), dim=(0,))
    if b == 1:
        return squeeze_dim(bmm(input, unsqueeze_op(other, dim=1)), dim=(b + a - 2,))
    if a == 1:
        return squeeze_dim(bmm(unsqueeze_op(input, dim=0), other), dim=(b - 2,))
    return bmm(input, other)


@public("mm", function=True, method=True)
def mm(input, mat2):
    if input.ndim != 2 or mat2.ndim != 2:
        raise RuntimeError("self must be a matrix" if input.ndim != 2 else "mat2 must be a matrix")
    if _torch_face(input, mat2):
        _check_matmul(input, mat2)
    return mm_op(input, mat2)


@public("bmm", function=True, method=True)
def bmm_(input, mat2):
    for name, x in (("batch1", input), ("batch2", mat2)):
        if x.ndim != 3:
            raise RuntimeError(f"{name} must be a 3D tensor")
    if input.shape[0] != mat2.shape[0] or input.shape[2] != mat2.shape[1]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{input.shape[0]}, {input.shape[2]}] but got: "
                           f"[{mat2.shape[0]}, {mat2.shape[1]}].")
    if _dt(input) != _dt(mat2):
        raise RuntimeError(f"expected scalar type {_name(input)} but found {_name(mat2)}")
    return bmm(input, mat2)


def _check_vectors(input, other):
    """torch's checks of dot's and vdot's operands: two 1-D tensors of one length."""
    if input.ndim != 1 or other.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {other.ndim}D "
                           "tensors")
    if input.shape[0] != other.shape[0]:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{input.shape[0]}] and "
                           f"src [{other.shape[0]}] to have the same number of elements, but "
                           f"got {input.shape[0]} and {other.shape[0]} elements respectively")


@public("dot", function=True)
def dot_(input, other):
    _check_vectors(input, other)
    if _dt(input) != _dt(other):
        raise RuntimeError("dot : expected both vectors to have same dtype, but found "
                           f"{_name(input)} and {_name(other)}")
    return dot(input, other)


@public("addmm", function=True, method=True)
def addmm_(input, mat1, mat2, *, beta=1, alpha=1):
    """beta * input + alpha * (mat1 @ mat2), as torch.addmm."""
    if _dt(input) != _dt(mat2):
        raise RuntimeError(f"self and mat2 must have the same dtype, but got {_name(input)} "
                           f"and {_name(mat2)}")
    mm(mat1, mat2)  # torch's checks of the product (its result is not kept)
    if beta == 1 and alpha == 1:
        return addmm(input, mat1, mat2)
    product = mm_op(mat1, mat2) * alpha
    return product if beta == 0 else input * beta + product  # beta=0: input is not read


@public("linear", functional=True)
def linear(input, weight, bias=None):
    if _torch_face(input, weight) and bias is None and _dt(input) != _dt(weight):
        raise RuntimeError(_m1m2(input, weight))  # torch's matmul words it
    if _torch_face(input, weight) and bias is not None:  # torch's addmm words it
        if _dt(input) != _dt(weight):
            raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got "
                               f"{_name(input)} and {_name(weight)}")
        if _dt(bias) != _dt(input):
            raise RuntimeError(f"self and mat2 must have the same dtype, but got "
                               f"{_name(bias)} and {_name(input)}")
    if weight.ndim == 2 and input.ndim >= 1 and input.shape[-1] != weight.shape[1]:
        rows = int(np.prod(input.shape[:-1]))  # torch's message: input as a matrix, weight.T
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x"
                           f"{input.shape[-1]} and {weight.shape[1]}x{weight.shape[0]})")
    if bias is not None and input.ndim == 2:
        return addmm(bias, input, t_op(weight))
    out = matmul(input, t_op(weight) if weight.ndim == 2 else weight)
    return out if bias is None else out + bias


# ------------------------------------------------------------------ vdot, trace, cross
vdot_op = defop("vdot", np.vdot, "VdotBackward0",
                vjp=(lambda g, out, x, y: conj(g) * y, lambda g, out, x, y: g * x),
                uses=("y", "x"), torch_args=("self", "other"), template="np.vdot({0}, {1})",
                batch=_dot_batch)


@public("vdot", function=True, method=True,
        numpy={np.vdot: lambda a, b: vdot_op(reshape(args.value(a), -1),
                                              reshape(args.value(b), -1))})
def vdot(input, other):
    _check_vectors(input, other)
    return vdot_op(input, other)


def _eye_of(x):
    return np.eye(x.shape[-2], x.shape[-1], dtype=x.dtype)


# the identity matrix of x's last two sizes and dtype (a trace's gradient)
eye_of = defop("eye_of", _eye_of, template="np.eye(*{0}.shape[-2:], dtype={0}.dtype)",
               batch=batching.example_shaped)
trace_op = defop("trace", np.trace, "TraceBackward0",
                 vjp=(lambda g, out, x: g * eye_of(x),), template="np.trace({0})", fresh=True)


def _numpy_trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    args.plain(out)
    a = args.value(a)
    if dtype is not None or a.ndim < 2:
        raise args.Unsupported
    d1, d2 = args.axes(axis1, a.ndim)[0], args.axes(axis2, a.ndim)[0]
    if d1 == d2:
        raise ValueError("axis1 and axis2 cannot be the same")
    if not offset and a.ndim == 2:
        return trace_op(a)
    # numpy's general form: the sum of the diagonal (offset, axis1, axis2), over its last
    # axis (numpy puts the diagonal last)
    return sum_dim(diagonal_op(a, offset=int(offset), dim1=d1, dim2=d2), dim=(a.ndim - 2,),
                   keepdim=False)


@public("trace", function=True, method=True, numpy={
    np.trace: _numpy_trace,
    np.linalg.trace: lambda x, offset=0, dtype=None: _numpy_trace(x, offset, -2, -1, dtype)})
def trace(input):
    if input.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.ndim}")
    return trace_op(input)


cross_op = defop("linalg_cross", lambda x, y, dim: np.cross(x, y, axis=dim),
                 "LinalgCrossBackward0",
                 vjp=(lambda g, out, x, y, dim: cross_op(y, conj(g), dim=dim),
                      lambda g, out, x, y, dim: cross_op(conj(g), x, dim=dim)),
                 uses=("y", "x"), torch_args=("self", "other"),
                 template="np.cross({0}, {1}, axis={dim})", fresh=True, batch=batching.aligned_dim)


def _cross(input, other, dim):
    if input.ndim != other.ndim:
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    d = args.wrap_dim(dim, input.ndim)
    if input.shape[d] != 3 or other.shape[d] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got "
                           f"{input.shape[d]} and {other.shape[d]}")
    args.broadcast_shape(input, other)
    return cross_op(input, other, dim=d - input.ndim)


@public("linalg.cross", function=True)
def linalg_cross(input, other, *, dim=-1):
    return _cross(input, other, dim)


def _numpy_cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    a, b = args.value(a), args.value(b)
    if axis is not None:
        axisa = axisb = axisc = axis
    if min(a.ndim, b.ndim) == 0:
        raise args.Unsupported
    if not axisa == axisb == axisc or (axisa >= 0 and a.ndim != b.ndim):
        # numpy's separate axes: each vector axis moved last, the product's moved to axisc
        a, b = movedim(a, axisa, -1), movedim(b, axisb, -1)
        if a.shape[-1] != 3 or b.shape[-1] != 3:
            raise args.Unsupported  # numpy's 2-vectors and its errors
        c = cross_op(a, b, dim=-1)
        return movedim(c, -1, args.axes(axisc, c.ndim)[0])
    d = axisa - a.ndim if axisa >= 0 else axisa
    if -d > min(a.ndim, b.ndim) or a.shape[d] != 3 or b.shape[d] != 3:
        raise args.Unsupported  # numpy's 2-vectors and its errors
    return cross_op(a, b, dim=d)


@public("cross", function=True, method=True, numpy={
    np.cross: _numpy_cross,
    np.linalg.cross: lambda x1, x2, axis=-1: _numpy_cross(x1, x2, axis=axis)})
def cross(input, other, dim=None):
    if dim is None:  # torch's deprecated default: the first dim of size 3
        dim = next((d for d, n in enumerate(args.broadcast_shape(input, other)) if n == 3),
                   None)
        if dim is None:
            raise RuntimeError("no dimension of size 3 in input")
    return _cross(input, other, dim)


# ------------------------------------------------------------------ compositions
def _vector(name: str, which: str, x) -> None:
    if x.ndim != 1:
        raise RuntimeError(f"{name}: Expected 1-D argument {which}, but got {x.ndim}-D")


@public("outer", function=("outer", "ger"), method=("outer", "ger"),
        numpy={np.outer: lambda a, b, out=None: _numpy_outer(a, b, out),
               np.linalg.outer: args.numpy_form(lambda x1, x2: outer(args.value(x1),
                                                                     args.value(x2)))})
def outer(input, vec2):
    _vector("outer", "self", input)
    _vector("outer", "vec2", vec2)
    return mul(unsqueeze_op(input, dim=1), vec2)


def _numpy_outer(a, b, out):
    args.plain(out)
    return outer(reshape(args.value(a), -1), reshape(args.value(b), -1))


def _contract(a, b, dims_a: tuple, dims_b: tuple):
    """torch's tensordot: the contracted dims of ``a`` moved last and those of ``b`` first,
    one matrix product, then the free dims back."""
    named = tuple(zip(dims_a, dims_b))
    dims_a = tuple(args.wrap_dim(d, a.ndim) for d in dims_a)
    dims_b = tuple(args.wrap_dim(d, b.ndim) for d in dims_b)
    free_a = [d for d in range(a.ndim) if d not in dims_a]
    free_b = [d for d in range(b.ndim) if d not in dims_b]
    for da, db, (na, nb) in zip(dims_a, dims_b, named):
        if a.shape[da] != b.shape[db]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size "
                               f"{a.shape[da]} in dim {na} and second has size "
                               f"{b.shape[db]} in dim {nb}")
    k = int(np.prod([a.shape[d] for d in dims_a], dtype=np.int64))
    shape = tuple(a.shape[d] for d in free_a) + tuple(b.shape[d] for d in free_b)
    left = reshape(permute_op(a, dims=tuple(free_a) + tuple(dims_a)), -1, k)
    right = reshape(permute_op(b, dims=tuple(dims_b) + tuple(free_b)), k, -1)
    return reshape_op(mm_op(left, right), shape=shape)


def _dims_pair(dims, a, b) -> tuple:
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        return tuple(range(-dims, 0)), tuple(range(dims))
    return tuple(tuple([d] if isinstance(d, int) else d) for d in dims)


def _numpy_tensordot(a, b, axes=2):
    a, b = args.value(a), args.value(b)
    return tensordot(a, b, axes)


@public("tensordot", function=True, numpy={
    np.tensordot: _numpy_tensordot,
    np.linalg.tensordot: lambda x1, x2, axes=2: _numpy_tensordot(x1, x2, axes)})
def tensordot(a, b, dims=2, out=None):
    args.plain(out)
    return _contract(a, b, *_dims_pair(dims, a, b))


@public("inner", function=True, method=True,
        numpy={np.inner: lambda a, b: inner(args.value(a), args.value(b))})
def inner(input, other):
    if input.ndim == 0 or other.ndim == 0:
        return mul(input, other)
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError("inner() the last dimension must match on both input tensors but "
                           f"got shapes {list(input.shape)} and {list(other.shape)}")
    return _contract(input, other, (input.ndim - 1,), (other.ndim - 1,))


@public("kron", function=True, method=True,
        numpy={np.kron: lambda a, b: kron(args.value(a), args.value(b))})
def kron(input, other):
    n = max(input.ndim, other.ndim)
    a = reshape(input, *((1,) * (n - input.ndim) + tuple(input.shape)))
    b = reshape(other, *((1,) * (n - other.ndim) + tuple(other.shape)))
    # a's dims at the even positions, b's at the odd ones, then each pair merged
    spread_a = reshape(a, *[s for d in a.shape for s in (d, 1)])
    spread_b = reshape(b, *[s for d in b.shape for s in (1, d)])
    return reshape(mul(spread_a, spread_b), *[i * j for i, j in zip(a.shape, b.shape)])
