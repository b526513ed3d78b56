"""Fixed points and their implicit gradients: pb.fixed_point, built on pb.custom_vjp.

Shows: autograd's own example first, a square root as the fixed point of Newton's
iteration x <- (x + a / x) / 2, with its first and second derivatives equal to
np.sqrt's; then an implicit layer, z = tanh(W z + U x + c), solved by iteration for a
batch of inputs and read out by v . z, fitted to a curve. The gradient goes through
the converged point by the implicit function theorem (an adjoint fixed point, one
vjp of a step per iteration), not through the iterations: the traced program has one
fixed_point step however many iterations the solver takes. It is checked against
central differences before training; then the loss falls step by step; and an
iteration that is not a contraction raises instead of returning a wrong point.

    python samples/fixed_point.py [--steps N]
"""

import argparse

import numpy as np

import pullback as pb

HIDDEN = 8


# ------------------------------------------------------- autograd's square root example
def newton_sqrt_iter(a):
    return lambda x: 0.5 * (x + a / x)


def distance(x, y):
    return np.abs(x - y)


def sqrt(a, guess=10.0):
    return pb.fixed_point(newton_sqrt_iter, a, guess, distance, 1e-12)


# ------------------------------------------------------------------ an implicit layer
def weights(p):
    """W with every row's absolute sum below 0.8: the step is a contraction."""
    return 0.8 * np.tanh(p["A"]) / HIDDEN


def layer(args):
    p, X = args
    W, drive = weights(p), p["U"] @ X + p["c"][:, None]
    return lambda z: np.tanh(W @ z + drive)


def predict(p, X):
    z = pb.fixed_point(layer, (p, X), np.zeros((HIDDEN, X.shape[1])))
    return p["v"] @ z


def loss(p, X, y):
    return np.mean((predict(p, X) - y) ** 2)


def central_differences(f, p, key, entries, eps=1e-6):
    out = []
    for idx in entries:
        up = {k: v.copy() for k, v in p.items()}
        down = {k: v.copy() for k, v in p.items()}
        up[key][idx] += eps
        down[key][idx] -= eps
        out.append((f(up) - f(down)) / (2 * eps))
    return np.array(out)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=150)
    steps = parser.parse_args().steps

    print(f"sqrt(2) by Newton's iteration: {float(sqrt(2.0)):.12f}   np.sqrt: "
          f"{np.sqrt(2.0):.12f}")
    a = np.array(2.0)
    d1, d1_np = pb.grad(sqrt)(a), pb.grad(np.sqrt)(a)
    d2, d2_np = pb.grad(pb.grad(sqrt))(a), pb.grad(pb.grad(np.sqrt))(a)
    print(f"first derivative:  {d1:.12f}   np.sqrt's: {d1_np:.12f}")
    print(f"second derivative: {d2:.12f}   np.sqrt's: {d2_np:.12f}")

    rs = np.random.RandomState(0)
    X = rs.uniform(-2, 2, size=(2, 64))
    y = np.sin(X[0]) * np.cos(X[1])
    p = {"A": 0.5 * rs.randn(HIDDEN, HIDDEN), "U": rs.randn(HIDDEN, 2),
         "c": 0.1 * rs.randn(HIDDEN), "v": 0.3 * rs.randn(HIDDEN)}
    print(f"\ndata: {X.shape[1]} points of sin(x1) cos(x2); an implicit layer of {HIDDEN} "
          "units, z = tanh(W z + U x + c)")

    count = [0]

    def counted(args):
        step = layer(args)

        def f(z):
            count[0] += 1
            return step(z)
        return f

    z = pb.fixed_point(counted, (p, X), np.zeros((HIDDEN, X.shape[1])))
    print(f"the forward solve took {count[0]} iterations; residual "
          f"{np.abs(layer((p, X))(z) - z).max():.1e}")
    value_and_grad = pb.value_and_grad(loss)
    ir = pb.compiler.inspect(value_and_grad, p, X, y).ir
    print(f"fixed_point steps in the traced program: {ir.count('custom_function[')}")

    value, g = value_and_grad(p, X, y)
    entries = [(0, 1), (3, 2), (5, 7), (7, 0)]
    fd = central_differences(lambda q: loss(q, X, y), p, "A", entries)
    mine = np.array([g["A"][i] for i in entries])
    print(f"gradient vs central differences (4 entries of A): max relative error "
          f"{np.max(np.abs(mine - fd) / np.abs(fd)):.1e}")

    lr, velocity = 0.3, {k: np.zeros_like(v) for k, v in p.items()}
    first = value
    for step in range(1, steps + 1):
        value, g = value_and_grad(p, X, y)
        for k in p:
            velocity[k] = 0.9 * velocity[k] - lr * g[k]
            p[k] = p[k] + velocity[k]
        if step == 1 or step % 25 == 0 or step == steps:
            print(f"step {step:4d}   loss {value:.5f}")
    print(f"loss: {first:.5f} at the start, {loss(p, X, y):.5f} after {steps} steps")
    print(f"traced once for all of them: {value_and_grad.cache.info}")

    def doubling(a):
        return lambda x: 2.0 * x + a
    try:
        pb.grad(lambda a: pb.fixed_point(doubling, a, 1.0, max_iter=100))(1.0)
    except RuntimeError as e:
        print(f"expected error: RuntimeError: {str(e).split(';')[0]}")
    print("next: docs/extending.md (section 10, custom rules)")


if __name__ == "__main__":
    main()
