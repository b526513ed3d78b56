"""A list of Python ints as an argument: a constant of the trace, guarded (as
torch.compile specializes on it), read as numpy reads it on numpy's face."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb


def test_a_list_of_ints_is_a_guarded_constant_argument():
    f = pb.compile(lambda p, x, idx: (p * x[idx]).sum() + np.prod(idx))
    p, x = np.ones(3), np.arange(5.0)
    assert float(f(p, x, [1, 2, 3])) == 12.0
    assert float(f(p, x, [1, 2, 3])) == 12.0
    assert float(f(p, x, [0, 1, 4])) == 5.0  # (another list: traced again, not the first's)
    sizes = pb.compile(lambda p, shape: np.zeros(shape).sum() + p.sum())
    assert float(sizes(p, [2, 3])) == 3.0


def test_a_list_as_a_matmul_operand_on_each_face():
    # was: AttributeError "'list' object has no attribute 'ndim'" from inside matmul,
    # compiled (traced) and eager, for p @ [1, 2, 3] and [1, 2, 3] @ p
    p = np.array([1.0, 2.0, 3.0])
    f = pb.compile(lambda p, s: s @ (p[:, None] * p) @ s)
    assert float(f(p, [1, 0, 2])) == [1, 0, 2] @ np.outer(p, p) @ [1, 0, 2]
    np.testing.assert_allclose(pb.grad(lambda p, s: s @ p)(p, [1, 2, 3]), [1.0, 2.0, 3.0])
    np.testing.assert_allclose(pb.grad(lambda p, s: p @ s)(p, (1, 2, 3)), [1.0, 2.0, 3.0])
    # torch's face: torch's refusal (its Tensor returns NotImplemented for a list)
    with pytest.raises(TypeError, match=r"unsupported operand type\(s\) for @: 'list' and "
                       "'Tensor'"):
        [1.0, 2.0, 3.0] @ pb.ones(3)
    with pytest.raises(TypeError, match=r"unsupported operand type\(s\) for @: 'Tensor' and "
                       "'list'"):
        pb.compile(lambda t, s: t @ s)(pb.ones(3), [1, 2, 3])
