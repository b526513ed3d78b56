"""Shared by the digits samples (not a sample itself): the digits as DataLoaders, and a
loop that trains the same model eagerly and compiled side by side, with a progress
line per epoch, the test accuracy, the time per epoch of each mode and a loss curve.

A new digits sample is a model and one call:

    from _training import digits_sample
    digits_sample("digits_cnn", lambda: nn.Sequential(nn.Conv2d(1, 8, 3), ...),
                  image_shape=(1, 8, 8))
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

import pullback as pb
import pullback.nn.functional as F
from pullback.utils.data import DataLoader, TensorDataset

try:
    from tqdm import tqdm
except ImportError:  # the samples extra (pip install "pullback[samples]") brings it
    tqdm = None

try:
    import matplotlib

    matplotlib.use("Agg")  # files only, no window
    from matplotlib import pyplot as plt
except ImportError:
    plt = None


def digits_data(image_shape: tuple = (64,), batch_size: int = 64, seed: int = 0) -> tuple:
    """The shipped digits split 80/20 (the same split for the same seed): a shuffling
    DataLoader of the training part and the test images and labels, each image
    reshaped to ``image_shape`` ((64,) for an MLP, (1, 8, 8) for a convolution)."""
    images, labels = pb.datasets.load_digits()  # float32 in [0, 1], int64 labels
    x_train, x_test, y_train, y_test = pb.datasets.train_test_split(images, labels, seed=seed)
    train = DataLoader(TensorDataset(x_train.reshape(-1, *image_shape), y_train),
                       batch_size=batch_size, shuffle=True,
                       generator=np.random.default_rng(seed))
    return train, x_test.reshape(-1, *image_shape), y_test


def accuracy(model: pb.nn.Module, images: pb.Tensor, labels: pb.Tensor) -> float:
    """Percent of ``images`` the model labels right (in eval mode, without a graph)."""
    model.eval()
    with pb.no_grad():
        predicted = model(images).argmax(dim=1)
    model.train()
    return 100.0 * (predicted == labels).float().mean().item()


def bar(done: int, total: int, width: int = 20) -> str:
    """A plain text progress bar: ``[########------------]``."""
    filled = round(width * done / total)
    return "[" + "#" * filled + "-" * (width - filled) + "]"


def train_epoch(loss_fn, opt: pb.optim.Optimizer, loader: DataLoader) -> tuple:
    """One pass over ``loader``: (mean loss, seconds)."""
    start, losses = time.perf_counter(), []
    for images, labels in loader:
        opt.zero_grad()
        loss = loss_fn(images, labels)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return float(np.mean(losses)), time.perf_counter() - start


def fit(make_model, *, epochs: int, image_shape: tuple = (64,), lr: float = 0.003,
        seed: int = 0) -> dict:
    """Train ``make_model()`` on the digits twice from the same weights, eagerly and with
    the loss compiled by ``pb.compile`` (forward, loss and backward as generated code;
    the optimizer's steps in between keep its cache); print a line per epoch and the
    results. Returns the models, the losses and the times of each mode."""
    train, x_test, y_test = digits_data(image_shape, seed=seed)
    print(f"data: {len(train.dataset)} training and {len(y_test)} test images, "
          f"batches of {train.batch_size}")
    pb.manual_seed(seed)
    models = {"eager": make_model(), "compiled": make_model()}
    models["compiled"].load_state_dict(models["eager"].state_dict())  # same start
    print(models["eager"])

    def eager_loss(images, labels):
        return F.cross_entropy(models["eager"](images), labels)

    @pb.compile
    def compiled_loss(images, labels):  # traced once, then generated numpy code
        return F.cross_entropy(models["compiled"](images), labels)

    runs = {"eager": eager_loss, "compiled": compiled_loss}
    opts = {mode: pb.optim.Adam(m.parameters(), lr=lr) for mode, m in models.items()}
    losses = {mode: [] for mode in runs}
    times = {mode: [] for mode in runs}
    epochs_iter = range(1, epochs + 1)
    progress = tqdm(epochs_iter, desc="training", file=sys.stderr) if tqdm else None
    for epoch in progress if progress is not None else epochs_iter:
        line = f"epoch {epoch:3d}/{epochs}"
        if progress is None:
            line += " " + bar(epoch, epochs)
        for mode, loss_fn in runs.items():
            train.generator = np.random.default_rng(epoch)  # both modes see the same order
            loss, seconds = train_epoch(loss_fn, opts[mode], train)
            losses[mode].append(loss)
            times[mode].append(seconds)
            line += f"   {mode} loss {loss:.4f} ({1000 * seconds:.0f} ms)"
        (progress.write if progress is not None else print)(line)

    for mode, model in models.items():
        print(f"final test accuracy ({mode}): {accuracy(model, x_test, y_test):.1f} %")
    later = slice(1, None) if epochs > 1 else slice(None)  # (epoch 1 includes the trace)
    for mode, t in times.items():
        print(f"time per epoch ({mode}): {1000 * statistics.median(t[later]):.1f} ms")
    print(f"first epoch, compiled (includes tracing): {1000 * times['compiled'][0]:.1f} ms")
    print(f"compiled loss cache: {compiled_loss.cache.info}")
    return {"models": models, "losses": losses, "times": times}


def plot_losses(losses: dict, path: str, title: str) -> None:
    """The loss per epoch of each mode as a PNG, or why there is none."""
    if plt is None:
        print("loss curve: not drawn (matplotlib is not installed; "
              "pip install matplotlib, or pip install 'pullback[samples]')")
        return
    fig, ax = plt.subplots(figsize=(6, 4))
    styles = {"eager": dict(marker="o"), "compiled": dict(marker="x", linestyle="--")}
    for mode, values in losses.items():  # (the same numbers: the two lines coincide)
        ax.plot(range(1, len(values) + 1), values, label=mode, **styles.get(mode, {}))
    ax.set(xlabel="epoch", ylabel="mean training loss", title=title, yscale="log")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    print(f"loss curve: saved to {path}")


def digits_sample(name: str, make_model, *, image_shape: tuple = (64,), epochs: int = 20,
                  lr: float = 0.003, argv: list | None = None) -> dict:
    """A whole digits sample: ``--epochs N`` and ``--plot PATH`` from the command line,
    the training run, the loss curve. Returns what ``fit`` returns."""
    parser = argparse.ArgumentParser(description=f"{name}: train on the digits")
    parser.add_argument("--epochs", type=int, default=int(os.environ.get(
        "PULLBACK_SAMPLE_EPOCHS", epochs)), help=f"passes over the data ({epochs})")
    parser.add_argument("--plot", default=f"{name}_loss.png",
                        help="where to save the loss curve (a PNG)")
    args = parser.parse_args(argv)
    result = fit(make_model, epochs=args.epochs, image_shape=image_shape, lr=lr)
    plot_losses(result["losses"], args.plot, f"{name}: training loss")
    return result
