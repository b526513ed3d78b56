"""The trace cache and the one loop every compiler front door runs calls through.

The key is the function's arguments reduced to what the generated code depends on:
each tensor's shape, dtype and requires_grad, the grad mode, and non-tensor
arguments by value (they must be hashable). Guards inside a variant cover the rest:
generated code raises ``GuardFailed`` when a value the trace turned into a Python
value (``bool``, ``.item()``, ...) differs, and before a variant runs, the loop checks
that the values the function captured (globals, closure cells, ``self.W``: see
``captured.py``) are the ones its trace saw. On a failure the loop tries the key's
next variant or traces a new one. A key whose guards keep failing falls back to eager.
"""

from __future__ import annotations

import gc
import itertools
import operator
import threading
import types
import warnings
from collections import OrderedDict
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Protocol

import numpy as np

from ..autograd import profiler
from ..autograd.grad_mode import STATE
from ..numpy_face import NumpyTensor
from ..ops.sampling import GENERATOR, set_state_of, state_of
from ..settings import config
from ..tensor import Tensor
from . import lazy_arrays
from .source import traced_ints
from .trace import Traced
from .user_lines import def_line

CAPTURES = -1  # GuardFailed's index when a captured tensor changed shape since the trace
CAPTURED = -2  # ... when a captured value was rebound (or changed) since the trace


class GuardFailed(Exception):
    """A variant does not apply to this call: its guard ``index`` failed."""

    def __init__(self, index: int) -> None:
        self.index = index


def make_guard(guards: list) -> Callable:
    """The ``guard(k, value)`` function generated code calls for each guard."""
    expected = [g.expected for g in guards]

    def guard(k: int, value: Any) -> None:
        if not same_value(value, expected[k]):
            raise GuardFailed(k)

    return guard


def same_value(value: Any, expected: Any) -> bool:
    """Whether a guarded value is the one the trace saw. NaN is the same as NaN: a
    loss that went NaN while it was logged takes the traced path again."""
    if isinstance(expected, bool):
        return bool(value) == expected
    a = np.asarray(value)
    if isinstance(expected, np.ndarray):
        return a.shape == expected.shape and np.array_equal(
            a, expected, equal_nan=expected.dtype.kind in "fc")
    return bool(a == expected) or (a.dtype.kind in "fc" and bool(np.isnan(a))
                                   and expected != expected)


def run_rewinding(door: Any, variant: Any, args: tuple) -> Any:
    """``door.run(variant, args)`` for a variant that draws: if a guard fails part way (after some
    draws), its generators go back to where they were, so that the variant run or
    traced next draws what a single eager call would (a seeded run matches numpy's)."""
    gens = [GENERATOR.rng if g is None else g for g in variant.traced.generators]
    states = [state_of(g) for g in gens]
    try:
        return door.run(variant, args)
    except GuardFailed:
        for g, state in zip(gens, states):
            set_state_of(g, state)
        raise


def guard_env(guards: list) -> dict:
    """The names generated code needs for its guards."""
    return {"guard": make_guard(guards)} if guards else {}


def check_captures(traced: Traced) -> None:
    """Raise ``GuardFailed(CAPTURES)`` when a captured tensor's shape changed."""
    for t, v in zip(traced.captures, traced.graph.inputs[len(traced.arg_slots):]):
        if t._data.shape != v.shape:
            raise GuardFailed(CAPTURES)


def _describe_failure(variant: Any, index: int, args: tuple) -> str:
    if index == CAPTURES:
        return "that captured tensors keep their traced shapes"
    if index == CAPTURED:  # (found again: the hot path only knows that one failed)
        capture = variant.traced.captured.first_failure(args)
        return capture.describe() if capture is not None else \
            "that captured values are unchanged since they were traced"
    return variant.traced.guards[index].describe()


class FrontDoor(Protocol):
    """What ``Cache.call`` needs from ``pb.compile`` and ``pb.grad`` functions.
    Variants are whatever ``build`` returns; they have ``.traced.guards``."""

    fn: Callable  # the user's function, named in messages
    how: str  # the front door's name in messages: "compile", "grad", ...

    def run(self, variant: Any, args: tuple) -> Any:
        """The variant's generated code on ``args``; raises GuardFailed if a guard fails."""

    def build(self, args: tuple) -> Any:
        """A new variant for ``args``, traced now."""

    def fallback(self, args: tuple) -> Any:
        """The user's function run eagerly, returned as ``run`` would return it."""


class _Builds:
    """How many threads are building a variant, and whether the cycle collector ran
    before the first of them began."""

    lock = threading.Lock()
    running = 0
    was_enabled = False


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cycle collector off while a variant is built (traced, transformed,
    generated): each full collection walks every live object, and a long trace makes
    hundreds of thousands (Vars, equations, Tensors), so collections made tracing
    time grow with the square of the program's length (an HMM over 2,000 steps:
    20 s with the collector, 10 s without). Nothing is left uncollected: the
    collector runs again, as before, once the last build ends."""
    with _Builds.lock:
        if _Builds.running == 0:
            _Builds.was_enabled = gc.isenabled()
            gc.disable()
        _Builds.running += 1
    try:
        yield
    finally:
        with _Builds.lock:
            _Builds.running -= 1
            if _Builds.running == 0 and _Builds.was_enabled:
                gc.enable()


@dataclass(repr=False)
class CacheInfo:
    """Each call through the cache is a hit, a miss (traced a new variant; one more per
    retrace when a guard fails on the call that traced it) or a fallback (ran eagerly).
    ``recompiles``: the misses whose key's variants all failed a guard.

    Hits are counted without the lock: ``next()`` of an ``itertools.count`` is one C
    call, which no other thread interrupts (``hits`` reads the count from its repr).

    >>> info = CacheInfo(); _ = info.hit(), info.hit(); info.hits
    2
    """

    misses: int = 0
    recompiles: int = 0
    fallbacks: int = 0
    size: int = 0  # variants held
    counted: Any = field(default_factory=itertools.count, repr=False)

    def __post_init__(self) -> None:
        self.hit = self.counted.__next__  # (bound once: a hit calls it)

    @property
    def hits(self) -> int:
        return int(repr(self.counted)[6:-1])  # "count(5)"

    def __repr__(self) -> str:
        return (f"CacheInfo(hits={self.hits}, misses={self.misses}, recompiles="
                f"{self.recompiles}, fallbacks={self.fallbacks}, size={self.size})")


class UnhashableArgument(TypeError):
    pass


def arg_key(a: Any) -> Any:
    if type(a) is Tensor:
        d = a._data
        return (d.shape, d.dtype.char, a._requires_grad)
    if type(a) is np.ndarray:
        return ("nd", a.shape, a.dtype.char)
    if type(a) is NumpyTensor:  # (traced on the numpy face: another trace)
        d = a._data
        return ("np", d.shape, d.dtype.char, a._requires_grad)
    if isinstance(a, Tensor):  # a subclass (nn.Parameter): traced as a Tensor
        d = a._data
        return (d.shape, d.dtype.char, a._requires_grad)
    if isinstance(a, (list, tuple)):
        return (_container(a),) + tuple(arg_key(x) for x in a)
    if isinstance(a, dict):  # (a dict in sorted order, as pytrees flatten and rebuild
        # it; an OrderedDict in its own: the function reads it so, another is another trace)
        items = sorted(a.items()) if type(a) is dict else a.items()
        return (_container(a),) + tuple((k, arg_key(v)) for k, v in items)
    if isinstance(a, (float, np.floating)):  # traced as values, not baked in; a Python
        # float's dtype follows the call's arrays (in the key), np.float32's is its own
        return ("f",) if type(a) is float else ("f", a.dtype.char)
    if lazy_arrays.kind_of_array(a) is not None:  # Dask's or CuPy's: its own variants
        return lazy_arrays.arg_key(a)
    if isinstance(a, np.ndarray):  # a subclass (np.memmap): its data, as an ndarray
        return ("nd", a.shape, a.dtype.char)
    try:
        hash(a)
    except TypeError:
        raise UnhashableArgument(type(a).__name__) from None
    return (type(a).__name__, a)


def _container(a: Any) -> str | tuple:
    """A container's kind in a key: ``list``, ``tuple`` or ``dict``; a subclass (a
    namedtuple, an OrderedDict) by its module, name and fields, so that two classes of
    one name (a namedtuple ``P`` whose fields come in another order) are two keys."""
    kind = type(a)
    if kind in (list, tuple, dict):
        return kind.__name__
    return (kind.__module__, kind.__qualname__, getattr(kind, "_fields", None))


#: the key of a call whose arguments are all arrays, or all Tensors: read in C (every
#: call computes its key), each argument's part led by its class, which sets it apart
#: from ``arg_key``'s tuples (and a call mixing kinds from these keys)
_HOT_KEYS = {np.ndarray: operator.attrgetter("__class__", "shape", "dtype"),
             Tensor: operator.attrgetter("__class__", "_data.shape", "_data.dtype",
                                         "_requires_grad")}


def call_key(args: tuple) -> tuple:
    """The cache key of a call: the grad mode and ``arg_key`` of each argument."""
    kinds = set(map(type, args))
    if len(kinds) == 1:
        hot = _HOT_KEYS.get(next(iter(kinds)))
        if hot is not None:
            return (STATE.grad_enabled, *map(hot, args))
    return plain_key(args)


def plain_key(args: tuple) -> tuple:
    """A call's key of plain values (``arg_key``'s, no classes: the persistent cache
    names variants by it across processes)."""
    return (STATE.grad_enabled, *[arg_key(a) for a in args])


def check_maxsize(maxsize: Any, name: str) -> None:
    """Refuse a cache size that is not a positive int (``name`` says whose it is)."""
    if type(maxsize) is not int:
        raise TypeError(f"{name} must be an int, not {type(maxsize).__name__}")
    if maxsize < 1:
        raise ValueError(f"{name} must be at least 1 (the argument signatures to keep "
                         f"traced variants for), got {maxsize}")


@dataclass
class Cache:
    """Thread-safe: ``lock`` guards the entries and counters for a moment, never while
    generated code runs; ``building`` lets one thread at a time trace, so a variant one
    thread traced is the one the others use."""

    maxsize: int | None = None  # None: config.cache_size
    entries: OrderedDict = field(default_factory=OrderedDict)  # key -> [variant, ...]
    info: CacheInfo = field(default_factory=CacheInfo)
    eager: set = field(default_factory=set)  # keys that fell back (their variants dropped)
    lock: Any = field(default_factory=threading.Lock, repr=False)
    building: Any = field(default_factory=threading.RLock, repr=False)
    hot: dict = field(default_factory=dict)  # key -> its first variant's ``fast``

    def __post_init__(self) -> None:
        self.hit = self.info.hit
        if self.maxsize is None:
            self.maxsize = config.cache_size
            check_maxsize(self.maxsize, "config.cache_size")
        else:
            check_maxsize(self.maxsize, "maxsize")

    def call(self, door: FrontDoor, args: tuple, aside: Any = None) -> Any:
        """One call of ``door``'s function: the first of the key's variants whose guards
        hold, else a new variant, else (after ``config.recompile_limit`` of them) eager
        execution. ``aside(args)``, when given, runs on a call that finds no hot path: a
        door's own run of a call the cache must not take (tensors with a graph), or None
        (a check that a hot hit, every argument an array, makes needless).

        The hot path, a hit on arguments that are all arrays (or all Tensors), takes no
        lock: the key is read in C (in the first argument's kind: a call mixing kinds
        finds no hot key and goes the long way), the variant's ``fast`` (a function its door made
        for this common case, checks included) runs, and the LRU order is updated by
        one C call (``move_to_end`` on such a key runs no Python code, so no other
        thread runs in the middle of it)."""
        hot = _HOT_KEYS.get(type(args[0])) if args else None
        fast = None
        if hot is not None:
            try:  # (the first argument's kind of key, which the others may not have)
                key = (STATE.grad_enabled, *map(hot, args))
                fast = self.hot.get(key)
            except (AttributeError, TypeError):
                pass
        if fast is None:
            out = None if aside is None else aside(args)
            return self._call(door, args) if out is None else out
        try:
            out = fast(args)
        except GuardFailed as e:
            return self._call(door, args, key, e.index)
        self.hit()
        if len(self.entries) > 1:
            try:
                self.entries.move_to_end(key)
            except KeyError:  # another thread evicted it meanwhile
                pass
        return out

    def _call(self, door: FrontDoor, args: tuple, key: tuple | None = None,
              guard: int | None = None) -> Any:
        """``call`` past its hot path. ``key``: the arguments' key when they are all
        arrays or all Tensors with a hot path (``traced_ints`` leaves those as they are); ``guard``:
        the guard that failed in the key's first variant's ``fast``. A hit on a first
        variant with a ``fast`` makes it the key's hot path."""
        if key is None:
            args = traced_ints(door.fn, args)  # (an int that only bounds a converted loop)
            try:
                key = call_key(args)
            except UnhashableArgument as e:
                raise TypeError(f"{door.how}: {def_line(door.fn)} got an unhashable static "
                                f"argument of type {e}; pass arrays as Tensors or make it "
                                "hashable") from None
        else:
            traced_ints(door.fn, args)  # (converts the function on its first call)
        variants = self.entries.get(key)
        failed = None if guard is None or not variants else (variants[0], guard)
        if variants is not None:
            for variant in variants if failed is None else variants[1:]:
                traced = variant.traced  # (_run, inlined)
                check = traced.check
                if check is not None and not check(args):
                    failed = (variant, CAPTURED)
                    continue
                try:
                    out = door.run(variant, args) if not traced.generators else \
                        run_rewinding(door, variant, args)
                except GuardFailed as e:
                    failed = (variant, e.index)
                    continue
                self.hit()
                fast = getattr(variant, "fast", None)
                if fast is not None and variant is variants[0] and self.hot.get(key) is not fast:
                    with self.lock:
                        if key in self.entries:
                            self.hot[key] = fast
                if len(self.entries) > 1:
                    with self.lock:
                        self._touch(key)
                return out
        elif key in self.eager:
            return self._fallback(door, args)
        return self._miss(door, args, key, list(variants or ()), failed)

    @staticmethod
    def _run(door: FrontDoor, variant: Any, args: tuple) -> Any:
        """``door.run`` once the values the variant's trace captured are checked."""
        traced = variant.traced
        if traced.check is not None and not traced.check(args):
            raise GuardFailed(CAPTURED)
        if traced.generators:  # (a guard failing after a draw: the draw is undone)
            return run_rewinding(door, variant, args)
        return door.run(variant, args)

    def _hit(self, key: tuple) -> None:
        self.hit()
        with self.lock:
            self._touch(key)

    def _touch(self, key: tuple) -> None:
        """Make ``key`` the most recently used (the lock held)."""
        try:
            self.entries.move_to_end(key)
        except KeyError:  # another thread evicted it meanwhile
            pass

    def _miss(self, door: FrontDoor, args: tuple, key: tuple, tried: list,
              failed: tuple | None) -> Any:
        """Trace variants for ``key`` until one's guards hold on this call: a guard can
        fail on the very call that traced it (a NaN logged, a branch on random numbers).
        Variants that other threads traced meanwhile are tried first."""
        with self.building:
            if key in self.eager:  # another thread gave up on these arguments
                return self._fallback(door, args)
            pending = [v for v in self.entries.get(key, ()) if not any(v is t for t in tried)]
            tried += pending
            traced = False
            while True:
                for variant in pending:
                    try:
                        out = self._run(door, variant, args)
                    except GuardFailed as e:
                        failed = (variant, e.index)
                        continue
                    if not traced:
                        self._hit(key)
                    return out
                if tried and len(tried) >= config.recompile_limit:
                    return self._give_up(door, args, key, len(tried),
                                         _describe_failure(*failed, args))
                with self.lock:
                    self.info.misses += 1
                    self.info.recompiles += bool(tried)
                name = getattr(door.fn, "__qualname__", type(door.fn).__name__)
                with collector_paused(), profiler.Range(f"pb.{door.how}: trace {name}"), \
                        lazy_arrays.build_context(args):
                    variant = door.build(args)
                self.add(key, variant)
                tried.append(variant)
                pending = [variant]
                traced = True

    def _fallback(self, door: FrontDoor, args: tuple) -> Any:
        with self.lock:
            self.info.fallbacks += 1
        return door.fallback(args)

    def _give_up(self, door: FrontDoor, args: tuple, key: tuple, traced: int,
                 guard: str) -> Any:
        """Warn, drop the key's variants and run it eagerly from now on."""
        # stacklevel 6: _give_up, _miss, _call, call, the front door's __call__, the user's line
        warnings.warn(f"{door.how}: {def_line(door.fn)} was traced {traced} times for the "
                      f"same argument types; the guard {guard} keeps failing. Falling back "
                      "to eager execution for these arguments.", UserWarning, stacklevel=6)
        with self.lock:
            self.eager.add(key)
            self.entries.pop(key, None)
            self.hot.pop(key, None)
            self._resize()
        return self._fallback(door, args)

    def get(self, key: tuple) -> list | None:
        with self.lock:
            variants = self.entries.get(key)
            if variants is not None:
                self.entries.move_to_end(key)
        return variants

    def add(self, key: tuple, variant: Any) -> None:
        with self.lock:
            if key in self.eager:  # traced for inspect only: these arguments stay eager
                return
            self.entries.setdefault(key, []).append(variant)
            self.entries.move_to_end(key)
            while len(self.entries) > self.maxsize:
                self.hot.pop(self.entries.popitem(last=False)[0], None)
            if len(self.entries[key]) == 1 and getattr(variant, "fast", None) is not None:
                self.hot[key] = variant.fast
            self._resize()

    def clear(self) -> None:
        """Drop every variant (and the hot path to it)."""
        with self.lock:
            self.entries.clear()
            self.hot.clear()
            self._resize()

    def _resize(self) -> None:
        self.info.size = sum(len(v) for v in self.entries.values())

    def variants(self) -> list:
        with self.lock:
            return [v for vs in self.entries.values() for v in vs]


#: the caches of front doors over plain functions, shared by every front door made over
#: the same code with the same closure cells, globals and defaults, so a
#: ``pb.grad(lambda w: ...)`` made anew on each pass of a loop finds the variants the
#: last one traced (the captured guards read those very cells and globals, so a
#: rebinding still retraces): key -> (cache, the objects whose ids are in the key)
_SHARED: OrderedDict = OrderedDict()
_SHARED_LOCK = threading.Lock()
SHARED_CACHES = 256  # functions; the least recently made front door's cache goes first


def cache_for(fn: Any, door: tuple, maxsize: int | None = None) -> Cache:
    """The cache a front door (``door``: its name and settings) over ``fn`` uses."""
    if not isinstance(fn, types.FunctionType):
        return Cache(maxsize)
    held = (fn.__closure__ or (), fn.__globals__, fn.__defaults__, fn.__kwdefaults__)
    key = (door, maxsize, fn.__code__, tuple(map(id, held[0])), *map(id, held[1:]))
    with _SHARED_LOCK:
        found = _SHARED.get(key)
        if found is None:
            found = _SHARED[key] = (Cache(maxsize), held)
            if len(_SHARED) > SHARED_CACHES:
                _SHARED.popitem(last=False)
        else:
            _SHARED.move_to_end(key)
    return found[0]


def reset() -> None:
    """Forget every shared cache: front doors made from now on trace afresh (as
    ``torch._dynamo.reset()``; a front door made before keeps its own)."""
    with _SHARED_LOCK:
        _SHARED.clear()
