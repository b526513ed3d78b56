"""Handwritten digits with an MLP: real data, a DataLoader, eager and compiled training.

Shows: pb.datasets.load_digits (1,797 8x8 images that ship with pullback, nothing is
downloaded) split by pb.datasets.train_test_split and batched by
pb.utils.data.DataLoader with a seeded shuffle; an MLP (nn.Flatten, nn.Linear, nn.ReLU)
trained with Adam and cross-entropy twice from the same weights, eagerly and with the
loss compiled by pb.compile; a progress line per epoch (a tqdm bar when tqdm is
installed), the test accuracy of each mode (about 97-98 % after the default 20
epochs), the time per epoch of each mode and a loss-curve PNG (when matplotlib is
installed). The training loop lives in _training.py, so another model on the same data
is a few lines.

    python samples/digits_mlp.py              # 20 epochs
    python samples/digits_mlp.py --epochs 5   # (or PULLBACK_SAMPLE_EPOCHS=5)
    python samples/digits_mlp.py --plot /tmp/loss.png
"""

import numpy as np
from _training import digits_sample

import pullback as pb
from pullback import nn

try:
    from sklearn.datasets import load_digits as sklearn_digits
except ImportError:
    sklearn_digits = None


def make_model():
    return nn.Sequential(nn.Flatten(), nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))


def main():
    images, labels = pb.datasets.load_digits()
    print(f"digits: images {tuple(images.shape)} {images.dtype} in [0, 1], "
          f"labels {tuple(labels.shape)} {labels.dtype}, {int(labels.max()) + 1} classes")
    if sklearn_digits is None:
        print("scikit-learn: not installed (the digits ship with pullback; with it, this "
              "sample checks they equal scikit-learn's)")
    else:
        theirs = sklearn_digits()
        same = (np.array_equal(theirs.images / 16, images.numpy())
                and np.array_equal(theirs.target, labels.numpy()))
        print(f"scikit-learn: shipped digits equal sklearn.datasets.load_digits(): {same}")

    result = digits_sample("digits_mlp", make_model, image_shape=(8, 8), epochs=20, lr=0.003)

    model = result["models"]["compiled"]
    try:
        model[1](images[:4])  # a Linear layer given the 8x8 images without nn.Flatten
    except RuntimeError as error:
        print("expected error: RuntimeError:", error)
    print("next: samples/char_lstm.py (a recurrent model), docs/nn.md (modules, "
          "optimizers, saving, compiling)")


if __name__ == "__main__":
    main()
