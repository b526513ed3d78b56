"""Gaussian-process regression: the marginal likelihood optimised by scipy.optimize.

Shows: a GP with an RBF kernel on 30 noisy samples of a sine, written in plain numpy
(the kernel matrix by broadcasting, np.linalg.cholesky, np.linalg.solve with the
triangular factor, the log determinant from the factor's diagonal); its negative log
marginal likelihood as a function of three unconstrained hyperparameters (log
lengthscale, log signal variance, log noise variance); pb.value_and_grad of it handed to
scipy.optimize.minimize(jac=True, method="L-BFGS-B"), which gets a float and a float64
array as it needs (types printed), traced once for all its evaluations; the gradient
against central finite differences and against slogdet's spelling of the same
likelihood; the fitted hyperparameters, the log likelihood before and after, and the
posterior mean at a few points against the sine; and what np.linalg.cholesky says when
the kernel matrix is not positive definite.

The model is numpy only: pullback appears at the driver, pb.value_and_grad(objective).
(scipy.linalg.cho_factor / cho_solve on traced values do not differentiate yet: the
numpy spellings below do.)

    python samples/gaussian_process.py
    python samples/gaussian_process.py --steps 10    # at most 10 L-BFGS-B iterations
"""

import argparse

import numpy as np
from scipy.optimize import minimize

import pullback as pb


def rbf(a, b, log_lengthscale, log_variance):
    d = a[:, None] - b[None, :]
    return np.exp(log_variance) * np.exp(-0.5 * d ** 2 / np.exp(2 * log_lengthscale))


def neg_log_marginal(theta, x, y):
    """-log p(y | x, theta) for theta = (log lengthscale, log variance, log noise)."""
    K = rbf(x, x, theta[0], theta[1]) + np.exp(theta[2]) * np.eye(len(x))
    L = np.linalg.cholesky(K)
    a = np.linalg.solve(L, y)  # K^-1 = L^-T L^-1, so y^T K^-1 y = |L^-1 y|^2
    return 0.5 * a @ a + np.sum(np.log(np.diag(L))) + 0.5 * len(x) * np.log(2 * np.pi)


def neg_log_marginal_slogdet(theta, x, y):
    """The same, spelled with slogdet and a solve against K itself."""
    K = rbf(x, x, theta[0], theta[1]) + np.exp(theta[2]) * np.eye(len(x))
    _, logdet = np.linalg.slogdet(K)
    return 0.5 * y @ np.linalg.solve(K, y) + 0.5 * logdet + 0.5 * len(x) * np.log(2 * np.pi)


def posterior_mean(theta, x, y, x_new):
    K = rbf(x, x, theta[0], theta[1]) + np.exp(theta[2]) * np.eye(len(x))
    return rbf(x_new, x, theta[0], theta[1]) @ np.linalg.solve(K, y)


def central_differences(f, x, eps=1e-6):
    return np.array([(f(x + eps * e) - f(x - eps * e)) / (2 * eps) for e in np.eye(len(x))])


def relative_error(a, b):
    return np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-8))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100, help="most L-BFGS-B iterations")
    args = parser.parse_args()

    rs = np.random.RandomState(0)
    x = np.sort(rs.uniform(-4, 4, 30))
    y = np.sin(x) + 0.2 * rs.randn(30)
    print(f"data: {len(x)} points of sin(x) + noise of std 0.2, x in [{x[0]:.2f}, {x[-1]:.2f}]")

    theta0 = np.array([0.0, 0.0, 0.0])  # lengthscale 1, variance 1, noise variance 1
    objective = pb.value_and_grad(neg_log_marginal)
    value, gradient = objective(theta0, x, y)
    print(f"value_and_grad returns: {type(value).__name__}, {type(gradient).__name__} "
          f"{gradient.dtype} of shape {gradient.shape}")
    differences = central_differences(lambda t: neg_log_marginal(t, x, y), theta0)
    print(f"gradient vs central differences: max relative error "
          f"{relative_error(gradient, differences):.1e}")
    other = pb.grad(neg_log_marginal_slogdet)(theta0, x, y)
    print(f"gradient vs the slogdet spelling: max relative error "
          f"{relative_error(gradient, other):.1e}")
    print(f"log likelihood at the start: {-value:.4f}")

    iterations = []

    def report(theta):  # scipy calls it after each iteration
        iterations.append(theta)
        if len(iterations) % 2 == 0:
            print(f"iteration {len(iterations):3d}   log likelihood "
                  f"{-neg_log_marginal(theta, x, y):.4f}")

    result = minimize(objective, theta0, args=(x, y), jac=True, method="L-BFGS-B",
                      callback=report, options={"maxiter": args.steps})
    print(f"L-BFGS-B: {result.message} after {result.nit} iterations, "
          f"{result.nfev} evaluations of value and gradient")
    print("traced once for all of them:", objective.cache.info)
    lengthscale, variance, noise = np.exp(result.x)
    print(f"fitted: lengthscale {lengthscale:.3f}   signal std {np.sqrt(variance):.3f}   "
          f"noise std {np.sqrt(noise):.3f} (the data's: 0.2)")
    print(f"log likelihood after fitting: {-result.fun:.4f}")
    x_new = np.array([-3.0, -1.5, 0.0, 1.5, 3.0])
    mean = posterior_mean(result.x, x, y, x_new)
    print("posterior mean at x =", " ".join(f"{v:+.1f}" for v in x_new), ":",
          " ".join(f"{m:+.3f}" for m in mean))
    print("sin(x)           at the same x :", " ".join(f"{v:+.3f}" for v in np.sin(x_new)))

    try:  # no noise and a long lengthscale: K is singular to working precision
        objective(np.array([3.0, 0.0, -50.0]), x, y)
    except np.linalg.LinAlgError as error:
        print("expected error: LinAlgError:", error)
    print("next: samples/mixture_model.py (scipy.special.logsumexp in a likelihood)")


if __name__ == "__main__":
    main()
