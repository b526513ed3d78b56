"""The persistent cache's files and checks, shared by the generated code's entries
(``disk_cache.py``) and the source pass's (``source/pass_cache.py``): the directory made
0700 with its HMAC key, files written whole and 0600, a directory or file not owned
by the user or writable by others refused (``Refused``), one warning per directory,
and the versions every key holds.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import itertools
import json
import os
import secrets
import stat
import sys
import warnings
from typing import Any, Callable

import numpy as np

from pullback.transforms import codegen as codegen_module

from ..settings import config

_KEY_FILE = ".hmac-key"
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_NEW_FLAGS = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
              | getattr(os, "O_CLOEXEC", 0))
_warned: set = set()  # directories already warned about
_secrets: dict = {}  # directory -> ((its device, inode), its HMAC key)


class Refused(Exception):
    """A cache directory or file that is not used (the message says why)."""


class Missing(Refused):
    """A file gone between finding its entry and reading it: a writer replaced the
    entry meanwhile (and removed the code file the old one read). A miss, not a
    refusal: nothing was read that does not match."""


def versions() -> dict:
    """What else the generated code depends on: pullback's version and a fingerprint of
    its files (an editable install changes without a new version), numpy's, Python's."""
    return _versions(_snapshot_holds())


@functools.cache
def _versions(by_folders: bool) -> dict:
    # (read from the loaded package, not imported: the front door is a layer above;
    # importlib.metadata takes longer than a small function's whole first call)
    version = getattr(sys.modules.get("pullback"), "__version__", "unknown")
    return {"pullback": version, "files": _snapshot["hash"] if by_folders else _fingerprint(),
            "numpy": np.__version__, "python": sys.version}


def _roots() -> set:
    return {os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
            os.path.dirname(os.path.abspath(codegen_module.__file__))}


def _installed(roots: set) -> bool:
    return all(os.path.basename(os.path.dirname(r)) in ("site-packages", "dist-packages")
               for r in roots)


def _fingerprint() -> str:
    """A hash of the names, sizes and times of pullback's and its passes' .py files
    (about 1 ms, once: a stat per file; ``snapshot`` spares it); "installed" for an
    install in site-packages, which changes with its version."""
    roots = _roots()
    if _installed(roots):
        return "installed"
    found: list = []
    for root in sorted(roots):
        _scan(root, found)
    found.sort()  # (the order of the files found, not the directories' listing order)
    return hashlib.sha256(repr(found).encode()).hexdigest()


def _scan(folder: str, found: list) -> None:
    """``found`` += each .py file's path, size and time under ``folder`` (bytecode
    folders skipped)."""
    with os.scandir(folder) as entries:
        for e in entries:
            name = e.name
            if name.endswith(".py"):
                st = os.stat(e.path)
                found.append((e.path, st.st_size, st.st_mtime_ns))
            elif name != "__pycache__" and e.is_dir():
                _scan(e.path, found)


#: ``snapshot``'s: "hash", "files" (how many of pullback's files were loaded then),
#: "modules" (``len(sys.modules)`` when last checked)
_snapshot: dict = {}


def snapshot() -> None:
    """The fingerprint of an editable checkout by its folders' times, taken once
    ``import pullback`` has loaded its modules (a stat per folder, not per file).
    Sound because Python rewrote the bytecode of any module whose source changed
    since its last import, by a rename in its ``__pycache__`` folder, which changes
    that folder's time (a file added, removed or renamed changes its package folder's);
    and taken at import, so it is that of the code this process runs. It holds while
    no other module of pullback's is loaded (``_snapshot_holds``). Not taken (a stat
    per file at the first key instead) when Python writes no bytecode there: bytecode
    off (``PYTHONDONTWRITEBYTECODE``) or elsewhere, a ``__pycache__`` missing or not
    writable, times in whole seconds (a change within the second would go unseen)
    — then, when a cache directory is set already (``PULLBACK_CACHE_DIR``), that stat
    per file is taken here, at import (the files as this process read them), not at
    its first call."""
    roots = _roots()
    if _snapshot or _installed(roots):
        return
    files = _loaded_files(roots)
    found = _folder_times(files)
    if found is not None:
        _snapshot.update(hash="folders " + hashlib.sha256(repr(found).encode()).hexdigest(),
                         files=len(files), modules=len(sys.modules),
                         last=next(reversed(sys.modules)))
    elif config.cache_dir:
        _snapshot.update(hash=_fingerprint(), files=len(files), modules=len(sys.modules),
                         last=next(reversed(sys.modules)))


def _folder_times(files: list) -> list | None:
    """The times of the folders of ``files`` and of their bytecode folders; None when
    they cannot tell a change (see ``snapshot``)."""
    if sys.dont_write_bytecode or sys.pycache_prefix:
        return None
    found = []
    for folder in sorted({os.path.dirname(path) for path in files}):
        cache = os.path.join(folder, "__pycache__")
        if not os.access(cache, os.W_OK | os.X_OK):
            return None
        found.append((folder, os.stat(folder).st_mtime_ns, os.stat(cache).st_mtime_ns))
    if not found or all(t % 1_000_000_000 == 0 for _, *ts in found for t in ts):
        return None
    return found


def _snapshot_holds() -> bool:
    """Whether the snapshot is this process's fingerprint: taken, and no module of
    pullback's loaded since (its bytecode may have been rewritten after the snapshot;
    then the stat per file, for the rest of the process)."""
    if not _snapshot:
        return False
    n, seen = len(sys.modules), _snapshot["modules"]
    if n != seen:
        # modules only added since (the one last seen is still at its place: sys.modules
        # keeps the order of loading): only theirs are read, not every module's
        added = n > seen and next(itertools.islice(sys.modules, seen - 1, None)) == \
            _snapshot["last"]
        if len(_loaded_files(_roots(), seen if added else 0)) != (
                0 if added else _snapshot["files"]):
            _snapshot.clear()
            return False
        _snapshot.update(modules=n, last=next(reversed(sys.modules)))
    return True


def _loaded_files(roots: set, start: int = 0) -> list:
    """The source files of the modules loaded (from the ``start``-th on) from under
    ``roots``."""
    prefixes = tuple(os.path.join(r, "") for r in roots)
    files = [getattr(m, "__file__", None)
             for m in itertools.islice(list(sys.modules.values()), start, None)]
    return [f for f in files if isinstance(f, str) and f.startswith(prefixes)]


def warn(directory: str, why: str, stacklevel: int = 4) -> None:
    """One warning per directory: ``why`` it is not used."""
    if directory not in _warned:
        _warned.add(directory)
        warnings.warn(f"pullback's cache directory {directory!r} (pb.config.cache_dir): "
                      f"{why}; generating code afresh", UserWarning, stacklevel=stacklevel)


# ------------------------------------------------------------------ checks
def _check_owned(st: os.stat_result, what: str) -> None:
    if st.st_uid != os.getuid():
        raise Refused(f"{what} is owned by another user (uid {st.st_uid})")
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise Refused(f"{what} is writable by others (mode {stat.S_IMODE(st.st_mode):o})")


def open_directory(directory: str) -> bytes:
    """Make (0700) or check the directory; its HMAC key (made on first use, 0600; read
    once per process while the directory is the same one)."""
    try:
        st = os.lstat(directory)
    except FileNotFoundError:
        os.makedirs(directory, mode=0o700, exist_ok=True)
        st = os.lstat(directory)
    if not stat.S_ISDIR(st.st_mode):
        raise Refused("it is not a directory")
    _check_owned(st, "it")
    known = _secrets.get(directory)
    if known is not None and known[0] == (st.st_dev, st.st_ino):
        return known[1]
    secret = _key_of(directory)
    _secrets[directory] = ((st.st_dev, st.st_ino), secret)
    return secret


def _key_of(directory: str) -> bytes:
    path = os.path.join(directory, _KEY_FILE)
    if not os.path.lexists(path):
        # written whole under another name, then linked: a process racing this one
        # reads a whole key, its own or this one's (os.link refuses to replace)
        tmp = f"{path}.{secrets.token_hex(4)}.tmp"
        fd = os.open(tmp, _NEW_FLAGS, 0o600)
        try:
            _write_all(fd, secrets.token_bytes(32))
            os.link(tmp, path)
        except FileExistsError:
            pass
        finally:  # (also when the write failed: no temporary file left behind)
            _remove(tmp)
    secret = read_owned(path, "its key file")
    if len(secret) != 32:
        raise Refused("its key file is damaged (remove it to start the cache afresh)")
    return secret


def read_owned(path: str, what: str) -> bytes:
    try:
        fd = os.open(path, _READ_FLAGS)
    except FileNotFoundError as e:
        raise Missing(f"{what} is gone: {e}") from None
    except OSError as e:
        raise Refused(f"{what} cannot be read: {e}") from None
    try:  # (os.read, not a file object: ~8 us less per file of a later process's
        st = os.fstat(fd)  # first call, which reads three)
        if not stat.S_ISREG(st.st_mode):
            raise Refused(f"{what} is not a regular file")
        _check_owned(st, what)
        parts = []
        while True:  # (files are written whole and renamed: one read, then the end)
            data = os.read(fd, st.st_size + 1)
            if not data:
                return b"".join(parts)
            parts.append(data)
    finally:
        os.close(fd)


def read_signed(text_path: str, code_path: str | Callable[[dict], str], secret: bytes,
                accept: Callable[[Any], bool]) -> tuple[dict, bytes, bytes]:
    """An entry's header fields, source and marshalled code, read from ``text_path`` (the
    HMAC line, the JSON header line, the source) and ``code_path`` (or the path it gives
    for the header's fields: which is trusted only once the HMAC holds); ``Refused``
    unless the HMAC over all of it holds and ``accept(fields)``."""
    name = os.path.basename(text_path)
    data = read_owned(text_path, f"the file {name}")
    code, fields = b"", None
    try:
        mac, header, source = data.split(b"\n", 2)
        fields = json.loads(header[2:])
        if not isinstance(code_path, str):
            code_path = code_path(fields) if isinstance(fields, dict) else ""
        if os.path.dirname(code_path) != os.path.dirname(text_path):
            raise ValueError("another folder's code")
        code = read_owned(code_path, f"the file {os.path.basename(code_path)}")
        ok = hmac.compare_digest(mac.decode("ascii"), mac_line(secret, header, source, code))
    except (ValueError, UnicodeDecodeError, TypeError, AttributeError):
        ok = False
    if not ok and _rewritten(text_path, data):
        raise Missing(f"the file {name} was written again while it was read")
    if not ok or not isinstance(fields, dict) or not accept(fields):
        raise Refused(f"the file {name} is corrupted or not this directory's (its HMAC "
                      "does not match); it is ignored")
    return fields, source, code


def _rewritten(path: str, data: bytes) -> bool:
    """Whether text file ``path`` is no longer ``data`` (read before its code file):
    a writer replaced the entry, code file first, between the two reads, so the pair
    read does not match though neither file is damaged (a miss, not a refusal)."""
    try:
        return read_owned(path, "") != data
    except Refused:
        return True


def mac_line(secret: bytes, header: bytes, source: bytes, code: bytes) -> str:
    """The .py file's first line: the HMAC of its header line, its source and the code."""
    data = b"".join((header, b"\n", source, b"\n", code))  # (one C call: hmac.new's
    return "# hmac-sha256 " + hmac.digest(secret, data, "sha256").hex()  # six frames)


def write_new(path: str, data: bytes) -> None:
    """``data`` as file ``path`` (0600): written whole under a temporary name, then
    renamed over it; the temporary file is removed when that fails (a full disk)."""
    tmp = f"{path}.{secrets.token_hex(4)}.tmp"
    fd = os.open(tmp, _NEW_FLAGS, 0o600)
    try:
        _write_all(fd, data)
        os.replace(tmp, path)
    except BaseException:
        _remove(tmp)
        raise


def write_pair(text_path: str, text: bytes, code_path: str, code: bytes,
               stale: tuple = ()) -> None:
    """An entry: its code file, then its text file (whose HMAC signs both; a reader
    finds the text last, so it reads a whole pair, or misses: ``Missing``), then the
    code files in ``stale`` other than ``code_path`` removed (an entry written again
    under another code file's name: the old one is dead once the new text is in
    place). When a write fails, the entry's files are all removed, so a reader misses
    rather than finds a text whose code was replaced, and nothing is left behind."""
    write_new(code_path, code)
    try:
        write_new(text_path, text)
    except BaseException:
        _remove(code_path, text_path, *stale)
        raise
    _remove(*(p for p in stale if p != code_path))


def _write_all(fd: int, data: bytes) -> None:
    """``data`` into ``fd``, which is closed (os.write: no buffered file object)."""
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def _remove(*paths: str) -> None:
    for path in paths:
        try:
            os.unlink(path)
        except OSError:  # (gone already; a cleanup's error is not the one to raise)
            pass
