"""Arrays of other libraries (Dask's, CuPy's), recognized by the module their type
comes from, without importing the library: the compiler traces them as arguments
(``compiler/lazy_arrays.py``), and the eager runtime refuses to turn one into a numpy
array (which would compute a Dask array, or copy a CuPy one to the host).

>>> kind_of_array([1.0]) is None
True
"""

from __future__ import annotations

from typing import Any

#: the libraries whose arrays are traced by shape and dtype and run by their own code
LIBRARIES = ("dask", "cupy")


def kind_of_array(a: Any) -> str | None:
    """``"dask"`` or ``"cupy"`` for an array of theirs, else None (ndarrays included)."""
    root = type(a).__module__.partition(".")[0]
    if root in LIBRARIES and hasattr(a, "shape") and hasattr(a, "dtype"):
        return root
    return None


def computed_error(what: str, kind: str) -> TypeError:
    """The error for an op whose result is ``kind``'s array (an operand was one), which
    a Tensor would hold only by computing it into numpy."""
    return TypeError(f"{what} gave a {kind} array (an operand is one), which a Tensor "
                     "would hold only by computing it into a numpy array: pass "
                     f"{kind} arrays as arguments of pb.grad, pb.value_and_grad, pb.vjp, "
                     "pb.jvp, pb.linearize or pb.compile (a function traced by them "
                     "that reads one from a global or a closure would compute it)")
