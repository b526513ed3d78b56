"""torch's integer functions: ``bitwise_and`` / ``or`` / ``xor`` / ``not``,
``bitwise_left_shift`` / ``right_shift`` (``&``, ``|``, ``^``, ``~``, ``<<``, ``>>`` of
integer tensors), ``gcd`` and ``lcm``: numpy's ufuncs, without gradients (torch's are
integer-only or have none).

>>> import pullback as pb
>>> pb.tensor([6, 5]) & 3, pb.gcd(pb.tensor([12, 9]), pb.tensor([8, 6]))
(tensor([2, 1]), tensor([4, 3]))
"""

from __future__ import annotations

import numpy as np

from .table.registry import defop


def _binary(name: str, ufunc: np.ufunc):
    return defop(name, ufunc, template=f"np.{ufunc.__name__}({{0}}, {{1}})",
                 elementwise=True, promote=(0, 1), function=True, method=True, inplace=True)


bitwise_and = _binary("bitwise_and", np.bitwise_and)
bitwise_or = _binary("bitwise_or", np.bitwise_or)
bitwise_xor = _binary("bitwise_xor", np.bitwise_xor)
bitwise_left_shift = _binary("bitwise_left_shift", np.left_shift)
bitwise_right_shift = _binary("bitwise_right_shift", np.right_shift)
gcd = _binary("gcd", np.gcd)
lcm = _binary("lcm", np.lcm)
bitwise_not = defop("bitwise_not", np.invert, template="np.invert({0})", elementwise=True,
                    function=True, method=True, inplace=True)
