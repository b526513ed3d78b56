"""torch.nn.functional: every op-table binding declared with ``functional=``.

>>> import pullback as pb
>>> import pullback.nn.functional as F
>>> F.relu(pb.tensor([-1., 2.]))
tensor([0., 2.])
"""

from ..ops import Public as _Public
from ..ops import subscribe as _subscribe
from ..ops.table.bindings import public_callable as _public_callable

__all__: list = []


def _install(entry: _Public) -> None:
    for name in entry.functional:
        globals()[name] = _public_callable(entry.fn, name)
        if name not in __all__:
            __all__.append(name)


def _check(entry: _Public) -> None:
    for name in entry.functional:
        if name in globals():
            raise ValueError(f"pullback.nn.functional.{name} exists already")


_subscribe(_install, _check)
del _install, _check
