"""Indexing by integer arrays the trace computed (``f[left_ix, top_ix]`` with indices
from the traced velocities, autograd's fluid simulations) is a gather that reads the
indices at run time (ops/gathering.py): one trace over many calls, not a guard per
index value. Gradients against central finite differences (float64) and eager."""

import warnings

import numpy as np
import pytest
from ops import numeric_grad

import pullback as pb
from pullback.numpy_face import to_face


def advect(f, vx, vy):
    """autograd's fluidsim.py advection, unchanged: bilinear interpolation at indices
    computed from the velocities."""
    rows, cols = f.shape
    cell_xs, cell_ys = np.meshgrid(np.arange(cols), np.arange(rows))
    center_xs = (cell_xs - vx).ravel()
    center_ys = (cell_ys - vy).ravel()
    left_ix = np.floor(center_ys).astype(int)
    top_ix = np.floor(center_xs).astype(int)
    rw = center_ys - left_ix
    bw = center_xs - top_ix
    left_ix = np.mod(left_ix, rows)
    right_ix = np.mod(left_ix + 1, rows)
    top_ix = np.mod(top_ix, cols)
    bot_ix = np.mod(top_ix + 1, cols)
    flat_f = (1 - rw) * ((1 - bw) * f[left_ix, top_ix] + bw * f[left_ix, bot_ix]) + rw * (
        (1 - bw) * f[right_ix, top_ix] + bw * f[right_ix, bot_ix])
    return np.reshape(flat_f, (rows, cols))


def simulate(v):
    vx, vy = v[0], v[1]
    smoke = np.ones(vx.shape)
    smoke[1:3] = 2.0
    for _ in range(2):
        vx, vy = advect(vx, vx, vy), advect(vy, vx, vy)
        smoke = advect(smoke, vx, vy)
    return np.sum(smoke * vy) + np.mean(vx ** 2)


def eager_grad(f, x):
    t = to_face(pb.tensor(x, requires_grad=True))
    f(t).backward()
    return t.grad.numpy()


def test_the_advection_traces_once_with_the_gradients_of_eager_and_finite_differences():
    rng = np.random.default_rng(0)
    vg = pb.value_and_grad(simulate)
    for _ in range(6):
        v = rng.standard_normal((2, 5, 6)) * 1.7 + 0.3
        value, grad = vg(v)
        np.testing.assert_allclose(value, simulate(v), rtol=1e-12)
        np.testing.assert_allclose(grad, eager_grad(simulate, v), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(grad, numeric_grad(simulate, v), rtol=1e-5, atol=1e-7)
    info = vg.cache.info
    assert (info.misses, info.recompiles, info.fallbacks) == (1, 0, 0)
    assert not [g for g in pb.compiler.inspect(vg, v).guards if "index" in g]


def test_generated_code_indexes_as_the_user_wrote():
    def f(x):
        left_ix = np.floor(x * 3).astype(int) % 2
        top_ix = (left_ix + 1) % 2
        f = x.reshape(2, 2)
        return np.sum(f[left_ix, top_ix] * x) + np.sum(f[:, left_ix[0]])
    src = pb.compiler.inspect(pb.value_and_grad(f), np.linspace(0, 1, 4)).forward
    assert "= f[left_ix, top_ix]" in src
    assert "rt.zeros_add((2, 2), np.s_[left_ix, top_ix], " in src
    assert "= f[:, " in src


def test_a_scalar_result():
    def f(x):
        i = np.argmax(x)
        y = x[i] * 2
        y += 1
        return y * x[i] + np.sum(x.reshape(2, 2)[i % 2])
    vg = pb.value_and_grad(f)
    for x in ([1.0, 3.0, 2.0, 0.0], [4.0, 3.0, 2.0, 0.0]):
        value, grad = vg(np.array(x))
        assert value == f(np.array(x))
        np.testing.assert_allclose(grad, eager_grad(f, np.array(x)))
    assert grad.tolist() == [18.0, 1.0, 0.0, 0.0] and vg.cache.info.misses == 1


@pytest.mark.parametrize("form", ["slice_first", "apart", "ellipsis", "int_and_array", "2d",
                                  "negative"])
def test_numpys_forms(form):
    def f(x):
        i = np.floor(np.abs(x[0]) * 3).astype(int) % 3
        if form == "slice_first":
            y = x[:, i]
        elif form == "apart":
            y = x[i, None, i[::-1]] * x[0, i]
        elif form == "ellipsis":
            y = x[..., i[:2]]
        elif form == "int_and_array":
            y = x[1, i] + x[i, 2]
        elif form == "2d":
            y = x[np.stack([i, i[::-1]]), 1:]
        else:
            y = x[-1 - i, -i]
        return np.sum(y ** 2 * np.arange(y.size).reshape(y.shape))
    rng = np.random.default_rng(1)
    vg = pb.value_and_grad(f)
    for _ in range(4):
        x = rng.standard_normal((3, 3))
        value, grad = vg(x)
        np.testing.assert_allclose(value, f(x), rtol=1e-12)
        np.testing.assert_allclose(grad, eager_grad(f, x), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(grad, numeric_grad(f, x), rtol=1e-6, atol=1e-8)
    assert vg.cache.info.misses == 1


def test_out_of_range_raises_numpys_index_error_at_run_time():
    vg = pb.value_and_grad(lambda x: np.sum(x[np.floor(x).astype(int)]))
    assert vg(np.array([0.5, 1.5, 2.5]))[0] == 4.5
    value, grad = vg(np.array([-0.5, -1.5, 1.5]))  # negative indices wrap, as numpy's
    assert value == -1.5 and grad.tolist() == [0.0, 2.0, 1.0]
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 0 with size 3"):
        vg(np.array([0.5, 3.5, 2.5]))
    assert vg.cache.info.misses == 1


def test_the_tensor_face():
    def f(x):
        i = (x.detach() * 3).long() % 4
        return (x[i] * x.reshape(4, 1)[i, 0]).sum() + x[-i].sum()
    rng = np.random.default_rng(2)
    g = pb.grad(f)
    for _ in range(4):
        x = pb.tensor(rng.random(4), requires_grad=True)
        f(x).backward()
        np.testing.assert_allclose(g(x.detach()).numpy(), x.grad.numpy(), rtol=1e-12)
    assert g.cache.info.misses == 1


def test_an_index_argument_traces_once():
    f = pb.compile(lambda x, i: x[i * 2])
    x = pb.tensor([1.0, 2.0, 3.0])
    assert f(x, pb.tensor([1, 0])).tolist() == [3.0, 1.0]
    assert f(x, pb.tensor([0, -1])).tolist() == [1.0, 2.0]  # (-2: numpy's wrap)
    assert f.cache.info.misses == 1


def test_a_boolean_mask_stays_a_guard_and_constants_stay_literals():
    def f(x):
        return np.sum(x[x > 0]) + np.sum(x[np.array([0, 0])])
    vg = pb.value_and_grad(f)
    value, grad = vg(np.array([1.0, -2.0, 3.0]))
    assert value == 6.0 and grad.tolist() == [3.0, 0.0, 1.0]
    assert any("index" in g for g in pb.compiler.inspect(vg, np.array([1.0, -2, 3])).guards)


def test_second_order_and_forward_mode():
    def q(x):
        return np.sum(x[np.argsort(x)] * np.arange(4.0) * x)
    x = np.array([0.3, -1.2, 2.0, 0.7])
    np.testing.assert_allclose(pb.hessian(q)(x), _fd_hessian(q, x), atol=1e-6)
    value, tangent = pb.jvp(q, (x,), (np.ones(4),))
    np.testing.assert_allclose(tangent, np.sum(numeric_grad(q, x)), rtol=1e-6)


def _fd_hessian(f, x):
    return np.stack([numeric_grad(lambda y, k=k: pb.grad(f)(y)[k], x) for k in range(x.size)])


VMAP_FORMS = {
    "pair": lambda m, i: m[i, i[::-1]],
    "slice_first": lambda m, i: m[:, i],
    "apart": lambda m, i: m[i, None, i[::-1]],
    "ellipsis": lambda m, i: m[..., i[:2]],
    "int_and_array": lambda m, i: m[1, i] + m[i, 2],
    "after_a_slice": lambda m, i: m.reshape(3, 3, 1)[:, i, 0],
    "after_none": lambda m, i: m[None, :, i],
    "with_a_constant": lambda m, i: m[np.array([[0], [2]]), i],
    "2d": lambda m, i: m[np.stack([i, i[::-1]]), 1:],
    "range": lambda m, i: m[:, range(3), i],
}


@pytest.mark.filterwarnings("error::UserWarning")  # (no per-example fallback)
@pytest.mark.parametrize("form", sorted(VMAP_FORMS))
def test_vmap_batches_the_gather(form):
    def f(m, x):
        i = np.floor(np.abs(x) * 2).astype(int) % 3
        y = VMAP_FORMS[form](m, i)
        return np.sum(y * np.arange(y.size).reshape(y.shape) * y)
    rng = np.random.default_rng(3)
    ms, xs = rng.standard_normal((4, 3, 3)), rng.standard_normal((4, 3))
    if form == "range":
        ms = rng.standard_normal((4, 2, 3, 3))
    np.testing.assert_allclose(pb.vmap(f)(ms, xs), [f(m, x) for m, x in zip(ms, xs)])
    np.testing.assert_allclose(pb.vmap(pb.grad(f))(ms, xs),
                               [pb.grad(f)(m, x) for m, x in zip(ms, xs)])
    with warnings.catch_warnings():  # (a constant index: the op "index", as before,
        warnings.simplefilter("ignore")  # which loops where numpy moves the dims)
        np.testing.assert_allclose(pb.vmap(pb.grad(lambda m: f(m, xs[0])))(ms),
                                   [pb.grad(f)(m, xs[0]) for m in ms])


def test_vmaps_own_gather_of_an_index_argument_stays():
    x = np.arange(5.0)
    got = pb.vmap(lambda i: pb.tensor(x)[i] * 2)(pb.tensor([[0, 4], [3, 3]]))
    assert got.tolist() == [[0.0, 8.0], [6.0, 6.0]]


TABLE = np.arange(12.0).reshape(3, 4)


def test_a_constant_table_indexed_by_traced_indices():
    def f(x):
        i = np.floor(np.abs(x) * 2).astype(int) % 3
        return np.sum(TABLE[i, i + 1] * x)
    vg = pb.value_and_grad(f)
    rng = np.random.default_rng(4)
    for _ in range(3):
        x = rng.standard_normal(3)
        value, grad = vg(x)
        assert value == f(x)
        np.testing.assert_allclose(grad, TABLE[np.floor(np.abs(x) * 2).astype(int) % 3,
                                               np.floor(np.abs(x) * 2).astype(int) % 3 + 1])
    assert vg.cache.info.misses == 1


def test_a_hand_written_nll_with_a_target_argument():
    def nll(logits, target):
        logp = logits.log_softmax(dim=1)
        return -logp[pb.arange(logits.shape[0]), target].mean()
    rng = np.random.default_rng(5)
    g = pb.grad(nll)
    for _ in range(3):
        logits = pb.tensor(rng.standard_normal((4, 3)), requires_grad=True)
        target = pb.tensor(rng.integers(0, 3, 4))
        nll(logits, target).backward()
        np.testing.assert_allclose(g(logits.detach(), target).numpy(), logits.grad.numpy(),
                                   rtol=1e-12)
    assert g.cache.info.misses == 1


def test_np_take_by_a_traced_index_is_the_subscript_gather() -> None:
    """``np.take(a, idx, axis=d)`` with an integer index array is ``a[:, idx]`` (the
    same index_gather as the subscript): differentiable, one trace over index values,
    numpy's wrapping and IndexError; checked against torch's index_select and take."""
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(3).standard_normal((4, 5))

    def f(a, idx):
        return (np.take(a, idx, axis=1) ** 2).sum() + np.take(a, idx).sum()
    g = pb.grad(f)
    for idx in (np.array([0, 2, -1]), np.array([3, 1, 4]), np.array([[1, 1], [4, 0]])):
        ta = torch.tensor(a, requires_grad=True)
        picked = torch.index_select(ta, 1, torch.tensor(idx % 5).reshape(-1))
        ((picked ** 2).sum() + torch.take(ta, torch.tensor(idx % 20)).sum()).backward()
        np.testing.assert_allclose(g(a, idx), ta.grad.numpy(), rtol=1e-12)
        np.testing.assert_allclose(g(a, idx), numeric_grad(lambda a, i=idx: f(a, i), a), rtol=1e-6)
    assert g.cache.info.misses == 2  # (one per index shape)
    assert "a[:, idx]" in pb.compiler.inspect(g, a, np.array([0])).forward
    with pytest.raises(IndexError, match="index 7 is out of bounds for axis 1 with size 5"):
        g(a, np.array([7]))

    def by_argmax(a):  # an index the function computed
        return np.take(a, np.argmax(a, axis=0), axis=0).sum() * 2
    np.testing.assert_allclose(pb.grad(by_argmax)(a), numeric_grad(by_argmax, a), rtol=1e-6)


def test_a_row_read_at_a_traced_scalar_index_is_never_written_into() -> None:
    """``xs[k]`` with ``k`` traced and scalar (``argmax``'s: an ``np.int64`` at run time)
    is a view of ``xs``: the in-place pass must not write the next op's result into it
    (it changed the caller's array: found by the breakfirst helper's review)."""
    rng = np.random.default_rng(5)
    xs, w = rng.standard_normal((6, 3)), rng.standard_normal(3)

    def f(xs, w):
        r = xs[np.argmax(xs[:, 0])]
        return (np.tanh(r * 2.0 + 1.0) * w).sum()
    before = xs.copy()
    for door in (pb.grad, pb.value_and_grad):
        for _ in range(2):
            door(f, argnums=1)(xs, w)
    c = pb.compile(f)
    c(xs, w), c(xs, w)
    np.testing.assert_array_equal(xs, before)
    want = np.tanh(xs[np.argmax(xs[:, 0])] * 2.0 + 1.0)
    np.testing.assert_allclose(pb.grad(f, argnums=1)(xs, w), want, rtol=1e-12)
