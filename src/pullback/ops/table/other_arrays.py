"""Whether code is being generated for another library's arrays (Dask's, CuPy's), which
an op's template reads (``compiler/lazy_arrays.lazy_context`` enters it).

>>> with building_code_for_them():
...     code_for_them()
True
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import Iterator

_BUILDING: ContextVar = ContextVar("pullback_code_for_other_arrays", default=False)


@contextmanager
def building_code_for_them() -> Iterator[None]:
    """Inside it, code is generated for those libraries' arrays: an op's template then
    never makes a Python value of an array (``x if c else y`` on a 0-d Dask ``c``, a
    number's constructor around one), which would compute it."""
    token = _BUILDING.set(True)
    try:
        yield
    finally:
        _BUILDING.reset(token)


def code_for_them() -> bool:
    """Whether ``building_code_for_them()`` is active."""
    return _BUILDING.get()
