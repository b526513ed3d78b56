"""Small data sets that ship inside pullback, so samples and tests train on real data
without downloading anything.

``load_digits()`` is scikit-learn's copy of the UCI handwritten digits (1,797 images of
8x8 pixels, ten classes; ``data/README.md`` gives the source and licence), as tensors a
torch user can feed a model directly: images float32 ``(1797, 8, 8)`` scaled to [0, 1]
(the raw pixels are counts 0..16; ``normalize=False`` keeps them, still float32), labels
int64 ``(1797,)``. Add a channel for a convolution with ``images.unsqueeze(1)``, flatten
for an MLP with ``images.flatten(1)``.

>>> import pullback as pb
>>> images, labels = pb.datasets.load_digits()
>>> images.shape, images.dtype, labels.shape, labels.dtype
((1797, 8, 8), pullback.float32, (1797,), pullback.int64)
>>> float(images.min()), float(images.max()), labels[:10].tolist()
(0.0, 1.0, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9])

``train_test_split`` splits tensors the same way every time for the same ``seed``:

>>> x_train, x_test, y_train, y_test = pb.datasets.train_test_split(images, labels)
>>> x_train.shape, x_test.shape, y_train.shape, y_test.shape
((1437, 8, 8), (360, 8, 8), (1437,), (360,))
"""

from __future__ import annotations

import functools
import gzip
import math
from importlib import resources

import numpy as np

from ..creation import tensor
from ..tensor import Tensor

DIGITS_FILE = "digits.csv.gz"


@functools.lru_cache(maxsize=1)
def _digits_arrays() -> tuple:
    """The pixels (uint8, 1797 x 64) and labels of the shipped csv, read once."""
    data = resources.files(__name__).joinpath("data", DIGITS_FILE).read_bytes()
    table = np.loadtxt(gzip.decompress(data).decode("ascii").splitlines(), delimiter=",",
                       dtype=np.uint8)
    table.flags.writeable = False
    return table[:, :-1], table[:, -1]


def load_digits(normalize: bool = True) -> tuple[Tensor, Tensor]:
    """The 1,797 digits as ``(images, labels)``: float32 ``(N, 8, 8)`` in [0, 1] (pixel
    counts 0..16 with ``normalize=False``) and int64 ``(N,)`` in 0..9. Each call returns
    new tensors (writing into them changes no later call's)."""
    pixels, labels = _digits_arrays()
    images = pixels.reshape(-1, 8, 8).astype(np.float32)
    if normalize:
        images /= 16.0
    return tensor(images), tensor(labels.astype(np.int64))


def train_test_split(*tensors: Tensor, test_size: float | int = 0.2,
                     seed: int = 0) -> list[Tensor]:
    """Rows of ``tensors`` (same first dimension) shuffled by ``numpy.random.
    default_rng(seed)`` and split into a training and a test part: ``test_size`` a
    fraction (rounded up, as scikit-learn does) or a count. Returns ``[a_train, a_test,
    b_train, b_test, ...]`` as scikit-learn's function of the same name does."""
    if not tensors:
        raise ValueError("train_test_split: at least one tensor required as input")
    n = tensors[0].shape[0]
    if any(t.shape[0] != n for t in tensors):
        raise ValueError("train_test_split: tensors have different first dimensions: "
                         f"{[t.shape[0] for t in tensors]}")
    n_test = math.ceil(test_size * n) if isinstance(test_size, float) else test_size
    if not 0 < n_test < n:
        raise ValueError(f"train_test_split: test_size={test_size} leaves no test or no "
                         f"training rows out of {n}")
    order = np.random.default_rng(seed).permutation(n)
    train, test = tensor(order[n_test:]), tensor(order[:n_test])
    return [part for t in tensors for part in (t[train], t[test])]


__all__ = ["load_digits", "train_test_split"]
