"""The regions a distribution's parameters and values live in, as torch.distributions'
``constraints``: each ``check(value)`` is a bool Tensor (pullback's ops, so it runs in
compiled code too), and each ``repr`` is torch's (its error messages quote it).

>>> import pullback as pb
>>> from pullback.distributions import constraints
>>> constraints.positive, constraints.positive.check(pb.tensor([1.0, -1.0]))
(GreaterThan(lower_bound=0.0), tensor([ True, False]))
"""

from __future__ import annotations

from typing import Any, Callable

from .. import linalg
from ..tensor import Tensor
from .utils import show


def _show(bound: Any) -> str:
    """A bound as torch's f-strings render it (a 0-d Tensor as its number)."""
    return show(bound) if isinstance(bound, Tensor) else str(bound)


class Constraint:
    """A region: ``check(value)`` says elementwise (over the batch) whether ``value`` is in it."""

    is_discrete = False
    event_dim = 0

    def check(self, value: Tensor) -> Tensor:
        raise NotImplementedError

    def __repr__(self) -> str:
        return type(self).__name__[1:] + "()"


class _Dependent(Constraint):
    """A region that depends on other parameters (never checked)."""

    def __init__(self, *, is_discrete: bool = False, event_dim: int = 0) -> None:
        self.is_discrete, self.event_dim = is_discrete, event_dim

    def check(self, value: Tensor) -> Tensor:
        raise ValueError("Cannot determine validity of dependent constraint")


def is_dependent(constraint: Any) -> bool:
    """Whether ``constraint`` is a dependent one (not checked on construction)."""
    return isinstance(constraint, _Dependent)


class dependent_property(property, _Dependent):
    """A property that is also a dependent constraint: a distribution's support that
    depends on its parameters (``Uniform``'s)."""

    def __init__(self, fn: Callable | None = None, *, is_discrete: bool = False,
                 event_dim: int = 0) -> None:
        property.__init__(self, fn)
        _Dependent.__init__(self, is_discrete=is_discrete, event_dim=event_dim)

    def __call__(self, fn: Callable) -> dependent_property:
        return dependent_property(fn, is_discrete=self.is_discrete, event_dim=self.event_dim)


class _Real(Constraint):
    def check(self, value: Tensor) -> Tensor:
        return value == value  # false on nan only


class _Boolean(Constraint):
    is_discrete = True

    def check(self, value: Tensor) -> Tensor:
        return (value == 0) | (value == 1)


class _GreaterThan(Constraint):
    def __init__(self, lower_bound: Any) -> None:
        self.lower_bound = lower_bound

    def check(self, value: Tensor) -> Tensor:
        return self.lower_bound < value

    def __repr__(self) -> str:
        return f"GreaterThan(lower_bound={_show(self.lower_bound)})"


class _GreaterThanEq(Constraint):
    def __init__(self, lower_bound: Any) -> None:
        self.lower_bound = lower_bound

    def check(self, value: Tensor) -> Tensor:
        return self.lower_bound <= value

    def __repr__(self) -> str:
        return f"GreaterThanEq(lower_bound={_show(self.lower_bound)})"


class _LessThan(Constraint):
    def __init__(self, upper_bound: Any) -> None:
        self.upper_bound = upper_bound

    def check(self, value: Tensor) -> Tensor:
        return value < self.upper_bound

    def __repr__(self) -> str:
        return f"LessThan(upper_bound={_show(self.upper_bound)})"


class _Interval(Constraint):
    def __init__(self, lower_bound: Any, upper_bound: Any) -> None:
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def check(self, value: Tensor) -> Tensor:
        return (self.lower_bound <= value) & (value <= self.upper_bound)

    def __repr__(self) -> str:
        return (f"Interval(lower_bound={_show(self.lower_bound)}, "
                f"upper_bound={_show(self.upper_bound)})")


class _IntegerInterval(Constraint):
    is_discrete = True

    def __init__(self, lower_bound: Any, upper_bound: Any) -> None:
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def check(self, value: Tensor) -> Tensor:
        return ((value == value.floor()) & (self.lower_bound <= value)
                & (value <= self.upper_bound))

    def __repr__(self) -> str:
        return (f"IntegerInterval(lower_bound={_show(self.lower_bound)}, "
                f"upper_bound={_show(self.upper_bound)})")


class _Simplex(Constraint):
    event_dim = 1

    def check(self, value: Tensor) -> Tensor:
        return (value >= 0).all(-1) & ((value.sum(-1) - 1).abs() < 1e-6)


class _LowerCholesky(Constraint):
    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        lower = (value.tril() == value).all(-1).all(-1)
        return lower & (value.diagonal(dim1=-2, dim2=-1) > 0).all(-1)


class _PositiveDefinite(Constraint):
    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        symmetric = value.isclose(value.mT, atol=1e-6).all(-1).all(-1)
        if not bool(symmetric.all()):
            return symmetric
        return (linalg.eigvalsh(value) > 0).all(-1)


class _IndependentConstraint(Constraint):
    """``base`` over the rightmost ``reinterpreted_batch_ndims`` dims of the event too."""

    def __init__(self, base_constraint: Constraint, reinterpreted_batch_ndims: int) -> None:
        self.base_constraint = base_constraint
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims
        self.is_discrete = base_constraint.is_discrete
        self.event_dim = base_constraint.event_dim + reinterpreted_batch_ndims

    def check(self, value: Tensor) -> Tensor:
        result = self.base_constraint.check(value)
        for _ in range(self.reinterpreted_batch_ndims):
            result = result.all(-1)
        return result

    def __repr__(self) -> str:
        return (f"IndependentConstraint({self.base_constraint!r}, "
                f"{self.reinterpreted_batch_ndims})")


dependent = _Dependent()
real = _Real()
boolean = _Boolean()
positive = _GreaterThan(0.0)
nonnegative = _GreaterThanEq(0.0)
unit_interval = _Interval(0.0, 1.0)
simplex = _Simplex()
lower_cholesky = _LowerCholesky()
positive_definite = _PositiveDefinite()
real_vector = _IndependentConstraint(real, 1)
greater_than = _GreaterThan
greater_than_eq = _GreaterThanEq
less_than = _LessThan
interval = _Interval
integer_interval = _IntegerInterval
independent = _IndependentConstraint
