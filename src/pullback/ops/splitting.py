"""Splitting a tensor: the multi-output view primitives ``split``, ``split_with_sizes``
and ``unbind`` (one node with an output per piece, torch's SplitBackward0...; each
piece a view of the input that torch forbids to write into in place), the functions
over them (``chunk``), and ``tensor_split`` & co., whose pieces are plain slices (as
in torch, and as numpy's ``split``, ``array_split``, ``hsplit``, ``vsplit``, ``dsplit``).

>>> import pullback as pb
>>> x = pb.ones(4, requires_grad=True) * 1
>>> a, b = x.split(2)
>>> a.grad_fn is b.grad_fn, a.grad_fn, b.output_nr
(True, <SplitBackward0 object at ...>, 1)
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from .joining import cat_op, stack_op
from .subscripts import slice_view, view_get
from .table import args
from .table.registry import defop, is_traced, public


def _size_bounds(n: int, split_size: int) -> list:
    """Where the pieces of a length-``n`` axis split every ``split_size`` start and end
    (one piece when ``split_size`` is 0, of an empty axis)."""
    pieces = max(-(-n // split_size), 1) if split_size else 1
    return [min(k * split_size, n) for k in range(pieces)] + [n]


def _along(dim: int, index: Any) -> tuple:
    return (slice(None),) * dim + (index,)


def _piece_regions(bounds: list, dim: int) -> list:
    return [_along(dim, slice(lo, hi)) for lo, hi in zip(bounds, bounds[1:])]


def _split_regions(shape, dim, split_size):
    return _piece_regions(_size_bounds(shape[dim], split_size), dim)


def _sizes_regions(shape, dim, split_sizes):
    return _piece_regions([0, *itertools.accumulate(split_sizes)], dim)


def _unbind_regions(shape, dim):
    return [_along(dim, k) for k in range(shape[dim])]


def _pieces(regions):
    """The forward of a view op that returns pieces: each region of ``x``, a view."""
    return lambda x, **params: tuple(view_get(x, r) for r in regions(x.shape, **params))


def _print_split(e: Any, a: list, lit: Any) -> str:
    """``np.split(x, [2, 4], axis=1)``: the inner bounds of the pieces."""
    regions = e.op.regions(e.inputs[0].shape, **e.params)
    inner = [r[-1].start for r in regions[1:]]
    return f"np.split({a[0]}, [{', '.join(map(str, inner))}], axis={lit(e.params['dim'])})"


def _print_unbind(e: Any, a: list, lit: Any) -> str:
    """``x[0, ...], x[1, ...]`` (up to four pieces), else a generator of them."""
    dim, n = e.params["dim"], e.inputs[0].shape[e.params["dim"]]
    lead = ":, " * dim
    if n > 4:
        k = "j" if a[0] == "k" else "k"  # (the generator's own name, not its input's)
        return f"({a[0]}[{lead}{k}, ...] for {k} in range({n}))"
    pieces = [f"{a[0]}[{lead}{k}, ...]" for k in range(n)]
    return ", ".join(pieces) + ("," if n == 1 else "") if n else "()"


# the pieces' gradients, zeros where none arrived, joined back
split_op = defop("split", _pieces(_split_regions), "SplitBackward0", outputs=tuple,
                 regions=_split_regions, template=_print_split,
                 vjp=(lambda g, out, x, dim, split_size: cat_op(*g, dim=dim),))
split_with_sizes_op = defop(
    "split_with_sizes", _pieces(_sizes_regions), "SplitWithSizesBackward0", outputs=tuple,
    regions=_sizes_regions, template=_print_split,
    vjp=(lambda g, out, x, dim, split_sizes: cat_op(*g, dim=dim),))
unbind_op = defop("unbind", _pieces(_unbind_regions), "UnbindBackward0", outputs=tuple,
                  regions=_unbind_regions, template=_print_unbind,
                  vjp=(lambda g, out, x, dim: stack_op(*g, dim=dim),))


# ------------------------------------------------------------------- torch's spellings
def _ints(name: str, values: Any) -> tuple:
    for k, v in enumerate(values):
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool):
            raise TypeError(f"split_with_sizes(): argument '{name}' (position 2) must be tuple "
                            f"of ints, but found element of type {type(v).__name__} at pos {k}")
    return tuple(int(v) for v in values)


def _split_sizes(input: Any, sizes: Any, d: int) -> tuple:
    sizes = _ints("split_sizes", sizes)
    if any(s < 0 for s in sizes):
        raise RuntimeError("split_with_sizes expects split_sizes have only non-negative "
                           f"entries, but got split_sizes={list(sizes)}")
    n = input.shape[d]
    if sum(sizes) != n:
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} "
                           f"(input tensor's size at dimension {d}), but got "
                           f"split_sizes={list(sizes)}")
    return split_with_sizes_op(input, dim=d, split_sizes=sizes)


def _split_size(input: Any, size: Any, d: int) -> tuple:
    if not isinstance(size, (int, np.integer)) or isinstance(size, bool):
        raise TypeError("split_with_sizes(): argument 'split_sizes' (position 2) must be "
                        f"tuple of ints, not {type(size).__name__}")
    n = input.shape[d]
    if size < 0:
        raise RuntimeError(f"split expects split_size be non-negative, but got split_size={size}")
    if size == 0 and n != 0:
        raise RuntimeError("split_size can only be 0 if dimension size is 0, but got "
                           f"dimension size of {n}")
    return split_op(input, dim=d, split_size=int(size))


def _one_dim(fn: str, input: Any, dim: Any) -> int:
    if input.ndim == 0:
        raise RuntimeError(f"{fn} expects at least a 1-dimensional tensor")
    return args.wrap_dim(dim, input.ndim)


@public("split", function=True, method=True)
def split(tensor, split_size_or_sections, dim=0):
    d = _one_dim("split", tensor, dim)
    if isinstance(split_size_or_sections, (list, tuple)):
        return _split_sizes(tensor, split_size_or_sections, d)
    return _split_size(tensor, split_size_or_sections, d)


@public("split_with_sizes", method=True)
def split_with_sizes(input, split_sizes, dim=0):
    return _split_sizes(input, split_sizes, _one_dim("split", input, dim))


@public("chunk", function=True, method=True)
def chunk(input, chunks, dim=0):
    if not isinstance(chunks, (int, np.integer)) or isinstance(chunks, bool):
        raise TypeError(f"chunk(): argument 'chunks' (position 2) must be int, not "
                        f"{type(chunks).__name__}")
    d = _one_dim("chunk", input, dim)
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    n = input.shape[d]
    if n == 0:  # torch: as many empty pieces as asked for
        return split_with_sizes_op(input, dim=d, split_sizes=(0,) * int(chunks))
    return split_op(input, dim=d, split_size=-(-n // int(chunks)))


@public("unbind", function=True, method=True)
def unbind(input, dim=0):
    if input.ndim == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    return unbind_op(input, dim=args.wrap_dim(dim, input.ndim))


# --------------------------------------------------- tensor_split & co.: plain slices
def _slices(x: Any, d: int, starts: list, ends: list) -> tuple:
    """The pieces ``x[..., start:end]`` along ``d`` (Python's slice semantics), each a
    slice view of its own, as torch's tensor_split and numpy's array_split make them."""
    return tuple(slice_view(x, index=_along(d, slice(lo, hi))) for lo, hi in zip(starts, ends))


def _sections(x: Any, d: int, sections: int) -> tuple:
    """``sections`` pieces, the first ``n % sections`` one longer (numpy's array_split)."""
    n = x.shape[d]
    sizes = [n // sections + 1] * (n % sections) + [n // sections] * (sections - n % sections)
    bounds = [0, *itertools.accumulate(sizes)]
    return _slices(x, d, bounds[:-1], bounds[1:])


def _at(x: Any, d: int, indices: list) -> tuple:
    return _slices(x, d, [0, *indices], [*indices, None])


def _split_spec(spec: Any) -> Any:
    """tensor_split's indices_or_sections: an int, a list of ints, or a long tensor
    (0-d: sections; 1-d: indices), read as Python ints."""
    if not is_traced(spec):
        return spec
    if args.np_dtype(spec).kind not in "iu":
        raise RuntimeError("tensor_split expected tensor_indices_or_sections to have dtype "
                           f"of long, but got {args.dtype_name(spec)}")
    if spec.ndim > 1:
        raise RuntimeError("tensor_split expected tensor_indices_or_sections to be a "
                           "zero-dimensional or one-dimensional tensor, but got a tensor "
                           f"with {spec.ndim} dims")
    return spec.tolist()


@public("tensor_split", function=True, method=True)
def tensor_split(input, indices_or_sections, dim=0):
    if input.ndim == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got "
                           "a tensor with 0 dims")
    d = args.wrap_dim(dim, input.ndim)
    spec = _split_spec(indices_or_sections)
    if isinstance(spec, (list, tuple)):
        for k, v in enumerate(spec):
            if not isinstance(v, (int, np.integer)):
                raise TypeError("tensor_split(): argument 'indices' failed to unpack the "
                                f"object at pos {k + 2} with error \"type must be tuple of "
                                f"ints,but got {type(v).__name__}\"")
        return _at(input, d, [int(v) for v in spec])
    if not isinstance(spec, (int, np.integer)):
        raise TypeError("tensor_split() received an invalid combination of arguments - got "
                        f"(Tensor, {type(spec).__name__})")
    if spec <= 0:
        raise RuntimeError(f"number of sections must be larger than 0, got {spec}")
    return _sections(input, d, int(spec))


def _directional(fn: str, input: Any, spec: Any, least: int, dim: int) -> tuple:
    """torch's hsplit, vsplit and dsplit: tensor_split along ``dim``, an int of
    sections dividing the axis evenly."""
    if input.ndim < least:
        raise RuntimeError(f"torch.{fn} requires a tensor with at least {least} dimension, "
                           f"but got a tensor with {input.ndim} dimensions!")
    spec = _split_spec(spec)
    if isinstance(spec, (int, np.integer)) and (spec == 0 or input.shape[dim] % spec):
        raise RuntimeError(f"torch.{fn} attempted to split along dimension {dim}, but the "
                           f"size of the dimension {input.shape[dim]} is not divisible by "
                           f"the split_size {spec}!")
    return tensor_split(input, spec, dim)


# numpy's spellings: lists of slices, with numpy's errors
def _numpy_axis(x: Any, axis: int) -> int:
    if not -x.ndim <= axis < x.ndim:
        raise IndexError("tuple index out of range")
    return axis % x.ndim


def _numpy_array_split(ary, indices_or_sections, axis=0):
    x = args.value(ary)
    d = _numpy_axis(x, axis)
    spec = indices_or_sections
    if np.ndim(spec):
        return list(_at(x, d, [int(v) for v in np.asarray(spec).ravel()]))
    if int(spec) <= 0:
        raise ValueError("number sections must be larger than 0.")
    return list(_sections(x, d, int(spec)))


def _numpy_split(ary, indices_or_sections, axis=0):
    x = args.value(ary)
    if not np.ndim(indices_or_sections) and x.shape[_numpy_axis(x, axis)] % int(
            indices_or_sections):
        raise ValueError("array split does not result in an equal division")
    return _numpy_array_split(x, indices_or_sections, axis)


def _numpy_directional(fn: str, least: int, axis: Any):
    def split_along(ary, indices_or_sections):
        x = args.value(ary)
        if x.ndim < least:
            raise ValueError(f"{fn} only works on arrays of {least} or more dimensions")
        return _numpy_split(x, indices_or_sections, axis(x))
    return split_along


_numpy_hsplit = _numpy_directional("hsplit", 1, lambda x: 1 if x.ndim > 1 else 0)


@public("hsplit", function=True, method=True,
        numpy={np.hsplit: _numpy_hsplit, np.split: _numpy_split,
               np.array_split: _numpy_array_split})
def hsplit(input, indices_or_sections):
    return _directional("hsplit", input, indices_or_sections, 1, 1 if input.ndim > 1 else 0)


@public("vsplit", function=True, method=True,
        numpy={np.vsplit: _numpy_directional("vsplit", 2, lambda x: 0)})
def vsplit(input, indices_or_sections):
    return _directional("vsplit", input, indices_or_sections, 2, 0)


@public("dsplit", function=True, method=True,
        numpy={np.dsplit: _numpy_directional("dsplit", 3, lambda x: 2)})
def dsplit(input, indices_or_sections):
    return _directional("dsplit", input, indices_or_sections, 3, 2)
