"""The persistent cache's fingerprint of an editable checkout (``cache_files.snapshot``):
taken from its folders' times once Python has imported it, it changes when a source
file is edited in place (Python rewrites that module's bytecode on the next import),
stays while nothing changes, and is not taken when Python writes no bytecode."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import pullback as pb
from pullback.compiler import cache_files


@pytest.fixture
def package(tmp_path, monkeypatch):
    """A package of the user's standing for pullback's files: ``import_it()`` imports
    it in a new process (writing bytecode), ``taken()`` the snapshot over it now."""
    source = tmp_path / "pkg" / "mod.py"
    source.parent.mkdir()
    (source.parent / "__init__.py").write_text("")
    source.write_text("X = 1\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    monkeypatch.setattr(cache_files, "_roots", lambda: {str(source.parent)})
    monkeypatch.setattr(cache_files, "_loaded_files", lambda roots: [str(source)])
    monkeypatch.setattr(cache_files, "_snapshot", {})
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    # (with a cache directory set, a stat per file is taken at import when no
    # snapshot is: these tests are about the snapshot alone)
    monkeypatch.setattr(pb.config, "cache_dir", None)

    def import_it() -> None:
        subprocess.run([sys.executable, "-c", "import pkg.mod"], cwd=tmp_path, env=env,
                       check=True, timeout=60)

    def taken() -> str | None:
        cache_files._snapshot.clear()
        cache_files.snapshot()
        return cache_files._snapshot.get("hash")

    return source, import_it, taken


def test_an_edit_in_place_changes_the_snapshot(package):
    source, import_it, taken = package
    import_it()
    first = taken()
    assert first is not None and first == taken()
    import_it()  # (nothing changed: the bytecode is not rewritten)
    assert taken() == first
    with open(source, "r+") as f:  # in place: the package folder's time stays (another
        f.write("X = 22\n")  # size: within the second, Python's bytecode check reads it)
    import_it()
    second = taken()
    assert second != first
    import_it()
    assert taken() == second


def test_no_snapshot_without_bytecode(package, monkeypatch):
    _, import_it, taken = package
    import_it()
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    assert taken() is None


def test_the_snapshot_holds_until_a_module_of_pullbacks_is_loaded(monkeypatch):
    """Modules loaded after the snapshot are read from where it stopped (sys.modules
    keeps the order of loading): another package's keep it; one of pullback's, or a
    module removed from before it, makes the whole list read again."""
    import types

    root = sorted(cache_files._roots())[0]
    if cache_files._installed(cache_files._roots()):
        pytest.skip("an install in site-packages takes no snapshot")
    monkeypatch.setattr(cache_files, "_snapshot", {})
    monkeypatch.setattr(cache_files, "_folder_times", lambda files: [("folder", 1, 2)])
    cache_files.snapshot()
    other = types.ModuleType("pb_test_other")
    other.__file__ = os.path.join(os.path.dirname(root), "elsewhere", "other.py")
    monkeypatch.setitem(sys.modules, "pb_test_other", other)
    assert cache_files._snapshot_holds() and cache_files._snapshot["last"] == "pb_test_other"
    first = next(iter(sys.modules))  # (removed from before: the whole list is read)
    monkeypatch.delitem(sys.modules, first)
    for name in ("pb_test_a", "pb_test_b"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    assert cache_files._snapshot_holds() and cache_files._snapshot["last"] == "pb_test_b"
    ours = types.ModuleType("pb_test_ours")
    ours.__file__ = os.path.join(root, "late_module.py")
    monkeypatch.setitem(sys.modules, "pb_test_ours", ours)
    assert not cache_files._snapshot_holds()
