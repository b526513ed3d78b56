"""Plain numpy programs for tests/test_numpy_programs.py: models, losses, numerics and
linear algebra written as a numpy user writes them (loops, branches, slicing, linalg,
fft; several after numpy-autograd's examples). This module imports numpy only.

``PROGRAMS`` maps a name to (function of one float64 vector, the vector's length).
"""

from __future__ import annotations

import numpy as np

_RNG = np.random.default_rng(2024)
_X = _RNG.standard_normal((5, 3))            # a small design matrix
_Y = np.array([1.0, -1.0, 1.0, 1.0, -1.0])  # +-1 labels
_LABELS = np.array([0, 2, 1, 1, 0])
_SEQ = _RNG.standard_normal((4, 2))         # an input sequence: 4 steps of 2 features
_GRID = np.linspace(-1.0, 1.0, 7)
_KERNEL = np.array([0.25, 0.5, -0.25])


# ----------------------------------------------------------------- models and losses
def tanh_mlp(params):
    """A 3-4-1 tanh network's squared error (numpy-autograd's neural net example)."""
    W1, b1 = params[:12].reshape(3, 4), params[12:16]
    W2, b2 = params[16:20], params[20]
    hidden = np.tanh(_X @ W1 + b1)
    out = hidden @ W2 + b2
    return np.mean((out - _Y) ** 2)


def logistic_regression(w):
    """Negative log-likelihood of a logistic model (numpy-autograd's README example)."""
    margins = _Y * (_X @ w)
    return np.sum(np.logaddexp(0.0, -margins))


def softmax_cross_entropy(flat):
    logits = _X @ flat.reshape(3, 3)
    shifted = logits - np.max(logits, axis=1, keepdims=True)
    log_probs = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
    return -np.mean(log_probs[np.arange(len(_LABELS)), _LABELS])


def gaussian_log_density(flat):
    """log N(d; 0, L L^T + I) with slogdet and solve, the covariance parametrized."""
    L = np.tril(flat.reshape(3, 3))
    cov = L @ L.T + np.eye(3)
    d = np.array([0.5, -1.0, 0.25])
    sign, logdet = np.linalg.slogdet(cov)
    return -0.5 * (logdet + d @ np.linalg.solve(cov, d) + 3 * np.log(2 * np.pi))


def rnn_loop(flat):
    """An Elman RNN unrolled over time by a Python loop."""
    W, U = flat[:9].reshape(3, 3), flat[9:15].reshape(2, 3)
    h = np.zeros(3)
    total = 0.0
    for t in range(_SEQ.shape[0]):
        h = np.tanh(h @ W + _SEQ[t] @ U)
        total = total + np.sum(h ** 2)
    return total


def huber_regression(w):
    r = _X @ w - _Y
    return np.sum(np.where(np.abs(r) < 1.0, 0.5 * r ** 2, np.abs(r) - 0.5))


def relu_features(w):
    z = np.maximum(_X @ w.reshape(3, 2), 0.0)
    return np.sum(np.concatenate([z, z ** 2], axis=1) * 0.5)


def attention(flat):
    q, k = flat[:6].reshape(2, 3), flat[6:15].reshape(3, 3)
    scores = q @ k.T / np.sqrt(3.0)
    # np.max, not scores.max(axis=1): on an eager Tensor the method is torch's, which
    # returns (values, indices) for a dim (inside pb.grad the numpy face gives numpy's)
    weights = np.exp(scores - np.max(scores, axis=1, keepdims=True))
    weights = weights / weights.sum(axis=1, keepdims=True)
    return np.sum((weights @ k) ** 2)


# ----------------------------------------------------------------- numerics
def polynomial(coeffs):
    return np.sum(np.polyval(coeffs, _GRID) ** 2)


def convolution(signal):
    return np.sum(np.convolve(signal, _KERNEL, mode="same") ** 2)


def spectral_loss(signal):
    power = np.abs(np.fft.rfft(signal)) ** 2
    return np.sum(power * np.arange(power.shape[0]))


def spectral_filter(image):
    """A low-pass filter in 2-D: fft2, a mask, the real part of ifft2."""
    spectrum = np.fft.fft2(image.reshape(3, 4))
    mask = np.zeros((3, 4))
    mask[:2, :2] = 1.0
    return np.sum(np.real(np.fft.ifft2(spectrum * mask)) ** 2)


def cumulative_product(x):
    return np.sum(np.cumprod(1.0 + 0.1 * x))


def trimmed_mean(x):
    """The mean without the smallest and largest values (sort-based)."""
    return np.mean(np.sort(x)[1:-1] ** 2)


def newton_sqrt(x):
    """Five Newton steps for sqrt(x**2 + 1): a loop over an iterate."""
    a = x ** 2 + 1.0
    y = np.ones_like(a)
    for _ in range(5):
        y = 0.5 * (y + a / y)
    return np.sum(y)


def branchy(x):
    """A data-dependent branch and a clip."""
    if np.sum(x) > 0:
        y = np.clip(x, -0.5, 2.0) * 2.0
    else:
        y = np.exp(x)
    return np.sum(y * x)


def finite_differences(x):
    """Slicing: first differences, and np.diff of second order."""
    return np.sum((x[1:] - x[:-1]) ** 2) + np.sum(np.diff(x, n=2) ** 2)


def statistics(x):
    m = x.reshape(2, 3)
    return np.var(m, axis=1, ddof=1).sum() + np.std(m) + np.linalg.norm(m, axis=0).sum()


# ----------------------------------------------------------------- linear algebra
def inverse_trace(flat):
    A = flat.reshape(3, 3) + 3.0 * np.eye(3)
    return np.trace(np.linalg.inv(A)) + np.log(np.abs(np.linalg.det(A)))


def kernel_ridge(x):
    """A Gaussian-kernel Gram matrix by broadcasting, solved against targets."""
    K = np.exp(-(x[:, None] - x[None, :]) ** 2) + 0.5 * np.eye(x.shape[0])
    return np.sum(np.linalg.solve(K, np.arange(1.0, x.shape[0] + 1)))


def bilinear_einsum(flat):
    A, u, v = flat[:6].reshape(2, 3), flat[6:8], flat[8:11]
    return np.einsum("i,ij,j->", u, A, v) + np.sum(np.outer(u, v) * A)


def smallest_eigenvalue(flat):
    M = flat.reshape(3, 3)
    return np.linalg.eigh(M @ M.T + np.eye(3))[0][0]


def stacked_features(x):
    feats = np.stack([x, np.sin(x), x ** 2], axis=0)
    return np.sum(feats.T @ np.array([1.0, -2.0, 0.5]))


def log_sum_exp(x):
    m = np.max(x)
    return m + np.log(np.sum(np.exp(x - m)))


PROGRAMS = {
    "tanh_mlp": (tanh_mlp, 21), "logistic_regression": (logistic_regression, 3),
    "softmax_cross_entropy": (softmax_cross_entropy, 9),
    "gaussian_log_density": (gaussian_log_density, 9), "rnn_loop": (rnn_loop, 15),
    "huber_regression": (huber_regression, 3), "relu_features": (relu_features, 6),
    "attention": (attention, 15), "polynomial": (polynomial, 4),
    "convolution": (convolution, 6), "spectral_loss": (spectral_loss, 8),
    "spectral_filter": (spectral_filter, 12), "cumulative_product": (cumulative_product, 5),
    "trimmed_mean": (trimmed_mean, 6), "newton_sqrt": (newton_sqrt, 4),
    "branchy": (branchy, 5), "finite_differences": (finite_differences, 6),
    "statistics": (statistics, 6), "inverse_trace": (inverse_trace, 9),
    "kernel_ridge": (kernel_ridge, 4), "bilinear_einsum": (bilinear_einsum, 11),
    "smallest_eigenvalue": (smallest_eigenvalue, 9), "stacked_features": (stacked_features, 4),
    "log_sum_exp": (log_sum_exp, 5),
}
