"""torch's device boilerplate, answered honestly: pullback computes on the CPU only.

``pb.device('cpu')``, ``Tensor.device``, ``.cpu()`` and ``.to('cpu')`` work as torch's
CPU build does; ``pb.cuda.is_available()`` is False and ``device_count()`` 0; ``.cuda()``
and ``.to('cuda')`` raise the CPU build's error (nothing pretends to be a GPU).

>>> import pullback as pb
>>> pb.ones(2).device
device(type='cpu')
>>> pb.cuda.is_available(), pb.cuda.device_count()
(False, 0)
"""

from __future__ import annotations

import re
import types
from typing import Any

_TYPES = ("cpu, cuda, ipu, xpu, mkldnn, opengl, opencl, ideep, hip, ve, fpga, maia, xla, "
          "lazy, vulkan, mps, meta, hpu, mtia, privateuseone")
NO_CUDA = "Torch not compiled with CUDA enabled"


class device:
    """A device name, as torch.device: ``device('cpu')``, ``device('cuda', 0)``. Naming a
    GPU is allowed (torch allows it too); putting a tensor there raises."""

    __slots__ = ("type", "index")

    def __init__(self, type: Any, index: int | None = None) -> None:  # noqa: A002
        if isinstance(type, device):
            type, index = type.type, type.index
        if isinstance(type, int) and not isinstance(type, bool):
            type, index = "cuda", type
        if not isinstance(type, str):
            raise TypeError(f"device() received an invalid combination of arguments - got "
                            f"({type.__class__.__name__})")
        if not re.fullmatch(r"[a-zA-Z_]+(:([1-9][0-9]*|0))?", type):
            raise RuntimeError(f"Invalid device string: '{type}'")
        name, _, idx = type.partition(":")
        if name not in _TYPES.split(", "):
            raise RuntimeError(f"Expected one of {_TYPES} device type at start of device "
                               f"string: {type}")
        object.__setattr__(self, "type", name)
        object.__setattr__(self, "index", int(idx) if idx else index)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"attribute '{name}' of 'torch.device' objects is not writable")

    def __repr__(self) -> str:
        idx = "" if self.index is None else f", index={self.index}"
        return f"device(type='{self.type}'{idx})"

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self) -> int:
        return hash((self.type, self.index))


CPU = device("cpu")


def check(where: Any) -> None:
    """Refuse any device but the CPU, with torch's CPU build's AssertionError."""
    if where is None:
        return
    if device(where).type != "cpu":
        raise AssertionError(NO_CUDA)


def is_device(value: Any) -> bool:
    """Whether ``.to(value)`` names a device (a device, a device string, a GPU index)."""
    if isinstance(value, device):
        return True
    if isinstance(value, str):
        return value.partition(":")[0] in _TYPES.split(", ")
    return isinstance(value, int) and not isinstance(value, bool)


def _is_available() -> bool:
    """False: this is a CPU-only library."""
    return False


def _device_count() -> int:
    return 0


def _current_device() -> int:
    raise AssertionError(NO_CUDA)


def _manual_seed(seed: int) -> None:
    """torch.cuda.manual_seed on a machine without CUDA: silently nothing (as torch)."""


cuda = types.SimpleNamespace(is_available=_is_available, device_count=_device_count,
                             current_device=_current_device, manual_seed=_manual_seed,
                             manual_seed_all=_manual_seed)


class DeviceMethods:
    """The Tensor methods about devices: every tensor lives on the CPU."""

    __slots__ = ()

    @property
    def device(self) -> device:
        return CPU

    @property
    def is_cuda(self) -> bool:
        return False

    def cpu(self) -> Any:
        return self

    def cuda(self, device: Any = None, non_blocking: bool = False) -> Any:
        raise AssertionError(NO_CUDA)

    def get_device(self) -> int:
        return -1
