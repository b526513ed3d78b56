"""A numpy array the traced code reads as a constant (an index, a mask, a weight made
in the function) and writes into after that use: each use computes with the values the
array held then, at every door (tracer_constants.py, autograd/edges.py). Before, the
trace kept the array by reference, so generated code (and the eager backward) read the
written values at the earlier use too: a silent wrong value and gradient."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from ops import numeric_grad as fd

import pullback as pb
from pullback.compiler import tracer_constants
from pullback.compiler.user_lines import TraceError

X = np.array([1.0, 2.0, 3.0])


def idx_written(x):
    idx = np.arange(2) * 1
    s = x[idx].sum()
    idx[0] = 2
    return s + (x[idx] ** 2).sum()


def mask_written(x):
    m = np.array([1.0, -1.0, 2.0]) > 0
    s = (x[m] ** 2).sum()
    m[1] = True
    return s + x[m].sum()


def mask_in_where(x):
    m = np.array([1.0, -1.0, 2.0]) > 0
    s = np.where(m, x, 0.0).sum()
    m[1] = True
    return s + np.where(m, x * x, 0.0).sum()


def idx_in_loop(x):
    idx = np.zeros(2, dtype=int)
    t = 0.0
    for i in range(3):
        idx[i % 2] = i
        t = t + (x[idx] ** 2).sum()
    return t


def put_after(x):
    idx = np.array([0, 1])
    s = x[idx].sum()
    np.put(idx, [0], [2])
    return s + (x[idx] ** 2).sum()


def copyto_after(x):
    w = np.ones(3)
    s = (x * w).sum()
    np.copyto(w, np.array([2.0, 3.0, 4.0]))
    return s + (x * w * x).sum()


def out_after(x):
    w = np.ones(3)
    s = (x * w).sum()
    np.multiply(w, 3.0, out=w)
    return s + (x * w).sum()


def float_written(x):
    m = np.ones(3)
    s = (x * m).sum()
    m[0] = 5.0
    return s + (x * m).sum()


def readonly_view_written(x):
    base = np.array([0, 1])
    v = base.view()
    v.flags.writeable = False  # read-only, but its base is written
    s = x[v].sum()
    base[0] = 2
    return s * x[v].sum()


def broadcast_view_written(x):
    row = np.array([1.0, 2.0, 3.0])
    m = np.broadcast_to(row, (2, 3))  # a read-only view of row
    s = (x * m).sum()
    row[0] = 10.0
    return s * (x * m).sum()


CASES = [idx_written, mask_written, mask_in_where, idx_in_loop, put_after, copyto_after,
         out_after, float_written, readonly_view_written, broadcast_view_written]


def _without_source(f, **captured):
    """``f`` made by exec: the source pass cannot read it (as ``python -c``)."""
    ns = {"np": np, **captured}
    exec(inspect.getsource(f), ns)  # noqa: S102
    return ns[f.__name__]


def _both(f):
    return [f, _without_source(f)]


PROGRAMS = [g for f in CASES for g in _both(f)]
IDS = [f.__name__ + s for f in CASES for s in ("", "[exec]")]


def _check(f, value, grad):
    assert float(value) == pytest.approx(f(X.copy()), rel=1e-12)
    np.testing.assert_allclose(grad, fd(f, X.copy()), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("f", PROGRAMS, ids=IDS)
def test_value_and_grad_and_compile(f):
    _check(f, *pb.value_and_grad(f)(X))
    assert pb.compile(f)(X).item() == pytest.approx(f(X.copy()), rel=1e-12)


@pytest.mark.parametrize("f", PROGRAMS, ids=IDS)
def test_vjp(f):
    value, pull = pb.vjp(f, X)
    (grad,) = pull(np.float64(1.0))
    _check(f, value, grad)


@pytest.mark.parametrize("f", PROGRAMS, ids=IDS)
def test_export(f, tmp_path):
    path = tmp_path / "m.py"
    pb.export(f, X, path=str(path))
    ns: dict = {"__name__": "exported"}
    exec(compile(path.read_text(), str(path), "exec"), ns)  # noqa: S102
    _check(f, *ns["value_and_grad"](X))


@pytest.mark.parametrize("f", [_without_source(f) for f in CASES] +
                         [idx_written, mask_written, idx_in_loop, put_after],
                         ids=[f.__name__ + "[exec]" for f in CASES] +
                         ["idx_written", "mask_written", "idx_in_loop", "put_after"])
def test_vmap_of_grad(f):
    """pb.grad inside vmap's trace runs eager autograd, whose backward read the array."""
    xs = np.stack([X, 2 * X])
    np.testing.assert_allclose(pb.vmap(pb.grad(f))(xs), [fd(f, X.copy()), fd(f, 2 * X)],
                               rtol=1e-6, atol=1e-8)


def test_eager_backward_reads_what_the_forward_read():
    x = pb.tensor(X, requires_grad=True)
    idx = np.arange(2) * 1
    s = x[idx].sum()
    idx[0] = 2
    m = np.ones(3)
    t = (x * m).sum()
    m[0] = 5.0
    (s + x[idx].sum() + t + (x * m).sum()).backward()
    np.testing.assert_allclose(x.grad.numpy(), [1 + 6, 2 + 2, 1 + 2])


def test_eager_backward_reads_what_a_read_only_view_showed():
    """A read-only view (np.broadcast_to, sliding_window_view) of an array written after
    the forward read it: the backward reads the values the forward read (it read the
    written ones: [40, 8, 12] for numpy's [22, 8, 12], [70, 28, 0] for [34, 28, 0])."""
    x = pb.tensor(X, requires_grad=True)
    row = np.array([1.0, 2.0, 3.0])
    m = np.broadcast_to(row, (2, 3))
    s = (x * m).sum()
    row[0] = 10.0
    (s + (x * m).sum()).backward()
    np.testing.assert_allclose(x.grad.numpy(), [22.0, 8.0, 12.0])
    x, row = pb.tensor(X, requires_grad=True), np.array([1.0, 2.0, 3.0])
    w = np.lib.stride_tricks.sliding_window_view(row, 2)
    a = (x[:2] * w[0]).sum()
    row[0] = 5.0
    (a * (x[:2] * w[0]).sum()).backward()
    np.testing.assert_allclose(x.grad.numpy(), [34.0, 28.0, 0.0])


G = np.array([0, 1])


def _global_index(x):
    return (x[G] ** 2).sum()


def test_a_captured_array_changed_between_calls_is_still_read_live():
    G[:] = [0, 1]
    try:
        f = pb.compile(_global_index)
        vg = pb.value_and_grad(_global_index)
        assert f(X).item() == 5.0 and vg(X)[0] == 5.0
        G[0] = 2
        assert f(X).item() == 13.0
        value, grad = vg(X)
        assert value == 13.0 and grad.tolist() == [0.0, 4.0, 6.0]
    finally:
        G[:] = [0, 1]


M = np.array([True, False, True])


def _global_mask(x):
    return (x[M] ** 2).sum() + np.where(M, x, 0.0).sum()


def test_vmap_of_grad_reads_a_captured_mask_live():
    """pb.grad inside vmap's trace: the eager backward's copy of the mask stands for the
    mask itself (autograd/tracer_hooks.py's copies), so a mask changed between calls is
    seen (the copy was baked in: [4, 0, 6] after M = [False, True, True], for [0, 5, 7]);
    and what the backward computes from the mask and the seed alone (np.where's
    where(M, 1, 0)) is generated code, not a value folded while batching
    (transforms/batch.py; [1, 0, 1] for [0, 1, 1])."""
    M[:] = [True, False, True]
    try:
        vg = pb.vmap(pb.grad(_global_mask))
        xs = np.stack([X, 2 * X])
        np.testing.assert_allclose(vg(xs), [[3.0, 0.0, 7.0], [5.0, 0.0, 13.0]])
        M[:] = [False, True, True]
        np.testing.assert_allclose(vg(xs), [[0.0, 5.0, 7.0], [0.0, 9.0, 13.0]])
    finally:
        M[:] = [True, False, True]


def _zero_d_written(x):
    i = np.array(0)
    s = np.array(2.0)
    a = x[i] * s
    i[()] = 2
    s[()] = 5.0
    return a * 10 + x[i] * s


@pytest.mark.parametrize("f", _both(_zero_d_written), ids=["", "[exec]"])
def test_a_0d_array_written_after_its_use(f):
    """A 0-d index or operand is its value at the use (it was inlined as the array, so
    generated code read the written one: 33.0 for numpy's 13.0 at an index, and the
    eager backward the written index: [0, 0, 11] for [20, 0, 5])."""
    _check(f, *pb.value_and_grad(f)(X))
    assert pb.compile(f)(X).item() == pytest.approx(f(X.copy()))
    x = pb.tensor(X, requires_grad=True)
    f(x).backward()
    np.testing.assert_allclose(x.grad.numpy(), [20.0, 0.0, 5.0])


S0, I0 = np.array(2.0), np.array(0)


def _zero_d_globals(x):
    return (x * S0).sum() + x[I0]


def test_captured_0d_arrays_changed_between_calls_are_seen():
    """Guarded by their bytes (read as values: they were inlined, and not guarded)."""
    f, vg = pb.compile(_zero_d_globals), pb.value_and_grad(_zero_d_globals)
    try:
        assert f(X).item() == 13.0 and vg(X)[0] == 13.0
        S0[()], I0[()] = 5.0, 2
        assert f(X).item() == 33.0
        value, grad = vg(X)
        assert value == 33.0 and grad.tolist() == [5.0, 5.0, 6.0]
    finally:
        S0[()], I0[()] = 2.0, 0


WEIGHT = np.array([1.0, 2.0, 3.0])


def test_vmap_of_grad_reads_a_captured_weight_live():
    """The gradient of x * x * W is the seed times W (unbatched) times 2x: the seed times
    WEIGHT was computed while batching and baked in, so WEIGHT[0] = 10 was not seen."""
    vg = pb.vmap(pb.grad(lambda x: (x * x * WEIGHT).sum()))
    try:
        np.testing.assert_allclose(vg(np.stack([X, X]))[0], [2.0, 8.0, 18.0])
        WEIGHT[0] = 10.0
        np.testing.assert_allclose(vg(np.stack([X, X]))[0], [20.0, 8.0, 18.0])
    finally:
        WEIGHT[0] = 1.0


def test_an_unwritten_constant_stays_a_reference(monkeypatch):
    """A use whose array holds what it read keeps the array itself (no copy baked)."""
    seen = []
    monkeypatch.setattr(tracer_constants.ConstantReads, "settle_constants",
                        lambda self, real=tracer_constants.ConstantReads.settle_constants:
                        (seen.extend(v for v, _ in self.const_reads), real(self)))
    w = np.ones(3)
    pb.value_and_grad(lambda x: (x * w).sum())(X)
    assert seen and all(v._data is w for v in seen)


def test_a_large_array_written_after_its_use_is_refused(monkeypatch):
    monkeypatch.setattr(tracer_constants, "COPY_LIMIT", 8)
    with pytest.raises(TraceError, match="written after the traced code read it"):
        pb.value_and_grad(_without_source(idx_written))(X)


LATER = """
import json
import numpy as np
import pullback as pb
X = np.array([1.0, 2.0, 3.0])
{source}
out = []
for f in (idx_written, put_after):
    value, grad = pb.value_and_grad(f)(X)
    out.append([float(value), grad.tolist(), pb.compile(f)(X).item()])
print(json.dumps(out))
"""


def test_the_persistent_cache_keeps_the_values_read(tmp_path):
    """A later process reads the variant from disk: its constants are what each use
    read (main gave 18.0 for 16.0 there too)."""
    script = tmp_path / "job.py"
    script.write_text(LATER.format(source="\n".join(
        inspect.getsource(f) for f in (idx_written, put_after))))
    env = dict(os.environ, PULLBACK_CACHE_DIR=str(tmp_path / "cache"))
    runs = [json.loads(subprocess.run([sys.executable, str(script)], env=env, text=True,
                                      capture_output=True, timeout=60, check=True
                                      ).stdout.splitlines()[-1]) for _ in range(2)]
    assert runs[0] == runs[1]
    assert os.listdir(tmp_path / "cache")
    for (value, grad, compiled), f in zip(runs[1], (idx_written, put_after)):
        assert value == compiled == f(X.copy())
        np.testing.assert_allclose(grad, fd(f, X.copy()), rtol=1e-6, atol=1e-8)


W = np.ones(3)


def _reads_then_writes_w(x):
    s = (x * W).sum()
    W[0] = 5.0
    return s + (x * W).sum()


def _reads_then_writes_g(x):
    s = x[G].sum()
    G[0] = 2
    return s + x[G].sum()


def _reads_then_copies_into_g(x):
    s = x[G].sum()
    np.put(G, [0], [2])
    return s + x[G].sum()


@pytest.mark.parametrize("f", [
    _reads_then_writes_w, _without_source(_reads_then_writes_w, W=W),
    _reads_then_writes_g, _without_source(_reads_then_copies_into_g, G=G)],
                         ids=["item write", "item write[exec]", "index item write", "np.put[exec]"])
@pytest.mark.parametrize("door", [pb.compile, pb.value_and_grad], ids=["compile", "grad"])
def test_a_captured_array_written_after_a_read_is_refused(f, door):
    """Generated code would read the written values at the first read (the source pass
    makes the item write again on every call; a plain numpy write, not at all): main
    gave 20.0 for numpy's 16.0 without source, and the gradient [10, 2, 2] for [6, 2, 2]
    with it; x[G] read, G[0] = 2, x[G] gave 6.0 for 8.0 (cse merged the two reads of
    G); a later call would read what the trace's call wrote."""
    G[:] = [0, 1]
    W[:] = 1.0
    try:
        with pytest.raises(TraceError, match="after reading it|then written by the function"):
            door(f)(X)
    finally:
        G[:] = [0, 1]
        W[:] = 1.0


def test_a_captured_array_written_before_any_read_is_read_live():
    def f(x):
        W[0] = 5.0
        return (x * W).sum()
    try:
        value, grad = pb.value_and_grad(f)(X)
        assert value == 10.0 and grad.tolist() == [5.0, 1.0, 1.0]
    finally:
        W[:] = 1.0
