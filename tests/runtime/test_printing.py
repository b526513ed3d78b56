"""Tensor printing (repr/str) as torch prints it (the reference's outputs show the format).
torch's ``torch.`` dtype prefix reads ``pullback.`` here."""

from __future__ import annotations

import pytest

import pullback as pb

VALUES = {
    "floats": ([1., 2.5, -3.],),
    "integral floats": ([1., 2., 3.],),
    "zero": ([0., 0.],),
    "scalar": (3.,),
    "scalar int": (7,),
    "scalar fraction": (0.1,),
    "scalar big": (123456789.,),
    "scalar tiny": (1e-5,),
    "negative zero": ([-0., 1.],),
    "small": ([0.001, 0.0001],),
    "tiny": ([1e-5, 1.],),
    "big": ([1e8, 1.],),
    "big integral": ([100000., 2.],),
    "mixed magnitudes": ([1e-3, 1e3, 1.5],),
    "sci": ([1.5e10, -2.25e-7, 3.],),
    "nan inf": ([float("nan"), float("inf"), -float("inf"), 1.5],),
    "nan only": ([float("nan")],),
    "inf integral": ([float("inf"), 2.],),
    "ints": ([1, -20, 300],),
    "int matrix": ([[1, 2], [3, 40]],),
    "bools": ([True, False],),
    "matrix": ([[1., 2.5], [3., 4.]],),
    "3d": ([[[1., 2.], [3., 4.]], [[5., 6.], [7., 8.5]]],),
    "empty": ([],),
    "row": ([[1., 2., 3.]],),
    "column": ([[1.], [2.]],),
    "long row": ([float(i) / 3 for i in range(30)],),
    "long int row": (list(range(40)),),
    "precision rounding": ([0.12345678, 9.87654321],),
    "round up": ([0.99999, 1.],),
}


@pytest.mark.parametrize("name", list(VALUES))
def test_repr_of_values(torch, name):
    (v,) = VALUES[name]
    _same_repr(pb.tensor(v), torch.tensor(v))


DTYPES = ["float32", "float64", "float16", "int64", "int32", "int16", "int8", "uint8", "bool",
          "complex64", "complex128"]


@pytest.mark.parametrize("dtype", DTYPES)
def test_repr_of_dtypes(torch, dtype):
    v = [1., 2.5] if dtype.startswith(("float", "complex")) else [1, 2]
    if dtype == "bool":
        v = [True, False]
    _same_repr(pb.tensor(v, dtype=getattr(pb, dtype)), torch.tensor(v, dtype=getattr(torch,
                                                                                         dtype)))
    _same_repr(pb.tensor(v[0], dtype=getattr(pb, dtype)),
               torch.tensor(v[0], dtype=getattr(torch, dtype)))


@pytest.mark.parametrize("shape", [(0,), (2, 0), (0, 3), (1, 0, 2)])
def test_repr_of_empty_shapes(torch, shape):
    _same_repr(pb.zeros(shape), torch.zeros(shape))
    _same_repr(pb.zeros(shape, dtype=pb.int64), torch.zeros(shape, dtype=torch.int64))


def test_repr_with_autograd_suffixes(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        d = T.tensor([1., 2.], dtype=T.float64, requires_grad=True)
        y = x * 2
        z = y.sum()
        w = x.detach()
        v = x * 1
        v[0] = 5.
        return [repr(t) for t in (x, d, y, z, w, d * 2, v, x.double(), T.zeros(2, 2) + x)]
    mine, theirs = both.run(snippet)
    assert mine == [t.replace("torch.", "pullback.") for t in theirs]


def test_str_equals_repr(both):
    def snippet(T):
        x = T.tensor([[1., 2.], [3., 4.]], requires_grad=True)
        return str(x * 2), str(T.tensor(3)), repr(x * 2)
    mine, theirs = both.run(snippet)
    assert mine == tuple(t.replace("torch.", "pullback.") for t in theirs)


def test_repr_of_large_tensor_summarizes(torch):
    _same_repr(pb.arange(2000), torch.arange(2000))
    _same_repr(pb.arange(2000.) / 7, torch.arange(2000.) / 7)
    _same_repr(pb.arange(1200).reshape(30, 40), torch.arange(1200).reshape(30, 40))
    _same_repr(pb.arange(1001.).reshape(1001, 1), torch.arange(1001.).reshape(1001, 1))


def test_repr_of_nested_and_wrapped_matrices(torch):
    rows = [[i * 0.37 - j * 1.9 for j in range(12)] for i in range(3)]
    _same_repr(pb.tensor(rows), torch.tensor(rows))
    cube = [[[i + j * 10 + k * 100 for k in range(3)] for j in range(2)] for i in range(2)]
    _same_repr(pb.tensor(cube), torch.tensor(cube))
    _same_repr(pb.tensor(cube, dtype=pb.float64) / 3, torch.tensor(cube, dtype=torch.float64) / 3)


def test_repr_of_views_and_non_contiguous(torch):
    a = [[1., 2., 3.], [4., 5., 6.]]
    _same_repr(pb.tensor(a).t(), torch.tensor(a).t())
    _same_repr(pb.tensor(a)[:, 1:], torch.tensor(a)[:, 1:])
    _same_repr(pb.tensor(a).expand(2, 2, 3), torch.tensor(a).expand(2, 2, 3))


def test_grad_fn_repr(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        y = x * 1
        y[0] = 0.
        acc = (x * 2).grad_fn.next_functions[0][0]
        return ((x * 2).grad_fn, y.grad_fn, acc)
    mine, theirs = both.run(snippet)
    for m, t in zip(mine, theirs):
        assert repr(m).split(" object at 0x")[0] == repr(t).split(" object at 0x")[0]


def _same_repr(mine, theirs) -> None:
    expected = repr(theirs).replace("torch.", "pullback.")
    assert repr(mine) == expected, f"\npullback: {mine!r}\ntorch:    {expected}"
