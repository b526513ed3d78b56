"""Black-box variational inference of a banana-shaped posterior, in plain numpy and scipy.

Shows: a 2-D non-Gaussian log density written with scipy.stats.norm.logpdf (z0 is
normal, z1 is normal around a parabola in z0: a banana); a diagonal Gaussian q(z) with
mean m and log standard deviations s; the evidence lower bound estimated with the
reparameterisation trick, z = m + exp(s) * eps, the noise eps drawn from a numpy
RandomState inside the objective; pb.grad of the negative ELBO, which draws fresh noise
on every call and advances the generator as eager code would (checked: two calls give
different gradients, the generator's state moved, and one call leaves it where one eager
call does); the gradient against central
finite differences with the noise fixed by reseeding; a small Adam in numpy, the ELBO
every few steps; the fitted q against the moments of the target (in closed form);
and what pb.grad says about a draw whose parameters need a gradient but have no
reparameterisation (a gamma).

The model is numpy and scipy only: pullback appears at the driver, pb.grad(objective).

    python samples/bbvi.py              # 300 steps
    python samples/bbvi.py --steps 50
"""

import argparse

import numpy as np
from scipy.stats import norm

import pullback as pb

SAMPLES = 64  # draws of eps per ELBO estimate
rs = np.random.RandomState(0)


def log_density(z):
    """log p(z) up to a constant: z0 ~ N(0, 1.5), z1 | z0 ~ N(0.5 z0^2 - 1, 0.5)."""
    z0, z1 = z[:, 0], z[:, 1]
    return norm.logpdf(z0, 0.0, 1.5) + norm.logpdf(z1, 0.5 * z0 ** 2 - 1.0, 0.5)


def negative_elbo(params):
    """-(E_q[log p(z)] + H[q]) for q = N(m, diag(exp(2 s))), params = [m0, m1, s0, s1]."""
    mean, log_std = params[:2], params[2:]
    eps = rs.randn(SAMPLES, 2)  # fresh noise on every call
    z = mean + np.exp(log_std) * eps
    entropy = np.sum(log_std) + np.log(2 * np.pi * np.e)  # of a 2-D diagonal Gaussian
    return -(np.mean(log_density(z)) + entropy)


def central_differences(f, x, eps=1e-6):
    return np.array([(f(x + eps * e) - f(x - eps * e)) / (2 * eps) for e in np.eye(len(x))])


def check_gradient(gradient, params):
    """Reseeding before each call fixes the noise, so the estimate is a smooth function."""
    def fixed(f, x):
        rs.seed(1)
        return f(x)

    ours = fixed(gradient, params)
    theirs = central_differences(lambda x: fixed(negative_elbo, x), params)
    error = np.max(np.abs(ours - theirs) / np.maximum(np.abs(theirs), 1e-8))
    print(f"gradient vs central differences (same noise): max relative error {error:.1e}")


def adam(gradient, params, steps, lr=0.05, beta1=0.9, beta2=0.999, every=25):
    m, v = np.zeros_like(params), np.zeros_like(params)
    for k in range(1, steps + 1):
        value, g = gradient(params)
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g ** 2
        params = params - lr * (m / (1 - beta1 ** k)) / (np.sqrt(v / (1 - beta2 ** k)) + 1e-8)
        if k == 1 or k % every == 0 or k == steps:
            print(f"step {k:4d}   ELBO {-value:8.4f}   (estimated from {SAMPLES} draws)")
    return params


def target_moments():
    """Mean and standard deviations of p: E z1 = 0.5 E z0^2 - 1, Var z1 = 0.25 Var z0^2
    + 0.5^2 with Var z0^2 = 2 * 1.5^4."""
    return np.array([0.0, 0.5 * 1.5 ** 2 - 1.0]), np.array([1.5, np.sqrt(0.5 * 1.5 ** 4
                                                                          + 0.25)])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    args = parser.parse_args()

    params = np.array([1.0, 1.0, 0.0, 0.0])  # q = N((1, 1), I)
    gradient = pb.grad(negative_elbo)
    check_gradient(gradient, params)

    state = rs.get_state()[1].copy()
    first, second = gradient(params), gradient(params)
    print(f"two calls of the gradient differ (fresh noise): {not np.allclose(first, second)}")
    print(f"the generator advanced: {not np.array_equal(state, rs.get_state()[1])}")
    rs.seed(2)
    eager = negative_elbo(params)
    after_eager = rs.get_state()[1].copy()
    rs.seed(2)
    value = pb.value_and_grad(negative_elbo)(params)[0]
    print(f"value under pb.value_and_grad equals eager numpy with the same seed: "
          f"{np.isclose(value, eager)}")
    print(f"and leaves the generator where the eager call does: "
          f"{np.array_equal(after_eager, rs.get_state()[1])}")

    rs.seed(0)
    params = adam(pb.value_and_grad(negative_elbo), params, args.steps)
    mean, std = params[:2], np.exp(params[2:])
    true_mean, true_std = target_moments()
    print(f"final ELBO (mean of 20 estimates): "
          f"{-np.mean([negative_elbo(params) for _ in range(20)]):.4f}; at most log Z = 0, "
          "the target is normalised, and the gap is KL(q || p)")
    print(f"q mean:   ({mean[0]:+.3f}, {mean[1]:+.3f})   target mean: "
          f"({true_mean[0]:+.3f}, {true_mean[1]:+.3f})")
    print(f"q std:    ({std[0]:.3f}, {std[1]:.3f})     target std:  "
          f"({true_std[0]:.3f}, {true_std[1]:.3f})")
    print("(a diagonal Gaussian cannot bend: minimising KL(q || p) puts it in the "
          "banana's bend, narrower than p)")

    try:  # a Gamma q reparameterised by its shape: numpy's gamma has no such path
        pb.grad(lambda p: np.mean(rs.gamma(np.exp(p[0]), size=SAMPLES)))(params)
    except TypeError as error:
        print("expected error: TypeError:", error)
    print("next: samples/gaussian_process.py (scipy.optimize with pb.value_and_grad)")


if __name__ == "__main__":
    main()
