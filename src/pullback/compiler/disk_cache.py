"""The persistent cache: generated source kept on disk for later processes.

Off unless ``pb.config.cache_dir`` (or ``PULLBACK_CACHE_DIR``) names a directory. A
call's trace still runs (its guards, captured values and constants come from it),
unless ``disk_variants.py`` (``pb.grad``) or ``disk_compiled.py`` (``pb.compile``,
``pb.vjp``) holds the whole variant; what this cache saves is what comes after: the
passes, code generation and ``compile`` (the source pass's output, before the trace,
is kept too: ``source/pass_cache.py``). The key is a hash of the traced graph as
printed (with its user source lines), the front door's settings, and the versions of
pullback (and its files), numpy and Python.
Every door that generates code comes here (``generated``, or ``generated_with`` for
one that needs more than the module: a batched graph's output flags, the values a
forward saves); the joint graph a forward and its backward are split from is made
only when some of their code is not on disk (``compiled.Joint``).

A cache entry is the generated source under one line of JSON that names the constants
its code reads, each as where to find it in the new trace (never a value read from
disk: no file is ever unpickled), its function's code object as ``marshal`` writes
it (Python's .pyc format: compiling a long function costs as much as the passes), and
an HMAC of all three under a key kept in the same directory. The directory is made
0700 and files are written 0600; a directory or file not owned by the user or writable
by others is refused, and a file whose HMAC or key does not match is ignored: each with
one warning, and the code is generated afresh.
"""

from __future__ import annotations

import hashlib
import json
import marshal
import os
import threading
import warnings
import weakref
from typing import Any, Callable, Iterator

import numpy as np

from pullback.transforms import codegen as codegen_module
from pullback.transforms import inplace
from pullback.transforms.codegen import Module, from_source

from ..ir import Graph, Var, every_eqn
from ..ir.graph import format_param
from ..ops import OPS
from ..settings import config
from .cache_files import Missing, Refused, read_signed, versions, warn
from .cache_files import mac_line as _mac_line
from .cache_files import open_directory as _open_directory
from .cache_files import write_pair as _write_pair
from .doors import strip_values

FORMAT = 1  # the file layout's version, part of the key
_SMALL_ARRAY = 64  # elements: a constant the passes made this small is written inline
#: what this process did: ``hits`` (code read from disk), ``misses``, ``writes``,
#: ``refused`` (files or directories ignored)
STATS = {"hits": 0, "misses": 0, "writes": 0, "refused": 0}


def key_of(graph: Graph, door: tuple, canon: str | None = None) -> str:
    """The hash naming ``graph``'s generated code, for a front door's settings ``door``
    (a tuple of plain values): the graph printed canonically with its source lines
    (``canon``, when given: ``canonical_text`` taken before the passes renamed its
    values), the setting codegen reads, the versions."""
    h = hashlib.sha256(json.dumps([FORMAT, versions(), repr(door), graph.name,
                                   config.free_bytes, inplace.is_disabled(), config.fuse,
                                   config.fuse_min_size, config.fuse_max_ops,
                                   config.fuse_threads, config.fuse_tanh, config.native_loops,
                                   len(graph.guards)]).encode())
    h.update((canonical_text(graph) if canon is None else canon).encode())
    return h.hexdigest()


def canonical_text(graph: Graph) -> str:
    """``canonical(graph)`` as one string: a door keeps it when it generates more code
    from the graph later (a backward), after the passes renamed its values."""
    return "\n".join(canonical(graph))


def canonical(graph: Graph) -> Iterator[str]:
    """``graph`` as lines of text naming what codegen reads: values numbered in order
    of definition with their name hints, shapes and dtypes; each equation's op, params,
    flags and user source line (a region's body printed whole, by the IR's printer).
    Quicker than ``format_graph`` (a long trace's key is a share of its first call)."""
    number: dict = {}

    def define(v: Var) -> str:
        number[v.id] = len(number)
        return f"{v.name}:{v.dtype.str}{v.shape}"

    def ref(a: Any) -> str:
        if type(a) is not Var:
            return format_param(a)
        k = number.get(a.id)
        return f"%{k}" if k is not None else "?" + define(a)

    yield " ".join(map(define, graph.inputs)) + " ; " + " ".join(map(define, graph.consts))
    for e in graph.eqns:
        params = " ".join(f"{k}={format_param(v)}" for k, v in e.params.items())
        ins = " ".join(map(ref, e.inputs))
        outs = " ".join(map(define, e.outs))
        yield (f"{e.op.name}[{params}] {ins} -> {outs} {e.nograd:d}{e.keeps_history:d} "
               + _where(e))
        for p in e.params.values():  # the source lines of a region's body (its comments)
            for body in (p,) if isinstance(p, Graph) else p if type(p) is tuple else ():
                if isinstance(body, Graph):
                    yield "  body " + " ".join(map(_where, every_eqn(body)))
    yield "guards " + " ".join(map(ref, graph.guards))
    yield "out " + " ".join("None" if v is None else ref(v) for v in graph.outputs)


def _where(e: Any) -> str:
    src = e.src
    return "" if src is None else f"{src.filename}:{src.lineno}:{src.text}"


def generated(graph: Graph, door: tuple, fn_name: str, env: dict,
              make: Callable[[], Graph]) -> Module:
    """``fn_name``'s Module for traced ``graph``: read from ``config.cache_dir`` when it
    holds it, else ``make()``'s graph generated (and written there)."""
    return generated_with(graph, door, fn_name, env, lambda: (make(), None))[0]


def generated_with(graph: Graph, door: tuple, fn_name: str, env: dict,
                   make: Callable[[], tuple[Graph, Any]], canon: str | None = None,
                   **codegen: Any) -> tuple[Module, Any]:
    """``generated`` for a door that needs more than the module from the passes:
    ``make()`` returns the graph to generate and ``meta``, plain JSON data (which
    outputs a batched graph batches, which inputs a backward reads...), written beside
    the code and read back with it; ``canon``: see ``key_of``; ``codegen``: codegen's
    options (``block``).
    Returns ``(module, meta)``."""
    directory = config.cache_dir
    if not directory:
        return _generate(make, fn_name, env, codegen)
    key = key_of(graph, (*door, sorted(codegen.items())) if codegen else door, canon)
    try:
        secret = _open_directory(directory)
        found = _read(directory, key, secret, graph, fn_name, env)
    except Missing:  # (written again while read: a miss)
        found = None
    except Refused as e:
        _warn(directory, str(e))
        return _generate(make, fn_name, env, codegen)
    except (OSError, ValueError, EOFError) as e:  # (a directory that cannot be made...)
        _warn(directory, f"{type(e).__name__}: {e}")
        return _generate(make, fn_name, env, codegen)
    if found is not None:
        STATS["hits"] += 1
        return found
    STATS["misses"] += 1
    module, meta = _generate_watched(make, fn_name, env, codegen)
    places = None if module in _WARNED else _places(module, graph, env)
    if places is not None:
        try:
            _write(directory, key, secret, module, places, meta)
        except OSError as e:
            _warn(directory, f"cannot write to it: {e}")
    return module, meta


def _warn(directory: str, why: str) -> None:
    STATS["refused"] += 1
    warn(directory, why, stacklevel=5)


def _generate(make: Callable[[], tuple[Graph, Any]], fn_name: str, env: dict,
              options: dict) -> tuple[Module, Any]:
    """The passes (``make``) and codegen, as without the cache; the graph's trace-time
    values are dropped once its code is generated."""
    graph, meta = make()
    module = codegen_module.generate(graph, fn_name, env, **options)
    strip_values(graph)
    return module, meta


def _generate_watched(make: Callable[[], tuple[Graph, Any]], fn_name: str, env: dict,
                     options: dict) -> tuple[Module, Any]:
    """``_generate``, noting a module whose making warned (a vmap's op without a
    batching rule, say) in ``_WARNED``: it is not kept, neither here nor as a whole
    variant, so that a later process warns as this one did (a warning the cache hid
    would depend on what an earlier run left in the directory). The warnings are
    shown as they were, from where they were raised. (One thread at a time: the
    warnings module's state is the process's, restored in the order it was saved.)"""
    with _WATCHING, warnings.catch_warnings(record=True) as seen:
        module, meta = _generate(make, fn_name, env, options)
    for w in seen:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno, source=w.source)
    if seen:
        _WARNED.add(module)
    return module, meta


_WATCHING = threading.RLock()  # (a pass may generate an inner function)
#: modules whose making warned (see ``_generate_watched``)
_WARNED: weakref.WeakSet = weakref.WeakSet()


def warned(module: Module) -> bool:
    """Whether making ``module`` warned: a whole variant with it is not kept either."""
    return module in _WARNED


# ------------------------------------------------------------ read, write
def _read(directory: str, key: str, secret: bytes, graph: Graph, fn_name: str,
          env: dict) -> tuple[Module, Any] | None:
    """The module (and its door's data) in ``<key>.py`` (its source) and ``<key>.code``
    (its function's code object, as marshal writes it: Python's own .pyc format, loaded
    only once the HMAC over both holds), None when there is none."""
    path = os.path.join(directory, key)
    if not os.path.lexists(path + ".py"):
        return None
    fields, source, code = read_signed(
        path + ".py", path + ".code", secret,
        lambda f: f.get("key") == key and f.get("name") == fn_name)
    glb = dict(env)
    for name, place in fields["bound"].items():
        glb[name] = _find(place, graph)
    module = from_source(source.decode("utf-8"), fn_name, glb, marshal.loads(code))
    return module, fields.get("meta")


def _write(directory: str, key: str, secret: bytes, module: Module, places: dict,
           meta: Any = None) -> None:
    """``<key>.code`` then ``<key>.py`` (each 0600, written whole under another name
    first, then renamed: a reader finds both or no .py)."""
    header = b"# " + json.dumps({"key": key, "name": module.fn.__name__,
                                 "bound": places, "meta": meta}).encode()
    body = module.source.encode("utf-8")
    code = marshal.dumps(module.fn.__code__)
    mac = _mac_line(secret, header, body, code).encode()
    path = os.path.join(directory, key)
    _write_pair(path + ".py", mac + b"\n" + header + b"\n" + body, path + ".code", code)
    STATS["writes"] += 1


# ------------------------------------------------- constants, by their place
def _places(module: Module, graph: Graph, env: dict) -> dict | None:
    """For each constant the module's code reads, where the next trace holds it; None
    when one has no such place (that module is not written)."""
    skip = {"np", "rt", "ops", "__builtins__", *env}  # (codegen's standard names)
    places = {}
    for name, value in module.fn.__globals__.items():
        if name in skip:
            continue
        place = _place(value, graph)
        if place is None:
            return None
        places[name] = place
    return places


def _place(value: Any, graph: Graph) -> list | None:
    for k, c in enumerate(graph.consts.values()):
        if c is value:
            return ["const", k]
    for i, e in enumerate(graph.eqns):
        for p, v in e.params.items():
            path = _path_in(value, v)
            if path is not None:
                return ["param", i, p, *path]
    return literal_place(value)


def literal_place(value: Any) -> list | None:
    """``_place`` for a value found without the trace (an op, a dtype, a small
    array written inline), or None."""
    if any(op is value for op in OPS.values()):
        return ["op", value.name]
    if isinstance(value, np.dtype) and value.metadata is None and not value.fields:
        return ["dtype", value.str]
    if isinstance(value, np.ndarray) and value.dtype.kind in "biuf" and \
            value.size <= _SMALL_ARRAY and value.dtype.fields is None:
        return ["array", value.dtype.str, list(value.shape), value.ravel().tolist()]
    return None


def _path_in(value: Any, p: Any) -> list | None:
    if p is value:
        return []
    if type(p) is tuple:
        for k, q in enumerate(p):
            path = _path_in(value, q)
            if path is not None:
                return [k, *path]
    return None


def place_value(place: list) -> Any:
    """The value at a place ``literal_place`` wrote (``Refused`` for another kind)."""
    return _find(place, None)


def _find(place: list, graph: Graph | None) -> Any:
    kind = place[0]
    try:
        if graph is None and kind in ("const", "param"):
            pass
        elif kind == "const":
            return list(graph.consts.values())[place[1]]
        elif kind == "param":
            value = graph.eqns[place[1]].params[place[2]]
            for k in place[3:]:
                value = value[k]
            return value
        if kind == "op":
            return OPS[place[1]]
        if kind == "dtype":
            return np.dtype(place[1])
        if kind == "array":
            return np.array(place[3], dtype=np.dtype(place[1])).reshape(place[2])
    except (IndexError, KeyError, TypeError, ValueError):
        pass
    raise Refused(f"a constant's place {place!r} is not in the trace")


__all__ = ["generated", "generated_with", "key_of", "literal_place", "place_value",
           "canonical_text", "versions", "warned", "STATS"]
