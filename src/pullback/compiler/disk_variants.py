"""Whole variants in the persistent cache: a later process's first call without a trace.

``disk_cache.py`` keeps generated code keyed by a hash of the traced graph, so every
process still traces to find it. A variant kept here is keyed before any trace, the
way the in-memory cache finds one: the function (a hash of its code object and of
the code of the functions it defines), the front door's settings, the call's key as
the in-memory cache computes it (shapes, dtypes, static values; only plain literals
here), pullback's settings and default dtype, and the versions. Its file holds what
the variant needs on a hit besides the code: the graph's input and output shapes and
dtypes, how arguments map to inputs, and a description of everything the trace read
from outside the function.

That description is the captured-value walk's own (``captured.py``, which the in-memory
cache's guards come from), made portable: the generated check's source, and each value
it binds described by value (numbers, strings, dtypes, containers of them), by name
(modules, library functions and classes, found again under that name) or by code (the
user's functions). A later process walks its own function (no trace: the walk only
reads globals, cells and defaults) and uses the variant only when the check's source
and every description are the same; a global or closure value, a called function's
source, or any value the walk binds that cannot be described (an array, a Tensor, an
object) makes it trace as before. So does any variant with guards on traced values,
captured tensors, random draws or lazy arrays: those are never written. A front
door's function object that says its settings (a Jacobian: hessian's jacfwd traces
its inner jacrev) is keyed by the user function it wraps plus those settings
(``kept_function``).

Files: ``<key>.variant`` (an HMAC line, one line of JSON, the generated source) and
``<key>.vcode`` (its code object and the captured-value check's, as ``marshal`` writes
them, loaded only once the HMAC over both holds: compiling the check cost a later
process's first call ~0.15 ms); nothing is unpickled. Written and refused as ``disk_cache``'s are.
"""

from __future__ import annotations

import ast
import hashlib
import json
import marshal
import os
import sys
import types
import weakref
from typing import Any, Callable

import numpy as np

from pullback.transforms.codegen import Module, from_source

from .. import dtypes
from ..ir import Graph, Var
from ..settings import config
from ..user_code import is_user_code
from .cache import plain_key
from .cache_files import (
    Missing,
    Refused,
    mac_line,
    open_directory,
    read_signed,
    versions,
    warn,
    write_pair,
)
from .captured import CapturedGuards, _user_type, check_code, collect
from .disk_cache import literal_place, place_value, warned
from .trace import Traced, param_names

FORMAT = 3  # this file layout's version, part of the key
#: what this process did: ``hits`` (a variant without a trace), ``misses``, ``writes``,
#: ``refused`` (files or directories ignored)
STATS = {"hits": 0, "misses": 0, "writes": 0, "refused": 0}
_MAX_ITEMS = 256  # elements of a captured container described (more: not kept)
#: values a description holds in all (more, or a structure that holds itself: not kept;
#: a call's key of pytrees nests deeper than its containers, each leaf ~5 values)
_MAX_NODES = 4096
_SETTINGS = ("free_bytes", "fuse", "fuse_min_size", "fuse_max_ops", "fuse_threads",
             "fuse_tanh", "native_loops", "check_ir")

#: modules whose values are the process's own (its environment, arguments, clock,
#: random state): a function reading them is traced in each process
_PROCESS_STATE = frozenset({"os", "sys", "random", "time"})


#: names whose reads bring in what a later process may find changed (a file, the
#: clock, the command line): a function whose code names one keeps no variant
_OUTSIDE = frozenset({"open", "input", "environ", "getenv", "argv", "fromfile",
                      "genfromtxt", "memmap", "urlopen", "time", "perf_counter", "now",
                      "today"})


def reads_outside(fn: types.FunctionType, captured: CapturedGuards | None) -> bool:
    """Whether ``fn``, or a user function its walk found, names a file or process read
    (``_OUTSIDE``, or a name starting with load or read: ``np.load``, ``read_csv``),
    whose value the trace made a constant."""
    env = captured.check.__globals__ if captured is not None else {}
    found = list(env.values()) + [getattr(m, "__func__", m) for v in env.values()
                                  if isinstance(v, type) and _user_type(v)
                                  for c in v.__mro__ if _user_type(c) for m in vars(c).values()]
    codes = [fn.__code__] + [c for c in (getattr(v, "__code__", v) for v in found)
                             if isinstance(c, types.CodeType) and is_user_code(c)]
    while codes:
        code = codes.pop()
        if any(n in _OUTSIDE or n.startswith(("load", "read")) for n in code.co_names):
            return True
        codes.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
    return False


class NotPortable(Exception):
    """A value with no description that holds in another process."""


# ------------------------------------------------------------ descriptions
def code_hash(code: types.CodeType, h: Any = None) -> Any:
    """A hash of a code object and the code objects among its constants (their
    bytecode, names, constants, file and first line); once per code object (code
    objects do not change: the key and the walk's descriptions both ask)."""
    if h is None:
        found = _HASHES.get(code)
        if found is None:
            found = _HASHES[code] = _code_hash(code, None)
        return found
    return _code_hash(code, h)


_HASHES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _code_hash(code: types.CodeType, h: Any) -> Any:
    top = h is None
    h = hashlib.sha256() if top else h
    h.update(repr((getattr(code, "co_qualname", code.co_name), code.co_filename,
                   code.co_firstlineno, code.co_names, code.co_varnames, code.co_freevars,
                   code.co_cellvars, code.co_argcount, code.co_kwonlyargcount,
                   code.co_flags)).encode())
    h.update(code.co_code)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            code_hash(c, h)
        else:
            h.update(repr(literal(c)).encode())
    return h.hexdigest() if top else h


def literal(v: Any, budget: list | None = None) -> Any:
    """``v`` as plain JSON values that say its type and value; ``NotPortable`` when
    it is not a number, string, dtype or container of them, or when it holds more than
    ``_MAX_NODES`` values in all (a cyclic or huge structure; ``budget``: the count
    left, shared by the walk), however deep they nest.

    >>> literal({"w": (2, 3)})
    ['dict', [[['str', "'w'"], ['tuple', [['int', '2'], ['int', '3']]]]]]
    """
    if budget is None:  # (the top call: a structure nested past the stack is refused)
        try:
            return literal(v, [_MAX_NODES])
        except RecursionError:
            raise NotPortable("a structure nested too deep") from None
    budget[0] -= 1
    if budget[0] < 0:
        raise NotPortable(f"a structure of more than {_MAX_NODES} values")
    kind = type(v)
    if v is None or v is Ellipsis or kind in (bool, int, float, complex, str, bytes):
        return [kind.__name__, repr(v)]
    if isinstance(v, np.generic) and v.dtype.kind in "biufc":
        return ["np", v.dtype.str, repr(v.item())]
    if isinstance(v, np.dtype) and v.metadata is None and not v.fields:
        return ["dtype", v.str]
    if kind in (tuple, list, frozenset, set) and len(v) <= _MAX_ITEMS:
        items = [literal(x, budget) for x in v]
        return [kind.__name__, sorted(items, key=repr) if kind in (set, frozenset) else items]
    if kind is dict and len(v) <= _MAX_ITEMS:
        return ["dict", [[literal(k, budget), literal(x, budget)] for k, x in v.items()]]
    if kind in (slice, range):
        return [kind.__name__, literal((v.start, v.stop, v.step), budget)]
    raise NotPortable(kind.__name__)


def describe(v: Any) -> Any:
    """A value the captured-value walk binds, described so that another process finds
    the same (see the module)."""
    if isinstance(v, types.CellType):  # (its contents are guarded by their own term)
        return ["cell"]
    if isinstance(v, types.CodeType):
        return ["code", code_hash(v)]
    if isinstance(v, types.ModuleType):
        if v.__name__ in _PROCESS_STATE:  # (os.environ, sys.argv: read at trace time)
            raise NotPortable(f"the module {v.__name__}")
        return ["module", v.__name__]
    if type(v) is dict and "__builtins__" in v:  # a module's globals: read item by item
        return ["globals", v.get("__name__")]
    if isinstance(v, np.ufunc) and getattr(np, v.__name__, None) is v:
        return ["ufunc", v.__name__]
    if isinstance(v, types.FunctionType) and is_user_code(v.__code__):
        return ["function", v.__qualname__, code_hash(v.__code__)]
    if isinstance(v, type) and _user_type(v):
        return [*_by_name(v)[:3], _class_hash(v)]
    if callable(v) and not isinstance(v, (types.MethodType, types.BuiltinMethodType)) \
            or isinstance(v, types.BuiltinFunctionType):
        return _by_name(v)
    return literal(v)


def _by_name(v: Any) -> list:
    """A class or library function, as the module and name it is found under (its
    package's version with it)."""
    module, name = getattr(v, "__module__", None), getattr(v, "__qualname__", None)
    found = sys.modules.get(module) if isinstance(module, str) else None
    if found is None or not isinstance(name, str) or module in _PROCESS_STATE:
        raise NotPortable(type(v).__name__)
    for part in name.split("."):
        found = getattr(found, part, None)
    if found is not v:
        raise NotPortable(f"{module}.{name}")
    package = sys.modules.get(module.partition(".")[0])
    return ["named", module, name, str(getattr(package, "__version__", ""))]


def _class_hash(cls: type) -> str:
    """A hash of the code of a class of the user's and of its user bases (a method the
    followed code does not name, ``__call__`` say, changes it too)."""
    h = hashlib.sha256()
    for c in cls.__mro__:
        if not _user_type(c):
            continue
        h.update(c.__qualname__.encode())
        for name, v in sorted(vars(c).items()):
            v = getattr(v, "__func__", v)  # (static and class methods)
            if isinstance(v, property):
                v = v.fget
            h.update(name.encode())
            if isinstance(v, types.FunctionType):
                code_hash(v.__code__, h)
    return h.hexdigest()


_CONSTS = {"NoneType": lambda r: None, "bool": lambda r: r == "True", "int": int,
           "float": float, "str": ast.literal_eval}


def tree_text(tree: Any) -> Any:
    """A traced output's structure (``trace.flatten``'s) as plain JSON: lists, tuples,
    dicts (keys and constants: None, bools, ints, floats, strings) and namedtuples (by
    module, qualified name and fields); ``NotPortable`` otherwise.

    >>> tree_text((dict, {"w": None, "n": ("const", 3)}))
    ['dict', [[['str', "'w'"], None], [['str', "'n'"], ['const', ['int', '3']]]]]
    """
    if tree is None:
        return None
    kind, sub = tree
    if kind == "const":
        if type(sub) not in (type(None), bool, int, float, str):
            raise NotPortable(type(sub).__name__)
        return ["const", literal(sub)]
    if kind is dict:
        return ["dict", [[tree_text(("const", k))[1], tree_text(v)] for k, v in sub.items()]]
    if kind in (list, tuple):
        return [kind.__name__, [tree_text(v) for v in sub]]
    if issubclass(kind, tuple) and hasattr(kind, "_fields"):
        return ["class", *_by_name(kind)[1:3], list(kind._fields), [tree_text(v) for v in sub]]
    raise NotPortable(kind.__name__)


def tree_of(text: Any) -> Any:
    """``tree_text``'s structure again (a namedtuple's class found under its name, with
    the same fields; ``NotPortable`` when it is not there)."""
    if text is None:
        return None
    kind = text[0]
    if kind == "const":
        return ("const", _CONSTS[text[1][0]](text[1][1]))
    if kind == "dict":
        return (dict, {_CONSTS[k[0]](k[1]): tree_of(v) for k, v in text[1]})
    if kind in ("list", "tuple"):
        return (list if kind == "list" else tuple, [tree_of(v) for v in text[1]])
    found = sys.modules.get(text[1])
    for part in text[2].split(".") if kind == "class" else ():
        found = getattr(found, part, None)
    if not (isinstance(found, type) and issubclass(found, tuple)
            and list(getattr(found, "_fields", ())) == text[3]):
        raise NotPortable(f"{text[1]}.{text[2]}")
    return (found, [tree_of(v) for v in text[4]])


def captured_text(captured: CapturedGuards | None, own: Any = None) -> list:
    """The check's source and its bound values' descriptions; ``own(value)``: a
    description the caller's key makes sufficient (None: ``describe``'s)."""
    if captured is None:
        return []
    env = captured.check.__globals__
    said = lambda v: (own and own(v)) or describe(v)  # noqa: E731
    return [captured.source, {k: said(env[k]) for k in sorted(env) if k.startswith("_b")}]


def key_of(fn: types.FunctionType, door: tuple, args: tuple) -> str:
    """The entry's name for ``fn`` called through front door ``door`` (plain values)
    on ``args``; ``NotPortable`` when the call's key is not plain literals."""
    what = [FORMAT, literal(door), literal(plain_key(args)), containers(args), fn.__module__,
            code_hash(fn.__code__), str(dtypes.default_float),
            [getattr(config, k) for k in _SETTINGS]]
    h = hashlib.sha256(_versions_text().encode())
    h.update(repr(what).encode())  # (plain values whose repr says their types: one
    return h.hexdigest()            # text per key, taken faster than JSON's)


_PLAIN = (np.ndarray, tuple, list, dict)


def containers(args: tuple) -> list:
    """The classes of the call's containers that the call's key names by ``__name__``
    alone (a namedtuple, a dict's or list's subclass), in the order a walk finds them,
    each as its module, qualified name and fields (a namedtuple's) or keys (a dict's,
    in its order: an OrderedDict flattens in it): a ``P(w, b)`` from another module, or
    with other fields, is another key; ``NotPortable`` past ``_MAX_NODES`` containers.

    >>> import collections
    >>> containers(({"a": collections.OrderedDict(b=1)}, [1.0]))
    [['collections', 'OrderedDict', ['list', [['str', "'b'"]]]]]
    """
    out, stack, left = [], list(args), _MAX_NODES
    while stack:
        v = stack.pop()
        kind = type(v)
        if not isinstance(v, (tuple, list, dict)):
            continue
        left -= 1
        if left < 0:
            raise NotPortable(f"more than {_MAX_NODES} containers")
        if kind not in _PLAIN:
            extra = getattr(kind, "_fields", None) if isinstance(v, tuple) else \
                list(v) if isinstance(v, dict) else None
            out.append([kind.__module__, kind.__qualname__, literal(extra)])
        items = v.values() if isinstance(v, dict) else v
        stack.extend(reversed(list(items)))
    return out


_VERSIONS: list = [None, ""]  # versions() as last seen, and its text


def _versions_text() -> str:
    """``versions()`` as text (its repr: strings only, canonical as JSON's, and no JSON
    encoder to run in a later process's first call), made again only when it is
    another dict."""
    found = versions()
    if _VERSIONS[0] is not found:
        _VERSIONS[:] = found, repr(found)
    return _VERSIONS[1]


def _param_names(fn: types.FunctionType, n: int) -> list:
    """``param_names``'s, read off the code (``inspect.signature`` cost ~0.05 ms of a
    later process's first call) unless ``fn`` wraps another or says its signature."""
    code = fn.__code__
    if hasattr(fn, "__wrapped__") or hasattr(fn, "__signature__") or n > code.co_argcount:
        return param_names(fn, n)
    return list(code.co_varnames[:n])


def kept_function(fn: Any) -> tuple[types.FunctionType, tuple] | None:
    """The user function a variant of ``fn`` is keyed by, and the settings the key adds:
    ``fn`` itself, or, for a front door's function object that says its settings
    (``kept_settings``: hessian's inner jacrev, the function its outer jacfwd traces;
    hessian's outer jacfwd, vmap's in vmap(hessian(f))), the function it wraps (through
    such objects) with all their settings; None: not kept."""
    settings: tuple = ()
    for _ in range(8):  # (a Jacobian of a Jacobian: vmap(hessian(f)), jacfwd(jacrev(f)))
        if isinstance(fn, types.FunctionType):
            return fn, settings
        said = getattr(fn, "kept_settings", None)
        if said is None:
            return None
        settings, fn = settings + tuple(said), getattr(fn, "__wrapped__", None)
    return None


def _key(fn: Any, door: tuple, args: tuple) -> str:
    """``key_of`` for ``fn`` as ``kept_function`` finds it (one that is found)."""
    inner, settings = kept_function(fn)
    return key_of(inner, (*door, *settings) if settings else door, args)


# ------------------------------------------------------------ load, store
def load(fn: Any, door: tuple, args: tuple) -> tuple[Traced, Module] | None:
    """The variant kept for this call (its ``Traced`` without the trace's values, and
    its module), or None: trace."""
    got = load_meta(fn, door, args)
    return got and got[:2]


def load_meta(fn: Any, door: tuple, args: tuple, key: str | None = None
              ) -> tuple[Traced, Module, Any] | None:
    """``load``, with the ``meta`` the variant was stored with (``key``: its key_of,
    when known)."""
    if kept_function(fn) is None:
        return None
    got = checked_entry(fn, args, lambda: key or _key(fn, door, args),
                        lambda fields: set())
    if got is None:
        return None
    fields, slots, captured, module, graph = got
    try:  # (the output's structure: a namedtuple class not found again is a miss)
        tree = tree_of(fields.get("tree"))
    except NotPortable:
        STATS["hits"] -= 1
        STATS["misses"] += 1
        return None
    return Traced(graph, slots, list(fields["requires"]), [], [], tree, len(graph.outputs),
                  captured, captured and captured.check,
                  notes=tuple(fields.get("notes", ()))), module, fields.get("meta")


def checked_entry(fn: Any, args: tuple, key: Callable, referenced: Callable,
                  own: Any = None, more: bool = False,
                  guards: Callable | None = None) -> tuple | None:
    """The entry ``key()`` names, read and checked against this call: its fields, slots,
    captured-value check, module and graph (and, with ``more``, ``more_modules``'s);
    None (trace) when there is none, when a
    captured value is not what it was (``referenced(fields)``: ids the walk takes as
    the entry's own inputs; ``own``: as ``captured_text``), or when it cannot be
    trusted (one warning). ``guards(compiled)``: the walk's result made without the
    walk (``captured.own_guards``), for a call whose every argument is traced, used
    when its description is the entry's (else, or when it gives None: the walk)."""
    directory = config.cache_dir
    try:
        found = read_entry(directory, key())
        if found is None:
            return None
        fields, source, codes = found
        slots = [(i, tuple(p)) for i, p in fields["slots"]]
        said = fields["captured"]
        traced = {i for i, _ in slots}  # (names for the other arguments only)
        named = kept_function(fn)  # (hessian's: its function's, walked through jacrev)
        names = _param_names(named[0] if named else fn, len(args)) \
            if len(traced) < len(args) else []
        compiled = {said[0]: codes[1]} if said else None
        captured = guards and not names and guards(compiled)  # (no walk: see own_guards)
        if not captured or captured_text(captured, own) != said:
            captured = collect(fn, args, names, traced, referenced(fields), compiled=compiled)
            if captured_text(captured, own) != said:
                STATS["misses"] += 1  # (a captured value is not what it was: trace)
                return None
        module = entry_module(fields, source, codes)
        graph = entry_graph(fields)
        others = more and more_modules(fields, source, codes)
    except NotPortable:
        return None
    except Refused as e:
        return _refused(directory, str(e), 8)
    except (OSError, ValueError, EOFError, KeyError, TypeError, IndexError) as e:
        return _refused(directory, f"{type(e).__name__}: {e}", 8)
    STATS["hits"] += 1
    return (fields, slots, captured, module, graph) + ((others,) if more else ())


def read_entry(directory: str, key: str) -> tuple[dict, str, tuple] | None:
    """Entry ``key``'s fields, generated source and code objects (its function's, its
    check's or None, then those of the modules ``fields["more"]`` describes: ``more``),
    checked (None when there is none; ``Refused`` when it cannot be trusted)."""
    path = os.path.join(directory, key)
    secret = open_directory(directory)
    try:
        if os.path.lexists(path + ".variant"):
            return _read(path, key, secret)
    except Missing:  # (written again meanwhile, its old code file removed)
        pass
    STATS["misses"] += 1
    return None


def entry_module(fields: dict, source: str, codes: tuple) -> Module:
    """An entry's generated module, its code object the one kept."""
    glb = {name: place_value(place) for name, place in fields["bound"].items()}
    return from_source(entry_source(fields, source), fields["name"], glb, codes[0])


def entry_graph(fields: dict) -> Graph:
    """A graph with no equations: the entry's inputs and outputs (shapes, dtypes)."""
    var = lambda s: Var(tuple(s[0]), np.dtype(s[1]))  # noqa: E731
    return Graph(list(map(var, fields["inputs"])), [], list(map(var, fields["outputs"])),
                 name=fields["graph"])


def _read(path: str, key: str, secret: bytes) -> tuple[dict, str, tuple]:
    code_file = lambda f: path + _CODE_FILES.get(f.get("code"), ".vcode")  # noqa: E731
    fields, source, code = read_signed(path + ".variant", code_file, secret,
                                       lambda f: f.get("key") == key)
    codes = marshal.loads(code)
    n = len(fields.get("more", ()))
    if not (type(codes) is tuple and len(codes) == 2 + n and isinstance(codes[1], (
            types.CodeType, type(None))) and all(isinstance(c, types.CodeType)
                                                 for c in codes[:1] + codes[2:])):
        raise ValueError("its code is not a function's and a check's")
    return fields, source.decode("utf-8"), codes


#: the code files a header may name (nothing else is read)
_CODE_FILES = {f".v{n}code": f".v{n}code" for n in range(2, 10)}
_ANY_CODE = (".vcode", *_CODE_FILES)  # (an entry's dead ones are removed when it is written)


def more_modules(fields: dict, source: str, codes: tuple) -> list:
    """The modules kept in an entry after its own (``write_entry``'s ``more``): pairs of
    their meta and module."""
    out, end = [], len(source)
    sizes = [m["size"] for m in fields.get("more", ())]
    start = end - sum(sizes)
    for m, size, code in zip(fields.get("more", ()), sizes, codes[2:]):
        text = source[start + 1:start + size]
        out.append((m["meta"], entry_module(m, text, (code,))))
        start += size
    return out


def entry_source(fields: dict, source: str) -> str:
    """An entry's own module's source (the ``more`` modules' follow it)."""
    return source[:len(source) - sum(m["size"] for m in fields.get("more", ()))]


def store(fn: Any, door: tuple, args: tuple, traced: Traced, module: Module,
          meta: Any = None, parts: dict | None = None) -> str | None:
    """Keep the variant just traced for later processes, when all of it can be checked
    there (see the module); else nothing is written. ``meta``: plain JSON data the
    door reads back with it (``load_meta``); ``parts``: name -> more modules of the
    variant (``load_parts``). Returns the entry's key (None: not kept)."""
    directory = config.cache_dir
    target = kept_function(fn)
    if target is None or traced.captures or traced.guards or \
            traced.generators or traced.cut is not None or \
            traced.n_outputs != len(traced.graph.outputs) \
            or warned(module) or any(map(warned, (parts or {}).values())) \
            or reads_outside(target[0], traced.captured):
        return None
    try:
        key = _key(fn, door, args)
        fields = entry_fields(key, module, traced.graph) | {
            "slots": [[i, list(p)] for i, p in traced.arg_slots],
            "requires": list(traced.requires), "captured": captured_text(traced.captured),
            "meta": meta, "tree": tree_text(traced.out_tree), "notes": list(traced.notes)}
        for name, part in (parts or {}).items():  # (first: the entry finds them written)
            if not store_part(key, name, part):
                return None
    except (NotPortable, TypeError, ValueError):
        return None
    write_entry(directory, key, fields, module, traced.captured)
    return key


# ------------------------------------------------------------ parts
# A variant of more than one module (jacfwd's: the forward, the tangent program, the
# batched columns made later) keeps the others in entries of their own, each named by
# a hash of the variant's key and the part's name, read once the variant's is checked.
def part_key(key: str, name: str) -> str:
    return hashlib.sha256(f"{key} part {name}".encode()).hexdigest()


def store_part(key: str, name: str, module: Module, meta: Any = None) -> bool:
    """Keep ``module`` as part ``name`` of entry ``key`` (with plain JSON ``meta``);
    False when it cannot be kept."""
    directory = config.cache_dir
    if not directory or warned(module):
        return False
    k = part_key(key, name)
    try:
        fields = {"key": k, "name": module.fn.__name__, "bound": _bound_of(module),
                  "meta": meta}
    except NotPortable:
        return False
    return write_entry(directory, k, fields, module)


def load_part(key: str, name: str) -> tuple[Module, Any] | None:
    """Part ``name`` of entry ``key``: its module and meta; None when it is not there
    or cannot be trusted (one warning)."""
    directory = config.cache_dir
    try:
        found = read_entry(directory, part_key(key, name))
        if found is None:
            return None
        fields, source, codes = found
        return entry_module(fields, source, codes), fields.get("meta")
    except Refused as e:
        return _refused(directory, str(e), 8)
    except (OSError, ValueError, EOFError, KeyError, TypeError, IndexError) as e:
        return _refused(directory, f"{type(e).__name__}: {e}", 8)


def load_parts(fn: Any, door: tuple, args: tuple, names: tuple
               ) -> tuple[Traced, Module, Any, dict, str] | None:
    """``load_meta``'s, with the parts ``names`` (name -> module) and the entry's key
    (more parts may be kept under it later); None (trace) when one is missing."""
    if kept_function(fn) is None:
        return None
    try:
        key = _key(fn, door, args)
    except NotPortable:  # (a call's key that is not plain literals: a dict's, say)
        return None
    got = load_meta(fn, door, args, key)
    if got is None:
        return None
    parts = {}
    for name in names:
        found = load_part(key, name)
        if found is None:
            return None
        parts[name] = found[0]
    return (*got, parts, key)


def entry_fields(key: str, module: Module, graph: Graph) -> dict:
    """The fields every entry has: its key, the module's name and the values its code
    binds, the graph's name, inputs and outputs."""
    return {"key": key, "name": module.fn.__name__, "graph": graph.name,
            "bound": _bound_of(module),
            "inputs": [[list(v.shape), v.dtype.str] for v in graph.inputs],
            "outputs": [[list(v.shape), v.dtype.str] for v in graph.outputs]}


def write_entry(directory: str, key: str, fields: dict, module: Module,
                captured: CapturedGuards | None = None, more: list = ()) -> bool:
    """Write entry ``key`` (see the module), with ``captured``'s check compiled,
    warning once when the directory refuses; whether it was written. ``more``: pairs
    of plain JSON meta and modules kept in the same entry (one read, one HMAC: a
    compiled function's backward), their sources after the module's; an entry
    written again with them names a code file of its own (``.v2code``: a process
    reading the entry meanwhile reads the code its ``.variant`` was signed with, or,
    once the new ``.variant`` is in place and the old code file removed, misses)."""
    texts = ["\n" + m.source for _, m in more]
    fields = fields | ({"code": f".v{len(more) + 1}code", "more": [
        {"name": m.fn.__name__, "bound": _bound_of(m), "meta": meta, "size": len(text)}
        for (meta, m), text in zip(more, texts)]} if more else {})
    try:
        header = b"# " + json.dumps(fields).encode()
    except (TypeError, ValueError):
        return False
    body = "".join([module.source, *texts]).encode("utf-8")
    code = marshal.dumps((module.fn.__code__, captured and check_code(captured.source),
                          *(m.fn.__code__ for _, m in more)))
    path = os.path.join(directory, key)
    try:
        secret = open_directory(directory)
        write_pair(path + ".variant", mac_line(secret, header, body, code).encode() + b"\n"
                   + header + b"\n" + body, path + fields.get("code", ".vcode"), code,
                   tuple(path + c for c in _ANY_CODE))
    except Refused as e:
        _refused(directory, str(e))
    except OSError as e:
        _refused(directory, f"cannot write to it: {type(e).__name__}: {e}")
    else:
        STATS["writes"] += 1
        return True
    return False


def _bound_of(module: Module) -> dict:
    """The values a module's code binds, by their places (``NotPortable``: one has none)."""
    skip = {"np", "rt", "ops", "__builtins__"}
    return {name: _bound_place(v) for name, v in module.fn.__globals__.items()
            if name not in skip}


def _bound_place(value: Any) -> list:
    place = literal_place(value)
    if place is None:
        raise NotPortable(type(value).__name__)
    return place


def _refused(directory: str, why: str, stacklevel: int = 7) -> None:
    STATS["refused"] += 1
    warn(directory, why, stacklevel=stacklevel)


__all__ = ["load", "load_meta", "load_parts", "load_part", "store_part", "part_key", "store",
           "key_of", "checked_entry", "read_entry", "write_entry", "more_modules",
           "entry_fields", "entry_module", "entry_graph", "literal", "kept_function",
           "NotPortable", "describe", "tree_text", "tree_of", "captured_text", "code_hash", "STATS"]
