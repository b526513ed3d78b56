"""A Gaussian mixture fitted by gradient ascent on its log likelihood, in numpy and scipy.

Shows: 600 points drawn from a mixture of three 1-D Gaussians; the mixture's log
likelihood written as a scientist writes it, with scipy.stats.norm.logpdf for each
component and scipy.special.logsumexp over components (the log-sum-exp trick, so
no density underflows); unconstrained parameters (weights by a log-softmax of logits,
means, log scales) in one flat numpy vector; pb.value_and_grad of the average log
likelihood, checked against central finite differences; plain gradient ascent with
momentum, the log likelihood every few steps; the fitted weights, means and scales
against the true ones (components sorted by mean); and the error a frozen distribution
(norm(mu, sigma).logpdf(x)) gets, with the spelling that differentiates.

The model is numpy and scipy only: pullback appears at the driver,
pb.value_and_grad(objective).

    python samples/mixture_model.py              # 400 steps
    python samples/mixture_model.py --steps 50
"""

import argparse

import numpy as np
from scipy.special import logsumexp
from scipy.stats import norm

import pullback as pb

WEIGHTS = np.array([0.5, 0.3, 0.2])
MEANS = np.array([-2.0, 0.5, 3.0])
SCALES = np.array([0.6, 0.8, 0.4])


def sample(n, rs):
    component = rs.choice(3, size=n, p=WEIGHTS)
    return MEANS[component] + SCALES[component] * rs.randn(n)


def unpack(params):
    """Flat parameters -> (log weights, means, scales); the weights sum to one."""
    logits, means, log_scales = params[:3], params[3:6], params[6:]
    return logits - logsumexp(logits), means, np.exp(log_scales)


def mean_log_likelihood(params, x):
    """(1/n) sum_i log sum_k w_k N(x_i | mu_k, sigma_k)."""
    log_weights, means, scales = unpack(params)
    joint = log_weights + norm.logpdf(x[:, None], means, scales)  # (n, 3)
    return np.mean(logsumexp(joint, axis=1))


def central_differences(f, x, eps=1e-6):
    return np.array([(f(x + eps * e) - f(x - eps * e)) / (2 * eps) for e in np.eye(len(x))])


def ascend(value_and_grad, params, x, steps, lr=0.05, momentum=0.9, every=50):
    velocity = np.zeros_like(params)
    for k in range(1, steps + 1):
        value, g = value_and_grad(params, x)
        velocity = momentum * velocity + g
        params = params + lr * velocity
        if k == 1 or k % every == 0 or k == steps:
            print(f"step {k:4d}   log likelihood per point {value:.4f}")
    return params


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=400)
    args = parser.parse_args()

    rs = np.random.RandomState(0)
    x = sample(600, rs)
    print(f"data: {len(x)} points from 3 components, weights {WEIGHTS.tolist()}, "
          f"means {MEANS.tolist()}, scales {SCALES.tolist()}")
    truth = np.concatenate([np.log(WEIGHTS), MEANS, np.log(SCALES)])
    print(f"log likelihood per point at the true parameters: "
          f"{mean_log_likelihood(truth, x):.4f}")

    params = np.concatenate([np.zeros(3), [-1.0, 0.0, 1.0], np.zeros(3)])
    objective = pb.value_and_grad(mean_log_likelihood)
    _, gradient = objective(params, x)
    differences = central_differences(lambda p: mean_log_likelihood(p, x), params)
    error = np.max(np.abs(gradient - differences) / np.maximum(np.abs(differences), 1e-8))
    print(f"gradient vs central differences: max relative error {error:.1e}")

    start = mean_log_likelihood(params, x)
    params = ascend(objective, params, x, args.steps)
    fitted = mean_log_likelihood(params, x)
    print(f"log likelihood per point: {start:.4f} at the start, {fitted:.4f} fitted")
    print(f"fitted above the true parameters' (the maximum likelihood of this sample is "
          f"not the truth): {fitted > mean_log_likelihood(truth, x)}")
    log_weights, means, scales = unpack(params)
    order = np.argsort(means)
    for name, fitted, true in (("weights", np.exp(log_weights[order]), WEIGHTS),
                               ("means  ", means[order], MEANS),
                               ("scales ", scales[order], SCALES)):
        print(f"{name} fitted: {' '.join(f'{v:+.3f}' for v in fitted)}   "
              f"true: {' '.join(f'{v:+.3f}' for v in true)}")

    try:  # a frozen distribution has taken its parameters before pullback could see them
        pb.grad(lambda p, x: np.sum(norm(p[3:6], np.exp(p[6:])).logpdf(x[:, None])))(params, x)
    except RuntimeError as error:
        print("expected error: RuntimeError:", error)
    print("(unfrozen, norm.logpdf(x, mu, sigma) as in mean_log_likelihood, the call is "
          "pullback's on traced values and differentiates)")
    print("next: samples/neural_ode.py (scipy.integrate.odeint with the adjoint method)")


if __name__ == "__main__":
    main()
