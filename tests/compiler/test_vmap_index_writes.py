"""Writes along an axis (``index_fill``, ``index_copy``, ``index_add``) under ``pb.vmap``
and forward mode: one batched op, never once per batch element with a warning."""

import warnings

import numpy as np
import pytest

import pullback as pb


def rows(x):
    R = np.zeros((3, 2))
    for i in range(3):
        R[i] = x * i
    return R


def first_row(x):
    R = np.zeros((3, 2))
    R[0] = x
    return np.sum(R * R) + np.sum(x)


def test_jacfwd_of_item_writes_into_a_fresh_array():
    x = np.array([1.0, 2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "no batching rule for index_fill"
        J = pb.jacfwd(rows)(x)
        H = pb.hessian(first_row)(x)
    np.testing.assert_allclose(J, pb.jacrev(rows)(x), rtol=1e-12)
    np.testing.assert_allclose(H, 2 * np.eye(2), rtol=1e-12)


CALLS = {
    "index_fill": lambda x, i, s: pb.index_fill(x, 1, i, -1.5),
    "index_copy": lambda x, i, s: pb.index_copy(x, 1, i, s),
    "index_add": lambda x, i, s: pb.index_add(x, 1, i, s, alpha=2.0),
}


@pytest.mark.parametrize("name", sorted(CALLS))
@pytest.mark.parametrize("axes", [(0, 0, 0), (None, 0, 0), (0, None, None), (None, 0, None)],
                         ids=["all", "x_unbatched", "index_unbatched", "index_only"])
def test_batched_along_an_axis(name, axes):
    rng = np.random.default_rng(0)
    x, s = rng.normal(size=(4, 3, 5)), rng.normal(size=(4, 3, 2))
    i = np.array([[0, 4], [1, 2], [3, 0], [2, 1]])
    args = [a if ax == 0 else a[0] for a, ax in zip((x, i, s), axes)]
    f = CALLS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = pb.vmap(lambda *a: f(*[pb.tensor(v) if not isinstance(v, pb.Tensor) else v
                                     for v in a]), in_axes=axes)(*args)
    want = [f(*[pb.tensor(a[k] if ax == 0 else a) for a, ax in zip(args, axes)])
            for k in range(4)]
    np.testing.assert_allclose(np.asarray(got), np.stack([np.asarray(w) for w in want]),
                               rtol=1e-12)
