"""An ensemble of models trained as one batched model: torch.func's recipe on pullback.

Shows: ``pullback.func.stack_module_state`` stacking the parameters of five MLPs (same
architecture, different initial weights) along a new first dimension;
``pullback.func.functional_call`` running one module with any parameters;
``func.vmap(func.grad(loss), in_dims=(0, 0, None, None))`` giving every model's
gradient on the same minibatch in one generated program; plain SGD on the stacked
parameters; each model's and the averaged ensemble's test accuracy on the digits; and
a check that model 3's gradient equals the one its own ``nn.Module`` gets from
``.backward()``.

    python samples/ensemble.py              # 15 epochs
    python samples/ensemble.py --epochs 3
"""

import argparse

import numpy as np

import pullback as pb
from pullback import func, nn

MODELS, LR, BATCH = 5, 0.5, 64


def make_model():
    return nn.Sequential(nn.Linear(64, 32), nn.Tanh(), nn.Linear(32, 10))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=15)
    epochs = parser.parse_args().epochs
    pb.manual_seed(0)
    models = [make_model() for _ in range(MODELS)]
    params, buffers = func.stack_module_state(models)
    params = {k: v.detach() for k, v in params.items()}
    print("stacked:", {k: tuple(v.shape) for k, v in params.items()})
    base = models[0]

    def loss(p, b, x, y):
        return nn.functional.cross_entropy(func.functional_call(base, (p, b), (x,)), y)

    grads_of_all = func.vmap(func.grad(loss), in_dims=(0, 0, None, None))
    logits_of_all = func.vmap(lambda p, b, x: func.functional_call(base, (p, b), (x,)),
                              in_dims=(0, 0, None))

    images, labels = pb.datasets.load_digits()
    x = images.reshape(len(images), 64)
    rng = np.random.default_rng(0)
    order = rng.permutation(len(x))
    train, test = order[:1400], order[1400:]
    xb, yb = x[pb.tensor(train[:BATCH])], labels[pb.tensor(train[:BATCH])]
    grads = grads_of_all(params, buffers, xb, yb)
    models[3].zero_grad()
    loss_3 = nn.functional.cross_entropy(models[3](xb), yb)
    loss_3.backward()
    same = np.allclose(grads["0.weight"][3].numpy(), models[3][0].weight.grad.numpy(),
                       atol=1e-6)
    print(f"model 3's gradient from the batched call equals its own backward(): {same}")

    for epoch in range(1, epochs + 1):
        perm = rng.permutation(train)
        for s in range(0, len(perm) - BATCH + 1, BATCH):
            batch = pb.tensor(perm[s:s + BATCH])
            grads = grads_of_all(params, buffers, x[batch], labels[batch])
            params = {k: params[k] - LR * grads[k] for k in params}
        if epoch == epochs or epoch % 5 == 0:
            logits = logits_of_all(params, buffers, x[pb.tensor(test)])
            each = (logits.argmax(-1) == labels[pb.tensor(test)]).float().mean(1)
            votes = nn.functional.softmax(logits, -1).mean(0).argmax(-1)
            together = (votes == labels[pb.tensor(test)]).float().mean()
            print(f"epoch {epoch:2d}   test accuracy of each model "
                  f"{' '.join(f'{a:.3f}' for a in each.numpy())}   of the ensemble "
                  f"{float(together):.3f}")
    print("traced once for every step:", grads_of_all.cache.info)
    print("next: samples/dp_sgd.py (per-sample gradients), docs/transforms.md section 11")


if __name__ == "__main__":
    main()
