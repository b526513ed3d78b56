"""``Optimizer``: torch.optim's parameter groups, ``zero_grad``, ``state_dict`` and
``load_state_dict``, and the step driver every optimizer shares.

A subclass gives its defaults, the state it keeps per parameter (``_state_init``) and
its update (``_update``): numpy on arrays, in place into the parameters and the state,
never into the gradient. ``step`` runs the update once per bucket (a group's
parameters of one dtype, laid out in one flat array: ``flat.py``) on the flat arrays,
in blocks of ``BLOCK`` elements, when every parameter of the bucket has a gradient and
the same step count; otherwise (some gradients missing: frozen or unused parameters)
once per parameter, on its slices of the same arrays. Updates write arrays directly,
as torch's step does under no_grad: parameters stay leaves, their versions move on.

>>> import pullback as pb
>>> w = pb.tensor([1., 2.], requires_grad=True)
>>> opt = pb.optim.SGD([w], lr=0.1)
>>> (w * w).sum().backward()
>>> opt.step()
>>> w
tensor([0.8000, 1.6000], requires_grad=True)
>>> pb.optim.SGD([w * 2], lr=0.1)
Traceback (most recent call last):
  ...
ValueError: can't optimize a non-leaf Tensor
"""

from __future__ import annotations

import copy
import warnings
from collections import defaultdict
from itertools import chain
from typing import Any, Callable, Iterable

import numpy as np

from ..autograd import messages, record
from ..autograd.grad_mode import enable_grad
from ..nn.state_dict import typename
from ..tensor import Tensor
from .flat import Bucket, layout

# elements updated per numpy call: a block of each array the update touches stays in
# cache (a 300k-parameter MLP updates 10-25% faster than in one piece; docs/design.md)
BLOCK = 1 << 16


class _RequiredParameter:
    """The default of a hyperparameter every group must give."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()


class Optimizer:
    """Base of the optimizers: ``params`` is an iterable of Tensors, of
    ``(name, Tensor)`` pairs, or of dicts (parameter groups with their own options)."""

    _state_step = True  # keeps torch's per-parameter "step" in its state
    _step_dependent = False  # the update depends on the step count (bias corrections)
    _state_at_start = False  # state made when the optimizer is (Adagrad), not lazily

    def __init__(self, params: Iterable, defaults: dict) -> None:
        self.defaults = defaults
        self.state: defaultdict = defaultdict(dict)
        self.param_groups: list = []
        self._buckets: list = []  # per group: its buckets (flat.py)
        self._step_count = 0
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            "Tensors or dicts, but got " + typename(params))
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    # ------------------------------------------------------------ groups
    def add_param_group(self, param_group: dict) -> None:
        """Add a group of parameters with its own options (the defaults fill the rest)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, "
                            "but the ordering of tensors in sets will change between runs. "
                            "Please use a list instead.")
        params = [params] if isinstance(params, Tensor) else list(params)
        names = [p[0] for p in params if isinstance(p, tuple)]
        params = [p[1] if isinstance(p, tuple) else p for p in params]
        if names:
            if len(names) != len(params):
                raise ValueError("all optimizer params should be with/without names. Some "
                                 "param names are missing")
            param_group["param_names"] = names
        param_group["params"] = params
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is "
                                + typename(p))
            if not (p.is_leaf or p.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError("parameter group didn't specify a value of required "
                                 f"optimization parameter {name}")
            param_group.setdefault(name, default)
        self._check_group(param_group)
        self.param_groups.append(param_group)
        self._buckets.append(self._layout(param_group))
        if self._state_at_start:
            for bucket in self._buckets[-1]:
                for i in range(len(bucket.params)):
                    self._init_state(param_group, bucket, i)

    def _check_group(self, group: dict) -> None:
        ids = [id(p) for p in group["params"]]
        if len(ids) != len(set(ids)):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in "
                          "future, this will cause an error; see "
                          "github.com/pytorch/pytorch/issues/40967 for more information",
                          stacklevel=4)
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        for g in self.param_groups:
            if ("param_names" in group) != ("param_names" in g):
                which = "with names" if "param_names" in group else "without names"
                raise ValueError("all optimizer param groups should be with/without names. "
                                 f"cannot add param group {which} to the optimizer")
        if seen.intersection(ids):
            raise ValueError("some parameters appear in more than one parameter group")

    def _layout(self, group: dict, old: list | None = None) -> list:
        """The group's buckets; laid out again (``old``: the state carried over, and
        ``self.state`` made to view the new arrays) after a parameter's array changed."""
        unique = list({id(p): p for p in group["params"]}.values())
        buckets = layout(unique, old)
        names = tuple(self._state_init(group))
        for b in buckets:
            b.source = group["params"]
            self._settle(b)
            for i, p in enumerate(b.params):
                if old and b.ready[i] and (names or self._state_step):
                    self.state[p] = b.state_of(i, names, self._state_step)
        return buckets

    # ------------------------------------------------------------ stepping
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset every parameter's ``.grad``: to None (the default), or to zeros."""
        for group in self.param_groups:
            for p in group["params"]:
                g = p._grad
                if g is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    if g.grad_fn is not None:
                        g.detach_()
                    else:
                        g.requires_grad_(False)
                    g.zero_()

    def step(self, closure: Callable | None = None) -> Any:
        """One update of every parameter that has a gradient. ``closure`` (optional)
        recomputes the loss, with grad mode on; its result is returned. Refused while
        this thread traces a function (generated code would not repeat it)."""
        self._refuse_in_trace()
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        for k, group in enumerate(self.param_groups):
            buckets = self._buckets[k]
            if not buckets or buckets[0].source is not group["params"] or \
                    not all(b.intact() for b in buckets):
                buckets = self._buckets[k] = self._layout(group, buckets)
            for bucket in buckets:
                self._step_bucket(group, bucket)
        self._step_count += 1
        return loss

    def _refuse_in_trace(self) -> None:
        if record.trace_hooks():
            raise RuntimeError(messages.side_effect_in_trace(f"{type(self).__name__}.step()"))

    def _step_bucket(self, group: dict, bucket: Bucket) -> None:
        grads = [p._grad for p in bucket.params]
        if any(g is None for g in grads) or not bucket.uniform:
            return self._step_each(group, bucket, grads)
        first = not bucket.ready[0]
        if first:
            for i in range(len(bucket.params)):
                self._init_state(group, bucket, i)
        bucket.steps += 1
        step = float(bucket.steps[0])
        names = self._state_init(group)
        g = bucket.gather(grads)
        for start in range(0, bucket.data.size, BLOCK):  # (cache-sized blocks: one for most)
            sl = slice(start, start + BLOCK)
            self._update(group, bucket.data[sl], g[sl],
                         {name: bucket.buffers[name][sl] for name in names}, step, first)
        bucket.bump_versions()

    def _step_each(self, group: dict, bucket: Bucket, grads: list) -> None:
        """The update parameter by parameter (on its slices of the flat arrays)."""
        names = self._state_init(group)
        for i, g in enumerate(grads):
            if g is None:
                continue
            first = not bucket.ready[i]
            if first:
                self._init_state(group, bucket, i)
            bucket.steps[i] += 1
            sl = bucket.slices[i]
            state = {name: bucket.buffers[name][sl] for name in names}
            self._update(group, bucket.data[sl], bucket.real_view(g._data), state,
                         float(bucket.steps[i]), first)
            bucket.params[i]._vc.value += 1
        self._settle(bucket)

    def _settle(self, bucket: Bucket) -> None:
        """Whether the next step may update the bucket as a whole: every parameter's
        state present (or none), and (if the update depends on it) one step count."""
        ready = bucket.ready
        bucket.uniform = bool(ready.all() or not ready.any()) and (
            not self._step_dependent or len(set(bucket.steps[ready].tolist())) <= 1)

    def _init_state(self, group: dict, bucket: Bucket, i: int) -> None:
        """Parameter i of ``bucket`` gets its state (torch makes it on its first step)."""
        names = self._state_init(group)
        for name, fill in names.items():
            bucket.buffer(name, 0.0 if fill is None else fill)[bucket.slices[i]] = \
                0.0 if fill is None else fill
        bucket.ready[i] = True
        bucket.steps[i] = 0
        if names or self._state_step:
            self.state[bucket.params[i]] = bucket.state_of(i, tuple(names), self._state_step)

    def _state_init(self, group: dict) -> dict:
        """State name -> its initial value (None: the first gradient), in torch's order."""
        return {}

    def _update(self, group: dict, p: np.ndarray, g: np.ndarray, state: dict, step: float,
                first: bool) -> None:
        raise NotImplementedError

    # ------------------------------------------------------------ state dicts
    def state_dict(self) -> dict:
        """``{"state": {index: {...}}, "param_groups": [{..., "params": [indices]}]}``,
        parameters numbered in group order, as torch numbers them."""
        index: dict = {}
        groups = []
        for group in self.param_groups:
            for p in group["params"]:
                index.setdefault(id(p), len(index))
            packed = {k: v for k, v in group.items() if k != "params"}
            packed["params"] = [index[id(p)] for p in group["params"]]
            groups.append(packed)
        state = {index[id(p)]: v for p, v in self.state.items() if id(p) in index}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict) -> None:
        """Options and state from ``state_dict`` (values are copied into this
        optimizer's arrays, cast to each parameter's dtype; "step" stays float32)."""
        saved = copy.deepcopy(state_dict["param_groups"])
        if len(saved) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(self.param_groups, saved)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match "
                             "the size of optimizer's group")
        params = dict(zip(chain.from_iterable(s["params"] for s in saved),
                          chain.from_iterable(g["params"] for g in self.param_groups)))
        for group, new in zip(self.param_groups, saved):
            new["params"] = group["params"]
            if "param_names" in group and "param_names" not in new:
                new["param_names"] = group["param_names"]
        self.param_groups[:] = saved
        self.state = defaultdict(dict)
        for k, buckets in enumerate(self._buckets):
            for b in buckets:
                b.ready[:] = False
                b.source = saved[k]["params"]
        for key, value in state_dict["state"].items():
            if key in params:
                self._load_param_state(params[key], value)
            else:
                self.state[key] = value
        for buckets in self._buckets:
            for b in buckets:
                self._settle(b)

    def _load_param_state(self, param: Tensor, value: dict) -> None:
        for k, buckets in enumerate(self._buckets):
            for b in buckets:
                for i, p in enumerate(b.params):
                    if p is param:
                        self._init_state(self.param_groups[k], b, i)
                        for name, v in value.items():
                            if name == "step" or name in b.buffers:
                                b.load(i, name, v)
                        return

    def __repr__(self) -> str:
        text = type(self).__name__ + " ("
        for i, group in enumerate(self.param_groups):
            text += f"\nParameter Group {i}\n"
            for key in sorted(group):
                if key != "params":
                    text += f"    {key}: {group[key]}\n"
        return text + ")"


def coupled_gradient(group: dict, p: np.ndarray, g: np.ndarray) -> np.ndarray:
    """The gradient an update follows: negated to ``maximize``, plus ``weight_decay *
    p`` (L2 weight decay, as SGD, RMSprop, Adagrad and Adam apply it). A new array
    whenever it differs from ``g``, which is never written."""
    if group["maximize"]:
        g = -g
    if group["weight_decay"] != 0:
        g = g + group["weight_decay"] * p
    return g


__all__ = ["Optimizer", "coupled_gradient", "required"]
