"""The cache directory holds live files only: an entry written again under another
code file's name (a compiled variant kept again with its backward, then jacrev's
batched backward) removes the code file the old one read; a write that fails (a full
disk) leaves neither a temporary file nor half an entry; a reader whose entry was
written again meanwhile (its old code file gone) misses, with no warning."""

from __future__ import annotations

import errno
import json
import os
import stat
import types
import warnings

import numpy as np

import pullback as pb
from pullback.compiler import cache_files, disk_variants

X = np.linspace(-1.0, 1.0, 4)


def f(x):
    return np.tanh(x) * x.sum()


def _live(folder) -> list:
    """The directory's files, checked to be live: each text file's code file there
    (a .variant's the one its header names), each code file some text file's, no
    temporary file, every file 0600."""
    names = set(os.listdir(folder))
    needed = {".hmac-key"}
    for n in names:
        stem, _, kind = n.partition(".")
        if kind == "variant":
            header = json.loads((folder / n).read_bytes().split(b"\n")[1][2:])
            needed |= {n, stem + header.get("code", ".vcode")}
        elif kind in ("py", "pass"):
            needed |= {n, stem + (".code" if kind == "py" else ".passcode")}
    assert names == needed, (sorted(names - needed), sorted(needed - names))
    assert all(stat.S_IMODE(os.stat(folder / n).st_mode) == 0o600 for n in names)
    return sorted(n.partition(".")[2] for n in names)


def test_an_entry_written_again_leaves_no_dead_code_file(tmp_path, monkeypatch):
    monkeypatch.setattr(pb.config, "cache_dir", str(tmp_path))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        c = pb.compile(f)
        t = pb.tensor(X, requires_grad=True)
        c(t).sum().backward()  # the forward kept, then written again with its backward
        assert _live(tmp_path).count("v2code") == 1
        writes = disk_variants.STATS["writes"]
        jac = pb.jacrev(f)(X)  # (its own variant: the forward, then + batched backward)
        pb.vjp(f, X)[1](np.ones(4))
    assert disk_variants.STATS["writes"] > writes
    kinds = _live(tmp_path)
    assert kinds.count("variant") == 2 and kinds.count("vcode") == 0
    want = np.diag(1 - np.tanh(X) ** 2) * X.sum() + np.tanh(X)[:, None]
    np.testing.assert_allclose(jac, want, rtol=1e-12)
    pb.compiler.reset()  # read back, by a new function of f's code: the entry as it is
    hits = disk_variants.STATS["hits"]
    again = types.FunctionType(f.__code__, f.__globals__)
    np.testing.assert_allclose(pb.jacrev(again)(X), want, rtol=1e-12)
    assert disk_variants.STATS["hits"] == hits + 1


def _full_disk(which):
    """os.write raising ENOSPC for the data ``which(data)`` picks."""
    real = os.write

    def write(fd, data):
        if which(bytes(data)):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd, data)
    return write


def test_a_failed_write_leaves_nothing_behind(tmp_path, monkeypatch):
    monkeypatch.setattr(pb.config, "cache_dir", str(tmp_path / "a"))
    monkeypatch.setattr(os, "write", _full_disk(lambda data: True))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        g = pb.grad(lambda x: (np.sin(x) ** 2).sum())(X)
    np.testing.assert_allclose(g, np.sin(2 * X), rtol=1e-12)
    assert len(seen) == 1 and "No space left" in str(seen[0].message)
    assert os.listdir(tmp_path / "a") == []  # (not even the key's temporary file)


def test_a_text_file_that_fails_takes_its_code_file_with_it(tmp_path, monkeypatch):
    monkeypatch.setattr(pb.config, "cache_dir", str(tmp_path))
    monkeypatch.setattr(os, "write", _full_disk(lambda data: data.startswith(b"# hmac")))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        g = pb.grad(lambda x: (np.cos(x) ** 2).sum())(X)
    np.testing.assert_allclose(g, -np.sin(2 * X), rtol=1e-12)
    assert len(seen) == 1 and "No space left" in str(seen[0].message)
    assert os.listdir(tmp_path) == [".hmac-key"]


def test_a_reader_whose_code_file_went_misses_without_a_warning(tmp_path, monkeypatch):
    monkeypatch.setattr(pb.config, "cache_dir", str(tmp_path))
    pb.grad(lambda x: (np.tanh(x) ** 2).sum())(X)
    (variant,) = [n for n in os.listdir(tmp_path) if n.endswith(".variant")]
    key = variant.partition(".")[0]
    (tmp_path / (key + ".vcode")).unlink()  # (a writer removed it after a new .variant)
    misses = disk_variants.STATS["misses"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert disk_variants.read_entry(str(tmp_path), key) is None
    assert disk_variants.STATS["misses"] == misses + 1
    assert isinstance(cache_files.Missing("x"), cache_files.Refused)


def test_an_entry_written_again_while_read_is_a_miss(tmp_path, monkeypatch):
    # a reader reads the text file, a writer then replaces the code file and the text
    # file (same names: the captured global changed), then the reader reads the code:
    # the pair does not match, but the text file changed meanwhile: a miss, no warning
    monkeypatch.setattr(pb.config, "cache_dir", str(tmp_path))
    pb.grad(lambda x: (np.sinh(x) ** 2).sum())(X)
    (variant,) = [n for n in os.listdir(tmp_path) if n.endswith(".variant")]
    key = variant.partition(".")[0]
    real = cache_files.read_owned
    newer = {n: (tmp_path / n).read_bytes() for n in (variant, key + ".vcode")}
    (tmp_path / (key + ".vcode")).write_bytes(newer[key + ".vcode"] + b"\0")  # the old

    def read(path, what):  # (the writer runs right after the text file is read)
        data = real(path, what)
        if path.endswith(".variant") and (tmp_path / variant).read_bytes() == data:
            (tmp_path / variant).write_bytes(data.replace(b"hmac-sha256 ", b"hmac-sha256 0"))
        return data
    monkeypatch.setattr(cache_files, "read_owned", read)
    misses = disk_variants.STATS["misses"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert disk_variants.read_entry(str(tmp_path), key) is None
    assert disk_variants.STATS["misses"] == misses + 1
