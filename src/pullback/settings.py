"""Every switch of pullback, in one place: ``pullback.config``, read and set as attributes.

>>> import pullback as pb
>>> pb.config.replay
True
>>> with pb.config.override(replay=False):
...     pb.config.replay
False
>>> pb.config.replay_after = "twice"
Traceback (most recent call last):
  ...
TypeError: config.replay_after must be int, not str
>>> pb.config.no_such_switch = 1
Traceback (most recent call last):
  ...
AttributeError: config has no setting 'no_such_switch'; the settings are: check_ir, ...
"""

from __future__ import annotations

import contextlib
import os
from typing import Any, Iterator


class Config:
    """The settings, each with its type and default (the environment variables
    ``PULLBACK_DUMP_DIR`` and ``PULLBACK_CACHE_DIR`` set ``dump_dir`` and ``cache_dir``)."""

    #: name -> (type, default, what it does)
    SETTINGS: dict[str, tuple] = {
        "check_ir": (bool, False, "verify the IR after every compiler pass (tests do)"),
        "dump_dir": ((str, type(None)), os.environ.get("PULLBACK_DUMP_DIR") or None,
                     "also write every generated module to this directory"),
        "cache_dir": ((str, type(None)), os.environ.get("PULLBACK_CACHE_DIR") or None,
                      "keep generated code in this directory for later processes "
                      "(docs/generated_code.md)"),
        "replay": (bool, True, "run eager backward passes of graphs seen before as "
                   "generated code"),
        "replay_after": (int, 1, "sightings of a graph interpreted before its backward "
                         "is generated"),
        "replay_cache_size": (int, 64, "graph structures whose generated backward is kept"),
        "recompile_limit": (int, 8, "traces of one function for the same argument types "
                            "before it runs eagerly for them"),
        "cache_size": (int, 64, "argument signatures a compiled function keeps variants for"),
        "dask_compute": (bool, False, "compiled functions called on Dask arrays return "
                         "computed arrays (all results in one pass) instead of lazy ones"),
        "free_bytes": (int, 4096, "generated code releases arrays at least this large "
                       "after their last use"),
        "fuse": (bool, False, "compiled code runs runs of elementwise arithmetic on large "
                 "arrays as one numba kernel (needs numba: pip install pullback[fast])"),
        "fuse_min_size": (int, 32768, "elements an array needs for config.fuse to fuse "
                          "the arithmetic making it"),
        "fuse_max_ops": (int, 16, "equations in one fused kernel at most (numba's compile "
                         "time grows with a kernel's length)"),
        "native_loops": (bool, False, "compiled code runs a loop region over small arrays "
                         "(products, elementwise math, sums) as one numba-compiled loop "
                         "(needs numba: pip install pullback[fast])"),
        "fuse_threads": (bool, False, "fused kernels split their loop over numba's threads "
                         "(slower to compile; faster on idle cores)"),
        "fuse_tanh": (bool, True, "fused kernels compute tanh themselves (float64 and "
                      "float32: within 3 ulp of numpy's, faster); False: numpy's tanh "
                      "between kernels, so fused results are numpy's bit for bit"),
    }

    def __init__(self) -> None:
        for name, (_, default, _) in self.SETTINGS.items():
            object.__setattr__(self, name, default)

    def __setattr__(self, name: str, value: Any) -> None:
        spec = self.SETTINGS.get(name)
        if spec is None:
            raise AttributeError(f"config has no setting {name!r}; the settings are: "
                                 + ", ".join(self.SETTINGS))
        kind = spec[0]
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            want = kind.__name__ if isinstance(kind, type) else " or ".join(
                k.__name__ for k in kind)
            raise TypeError(f"config.{name} must be {want}, not {type(value).__name__}")
        if kind is int and value < 0:
            raise ValueError(f"config.{name} must be at least 0, got {value}")
        object.__setattr__(self, name, value)

    @contextlib.contextmanager
    def override(self, **settings: Any) -> Iterator[Config]:
        """Change settings inside a ``with`` block; the old values come back after it."""
        old = {k: getattr(self, k) for k in settings}
        try:
            for k, v in settings.items():
                setattr(self, k, v)
            yield self
        finally:
            for k, v in old.items():
                object.__setattr__(self, k, v)

    def __repr__(self) -> str:
        return "config(" + ", ".join(f"{k}={getattr(self, k)!r}" for k in self.SETTINGS) + ")"


config = Config()
