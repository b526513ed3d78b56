"""The source pass reads a function's block from where its code's lines end (no
``tokenize``); a block that does not parse to the function is read again by
``inspect.getblock``: never another function."""

from __future__ import annotations

import importlib.util
import inspect

import gast
import pytest

from pullback.compiler.source import parsing

MODULE = '''
import functools

def plain(x):
    return x + 1

def signature_on_lines(
    x,
    y=2,
):
    return x * y

def dead_code_after_return(x):
    return x
    y = 2
    pass

def ends_in_else(x):
    if x:
        return 1
    else:
        pass

def a_string_at_column_zero(x):
    return x
    s = """
not indented
"""

def closes_a_bracket_at_column_zero(x):
    y = [x,
1]
    return y

@functools.lru_cache(
    maxsize=2,
)
def decorated(x):
    def inner(y):
        return y
    return inner(x)

class Holder:
    def method(self, x):
        return x

    # a comment between methods
    def other(self):
        return 0

if True:
    def one_line(x): return x
else:
    def one_line(x): return -x
'''


@pytest.fixture(scope="module")
def module(tmp_path_factory):
    path = tmp_path_factory.mktemp("lines") / "lines_module.py"
    path.write_text(MODULE)
    spec = importlib.util.spec_from_file_location("lines_module", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("name, fast", [
    ("plain", True), ("signature_on_lines", True), ("dead_code_after_return", True),
    ("ends_in_else", True), ("a_string_at_column_zero", False),
    ("closes_a_bracket_at_column_zero", True), ("decorated", True),
    ("Holder.method", True), ("Holder.other", True), ("one_line", True)])
def test_the_block_is_getblocks(module, name, fast):
    fn = module
    for part in name.split("."):
        fn = getattr(fn, part)
    fn = getattr(fn, "__wrapped__", fn)
    code = fn.__code__
    exact = parsing._parse_block(code, exact=True)
    assert exact is not None
    node = parsing.parse_function(code)
    assert gast.dump(node) == gast.dump(exact)
    assert (parsing._parse_block(code) is not parsing._UNKNOWN) == fast
    lines, start = parsing._function_lines(code, exact=True)
    assert (lines, start) == inspect.getsourcelines(fn)
