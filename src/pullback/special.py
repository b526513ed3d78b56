"""torch.special: every op-table binding declared with a ``special.<name>`` function
name (ops/bessel.py: the Bessel functions ``bessel_j0, bessel_j1, bessel_y0,
bessel_y1``, ``modified_bessel_i0/i1/k0/k1``, ``scaled_modified_bessel_k0/k1``,
``i0, i0e, i1, i1e``; ops/distribution_functions.py: ``erfcx``, ``log_ndtr``,
``ndtri``, ``xlog1py``), as ``pullback/fft.py`` installs torch.fft's. Unlike torch's,
the Bessel functions of the first and second kind differentiate (torch: "derivative
not implemented").

>>> import pullback as pb
>>> pb.special.bessel_j0(pb.tensor([0.0, 1.0], dtype=pb.float64))
tensor([1.0000, 0.7652], dtype=pullback.float64)
"""

from .ops.table.bindings import install_module as _install_module

__all__: list = []
_install_module("special.", globals(), __all__)
