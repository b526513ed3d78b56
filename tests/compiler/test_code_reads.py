"""``code_reads``: its own reading of the bytecode finds what ``dis`` finds (the names
each code object loads, their first lines and the code reading them)."""

from __future__ import annotations

import gc
import os
import types

import pytest

from pullback.compiler import code_reads
from pullback.compiler.code_reads import _Reads, _scan, _scan_dis
from pullback.user_code import real_path

K = 3


class _Base:
    def m(self) -> int:
        return 1


class _Child(_Base):
    def m(self) -> int:  # LOAD_SUPER_ATTR on 3.12+, a cell for __class__
        return super().m() + K


def _sample(x, *, wide=tuple(range(300))):
    c = len(wide)

    def inner(y):
        nonlocal c
        c += 1
        return y.shape, globals()["K"], getattr(y, "dtype"), [c for _ in range(K)]  # noqa: B009

    try:
        return inner(x).real, {"a": 1}.get("a"), lambda: (c, K)
    except ValueError:
        return wide[299]  # an EXTENDED_ARG for a constant past 255


@pytest.mark.skipif(not code_reads._FAST, reason="dis only on this Python")
def test_the_fast_scan_finds_what_dis_finds() -> None:
    codes = [_sample.__code__, _Child.m.__code__] + [
        f.__code__ for f in gc.get_objects() if isinstance(f, types.FunctionType)][:3000]
    for code in codes:
        fast, slow = _Reads({}, {}, {}, {}, {}), _Reads({}, {}, {}, {}, {})
        _scan(code, fast)
        _scan_dis(code, slow)
        assert vars(fast) == vars(slow), code
    found = _Reads({}, {}, {}, {}, {})
    _scan(_sample.__code__, found)
    assert {"len", "range", "globals", "getattr", "K", "ValueError"} <= set(found.globals)
    assert {"shape", "real", "get"} <= set(found.attrs) and "c" in found.cells


def test_real_path_is_realpaths(tmp_path) -> None:
    """``user_code.real_path``, which skips the folders it saw, agrees with
    ``os.path.realpath`` on links, ``..``, missing and relative paths."""
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "f.py").write_text("")
    (tmp_path / "l").symlink_to(tmp_path / "a")
    d = str(tmp_path)
    for p in [f"{d}/a/b/f.py", f"{d}/l/b/f.py", f"{d}/l/b/../b/f.py", f"{d}/missing/x.py",
              "/", "rel/x.py", f"{d}//a/./b/f.py", f"{d}/l", f"{d}/a/b/f.py"]:
        assert real_path(p) == os.path.realpath(p), p
