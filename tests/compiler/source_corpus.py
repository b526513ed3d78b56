"""Small numpy functions the source pass must make differentiable under ``pb.grad``
(tests/compiler/test_source_pass.py checks each against finite differences).

Plain numpy code, as numpy users write it: each takes one float64 array and returns a
scalar, and means the same run on arrays as traced. ``source_corpus_alias.py`` holds
more, in a module that knows numpy only as ``xp``.
"""

import numpy as jnp
import numpy as np
from numpy import concatenate, stack, zeros, zeros_like

import pullback as pb

from . import source_corpus_alias as alias


# ---------------------------------------------------------- lists made into arrays
def array_of_products(x):
    return np.sum(np.array([x[0] * x[1], x[2]]) ** 2)


def asarray_of_products(x):
    return np.sum(np.asarray([x[0] * x[1], x[2]]) ** 2)


def stack_of_products(x):
    return np.sum(np.stack([x[0] * x[1], x[2]]) ** 2)


def sum_of_list(x):
    a = x[0] * x[1]
    return np.sum([1.0, a * a])


def mean_of_list(x):
    return np.mean([x[0], x[1] ** 2, 3.0]) * x[2]


def nested_list_matrix(x):
    m = np.array([[x[0], x[1]], [x[1] * x[2], 1.0]])
    return np.sum(m @ m)


def tuple_of_values(x):
    return np.sum(np.array((x[0], x[1] + 1.0)) ** 3)


def comprehension(x):
    return np.sum(np.array([x[i] * (i + 1) for i in range(3)]) ** 2)


def ufunc_on_list(x):
    return np.sum(np.tanh([x[0], x[1] * x[2]]))


def dot_with_lists(x):
    return np.dot(np.array([x[0], x[1]]), [2.0, 3.0]) * x[2]


def stack_rows_axis1(x):
    m = np.stack([x[0], x[1] * 2.0, x[2] ** 2], axis=1)
    return np.sum(m * np.arange(6.0).reshape(2, 3))


def concatenate_pieces(x):
    return np.sum(concatenate([x[:1] * 2.0, x[1:] ** 2, [1.0]]) ** 2)


def hstack_and_vstack(x):
    row = np.hstack([x[0], x[1:] * 3.0])
    grid = np.vstack([row, x ** 2])
    return np.sum(grid * grid[::-1])


def array_of_rows(x):
    return np.sum(np.array([x[0], x[1] * x[0], [1.0, 2.0]]) ** 2)


# ------------------------------------------------------- buffers filled in loops
def rows_into_buffer(x):
    n = x.shape[0]
    h = np.zeros((n, 3))
    for t in range(n):
        h[t] = x[t]
    return np.sum(np.tanh(h) ** 2)


def zeros_like_scaled(x):
    y = np.zeros_like(x)
    for i in range(len(x)):
        y[i] = x[i] * (i + 1)
    return np.sum(y * y)


def ones_buffer(x):
    b = np.ones(3)
    b[1] = x[0] * x[1]
    return np.sum(b * x)


def empty_then_filled(x):
    b = np.empty(3)
    b[:] = x ** 2
    return np.sum(b * x)


def full_buffer(x):
    b = np.full((2, 3), 0.5)
    b[1] = x
    b[0, 1] = x[2] * x[0]
    return np.sum(b ** 2)


def running_sums(x):
    c = zeros_like(x)
    acc = 0.0
    for i in range(x.shape[0]):
        acc = acc + x[i]
        c[i] = acc
    return np.sum(c * c)


def slices_written(x):
    h = zeros(5)
    h[1:3] = x[:2] * 2.0
    h[::4] = x[2]
    h[-2:] += x[1:] ** 2
    return np.sum(h * np.arange(1.0, 6.0))


def columns_written(x):
    b = np.zeros((3, 2))
    b[:, 0] = x[:, 0] * x[:, 1]
    b[:, 1] = np.tanh(x[:, 1])
    return np.sum(b @ np.array([1.0, -2.0]))


def augmented_cells(x):
    b = np.zeros(3)
    for i in range(3):
        b[i] += x[i] * x[i]
        b[i] *= 2.0
    return np.sum(b)


def recurrence_in_buffer(x):
    n = x.shape[0]
    h = np.zeros((n + 1, 2))
    for t in range(n):
        h[t + 1] = np.tanh(h[t] * 0.5 + x[t])
    return np.sum(h[1:] ** 2)


def _filled(h, x):
    for t in range(x.shape[0]):
        h[t] = x[t] * (t + 1)
    return np.sum(np.tanh(h) ** 2)


def fill_zeros(x):
    h = np.zeros((x.shape[0], 3))
    return _filled(h, x)


def fill_ones(x):
    h = np.ones((x.shape[0], 3))
    return _filled(h, x)


def fill_empty(x):
    h = np.empty((x.shape[0], 3))
    return _filled(h, x)


def fill_full(x):
    h = np.full((x.shape[0], 3), 2.0)
    return _filled(h, x)


def fill_zeros_like(x):
    h = np.zeros_like(x)
    return _filled(h, x)


def fill_ones_like(x):
    h = np.ones_like(x)
    return _filled(h, x)


def fill_empty_like(x):
    h = np.empty_like(x)
    return _filled(h, x)


def fill_full_like(x):
    h = np.full_like(x, 0.5)
    return _filled(h, x)


# ---------------------------------------------------------------- control flow
def branches(x):
    if x[0] > 0:
        y = np.array([x[0], x[1] * 2.0])
    else:
        y = np.array([x[1], x[0]])
    return np.sum(y ** 2)


def while_loop(x):
    i, acc = 0, zeros(2)
    while i < 3:
        acc = acc + np.array([x[i], x[i] ** 2])
        i += 1
    return np.sum(acc * acc)


def early_return(x):
    parts = []
    for v in x:
        if len(parts) == 2:
            return np.sum(np.array(parts) ** 2)
        parts.append(v * 3.0)
    return np.sum(parts)


# --------------------------------------------------------- helpers of the loss
def step(h, x):
    return np.tanh(h * 0.5 + x)


def rnn(x):
    h = zeros(3)
    hs = []
    for t in range(x.shape[0]):
        h = step(h, x[t])
        hs.append(h)
    return np.sum(stack(hs) ** 2)


def fill_squares(buf, values):
    for i in range(len(values)):
        buf[i] = values[i] * values[i]
    return buf


def helper_fills_buffer(x):
    b = np.zeros(3)
    fill_squares(b, x)
    return np.sum(b * x)


def pairs(x):
    return np.array([[x[0], x[1]], [x[2], x[0] * x[1]]])


def helper_builds_array(x):
    return np.sum(pairs(x) ** 2)


def outer_helper(x):
    return np.sum(np.array([step(x[0], x[1]), x[2]]))


def helper_chain(x):
    return np.sum(outer_helper(x) * pairs(x))


class Model:
    def __init__(self):
        self.__scale = np.array([1.0, 2.0, 3.0])

    def features(self, x):
        return np.array([x[0] * self.__scale[0], x[1] * x[2]])

    def __call__(self, x):
        return np.sum(self.features(x) ** 2)


MODEL = Model()


def method_helper(x):
    return MODEL.features(x).sum() + MODEL(x)


# ------------------------------------------------------------------- aliases
def alias_jnp(x):
    return jnp.sum(jnp.array([x[0], x[1] * x[2]]) ** 2)


def imports_inside(x):
    import numpy as onp
    from numpy import stack as st
    return onp.sum(st([x, x * 2.0]) ** 2)


# ------------------------------------------------------- writes into arguments
def writes_argument(x):
    x[0] = x[1] * x[2]
    return np.sum(x ** 2)


def augments_argument(x):
    x += 1.0
    x[1:] *= x[0]
    return np.sum(x * x)


# ----------------------------------------------- control flow on shapes and values
def by_rank(x):
    if x.ndim == 2:
        return np.sum(x[0] * x[-1])
    return np.sum(x * x)


def by_column_parity(x):
    n, m = x.shape
    acc = 0.0
    for j in range(m):
        if j % 2 == 0:
            acc = acc + np.sum(x[:, j] ** 2)
        else:
            acc = acc - np.sum(x[:, j]) * 0.5 / n
    return acc


def piecewise_by_value(x):
    total = 0.0
    for i in range(len(x)):
        if x[i] > 0.6:
            total = total + x[i] ** 2
        elif x[i] > 0.4:
            total = total + np.sin(x[i])
        else:
            total = total - x[i]
    return total


def halve_until_small(x):
    y = x
    steps = 0
    while np.max(np.abs(y)) > 0.1:
        y = y * 0.5
        steps += 1
    return np.sum(y ** 2) * steps


def loop_count_from_value(x):
    n = int(x[0] * 4) + 1
    acc = x[1]
    for _ in range(n):
        acc = np.tanh(acc * 1.5 + x[2])
    return acc


def break_and_continue(x):
    total = 0.0
    for i in range(len(x) - 1):
        if i % 2 == 1:
            continue
        if i > 3:
            break
        total = total + x[i] * x[i + 1]
    return total


def conditional_expression(x):
    a = x[0] * 2.0 if x[0] < x[1] else x[1] * 3.0
    return a * x[2]


def iterate_rows(x):
    total = 0.0
    for row in x:
        total = total + np.sum(row ** 3)
    return total


def zip_and_enumerate(x):
    total = 0.0
    for i, (a, b) in enumerate(zip(x[0], x[1])):
        total = total + (i + 1) * a * b
    return total


def all_pairs_loop(x):
    n = x.shape[0]
    total = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            total = total + (x[i] - x[j]) ** 2
    return total


def while_doubling(x):
    i = 0
    acc = x[0]
    while i < len(x) - 1 and acc < 5.0:
        acc = acc * 2.0 + x[i + 1]
        i += 1
    return acc


# ------------------------------------------------------------ subscripts and slices
def interior_laplacian(x):
    lap = x[:-2] - 2.0 * x[1:-1] + x[2:]
    return np.sum(lap ** 2)


def even_times_odd(x):
    return np.sum(x[::2] * x[1::2])


def first_and_last_columns(x):
    return np.sum(x[:, 0] * x[:, -1]) + np.sum(x[0, :] ** 2)


def reversed_product(x):
    return np.sum(x[::-1] * x)


def new_axes(x):
    table = x[:, None] * x[None, :]
    return np.sum(table * np.reshape(np.arange(9.0), (3, 3)))


def ellipsis_newaxis(x):
    return np.sum(x[..., np.newaxis] * x[np.newaxis, ...] ** 2)


def constant_mask(x):
    mask = np.arange(5) % 2 == 0
    return np.sum(x[mask] ** 2) - np.sum(x[~mask])


def triangle_mask(x):
    upper = np.arange(3)[:, None] < np.arange(3)[None, :]
    return np.sum(x[upper] * 2.0) + np.sum(np.where(upper, 0.0, x) ** 2)


def fancy_rows(x):
    order = np.array([3, 0, 2])
    return np.sum(x[order] * x[[0, 1, 2]])


def fancy_pairs(x):
    rows = np.array([0, 1, 2])
    cols = np.array([2, 0, 1])
    return np.sum(x[rows, cols] ** 2) + x[1, 1]


def repeated_gather(x):
    idx = [0, 0, 2, 1, 0]
    return np.sum(x[idx] ** 2)


def masked_write(x):
    b = np.zeros(5)
    keep = np.arange(5) >= 2
    b[keep] = x[keep] * 3.0
    return np.sum(b * x)


def fancy_write(x):
    b = np.ones(6)
    b[[0, 2, 5]] = x[:3] ** 2
    return np.sum(b * np.arange(6.0))


def block_write(x):
    b = np.zeros((4, 4))
    b[1:, :3] = x * 2.0
    b[0, :] = 1.0
    b[1:, 3] = x[:, 0]
    return np.sum(b @ b)


# ------------------------------------------------------- lists made into arrays
def appended_columns(x):
    cols = []
    for k in range(1, 4):
        cols.append(x ** k)
    m = np.stack(cols, axis=1)
    return np.sum(m @ np.array([1.0, -1.0, 0.5]))


def array_of_row_sums(x):
    sums = np.array([np.sum(x[i]) for i in range(x.shape[0])])
    return np.sum(sums ** 2)


def sum_of_list_along_axis(x):
    return np.sum(np.sum([x, x ** 2, np.exp(x)], axis=0) ** 2)


def mean_of_list_of_rows(x):
    avg = np.mean([x[0], x[1] ** 2], axis=0)
    return np.sum(avg * avg)


def concatenate_columns(x):
    m = np.concatenate([x, x ** 2, np.ones((2, 1))], axis=1)
    return np.sum(m @ np.transpose(m))


def vstack_in_loop(x):
    rows = []
    for k in range(3):
        rows.append(np.tanh(x * (k + 1)))
    return np.sum(np.vstack(rows) ** 2)


def nested_comprehension(x):
    m = np.array([[x[i] * x[j] for j in range(3)] for i in range(3)])
    return np.sum(m * np.eye(3)) + np.sum(m[0])


def max_of_list(x):
    return np.max([x[0] * 2.0, x[1], x[2] ** 2])


def hstack_scalars(x):
    v = np.hstack([x[0] * 2.0, x[1:], 1.0])
    return np.sum(v ** 2)


# ------------------------------------------------------- buffers filled in loops
def rbf_kernel_matrix(x):
    n = len(x)
    k = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            k[i, j] = np.exp(-(x[i] - x[j]) ** 2)
    return np.sum(k @ x)


def empty_rows_from_lists(x):
    out = np.empty((3, 2))
    for i in range(3):
        out[i] = np.array([x[i], x[i] ** 2])
    return np.sum(out[:, 0] * out[:, 1])


def full_accumulated(x):
    acc = np.full(3, 2.0)
    for k in range(3):
        acc += x * (k + 1)
    return np.sum(acc ** 2)


def moving_average(x):
    ema = np.zeros_like(x)
    ema[0] = x[0]
    for t in range(1, len(x)):
        ema[t] = 0.9 * ema[t - 1] + 0.1 * x[t]
    return np.sum(ema ** 2)


def cumulative_product(x):
    p = np.ones(len(x) + 1)
    for i in range(len(x)):
        p[i + 1] = p[i] * x[i]
    return np.sum(p)


def diagonal_writes(x):
    d = np.zeros((3, 3))
    for i in range(3):
        d[i, i] = x[i]
        if i > 0:
            d[i, i - 1] = x[i] * x[i - 1]
    return np.sum(d @ d)


def rows_accumulated(x):
    b = np.zeros((3, 2))
    for i in range(3):
        b[i] += x[i] * 2.0
        b[i, 1] -= x[i, 0]
    return np.sum(b ** 2)


def buffers_with_dtypes(x):
    b = np.zeros(3, dtype=np.float64)
    c = np.ones((3,), dtype=float)
    b[:] = x
    c[1:] = x[:2] * 2.0
    return np.sum(b * c)


def zeros_like_columns(x):
    y = np.zeros_like(x)
    y[:, 0] = x[:, 1] ** 2
    y[:, 1] = x[:, 0] * x[:, 1]
    return np.sum(y)


def buffer_by_halves(x):
    out = np.zeros(8)
    out[:4] = x
    out[4:] = x[::-1] * 2.0
    return np.sum(out[1:] * out[:-1])


def _table(x):
    table = np.zeros((len(x), 2))
    for i in range(len(x)):
        table[i, 0] = x[i]
        table[i, 1] = x[i] ** 2
    return table


def helper_returns_buffer(x):
    t = _table(x)
    return np.sum(t[:, 0] * t[:, 1])


def _fill_rows(buf, x):
    for i in range(buf.shape[0]):
        buf[i, :] = x[i] * 0.5


def helper_fills_rows(x):
    b = np.ones((3, 2))
    _fill_rows(b, x)
    return np.sum(b ** 3)


def _zeros_state(n):
    return np.zeros((n, 2))


def helper_makes_buffer(x):
    s = _zeros_state(len(x))
    for i in range(len(x)):
        s[i] = np.array([x[i], x[i] ** 2])
    return np.sum(s ** 2)


def rotation_from_eye(x):
    r = np.eye(2)
    r[0, 0] = np.cos(x[0])
    r[0, 1] = -np.sin(x[0])
    r[1, 0] = np.sin(x[0])
    r[1, 1] = np.cos(x[0])
    return np.sum((r @ x[1:]) * np.array([1.0, 2.0]))


def constant_array_then_written(x):
    out = np.array([0.0, 1.0, 0.0])
    out[1] = x[0] * 2.0
    return np.sum(out * x)


def grid_then_written(x):
    grid = np.linspace(0.0, 1.0, 4)
    grid[1:3] = x[:2] ** 2
    return np.sum(grid * x[2])


def old_element_kept(x):
    u = np.zeros(len(x))
    u[0] = x[0]
    total = 0.0
    for i in range(1, len(x)):
        prev = u[i - 1]
        u[i - 1] = prev * 0.5 + x[i]
        u[i] = prev * x[i]
        total = total + prev * u[i - 1]
    return total + np.sum(u ** 2)


def thomas_solve(x):
    """The tridiagonal system with 2 on the diagonal and -1 beside it, solved for x."""
    n = len(x)
    c = np.zeros(n)
    d = np.zeros(n)
    c[0] = -0.5
    d[0] = x[0] / 2.0
    for i in range(1, n):
        m = 2.0 + c[i - 1]
        c[i] = -1.0 / m
        d[i] = (x[i] + d[i - 1]) / m
    u = np.zeros(n)
    u[-1] = d[-1]
    for i in range(n - 2, -1, -1):
        u[i] = d[i] - c[i] * u[i + 1]
    return np.sum(u * np.arange(1.0, n + 1))


def gauss_seidel(x):
    a = np.array([[4.0, 1.0, 0.0], [1.0, 4.0, 1.0], [0.0, 1.0, 4.0]])
    u = np.zeros(3)
    for _ in range(5):
        for i in range(3):
            s = x[i]
            for j in range(3):
                if j != i:
                    s = s - a[i, j] * u[j]
            u[i] = s / a[i, i]
    return np.sum(u ** 2)


# ------------------------------------------------------- writes into arguments
def writes_argument_slice(x):
    x[1:] = x[:-1] * 2.0
    return np.sum(x ** 2)


def writes_argument_row(x):
    x[0] = x[1] * x[2]
    return np.sum(x ** 2)


def augments_argument_slice(x):
    x[:2] += x[2]
    return np.sum(x ** 3)


def writes_argument_column(x):
    x[:, 0] = np.tanh(x[:, 1])
    return np.sum(x * x)


def scales_argument(x):
    x *= 2.0
    x -= np.mean(x)
    return np.sum(x ** 3)


def prefix_sums_in_place(x):
    for i in range(1, len(x)):
        x[i] += x[i - 1]
    return np.sum(x ** 2)


def masked_argument_write(x):
    x[np.arange(4) % 2 == 1] *= 3.0
    return np.sum(x ** 2)


def bubble_pass(x):
    for i in range(len(x) - 1):
        if x[i] > x[i + 1]:
            tmp = x[i]
            x[i] = x[i + 1]
            x[i + 1] = tmp
    return np.sum(x * np.arange(1.0, len(x) + 1))


def reverse_in_place(x):
    n = len(x)
    for i in range(n // 2):
        x[i], x[n - 1 - i] = x[n - 1 - i], x[i]
    return np.sum(x * np.arange(1.0, n + 1) ** 2)


def _center(v):
    v -= np.mean(v)


def helper_centers_argument(x):
    _center(x)
    return np.sum(x ** 3)


def _normalize_rows(m):
    for i in range(m.shape[0]):
        m[i] /= np.sqrt(np.sum(m[i] ** 2))
    return m


def helper_normalizes_rows(x):
    y = _normalize_rows(x)
    return np.sum(y[0] * y[1]) + np.sum(x[:, 0])


# ------------------------------------------------------------------------ linalg
def matrix_vector(x):
    v = np.array([1.0, -2.0, 0.5])
    return np.sum((x @ v) ** 2)


def quadratic_form(x):
    a = np.array([[2.0, 0.5, 0.0], [0.5, 1.0, 0.2], [0.0, 0.2, 3.0]])
    return x @ a @ x


def dot_products(x):
    return np.dot(x[0], x[1]) + np.dot(x[0], x[0]) * 0.5


def matmul_chain(x):
    return np.sum(np.matmul(x, np.matmul(x, x)))


def gram_matrix(x):
    g = np.transpose(x) @ x
    return np.sum(g ** 2)


def batched_matmul(x):
    return np.sum(x @ x)


def dot_matrix_vector(x):
    w = np.array([[0.5, -1.0, 2.0], [1.0, 0.0, -0.5]])
    return np.sum(np.tanh(np.dot(w, x)))


# -------------------------------------------------------------------- reductions
def sums_over_axes(x):
    return np.sum(np.sum(x, axis=0) ** 2) + np.sum(np.sum(x, axis=1) ** 3)


def centered_by_keepdims(x):
    centered = x - np.mean(x, axis=1, keepdims=True)
    return np.sum(centered ** 2)


def max_and_min_over_axes(x):
    return np.sum(np.max(x, axis=0)) - np.sum(np.min(x, axis=1) ** 2)


def shifted_by_max(x):
    shifted = x - np.max(x, axis=-1, keepdims=True)
    return np.sum(np.exp(shifted) * np.arange(4.0))


def amax_times_amin(x):
    return np.amax(x) * np.amin(x)


def variance_by_hand(x):
    mu = np.mean(x)
    return np.mean((x - mu) ** 2)


def sum_over_two_axes(x):
    return np.sum(np.sum(x ** 2, axis=(0, 2)) * np.array([1.0, 2.0, 3.0]))


# ---------------------------------------------------- broadcasting and elementwise
def broadcast_affine(x):
    w = np.array([[0.5, -1.0]])
    b = np.array([0.1, 0.2, 0.3])[:, None]
    return np.sum((x * w + b) ** 2)


def relu_by_maximum(x):
    return np.sum(np.maximum(x - 0.6, 0.0) ** 2)


def capped_by_minimum(x):
    return np.sum(np.minimum(x, 0.7) * x)


def clipped(x):
    return np.sum(np.clip(x * 2.0, 0.5, 1.5) ** 2)


def where_constant_condition(x):
    cond = np.array([True, False, True, False])
    return np.sum(np.where(cond, x ** 2, -x))


def where_on_values(x):
    return np.sum(np.where(x > 0.5, np.sqrt(x), x ** 2))


def huber(x):
    r = np.abs(x - 0.6)
    return np.sum(np.where(r < 0.2, 0.5 * r ** 2, 0.2 * (r - 0.1)))


def softplus_and_friends(x):
    return np.sum(np.log(1.0 + np.exp(x)) + np.tanh(x) * np.sqrt(x))


def abs_times_sign(x):
    return np.sum(np.abs(x - 0.5) * np.sign(x - 0.1))


def trigonometry(x):
    return np.sum(np.sin(x) * np.cos(2.0 * x))


def powers(x):
    return np.sum(np.power(x, 3) + np.square(x) + x ** 0.5)


def reciprocals(x):
    return np.sum(1.0 / x + x / (1.0 + x))


# ------------------------------------------------------ helpers calling helpers
_RNG = np.random.default_rng(7)
LAYERS = [(_RNG.normal(size=(3, 4)), _RNG.normal(size=4)),
          (_RNG.normal(size=(4, 2)), _RNG.normal(size=2))]


def _affine(x, w, b):
    return x @ w + b


def _layer(x, w, b):
    return np.tanh(_affine(x, w, b))


def _mlp(x, layers):
    for w, b in layers:
        x = _layer(x, w, b)
    return x


def mlp_of_helpers(x):
    return np.sum(_mlp(x, LAYERS) ** 2)


def _norm(v, p=2.0, eps=1e-3):
    return np.sum(np.abs(v) ** p + eps) ** (1.0 / p)


def default_arguments(x):
    return _norm(x) + _norm(x, 3.0)


def keyword_only_default(x, *, temperature=0.5):
    z = x / temperature
    return np.log(np.sum(np.exp(z)))


# ----------------------------------------------------------------- recurrences
def rnn_with_weights(x):
    w = np.array([[0.5, -0.3], [0.2, 0.4]])
    u = np.array([[1.0, 0.5], [-0.5, 1.0]])
    h = np.zeros(2)
    for t in range(x.shape[0]):
        h = np.tanh(w @ h + u @ x[t])
    return np.sum(h ** 2)


def gated_recurrence(x):
    h = np.zeros(3)
    for t in range(len(x)):
        z = 1.0 / (1.0 + np.exp(-(x[t] + h)))
        h = (1.0 - z) * h + z * np.tanh(x[t] * 2.0 - h)
    return np.sum(h)


def rnn_states_in_buffer(x):
    w = np.array([[0.8, -0.2], [0.3, 0.5]])
    states = np.zeros((x.shape[0] + 1, 2))
    for t in range(x.shape[0]):
        states[t + 1] = np.tanh(states[t] @ w + x[t])
    return np.sum(np.mean(states[1:], axis=0) ** 2)


# ------------------------------------------------------------------------ physics
def spring_chain_energy(x):
    k, rest = 2.0, 0.3
    stretch = x[1:] - x[:-1] - rest
    return 0.5 * k * np.sum(stretch ** 2)


def spring_chain_2d(x):
    energy = 0.0
    for i in range(len(x) - 1):
        d = x[i + 1] - x[i]
        length = np.sqrt(np.sum(d ** 2))
        energy = energy + 0.5 * (length - 0.5) ** 2
    return energy


def euler_oscillator(x):
    dt = 0.1
    pos, vel = x[0], x[1]
    for _ in range(20):
        acc = -4.0 * pos - 0.1 * vel
        pos = pos + dt * vel
        vel = vel + dt * acc
    return pos ** 2 + vel ** 2


def euler_pendulum_trajectory(x):
    n, dt = 10, 0.05
    traj = np.zeros((n + 1, 2))
    traj[0] = x
    for i in range(n):
        p, v = traj[i, 0], traj[i, 1]
        traj[i + 1] = np.array([p + dt * v, v - dt * np.sin(p)])
    return np.sum(traj[:, 0] ** 2)


def projectile_range(x):
    pos = np.array([0.0, 0.0])
    vel = x * 5.0
    dt, steps = 0.05, 0
    while pos[1] >= 0.0 and steps < 200:
        vel = vel + dt * np.array([0.0, -9.8])
        pos = pos + dt * vel
        steps += 1
    return pos[0]


def lennard_jones(x):
    energy = 0.0
    for i in range(len(x)):
        for j in range(i + 1, len(x)):
            r2 = np.sum((x[i] - x[j]) ** 2) + 0.5
            inv6 = 1.0 / r2 ** 3
            energy = energy + inv6 ** 2 - inv6
    return energy


# -------------------------------------------------------------------- statistics
def logsumexp_by_hand(x):
    m = np.max(x)
    return m + np.log(np.sum(np.exp(x - m)))


def softmax_cross_entropy(x):
    labels = np.array([2, 0])
    z = x - np.max(x, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.mean(logp[np.arange(2), labels])


def softmax_expectation(x):
    e = np.exp(x - np.max(x))
    p = e / np.sum(e)
    return np.sum(p * np.arange(len(x)))


def gaussian_nll(x):
    data = np.array([0.1, 0.5, 0.9, 1.3])
    mu, log_sigma = x[0], x[1]
    z = (data - mu) / np.exp(log_sigma)
    return -np.sum(-0.5 * z ** 2 - log_sigma - 0.5 * np.log(2 * np.pi))


def logistic_regression_nll(x):
    features = np.array([[1.0, 0.5, -0.2], [1.0, -1.0, 0.3], [1.0, 0.2, 0.8],
                         [1.0, 1.5, -0.7]])
    labels = np.array([1.0, 0.0, 1.0, 0.0])
    z = features @ x
    return np.sum(np.log(1.0 + np.exp(z)) - labels * z)


def poisson_nll(x):
    counts = np.array([1.0, 3.0, 0.0, 2.0])
    return -np.sum(counts * x - np.exp(x))


def weighted_variance(x):
    w = np.array([0.1, 0.2, 0.3, 0.4])
    m = np.sum(w * x) / np.sum(w)
    return np.sum(w * (x - m) ** 2)


def standardized_cubes(x):
    centered = x - np.mean(x)
    z = centered / np.sqrt(np.mean(centered ** 2) + 1e-3)
    return np.sum(z ** 3)


# -------------------------------------------------------------------- polynomials
def horner_coefficients(x):
    t = np.array([0.5, -1.0, 2.0])
    acc = np.zeros_like(t)
    for c in x:
        acc = acc * t + c
    return np.sum(acc ** 2)


def horner_at_point(x):
    y = 0.0
    for c in [1.0, -2.0, 0.5, 3.0]:
        y = y * x[0] + c
    return y * x[1]


def polynomial_features(x):
    feats = np.stack([np.ones_like(x), x, x ** 2, x ** 3], axis=1)
    return np.sum((feats @ np.array([0.5, -1.0, 2.0, 0.1])) ** 2)


# ------------------------------------------------------------ pairwise distances
def pairwise_by_broadcasting(x):
    d = x[:, None, :] - x[None, :, :]
    return np.sum(np.exp(-np.sum(d ** 2, axis=-1)))


def pairwise_in_loops(x):
    n = len(x)
    dist = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            if i != j:
                dist[i, j] = np.sqrt(np.sum((x[i] - x[j]) ** 2))
    return np.sum(dist * dist) + np.sum(dist)


def pairwise_by_expansion(x):
    sq = np.sum(x ** 2, axis=1)
    d2 = sq[:, None] + sq[None, :] - 2.0 * x @ np.transpose(x)
    return np.sum(np.exp(-d2))


# -------------------------------------------------------- transforms inside losses
def _potential(x):
    energy = np.zeros(len(x))
    for i in range(len(x)):
        energy[i] = x[i] ** 3 - x[i]
    return np.sum(energy)


def gradient_norm(x):
    g = pb.grad(_potential)(x)
    return np.sum(g ** 2)


def value_plus_gradient_penalty(x):
    v, g = pb.value_and_grad(_potential)(x)
    return v + 0.1 * np.sum(g * g)


def unrolled_descent(x):
    for _ in range(3):
        x = x - 0.1 * pb.grad(_potential)(x)
    return np.sum(x ** 2)


# ------------------------------------------------------ another module's numpy alias
def moments_from_alias_module(x):
    return alias.variance_from_moments(x) + alias.soft_features(x)


def alias_module_default_argument(x):
    return alias.scaled_rows(x)


def polyval_from_alias_module(x):
    return np.sum(alias.polyval(x, np.array([0.5, -1.5])) ** 2)


#: (function, shape of its argument)
CASES = [
    (array_of_products, (3,)), (asarray_of_products, (3,)), (stack_of_products, (3,)),
    (sum_of_list, (3,)), (mean_of_list, (3,)), (nested_list_matrix, (3,)),
    (tuple_of_values, (2,)), (comprehension, (3,)), (ufunc_on_list, (3,)),
    (dot_with_lists, (3,)), (stack_rows_axis1, (3, 2)), (concatenate_pieces, (3,)),
    (hstack_and_vstack, (3,)), (array_of_rows, (2, 2)),
    (appended_columns, (3,)), (array_of_row_sums, (3, 4)), (sum_of_list_along_axis, (3,)),
    (mean_of_list_of_rows, (2, 3)), (concatenate_columns, (2, 2)), (vstack_in_loop, (3,)),
    (nested_comprehension, (3,)), (max_of_list, (3,)), (hstack_scalars, (3,)),
    # buffers
    (rows_into_buffer, (4, 3)), (zeros_like_scaled, (4,)), (ones_buffer, (3,)),
    (empty_then_filled, (3,)), (full_buffer, (3,)), (running_sums, (4,)),
    (slices_written, (3,)), (columns_written, (3, 2)), (augmented_cells, (3,)),
    (recurrence_in_buffer, (3, 2)),
    (fill_zeros, (2, 3)), (fill_ones, (2, 3)), (fill_empty, (2, 3)), (fill_full, (2, 3)),
    (fill_zeros_like, (2, 3)), (fill_ones_like, (2, 3)), (fill_empty_like, (2, 3)),
    (fill_full_like, (2, 3)),
    (rbf_kernel_matrix, (4,)), (empty_rows_from_lists, (3,)), (full_accumulated, (3,)),
    (moving_average, (5,)), (cumulative_product, (4,)), (diagonal_writes, (3,)),
    (rows_accumulated, (3, 2)), (buffers_with_dtypes, (3,)), (zeros_like_columns, (3, 2)),
    (buffer_by_halves, (4,)), (helper_returns_buffer, (4,)), (helper_fills_rows, (3, 2)),
    (helper_makes_buffer, (3,)), (rotation_from_eye, (3,)),
    (constant_array_then_written, (3,)), (grid_then_written, (3,)),
    (old_element_kept, (4,)), (thomas_solve, (5,)), (gauss_seidel, (3,)),
    # control flow
    (branches, (3,)), (while_loop, (3,)), (early_return, (3,)),
    (by_rank, (2, 3)), (by_column_parity, (3, 4)), (piecewise_by_value, (5,)),
    (halve_until_small, (3,)), (loop_count_from_value, (3,)), (break_and_continue, (7,)),
    (conditional_expression, (3,)), (iterate_rows, (3, 2)), (zip_and_enumerate, (2, 3)),
    (all_pairs_loop, (4,)), (while_doubling, (4,)),
    # subscripts and slices
    (interior_laplacian, (5,)), (even_times_odd, (6,)), (first_and_last_columns, (3, 3)),
    (reversed_product, (4,)), (new_axes, (3,)), (ellipsis_newaxis, (3,)),
    (constant_mask, (5,)), (triangle_mask, (3, 3)), (fancy_rows, (4, 2)),
    (fancy_pairs, (3, 3)), (repeated_gather, (3,)), (masked_write, (5,)),
    (fancy_write, (4,)), (block_write, (3, 3)),
    # helpers
    (rnn, (4, 3)), (helper_fills_buffer, (3,)), (helper_builds_array, (3,)),
    (helper_chain, (3,)), (method_helper, (3,)), (mlp_of_helpers, (2, 3)),
    (default_arguments, (3,)), (keyword_only_default, (4,)),
    # aliases
    (alias_jnp, (3,)), (imports_inside, (2,)), (moments_from_alias_module, (3,)),
    (alias_module_default_argument, (3, 2)), (polyval_from_alias_module, (4,)),
    # writes into arguments
    (writes_argument, (3,)), (augments_argument, (3,)), (writes_argument_slice, (4,)),
    (writes_argument_row, (3, 2)), (augments_argument_slice, (3,)),
    (writes_argument_column, (3, 2)), (scales_argument, (4,)), (prefix_sums_in_place, (4,)),
    (masked_argument_write, (4,)), (bubble_pass, (5,)), (reverse_in_place, (5,)),
    (helper_centers_argument, (4,)),
    (helper_normalizes_rows, (2, 3)),
    # linalg
    (matrix_vector, (2, 3)), (quadratic_form, (3,)), (dot_products, (2, 3)),
    (matmul_chain, (2, 2)), (gram_matrix, (3, 2)), (batched_matmul, (2, 2, 2)),
    (dot_matrix_vector, (3,)),
    # reductions
    (sums_over_axes, (2, 3)), (centered_by_keepdims, (3, 4)), (max_and_min_over_axes, (3, 4)),
    (shifted_by_max, (2, 4)), (amax_times_amin, (5,)), (variance_by_hand, (5,)),
    (sum_over_two_axes, (2, 3, 2)),
    # broadcasting and elementwise
    (broadcast_affine, (3, 2)), (relu_by_maximum, (4,)), (capped_by_minimum, (4,)),
    (clipped, (4,)), (where_constant_condition, (4,)), (where_on_values, (4,)),
    (huber, (5,)), (softplus_and_friends, (3,)), (abs_times_sign, (4,)),
    (trigonometry, (3,)), (powers, (3,)), (reciprocals, (3,)),
    # recurrences, physics, statistics, polynomials, distances
    (rnn_with_weights, (4, 2)), (gated_recurrence, (3, 3)), (rnn_states_in_buffer, (4, 2)),
    (spring_chain_energy, (5,)), (spring_chain_2d, (4, 2)), (euler_oscillator, (2,)),
    (euler_pendulum_trajectory, (2,)), (projectile_range, (2,)), (lennard_jones, (3, 2)),
    (logsumexp_by_hand, (5,)), (softmax_cross_entropy, (2, 3)), (softmax_expectation, (4,)),
    (gaussian_nll, (2,)), (logistic_regression_nll, (3,)), (poisson_nll, (4,)),
    (weighted_variance, (4,)), (standardized_cubes, (5,)),
    (horner_coefficients, (4,)), (horner_at_point, (2,)), (polynomial_features, (3,)),
    (pairwise_by_broadcasting, (4, 2)), (pairwise_in_loops, (3, 2)),
    (pairwise_by_expansion, (4, 2)),
    # transforms inside the loss
    (gradient_norm, (3,)), (value_plus_gradient_penalty, (3,)), (unrolled_descent, (3,)),
]

#: the functions that write into their argument (``pb.compile`` refuses them)
WRITES_ARGUMENT = [
    writes_argument, augments_argument, writes_argument_slice, writes_argument_row,
    augments_argument_slice, writes_argument_column, scales_argument, prefix_sums_in_place,
    masked_argument_write, bubble_pass, reverse_in_place, helper_centers_argument,
    helper_normalizes_rows,
]

#: a function that reads an element, then writes over it, then uses what it read:
#: numpy's scalar is a copy, torch's element a view (pb.compile keeps torch's)
NUMPY_ONLY = [old_element_kept]

#: functions that write into an array after reading rows of it that their gradient
#: needs: eager execution, under torch's rules for in-place writes (pb.grad on tensors
#: that require grad, inside another trace, falling back), refuses them; traced, they run
EAGER_REFUSED = [writes_argument_row, helper_normalizes_rows]
#: on Tensors the function sees torch's face: an element read is torch's view, not
#: numpy's scalar copy, so reading x[i] and then writing into x is refused there too
TENSOR_REFUSED = EAGER_REFUSED + [writes_argument, augments_argument]
#: ... and functions whose result rests on numpy's element copies (swaps through a
#: temporary): on Tensors they compute what torch computes, another function
ELEMENT_COPIES = NUMPY_ONLY + [bubble_pass, reverse_in_place]
