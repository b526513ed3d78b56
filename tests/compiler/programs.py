"""Small programs whose IR and generated code the golden tests pin.

Line numbers in this file appear in the golden files: edit with care, then
regenerate with PULLBACK_UPDATE_GOLDEN=1.
"""

import pullback as pb
import pullback.nn.functional as F


def seed_example(x, w, b, y):
    z = pb.matmul(x, w) + b
    loss = F.binary_cross_entropy_with_logits(z, y)
    return loss


def mlp(x, w1, b1, w2, b2, target):
    hidden = pb.tanh(x @ w1 + b1)
    logits = hidden @ w2 + b2
    return F.cross_entropy(logits, target)


def loop(h, w, steps):
    for _ in range(steps):
        h = pb.tanh(h * w + h)
    return h.sum()


def cnn(x, kernel, w, target):
    hidden = F.max_pool2d(F.relu(F.conv2d(x, kernel, padding=1)), 2)
    logits = hidden.flatten(1) @ w
    return F.cross_entropy(logits, target) + logits.logsumexp(1).std()
