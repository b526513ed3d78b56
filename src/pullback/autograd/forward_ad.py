"""``torch.autograd.forward_ad``: forward-mode AD on dual tensors.

Inside ``dual_level()``, ``make_dual(x, t)`` gives a tensor whose tangent is ``t``;
every op called on it gives a result with a tangent (the JVP of the op, from
``ops/table/jvp.py``), and ``unpack_dual`` reads it. Tangents are Tensors computed by ops, so
they have graphs of their own (a gradient of a tangent works) and a trace records them.
Leaving the level forgets every tangent.

>>> import pullback as pb
>>> import pullback.autograd.forward_ad as fwAD
>>> x = pb.tensor([0.0, 1.0])
>>> with fwAD.dual_level():
...     y = fwAD.make_dual(x, pb.tensor([1.0, 1.0])).exp() * 2
...     fwAD.unpack_dual(y).tangent
tensor([2.0000, 5.4366])

As torch, there is one level at a time. An op whose tangent is not declared gets it
derived from its VJP rules (``transforms/transpose.py: transpose_rules``) on IR mirrors of
its Tensors, evaluated on the Tensors themselves.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any, NamedTuple

import numpy as np

from pullback.transforms.dce import dce
from pullback.transforms.transpose import transpose_rules

from ..ir import Builder, Graph, Var, evaluate
from ..ops import apply_jvp
from ..ops.shape import view
from ..ops.table.results import pack
from ..ops.writes import view_chain, view_scatter
from . import record

__all__ = ["dual_level", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual",
           "UnpackedDualTensor"]


class UnpackedDualTensor(NamedTuple):
    """What ``unpack_dual`` returns: the primal (a view without the tangent) and the
    tangent (None if there is none)."""

    primal: Any
    tangent: Any


class _Level:
    level: int | None = None
    duals: list = []  # weakrefs to the tensors given a tangent at the level
    prune_at = 1024  # when to drop the dead ones


_STATE = _Level()
_BUSY = threading.local()  # computing a tangent: its own ops propagate nothing


def level_open() -> bool:
    """Whether a dual level is open (forward mode is computing tangents)."""
    return _STATE.level is not None


def enter_dual_level() -> int:
    """Open the (one) dual level and return it."""
    if _STATE.level is not None:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    _STATE.level = 0
    _STATE.duals = []
    record.set_forward(_propagate)
    return 0


def exit_dual_level(*, level: int | None = None) -> None:
    """Close the level: every tangent made at it is gone."""
    if level is None:
        level = _STATE.level
    if level is None:
        raise RuntimeError("Dual level must be a positive number.")
    if level != _STATE.level:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that "
                           "was created. This is not supported.")
    record.set_forward(None)
    for ref in _STATE.duals:
        t = ref()
        if t is not None:
            t.__dict__.pop("_fw_tangent", None)
    _STATE.level = None
    _STATE.duals = []


class dual_level:
    """``with dual_level():`` forward mode's scope (returns the level)."""

    def __enter__(self) -> int:
        return enter_dual_level()

    def __exit__(self, *exc: object) -> None:
        exit_dual_level()

    def __call__(self, fn: Any) -> Any:  # as a decorator
        def run(*args: Any, **kwargs: Any) -> Any:
            with dual_level():
                return fn(*args, **kwargs)
        return run


def _check_level(level: int | None, what: str) -> int | None:
    if level is None:
        level = _STATE.level
    elif level != _STATE.level:
        raise RuntimeError(f"Invalid level given to {what}")
    return level


def make_dual(tensor: Any, tangent: Any, *, level: int | None = None) -> Any:
    """A view of ``tensor`` whose tangent is ``tangent`` (same shape)."""
    if _STATE.level is None:
        raise RuntimeError("Trying to create a dual Tensor for forward AD but no level exists, "
                           "make sure to enter_dual_level() first.")
    _check_level(level, "_make_dual")
    Tensor = record.Tensor
    for name, t in (("primal", tensor), ("tangent", tangent)):
        if not isinstance(t, Tensor):
            raise TypeError(f"make_dual(): argument '{name}' must be Tensor, not "
                            f"{type(t).__name__}")
        if t._data.dtype.kind not in "fc":
            raise ValueError(f"Expected {name} to be floating point or complex, but got: "
                             f"{t.dtype}")
    if tangent._data.shape != tensor._data.shape:
        raise RuntimeError("Trying to set a forward gradient that has a different size than "
                           "that of the original Tensor, this is not supported. Tensor is of "
                           f"size {list(tensor._data.shape)} while the given forward gradient "
                           f"is of size {list(tangent._data.shape)}.")
    if tensor._fw_tangent is not None:
        raise RuntimeError("Making a dual Tensor based on a Tensor that already has a forward "
                           f"gradient at the same level {_STATE.level} is not supported.")
    dual = view(tensor, shape=tensor._data.shape)
    _attach(dual, tangent)
    return dual


def unpack_dual(tensor: Any, *, level: int | None = None) -> UnpackedDualTensor:
    """``(primal, tangent)``: a view of ``tensor`` without its tangent, and the tangent
    (``(tensor, None)`` when it has none)."""
    if _STATE.level is None or tensor._fw_tangent is None:
        return UnpackedDualTensor(tensor, None)
    _check_level(level, "_unpack_dual")
    _BUSY.on = True
    try:
        primal = view(tensor, shape=tensor._data.shape)
    finally:
        _BUSY.on = False
    return UnpackedDualTensor(primal, tensor._fw_tangent)


def has_tangents(args: tuple) -> bool:
    """Whether forward mode is on and one of ``args`` carries a tangent."""
    return record.FORWARD is not None and not getattr(_BUSY, "on", False) and any(
        getattr(a, "_fw_tangent", None) is not None for a in args)


class paused:
    """Inside it ops propagate no tangent (a custom Function's forward is one step)."""

    def __enter__(self) -> None:
        self.prev = getattr(_BUSY, "on", False)
        _BUSY.on = True

    def __exit__(self, *exc: object) -> None:
        _BUSY.on = self.prev


class resumed(paused):
    """Inside a custom Function's ``jvp`` (where ops propagate no tangent), ops on dual
    tensors propagate again: a ``jvp`` that computes its tangents with forward mode
    (``pullback.scipy.integrate.odeint``'s sensitivity solve). A level of its own is
    opened when none is (the ``jvp`` called from generated code: ``pb.jacfwd``)."""

    def __enter__(self) -> None:
        self.prev = getattr(_BUSY, "on", False)
        _BUSY.on = False
        self.opened = _STATE.level is None
        if self.opened:
            enter_dual_level()

    def __exit__(self, *exc: object) -> None:
        if self.opened:
            exit_dual_level()
        super().__exit__(*exc)


def function_jvp(cls: type, ctx: Any, args: tuple, result: Any) -> None:
    """A custom Function's outputs get the tangents its ``jvp(ctx, *tangents)`` gives
    (zeros for a Tensor input without one, None for the other inputs), as torch's;
    the default ``jvp`` raises torch's NotImplementedError."""
    Tensor = record.Tensor
    tangents = [None if not isinstance(a, Tensor) else a._fw_tangent if a._fw_tangent
                is not None else Tensor._make(np.zeros_like(a._data)) for a in args]
    with paused():
        got = cls.jvp(ctx, *tangents)
    outs = result if isinstance(result, tuple) else (result,)
    got = got if isinstance(got, tuple) else (got,)
    for o, t in zip(outs, got):
        if isinstance(o, Tensor) and t is not None and o._data.dtype.kind in "fc":
            _attach(o, t)


def _attach(t: Any, tangent: Any) -> None:
    if not isinstance(tangent, record.Tensor):
        tangent = record.Tensor._make(np.asarray(tangent))
    t._fw_tangent = tangent
    duals = _STATE.duals
    duals.append(weakref.ref(t))
    if len(duals) >= _STATE.prune_at:  # a long level: forget the tensors that are gone
        duals[:] = [r for r in duals if r() is not None]
        _STATE.prune_at = max(1024, 2 * len(duals))


def _propagate(op: Any, args: tuple, params: dict, result: Any, before: bool) -> Any:
    """``record``'s hook: give ``result`` the tangent of ``op``. With ``before`` (an
    in-place op, before its write), the operands to compute it from afterwards."""
    if getattr(_BUSY, "on", False):
        return None
    Tensor = record.Tensor
    tangents = [a._fw_tangent if isinstance(a, Tensor) else None for a in args]
    if before and tangents[0] is None and args[0]._base is not None:
        tangents[0] = _through_view(args[0])  # a view of a dual tensor being written
    if all(t is None for t in tangents):
        return None
    if before:  # the target's value before the write, with its tangent
        old = Tensor._make(args[0]._data.copy())
        if tangents[0] is not None:
            old._fw_tangent = tangents[0]
        return (old,) + tuple(args[1:])
    _BUSY.on = True
    try:
        t = apply_jvp(op, tangents, result, args, params, _derive)
        if t is not None and not op.multi and result._base is not None and not op.is_view:
            _write_base(result, t)  # an in-place write into a view: into its base's too
    finally:
        _BUSY.on = False
    if t is None:
        return None
    if op.multi:
        for o, ti in zip(result, t):
            if ti is not None:
                _attach(o, ti)
    else:
        _attach(result, t)
    return None


def _through_view(view: Any) -> Any:
    """The tangent of a view with none of its own: its base's, seen through it."""
    base_t = view._base._fw_tangent
    if base_t is None:
        return None
    _BUSY.on = True
    try:
        return view_chain(base_t, chain=view._view_chain)
    finally:
        _BUSY.on = False


def _write_base(view: Any, t: Any) -> None:
    """The base of a view written in place takes the view's new tangent in its region
    (zeros elsewhere if it had none), as torch writes the base's tangent."""
    base = view._base
    old = base._fw_tangent
    if old is None:
        old = record.Tensor._make(np.zeros_like(base._data))
    _attach(base, view_scatter(old, t, chain=view._view_chain))


def _derive(op: Any, tangents: list, out: Any, inputs: tuple, params: dict) -> Any:
    """``transpose_rules`` on IR mirrors of the values (arrays and Tensors), evaluated on
    the values. The IR depends on shapes, dtypes, scalars and params only (as the
    compiler's code does), so it is built once per such key."""
    Tensor = record.Tensor
    outs = list(out) if op.multi else [out]
    values = [x for x in (*inputs, *outs, *tangents)
              if isinstance(x, (Tensor, np.ndarray))]
    key = _derive_key(op, inputs, outs, tangents, params)
    built = _DERIVED.get(key) if key is not None else None
    if built is None:
        built = _build_derived(op, tangents, out, inputs, params)
        if key is not None:
            if len(_DERIVED) >= 1024:
                _DERIVED.clear()
            _DERIVED[key] = built
    graph, which = built
    got = iter(evaluate(graph, values))
    result = [next(got) if w else None for w in which]
    return result if op.multi else result[0]


_DERIVED: dict = {}  # key -> (graph, which outputs have a tangent)


def _derive_key(op: Any, inputs: tuple, outs: list, tangents: list, params: dict) -> Any:
    """What the derived IR depends on; None when a part is not hashable."""
    Tensor = record.Tensor

    def part(x: Any) -> Any:
        if isinstance(x, (Tensor, np.ndarray)):
            d = x._data if isinstance(x, Tensor) else x
            return (d.shape, d.dtype.str)
        return (type(x), x)

    key = (op, tuple(map(part, inputs)), tuple(map(part, outs)),
           tuple(map(part, tangents)), tuple(sorted(params.items())))
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _build_derived(op: Any, tangents: list, out: Any, inputs: tuple, params: dict) -> tuple:
    Tensor = record.Tensor
    mirrors: list = []

    def mirror(x: Any) -> Any:
        if not isinstance(x, (Tensor, np.ndarray)):
            return x
        d = x._data if isinstance(x, Tensor) else x
        v = Var(d.shape, d.dtype, d)
        mirrors.append(v)
        return v

    ins = tuple(mirror(x) for x in inputs)
    outs = pack(op.result, [mirror(o) for o in out]) if op.multi else mirror(out)
    ts = [mirror(t) for t in tangents]
    with Builder() as b:
        r = transpose_rules(op, ts, outs, ins, params)
    flat = list(r) if op.multi else [r]
    graph = dce(Graph(mirrors, b.eqns, [x for x in flat if x is not None], b.consts))
    for v in mirrors:
        v._data = None
    for e in graph.eqns:  # (shapes and dtypes stay; the values are this call's)
        for v in e.outs:
            v._data = None
    return graph, [x is not None for x in flat]
