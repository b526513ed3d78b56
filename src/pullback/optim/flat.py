"""The storage an optimizer updates in one go: a group's parameters of one dtype as
views of one flat array, with their state (``exp_avg``, ...) in flat arrays laid out
the same way.

When a bucket is made, each parameter's array is copied into the flat array and the
parameter's ``_data`` becomes a view of it (complex parameters: a complex view of a
real array, torch's ``view_as_real``). An update is then a few numpy calls on whole
flat arrays, whatever the number of parameters; gathering the gradients is one
``np.concatenate``. If a parameter's array is replaced later (``p.data = ...``,
``module.to(...)``), ``intact`` sees it and the optimizer lays the group out again,
keeping the state (docs/design.md, "The optimizers' update").
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..tensor import Tensor


def real_dtype(dtype: np.dtype) -> np.dtype:
    return np.empty(0, dtype).real.dtype


class Bucket:
    """Parameters of one group and one dtype. ``steps[i]``: parameter i's step count
    (torch keeps it as a float32 scalar); ``ready[i]``: whether its state exists."""

    def __init__(self, params: list) -> None:
        self.params = params
        self.dtype = params[0]._data.dtype
        self.real = real_dtype(self.dtype)
        per = 2 if self.dtype.kind == "c" else 1
        sizes = [p._data.size * per for p in params]
        ends = np.cumsum(sizes).tolist()
        self.slices = [slice(e - s, e) for s, e in zip(sizes, ends)]
        self.data = np.empty(ends[-1] if ends else 0, self.real)
        for p, sl in zip(params, self.slices):
            self.data[sl] = self.real_view(p._data)
            p._data = self.data[sl].view(self.dtype).reshape(p._data.shape)
        self.views = [p._data for p in params]
        self.buffers: dict = {}
        self.steps = np.zeros(len(params), np.float32)
        self.ready = np.zeros(len(params), bool)
        self.uniform = True  # every step count equal and every state present (or none)

    def real_view(self, a: np.ndarray) -> np.ndarray:
        """``a`` (a parameter's or a gradient's array) flat, in the real dtype."""
        return np.ravel(a).view(self.real)

    def intact(self) -> bool:
        """Whether every parameter still holds its view of the flat array."""
        return all(p._data is v for p, v in zip(self.params, self.views))

    def gather(self, grads: list) -> np.ndarray:
        """The gradients as one flat array (read-only: it may be a gradient itself)."""
        if len(grads) == 1:
            return self.real_view(grads[0]._data)
        return np.concatenate([self.real_view(g._data) for g in grads])

    def buffer(self, name: str, fill: float) -> np.ndarray:
        """The flat state array ``name``, made (filled with ``fill``) if missing."""
        buf = self.buffers.get(name)
        if buf is None:
            buf = self.buffers[name] = np.full(self.data.shape, fill, self.real)
        return buf

    def state_of(self, i: int, names: tuple, with_step: bool) -> dict:
        """Parameter i's state as torch keeps it: Tensors viewing the flat arrays."""
        shape = self.params[i]._data.shape
        out: dict = {}
        if with_step:
            out["step"] = Tensor._make(self.steps[i:i + 1].reshape(()))
        for name in names:
            view = self.buffers[name][self.slices[i]].view(self.dtype).reshape(shape)
            out[name] = Tensor._make(view)
        return out

    def bump_versions(self) -> None:
        """An in-place write into every parameter (torch's step does ``add_``)."""
        for p in self.params:
            p._vc.value += 1

    def load(self, i: int, name: str, value: Any) -> None:
        """Parameter i's state ``name`` from a saved value."""
        array = value._data if isinstance(value, Tensor) else np.asarray(value)
        if name == "step":
            self.steps[i] = float(array)
        else:
            self.buffers[name][self.slices[i]] = self.real_view(
                np.asarray(array, self.dtype))


def layout(params: list, old: list | None = None) -> list:
    """Buckets for a group's parameters (one per dtype, in order of appearance), with
    the state of ``old`` buckets carried over for the parameters they held (the caller
    settles ``uniform``)."""
    by_dtype: dict = {}
    for p in params:
        by_dtype.setdefault(p._data.dtype, []).append(p)
    buckets = [Bucket(ps) for ps in by_dtype.values()]
    if old:
        _carry(old, buckets)
    return buckets


def _carry(old: list, new: list) -> None:
    where = {id(p): (b, i) for b in old for i, p in enumerate(b.params)}
    for b in new:
        for i, p in enumerate(b.params):
            found = where.get(id(p))
            if found is None:
                continue
            ob, j = found
            b.steps[i], b.ready[i] = ob.steps[j], ob.ready[j]
            for name, buf in ob.buffers.items():
                values = buf[ob.slices[j]].view(ob.dtype)
                target = b.buffer(name, 0.0)[b.slices[i]]
                if values.size * (2 if b.dtype.kind == "c" else 1) == target.size:
                    target[...] = b.real_view(values.astype(b.dtype))
                else:  # the parameter changed shape: its state starts again
                    b.ready[i] = False


__all__ = ["Bucket", "layout", "real_dtype"]
