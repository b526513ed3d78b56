"""Small numpy functions the source pass must make differentiable under ``pb.grad``
(tests/compiler/test_source_pass.py checks each against finite differences).

Plain numpy code: each takes float64 arrays and returns a scalar, and means the same
run on arrays as traced.
"""

import numpy as jnp
import numpy as np
from numpy import concatenate, stack, zeros, zeros_like


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


#: (function, shape of its argument)
CASES = [
    (array_of_products, (3,)), (asarray_of_products, (3,)), (stack_of_products, (3,)),
    (sum_of_list, (3,)), (mean_of_list, (3,)), (nested_list_matrix, (3,)),
    (tuple_of_values, (2,)), (comprehension, (3,)), (ufunc_on_list, (3,)),
    (dot_with_lists, (3,)), (stack_rows_axis1, (3, 2)), (concatenate_pieces, (3,)),
    (hstack_and_vstack, (3,)), (array_of_rows, (2, 2)),
    (rows_into_buffer, (4, 3)), (zeros_like_scaled, (4,)), (ones_buffer, (3,)),
    (empty_then_filled, (3,)), (full_buffer, (3,)), (running_sums, (4,)),
    (slices_written, (3,)), (columns_written, (3, 2)), (augmented_cells, (3,)),
    (recurrence_in_buffer, (3, 2)),
    (fill_zeros, (2, 3)), (fill_ones, (2, 3)), (fill_empty, (2, 3)), (fill_full, (2, 3)),
    (fill_zeros_like, (2, 3)), (fill_ones_like, (2, 3)), (fill_empty_like, (2, 3)),
    (fill_full_like, (2, 3)),
    (branches, (3,)), (while_loop, (3,)), (early_return, (3,)),
    (rnn, (4, 3)), (helper_fills_buffer, (3,)), (helper_builds_array, (3,)),
    (helper_chain, (3,)), (method_helper, (3,)),
    (alias_jnp, (3,)), (imports_inside, (2,)),
    (writes_argument, (3,)), (augments_argument, (3,)),
]
