"""Hand-written numpy forward + backward passes: the floor every contender is checked against.

Each function takes ``(params, data)`` (tuples of float32 arrays; class labels are int64)
and returns ``(loss, grads)`` with one gradient per parameter, in parameter order.
They are written the way a careful person writes them by hand: the forward keeps what the
backward needs, temporaries are updated in place where that is plain to read, and nothing
is computed twice. Derivations are in the comments; ``python benchmarks/run.py --check``
compares them against PyTorch's autograd (and every other contender).
"""

from __future__ import annotations

import numpy as np

Arrays = tuple[np.ndarray, ...]


def _tanh_grad_times(out: np.ndarray, g: np.ndarray) -> np.ndarray:
    """``g * (1 - out**2)``: the gradient through ``out = tanh(a)``, one new array."""
    d = out * out
    np.subtract(1, d, out=d)
    d *= g
    return d


def mlp(params: Arrays, data: Arrays) -> tuple[float, Arrays]:
    """``mean cross_entropy(tanh(x @ w1 + b1) @ w2 + b2, y)``.

    With p = softmax(z) and Y the one-hot labels: dL/dz = (p - Y) / n.
    """
    w1, b1, w2, b2 = params
    x, y = data
    n = x.shape[0]
    rows = np.arange(n)
    h = x @ w1
    h += b1
    np.tanh(h, out=h)
    z = h @ w2
    z += b2
    z -= z.max(axis=1, keepdims=True)          # shift: softmax and the loss are unchanged
    e = np.exp(z)
    s = e.sum(axis=1, keepdims=True)
    loss = np.mean(np.log(s[:, 0]) - z[rows, y])  # -log p[y] = log sum(e) - z[y]
    dz = e
    dz /= s                                     # p
    dz[rows, y] -= 1
    dz /= n
    dw2 = h.T @ dz
    db2 = dz.sum(axis=0)
    dh = dz @ w2.T
    da = _tanh_grad_times(h, dh)
    dw1 = x.T @ da
    db1 = da.sum(axis=0)
    return float(loss), (dw1, db1, dw2, db2)


def chain(params: Arrays, data: Arrays) -> tuple[float, Arrays]:
    """``h = tanh(h * w_i + h)`` for every w_i in params, then ``loss = h.sum()``.

    d out/d w_i = (1 - out**2) * h_in and d out/d h_in = (1 - out**2) * (w_i + 1).
    """
    (h,) = data
    hs = [h]                                    # hs[i] is the input of layer i
    for w in params:
        a = h * w
        a += h
        h = np.tanh(a, out=a)
        hs.append(h)
    loss = h.sum()
    g = np.ones_like(h)
    grads: list = [None] * len(params)
    for i in range(len(params) - 1, -1, -1):
        d = _tanh_grad_times(hs[i + 1], g)
        hs[i + 1] = None                        # free each output after its last use
        grads[i] = d * hs[i]
        g = d * params[i]
        g += d
    return float(loss), tuple(grads)


def rnn(params: Arrays, data: Arrays) -> tuple[float, Arrays]:
    """``h = tanh(x_t @ wx + h @ wh + b)`` over the steps of xs, then ``loss = mean(h**2)``."""
    wx, wh, b = params
    xs, h = data
    hs = [h]
    for x in xs:
        a = x @ wx
        a += h @ wh
        a += b
        h = np.tanh(a, out=a)
        hs.append(h)
    loss = np.mean(h * h)
    dh = h * (2 / h.size)
    dwx, dwh, db = np.zeros_like(wx), np.zeros_like(wh), np.zeros_like(b)
    for t in range(len(xs) - 1, -1, -1):
        da = _tanh_grad_times(hs[t + 1], dh)
        dwx += xs[t].T @ da
        dwh += hs[t].T @ da
        db += da.sum(axis=0)
        dh = da @ wh.T
    return float(loss), (dwx, dwh, db)


def logreg(params: Arrays, data: Arrays) -> tuple[float, Arrays]:
    """``mean(softplus(z) - y * z)`` with ``z = X @ w + b`` (binary cross-entropy with logits).

    softplus(z) = max(z, 0) + log1p(exp(-|z|)) never overflows (np.logaddexp is ~4x slower).
    dL/dz = (sigmoid(z) - y) / n; sigmoid(z) = (1 + tanh(z / 2)) / 2 never overflows.
    """
    w, b = params
    X, y = data
    n = X.shape[0]
    z = X @ w
    z += b
    t = np.abs(z)
    np.negative(t, out=t)
    np.exp(t, out=t)
    np.log1p(t, out=t)
    t += np.maximum(z, 0)
    t -= y * z
    loss = t.mean()
    dz = np.multiply(z, 0.5, out=t)             # reuse the buffer
    np.tanh(dz, out=dz)
    dz += 1
    dz *= 0.5
    dz -= y
    dz /= n
    dw = dz @ X                                 # X.T @ dz, without the transposed view
    db = dz.sum()
    return float(loss), (dw, db)


def attention(params: Arrays, data: Arrays) -> tuple[float, Arrays]:
    """``y = softmax(q @ k.T / sqrt(d)) @ v @ wo`` with q, k, v = x @ wq, wk, wv;
    ``loss = mean(y**2)``.

    Through a = softmax(s) along rows: ds = a * (da - rowsum(da * a)).
    """
    wq, wk, wv, wo = params
    (x,) = data
    scale = 1.0 / np.sqrt(x.shape[1])
    q, k, v = x @ wq, x @ wk, x @ wv
    s = q @ k.T
    s *= scale
    s -= s.max(axis=1, keepdims=True)
    a = np.exp(s, out=s)
    a /= a.sum(axis=1, keepdims=True)
    o = a @ v
    y = o @ wo
    loss = np.mean(y * y)
    dy = y * (2 / y.size)
    dwo = o.T @ dy
    do = dy @ wo.T
    da = do @ v.T
    dv = a.T @ do
    ds = da
    ds -= (da * a).sum(axis=1, keepdims=True)
    ds *= a
    ds *= scale
    dq = ds @ k
    dk = ds.T @ q
    return float(loss), (x.T @ dq, x.T @ dk, x.T @ dv, dwo)


def mlp_hvp(params: Arrays, data: Arrays, vectors: Arrays) -> tuple[float, Arrays]:
    """Exact Hessian-vector product of :func:`mlp`'s loss: H @ v for v = ``vectors``.

    Pearlmutter's R-operator, R(f) = d/de f(params + e*v) at e = 0, applied to every line
    of the forward and the backward pass of :func:`mlp`; R(grads) is H @ v.
    """
    w1, b1, w2, b2 = params
    x, y = data
    v1, c1, v2, c2 = vectors
    n = x.shape[0]
    rows = np.arange(n)
    # forward and backward, as in mlp()
    h = np.tanh(x @ w1 + b1)
    z = h @ w2 + b2
    z -= z.max(axis=1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(axis=1, keepdims=True)
    loss = -np.mean(np.log(p[rows, y]))
    dz = p.copy()
    dz[rows, y] -= 1
    dz /= n
    dh = dz @ w2.T
    t = 1 - h * h                               # tanh'(a) = 1 - h**2
    # R-forward
    rh = (x @ v1 + c1) * t                      # R(a) = x @ v1 + c1
    rz = rh @ w2 + h @ v2 + c2
    rdz = p * (rz - (p * rz).sum(axis=1, keepdims=True)) / n   # R(p) / n
    # R-backward
    hw2 = rh.T @ dz + h.T @ rdz
    hb2 = rdz.sum(axis=0)
    rdh = rdz @ w2.T + dz @ v2.T
    rda = rdh * t - 2 * dh * h * rh             # R(dh * (1 - h**2))
    return float(loss), (x.T @ rda, rda.sum(axis=0), hw2, hb2)
