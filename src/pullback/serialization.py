"""``pb.save`` / ``pb.load``: state dicts (nested dicts, lists and tuples of Tensors,
arrays, numbers, strings) in a format that cannot run code when it is read.

The file is a zip archive, as numpy's ``.npz``: a member ``pullback.json`` describes
the structure, and each array is a ``.npy`` member read with ``allow_pickle=False``.
``load`` parses JSON and ``.npy`` headers and nothing else: a file with a pickle in
it, a truncated or otherwise damaged file, or a header that does not describe a
pullback file is refused with a ``LoadError`` that says what is wrong, before any
object is built.

>>> import io
>>> import pullback as pb
>>> model = pb.nn.Linear(2, 1)
>>> buffer = io.BytesIO()
>>> pb.save({"model": model.state_dict(), "epoch": 3}, buffer)
>>> _ = buffer.seek(0)
>>> loaded = pb.load(buffer)
>>> loaded["epoch"], list(loaded["model"]), type(loaded["model"]).__name__
(3, ['weight', 'bias'], 'OrderedDict')
>>> pb.load(io.BytesIO(b"\\x80\\x04K\\x01."))  # a pickle
Traceback (most recent call last):
  ...
pullback.serialization.LoadError: pb.load: <_io.BytesIO object at ...> is not a pullback file ...
"""

from __future__ import annotations

import io
import json
import os
import zipfile
from collections import OrderedDict
from typing import Any

import numpy as np

from .nn.parameter import Parameter
from .tensor import Tensor

HEADER = "pullback.json"
FORMAT = "pullback"
VERSION = 1
_SCALARS = (bool, int, float, str, type(None))


class LoadError(ValueError):
    """A file ``pb.load`` will not read: not a pullback file, damaged, or unsafe."""


# ------------------------------------------------------------------------- saving
class _Writer:
    def __init__(self) -> None:
        self.arrays: dict = {}  # member name -> array
        self.seen: dict = {}  # id of a Tensor or array -> its node (shared once)
        self.keep: list = []  # what the ids belong to, alive until written

    def array(self, a: np.ndarray, obj: Any) -> str:
        name = f"a{len(self.arrays)}"
        self.arrays[name] = a  # (np.ascontiguousarray would make a 0-d array 1-d)
        self.keep.append(obj)
        return name

    def node(self, obj: Any) -> Any:
        if isinstance(obj, _SCALARS):
            return obj
        if id(obj) in self.seen:
            return self.seen[id(obj)]
        if isinstance(obj, Tensor):
            node = {"tensor": self.array(obj._data, obj), "requires_grad": obj._requires_grad,
                    "parameter": isinstance(obj, Parameter)}
        elif isinstance(obj, np.ndarray):
            node = {"array": self.array(obj, obj)}
        elif isinstance(obj, np.generic):
            return {"scalar": self.array(np.asarray(obj), obj)}
        elif isinstance(obj, complex):
            return {"complex": [obj.real, obj.imag]}
        elif isinstance(obj, dict):
            kind = "odict" if isinstance(obj, OrderedDict) else "dict"
            return {kind: [[self.key(k), self.node(v)] for k, v in obj.items()]}
        elif isinstance(obj, (list, tuple)):
            return {type(obj).__name__ if type(obj) in (list, tuple) else "list":
                    [self.node(v) for v in obj]}
        else:
            raise TypeError(f"pb.save: cannot save an object of type {type(obj).__name__}; "
                            "it saves Tensors, numpy arrays, numbers, strings, None and "
                            "dicts, lists and tuples of them (state dicts)")
        self.seen[id(obj)] = node
        return node

    def key(self, k: Any) -> Any:
        if not isinstance(k, _SCALARS):
            raise TypeError(f"pb.save: dict keys must be strings, numbers or None, not "
                            f"{type(k).__name__}")
        return k


def save(obj: Any, f: Any) -> None:
    """Write ``obj`` (a state dict, or any nesting of dicts, lists and tuples of
    Tensors, arrays, numbers and strings) to ``f``, a path or a binary file."""
    writer = _Writer()
    header = json.dumps({"format": FORMAT, "version": VERSION, "tree": writer.node(obj)})
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as fh:
            _write(fh, header, writer.arrays)
    else:
        _write(f, header, writer.arrays)


def _write(fh: Any, header: str, arrays: dict) -> None:
    with zipfile.ZipFile(fh, "w", zipfile.ZIP_STORED) as z:
        z.writestr(HEADER, header)
        for name, a in arrays.items():
            with z.open(name + ".npy", "w", force_zip64=True) as member:
                np.lib.format.write_array(member, a, allow_pickle=False)


# ------------------------------------------------------------------------ loading
def load(f: Any, map_location: Any = None, weights_only: bool = True) -> Any:
    """Read what ``save`` wrote. Nothing in the file is executed: a pickle, a damaged
    archive or an unknown header raises ``LoadError``. (``map_location`` and
    ``weights_only`` are accepted for torch's signature: everything is on the CPU,
    and only data is ever read.)"""
    where = os.fspath(f) if isinstance(f, (str, os.PathLike)) else repr(f)
    data = _read_bytes(f)
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile:
        raise LoadError(f"pb.load: {where} is not a pullback file ({_what(data)})") from None
    names = set(archive.namelist())
    if HEADER not in names:
        pickled = any(n.endswith(".pkl") for n in names)
        raise LoadError(f"pb.load: {where} is not a pullback file (" + (
            "a torch.save archive: it holds a pickle, which pb.load never runs" if pickled
            else f"a zip archive without {HEADER}") + ")")
    try:
        header = json.loads(archive.read(HEADER).decode("utf-8"))
    except (zipfile.BadZipFile, UnicodeDecodeError, ValueError, EOFError, OSError) as e:
        raise LoadError(f"pb.load: {where} is damaged: its header cannot be read ({e})") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise LoadError(f"pb.load: {where} has no pullback header")
    if header.get("version") != VERSION:
        raise LoadError(f"pb.load: {where} is format version {header.get('version')!r}; this "
                        f"pullback reads version {VERSION}")
    reader = _Reader(archive, names, where)
    with archive:
        return reader.node(header.get("tree"))


def _what(data: bytes) -> str:
    """What a file that is not a zip archive looks like, for the message."""
    if data[:1] == b"\x80":
        return "it holds a pickle, which pb.load never runs; torch.save writes those"
    if data[:6] == b"\x93NUMPY":
        return "a single .npy array; read it with numpy.load"
    if data[:4] == b"PK\x03\x04":
        return "a damaged or truncated zip archive"
    return "not a zip archive" if data else "an empty file"


def _read_bytes(f: Any) -> bytes:
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as fh:
            return fh.read()
    return f.read()


class _Reader:
    def __init__(self, archive: zipfile.ZipFile, names: set, where: str) -> None:
        self.archive = archive
        self.names = names
        self.where = where
        self.built: dict = {}  # member -> its Tensor or array (shared references)

    def bad(self, what: str) -> LoadError:
        return LoadError(f"pb.load: {self.where} is damaged: {what}")

    def array(self, name: Any) -> np.ndarray:
        member = f"{name}.npy"
        if not isinstance(name, str) or member not in self.names:
            raise self.bad(f"it names an array {name!r} it does not hold")
        try:
            with self.archive.open(member) as fh:
                return np.lib.format.read_array(fh, allow_pickle=False)
        except ValueError as e:
            kind = "a pickled object array, which pb.load never runs" if "allow_pickle" in \
                str(e) or "Object arrays" in str(e) else str(e)
            raise self.bad(f"array {name!r} is {kind}") from None
        except (zipfile.BadZipFile, EOFError, OSError) as e:
            raise self.bad(f"array {name!r} cannot be read ({e})") from None

    def node(self, node: Any) -> Any:
        if isinstance(node, _SCALARS):
            return node
        if isinstance(node, list) or not isinstance(node, dict) or len(node) not in (1, 3):
            raise self.bad(f"unexpected entry {str(node)[:60]!r} in its header")
        kind = next(iter(node))
        body = node[kind]
        if kind in ("tensor", "array"):
            if body not in self.built:
                self.built[body] = self.leaf(kind, body, node)
            return self.built[body]
        if kind == "scalar":
            return self.array(body)[()]
        if kind == "complex" and isinstance(body, list) and len(body) == 2:
            return complex(*body)
        if kind in ("dict", "odict") and isinstance(body, list):
            out = OrderedDict() if kind == "odict" else {}
            for pair in body:
                if not (isinstance(pair, list) and len(pair) == 2 and
                        isinstance(pair[0], _SCALARS)):
                    raise self.bad("a malformed dict entry in its header")
                out[pair[0]] = self.node(pair[1])
            return out
        if kind in ("list", "tuple") and isinstance(body, list):
            items = [self.node(v) for v in body]
            return items if kind == "list" else tuple(items)
        raise self.bad(f"unknown entry {kind!r} in its header")

    def leaf(self, kind: str, name: Any, node: dict) -> Any:
        a = self.array(name)
        if kind == "array":
            return a
        if a.dtype.kind not in "biufc":
            raise self.bad(f"array {name!r} has dtype {a.dtype}, which no Tensor holds")
        if node.get("parameter") is True:
            return Parameter(Tensor._make(a), requires_grad=bool(node.get("requires_grad")))
        t = Tensor._make(a)
        if node.get("requires_grad") is True:
            t.requires_grad_(True)
        return t


__all__ = ["LoadError", "load", "save"]
