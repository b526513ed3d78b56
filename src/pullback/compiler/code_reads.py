"""What a code object reads from outside its arguments, by its instructions: the
globals, closure cells and attributes it loads (each with the line that first reads
it), and the names it may look up by a string. ``captured.py`` guards what they are.
"""

from __future__ import annotations

import dis
import sys
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
        (_scan if _FAST else _scan_dis)(code, found)
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


def _scan_dis(code: types.CodeType, into: _Reads) -> None:
    """``_scan`` by ``dis`` (any Python version; ``_scan`` is its faster twin)."""
    line = code.co_firstlineno
    for ins in dis.get_instructions(code):
        pos = getattr(ins, "positions", None)
        line = (pos.lineno if pos is not None and pos.lineno else
                ins.starts_line or line)
        if isinstance(ins.argval, str):
            _note(into, code, ins.opname, ins.argval, line)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            _scan_dis(c, into)


def _note(into: _Reads, code: types.CodeType, opname: str, name: str, line: int) -> None:
    """Record instruction ``opname`` of ``code`` reading ``name`` at ``line``."""
    if opname == "LOAD_CONST":
        if name.isidentifier():
            into.strings.setdefault(name, (line, code))
        return
    table = (into.globals if opname in _GLOBAL_LOADS else
             into.cells if opname in _CELL_LOADS else
             into.attrs if opname in _ATTR_LOADS else None)
    if table is not None and name not in table:
        table[name] = line
        into.code.setdefault(("attr" if table is into.attrs else "name", name), code)


# ``_scan`` reads the bytecode itself on Pythons 3.11 to 3.13 (whose layout it knows:
# two bytes an instruction, inline caches as CACHE (0) units, one position per unit):
# ``dis`` builds an Instruction per unit and cost a later process's first call from
# the persistent cache ~0.2 ms for a small function. Opcode -> (name, how its argument
# finds its value: "const", "name", "name>>1", "name>>2" or "local").
_FAST = (3, 11) <= sys.version_info[:2] <= (3, 13)
_SHIFTED_ATTR = sys.version_info >= (3, 12)  # LOAD_ATTR's name index: oparg >> 1
_ARGS = {dis.opmap[n]: (n, how) for n, how in (
    ("LOAD_CONST", "const"), ("LOAD_GLOBAL", "name>>1"), ("LOAD_NAME", "name"),
    ("LOAD_FROM_DICT_OR_GLOBALS", "name"),
    ("LOAD_ATTR", "name>>1" if _SHIFTED_ATTR else "name"), ("LOAD_METHOD", "name"),
    ("LOAD_SUPER_ATTR", "name>>2"), *((n, "local") for n in _CELL_LOADS))
    if n in dis.opmap}
_EXTENDED_ARG = dis.opmap["EXTENDED_ARG"]


def _scan(code: types.CodeType, into: _Reads) -> None:
    """Fill ``into`` with what ``code`` (and the code nested in it) reads, each name
    with the line of its first read (an instruction without one: the line before)."""
    raw = code.co_code
    line = code.co_firstlineno
    ext = 0
    for i, pos in enumerate(code.co_positions()):
        op = raw[2 * i]
        if op == 0:  # CACHE: not an instruction
            continue
        arg = raw[2 * i + 1] | ext
        ext = arg << 8 if op == _EXTENDED_ARG else 0
        if pos[0]:
            line = pos[0]
        found = _ARGS.get(op)
        if found is None:
            continue
        opname, how = found
        value = (code.co_consts[arg] if how == "const" else
                 code._varname_from_oparg(arg) if how == "local" else
                 code.co_names[arg >> 1 if how == "name>>1" else
                               arg >> 2 if how == "name>>2" else arg])
        if isinstance(value, str):
            _note(into, code, opname, value, line)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            _scan(c, into)
