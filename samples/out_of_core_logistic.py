"""A logistic regression fitted over a Dask array: the data is made chunk by chunk by
dask.array.random and never held whole; pb.value_and_grad's generated code builds a
Dask graph for the loss and its gradient, and Dask's scheduler runs it chunk by chunk.
Seed: 002. Needs dask (pip install 'pullback[dask]'); docs/scale.md explains it.

    python samples/out_of_core_logistic.py [--rows 200000] [--steps 30]

With --rows 40000000 (6.4 GB of features) it runs out of core in about 2 GiB of memory.
"""

from __future__ import annotations

import argparse

import dask.array as da
import numpy as np
from dask.diagnostics import ProgressBar

import pullback as pb

COLS, CHUNK = 10, 50_000


def loss(w, b, X, y):
    """The mean logistic loss of labels y in {0, 1}, stable for large |z|."""
    z = X @ w + b
    return np.mean(np.logaddexp(0.0, z) - y * z)


def make_data(rows: int) -> tuple:
    rs = da.random.RandomState(2)
    X = rs.standard_normal((rows, COLS), chunks=(CHUNK, COLS))
    true_w = np.linspace(-2.0, 2.0, COLS)
    noise = rs.logistic(size=rows, chunks=CHUNK)
    y = (X @ true_w + 0.5 + noise > 0).astype(np.float64)
    return X, y


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    X, y = make_data(args.rows)
    print(f"data: {args.rows} x {COLS} float64 in {X.numblocks[0]} chunks of {CHUNK} rows "
          "(a Dask array: nothing computed yet)")
    step = pb.value_and_grad(loss, argnums=(0, 1))
    lazy_value, (lazy_gw, _) = step(np.zeros(COLS), 0.0, X, y)
    print(f"the value and gradient are lazy: {type(lazy_value).__name__}, "
          f"{type(lazy_gw).__name__} of shape {lazy_gw.shape}")
    w, b = np.zeros(COLS), 0.0
    with pb.config.override(dask_compute=True):  # each step: value and gradient, one pass
        for k in range(1, args.steps + 1):
            if k == 1:
                print("step 1 with Dask's progress bar:")
                with ProgressBar(dt=0.05):
                    value, (gw, gb) = step(w, b, X, y)
            else:
                value, (gw, gb) = step(w, b, X, y)
            if k == 1 or k % 10 == 0:
                print(f"step {k:4d}   loss {float(value):.5f}")
            w, b = w - 1.0 * gw, b - 1.0 * float(gb)
    print(f"fitted w: {np.array2string(w, precision=2)}   b: {b:.2f}")
    print(f"traced once for every step: {step.cache.info}")
    Xn, yn = X[:20_000].compute(), y[:20_000].compute()  # a slice that fits, in numpy
    same = np.allclose(pb.grad(loss)(w, b, X[:20_000], y[:20_000]).compute(),
                       pb.grad(loss)(w, b, Xn, yn), rtol=1e-10, atol=0)
    print(f"the gradient over Dask equals numpy's on a slice that fits: {same}")
    accuracy = float((((X @ w + b) > 0) == (y > 0.5)).mean().compute())
    print(f"training accuracy: {accuracy:.3f}")


if __name__ == "__main__":
    main()
