"""Running numpy silently: pullback's ops raise no RuntimeWarning for log(0), 0/0 or an
overflow in exp, as torch's are silent (docs/design.md, "numpy's warnings").

``quietly(fn, *args)`` runs ``fn`` in a ``contextvars.Context`` of this thread in which
numpy's error state is "ignore" (numpy keeps it in a context variable): entering a
context costs about a tenth of a microsecond, where ``with np.errstate(...)`` costs
about two, on every op. Nothing changes outside the call: the user's own numpy code
keeps its error state, and threads each have their context. A call made from inside
(an op forward that runs another op) runs in the context already entered.

>>> import numpy as np
>>> quietly(np.log, np.zeros(1))
array([-inf])
"""

from __future__ import annotations

import contextvars
import threading
from typing import Any, Callable

import numpy as np

#: True inside the quiet context (a call from inside runs in it as it is)
INSIDE = contextvars.ContextVar("pullback_quiet", default=False)
#: the thread's context is ``THREAD.ctx`` once ``context()`` made it
THREAD = threading.local()


def context() -> contextvars.Context:
    """This thread's quiet context (``context().run(fn, ...)``, where ``INSIDE.get()`` is
    False: the hot paths inline ``quietly``)."""
    ctx = getattr(THREAD, "ctx", None)
    if ctx is None:
        ctx = THREAD.ctx = contextvars.Context()
        ctx.run(np.seterr, all="ignore")
        ctx.run(INSIDE.set, True)
    return ctx


def quietly(fn: Callable, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` with numpy's floating-point warnings off."""
    if INSIDE.get():
        return fn(*args, **kwargs)
    return context().run(fn, *args, **kwargs)
