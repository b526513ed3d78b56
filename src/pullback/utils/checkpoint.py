"""Activation checkpointing: recompute a segment in backward instead of saving it.

``checkpoint(fn, *args, use_reentrant=False)`` runs ``fn`` keeping only its inputs;
every tensor its ops save for backward is replaced, through saved-tensor hooks, by a
placeholder. The first time backward needs one of them, ``fn`` runs again (with grad
on and the random generator as it was) and the values it saves stand in for the
originals; recomputation stops as soon as it has all of them. ``use_reentrant=True`` is
the older form: a custom Function whose backward reruns ``fn`` and calls backward
inside it (so not with ``autograd.grad`` or ``inputs=``). As in torch 2.13, leaving
``use_reentrant`` out warns and means True.

>>> import pullback as pb
>>> from pullback.utils.checkpoint import checkpoint
>>> x = pb.tensor([1., 2.], requires_grad=True)
>>> y = checkpoint(lambda t: t.exp().sin(), x, use_reentrant=False)
>>> y.sum().backward()
>>> x.grad
tensor([-2.4784,  3.3129])

Inside ``pb.compile`` the segment is traced like any code: the compiler already keeps
only what its backward reads. ``debug=True`` is accepted; pullback has no operator log
to add to the errors, which are those of ``debug=False``.
"""

from __future__ import annotations

import contextlib
import uuid
import warnings
import weakref
from collections import defaultdict
from typing import Any, Callable, ContextManager

import numpy as np

from ..autograd import engine, record
from ..autograd.backward import run_backward
from ..autograd.function import Function
from ..autograd.grad_mode import STATE, enable_grad, no_grad
from ..autograd.graph import SavedTensor
from ..autograd.saved_hooks import saved_tensors_hooks
from ..ops.sampling import GENERATOR

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError", "noop_context_fn"]

REENTRANT_DEFAULT = (
    "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. Starting "
    "in PyTorch 2.9, calling checkpoint without use_reentrant will raise an exception. "
    "use_reentrant=False is recommended, but if you need to preserve the current default "
    "behavior, you can pass use_reentrant=True. Refer to docs for more details on the "
    "differences between the two variants.")
SEQUENTIAL_REENTRANT_DEFAULT = (
    "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be passed "
    "explicitly. In version 2.9 we will raise an exception if use_reentrant is not passed. "
    "use_reentrant=False is recommended, but if you need to preserve the current default "
    "behavior, you can pass use_reentrant=True. Refer to docs for more details on the "
    "differences between the two variants.")
NO_INPUT_REQUIRES_GRAD = "None of the inputs have requires_grad=True. Gradients will be None"
REENTRANT_WITH_INPUTS = (
    "When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad() or passing an "
    "`inputs` parameter to .backward(). To resolve this error, you can either set "
    "use_reentrant=False, or call .backward() without passing the `inputs` argument.")
DEBUG_TIP = """
Tip: To see a more detailed error message, either pass `debug=True` to
`torch.utils.checkpoint.checkpoint(...)` or wrap the code block
with `with torch.utils.checkpoint.set_checkpoint_debug_enabled(True):` to
enable checkpoint\u2011debug mode globally.

If this error occurs under torch.compile with automatic_dynamic_shapes enabled,
it may be because the recomputation selected a different compiled graph than the
forward pass (e.g., a dynamic graph instead of the original static graph).
To fix this, either:
  - Use torch._dynamo.mark_dynamic() to explicitly mark varying dimensions as
    dynamic upfront, avoiding the static-to-dynamic transition.
  - Call torch._C._dynamo.eval_frame._set_lru_cache(False) to disable LRU cache
    reordering, which can change which graph is checked first between forward
    and recompute.
See https://github.com/pytorch/pytorch/issues/166926 for more details and
workaround examples.
"""


class CheckpointError(RuntimeError):
    """A recomputation that does not match the original forward."""


def noop_context_fn() -> tuple[ContextManager, ContextManager]:
    return contextlib.nullcontext(), contextlib.nullcontext()


def checkpoint(function: Callable, *args: Any, use_reentrant: bool | None = None,
               context_fn: Callable[[], tuple] = noop_context_fn,
               determinism_check: str = "default", debug: bool = False,
               early_stop: bool = True, **kwargs: Any) -> Any:
    """``function(*args, **kwargs)``, its saved tensors recomputed in backward."""
    if use_reentrant is None:
        warnings.warn(REENTRANT_DEFAULT, UserWarning, stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    if use_reentrant:
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when "
                             "use_reentrant=False.")
        return CheckpointFunction.apply(function, preserve, *args)
    if determinism_check not in _METADATA:
        raise ValueError(f"determinism_check should be one of {list(_METADATA)}, but got "
                         f"{determinism_check}")
    forward_context, recompute_context = context_fn()
    if not STATE.grad_enabled:
        with forward_context:
            return function(*args, **kwargs)
    rng = _rng_state() if preserve else None

    def recompute(*inputs: Any) -> None:
        with _forked_rng(rng), recompute_context:
            function(*inputs, **kwargs)

    frame = _Frame(recompute, early_stop, _METADATA[determinism_check])
    frame.save_inputs(args)
    with _CheckpointHook(frame), forward_context:
        out = function(*args, **kwargs)
    frame.forward_completed = True
    return out


def checkpoint_sequential(functions: Any, segments: int, input: Any,
                          use_reentrant: bool | None = None, **kwargs: Any) -> Any:
    """Run ``functions`` (a list) one after the other on ``input``, checkpointing all
    ``segments`` but the last."""
    if use_reentrant is None:
        warnings.warn(SEQUENTIAL_REENTRANT_DEFAULT, UserWarning, stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    functions = list(functions)

    def run(start: int, end: int) -> Callable:
        def forward(x: Any) -> Any:
            for j in range(start, end + 1):
                x = functions[j](x)
            return x
        return forward

    size = len(functions) // segments
    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(run(start, end), input, use_reentrant=use_reentrant,
                           preserve_rng_state=preserve)
    return run(end + 1, len(functions) - 1)(input)


# ----------------------------------------------------------- the random generator
def _rng_state() -> Any:
    return GENERATOR.rng.bit_generator.state


@contextlib.contextmanager
def _forked_rng(state: Any) -> Any:
    """Run with pullback's generator in ``state`` (None: as it is), then put the caller's
    generator back (torch's ``fork_rng`` + ``set_rng_state``)."""
    if state is None:
        yield
        return
    saved = GENERATOR.rng
    GENERATOR.rng = np.random.Generator(type(saved.bit_generator)())
    GENERATOR.rng.bit_generator.state = state
    try:
        yield
    finally:
        GENERATOR.rng = saved


# ------------------------------------------------------------------ non-reentrant
_METADATA: dict[str, Callable] = {
    "default": lambda x: {"shape": tuple(x.shape), "dtype": x.dtype, "device": "cpu"},
    "none": lambda x: None,
}


class _Handle:
    pass


class _Holder:
    """What a checkpointed node keeps instead of a tensor: per backward (graph task),
    the handle of its recomputed value."""

    def __init__(self) -> None:
        self.handles: dict = {}


class _StopRecomputation(Exception):
    pass


class _Frame:
    """One checkpointed call: its inputs, the holders its ops saved, and per backward
    the values the recomputation saved."""

    def __init__(self, recompute_fn: Callable, early_stop: bool, metadata_fn: Callable) -> None:
        self.recompute_fn = recompute_fn
        self.early_stop = early_stop
        self.metadata_fn = metadata_fn
        self.saved_args: list = []
        self.weak_holders: list = []
        self.x_metadatas: list = []
        self.recomputed: dict = defaultdict(weakref.WeakKeyDictionary)
        self.recomp_counter: dict = defaultdict(int)
        self.is_recomputed: dict = defaultdict(bool)
        self.forward_completed = False
        self.ignore_saved_mismatch = False

    def save_inputs(self, args: tuple) -> None:  # version-checked, as saved tensors are
        self.saved_args = [SavedTensor(a) if isinstance(a, record.Tensor) else a for a in args]

    def get_inputs(self) -> list:
        return [a.unpack(True) if isinstance(a, SavedTensor) else a for a in self.saved_args]

    def check_recomputed_tensors_match(self, gid: Any) -> None:
        if self.ignore_saved_mismatch:
            return
        if len(self.weak_holders) != self.recomp_counter[gid]:
            raise CheckpointError(
                "torch.utils.checkpoint: A different number of tensors was saved during the "
                "original forward and recomputation.\n"
                f"Number of tensors saved during forward: {len(self.weak_holders)}\n"
                f"Number of tensors saved during recomputation: {self.recomp_counter[gid]}.\n"
                f"{DEBUG_TIP}")
        mismatched = ""
        for idx, ref in enumerate(self.weak_holders):
            holder = ref()
            if holder is None:
                continue
            recomputed = self.recomputed[gid][holder.handles[gid]]
            now = self.metadata_fn(recomputed)
            if self.x_metadatas[idx] != now:
                mismatched += (f"tensor at position {idx}:\nsaved metadata: "
                               f"{self.x_metadatas[idx]}\nrecomputed metadata: {now}\n")
        if mismatched:
            raise CheckpointError(
                "torch.utils.checkpoint: Recomputed values for the following tensors have "
                f"different metadata than during the forward pass.\n{mismatched}.\n{DEBUG_TIP}")


class _CheckpointHook(saved_tensors_hooks):
    """The forward's hooks: keep a holder per saved tensor; the first unpack in a
    backward recomputes the segment."""

    def __init__(self, frame: _Frame) -> None:
        def pack(x: Any) -> _Holder:
            holder = _Holder()
            frame.weak_holders.append(weakref.ref(holder))
            with no_grad():
                frame.x_metadatas.append(frame.metadata_fn(x))
            return holder

        def unpack(holder: _Holder) -> Any:
            task = engine.current_task()
            gid = task.id if task is not None else uuid.uuid4().int
            if not frame.is_recomputed[gid]:
                inputs = frame.get_inputs()
                try:
                    with _RecomputationHook(weakref.ref(frame), gid), enable_grad():
                        frame.recompute_fn(*inputs)
                except _StopRecomputation:
                    pass
                frame.is_recomputed[gid] = True
                frame.check_recomputed_tensors_match(gid)
            if holder.handles.get(gid) is None:
                raise CheckpointError(
                    "torch.utils.checkpoint: Unpack is being triggered for a tensor that was "
                    "already unpacked once. If you are calling ctx.saved_tensors in backward, "
                    "make sure to do so only once. Otherwise please open an issue with details "
                    "on your use case.")
            value = frame.recomputed[gid][holder.handles[gid]]
            holder.handles[gid] = None
            return value

        super().__init__(pack, unpack)


class _RecomputationHook(saved_tensors_hooks):
    """The recomputation's hooks: what it saves, in order, answers the forward's
    holders; it stops once every holder has its value (early_stop)."""

    def __init__(self, frame_ref: Any, gid: Any) -> None:
        def pack(x: Any) -> Any:
            x = x.detach() if x.requires_grad else x
            frame = frame_ref()
            idx = frame.recomp_counter[gid]
            frame.recomp_counter[gid] += 1
            if idx >= len(frame.weak_holders):
                if not frame.forward_completed:
                    frame.ignore_saved_mismatch = True
                    return x
                raise CheckpointError("torch.utils.checkpoint: trying to save more tensors "
                                      "during recomputation than during the original forward "
                                      f"pass.\n{DEBUG_TIP}")
            holder = frame.weak_holders[idx]()
            if holder is not None:
                holder.handles[gid] = _Handle()
                frame.recomputed[gid][holder.handles[gid]] = x
            if frame.early_stop and frame.recomp_counter[gid] == len(frame.weak_holders):
                raise _StopRecomputation
            return x

        super().__init__(pack, lambda x: x)


# ---------------------------------------------------------------------- reentrant
class CheckpointFunction(Function):
    """``use_reentrant=True``: forward without grad, backward reruns and backprops."""

    @staticmethod
    def forward(ctx: Any, run_function: Callable, preserve_rng_state: bool, *args: Any) -> Any:
        if not any(a.requires_grad for a in args if isinstance(a, record.Tensor)):
            warnings.warn(NO_INPUT_REQUIRES_GRAD, UserWarning, stacklevel=2)
        ctx.run_function = run_function
        ctx.rng = _rng_state() if preserve_rng_state else None
        ctx.inputs = [None if isinstance(a, record.Tensor) else a for a in args]
        ctx.tensor_indices = [i for i, a in enumerate(args) if isinstance(a, record.Tensor)]
        ctx.save_for_backward(*[args[i] for i in ctx.tensor_indices])
        with no_grad():
            return run_function(*args)

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> tuple:
        task = engine.current_task()
        if task is not None and task.targets is not None:
            raise RuntimeError(REENTRANT_WITH_INPUTS)
        inputs = list(ctx.inputs)
        for i, t in zip(ctx.tensor_indices, ctx.saved_tensors):
            inputs[i] = t
        detached = tuple(_detached(a) for a in inputs)
        with _forked_rng(ctx.rng), enable_grad():
            outputs = ctx.run_function(*detached)
        if isinstance(outputs, record.Tensor):
            outputs = (outputs,)
        pairs = [(o, g) for o, g in zip(outputs, grads)
                 if isinstance(o, record.Tensor) and o.requires_grad]
        if not pairs:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not "
                               "necessary")
        run_backward([o for o, _ in pairs], [g for _, g in pairs])
        return (None, None) + tuple(a.grad if isinstance(a, record.Tensor) else None
                                    for a in detached)


def _detached(a: Any) -> Any:
    if not isinstance(a, record.Tensor):
        return a
    x = a.detach()
    x.requires_grad = a.requires_grad
    return x
