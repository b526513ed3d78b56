"""``Distribution``, the base every distribution extends: its shapes, its checks of
parameters and values (with torch's error texts), and the defaults of its API.

>>> import pullback as pb
>>> d = pb.distributions.Normal(pb.zeros(3), 1.0)
>>> d.batch_shape, d.event_shape, d.sample((2,)).shape
((3,), (), (2, 3))
"""

from __future__ import annotations

import warnings
from typing import Any

from ..autograd.grad_mode import no_grad
from ..autograd.messages import torch_size
from ..tensor import Tensor
from . import constraints
from .utils import lazy_property, show


class Distribution:
    """A family of probability distributions over a batch (``batch_shape``) of events
    (``event_shape``)."""

    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Whether distributions check their parameters and values unless told."""
        if value not in [True, False]:
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape: tuple = (), event_shape: tuple = (),
                 validate_args: bool | None = None) -> None:
        self._batch_shape, self._event_shape = tuple(batch_shape), tuple(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            self._check_parameters()

    def _check_parameters(self) -> None:
        try:
            arg_constraints = self.arg_constraints
        except NotImplementedError:
            arg_constraints = {}
            warnings.warn(f"{self.__class__} does not define `arg_constraints`. Please set "
                          "`arg_constraints = {}` or initialize the distribution with "
                          "`validate_args=False` to turn off validation.", stacklevel=3)
        for param, constraint in arg_constraints.items():
            if constraints.is_dependent(constraint):
                continue
            if param not in self.__dict__ and isinstance(getattr(type(self), param),
                                                         lazy_property):
                continue  # computed from another parameter: not given, not checked
            value = getattr(self, param)
            if not bool(constraint.check(value).all()):
                raise ValueError(
                    f"Expected parameter {param} ({type(value).__name__} of shape "
                    f"{tuple(value.shape)}) of distribution {self!r} to satisfy the "
                    f"constraint {constraint!r}, but found invalid values:\n{show(value)}")

    def expand(self, batch_shape: tuple, _instance: Any = None) -> Distribution:
        raise NotImplementedError

    def _get_checked_instance(self, cls: type, _instance: Any = None) -> Any:
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(
                f"Subclass {self.__class__.__name__} of {cls.__name__} that defines a custom "
                "__init__ method must also define a custom .expand() method.")
        return self.__new__(type(self)) if _instance is None else _instance

    def _expanded(self, new: Distribution, batch_shape: tuple,
                  event_shape: tuple = ()) -> Distribution:
        """``new``'s base initialised for an expand (no checks: its parameters were)."""
        Distribution.__init__(new, batch_shape, event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def batch_shape(self) -> tuple:
        return self._batch_shape

    @property
    def event_shape(self) -> tuple:
        return self._event_shape

    @property
    def arg_constraints(self) -> dict:
        raise NotImplementedError

    @property
    def support(self) -> Any:
        raise NotImplementedError

    @property
    def mean(self) -> Tensor:
        raise NotImplementedError

    @property
    def mode(self) -> Tensor:
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self) -> Tensor:
        raise NotImplementedError

    @property
    def stddev(self) -> Tensor:
        return self.variance.sqrt()

    def sample(self, sample_shape: tuple = ()) -> Tensor:
        """A draw of shape ``sample_shape + batch_shape + event_shape``, without gradient."""
        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape: tuple = ()) -> Tensor:
        """A reparameterized draw: gradients flow to the parameters."""
        raise NotImplementedError

    def sample_n(self, n: int) -> Tensor:
        warnings.warn("sample_n will be deprecated. Use .sample((n,)) instead", UserWarning,
                      stacklevel=2)
        return self.sample((n,))

    def log_prob(self, value: Tensor) -> Tensor:
        raise NotImplementedError

    def cdf(self, value: Tensor) -> Tensor:
        raise NotImplementedError

    def icdf(self, value: Tensor) -> Tensor:
        raise NotImplementedError

    def enumerate_support(self, expand: bool = True) -> Tensor:
        raise NotImplementedError

    def entropy(self) -> Tensor:
        raise NotImplementedError

    def perplexity(self) -> Tensor:
        return self.entropy().exp()

    def _extended_shape(self, sample_shape: tuple = ()) -> tuple:
        return tuple(sample_shape) + self._batch_shape + self._event_shape

    def _validate_sample(self, value: Any) -> None:
        """torch's checks of a value scored by log_prob/cdf: a Tensor, its rightmost dims
        the event's, broadcastable with the batch, inside the support."""
        if not isinstance(value, Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        shape, n_event = tuple(value.shape), len(self._event_shape)
        if shape[len(shape) - n_event:] != self._event_shape:
            raise ValueError("The right-most size of value must match event_shape: "
                             f"{torch_size(shape)} vs {torch_size(self._event_shape)}.")
        expected = self._batch_shape + self._event_shape
        for i, j in zip(reversed(shape), reversed(expected)):
            if i != 1 and j != 1 and i != j:
                raise ValueError("Value is not broadcastable with batch_shape+event_shape: "
                                 f"{torch_size(shape)} vs {torch_size(expected)}.")
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(f"{self.__class__} does not define `support` to enable sample "
                          "validation. Please initialize the distribution with "
                          "`validate_args=False` to turn off validation.", stacklevel=3)
            return
        if not bool(support.check(value).all()):
            raise ValueError(
                f"Expected value argument ({type(value).__name__} of shape {shape}) to be "
                f"within the support ({support!r}) of the distribution {self!r}, but found "
                f"invalid values:\n{show(value)}")

    def __repr__(self) -> str:
        names = [k for k in self.arg_constraints if k in self.__dict__]
        args = ", ".join(f"{p}: " + (show(self.__dict__[p]) if self.__dict__[p].numel() == 1
                                     else torch_size(self.__dict__[p].shape))
                         for p in names)
        return f"{type(self).__name__}({args})"
