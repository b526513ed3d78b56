"""pullback's dtypes: torch's names over numpy's dtypes.

>>> import pullback as pb
>>> pb.float32, pb.float32.is_floating_point
(pullback.float32, True)
>>> pb.dtypes.as_dtype("float64") is pb.float64
True
"""

from __future__ import annotations

import numpy as np


class dtype:
    """A tensor element type; wraps a numpy dtype under torch's name."""

    __slots__ = ("name", "np", "is_floating_point", "is_complex", "itemsize", "_legacy", "_cpp")

    def __init__(self, name: str, np_dtype: type, legacy: str, cpp: str) -> None:
        self.name = name
        self.np = np.dtype(np_dtype)
        self.is_floating_point = self.np.kind == "f"
        self.is_complex = self.np.kind == "c"
        self.itemsize = self.np.itemsize
        self._legacy = legacy  # torch's legacy type name, used in error texts
        self._cpp = cpp  # the C++ element type name torch prints in some errors

    @property
    def _scalar_name(self) -> str:
        """torch's ScalarType name: 'Float', 'ComplexDouble', 'Long'..."""
        return self._legacy[:-len("Tensor")]

    def __repr__(self) -> str:
        return f"pullback.{self.name}"

    def __reduce__(self):
        return (as_dtype, (self.name,))


float16 = half = dtype("float16", np.float16, "HalfTensor", "c10::Half")
float32 = float = dtype("float32", np.float32, "FloatTensor", "float")
float64 = double = dtype("float64", np.float64, "DoubleTensor", "double")
complex64 = cfloat = dtype("complex64", np.complex64, "ComplexFloatTensor", "c10::complex<float>")
complex128 = cdouble = dtype("complex128", np.complex128, "ComplexDoubleTensor",
                             "c10::complex<double>")
int8 = dtype("int8", np.int8, "CharTensor", "signed char")
uint8 = dtype("uint8", np.uint8, "ByteTensor", "unsigned char")
int16 = short = dtype("int16", np.int16, "ShortTensor", "short int")
int32 = int = dtype("int32", np.int32, "IntTensor", "int")
int64 = long = dtype("int64", np.int64, "LongTensor", "long int")
bool = dtype("bool", np.bool_, "BoolTensor", "bool")

_ALL = (float16, float32, float64, complex64, complex128, int8, uint8, int16, int32, int64, bool)
_BY_NP = {d.np: d for d in _ALL}
_BY_NAME = {d.name: d for d in _ALL}

#: the dtype of tensors made from Python floats, like torch's default dtype
default_float = float32


def as_dtype(d) -> dtype:
    """Turn a pullback dtype, numpy dtype, numpy type or name into a pullback dtype."""
    if type(d) is dtype:
        return d
    if isinstance(d, str) and d in _BY_NAME:
        return _BY_NAME[d]
    try:
        return _BY_NP[np.dtype(d)]
    except (TypeError, KeyError):
        raise TypeError(f"pullback has no dtype for {d!r}") from None


def to_numpy_dtype(d) -> np.dtype | None:
    """The numpy dtype for any dtype-like, or None."""
    return None if d is None else as_dtype(d).np


def is_differentiable(np_dtype: np.dtype) -> bool:
    """Whether values of this numpy dtype can carry gradients (float or complex)."""
    return np_dtype.kind in "fc"
