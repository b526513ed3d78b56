"""Whose code is this: the user's, or a library's. The one predicate the source pass
(which functions it converts), the tracer (the user's line an op is recorded at) and
anomaly mode (the frames a traceback shows) ask.

A file is a library's when it is pullback's own (its package and its passes'
``transforms/`` folder), numpy's, in the standard library or in a folder packages are
installed into; code pullback generated (``<pullback...>``) and the standard library's
frozen modules (``<frozen os>``) are not the user's either.
Everything else is: the user's modules, scripts, notebooks (``<ipython-input-...>``),
doctests and ``exec`` of a string.

>>> import numpy as np
>>> is_user_file(np.__file__), is_user_file("<pullback:f_forward:1>"), is_user_file("<string>")
(False, False, True)
"""

from __future__ import annotations

import functools
import importlib.util
import os
import site
import stat
import sys
import sysconfig
import types


@functools.lru_cache(maxsize=1)
def library_dirs() -> tuple:
    """The folders whose files are libraries' (each ending in a separator)."""
    paths = _install_paths()
    here = os.path.dirname(os.path.abspath(__file__))
    passes = importlib.util.find_spec("pullback.transforms")
    numpy = importlib.util.find_spec("numpy")
    dirs = [here, *(os.path.dirname(s.origin) for s in (passes, numpy) if s and s.origin),
            *(paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths),
            *_site_dirs()]
    return tuple(os.path.join(real_path(d), "") for d in dirs)


def _install_paths() -> dict:
    """The standard library's and the environment's folders: on POSIX read from the
    running interpreter (sysconfig's own layout, without loading its build data, which
    costs a process's first compiled call about 1 ms; installed packages' folders come
    from ``site``); elsewhere sysconfig's."""
    if os.name != "posix":
        return sysconfig.get_paths()
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    return {"stdlib": os.path.dirname(os.__file__),
            "platstdlib": os.path.join(sys.exec_prefix, sys.platlibdir, version)}


def _site_dirs() -> list:
    """Installed packages' folders besides the environment's own (a virtual environment
    that sees the system's packages sees them there)."""
    try:
        return [*site.getsitepackages(), site.getusersitepackages()]
    except AttributeError:  # (an embedded interpreter's site module may lack them)
        return []


#: pullback's package folder as its files' names spell it (``library_dirs`` has its real path)
_OWN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "")
_UP = os.sep + ".." + os.sep


@functools.lru_cache(maxsize=4096)
def is_user_file(filename: str) -> bool:
    """Whether code in ``filename`` is the user's (see the module)."""
    if filename.startswith(("<pullback", "<frozen ")):  # (<frozen os>: the stdlib's)
        return False
    if filename.startswith("<"):
        return True
    if filename.startswith(_OWN) and _UP not in filename:
        return False  # pullback's own, known without finding every library folder's
        # real path (~0.2 ms of a later process's first call from the persistent cache)
    return not real_path(filename).startswith(library_dirs())


#: folders (and files) found not to be symbolic links: each is looked at once
_NOT_LINKS: set = set()


def real_path(path: str) -> str:
    """``os.path.realpath(path)``, a ``lstat`` per folder not met before (the library
    folders share most of theirs: ``realpath`` took 46 for them, ~0.1 ms of a later
    process's first call from the persistent cache). A path without a symbolic link or
    ``..`` is its own; one with either, and any path off POSIX, is ``realpath``'s.

    >>> real_path("/") == os.path.realpath("/")
    True
    """
    if os.name != "posix" or ".." in path.split("/"):
        return os.path.realpath(path)
    path = os.path.abspath(path)
    prefix = ""
    for part in path.split("/")[1:]:
        prefix += "/" + part
        if prefix in _NOT_LINKS:
            continue
        try:
            st = os.lstat(prefix)
        except OSError:  # (missing: nothing below it is a link; realpath keeps it as is)
            return path
        if stat.S_ISLNK(st.st_mode):
            return os.path.realpath(path)
        _NOT_LINKS.add(prefix)
    return path


def is_user_code(code: types.CodeType) -> bool:
    """Whether a code object is the user's."""
    return is_user_file(code.co_filename)
