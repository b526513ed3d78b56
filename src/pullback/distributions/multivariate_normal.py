"""``MultivariateNormal(loc, covariance_matrix= | precision_matrix= | scale_tril=)``: the
Gaussian over vectors, held as its covariance's Cholesky factor ``L`` (``rsample`` is
``loc + L @ eps``).

>>> import pullback as pb
>>> from pullback.distributions import MultivariateNormal
>>> d = MultivariateNormal(pb.zeros(2), covariance_matrix=pb.tensor([[2.0, 1.0], [1.0, 2.0]]))
>>> d.scale_tril
tensor([[1.4142, 0.0000],
        [0.7071, 1.2247]])
>>> d.log_prob(pb.tensor([1.0, -1.0])), d.entropy()
(tensor(-3.3872), tensor(3.3872))
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import linalg
from ..creation import eye, randn
from ..tensor import Tensor
from . import constraints
from .distribution import Distribution
from .utils import lazy_property


def batch_mahalanobis(tril: Tensor, x: Tensor) -> Tensor:
    """``x^T (L L^T)^-1 x`` over the batch dims of ``tril`` and ``x`` broadcast together."""
    n = x.shape[-1]
    batch = tuple(np.broadcast_shapes(tril.shape[:-2], x.shape[:-1]))
    y = linalg.solve_triangular(tril.expand(batch + (n, n)),
                                x.expand(batch + (n,)).unsqueeze(-1), upper=False)
    return y.squeeze(-1).pow(2).sum(-1)


def _half_log_det(tril: Tensor) -> Tensor:
    return tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)


def _tril_inverse(tril: Tensor) -> Tensor:
    n = tril.shape[-1]
    return linalg.solve_triangular(tril, eye(n, dtype=tril.dtype).expand(tril.shape),
                                   upper=False)


def _precision_to_scale_tril(precision: Tensor) -> Tensor:
    """The lower Cholesky factor of the inverse of ``precision``, without inverting it:
    the factor of the flipped matrix, flipped back, is an upper factor of ``precision``."""
    upper_flipped = linalg.cholesky(precision.flip((-2, -1)))
    return _tril_inverse(upper_flipped.flip((-2, -1)).mT)


class MultivariateNormal(Distribution):
    """The normal distribution over vectors of ``loc.shape[-1]`` entries."""

    arg_constraints = {"loc": constraints.real_vector,
                       "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite,
                       "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc: Tensor, covariance_matrix: Tensor | None = None,
                 precision_matrix: Tensor | None = None, scale_tril: Tensor | None = None,
                 validate_args: bool | None = None) -> None:
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        given = {"scale_tril": scale_tril, "covariance_matrix": covariance_matrix,
                 "precision_matrix": precision_matrix}
        given = {k: v for k, v in given.items() if v is not None}
        if len(given) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or "
                             "scale_tril may be specified.")
        (name, matrix), = given.items()
        if matrix.dim() < 2:
            raise ValueError(f"{name} matrix must be at least two-dimensional, with optional "
                             "leading batch dimensions" if name == "scale_tril" else
                             f"{name} must be at least two-dimensional, with optional "
                             "leading batch dimensions")
        batch_shape = tuple(np.broadcast_shapes(matrix.shape[:-2], loc.shape[:-1]))
        setattr(self, name, matrix.expand(batch_shape + matrix.shape[-2:]))
        self.loc = loc.expand(batch_shape + loc.shape[-1:])
        super().__init__(batch_shape, self.loc.shape[-1:], validate_args=validate_args)
        self._unbroadcasted_scale_tril = (
            matrix if name == "scale_tril" else linalg.cholesky(matrix)
            if name == "covariance_matrix" else _precision_to_scale_tril(matrix))

    def expand(self, batch_shape: tuple, _instance: Any = None) -> MultivariateNormal:
        new = self._get_checked_instance(MultivariateNormal, _instance)
        batch_shape = tuple(batch_shape)
        new.loc = self.loc.expand(batch_shape + self.event_shape)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(
                    batch_shape + self.event_shape * 2))
        return self._expanded(new, batch_shape, self.event_shape)

    def _matrix_shape(self) -> tuple:
        return self._batch_shape + self._event_shape * 2

    @lazy_property
    def scale_tril(self) -> Tensor:
        return self._unbroadcasted_scale_tril.expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        tril = self._unbroadcasted_scale_tril
        return (tril @ tril.mT).expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self) -> Tensor:
        inverse = _tril_inverse(self._unbroadcasted_scale_tril)
        return (inverse.mT @ inverse).expand(self._matrix_shape())

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        return self._unbroadcasted_scale_tril.pow(2).sum(-1).expand(
            self._batch_shape + self._event_shape)

    def rsample(self, sample_shape: tuple = ()) -> Tensor:
        eps = randn(*self._extended_shape(sample_shape), dtype=self.loc.dtype)
        return self.loc + (self._unbroadcasted_scale_tril @ eps.unsqueeze(-1)).squeeze(-1)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        m = batch_mahalanobis(self._unbroadcasted_scale_tril, value - self.loc)
        n = self._event_shape[0]
        return -0.5 * (n * math.log(2 * math.pi) + m) - \
            _half_log_det(self._unbroadcasted_scale_tril)

    def entropy(self) -> Tensor:
        n = self._event_shape[0]
        h = 0.5 * n * (1.0 + math.log(2 * math.pi)) + \
            _half_log_det(self._unbroadcasted_scale_tril)
        return h if not self._batch_shape else h.expand(self._batch_shape)
