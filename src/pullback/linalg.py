"""torch.linalg: every op-table binding declared with a ``linalg.<name>`` function name.

>>> import pullback as pb
>>> pb.linalg.det(pb.tensor([[2., 1.], [1., 3.]]))
tensor(5.)
"""

from .ops.decompositions import LinAlgError
from .ops.table.bindings import install_module as _install_module

__all__: list = ["LinAlgError"]
_install_module("linalg.", globals(), __all__)
