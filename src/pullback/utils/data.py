"""torch.utils.data's small core: ``Dataset``, ``TensorDataset``, ``Subset``,
``random_split`` and a ``DataLoader`` that batches, shuffles (seeded) and drops the last
short batch on request. No worker processes and no samplers: batches are built in the
calling thread, which is what numpy-speed training wants anyway.

>>> import numpy as np
>>> import pullback as pb
>>> from pullback.utils.data import DataLoader, TensorDataset
>>> ds = TensorDataset(pb.arange(10.), pb.arange(10))
>>> len(ds), ds[3]
(10, (tensor(3.), tensor(3)))
>>> loader = DataLoader(ds, batch_size=4, shuffle=True, generator=np.random.default_rng(0))
>>> [tuple(x.shape) for x, y in loader], len(loader)
([(4,), (4,), (2,)], 3)
>>> [y.tolist() for x, y in DataLoader(ds, batch_size=4, drop_last=True)]
[[0, 1, 2, 3], [4, 5, 6, 7]]

``shuffle=True`` draws a new order at every pass over the loader, from ``generator`` (a
``numpy.random.Generator``, as in ``pb.nn.init``) or, without one, from pullback's
generator, so ``pb.manual_seed`` makes a run repeatable. A ``TensorDataset`` (or a
``Subset`` of one) is batched by one index per tensor (a list of tensors, as torch's);
any other dataset item by item, tensors stacked and numbers made into tensors
(``default_collate``).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from ..creation import tensor
from ..ops.joining import stack
from ..ops.sampling import GENERATOR
from ..tensor import Tensor


class Dataset:
    """A map-style dataset: ``__getitem__(i)`` and ``__len__``."""

    def __getitem__(self, index: int) -> Any:
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __len__(self) -> int:
        raise NotImplementedError("Subclasses of Dataset should implement __len__.")


class TensorDataset(Dataset):
    """Tensors sharing their first dimension; item ``i`` is ``(t[i] for each t)``."""

    def __init__(self, *tensors: Tensor) -> None:
        if any(t.shape[0] != tensors[0].shape[0] for t in tensors):
            raise AssertionError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index: Any) -> tuple:
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].shape[0]


class Subset(Dataset):
    """The items of ``dataset`` at ``indices``, in that order."""

    def __init__(self, dataset: Dataset, indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, list):
            return self.dataset[[self.indices[i] for i in index]]
        return self.dataset[self.indices[index]]

    def __len__(self) -> int:
        return len(self.indices)


class ConcatDataset(Dataset):
    """The datasets one after another: index ``i`` past the first's length reads the next."""

    def __init__(self, datasets: Sequence[Dataset]) -> None:
        self.datasets = list(datasets)
        if not self.datasets:
            raise AssertionError("datasets should not be an empty iterable")
        self.cumulative_sizes = list(np.cumsum([len(d) for d in self.datasets]))

    def __len__(self) -> int:
        return int(self.cumulative_sizes[-1])

    def __getitem__(self, index: int) -> Any:
        if index < 0:
            if -index > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            index += len(self)
        which = int(np.searchsorted(self.cumulative_sizes, index, side="right"))
        start = int(self.cumulative_sizes[which - 1]) if which else 0
        return self.datasets[which][index - start]


def _rng(generator: np.random.Generator | None) -> np.random.Generator:
    return GENERATOR.rng if generator is None else generator


def random_split(dataset: Dataset, lengths: Sequence[int | float],
                 generator: np.random.Generator | None = None) -> list:
    """``dataset`` split at random into ``Subset``s of the given lengths (or fractions of
    its length summing to 1, the remainder handed out one by one from the first).

    >>> import numpy as np
    >>> import pullback as pb
    >>> from pullback.utils.data import TensorDataset, random_split
    >>> train, test = random_split(TensorDataset(pb.arange(10)), [0.8, 0.2],
    ...                            generator=np.random.default_rng(0))
    >>> len(train), len(test), sorted(train.indices + test.indices) == list(range(10))
    (8, 2, True)
    """
    n = len(dataset)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        for i, frac in enumerate(lengths):
            if frac < 0 or frac > 1:
                raise ValueError(f"Fraction at index {i} is not between 0 and 1")
        sizes = [int(math.floor(n * frac)) for frac in lengths]
        for i in range(n - sum(sizes)):
            sizes[i % len(sizes)] += 1
        lengths = sizes
    if sum(lengths) != n:
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    order = _rng(generator).permutation(n).tolist()
    ends = np.cumsum(lengths).tolist()
    return [Subset(dataset, order[end - size:end]) for size, end in zip(lengths, ends)]


def default_collate(items: list) -> Any:
    """A list of items into one batch: tensors stacked, numbers made a tensor, tuples,
    lists and dicts collated field by field."""
    first = items[0]
    if isinstance(first, Tensor):
        return stack(items)
    if isinstance(first, np.ndarray):
        return tensor(np.stack(items))
    if isinstance(first, (numbers.Number, np.generic)):
        return tensor(items)
    if isinstance(first, dict):
        return {key: default_collate([item[key] for item in items]) for key in first}
    if isinstance(first, (tuple, list)):  # a list, as torch's (a namedtuple stays one)
        fields = [default_collate(list(field)) for field in zip(*items)]
        return type(first)(*fields) if hasattr(first, "_fields") else fields
    raise TypeError(f"default_collate: batch must contain tensors, numpy arrays, numbers, "
                    f"dicts or lists; found {type(first)}")


def _tensor_dataset(dataset: Dataset) -> tuple | None:
    """``(tensors, indices)`` when ``dataset`` is a TensorDataset or a Subset of one."""
    indices = None
    while isinstance(dataset, Subset):
        indices = (np.asarray(dataset.indices) if indices is None
                   else np.asarray(dataset.indices)[indices])
        dataset = dataset.dataset
    if type(dataset) is TensorDataset:
        return dataset.tensors, indices
    return None


class DataLoader:
    """Batches of ``dataset``: ``batch_size`` items a batch, in a new random order at
    every pass with ``shuffle=True``, the last short batch dropped with ``drop_last``."""

    def __init__(self, dataset: Dataset, batch_size: int | None = 1, shuffle: bool = False,
                 drop_last: bool = False, generator: np.random.Generator | None = None,
                 collate_fn: Any = None) -> None:
        if batch_size is not None and (isinstance(batch_size, bool) or
                                       not isinstance(batch_size, int) or batch_size <= 0):
            raise ValueError("batch_size should be a positive integer value, but got "
                             f"batch_size={batch_size}")
        self.dataset = dataset
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.drop_last = drop_last
        self.generator = generator
        self.collate_fn = default_collate if collate_fn is None else collate_fn

    def __len__(self) -> int:
        n = len(self.dataset)
        if self.batch_size is None:
            return n
        return n // self.batch_size if self.drop_last else math.ceil(n / self.batch_size)

    def _batches(self) -> Iterator[np.ndarray]:
        n = len(self.dataset)
        order = _rng(self.generator).permutation(n) if self.shuffle else np.arange(n)
        size = 1 if self.batch_size is None else self.batch_size
        for start in range(0, len(self) * size, size):
            yield order[start:start + size]

    def __iter__(self) -> Iterator[Any]:
        fast = _tensor_dataset(self.dataset) if self.collate_fn is default_collate else None
        for batch in self._batches():
            if self.batch_size is None:
                yield self.dataset[int(batch[0])]
            elif fast is not None:
                tensors, indices = fast
                rows = tensor(batch if indices is None else indices[batch])
                yield [t[rows] for t in tensors]
            else:
                yield self.collate_fn([self.dataset[int(i)] for i in batch])


__all__ = ["ConcatDataset", "DataLoader", "Dataset", "Subset", "TensorDataset", "default_collate",
           "random_split"]
