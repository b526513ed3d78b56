"""torch.fft: every op-table binding declared with an ``fft.<name>`` function name
(ops/fourier.py), as ``pullback/linalg.py`` installs torch.linalg's.

>>> import pullback as pb
>>> pb.fft.fft(pb.tensor([1., 0., 0., 0.]))
tensor([1.+0.j, 1.+0.j, 1.+0.j, 1.+0.j])
"""

from .ops.table.bindings import install_module as _install_module

__all__: list = []
_install_module("fft.", globals(), __all__)
