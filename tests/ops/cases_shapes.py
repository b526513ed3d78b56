"""Op cases of the ops that rearrange elements (flip, roll, repeat, tril/triu:
ops/reshaping.py) and of the indexing ops (ops/indexing.py)."""

from __future__ import annotations

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
    _c("tril", A((3, 4)), p={"diagonal": 0}, torch=lambda T, x: x.tril()),
    _c("tril", A((2, 3, 4)), p={"diagonal": -1}, torch=lambda T, x: x.tril(-1)),
    _c("tril", A((4, 3)), p={"diagonal": 2}, torch=lambda T, x: x.tril(2)),
    _c("triu", A((3, 4)), p={"diagonal": 1}, torch=lambda T, x: x.triu(1)),
    _c("triu", A((0, 2)), p={"diagonal": 0}, torch=lambda T, x: x.triu()),
]

SHAPES_CASES = RESHAPING_CASES
