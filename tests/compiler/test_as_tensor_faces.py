"""``pb.as_tensor`` / ``pb.from_numpy`` / ``pb.tensor`` of a traced numpy argument give
the torch face inside a trace, as they do eagerly (``.view(shape)`` is torch's reshape,
not numpy's dtype view)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import pullback as pb


def _as_tensor(x):
    return (pb.as_tensor(x).view([2, 3]) * np.arange(3.0)).sum()


def _from_numpy(x):
    return (pb.from_numpy(x).view(2, 3) * np.arange(3.0)).sum()


def _as_float32(x):
    return (pb.as_tensor(x, dtype=pb.float32).view(2, 3) * 2).sum()


def _copied(x):
    return pb.tensor(x).view(2, 3).sum()  # (a new leaf: no gradient to x)


@pytest.mark.parametrize("f, want", [(_as_tensor, [0.0, 1.0, 2.0] * 2),
                                     (_from_numpy, [0.0, 1.0, 2.0] * 2),
                                     (_as_float32, [2.0] * 6), (_copied, [0.0] * 6)])
def test_torch_names_give_the_torch_face_under_every_door(f, want):
    x = np.arange(6.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # (an array: no copy-construct warning
        warnings.filterwarnings("error", "To copy construct")  # as torch's for a tensor)
        eager = f(x)
        compiled = pb.compile(f)(x)
        grad = pb.grad(f)(x)
    assert type(eager) is type(compiled) is pb.Tensor
    assert float(compiled) == float(eager)
    np.testing.assert_allclose(grad, want)
    assert pb.vjp(f, x)[1](np.float64(1.0))[0].tolist() == want
