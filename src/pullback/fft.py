"""torch.fft: every op-table binding declared with an ``fft.<name>`` function name
(ops/fourier.py), as ``pullback/linalg.py`` installs torch.linalg's.

>>> import pullback as pb
>>> pb.fft.fft(pb.tensor([1., 0., 0., 0.]))
tensor([1.+0.j, 1.+0.j, 1.+0.j, 1.+0.j])
"""

from .ops import Public as _Public
from .ops import subscribe as _subscribe
from .ops.bindings import public_callable as _public_callable
from .ops.bindings import torch_aliases as _torch_aliases

__all__: list = []
_PREFIX = "fft."


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
