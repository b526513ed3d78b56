"""The operators and methods every value kind shares (Tensors and IR values), so that a
VJP rule such as ``g * (1 - out * out)`` means the same on both.

The named methods are derived from the op table: every public binding with
``method=...`` becomes one here (``subscribe`` installs those declared later too).
Only the Python operators, which choose an op by their operands, are written out.
"""

from __future__ import annotations

import numpy as np

from .. import bitwise as bw
from .. import elementwise as ew
from .. import pointwise as pw
from ..linalg import matmul
from ..shape import expand_to, permute, transpose, view_as_shape
from ..subscripts import getitem
from . import args, bindings
from .registry import OpDef, Public, subscribe


def _sequence_product(x, seq, left):
    """``x @ [1, 2, 3]`` (``left``: ``[1, 2, 3] @ x``): numpy's face multiplies by the
    list as an array, as numpy does; torch's refuses it as torch does (NotImplemented:
    Python's ``unsupported operand type(s) for @``), where matmul read ``list.ndim``."""
    if getattr(getattr(type(x), "_pb_dispatch", None), "priority", None) != 0:
        return NotImplemented
    return np.matmul(seq, x) if left else np.matmul(x, seq)


class ValueMethods:
    """Operators and methods of Tensors and IR values."""

    __slots__ = ()

    def __add__(self, other):
        return ew.add_op(self, other)

    def __radd__(self, other):
        return ew.add_op(self, other)  # torch: other + x runs add(x, other)

    def __sub__(self, other):
        return ew.sub_op(self, other)

    def __rsub__(self, other):
        return ew.rsub(self, other)

    def __mul__(self, other):
        return ew.mul(self, other)

    def __rmul__(self, other):
        return ew.mul(self, other)

    def __truediv__(self, other):
        return ew.div(self, other)

    def __rtruediv__(self, other):
        if isinstance(other, (int, float)) and args.np_dtype(self).kind in "fc":
            return ew.mul(ew.reciprocal(self), other)  # torch: reciprocal(x) * other
        return ew.div(other, self)

    def __neg__(self):
        return ew.neg(self)

    def __pos__(self):
        return self

    def __abs__(self):
        return ew.absolute(self)

    def __pow__(self, exponent):
        return ew.power(self, exponent)

    def __rpow__(self, base):
        return ew.power(base, self)

    def __mod__(self, other):
        return pw.remainder(self, other)

    def __rmod__(self, other):
        return pw.remainder(other, self)

    def __floordiv__(self, other):
        return pw.floor_divide(self, other)

    def __rfloordiv__(self, other):
        return pw.floor_divide(other, self)

    def __matmul__(self, other):
        if isinstance(other, (list, tuple)):
            return _sequence_product(self, other, False)
        return matmul(self, other)

    def __rmatmul__(self, other):
        if isinstance(other, (list, tuple)):
            return _sequence_product(self, other, True)
        return matmul(other, self)

    def __gt__(self, other):
        return ew.gt(self, other)

    def __ge__(self, other):
        return ew.ge(self, other)

    def __lt__(self, other):
        return ew.lt(self, other)

    def __le__(self, other):
        return ew.le(self, other)

    def __eq__(self, other):
        return ew.eq(self, other)

    def __ne__(self, other):
        return ew.ne(self, other)

    # (on bool operands, the logical ops masks use; on integers, bitwise as torch's)
    def __and__(self, other):
        return (bw.bitwise_and if _integers(self, other) else ew.logical_and)(self, other)

    def __or__(self, other):
        return (bw.bitwise_or if _integers(self, other) else ew.logical_or)(self, other)

    def __xor__(self, other):
        return bw.bitwise_xor(self, other)  # (bool ^ bool: numpy's is logical too)

    def __invert__(self):
        return bw.bitwise_not(self) if _integers(self) else ew.logical_not(self)

    def __lshift__(self, other):
        return bw.bitwise_left_shift(self, other)

    def __rshift__(self, other):
        return bw.bitwise_right_shift(self, other)

    def __getitem__(self, idx):
        return getitem(self, idx)

    # methods torch spells around the op's own arguments
    def view_as(self, other):
        return view_as_shape(self, other.shape)

    def expand_as(self, other):
        return expand_to(self, other.shape)

    @property
    def T(self):
        return permute(self, tuple(range(self.ndim - 1, -1, -1)))

    @property
    def mT(self):
        return transpose(self, -2, -1)

    @property
    def mH(self):
        """The conjugate transpose of the last two dims (0-d: the conjugate)."""
        if self.ndim == 1:
            raise RuntimeError("tensor.mH is only supported on matrices or batches of "
                               "matrices. Got 1-D tensor.")
        return ew.conj(transpose(self, -2, -1) if self.ndim else self)

    @property
    def H(self):
        """The conjugate transpose of a matrix (0-d: the conjugate)."""
        if self.ndim not in (0, 2):
            raise RuntimeError(
                "tensor.H is only supported on matrices (2-D tensors). Got "
                f"{self.ndim}-D tensor." + (" For batches of matrices, consider using "
                                            "tensor.mH" if self.ndim > 2 else ""))
        return self.mH

    @property
    def real(self):
        return ew.real(self)

    @property
    def imag(self):
        return ew.imag(self)


def _integers(*values) -> bool:
    """Whether an operand is of an integer dtype (a Python int with a bool tensor: not)."""
    return any(np.dtype(args.np_dtype(v)).kind in "iu" for v in values
               if hasattr(v, "dtype"))


def _install(entry: Public) -> None:
    for name in entry.methods:
        fn = bindings.method(entry.fn, name) if isinstance(entry.fn, OpDef) else entry.fn
        setattr(ValueMethods, name, bindings.torch_aliases(fn, f"Tensor.{name}"))


subscribe(_install)
