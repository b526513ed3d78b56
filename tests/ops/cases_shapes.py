"""Op cases of the ops that rearrange elements (flip, roll, repeat, tril/triu:
ops/reshaping.py) and of the indexing ops (ops/indexing.py)."""

from __future__ import annotations

import numpy as np

from .case_types import A, _c

RESHAPING_CASES = [
    _c("flip", A((3, 4)), p={"dims": (0,)}, torch=lambda T, x: x.flip(0)),
    _c("flip", A((2, 3, 4)), p={"dims": (0, 2)}, torch=lambda T, x: x.flip(0, 2)),
    _c("flip", A(()), p={"dims": ()}, torch=lambda T, x: x.flip(0)),
    _c("flip", A((0, 3)), p={"dims": (1,)}, torch=lambda T, x: x.flip(1)),
    _c("roll", A((3, 4)), p={"shifts": (1,), "dims": (1,)}, torch=lambda T, x: x.roll(1, 1)),
    _c("roll", A((3, 4)), p={"shifts": (-2, 5), "dims": (0, 1)},
       torch=lambda T, x: x.roll((-2, 5), (0, 1))),
    _c("roll", A((3, 4)), p={"shifts": (5,), "dims": None}, torch=lambda T, x: x.roll(5)),
    _c("roll", A((1, 0)), p={"shifts": (1,), "dims": (0,)}, torch=lambda T, x: x.roll(1, 0)),
    _c("repeat", A((2, 3)), p={"repeats": (2, 1)}, torch=lambda T, x: x.repeat(2, 1)),
    _c("repeat", A((2, 3)), p={"repeats": (2, 1, 3)}, torch=lambda T, x: x.repeat(2, 1, 3)),
    _c("repeat", A(()), p={"repeats": (3,)}, torch=lambda T, x: x.repeat(3)),
    _c("repeat", A((2, 1)), p={"repeats": (0, 2)}, torch=lambda T, x: x.repeat(0, 2)),
    _c("rot90", A((3, 4)), p={"k": 1, "dims": (0, 1)}, torch=lambda T, x: x.rot90()),
    _c("rot90", A((2, 3, 4)), p={"k": 3, "dims": (2, 0)},
       torch=lambda T, x: x.rot90(3, (2, 0))),
    _c("rot90", A((3, 4)), p={"k": 2, "dims": (1, 0)}, torch=lambda T, x: x.rot90(2, (1, 0))),
    _c("rot90", A((0, 4)), p={"k": 0, "dims": (0, 1)}, torch=lambda T, x: x.rot90(0)),
    _c("constant_pad", A((3, 4)), p={"pads": ((1, 0), (2, 3)), "value": 0.0},
       torch=lambda T, x: T.nn.functional.pad(x, (2, 3, 1, 0))),
    _c("constant_pad", A((2, 0)), p={"pads": ((0, 0), (1, 1)), "value": -1.5},
       torch=lambda T, x: T.nn.functional.pad(x, (1, 1), value=-1.5)),
    _c("tril", A((3, 4)), p={"diagonal": 0}, torch=lambda T, x: x.tril()),
    _c("tril", A((2, 3, 4)), p={"diagonal": -1}, torch=lambda T, x: x.tril(-1)),
    _c("tril", A((4, 3)), p={"diagonal": 2}, torch=lambda T, x: x.tril(2)),
    _c("triu", A((3, 4)), p={"diagonal": 1}, torch=lambda T, x: x.triu(1)),
    _c("triu", A((0, 2)), p={"diagonal": 0}, torch=lambda T, x: x.triu()),
]


def _i(values) -> A:
    return A(values=values, domain="int")


_ROWS = [[0, 3], [1, 1], [2, 0]]      # gather/scatter_add: repeats allowed
_PLACES = [[0, 2], [3, 1], [2, 0]]    # scatter: distinct per row
_TIED_X = [[1.0, 5.0, 2.0, 0.0], [3.0, 3.0, 1.0, 4.0], [0.0, 2.0, 2.0, 1.0]]
_MASK = A(values=[[True, False, True, False], [False, False, False, True],
                  [True, True, False, False]], domain="bool")

INDEXING_CASES = [
    # a loop's item reads and writes (ops/items.py): where's None is the next traced int
    _c("item", A((3, 4)), _i(2), p={"where": (None, 1)}, torch=lambda T, x, i: x[i, 1]),
    _c("item_put", A((3, 4)), _i(1), _i(3), A(()), p={"where": (None, None)},
       torch=lambda T, x, i, j, v: x.index_put((i, j), v)),
    _c("item_add", A((3, 4)), _i(0), A(()), p={"where": (2, None)},
       torch=lambda T, x, j, v: x.index_put((T.tensor(2), j), v, accumulate=True)),
    _c("index_select", A((3, 4)), _i([2, 0, 2]), p={"dim": 1},
       torch=lambda T, x, i: x.index_select(1, i)),
    _c("index_select", A((3, 4)), _i([1]), p={"dim": -2 % 2},
       torch=lambda T, x, i: x.index_select(-2, i)),
    _c("index_select", A((3, 0)), A((0,), "int"), p={"dim": 0},
       torch=lambda T, x, i: x.index_select(0, i)),
    _c("new_zeros", A((2,)), p={"value": 0, "shape": (2, 3)},
       reference=lambda like: np.zeros((2, 3), like.dtype)),
    _c("index_add", A((3, 4)), _i([0, 2, 0]), A((3, 3)), p={"dim": 1, "alpha": 1},
       torch=lambda T, x, i, s: x.index_add(1, i, s)),
    _c("index_add", A((3, 4)), _i([2]), A((1, 4)), p={"dim": 0, "alpha": -2.5},
       torch=lambda T, x, i, s: x.index_add(0, i, s, alpha=-2.5)),
    _c("index_fill", A((3, 4)), _i([1, 3]), p={"dim": 1, "value": -1.5},
       torch=lambda T, x, i: x.index_fill(1, i, -1.5)),
    _c("index_copy", A((3, 4)), _i([2, 0]), A((2, 4)), p={"dim": 0},
       torch=lambda T, x, i, s: x.index_copy(0, i, s)),
    _c("scatter", A((3, 4)), _i(_PLACES), A((3, 2)), p={"dim": 1},
       torch=lambda T, x, i, s: x.scatter(1, i, s)),
    _c("scatter", A((4, 3)), _i([[1, 0, 3]]), A((1, 3)), p={"dim": 0},
       torch=lambda T, x, i, s: x.scatter(0, i, s)),
    _c("scatter_value", A((3, 4)), _i(_PLACES), p={"dim": 1, "value": 2.0},
       torch=lambda T, x, i: x.scatter(1, i, 2.0)),
    _c("scatter_add", A((3, 4)), _i(_ROWS), A((3, 2)), p={"dim": 1},
       torch=lambda T, x, i, s: x.scatter_add(1, i, s)),
    _c("scatter_add", A((2, 3)), _i([[0, 1, 1], [1, 1, 0]]), A((2, 3)), p={"dim": 0},
       torch=lambda T, x, i, s: x.scatter_add(0, i, s)),
    # torch's legacy reduce= form: values only (torch has no derivative for it)
    *[_c("scatter_reduced", A((2, 3), grad=False), _i([[0, 0], [2, 1]]),
         A((2, 3), grad=False), p={"dim": 1, "reduce": r}, torch_name=False,
         torch=lambda T, x, i, s, r=r: x.scatter(1, i, s, reduce=r))
      for r in ("add", "multiply")],
    *[_c("scatter_reduce", A((3, 4)), _i(_ROWS), A((3, 2)),
         p={"dim": 1, "reduce": r, "include_self": inc},
         torch=lambda T, x, i, s, r=r, inc=inc: x.scatter_reduce(1, i, s, r, include_self=inc))
      for r in ("sum", "prod", "mean", "amax", "amin") for inc in (True, False)],
    # prod with zeros: the product of the others where a zero is alone (first order exact)
    *[_c("scatter_reduce", A(values=[[1.0, 5.0, 2.0, 0.0], [3.0, 0.0, 1.0, 4.0],
                                     [0.0, 2.0, 2.0, 1.0]]), _i([[1, 1], [1, 0], [2, 2]]),
         A(values=[[5.0, 0.0], [3.0, 3.0], [0.0, 0.0]]),
         p={"dim": 1, "reduce": "prod", "include_self": inc}, tag="zeros", second_order=False,
         torch=lambda T, x, i, s, inc=inc: x.scatter_reduce(1, i, s, "prod", include_self=inc))
      for inc in (True, False)],
    # ties: the gradient split evenly among the equal values (input's own counted)
    *[_c("scatter_reduce", A(values=_TIED_X), _i([[1, 1], [1, 0], [2, 2]]),
         A(values=[[5.0, 1.0], [3.0, 3.0], [2.0, 2.0]]),
         p={"dim": 1, "reduce": r, "include_self": inc}, fd=False, tag="ties",
         torch=lambda T, x, i, s, r=r, inc=inc: x.scatter_reduce(1, i, s, r, include_self=inc))
      for r in ("amax", "amin") for inc in (True, False)],
    # advanced indexing by traced index arrays (ops/gathering.py): the wing's f[i, j]
    _c("index_gather", A((3, 4)), _i([0, -1, 2, 0]), _i([3, 1, -4, 3]),
       p={"index": (0, 0), "slots": (0, 1)}, torch=lambda T, x, i, j: x[i, j]),
    _c("index_gather", A((2, 3, 4)), _i([[2, 0], [1, 2]]),
       p={"index": (slice(None), 0, slice(1, None)), "slots": (1,)}, tag="mixed",
       torch=lambda T, x, i: x[:, i, 1:]),
    _c("index_gather", A((3, 4)), _i([1, 2]), _i([0, 3]),
       p={"index": (0, None, 0), "slots": (0, 2)}, tag="apart",
       torch=lambda T, x, i, j: x[i, None, j]),
    _c("index_gather_backward", A((4,)), _i([0, 2, 2, 0]), _i([1, 1, 1, 3]),
       p={"shape": (3, 4), "index": (0, 0), "slots": (0, 1)},
       torch=lambda T, g, i, j: T.zeros((3, 4), dtype=g.dtype).index_put(
           (i, j), g, accumulate=True)),
    _c("masked_fill", A((3, 4)), _MASK, p={"value": 0.5},
       torch=lambda T, x, m: x.masked_fill(m, 0.5)),
    _c("masked_fill", A((3, 4)), A(values=[True, False, False, True], domain="bool"),
       p={"value": -np.inf}, torch=lambda T, x, m: x.masked_fill(m, -np.inf), fd=False),
    _c("masked_fill", A(()), A(values=True, domain="bool"), p={"value": 1.0},
       torch=lambda T, x, m: x.masked_fill(m, 1.0)),
    _c("masked_fill_tensor", A((3, 4)), _MASK, A(()),
       torch=lambda T, x, m, v: x.masked_fill(m, v)),
    _c("masked_fill_tensor", A((3, 4)), A(values=[False, True, False, True], domain="bool"),
       A(()), torch=lambda T, x, m, v: x.masked_fill(m, v)),
]



def _tvjp_diagonal(offset: int, dim1: int, dim2: int, shape: tuple):
    """torch's backward of diagonal at ``shape``, as a function of the gradient."""
    def run(T, g):
        x0 = T.zeros(shape, dtype=g.dtype, requires_grad=True)
        return T.autograd.grad(x0.diagonal(offset, dim1, dim2), x0, g, create_graph=True)[0]
    return run


DIAGONAL_CASES = [
    _c("diagonal", A((3, 4)), p={"offset": 0, "dim1": 0, "dim2": 1},
       torch=lambda T, x: x.diagonal()),
    _c("diagonal", A((3, 4)), p={"offset": -1, "dim1": 1, "dim2": 0},
       torch=lambda T, x: x.diagonal(-1, 1, 0)),
    _c("diagonal", A((2, 3, 4)), p={"offset": 2, "dim1": 2, "dim2": 0},
       torch=lambda T, x: x.diagonal(2, -1, 0)),
    _c("diagonal", A((2, 3)), p={"offset": 5, "dim1": 0, "dim2": 1},
       torch=lambda T, x: x.diagonal(5)),
    _c("diagonal_backward", A((2, 2)), p={"shape": (2, 3, 4), "offset": 1, "dim1": 2,
                                          "dim2": 1},
       torch=_tvjp_diagonal(1, 2, 1, (2, 3, 4))),
    _c("diag_embed", A((3,)), p={"offset": 0, "dim1": 0, "dim2": 1},
       torch=lambda T, x: T.diag_embed(x)),
    _c("diag_embed", A((2, 3)), p={"offset": -2, "dim1": 2, "dim2": 0},
       torch=lambda T, x: T.diag_embed(x, -2, 2, 0)),
    _c("diag_embed", A((0,)), p={"offset": 1, "dim1": 0, "dim2": 1},
       torch=lambda T, x: T.diag_embed(x, 1)),
]

_ROW_MASK = A(values=[True, False, True, True], domain="bool")
MASKING_CASES = [
    _c("masked_select", A((3, 4)), _MASK, torch=lambda T, x, m: x.masked_select(m)),
    _c("masked_select", A((4,)), _MASK, torch=lambda T, x, m: x.masked_select(m)),  # broadcast
    _c("masked_select", A((3, 1)), _ROW_MASK, torch=lambda T, x, m: x.masked_select(m)),
    _c("masked_select_backward", A((5,)), _MASK, p={"shape": (3, 4)},
       torch=lambda T, g, m: T.zeros(3, 4, dtype=g.dtype).masked_scatter(m, g)),
    _c("masked_scatter", A((3, 4)), _MASK, A((2, 5)),
       torch=lambda T, x, m, s: x.masked_scatter(m, s)),
    _c("masked_scatter", A((3, 4)), _ROW_MASK, A((9,)),
       torch=lambda T, x, m, s: x.masked_scatter(m, s)),
    _c("masked_scatter_backward", A((3, 4)), _MASK, p={"shape": (2, 5)},
       torch=lambda T, g, m: T.nn.functional.pad(g.masked_select(m), (0, 5)).view(2, 5),
       torch_name=False),  # torch: a masked_select, padded and viewed
]

SHAPES_CASES = RESHAPING_CASES + INDEXING_CASES + DIAGONAL_CASES + MASKING_CASES
