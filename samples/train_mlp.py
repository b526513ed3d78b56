"""Training a classifier: pb.nn, pb.optim.Adam, eager and compiled, save and load.

Shows: a two-layer MLP (nn.Sequential of nn.Linear and nn.ReLU) trained with Adam
and cross-entropy on three interleaved spirals, a small synthetic task made here
(nothing is downloaded); the same training run eagerly and with the loss compiled
by pb.compile (the model's parameters are read afresh on every call, so the
optimizer's steps never make it trace again); the loss of each epoch, the test
accuracy and the time per epoch of each mode; the model saved with pb.save and
loaded into a new one; and the error a wrongly shaped input gets.

    python samples/train_mlp.py              # 30 epochs
    python samples/train_mlp.py --epochs 5   # (or PULLBACK_SAMPLE_EPOCHS=5)
"""

import argparse
import os
import statistics
import tempfile
import time

import numpy as np

import pullback as pb
import pullback.nn.functional as F
from pullback import nn

CLASSES, PER_CLASS, BATCH = 3, 300, 64


def spirals(rng):
    """Three spiral arms in the plane, one class each, with a little noise."""
    points, labels = [], []
    for c in range(CLASSES):
        r = np.linspace(0.05, 1.0, PER_CLASS)
        angle = np.linspace(c * 4.2, (c + 1) * 4.2, PER_CLASS) + rng.normal(0, 0.2, PER_CLASS)
        points.append(np.stack([r * np.sin(angle), r * np.cos(angle)], axis=1))
        labels.append(np.full(PER_CLASS, c))
    x, y = np.concatenate(points).astype(np.float32), np.concatenate(labels)
    order = rng.permutation(len(x))
    return x[order], y[order]


def make_model():
    return nn.Sequential(nn.Linear(2, 64), nn.ReLU(), nn.Linear(64, CLASSES))


def accuracy(model, x, y):
    with pb.no_grad():
        predicted = model(pb.tensor(x)).argmax(dim=1).numpy()
    return 100.0 * float((predicted == y).mean())


def train_epoch(loss_fn, opt, x, y, rng):
    """One pass over the data in shuffled batches; the mean loss and the time taken."""
    start, losses = time.perf_counter(), []
    order = rng.permutation(len(x))
    for i in range(0, len(x), BATCH):
        batch = order[i:i + BATCH]
        opt.zero_grad()
        loss = loss_fn(pb.tensor(x[batch]), pb.tensor(y[batch]))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return float(np.mean(losses)), time.perf_counter() - start


def main(epochs):
    rng = np.random.default_rng(0)
    x, y = spirals(rng)
    split = int(0.8 * len(x))
    x_train, y_train, x_test, y_test = x[:split], y[:split], x[split:], y[split:]
    print(f"data: {len(x_train)} training and {len(x_test)} test points, {CLASSES} classes")

    pb.manual_seed(0)
    eager_model = make_model()
    compiled_model = make_model()
    compiled_model.load_state_dict(eager_model.state_dict())  # the same starting weights
    print(eager_model)

    def eager_loss(xb, yb):
        return F.cross_entropy(eager_model(xb), yb)

    @pb.compile
    def compiled_loss(xb, yb):  # forward and loss traced once, then generated code
        return F.cross_entropy(compiled_model(xb), yb)

    runs = {"eager": (eager_loss, pb.optim.Adam(eager_model.parameters(), lr=0.01)),
            "compiled": (compiled_loss, pb.optim.Adam(compiled_model.parameters(), lr=0.01))}
    times = {mode: [] for mode in runs}
    for epoch in range(1, epochs + 1):
        line = f"epoch {epoch:3d}"
        for mode, (loss_fn, opt) in runs.items():
            loss, seconds = train_epoch(loss_fn, opt, x_train, y_train,
                                        np.random.default_rng(epoch))
            times[mode].append(seconds)
            line += f"   {mode} loss {loss:.4f}"
        print(line)

    for mode, model in (("eager", eager_model), ("compiled", compiled_model)):
        print(f"final test accuracy ({mode}): {accuracy(model, x_test, y_test):.1f} %")
    later = slice(1, None) if epochs > 1 else slice(None)  # (epoch 1 includes the trace)
    per_epoch = {mode: 1000 * statistics.median(t[later]) for mode, t in times.items()}
    print(f"time per epoch (eager): {per_epoch['eager']:.1f} ms")
    print(f"time per epoch (compiled): {per_epoch['compiled']:.1f} ms")
    print(f"first epoch, compiled (includes tracing): {1000 * times['compiled'][0]:.1f} ms")
    print(f"compiled loss cache: {compiled_loss.cache.info}")

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "spirals.pt")
        pb.save(compiled_model.state_dict(), path)
        restored = make_model()
        print("load_state_dict:", restored.load_state_dict(pb.load(path)))
        print(f"reloaded model test accuracy: {accuracy(restored, x_test, y_test):.1f} %")

    try:
        restored(pb.ones(4, 3))  # three features where the model takes two
    except RuntimeError as error:
        print("expected error: RuntimeError:", error)
    print("next: docs/nn.md (modules, optimizers, saving, compiling a model, pictures)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int,
                        default=int(os.environ.get("PULLBACK_SAMPLE_EPOCHS", 30)))
    main(parser.parse_args().epochs)
