"""Out of core (issue 20): the gradient of a logistic regression's loss over
4*10^7 x 20 float64 rows (6.4 GB), generated chunk by chunk by dask.array.random.

Three ways, each in its own process so that each peak resident memory
(``resource.getrusage``) is its own: numpy chunked by hand (the floor), pullback's
generated gradient over a Dask array on Dask's threads, and the same on a
``dask.distributed.LocalCluster`` of 2 worker processes (its workers' memory is not
the driver's: the figure printed is the driver's). Printed, not asserted; not run by
the tests. ``python benchmarks/scale.py [rows]`` (default 4e7);
``python benchmarks/scale.py 1e6`` checks the three agree in seconds.
"""

from __future__ import annotations

import resource
import subprocess
import sys
import time

import numpy as np

COLS, CHUNK, SEED = 20, 500_000, 0


def loss(w, X, y):
    z = X @ w
    return np.mean(np.logaddexp(0.0, z) - y * z)


def dask_data(rows: int):
    import dask.array as da

    rs = da.random.RandomState(SEED)
    X = rs.standard_normal((rows, COLS), chunks=(CHUNK, COLS))
    y = (rs.random_sample(rows, chunks=CHUNK) > 0.5).astype(np.float64)
    return X, y


def by_hand(rows: int, w: np.ndarray) -> np.ndarray:
    """numpy over the same chunks (each computed by dask, one at a time), the
    gradient written by hand: X.T (sigmoid(Xw) - y) / n."""
    X, y = dask_data(rows)
    g = np.zeros(COLS)
    for k in range(X.numblocks[0]):
        Xk, yk = X.blocks[k].compute(), y.blocks[k].compute()
        g += Xk.T @ (1 / (1 + np.exp(-(Xk @ w))) - yk)
    return g / rows


def with_pullback(rows: int, w: np.ndarray, cluster: bool) -> np.ndarray:
    import pullback as pb

    X, y = dask_data(rows)
    g = pb.grad(loss)(w, X, y)  # lazy: a Dask graph
    if not cluster:
        return g.compute()
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=2, host="127.0.0.1",
                      dashboard_address=None, memory_limit="3GiB") as c, Client(c) as client:
        return client.compute(g).result()


def one(how: str, rows: int) -> None:
    w = np.linspace(-0.1, 0.1, COLS)
    start = time.perf_counter()
    g = by_hand(rows, w) if how == "numpy" else with_pullback(rows, w, how == "cluster")
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20  # KiB -> GiB
    print(f"{how:8s} {seconds:8.1f} s   peak RSS {peak:5.2f} GiB   g[:3] {g[:3]}")
    np.save(f"/tmp/pullback_scale_{how}.npy", g)


def main() -> None:
    rows = int(float(sys.argv[1])) if len(sys.argv) > 1 else 40_000_000
    print(f"logistic regression gradient, {rows} x {COLS} float64 "
          f"({rows * COLS * 8 / 1e9:.1f} GB), chunks of {CHUNK} rows")
    for how in ("numpy", "threads", "cluster"):
        subprocess.run([sys.executable, __file__, "--one", how, str(rows)], check=True)
    got = {h: np.load(f"/tmp/pullback_scale_{h}.npy") for h in ("numpy", "threads", "cluster")}
    for h in ("threads", "cluster"):
        rel = np.max(np.abs(got[h] - got["numpy"])) / np.max(np.abs(got["numpy"]))
        print(f"{h} vs numpy: max relative difference {rel:.1e}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--one"]:
        one(sys.argv[2], int(sys.argv[3]))
    else:
        main()
