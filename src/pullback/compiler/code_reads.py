"""What a code object reads from outside its arguments, by its instructions: the
globals, closure cells and attributes it loads (each with the line that first reads
it), and the names it may look up by a string. ``captured.py`` guards what they are.
"""

from __future__ import annotations

import dis
import types
import weakref
from dataclasses import dataclass
from typing import Any

# the instructions that read a global, a closure cell or an attribute (3.11 to 3.13)
_GLOBAL_LOADS = frozenset({"LOAD_GLOBAL", "LOAD_NAME", "LOAD_FROM_DICT_OR_GLOBALS"})
_CELL_LOADS = frozenset({"LOAD_DEREF", "LOAD_CLASSDEREF", "LOAD_CLOSURE",
                         "LOAD_FROM_DICT_OR_DEREF"})
_ATTR_LOADS = frozenset({"LOAD_ATTR", "LOAD_METHOD", "LOAD_SUPER_ATTR"})
# builtins that look names up by a string (``globals()['K']``, ``getattr(mod, 'K')``):
# code calling one has its string constants taken as global and attribute names too
_DYNAMIC_GLOBALS = frozenset({"globals", "vars", "eval", "exec"})
_DYNAMIC_ATTRS = frozenset({"getattr", "vars", "eval", "exec", "__dict__"})


@dataclass
class _Reads:
    """The names a code object (with the code nested in it) loads, each with its first
    line: globals, closure cells and attributes."""

    globals: dict
    cells: dict
    attrs: dict
    code: Any  # the code each name was first read in, per name: {name: code}
    strings: dict | None = None  # identifier-like string constants, each with its line


_READS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def reads(code: types.CodeType) -> _Reads:
    found = _READS.get(code)
    if found is None:  # (filled before it is shared: another thread may read it)
        found = _Reads({}, {}, {}, {}, {})
        _scan(code, found)
        _dynamic(found)
        _READS[code] = found
    return found


def _dynamic(r: _Reads) -> None:
    """Code that looks names up by a string (``globals()['K']``, ``vars(obj)['K']``,
    ``getattr(mod, 'K')``) reads, as far as the walk knows, every name its string
    constants spell: they are taken as the globals and attributes it reads. A name
    computed at run time (not a constant of the code) is not seen."""
    dyn_globals = not _DYNAMIC_GLOBALS.isdisjoint(r.globals)
    dyn_attrs = not _DYNAMIC_ATTRS.isdisjoint(r.globals) or "__dict__" in r.attrs
    for name, (line, code) in (r.strings or {}).items():
        for table, wanted, kind in ((r.globals, dyn_globals, "name"),
                                    (r.attrs, dyn_attrs, "attr")):
            if wanted and name not in table:
                table[name] = line
                r.code.setdefault((kind, name), code)
    r.strings = None


def _scan(code: types.CodeType, into: _Reads) -> None:
    line = code.co_firstlineno
    for ins in dis.get_instructions(code):
        pos = getattr(ins, "positions", None)
        line = (pos.lineno if pos is not None and pos.lineno else
                ins.starts_line or line)
        if not isinstance(ins.argval, str):
            continue
        if ins.opname == "LOAD_CONST":
            if ins.argval.isidentifier():
                into.strings.setdefault(ins.argval, (line, code))
            continue
        table = (into.globals if ins.opname in _GLOBAL_LOADS else
                 into.cells if ins.opname in _CELL_LOADS else
                 into.attrs if ins.opname in _ATTR_LOADS else None)
        if table is not None and ins.argval not in table:
            table[ins.argval] = line
            into.code.setdefault(("attr" if table is into.attrs else "name", ins.argval),
                                 code)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            _scan(c, into)
