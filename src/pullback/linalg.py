"""torch.linalg: every op-table binding declared with a ``linalg.<name>`` function name.

>>> import pullback as pb
>>> pb.linalg.det(pb.tensor([[2., 1.], [1., 3.]]))
tensor(5.)
"""

from .ops import Public as _Public
from .ops import subscribe as _subscribe
from .ops.bindings import public_callable as _public_callable
from .ops.bindings import torch_aliases as _torch_aliases
from .ops.decompositions import LinAlgError

__all__: list = ["LinAlgError"]
_PREFIX = "linalg."


def _install(entry: _Public) -> None:
    for full in entry.functions:
        if full.startswith(_PREFIX):
            name = full[len(_PREFIX):]
            globals()[name] = _torch_aliases(_public_callable(entry.fn, full), name)
            if name not in __all__:
                __all__.append(name)


def _check(entry: _Public) -> None:
    for full in entry.functions:
        if full.startswith(_PREFIX) and full[len(_PREFIX):] in globals():
            raise ValueError(f"pullback.{full} exists already")


_subscribe(_install, _check)
del _install, _check
