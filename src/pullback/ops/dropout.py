"""torch.nn.functional's dropouts: dropout, dropout1d/2d/3d (whole channels),
alpha_dropout and feature_alpha_dropout.

The mask is one impure op, ``bernoulli_keep`` (ones with probability 1 - p, in the
input's dtype), that reads pullback's generator (``pb.manual_seed``) as the other
draws do (sampling.py). It takes the input as its argument, so on a Tensor it is
recorded and under ``pb.compile`` it is an equation: compiled code draws a fresh mask
on every call, and no pass merges two draws. The rest is torch's arithmetic on it
(``MulBackward0``, ``AddBackward0`` for the alpha forms). Not training, ``p=0`` or an
empty input return the input itself; ``p=1`` multiplies by 0, as torch.

>>> import pullback as pb
>>> import pullback.nn.functional as F
>>> pb.manual_seed(0)
>>> F.dropout(pb.ones(6), 0.5)
tensor([0., 2., 2., 2., 0., 0.])
>>> x = pb.ones(3); F.dropout(x, 0.5, training=False) is x
True
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from .sampling import GENERATOR, own_generator
from .table import args
from .table.registry import defop, public

_ALPHA = 1.7580993408473766  # -selu's negative saturation value, SELU_SCALE * SELU_ALPHA


def _keep(x, p, shape):
    return (GENERATOR.rng.random(shape) < 1 - p).astype(x.dtype)


# ones where an element (or a channel) is kept; the input only types and places it
bernoulli_keep = defop("bernoulli_keep", _keep, pure=False, fresh=True,
                       draws_from=own_generator)


def _check_p(p):
    if p < 0 or p > 1:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _drop(input, p, training, inplace, shape, alpha):
    """torch's _dropout_impl: the mask drawn in ``shape`` (the input's, or one per channel)."""
    _check_p(p)
    if p == 0 or not training or 0 in input.shape:
        return input
    if p == 1:
        zero = np.zeros((), args.np_dtype(input))
        return input.mul_(zero) if inplace else input * zero
    keep = bernoulli_keep(input, p=p, shape=shape)
    if not alpha:
        noise = keep * (1 / (1 - p))
        return input.mul_(noise) if inplace else input * noise
    a = 1 / math.sqrt((_ALPHA * _ALPHA * p + 1) * (1 - p))
    b = (keep - 1) * (_ALPHA * a) + _ALPHA * a * p
    noise = keep * a
    return input.mul_(noise).add_(b) if inplace else input * noise + b


def _feature_shape(input):
    return tuple(input.shape[:2]) + (1,) * (input.ndim - 2)


@public("dropout", function=True, functional=True)
def dropout(input, p=0.5, training=True, inplace=False):
    return _drop(input, p, training, inplace, tuple(input.shape), False)


@public("alpha_dropout", function=True, functional=True)
def alpha_dropout(input, p=0.5, training=False, inplace=False):
    return _drop(input, p, training, inplace, tuple(input.shape), True)


@public("feature_alpha_dropout", function=True, functional=True)
def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    return _drop(input, p, training, inplace, _feature_shape(input), True)


def _unbatched_channels(input, p, training, inplace):
    """A (C, *) input: one draw per channel (torch adds and removes a batch dim)."""
    shape = (input.shape[0],) + (1,) * (input.ndim - 1)
    return _drop(input, p, training, inplace, shape, False)


@public("dropout1d", functional=True)
def dropout1d(input, p=0.5, training=True, inplace=False):
    _check_p(p)
    if input.ndim not in (2, 3):
        raise RuntimeError(
            f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D input. Note "
            "that dropout1d exists to provide channel-wise dropout on inputs with 1 spatial "
            "dimension, a channel dimension, and an optional batch dimension (i.e. 2D or 3D "
            "inputs).")
    if input.ndim == 2:
        return _unbatched_channels(input, p, training, inplace)
    return _drop(input, p, training, inplace, _feature_shape(input), False)


def _warn_rank(input, spatial):
    """torch's deprecation warning for dropout{spatial}d of another rank than it expects."""
    if input.ndim not in (spatial + 1, spatial + 2):
        warnings.warn(
            f"dropout{spatial}d: Received a {input.ndim}-D input to dropout{spatial}d, which "
            "is deprecated and will result in an error in a future release. To retain the "
            f"behavior and silence this warning, please use dropout instead. Note that "
            f"dropout{spatial}d exists to provide channel-wise dropout on inputs with "
            f"{spatial} spatial dimensions, a channel dimension, and an optional batch "
            f"dimension (i.e. {spatial + 1}D or {spatial + 2}D inputs).", stacklevel=4)


@public("dropout2d", functional=True)
def dropout2d(input, p=0.5, training=True, inplace=False):
    _check_p(p)
    _warn_rank(input, 2)
    if input.ndim == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D "
            "dropout behavior is desired - input is interpreted as shape (N, C, L), where C "
            "is the channel dim. This behavior will change in a future release to interpret "
            "the input as one without a batch dimension, i.e. shape (C, H, W). To maintain "
            "the 1D channel-wise dropout behavior, please switch to using dropout1d instead.",
            stacklevel=3)
    return _drop(input, p, training, inplace, _feature_shape(input), False)


@public("dropout3d", functional=True)
def dropout3d(input, p=0.5, training=True, inplace=False):
    _check_p(p)
    _warn_rank(input, 3)
    if input.ndim == 4:
        return _unbatched_channels(input, p, training, inplace)
    return _drop(input, p, training, inplace, _feature_shape(input), False)
