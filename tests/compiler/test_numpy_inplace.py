"""numpy's functions that write into an argument (src/pullback/numpy_inplace.py):
``ufunc.at``, ``np.copyto``, ``np.fill_diagonal``, ``np.put``, ``np.put_along_axis``,
``np.putmask``, ``np.place``, ``np.nan_to_num(copy=False)`` and ``out=``, recorded as
the in-place writes they are, eagerly and through every front door, or refused with
the function and argument named; numpy's last-write-wins assignment with repeated
indices on the numpy face (and torch's on the torch face); Tensor.index_add_,
index_copy_ and index_fill_ against torch.

Each program runs as plain numpy (the reference value, and central finite differences
in float64 for the gradient).
"""

from __future__ import annotations

import inspect
import re

import numpy as np
import pytest
from ops import numeric_grad

import pullback as pb
from pullback.compiler.user_lines import TraceError

torch = pytest.importorskip("torch")

X = np.array([0.3, -1.2, 2.0, 0.7])
X2 = np.array([-0.4, 1.1, 0.5, -2.2])  # other values: compiled code is not a constant


# ---------------------------------------------------------------- the programs
def add_at_buffer(x):
    buf = np.zeros(3)
    np.add.at(buf, [0, 2, 0, 1], x)
    return np.sum(buf ** 2)


def add_at_derived(x):
    y = x * 2.0
    np.add.at(y, [0, 0, 1], x[:3])
    return np.sum(y * x)


def subtract_at_buffer(x):
    buf = np.zeros(3)
    np.subtract.at(buf, [0, 0, 2], x[:3] * x[1:])
    return np.sum(buf ** 2) + buf[0]


def maximum_at_buffer(x):
    buf = np.full(3, 0.5)
    np.maximum.at(buf, [1, 1, 0, 2], x)
    return np.sum(buf ** 2)


def multiply_at(x):
    y = x + 1.0
    np.multiply.at(y, [0, 3, 0, 0], x * 0.5 + 2.0)
    return np.sum(y * x)


def minimum_at_2d(x):
    m = np.outer(x, x[:3])
    np.minimum.at(m, ([0, 2, 0], [1, 1, 1]), x[:3] * 0.3)
    return np.sum(m * m)


def divide_at(x):
    y = x * 3.0 + 5.0
    np.divide.at(y, [1, 1, 2], x[1:] + 4.0)
    return np.sum(y ** 2)


def negative_at(x):
    y = x * 2.0
    np.negative.at(y, [0, 0, 0, 2])  # a unary ufunc: three times at 0
    return np.sum(y * x)


def copyto(x):
    y = x * 1.0
    np.copyto(y, x ** 2)
    return np.sum(y * x)


def copyto_where(x):
    y = x * 1.0
    np.copyto(y, x ** 3, where=np.array([True, False, True, True]))
    return np.sum(y * x)


def fill_diagonal(x):
    m = np.outer(x, x)
    np.fill_diagonal(m, x * 3)
    return np.sum(m ** 2)


def put(x):
    y = x * 1.0
    np.put(y, [0, 2, 0], x[1:] ** 2)  # position 0 twice: the last write wins
    return np.sum(y * x)


def put_along_axis(x):
    m = np.outer(x, x[:3])
    np.put_along_axis(m, np.array([[0], [2], [1], [0]]), x[:, None] * 5.0, axis=1)
    return np.sum(m ** 2)


def putmask(x):
    y = x * 1.0
    np.putmask(y, np.array([True, False, True, True]), x ** 3)
    return np.sum(y * x)


def place(x):
    y = x * 1.0
    np.place(y, np.array([False, True, True, False]), x[:1] * 7.0)  # repeated
    return np.sum(y * x)


def nan_to_num_in_place(x):
    y = x * 2.0
    np.nan_to_num(y, copy=False)
    return np.sum(y * x)


def ufunc_out(x):
    buf = np.zeros(4)
    np.multiply(x, x, out=buf)
    return np.sum(buf * x)


def function_out(x):
    m = np.outer(x, x[:3])
    col = np.zeros(3)
    np.sum(m, axis=0, out=col)
    np.clip(col, -1.0, 1.5, out=col)
    return np.sum(col ** 2)


def method_put(x):
    y = x * 1.0
    y.put([1, 3], x[:2] * 4.0)
    return np.sum(y * x)


def method_sort(x):
    y = x * np.array([1.0, -2.0, 0.5, 3.0])
    y.sort()  # numpy's sorts in place; weights by rank
    m = np.outer(x, x[:3])
    m.sort(axis=0, kind="stable")
    return np.sum(y * np.arange(1.0, 5.0)) + np.sum(m[0] ** 2)


# the rows of issue 22's second table, then the other functions of the audit
ROWS = [add_at_buffer, add_at_derived, subtract_at_buffer, maximum_at_buffer, copyto,
        fill_diagonal, put, put_along_axis, putmask]
MORE = [multiply_at, minimum_at_2d, divide_at, negative_at, copyto_where, place,
        nan_to_num_in_place, ufunc_out, function_out, method_put, method_sort]
PROGRAMS = ROWS + MORE
# programs whose buffer is a numpy array made inside: eagerly (no source pass) numpy's
# array cannot take a Tensor; their eager form makes the buffer from the input
NUMPY_BUFFER = {add_at_buffer, subtract_at_buffer, maximum_at_buffer, ufunc_out, function_out}


def _fd(f, x):
    return numeric_grad(lambda v: float(f(v.copy())), x.copy())


@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_grad_and_value_and_grad(f):
    for x in (X, X2):
        value, grad = pb.value_and_grad(f)(x.copy())
        np.testing.assert_allclose(value, f(x.copy()), rtol=1e-12)
        np.testing.assert_allclose(grad, _fd(f, x), rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(pb.grad(f)(x.copy()), grad, rtol=1e-12)


@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_compile_and_vjp(f):
    cf = pb.compile(f)
    for x in (X, X2, X):
        np.testing.assert_allclose(float(cf(x.copy())), f(x.copy()), rtol=1e-12)
    out, vjp_fn = pb.vjp(f, X.copy())
    np.testing.assert_allclose(out, f(X.copy()), rtol=1e-12)
    np.testing.assert_allclose(vjp_fn(np.ones(()))[0], _fd(f, X), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_forward_mode(f):
    t = np.array([0.5, -1.0, 0.25, 2.0])
    out, tangent = pb.jvp(f, (X.copy(),), (t,))
    np.testing.assert_allclose(out, f(X.copy()), rtol=1e-12)
    np.testing.assert_allclose(tangent, _fd(f, X) @ t, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(pb.jacfwd(f)(X2.copy()), _fd(f, X2), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(pb.jacrev(f)(X2.copy()), _fd(f, X2), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("f", [add_at_derived, multiply_at, divide_at, fill_diagonal, put,
                               putmask, place], ids=lambda f: f.__name__)
def test_hessian(f):
    """Second order through the writes: pb.hessian against differences of the gradient
    (which the tests above hold to differences of the function)."""
    grad = pb.grad(f)
    want = np.stack([(grad(X + e * 1e-6) - grad(X - e * 1e-6)) / 2e-6 for e in np.eye(4)])
    np.testing.assert_allclose(pb.hessian(f)(X.copy()), want, rtol=1e-5, atol=1e-6)


def _eager(f):
    """``f`` as eager code on Tensors can run it: a numpy buffer made inside becomes
    one made from the input (np.zeros_like of a Tensor is a Tensor)."""
    if f not in NUMPY_BUFFER:
        return f
    src = inspect.getsource(f).replace("np.zeros(3)", "np.zeros_like(x[:3])").replace(
        "np.full(3, 0.5)", "np.zeros_like(x[:3]) + 0.5").replace(
        "np.zeros(4)", "np.zeros_like(x)")
    scope = {"np": np}
    exec(src, scope)
    return scope[f.__name__]


@pytest.mark.parametrize("f", [f for f in PROGRAMS if f not in (method_put, method_sort)],
                         ids=lambda f: f.__name__)  # (ndarray.put, .sort: the numpy face's)
def test_eager_tensors(f):
    g = _eager(f)
    for x in (X, X2):
        t = pb.tensor(x.copy(), requires_grad=True)
        out = g(t)
        np.testing.assert_allclose(out.item(), f(x.copy()), rtol=1e-12)
        out.backward()
        np.testing.assert_allclose(t.grad.numpy(), _fd(f, x), rtol=1e-6, atol=1e-7)


def test_eager_versions_and_grad_fn():
    """The writes are in-place ops: the version counter moves, the target's grad_fn is
    the write's, and a leaf that requires grad is refused as torch refuses it."""
    x = pb.tensor(X.copy(), requires_grad=True)
    y = x * 1.0
    v = y._version
    np.add.at(y, [0, 0], x[:2])
    assert y._version > v and type(y.grad_fn).__name__ == "CopyBackwards"
    np.put(y, [1], x[:1])
    assert type(y.grad_fn).__name__ == "IndexPutBackward0"
    with pytest.raises(RuntimeError, match="leaf Variable") as info:
        np.put(x, [0], 1.0)
    assert "numpy.put writing into its argument 'a'" in "".join(info.value.__notes__)


def test_numpy_array_target_refused():
    """A value that needs a gradient (or is traced) written into a numpy array is
    refused, naming the function and the argument; with no gradient numpy writes."""
    x = pb.tensor(X.copy(), requires_grad=True)
    buf = np.zeros(3)
    with pytest.raises(TypeError, match=r"numpy\.add\.at writes into its argument 'a', a numpy"):
        np.add.at(buf, [0, 1], x[:2])
    with pytest.raises(TypeError, match=r"numpy\.copyto writes into its argument 'dst'"):
        np.copyto(np.zeros(4), x)
    with pytest.raises(TypeError, match=r"numpy\.putmask writes into its argument 'a'"):
        np.putmask(np.zeros(4), X > 0, x)
    np.add.at(buf, [0, 0], x.detach()[:2])
    np.testing.assert_allclose(buf, [X[0] + X[1], 0, 0])

    captured = np.zeros(4)

    def f(v):  # a captured numpy array: the write would be lost after the trace
        np.copyto(captured, v)
        return np.sum(v)
    with pytest.raises(TraceError, match=r"test_numpy_inplace.py:\d+ \(np.copyto\(captured, "
                       r"v\)\): np.copyto\(...\) writes into a numpy array the function did "
                       "not make"):
        pb.compile(f)(X.copy())


def test_eager_numpy_array_of_tensors_names_the_line():
    """Eager numpy code on Tensors: np.array([...]) of a Tensor that requires grad, or its
    write into a numpy buffer, is refused naming the user's line and what to write instead
    (the message said only that numpy() was refused); the ways it names work."""
    x = pb.tensor(X.copy(), requires_grad=True)
    with pytest.raises(RuntimeError, match=r"test_numpy_inplace.py:\d+ \(v = np.array\(\[x\[0\], "
                       r"0.0\]\)\): np.array\(\.\.\.\) copies .* np.stack"):
        v = np.array([x[0], 0.0])
    buf = np.zeros(4)
    with pytest.raises(RuntimeError, match=r"\(buf\[1:\] = x\[:3\]\): writing .* into a numpy "
                       r"array .* np.zeros_like\(x\)"):
        buf[1:] = x[:3]
    v = np.stack([x[0], 0.0])
    buf = np.zeros_like(x)
    buf[1:] = x[:3]
    (v.sum() + buf.sum()).backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 1.0, 1.0, 0.0])


def test_ufunc_at_without_a_rule():
    """ufunc.at of a ufunc the table does not map: numpy's value when no gradient is
    needed (eagerly and compiled), a clear error when one is (numpy's float ufuncs all
    have a rule now: scipy's kv has none)."""
    sp = pytest.importorskip("scipy.special")
    y, want = pb.tensor(np.array([5.0, 7.0, 9.0])), np.array([5.0, 7.0, 9.0])
    sp.kv.at(y, [0, 0, 2], 2.0)  # (heaviside, nextafter: ops/numpy_*.py)
    sp.kv.at(want, [0, 0, 2], 2.0)
    np.testing.assert_array_equal(y.numpy(), want)
    x = pb.tensor(X.copy(), requires_grad=True)
    with pytest.raises(TypeError, match=r"kv\.at is not differentiable"):
        sp.kv.at(x * 1.0, [0], 2.0)

    def f(v):
        y = v * 4.0
        sp.kv.at(y, [1, 1], 1.5)
        return y
    cf = pb.compile(f)
    for v in (X, X2):
        ref = v * 4.0
        sp.kv.at(ref, [1, 1], 1.5)
        np.testing.assert_allclose(cf(v.copy()).numpy(), ref)
    with pytest.raises(TypeError, match=r"kv\.at is not differentiable"):
        pb.grad(lambda v: np.sum(f(v)))(X.copy())


def test_numpy_errors_kept():
    y = pb.tensor(X.copy())
    with pytest.raises(IndexError):
        np.put(y, [7], 1.0)
    with pytest.raises(ValueError, match="at least 2-d"):
        np.fill_diagonal(y, 1.0)
    with pytest.raises(IndexError):
        np.add.at(y, [4], 1.0)
    np.put(y, [7, -1], [1.0, 2.0], mode="wrap")
    np.testing.assert_allclose(y.numpy(), [X[0], X[1], X[2], 2.0])


# ------------------------------------------------------------------- the audit
def _numpy_callables():
    for mod in (np, np.linalg, np.fft, np.random, np.lib.stride_tricks):
        for name in sorted(dir(mod)):
            f = getattr(mod, name)
            if not name.startswith("_") and callable(f) and not isinstance(f, type):
                yield f"{mod.__name__}.{name}", f


#: the screen: a numpy function whose documentation says it changes, modifies,
#: overwrites, replaces or puts values (or is in place) is looked at by hand
SCREEN = re.compile(r"in[- ]?place|modif(y|ies|ied)|overwrit|replaces? specified elements|"
                    r"change elements|copies values|put values into|a\.flat\[", re.I)
WRITES = "writes into an argument: recorded (numpy_inplace.WRITERS)"
OVERWRITE = "overwrite_input=True may scramble the input: run as False (numpy allows it)"
NO_WRITE = "returns a new array (the documentation mentions in-place or modifying only " \
    "to say that it does not, or of something else)"
#: each function the screen finds, and what it does to its arguments
SCREENED = {
    "numpy.copyto": WRITES, "numpy.fill_diagonal": WRITES, "numpy.put": WRITES,
    "numpy.put_along_axis": WRITES, "numpy.putmask": WRITES, "numpy.place": WRITES,
    "numpy.nan_to_num": WRITES + " with copy=False",
    "numpy.median": OVERWRITE, "numpy.nanmedian": OVERWRITE, "numpy.percentile": OVERWRITE,
    "numpy.nanpercentile": OVERWRITE, "numpy.quantile": OVERWRITE,
    "numpy.nanquantile": OVERWRITE,
    "numpy.random.shuffle": "writes into its argument; numpy does not dispatch it (it "
    "swaps through __getitem__/__setitem__, with numpy's warning, as for torch's "
    "tensors); refused inside a trace (effects.draw)",
    **{f"numpy.{n}": NO_WRITE for n in (
        "append", "apply_along_axis", "argmax", "argmin", "argpartition", "argsort", "block",
        "busday_offset", "clip", "copy", "delete", "histogram_bin_edges", "i0", "insert",
        "kaiser", "lexsort", "min_scalar_type", "pad", "partition", "resize", "sort", "std",
        "take_along_axis", "var")},
    "numpy.random.vonmises": NO_WRITE,
    "numpy.lib.stride_tricks.sliding_window_view": NO_WRITE + "; a writeable=True view of a "
    "Tensor's data is read-only (numpy_interop._frozen), so a write through it raises",
}


def test_audit_of_the_numpy_namespace():
    """Every numpy function the screen finds is classified (a new one fails here until
    it is), each writer dispatches to pullback's form, and every ufunc (all take
    ``out=`` and have ``.at``) reaches the ``at`` writer."""
    from pullback import numpy_interop

    found = {name for name, f in _numpy_callables()
             if not isinstance(f, np.ufunc) and SCREEN.search(f.__doc__ or "")}
    assert found - set(SCREENED) == set(), "classify these in SCREENED"
    for name, verdict in SCREENED.items():
        if verdict.startswith(WRITES):
            f = eval(name, {"numpy": np})
            assert f in numpy_interop.WRITERS, name
    assert "at" in numpy_interop.UFUNC_METHODS
    ufuncs = [f for _, f in _numpy_callables() if isinstance(f, np.ufunc)]
    assert len(ufuncs) > 80 and all(hasattr(f, "at") for f in ufuncs)


@pytest.mark.parametrize("name,f", [(n, f) for n, f in _numpy_callables()
                                    if isinstance(f, np.ufunc)],
                         ids=lambda v: v if isinstance(v, str) else "")
def test_every_ufunc_at_is_taken(name, f):
    """Every ufunc's .at on a Tensor, with no gradient needed: numpy's value (in a
    float64, int64 or bool loop), or numpy's error where numpy has none."""
    code = next((c for c in "dl?" if c * f.nin + "->" + c * f.nout in f.types), "d")
    base = np.array([0.5, 1.5, 2.5, 3.5]) if code == "d" else np.array(
        [5, 1, 2, 3]).astype(code)
    operands = [np.array([0.25, 0.75, 1.25] if code == "d" else [1, 2, 1]).astype(code)
                for _ in range(f.nin - 1)]
    ref = base.copy()
    try:
        with np.errstate(all="ignore"):
            f.at(ref, [0, 0, 2], *operands)
    except Exception as e:  # (several outputs, gufuncs: numpy refuses; so do we)
        with pytest.raises(type(e)):
            f.at(pb.tensor(base.copy()), [0, 0, 2], *operands)
        return
    y = pb.tensor(base.copy())
    with np.errstate(all="ignore"):
        f.at(y, [0, 0, 2], *operands)
    np.testing.assert_array_equal(y.numpy(), ref)
    assert y.numpy().dtype == ref.dtype


def test_unknown_writer_is_refused():
    """A numpy function that writes into an argument the writers do not know gets
    read-only data (its write raises, never lost); overwrite_input= is dropped. (A
    complex nanmedian: the real one has its op, which only reads, ops/numpy_statistics.py.)"""
    x = pb.tensor(X + 0j, requires_grad=True)
    with pytest.raises(TypeError, match="numpy.nanmedian is not differentiable"):
        np.nanmedian(x * 1.0, overwrite_input=True)
    y = pb.tensor(X + 0j)
    np.nanmedian(y, overwrite_input=True)
    np.testing.assert_array_equal(y.numpy(), X + 0j)
    with pytest.raises(TypeError, match=r"numpy\.nanmedian writes into its argument, a "
                       r"Tensor \(argument 0\)"):
        np.nanmedian(y, None, None, True)  # overwrite_input, given by position
    np.testing.assert_array_equal(y.numpy(), X + 0j)


# ------------------------------------------------- repeated indices in assignment
def dup_assign(x):
    y = np.zeros(4)
    y[[0, 0, 1]] = x[:3]
    return np.sum(y * np.array([1.0, 2.0, 3.0, 4.0]) * x)


def dup_iadd(x):
    y = x * 1.0
    y[[0, 0, 1]] += x[:3] * 10.0
    return np.sum(y * np.array([1.0, 2.0, 3.0, 4.0]))


def dup_assign_2d(x):
    m = np.outer(x, x)
    m[[0, 1, 0], 1:3] = np.stack([x[:2], x[2:], x[1:3] * 2.0])
    return np.sum(m ** 2)


@pytest.mark.parametrize("f", [dup_assign, dup_iadd, dup_assign_2d], ids=lambda f: f.__name__)
def test_repeated_index_assignment_numpy_face(f):
    """numpy's ``y[idx] = v`` and ``y[idx] += v`` keep the last write: the value and
    the gradient agree with it under every door."""
    for x in (X, X2):
        value, grad = pb.value_and_grad(f)(x.copy())
        np.testing.assert_allclose(value, f(x.copy()), rtol=1e-12)
        np.testing.assert_allclose(grad, _fd(f, x), rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(float(pb.compile(f)(x.copy())), f(x.copy()), rtol=1e-12)
    np.testing.assert_allclose(pb.jacfwd(f)(X.copy()), _fd(f, X), rtol=1e-6, atol=1e-7)


def test_repeated_index_assignment_torch_face():
    """On Tensors (torch's face) ``y[idx] = v`` and ``+=`` are torch's index_put_: every
    writer of a repeated index gets the gradient, as torch 2.13 gives on CPU."""
    w = [1.0, 2.0, 3.0, 4.0]

    def run(lib, tensor):
        out = []
        for op in ("set", "add"):
            x = tensor(X.copy(), requires_grad=True)
            y = lib.zeros(4, dtype=lib.float64) if op == "set" else x * 1.0
            if op == "set":
                y[[0, 0, 1]] = x[:3]
            else:
                y[[0, 0, 1]] += x[:3] * 10.0
            (y * tensor(w)).sum().backward()
            out += [y.detach().numpy(), x.grad.numpy()]
        return out
    for mine, theirs in zip(run(pb, pb.tensor), run(torch, torch.tensor)):
        np.testing.assert_allclose(mine, theirs, rtol=1e-12)

    def compiled(x):  # the same program compiled on Tensors
        y = x * 1.0
        y[[0, 0, 1]] += x[:3] * 10.0
        return (y * pb.tensor(w, dtype=pb.float64)).sum()
    t = pb.tensor(X.copy(), requires_grad=True)
    pb.compile(compiled)(t).backward()
    x = torch.tensor(X.copy(), requires_grad=True)
    y = x * 1.0
    y[[0, 0, 1]] += x[:3] * 10.0
    (y * torch.tensor(w, dtype=torch.float64)).sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), x.grad.numpy(), rtol=1e-12)


# ---------------------------------------------- index_add_ / index_copy_ / index_fill_
INDEX_CALLS = {
    "index_add": lambda t, lib, s: t.index_add(0, lib.tensor([0, 2, 0]), s),
    "index_add alpha": lambda t, lib, s: t.index_add(0, lib.tensor([0, 2, 0]), s, alpha=-2.5),
    "index_add_": lambda t, lib, s: t.index_add_(0, lib.tensor([0, 2, 0]), s),
    "index_add_ alpha": lambda t, lib, s: t.index_add_(0, lib.tensor([2, 1, 2]), s, alpha=3),
    "index_copy": lambda t, lib, s: t.index_copy(0, lib.tensor([2, 0, 1]), s),
    "index_copy_": lambda t, lib, s: t.index_copy_(0, lib.tensor([2, 0, 1]), s),
    "index_fill": lambda t, lib, s: t.index_fill(1, lib.tensor([1]), -1.5),
    "index_fill_": lambda t, lib, s: t.index_fill_(1, lib.tensor([0, 1]), 4.0),
    "index_add_ dim 1": lambda t, lib, s: t.index_add_(1, lib.tensor([1, 0]), s[:, [1, 0]]),
}


@pytest.mark.parametrize("name", list(INDEX_CALLS))
def test_index_add_copy_fill_against_torch(name):
    call = INDEX_CALLS[name]
    rng = np.random.default_rng(3)
    base, src, w = rng.standard_normal((3, 2)), rng.standard_normal((3, 2)), \
        rng.standard_normal((3, 2))

    def run(lib):
        a = lib.tensor(base, requires_grad=True)
        s = lib.tensor(src, requires_grad=True)
        t = a * 1.0
        out = call(t, lib, s)
        if name.endswith("_") or "_ " in name:
            assert out is t
        (out * lib.tensor(w)).sum().backward()
        return [out.detach().numpy(), a.grad.numpy(),
                s.grad.numpy() if s.grad is not None else np.zeros(0)]
    for mine, theirs in zip(run(pb), run(torch)):
        np.testing.assert_allclose(mine, theirs, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("method", ["partition", "resize", "setfield", "byteswap"])
def test_numpy_face_in_place_methods_refused(method):
    """ndarray's other in-place methods on a traced value: refused, naming the method."""
    def f(x):
        y = x * 1.0
        getattr(y, method)(1)
        return np.sum(y)
    with pytest.raises(AttributeError, match=f"ndarray.{method} is not supported"):
        pb.grad(f)(X.copy())


def test_shuffle_refused_in_a_trace():
    rng = np.random.default_rng(0)

    def f(x):
        y = x * 1.0
        rng.shuffle(y)
        return np.sum(y * x)
    with pytest.raises(Exception, match="shuffles its argument in place"):
        pb.grad(f)(X.copy())


def test_out_into_a_numpy_array_in_traced_code_refused():
    captured = np.zeros(4)

    def f(x):
        np.multiply(x, 2.0, out=captured)
        return np.sum(x)
    with pytest.raises(TraceError, match=r"test_numpy_inplace.py:\d+ .*np.multiply\(\.\.\., "
                       r"out=\.\.\.\) writes into a numpy array the function did not make"):
        pb.compile(f)(X.copy())


def test_integer_targets():
    """ufunc.at on integer and unsigned targets with no gradient: numpy's values."""
    for dtype in (np.int64, np.uint8):
        ref = np.array([5, 6, 7], dtype)
        np.subtract.at(ref, [0, 0, 2], np.array([1, 2, 3], dtype))
        y = pb.tensor(np.array([5, 6, 7], dtype))
        np.subtract.at(y, [0, 0, 2], np.array([1, 2, 3], dtype))
        np.testing.assert_array_equal(y.numpy(), ref)


def test_eager_forward_ad():
    """The writes carry tangents in eager forward mode (torch's forward_ad)."""
    import pullback.autograd.forward_ad as fwAD

    for f in (add_at_derived, put, multiply_at, copyto_where):
        t = np.array([0.5, -1.0, 0.25, 2.0])
        with fwAD.dual_level():
            out = f(fwAD.make_dual(pb.tensor(X.copy()), pb.tensor(t)))
            primal, tangent = fwAD.unpack_dual(out)
        np.testing.assert_allclose(primal.item(), f(X.copy()), rtol=1e-12)
        np.testing.assert_allclose(tangent.item(), _fd(f, X) @ t, rtol=1e-6, atol=1e-7)


def putmask_data_mask(x):
    y = x * 1.0
    np.putmask(y, x > 0, x[::-1] ** 2)
    return np.sum(y * x)


def copyto_data_mask(x):
    y = x * 2.0
    np.copyto(y, x ** 3, where=x < 1.0)
    return np.sum(y * x)


@pytest.mark.parametrize("f", [putmask_data_mask, copyto_data_mask], ids=lambda f: f.__name__)
def test_masks_from_data_are_traced(f):
    """A mask computed from the input is an operand of the traced code, not a guard:
    new data with a new mask runs the same trace."""
    cf = pb.compile(f)
    g = pb.grad(f)
    for x in (X, X2, -X):
        np.testing.assert_allclose(float(cf(x.copy())), f(x.copy()), rtol=1e-12)
        np.testing.assert_allclose(g(x.copy()), _fd(f, x), rtol=1e-6, atol=1e-7)
    assert cf.cache.info.misses == 1 and g.cache.info.misses == 1
