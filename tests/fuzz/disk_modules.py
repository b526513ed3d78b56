"""The persistent-cache fuzz's module family: random ``nn.Sequential`` models, written
as a module's ``make(variant)``, for disk_oracle.py.

Each program builds two models of one architecture whose variant 1 changes one
hyperparameter the computation reads (a slope, an eps, ``bias``, a dtype, train/eval):
a later process that found one's code under the other's key gives another result.
Each run is ``pb.compile(model)`` then ``.backward()`` of a loss, on x_k, its results
the output and every parameter's gradient.
"""

from __future__ import annotations

import random

import numpy as np

import pullback as pb

#: layer kind -> (r, width) -> (its source, with {0} for the hyperparameter, and the
#: hyperparameter's values in variants 0 and 1; None: it has none)
LAYERS = {
    "tanh": lambda r, d: ("nn.Tanh()", None),
    "relu": lambda r, d: ("nn.ReLU()", None),
    "sigmoid": lambda r, d: ("nn.Sigmoid()", None),
    "leaky": lambda r, d: ("nn.LeakyReLU({0})", (0.01, round(r.uniform(0.05, 0.5), 3))),
    "elu": lambda r, d: ("nn.ELU(alpha={0})", (1.0, round(r.uniform(0.2, 2.0), 3))),
    "softplus": lambda r, d: ("nn.Softplus(beta={0})", (1.0, round(r.uniform(0.5, 3.0), 3))),
    "gelu": lambda r, d: ("nn.GELU(approximate={0})", ("none", "tanh")),
    "hardtanh": lambda r, d: ("nn.Hardtanh(-1.0, {0})", (1.0, 0.5)),
    "layernorm": lambda r, d: (f"nn.LayerNorm({d}, eps={{0}})", (1e-5, 0.5)),
    "layernorm_affine": lambda r, d: (
        f"nn.LayerNorm({d}, elementwise_affine={{0}})", (True, False)),
    "batchnorm": lambda r, d: (f"nn.BatchNorm1d({d}, momentum={{0}})", (0.1, 0.5)),
    "dropout_eval": lambda r, d: ("nn.Dropout(0.5)", None),
    "softmax": lambda r, d: ("nn.Softmax(dim={0})", (-1, 0)),
    "linear": lambda r, d: (f"nn.Linear({d}, {d}, bias={{0}})", (True, False)),
}


def model_source(seed: int) -> str:
    """``make(variant)``: the program's model, variant 0 or 1 (one change apart: a
    layer's hyperparameter, or train/eval), its input width ``IN`` and ``DTYPE``."""
    r = random.Random(seed)
    d = r.choice([3, 4, 6])
    n = r.randint(2, 5)
    changed = r.randrange(0, n + 1)  # (n: the mode)
    lines = []
    for k in range(n):
        text, values = LAYERS[r.choice(sorted(LAYERS))](r, d)
        if values is not None and k == changed:
            lines.append(text.format(f"{values!r}[variant]"))
        else:
            lines.append(text.format(*([] if values is None else [repr(values[0])])))
    train = r.random() < 0.5
    modes = (train, not train if changed == n else train)
    dtype = r.choice(["pb.float64", "pb.float32"])
    body = ",\n        ".join(lines)
    return (f"import pullback as pb\nfrom pullback import nn\n\nIN = {d}\nDTYPE = {dtype}"
            f"\n\n\ndef make(variant):\n    model = nn.Sequential(\n        {body}).to(DTYPE)"
            f"\n    model.train({modes!r}[variant])"
            f"\n    return model\n")


def runs(seed: int, module) -> dict:
    """name -> (k -> results) for both variants of the program's model."""
    out = {}
    for variant in (0, 1):
        pb.manual_seed(seed)
        model = module.make(variant)
        compiled = pb.compile(model)

        def run(k: int, model=model, compiled=compiled) -> list:
            x = pb.from_numpy(np.random.default_rng([seed, k]).standard_normal(
                (4, module.IN))).to(module.DTYPE)
            model.zero_grad()
            pb.manual_seed(1000 * seed + k)  # (dropout's draws: the same in any order)
            y = compiled(x)
            (y * y).mean().backward()
            return [y.detach().numpy()] + [
                np.asarray("no grad") if p.grad is None else p.grad.numpy()
                for p in model.parameters()]
        out[f"model{variant}"] = run
    return out
