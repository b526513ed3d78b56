"""pb.datasets (the shipped digits) and pb.utils.data (TensorDataset, DataLoader,
random_split) against torch.utils.data's behaviour."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

import pullback as pb
from pullback.utils.data import DataLoader, Dataset, Subset, TensorDataset, random_split

ROOT = Path(__file__).resolve().parent.parent


def test_digits_are_the_uci_set_as_tensors():
    images, labels = pb.datasets.load_digits()
    assert images.shape == (1797, 8, 8) and images.dtype == pb.float32
    assert labels.shape == (1797,) and labels.dtype == pb.int64
    raw, same = pb.datasets.load_digits(normalize=False)
    np.testing.assert_array_equal(raw.numpy() / 16, images.numpy())
    np.testing.assert_array_equal(same.numpy(), labels.numpy())
    assert raw.numpy().min() == 0 and raw.numpy().max() == 16
    assert np.all(raw.numpy() == np.round(raw.numpy()))
    counts = np.bincount(labels.numpy())
    assert counts.tolist() == [178, 182, 177, 183, 181, 182, 181, 179, 174, 180]
    # the first image is a zero: a ring of ink around an empty middle
    assert labels[0].item() == 0 and raw[0, 3:5, 3:5].sum().item() == 0


def test_digits_calls_do_not_share_memory():
    images, _ = pb.datasets.load_digits()
    images.mul_(0)
    assert pb.datasets.load_digits()[0].sum().item() > 0


def test_shipped_file_is_declared_package_data():
    """A non-editable install must carry the csv: pyproject lists it as package data."""
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert '"pullback.datasets" = ["data/*.csv.gz", "data/README.md"]' in pyproject
    assert '"pullback.datasets"' in pyproject.split("packages = [")[1].split("]")[0]
    path = ROOT / "src" / "pullback" / "datasets" / "data" / "digits.csv.gz"
    first = gzip.decompress(path.read_bytes()).decode("ascii").splitlines()[0]
    assert len(first.split(",")) == 65


def test_train_test_split_is_deterministic_and_disjoint():
    x, y = pb.arange(100.).reshape(50, 2), pb.arange(50)
    a = pb.datasets.train_test_split(x, y, test_size=0.2, seed=7)
    b = pb.datasets.train_test_split(x, y, test_size=0.2, seed=7)
    c = pb.datasets.train_test_split(x, y, test_size=10, seed=8)
    assert [t.shape for t in a] == [(40, 2), (10, 2), (40,), (10,)]
    for s, t in zip(a, b):
        np.testing.assert_array_equal(s.numpy(), t.numpy())
    assert sorted(a[2].tolist() + a[3].tolist()) == list(range(50))
    np.testing.assert_array_equal(a[0].numpy()[:, 1], 2 * a[2].numpy() + 1)  # rows together
    assert c[3].tolist() != a[3].tolist()
    with pytest.raises(ValueError, match="different first dimensions"):
        pb.datasets.train_test_split(x, pb.arange(3))
    with pytest.raises(ValueError, match="leaves no test or no training rows"):
        pb.datasets.train_test_split(x, test_size=0.0)


def _batches(lib, loader_kwargs, n=10):
    ds = lib.utils.data.TensorDataset(lib.arange(float(n)), lib.arange(n) * 2)
    return [[t.tolist() for t in batch]
            for batch in lib.utils.data.DataLoader(ds, **loader_kwargs)]


@pytest.mark.parametrize("kwargs", [dict(batch_size=3), dict(batch_size=3, drop_last=True),
                                    dict(batch_size=5), dict(batch_size=20), dict(),
                                    dict(batch_size=None)])
def test_unshuffled_batches_are_torchs(kwargs, torch):
    assert _batches(pb, kwargs) == _batches(torch, kwargs)
    ds = TensorDataset(pb.zeros(10))
    assert len(DataLoader(ds, **kwargs)) == len(torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(torch.zeros(10)), **kwargs))


def test_shuffle_is_seeded_and_new_each_epoch():
    ds = TensorDataset(pb.arange(20))
    loader = DataLoader(ds, batch_size=6, shuffle=True, generator=np.random.default_rng(4))
    first = [b[0].tolist() for b in loader]
    second = [b[0].tolist() for b in loader]
    assert [len(b) for b in first] == [6, 6, 6, 2]
    assert sorted(sum(first, [])) == list(range(20)) and first != second
    again = DataLoader(ds, batch_size=6, shuffle=True, generator=np.random.default_rng(4))
    assert [b[0].tolist() for b in again] == first
    pb.manual_seed(1)
    a = [b[0].tolist() for b in DataLoader(ds, batch_size=6, shuffle=True)]
    pb.manual_seed(1)
    assert [b[0].tolist() for b in DataLoader(ds, batch_size=6, shuffle=True)] == a


def test_generic_dataset_is_collated_like_torch(torch):
    class Squares(Dataset):
        def __len__(self):
            return 5

        def __getitem__(self, i):
            return {"x": pb.tensor([float(i), 1.0]), "y": i * i}

    batch = next(iter(DataLoader(Squares(), batch_size=4)))
    assert batch["x"].shape == (4, 2) and batch["y"].tolist() == [0, 1, 4, 9]
    assert batch["y"].dtype == pb.int64
    with pytest.raises(NotImplementedError):
        len(Dataset())


def test_random_split_and_subsets():
    ds = TensorDataset(pb.arange(10) * 10)
    train, test = random_split(ds, [7, 3], generator=np.random.default_rng(0))
    assert isinstance(train, Subset) and (len(train), len(test)) == (7, 3)
    assert sorted(train.indices + test.indices) == list(range(10))
    assert train[0][0].item() == 10 * train.indices[0]
    got = sorted(v for b in DataLoader(test, batch_size=2) for v in b[0].tolist())
    assert got == sorted(10 * i for i in test.indices)
    parts = random_split(ds, [0.5, 0.3, 0.2], generator=np.random.default_rng(0))
    assert [len(p) for p in parts] == [5, 3, 2]
    with pytest.raises(ValueError, match="Sum of input lengths does not equal"):
        random_split(ds, [3, 3])


def test_bad_loader_arguments_get_torchs_errors(torch):
    for lib in (pb, torch):
        with pytest.raises(ValueError, match="batch_size should be a positive integer value, "
                                             "but got batch_size=0"):
            lib.utils.data.DataLoader(lib.utils.data.TensorDataset(lib.zeros(3)), batch_size=0)
        with pytest.raises(AssertionError, match="Size mismatch between tensors"):
            lib.utils.data.TensorDataset(lib.zeros(3), lib.zeros(4))
