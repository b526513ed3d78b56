"""Anomaly detection: which forward call made the node whose backward failed.

torch's ``detect_anomaly`` / ``set_detect_anomaly``. While it is on, every new node
keeps the stack of the forward call that made it (``node.metadata["traceback_"]``, the
user's frames: pullback's own are left out). When a node fails in backward, a warning
with that stack comes first (``Error detected in ExpBackward0. Traceback of forward call
that caused the error: ...``), then the error; with ``check_nan`` a node that returns
NaN is an error of its own (``Function 'SqrtBackward0' returned nan values in its 0th
output.``). The state is process-wide, as in torch.

Off, it costs nothing on the op hot path: nodes record the stack through
``grad_mode.set_node_extra``, which the recorder sees as one global flag it checks
anyway (saved-tensor hooks share it).
"""

from __future__ import annotations

import sys
import traceback
import warnings
from typing import Any

import numpy as np

from ..user_code import is_user_file
from .grad_mode import set_node_extra

_ENABLED = False
_CHECK_NAN = True

ENABLED_WARNING = ("Anomaly Detection has been enabled. This mode will increase the runtime and "
                   "should only be enabled for debugging.")
NO_FORWARD_INFO = ("Error detected in {name}. No forward pass information available. Enable "
                   "detect anomaly during forward pass for more information.")
TRACEBACK_OF = "Error detected in {name}. Traceback of forward call that caused the error:\n"
NAN_OUTPUT = "Function '{name}' returned nan values in its {i}th output."


def is_anomaly_enabled() -> bool:
    """torch.is_anomaly_enabled: whether anomaly detection is on."""
    return _ENABLED


def is_anomaly_check_nan_enabled() -> bool:
    """torch.is_anomaly_check_nan_enabled: whether backward checks for NaN."""
    return _CHECK_NAN


def set_anomaly_enabled(mode: bool, check_nan: bool = True) -> None:
    """Turn anomaly detection on or off (torch._C's ``set_anomaly_enabled``)."""
    global _ENABLED, _CHECK_NAN
    _ENABLED, _CHECK_NAN = bool(mode), bool(check_nan)
    set_node_extra("anomaly", store_stack if _ENABLED else None)


class detect_anomaly:
    """Context manager that turns anomaly detection on inside it (it warns when made,
    as torch does; unlike the grad modes it is not a decorator)."""

    def __init__(self, check_nan: bool = True) -> None:
        self.prev = _ENABLED
        self.check_nan = check_nan
        self.prev_check_nan = _CHECK_NAN
        warnings.warn(ENABLED_WARNING, UserWarning, stacklevel=2)

    def __enter__(self) -> None:
        set_anomaly_enabled(True, self.check_nan)

    def __exit__(self, *exc: object) -> None:
        set_anomaly_enabled(self.prev, self.prev_check_nan)


class set_detect_anomaly:
    """Set anomaly detection on or off: as a plain call it stays, as a context manager
    the previous state comes back on exit."""

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self.prev = _ENABLED
        self.prev_check_nan = _CHECK_NAN
        set_anomaly_enabled(mode, check_nan)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: object) -> None:
        set_anomaly_enabled(self.prev, self.prev_check_nan)


def user_frames() -> list:
    """The current call stack's frames (outermost first), the libraries' (pullback's,
    numpy's, the standard library's) left out."""
    return [f for f in traceback.extract_stack(sys._getframe(1)) if is_user_file(f.filename)]


def forward_stack() -> list[str]:
    """The current call stack as ``traceback.format_list`` lines, pullback's frames left
    out (torch's C++ ops have no Python frames; ours would only hide the user's)."""
    return traceback.format_list(user_frames())


def store_stack(node: Any) -> None:
    """Keep the stack of the forward call making ``node`` (torch's ``traceback_``)."""
    node.metadata["traceback_"] = forward_stack()


def report(node: Any) -> None:
    """The warning that precedes a backward error in anomaly mode."""
    meta = node._metadata
    stack = None if meta is None else meta.get("traceback_")
    name = node.name()
    if stack is None:
        text = NO_FORWARD_INFO.format(name=name)
    else:
        text = TRACEBACK_OF.format(name=name) + "".join(stack)
    warnings.warn(text, UserWarning, stacklevel=2)


def check_nan(node: Any, grads: Any) -> None:
    """torch's check of what a node returned: no gradient may hold a NaN."""
    for i, g in enumerate(grads or ()):
        if g is not None and has_nan(g):
            raise RuntimeError(NAN_OUTPUT.format(name=node.name(), i=i))


def has_nan(v: Any) -> bool:
    """Whether a value (or one of several) holds a NaN."""
    if isinstance(v, (tuple, list)):  # (an op with several outputs)
        return any(has_nan(x) for x in v)
    data = getattr(v, "_data", v)
    return isinstance(data, np.ndarray) and data.dtype.kind in "fc" and bool(np.isnan(data).any())
