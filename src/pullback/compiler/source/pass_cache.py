"""The source pass's output kept in the persistent cache (``disk_cache.py``), so that a
later process converting the same function skips the pass: its parse, analyses and
``compile``.

The rewritten code depends on more than the function's source: the pass looks up the
names and attribute chains it calls (``np.zeros``, ``F.cross_entropy``, ``helper``) in
the function's globals, closure and imports, and rewrites a call of numpy's, a user
function or an unknown object differently from a call of anything else. So an entry
is keyed by the function's source text, file, line, name and free variables (and
pullback's, numpy's and Python's versions), and it records what each name the pass
looked up was, as a description of its kind (module; module, name and type of a
function, class or object; what the pass asks of it). A process that finds the entry
looks every name up again in its own function's scope; the code is used only when
each description is the same, else the pass runs and the entry is written afresh.

Files: ``<key>.pass`` (an HMAC line, then one line of JSON: the descriptions, the
function's own imports, the pass's side outputs: the int arguments bounding converted
loops, the outside state the function changes) and ``<key>.passcode`` (the rewritten
code object, as ``marshal`` writes it, loaded only once the HMAC over both holds);
written and read as ``disk_cache`` writes and reads its files (0600, refused when not
the user's, one warning for a corrupted or foreign file).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import marshal
import os
import types
from typing import Any, NamedTuple

from ...settings import config
from ..cache_files import (
    Missing,
    Refused,
    mac_line,
    open_directory,
    read_owned,
    versions,
    warn,
    write_pair,
)
from .compiling import _FUTURE
from .parsing import _function_lines
from .scope import (
    _UNKNOWN,
    Scope,
    _user_function,
    is_higher_order,
    is_numpy,
    is_seeding,
    replaceable,
)

FORMAT = 2  # this file layout's version, part of the key
#: what this process did: ``hits`` (the pass skipped), ``misses``, ``writes``,
#: ``refused`` (files or directories ignored)
STATS = {"hits": 0, "misses": 0, "writes": 0, "refused": 0}


class Saved(NamedTuple):
    """A pass's output: the rewritten code (None: nothing to rewrite), whether loops
    became functions, the positions of int arguments bounding converted loops, and the
    ``UPDATES`` entry, and the loops left as written: ``(line, why)`` pairs, which
    ``pb.compiler.inspect`` lists)."""
    code: types.CodeType | None
    looped: bool
    bounds: tuple
    updates: frozenset
    refused: tuple = ()


#: ``load``'s answer for an entry that is refused (not to be written over)
REFUSED = Saved(None, False, (), frozenset())


def describe(value: Any) -> list:
    """What the pass may ask of a looked-up ``value``, as plain JSON values."""
    if value is _UNKNOWN:
        return ["unknown"]
    if isinstance(value, types.ModuleType):
        return ["module", value.__name__]
    kind = type(value)
    return ["object", _text(value, "__module__"), _text(value, "__qualname__"),
            _text(value, "__name__"), kind.__module__, kind.__qualname__, is_numpy(value),
            _user_function(value), replaceable(value) is not None, is_higher_order(value),
            is_seeding(value)]


def _text(value: Any, attr: str) -> str | None:
    try:
        found = getattr(value, attr, None)
    except Exception:  # (a property of the user's that raises)
        return None
    return found if isinstance(found, str) else None


def key_of(fn: types.FunctionType) -> str | None:
    """The entry's name for ``fn``, or None (a lambda, a function without source)."""
    code = fn.__code__
    if code.co_name == "<lambda>":
        return None
    try:
        lines, start = _function_lines(code)
    except (OSError, TypeError, IndexError):
        return None
    what = [FORMAT, versions(), code.co_filename, start, code.co_firstlineno,
            getattr(code, "co_qualname", fn.__qualname__), code.co_name,
            list(code.co_freevars), code.co_flags & _FUTURE, "".join(lines)]
    return hashlib.sha256(json.dumps(what).encode()).hexdigest()


def load(fn: types.FunctionType, key: str) -> Saved | None:
    """The pass's output for ``fn`` from the cache, when an entry ``key`` is there and
    every name it looked up is what it was; else None (``REFUSED`` when the entry or
    the directory is not used, with a warning)."""
    directory = config.cache_dir
    try:
        secret = open_directory(directory)
        path = os.path.join(directory, key + ".pass")
        if not os.path.lexists(path):
            STATS["misses"] += 1
            return None
        fields, code = _read(path, key, secret)
    except Missing:  # (written again while read, its code file first: a miss)
        STATS["misses"] += 1
        return None
    except Refused as e:
        return _refused(directory, str(e))
    except (OSError, ValueError, EOFError) as e:
        return _refused(directory, f"{type(e).__name__}: {e}")
    scope = Scope(fn, imports=fields["imports"])
    if any(describe(scope.lookup(name)) != was for name, was in fields["seen"].items()):
        STATS["misses"] += 1  # (a name is now another kind of object: the pass runs)
        return None
    STATS["hits"] += 1
    return Saved(marshal.loads(code) if fields["rewritten"] else None, fields["looped"],
                 tuple(fields["bounds"]), frozenset(tuple(u) for u in fields["updates"]),
                 tuple((line, why) for line, why in fields["refused"]))


def _read(path: str, key: str, secret: bytes) -> tuple:
    data = read_owned(path, f"the file {key}.pass")
    code = read_owned(path + "code", f"the file {key}.passcode")
    try:
        mac, header = data.split(b"\n", 1)
        fields = json.loads(header[2:])
        ok = hmac.compare_digest(mac.decode("ascii"), mac_line(secret, header, b"", code))
    except (ValueError, UnicodeDecodeError):
        ok = False
    if not ok or not isinstance(fields, dict) or fields.get("key") != key:
        raise Refused(f"the file {key}.pass is corrupted or not this directory's (its HMAC "
                      "does not match); it is ignored")
    return fields, code


def store(key: str, scope: Scope, saved: Saved) -> None:
    """Write the pass's output ``saved`` for the function of ``scope`` as entry ``key``."""
    directory = config.cache_dir
    fields = {"key": key, "rewritten": saved.code is not None, "looped": saved.looped,
              "bounds": list(saved.bounds), "updates": sorted(saved.updates, key=repr),
              "refused": [list(r) for r in saved.refused],
              "imports": scope.imports,
              "seen": {name: describe(v) for name, v in scope.seen.items()}}
    header = b"# " + json.dumps(fields).encode()
    code = b"" if saved.code is None else marshal.dumps(saved.code)
    path = os.path.join(directory, key + ".pass")
    try:
        secret = open_directory(directory)
        write_pair(path, mac_line(secret, header, b"", code).encode() + b"\n" + header,
                   path + "code", code)
    except Refused as e:
        _refused(directory, str(e))
    except (OSError, ValueError) as e:
        _refused(directory, f"cannot write to it: {type(e).__name__}: {e}")
    else:
        STATS["writes"] += 1


def _refused(directory: str, why: str) -> Saved:
    STATS["refused"] += 1
    warn(directory, why, stacklevel=6)
    return REFUSED
