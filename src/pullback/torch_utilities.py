"""torch's process-wide switches and small constructors that training scripts call:
``set_num_threads`` / ``get_num_threads`` (and the interop pair),
``use_deterministic_algorithms`` / ``are_deterministic_algorithms_enabled``,
``set_float32_matmul_precision`` / ``get_float32_matmul_precision``,
``get_rng_state`` / ``set_rng_state`` / ``seed`` / ``initial_seed``, ``result_type``,
``can_cast``, ``scalar_tensor``, ``asarray``, ``randint_like``, the function forms of
``detach``, ``conj_physical``, ``is_same_size``, ``is_signed``, ``is_conj``, ``is_neg``,
``resolve_conj``, ``resolve_neg``, and the windows ``hann_window``,
``hamming_window``, ``blackman_window``, ``bartlett_window``, ``kaiser_window``.

- pullback runs on numpy: the thread counts and the matmul precision are recorded and
  read back, and change nothing (numpy's BLAS keeps its threads; float32 products are
  numpy's); pullback's results are deterministic, so the deterministic switch is one
  to read back too.
- ``get_rng_state`` gives the state of pullback's generator as a uint8 tensor (its
  bytes: not torch's layout), which ``set_rng_state`` takes back.

>>> import pullback as pb
>>> s = pb.get_rng_state(); a = pb.rand(2); pb.set_rng_state(s); bool((pb.rand(2) == a).all())
True
>>> pb.hann_window(4)
tensor([0.0000, 0.5000, 1.0000, 0.5000])
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from . import devices, dtypes
from .creation import as_tensor, randint, tensor
from .ops.sampling import GENERATOR, manual_seed, set_state_of, state_of
from .ops.table import promotion
from .tensor import Tensor

_SETTINGS: dict = {"threads": 1, "interop_threads": 1, "deterministic": False,
                   "warn_only": False, "matmul_precision": "highest", "seed": None}


def set_num_threads(int: int) -> None:
    """Record the intra-op thread count (read back by get_num_threads)."""
    _SETTINGS["threads"] = int


def get_num_threads() -> int:
    return _SETTINGS["threads"]


def set_num_interop_threads(int: int) -> None:
    _SETTINGS["interop_threads"] = int


def get_num_interop_threads() -> int:
    return _SETTINGS["interop_threads"]


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Record the switch (pullback's kernels are deterministic either way)."""
    _SETTINGS["deterministic"], _SETTINGS["warn_only"] = bool(mode), bool(warn_only)


def are_deterministic_algorithms_enabled() -> bool:
    return _SETTINGS["deterministic"]


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    return _SETTINGS["warn_only"]


def set_float32_matmul_precision(precision: str) -> None:
    """Record 'highest', 'high' or 'medium' (numpy's float32 products either way)."""
    if precision in ("highest", "high", "medium"):
        _SETTINGS["matmul_precision"] = precision


def get_float32_matmul_precision() -> str:
    return _SETTINGS["matmul_precision"]


def get_rng_state() -> Tensor:
    """The state of pullback's generator, as a uint8 tensor for set_rng_state."""
    text = json.dumps(state_of(GENERATOR.rng))
    return tensor(np.frombuffer(text.encode(), np.uint8).copy())


def set_rng_state(new_state: Tensor) -> None:
    """Put pullback's generator back where get_rng_state found it."""
    data = np.asarray(new_state.detach().numpy() if isinstance(new_state, Tensor)
                      else new_state, np.uint8)
    set_state_of(GENERATOR.rng, json.loads(data.tobytes().decode()))


def seed() -> int:
    """Seed pullback's generator from fresh entropy; the seed."""
    s = int(np.random.SeedSequence().entropy % (2 ** 63))
    manual_seed(s)
    return s


def initial_seed() -> int:
    """The seed last given to manual_seed or seed (one drawn now when neither was)."""
    return GENERATOR.seed if getattr(GENERATOR, "seed", None) is not None else seed()


def result_type(tensor1: Any, tensor2: Any) -> dtypes.dtype:
    """torch's result dtype of an elementwise op on the two operands."""
    values = [v._data if isinstance(v, Tensor) else v for v in (tensor1, tensor2)]
    return dtypes.as_dtype(promotion.result_type(values))


def can_cast(from_: Any, to: Any) -> bool:
    """Whether torch's casting rules allow ``from_`` to become ``to`` (no float to
    integer, no complex to real, nothing to bool but bool)."""
    order = "biufc"
    a, b = dtypes.as_dtype(from_).np.kind, dtypes.as_dtype(to).np.kind
    a, b = ("i" if a == "u" else a), ("i" if b == "u" else b)
    return order.index(a) <= order.index(b)


def scalar_tensor(s: Any, *, dtype: Any = None, device: Any = None,
                  requires_grad: bool = False) -> Tensor:
    """A 0-d tensor of ``s`` (in the default float dtype unless ``dtype``)."""
    devices.check(device)
    return tensor(float(s) if dtype is None else s,
                  dtype=dtype or dtypes.default_float, requires_grad=requires_grad)


def asarray(obj: Any, *, dtype: Any = None, device: Any = None, copy: bool | None = None,
            requires_grad: bool = False) -> Tensor:
    """``obj`` as a tensor (a tensor itself where no dtype change or copy is asked)."""
    devices.check(device)
    out = as_tensor(obj, dtype)
    if copy:
        out = out.clone()
    if requires_grad:
        out = out.detach().requires_grad_(True)
    return out


def randint_like(input: Tensor, low: int = 0, high: int | None = None, *, dtype: Any = None,
                 requires_grad: bool = False, device: Any = None, **_: Any) -> Tensor:
    """Integers drawn from [low, high) (``randint_like(x, high)``: [0, high)) shaped as
    ``input``, in its dtype unless ``dtype``."""
    if high is None:
        low, high = 0, low
    out = randint(low, high, tuple(input.shape), dtype=dtype or input.dtype, device=device)
    return out.requires_grad_(True) if requires_grad else out


def detach(input: Tensor) -> Tensor:
    return input.detach()


def conj_physical(input: Tensor) -> Tensor:
    """The complex conjugate (a copy: pullback keeps no lazy conjugate bit)."""
    return input.conj()


def is_same_size(input: Tensor, other: Tensor) -> bool:
    return input.is_same_size(other)


def is_signed(input: Tensor) -> bool:
    return input.is_signed()


def is_conj(input: Tensor) -> bool:
    return False


def is_neg(input: Tensor) -> bool:
    return False


def resolve_conj(input: Tensor) -> Tensor:
    return input


def resolve_neg(input: Tensor) -> Tensor:
    return input


def _window(values: Any, n: int, periodic: bool, dtype: Any, requires_grad: bool) -> Tensor:
    """``values(m)`` (numpy's symmetric window of m points), of n + 1 points cut to n
    where ``periodic``."""
    npd = dtypes.to_numpy_dtype(dtype) or dtypes.default_float.np
    if n == 0:
        data = np.zeros(0)
    elif n == 1:
        data = np.ones(1)
    else:
        data = values(n + 1)[:-1] if periodic else values(n)
    return tensor(data.astype(npd), requires_grad=requires_grad)


def hann_window(window_length: int, periodic: bool = True, *, dtype: Any = None,
                device: Any = None, requires_grad: bool = False, **_: Any) -> Tensor:
    devices.check(device)
    return _window(np.hanning, window_length, periodic, dtype, requires_grad)


def hamming_window(window_length: int, periodic: bool = True, alpha: float = 0.54,
                   beta: float = 0.46, *, dtype: Any = None, device: Any = None,
                   requires_grad: bool = False, **_: Any) -> Tensor:
    devices.check(device)
    return _window(lambda m: alpha - beta * np.cos(2 * np.pi * np.arange(m) / (m - 1)),
                   window_length, periodic, dtype, requires_grad)


def blackman_window(window_length: int, periodic: bool = True, *, dtype: Any = None,
                    device: Any = None, requires_grad: bool = False, **_: Any) -> Tensor:
    devices.check(device)
    return _window(np.blackman, window_length, periodic, dtype, requires_grad)


def bartlett_window(window_length: int, periodic: bool = True, *, dtype: Any = None,
                    device: Any = None, requires_grad: bool = False, **_: Any) -> Tensor:
    devices.check(device)
    return _window(np.bartlett, window_length, periodic, dtype, requires_grad)


def kaiser_window(window_length: int, periodic: bool = True, beta: float = 12.0, *,
                  dtype: Any = None, device: Any = None, requires_grad: bool = False,
                  **_: Any) -> Tensor:
    devices.check(device)
    return _window(lambda m: np.kaiser(m, beta), window_length, periodic, dtype,
                   requires_grad)


__all__ = ["are_deterministic_algorithms_enabled", "asarray", "bartlett_window",
           "blackman_window", "can_cast", "conj_physical", "detach",
           "get_float32_matmul_precision", "get_num_interop_threads", "get_num_threads",
           "get_rng_state", "hamming_window", "hann_window", "initial_seed", "is_conj",
           "is_deterministic_algorithms_warn_only_enabled", "is_neg", "is_same_size",
           "is_signed", "kaiser_window", "randint_like", "resolve_conj", "resolve_neg",
           "result_type", "scalar_tensor", "seed", "set_float32_matmul_precision",
           "set_num_interop_threads", "set_num_threads", "set_rng_state",
           "use_deterministic_algorithms"]
