"""The source pass's parsing: a function's node read from its file at its own lines (a
``def`` or a lambda, exact even where two share a line), and its parameters.
``rewriter.py`` rewrites the node; ``source/__init__.py`` runs the pass.
"""

from __future__ import annotations

import copy
import functools
import inspect
import linecache
import types
from typing import Any

import gast

from .compiling import _AST_LOCK, codes_in
from .nodes import walk
from .scope import _UNKNOWN


def parse_function(code: types.CodeType) -> Any:
    """The function's (or lambda's) node, parsed from its file, at its own lines and
    columns; None when the source is unavailable or ambiguous."""
    if code.co_name == "<lambda>":
        return _parse_lambda(code)
    found = _parse_block(code)
    return _parse_block(code, exact=True) if found is _UNKNOWN else found


def _parse_block(code: types.CodeType, exact: bool = False) -> Any:
    """``parse_function``'s node of a function read by ``_function_lines``; _UNKNOWN
    when its block (unless ``exact``) does not parse to the function."""
    try:
        lines, start = _function_lines(code, exact)
    except (OSError, TypeError, IndexError):
        return None
    text = "".join(lines)
    indented = lines[0][:1] in (" ", "\t")
    if indented:  # parse it where it stands: columns stay the file's
        text = "if 1:\n" + text
    try:
        with _AST_LOCK:
            tree = gast.parse(text)
    except SyntaxError:
        return None if exact else _UNKNOWN
    gast.increment_lineno(tree, start - 1 - indented)
    found = [n for n in (tree.body[0].body if indented else tree.body)[:1]
             if isinstance(n, gast.FunctionDef) and n.name == code.co_name
             and _arg_names(n.args) == _params(code)]
    return found[0] if len(found) == 1 else None if exact else _UNKNOWN


def _file_lines(code: types.CodeType) -> list[str]:
    """The lines of the file ``code`` was compiled from, read as ``inspect`` reads them
    (through ``linecache``) but without its search of every loaded module for the one
    holding the code: on a process's first conversion that search cost more than the
    rest of the pass (30 ms of 50 with 500 modules loaded). A file's source that only
    its module's loader can give (a zip import) is left to ``inspect``; code compiled
    from a string that ``linecache`` does not hold has none (``OSError``)."""
    filename = code.co_filename
    if filename.startswith("<") and filename.endswith(">"):
        lines = linecache.getlines(filename)
        if not lines:
            raise OSError(f"no source for code compiled from {filename}")
        return lines
    linecache.checkcache(filename)  # (an edited file is read again)
    return linecache.getlines(filename) or inspect.findsource(code)[0]


def _function_lines(code: types.CodeType, exact: bool = False) -> tuple[list[str], int]:
    """A function's lines (from its first decorator, or ``def``) and the number of the
    first, as ``inspect.getsourcelines`` gives them. Unless ``exact``, the block ends
    where ``_block_end`` says (a first call of ``inspect.getblock`` in a process
    compiles ``tokenize``'s patterns, a few ms): a block that does not parse, or parses
    to another function, is read again ``exact``ly (``parse_function``)."""
    lines = _file_lines(code)
    k = code.co_firstlineno - 1
    while k > 0 and not lines[k].lstrip().startswith(("def ", "async def ", "@")):
        k -= 1
    end = None if exact else _block_end(lines, k, code)
    return (inspect.getblock(lines[k:]) if end is None else lines[k:end]), k + 1


def _block_end(lines: list, k: int, code: types.CodeType) -> int | None:
    """The end (exclusive) of the function starting at ``lines[k]``: past the last line
    its instructions (and its nested functions') span, then past the blank, comment and
    more indented lines that follow (code the compiler dropped: ``pass``, code after a
    ``return``). A line inside a string or brackets that is indented less cuts the block
    short: then it does not parse. None when the code's lines are unknown."""
    last = max((p[1] for c in codes_in(code) for p in _line_spans(c) if p[1] is not None),
               default=None)
    if last is None or not k < last <= len(lines):
        return None
    indent = len(lines[k]) - len(lines[k].lstrip())
    end = last
    while end < len(lines):
        text = lines[end].lstrip()
        if text and not text.startswith("#") and len(lines[end]) - len(text) <= indent:
            break
        end += 1
    return end


def _line_spans(code: types.CodeType) -> Any:
    """(start line, end line) of ``code``'s instructions (before Python 3.11, the start
    line twice)."""
    if hasattr(code, "co_positions"):
        return code.co_positions()
    return ((line, line) for _, _, line in code.co_lines())


def _parse_lambda(code: types.CodeType) -> Any:
    """A lambda's node, from its whole file (its line may be a continuation line, or
    its source span lines): the lambda starting on its first line with its arguments;
    among several (``[lambda x: x + 1, lambda x: x * 2]``), the innermost whose body
    holds every source position of the code's instructions. None when none or several
    remain, or the source is unavailable."""
    try:
        lines = _file_lines(code)
    except (OSError, TypeError, IndexError):
        return None
    tree = _file_tree("".join(lines))
    if tree is None:
        return None
    params = _params(code)
    found = [n for n in walk(tree) if isinstance(n, gast.Lambda)
             and n.lineno == code.co_firstlineno and _arg_names(n.args) == params]
    if len(found) > 1:  # (spans of nodes nest or are disjoint: the innermost is one)
        spans = _positions(code)
        found = [n for n in found if spans and all(_holds(n.body, p) for p in spans)]
        found = [n for n in found if not any(m is not n and _holds(n, _span(m))
                                             for m in found)]
    return copy.deepcopy(found[0]) if len(found) == 1 else None


@functools.lru_cache(maxsize=8)
def _file_tree(text: str) -> Any:
    """A whole file's tree, parsed once for all its lambdas (None: it does not parse).
    Shared: what is taken from it is copied first."""
    try:
        with _AST_LOCK:
            return gast.parse(text)
    except (SyntaxError, ValueError):
        return None


def _positions(code: types.CodeType) -> list:
    """The source spans of ``code``'s instructions (none before Python 3.11)."""
    spans = getattr(code, "co_positions", lambda: ())()
    return [p for p in spans if None not in p and (p[0], p[2]) != (p[1], p[3])]


def _holds(node: Any, span: tuple) -> bool:
    line, end_line, col, end_col = span
    return (node.lineno, node.col_offset) <= (line, col) \
        and (end_line, end_col) <= (node.end_lineno, node.end_col_offset)


def _span(node: Any) -> tuple:
    return (node.lineno, node.end_lineno, node.col_offset, node.end_col_offset)


def _arg_names(args: gast.arguments) -> list:
    names = [a.id for a in args.posonlyargs + args.args + args.kwonlyargs]
    return names + [a.id for a in (args.vararg, args.kwarg) if a is not None]


def _params(code: types.CodeType) -> list:
    n = code.co_argcount + code.co_kwonlyargcount
    n += bool(code.co_flags & inspect.CO_VARARGS) + bool(code.co_flags & inspect.CO_VARKEYWORDS)
    return list(code.co_varnames[:n])


def strip_signature(node: Any) -> None:
    """Defaults, annotations and decorators were evaluated when ``def`` ran: the new
    function takes them from the old one."""
    args = node.args
    args.defaults = []
    args.kw_defaults = [None] * len(args.kwonlyargs)
    for a in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]:
        if a is not None:
            a.annotation = None
    if isinstance(node, gast.FunctionDef):
        node.decorator_list = []
        node.returns = None
