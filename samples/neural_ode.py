"""A neural ODE fitted to a spiral, with scipy.integrate.odeint, in plain numpy.

Shows: a 2-D spiral from dy/dt = y A (A a rotation with a little decay) sampled at 16
times; a vector field that is a small numpy MLP (tanh, 16 hidden units) whose weights are
one flat array, passed to scipy.integrate.odeint(field, y0, t, args=(params,)), as scipy
code passes parameters; pb.value_and_grad of the squared error of the trajectory, where
the source pass calls pullback.scipy.integrate.odeint (the same solver interface, with
derivatives by the adjoint method: the backward integrates the adjoint system back in
time, one vector-Jacobian product of the MLP per solver stage); that gradient against
central finite differences (with tight tolerances: the solver's error must be far below
the differences' step); Adam in numpy, the loss every few steps; and the fitted
trajectory against the data.

The model is numpy and scipy only: pullback appears at the driver,
pb.value_and_grad(objective).

    python samples/neural_ode.py              # 100 steps
    python samples/neural_ode.py --steps 20
"""

import argparse

import numpy as np
from scipy.integrate import odeint

import pullback as pb

A = np.array([[-0.1, 2.0], [-2.0, -0.1]])
Y0 = np.array([2.0, 0.0])
T = np.linspace(0.0, 3.0, 16)
HIDDEN = 16


def true_field(y, t):
    return y @ A


def unpack(params):
    """Flat parameters -> W1 (2, H), b1 (H,), W2 (H, 2), b2 (2,)."""
    h = HIDDEN
    return (params[:2 * h].reshape(2, h), params[2 * h:3 * h],
            params[3 * h:5 * h].reshape(h, 2), params[5 * h:])


def field(y, t, params):
    """The learnt dy/dt: an MLP of y."""
    w1, b1, w2, b2 = unpack(params)
    return np.tanh(y @ w1 + b1) @ w2 + b2


def loss(params, data, tolerance=1e-6):
    trajectory = odeint(field, Y0, T, args=(params,), rtol=tolerance, atol=tolerance)
    return np.mean((trajectory - data) ** 2)


def central_differences(f, x, eps=1e-6):
    return np.array([(f(x + eps * e) - f(x - eps * e)) / (2 * eps) for e in np.eye(len(x))])


def adam(value_and_grad, params, data, steps, lr=0.03, beta1=0.9, beta2=0.999, every=10):
    m, v = np.zeros_like(params), np.zeros_like(params)
    for k in range(1, steps + 1):
        value, g = value_and_grad(params, data)
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g ** 2
        params = params - lr * (m / (1 - beta1 ** k)) / (np.sqrt(v / (1 - beta2 ** k)) + 1e-8)
        if k == 1 or k % every == 0 or k == steps:
            print(f"step {k:4d}   loss {value:.5f}")
    return params


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100)
    args = parser.parse_args()

    data = odeint(true_field, Y0, T)
    print(f"data: the spiral dy/dt = y A from y0 = {Y0.tolist()} at {len(T)} times "
          f"in [0, {T[-1]}]")
    rs = np.random.RandomState(0)
    params = 0.1 * rs.randn(4 * HIDDEN + HIDDEN + 2)
    print(f"vector field: an MLP 2 -> {HIDDEN} (tanh) -> 2, {params.size} parameters")

    # the check with tight tolerances: the solver's error must be far below the
    # differences' step (1e-6 tolerances change the steps the solver takes)
    precise = pb.grad(lambda p, d: loss(p, d, tolerance=1e-11))(params, data)
    some = rs.choice(params.size, 8, replace=False)  # finite differences of 8 of them

    def loss_of_some(values):
        p = params.copy()
        p[some] = values
        return loss(p, data, tolerance=1e-11)

    differences = central_differences(loss_of_some, params[some], eps=1e-5)
    error = np.max(np.abs(precise[some] - differences) / np.maximum(np.abs(differences),
                                                                      1e-8))
    print(f"gradient (adjoint) vs central differences, 8 parameters, tolerances 1e-11: "
          f"max relative error {error:.1e}")

    objective = pb.value_and_grad(loss)
    value, _ = objective(params, data)
    print(f"loss at the start: {value:.5f}   (equals eager odeint's: "
          f"{np.isclose(value, loss(params, data))})")

    params = adam(objective, params, data, args.steps)
    fitted = odeint(field, Y0, T, args=(params,), rtol=1e-6, atol=1e-6)
    print(f"loss after {args.steps} steps: {loss(params, data):.5f}")
    for i in (0, len(T) // 2, len(T) - 1):
        print(f"t = {T[i]:.2f}   data ({data[i, 0]:+.3f}, {data[i, 1]:+.3f})   "
              f"fitted ({fitted[i, 0]:+.3f}, {fitted[i, 1]:+.3f})")
    print("next: docs/scipy.md (what pullback.scipy has, and how odeint differentiates)")


if __name__ == "__main__":
    main()
