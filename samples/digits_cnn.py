"""Handwritten digits with a small convolutional network, eager and compiled.

Shows: the same digits, loader and training loop as digits_mlp.py (_training.py), with
a model of nn.Conv2d, nn.MaxPool2d and nn.Linear layers on 1x8x8 images; torch's
layers and default initialisation, the same run twice from the same weights, eagerly
and with the loss compiled by pb.compile; the test accuracy of each mode (about 98-99 %
after the default 15 epochs), the time per epoch and a loss-curve PNG (when
matplotlib is installed).

    python samples/digits_cnn.py              # 15 epochs
    python samples/digits_cnn.py --epochs 4
"""

from _training import digits_sample

import pullback as pb
from pullback import nn


def make_model():
    return nn.Sequential(
        nn.Conv2d(1, 16, kernel_size=3, padding=1), nn.ReLU(),   # 16 x 8 x 8
        nn.MaxPool2d(2),                                        # 16 x 4 x 4
        nn.Conv2d(16, 32, kernel_size=3, padding=1), nn.ReLU(),  # 32 x 4 x 4
        nn.MaxPool2d(2),                                        # 32 x 2 x 2
        nn.Flatten(), nn.Linear(128, 10))


def main():
    result = digits_sample("digits_cnn", make_model, image_shape=(1, 8, 8), epochs=15,
                           lr=0.01)
    model = result["models"]["compiled"]
    try:
        model(pb.zeros(4, 8, 8, 1))  # channels last: Conv2d wants (N, C, H, W)
    except RuntimeError as error:
        print("expected error: RuntimeError:", error)
    print("next: samples/char_lstm.py (a recurrent model), docs/nn.md (the layers)")


if __name__ == "__main__":
    main()
