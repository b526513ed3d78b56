"""Differentially private SGD on the digits: per-sample gradients with pb.vmap, clipped.

Shows: a loss written for one example in plain numpy; ``pb.vmap(pb.grad(loss),
in_axes=(None, 0, 0))`` computing every example's gradient of a minibatch in one
generated numpy program (no Python loop over examples), checked against ``pb.grad`` on
single examples; DP-SGD's step (Abadi et al., 2016): each example's gradient clipped to
norm C, summed, Gaussian noise of scale sigma * C added, averaged; the test accuracy of a
softmax-regression-plus-hidden-layer model after a few epochs, and how much faster the
vmapped gradients are than a loop over pb.grad.

    python samples/dp_sgd.py              # 8 epochs
    python samples/dp_sgd.py --epochs 2
"""

import argparse
import time

import numpy as np

import pullback as pb

CLIP, NOISE, LR, BATCH = 1.0, 0.6, 0.5, 128


def loss(params, x, y):
    """Cross-entropy of one 64-pixel image with label y (an int)."""
    h = np.tanh(x @ params["w1"] + params["b1"])
    z = h @ params["w2"] + params["b2"]
    top = z.max()
    return np.log(np.exp(z - top).sum()) + top - z[y]


def predict(params, xs):
    return (np.tanh(xs @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]).argmax(1)


per_example = pb.vmap(pb.grad(loss), in_axes=(None, 0, 0))


def private_step(params, xs, ys, rng):
    """One DP-SGD step: clip every example's gradient to norm CLIP, add noise, average."""
    grads = per_example(params, xs, ys)
    norms = np.sqrt(sum((g.reshape(len(xs), -1) ** 2).sum(1) for g in grads.values()))
    scale = np.minimum(1.0, CLIP / (norms + 1e-12))
    new = {}
    for k, g in grads.items():
        clipped = (g * scale.reshape((-1,) + (1,) * (g.ndim - 1))).sum(0)
        noisy = clipped + rng.normal(0.0, NOISE * CLIP, size=clipped.shape)
        new[k] = params[k] - LR * noisy / len(xs)
    return new, norms


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=8)
    epochs = parser.parse_args().epochs
    images, labels = pb.datasets.load_digits()
    x = images.numpy().reshape(len(images), -1).astype(np.float64)
    y = labels.numpy()
    rng = np.random.default_rng(0)
    order = rng.permutation(len(x))
    train, test = order[:1400], order[1400:]
    params = {"w1": rng.standard_normal((64, 32)) * 0.1, "b1": np.zeros(32),
              "w2": rng.standard_normal((32, 10)) * 0.1, "b2": np.zeros(10)}

    xs, ys = x[train[:BATCH]], y[train[:BATCH]]
    grads = per_example(params, xs, ys)
    one = pb.grad(loss)(params, xs[5], ys[5])
    same = all(np.allclose(grads[k][5], one[k]) for k in params)
    print(f"per-sample gradients: w1 {grads['w1'].shape}, b2 {grads['b2'].shape}; "
          f"example 5 equals pb.grad on it alone: {same}")
    t0 = time.perf_counter()
    for _ in range(5):
        per_example(params, xs, ys)
    vmapped = (time.perf_counter() - t0) / 5
    single = pb.grad(loss)
    t0 = time.perf_counter()
    for i in range(BATCH):
        single(params, xs[i], ys[i])
    looped = time.perf_counter() - t0
    print(f"a batch of {BATCH}: vmap {vmapped * 1e3:.1f} ms, a loop over pb.grad "
          f"{looped * 1e3:.1f} ms ({looped / vmapped:.0f}x)")

    for epoch in range(1, epochs + 1):
        perm = rng.permutation(train)
        clipped = []
        for s in range(0, len(perm) - BATCH + 1, BATCH):
            batch = perm[s:s + BATCH]
            params, norms = private_step(params, x[batch], y[batch], rng)
            clipped.append(np.mean(norms > CLIP))
        acc = np.mean(predict(params, x[test]) == y[test])
        print(f"epoch {epoch:2d}   test accuracy {acc:.3f}   "
              f"clipped {np.mean(clipped):.0%} of the gradients")
    print(f"after {epochs} epochs of DP-SGD (clip {CLIP}, noise {NOISE}): test accuracy "
          f"{acc:.3f}")
    print("traced once for every step:", per_example.cache.info)
    print("next: samples/ensemble.py (pullback.func.stack_module_state and vmap), "
          "docs/transforms.md section 11")


if __name__ == "__main__":
    main()
