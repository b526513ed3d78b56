"""pb.export: the generated code as a module that runs without pullback."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import pullback as pb

RNG = np.random.default_rng(0)
W = RNG.standard_normal((4, 3))
BIG = RNG.standard_normal((80, 80))  # more than INLINE elements: into the .npz file


def mlp(w, x):
    h = np.tanh(x @ W + w)
    return (h ** 2).sum() + np.sum(BIG[:3, :3] @ h.T)


def rnn(w, xs):
    def step(h, x):
        h = np.tanh(h * w + x)
        return h, h.sum()
    h, ys = pb.scan(step, np.zeros(3), xs)
    return ys.sum() + h.sum()


def _run_without_pullback(path, call: str):
    """``call`` (Python code naming the module ``m``) in a fresh interpreter that cannot
    import pullback; its JSON printout."""
    code = ("import sys, json, importlib.util, numpy as np\n"
            "sys.modules['pullback'] = None\n"
            f"spec = importlib.util.spec_from_file_location('m', {str(path)!r})\n"
            "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
            f"print(json.dumps({call}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.mark.parametrize("fn, args", [
    (mlp, (RNG.standard_normal(3), RNG.standard_normal((5, 4)))),
    (rnn, (RNG.standard_normal(3), RNG.standard_normal((6, 3)))),
])
def test_an_exported_module_runs_without_pullback_and_agrees(tmp_path, fn, args):
    path = tmp_path / "exported.py"
    text = pb.export(fn, *args, path=str(path))
    assert "pullback" not in text.split("\n", 1)[1]  # (the header names the function)
    if fn is rnn:
        assert "for " in text  # loops export as loops
    w, x = args
    got = _run_without_pullback(path, f"[m.forward(np.array({w.tolist()}), np.array("
                                f"{x.tolist()})).tolist(), m.value_and_grad(np.array("
                                f"{w.tolist()}), np.array({x.tolist()}))[1].tolist()]")
    value, grad = pb.value_and_grad(fn)(*args)
    np.testing.assert_allclose(got[0], value, rtol=1e-12)
    np.testing.assert_allclose(got[1], grad, rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_runtime_helpers_ship_with_the_module(tmp_path, dtype):
    # log_softmax and nll as rt.<name>, pullback's plain numpy helpers, shipped as source
    x, y = RNG.standard_normal((5, 3)).astype(dtype), np.array([0, 2, 1, 1, 0])
    f = lambda v, t: pb.nn.functional.cross_entropy(pb.as_tensor(v), pb.as_tensor(t))  # noqa
    path = tmp_path / "ce.py"
    text = pb.export(f, x, y, path=str(path))
    assert "def log_softmax(x, axis):" in text and "rt = types.SimpleNamespace(" in text
    assert "ops." not in text
    got = _run_without_pullback(path, f"[v.tolist() for v in m.value_and_grad(np.array("
                                f"{x.tolist()}, np.{dtype.__name__}), np.array({y.tolist()}))]")
    value, grad = pb.value_and_grad(f)(x, y)
    np.testing.assert_array_equal(got[0], value)
    np.testing.assert_array_equal(got[1], grad)


def test_reductions_with_runtime_helpers_ship_them(tmp_path):
    x = RNG.standard_normal((4, 5))
    f = lambda v: (pb.median(pb.as_tensor(v), dim=1).values * pb.erf(  # noqa: E731
        pb.as_tensor(v)).sum(1) + pb.nn.functional.gelu(pb.as_tensor(v)).sum(1)).sum()
    path = tmp_path / "median.py"
    text = pb.export(f, x, path=str(path))
    assert "rt.median_along(" in text and "rt.erf(" in text and "ops." not in text
    got = _run_without_pullback(path, f"m.value_and_grad(np.array({x.tolist()}))[1].tolist()")
    np.testing.assert_allclose(got, pb.grad(f)(x), rtol=1e-12)


def _cnn(w1, w2, x, y):
    """conv, pooling (max and average), batch norm, upsampling, logsumexp, std, sort."""
    F = pb.nn.functional
    x = pb.as_tensor(x)
    h = F.relu(F.conv2d(x, w1, padding=1))
    h = F.batch_norm(F.max_pool2d(h, 2), None, None, training=True)
    h = F.conv_transpose2d(F.interpolate(h, scale_factor=2), w2, stride=1)
    h = F.avg_pool2d(h, 2, stride=1, padding=1) + F.adaptive_avg_pool2d(h, 5)[..., :1, :1]
    z = pb.reshape(h, (h.shape[0], -1))
    loss = F.cross_entropy(z[:, :3], pb.as_tensor(y)) + pb.std(pb.logsumexp(z, 1))
    return loss + pb.sort(z, 1).values[:, -2:].sum() * 0.1


def test_a_conv_pool_network_exports_as_numpy_and_runtime_helpers(tmp_path):
    w1, w2 = RNG.standard_normal((4, 2, 3, 3)), RNG.standard_normal((4, 3, 2, 2))
    x, y = RNG.standard_normal((3, 2, 6, 6)), np.array([0, 2, 1])
    path = tmp_path / "cnn.py"
    text = pb.export(_cnn, w1, w2, x, y, argnums=(0, 1), path=str(path))
    for call in ("rt.conv(", "rt.conv_transpose(", "rt.max_pool2d(", "rt.avg_pool2d(",
                 "rt.resample(", "rt.normalize(", "rt.logsumexp(", "rt.sort("):
        assert call in text, call
    assert "ops." not in text
    arrays = ", ".join(f"np.array({v.tolist()})" for v in (w1, w2, x, y))
    got = _run_without_pullback(path, f"[v.tolist() if hasattr(v, 'tolist') else [g.tolist() "
                                f"for g in v] for v in m.value_and_grad({arrays})]")
    value, grads = pb.value_and_grad(_cnn, argnums=(0, 1))(w1, w2, x, y)
    np.testing.assert_allclose(got[0], value, rtol=1e-12)
    for g, want in zip(got[1], grads):
        np.testing.assert_allclose(g, want, rtol=1e-12, atol=1e-14)


def test_a_guard_is_checked_and_an_unshippable_value_named():
    env: dict = {}
    exec(pb.export(lambda v: (v * 2).sum() if v.sum() > 0 else -v.sum(), np.ones(2)), env)
    assert float(env["forward"](np.full(2, 3.0))) == 12.0
    with pytest.raises(ValueError, match=r"<lambda> \(test_export.py:\d+\): guard 0: the "
                       r"exported code is for the value True, not False: these arguments "
                       "take another path"):
        env["forward"](-np.ones(2))
    with pytest.raises(pb.compiler.ExportError, match="bernoulli_keep"):  # reads a generator
        pb.export(lambda v: pb.nn.functional.dropout(pb.as_tensor(v), 0.5).sum(), np.ones(3))


def test_pytree_arguments_and_constant_arguments():
    f = lambda p, x: np.tanh(x @ p["w"] + p["b"]).sum()  # noqa: E731
    p, x = {"w": RNG.standard_normal((3, 2)), "b": RNG.standard_normal(2)}, np.ones((4, 3))
    env: dict = {}
    exec(pb.export(f, p, x), env)
    value, grads = env["value_and_grad"](p, x)
    want_value, want = pb.value_and_grad(f)(p, x)
    np.testing.assert_allclose(value, want_value, rtol=1e-12)
    for k in p:
        np.testing.assert_allclose(grads[k], want[k], rtol=1e-12)
    g = lambda w, n: (w ** 2).sum() * n  # noqa: E731
    exec(pb.export(g, np.ones(3), 3), env)
    np.testing.assert_allclose(env["value_and_grad"](np.ones(3), 3)[1], [6.0, 6.0, 6.0])
    with pytest.raises(ValueError, match="argument 1: the exported code is for 3, not 4"):
        env["forward"](np.ones(3), 4)


def _loop_steps(w, xs):
    h = np.zeros(2)
    for t in range(xs.shape[0]):
        h = np.tanh(w * h + xs[t])
    return h.sum()


def test_a_call_with_other_shapes_is_refused_naming_function_and_argument():
    # (the loop ran xs.shape[0] = 3 times in the trace: 5 rows gave the 3-step answer)
    env: dict = {}
    exec(pb.export(_loop_steps, np.ones(2), np.ones((3, 2))), env)
    with pytest.raises(ValueError, match=r"_loop_steps \(.*\): argument 1 \(xs\) has shape "
                       r"\(5, 2\); the exported code is for \(3, 2\)"):
        env["forward"](np.ones(2), np.ones((5, 2)))
    with pytest.raises(ValueError, match=r"argument 1 \(xs\) has shape"):
        env["value_and_grad"](np.ones(2), np.ones((5, 2)))
    with pytest.raises(TypeError, match=r"_loop_steps \(.*\): expected 2 arguments "
                       r"\(w, xs\), got 1"):
        env["forward"](np.ones(2))
    f = lambda p, x: (p["w"] * x).sum()  # noqa: E731
    exec(pb.export(f, {"w": np.ones(3)}, np.ones(3)), env)
    with pytest.raises(ValueError, match=r"argument 0 \(p\['w'\]\) has shape \(2,\)"):
        env["forward"]({"w": np.ones(2)}, np.ones(2))


def test_named_tuples_and_tuples_of_literals_as_arguments():
    from collections import namedtuple
    Params = namedtuple("Params", "w b")
    f = lambda p, x, axes: ((x @ p.w + p.b) ** 2).sum(axis=axes)  # noqa: E731
    args = (Params(RNG.standard_normal((3, 2)), RNG.standard_normal(2)), np.ones((4, 3)),
            (0, 1))
    env: dict = {}
    exec(pb.export(f, *args), env)
    value, grads = env["value_and_grad"](*args)
    want_value, want = pb.value_and_grad(f)(*args)
    assert type(grads) is Params
    np.testing.assert_allclose(grads.w, want.w, rtol=1e-12)
    np.testing.assert_allclose(value, want_value, rtol=1e-12)
    with pytest.raises(pb.compiler.ExportError, match=r"argument 1 \(p\[1\]\) of .* is a "
                       "function"):
        pb.export(lambda x, p: p[1](x).sum(), np.ones(3), (1, lambda v: np.tanh(v)))


def test_a_function_without_a_scalar_value_exports_forward_and_backward():
    # was: ExportError "value_and_grad needs a scalar value" unless argnums=None, which
    # exported the forward alone: a prediction function had no gradient code to ship
    predict = lambda w, x: np.tanh(x @ w)  # noqa: E731
    text = pb.export(predict, np.ones(2), np.eye(2))
    assert "def backward(*args, grad_output=None)" in text
    assert "def value_and_grad" not in text and "value_and_grad(*args)" not in text
    env: dict = {}
    exec(text, env)
    np.testing.assert_allclose(env["forward"](np.ones(2), np.eye(2)), np.tanh(np.ones(2)))
    with pytest.raises(TypeError, match=r"<lambda> \(.*\): backward needs grad_output=, a "
                       r"cotangent shaped like the output \(shape \(2,\)\); only a scalar"):
        env["backward"](np.ones(2), np.eye(2))
    text = pb.export(predict, np.ones(2), np.eye(2), argnums=None)
    assert "def backward" not in text and "def value_and_grad" not in text
    with pytest.raises(pb.compiler.ExportError, match=r"export: .*<lambda> \(.*\): no float "
                       r"output depends on argument 0; pass argnums=None"):
        pb.export(lambda w, x: np.argmax(x @ w), np.ones(2), np.eye(2))


def test_a_forward_returns_what_the_function_returns():
    # (argnums=None: the forward gave a flat tuple for a dict, and dropped a returned
    # argument and a returned constant)
    f = lambda x: {"a": (x ** 2).sum(), "b": [x * 2, x], "n": 3}  # noqa: E731
    env: dict = {}
    exec(pb.export(f, np.ones(2), argnums=None), env)
    got = env["forward"](np.arange(2.0))
    assert sorted(got) == ["a", "b", "n"] and got["n"] == 3 and type(got["b"]) is list
    np.testing.assert_allclose(got["b"][1], [0.0, 1.0])
    np.testing.assert_allclose(got["b"][0], [0.0, 2.0])
    exec(pb.export(lambda x: (x * 2, 3), np.ones(2), argnums=None), env)
    out = env["forward"](np.ones(2))
    assert type(out) is tuple and out[1] == 3


def test_shipped_helpers_define_each_name_once():
    # (was: PAIRWISE_BLOCK = 128 written twice, above each helper that read it)
    import ast
    f = lambda z, y: pb.nn.functional.cross_entropy(pb.as_tensor(z), y)  # noqa: E731
    text = pb.export(f, RNG.standard_normal((4, 3)), np.array([0, 2, 1, 0]))
    names = [t.id for node in ast.parse(text).body if isinstance(node, ast.Assign)
             for t in node.targets if isinstance(t, ast.Name)]
    names += [n.name for n in ast.parse(text).body if isinstance(n, ast.FunctionDef)]
    assert "PAIRWISE_BLOCK" in names and len(names) == len(set(names)), sorted(names)
    assert "_captured" not in text  # (nothing read from outside the function)


def test_a_call_with_another_dtype_kind_or_structure_is_refused_naming_it():
    # (float targets gave IndexError "index 0 is out of bounds for axis 0 with size 0";
    # a dict without a key "list index out of range"; one more key a shape error on
    # another key)
    f = lambda p, y: pb.nn.functional.cross_entropy(pb.as_tensor(p["z"]), y)  # noqa: E731
    p, y = {"z": RNG.standard_normal((4, 3))}, np.array([0, 2, 1, 0])
    env: dict = {}
    exec(pb.export(f, p, y), env)
    with pytest.raises(TypeError, match=r"argument 1 \(y\) has dtype float64; the exported "
                       r"code is for int64"):
        env["forward"](p, y.astype(float))
    with pytest.raises(ValueError, match=r"argument 0 \(p\) holds \[\]; the exported code "
                       r"is for \[\"\['z'\]\"\]"):
        env["forward"]({}, y)
    with pytest.raises(ValueError, match=r"argument 0 \(p\) holds \[\"\['a'\]\", "):
        env["forward"]({"a": np.ones(2), **p}, y)
    np.testing.assert_allclose(env["forward"](p, y.astype(np.int32)), env["forward"](p, y))


def _tanh_rnn(w, xs):
    """A tanh RNN as a Python for loop, its hidden states returned."""
    h, hs = np.zeros(3), []
    for t in range(xs.shape[0]):
        h = np.tanh(h * w + xs[t])
        hs.append(h)
    return np.stack(hs)


def _two_heads(w, x):
    h = np.tanh(x @ W[:3] + w)
    return {"mean": h.mean(0), "energy": (h ** 2).sum(), "rows": x.shape[0]}


def _inner(ct, out):
    """<out, ct> for outputs and cotangents of the same structure (ints: no cotangent)."""
    if isinstance(out, dict):
        return sum(_inner(ct[k], out[k]) for k in out)
    if isinstance(out, int):
        return 0.0
    return float(np.sum(np.asarray(ct) * out))


def _source(value):
    """Python source of an array, a float, None or a dict of them."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_source(v)}" for k, v in value.items()) + "}"
    return f"np.array({value.tolist()})" if isinstance(value, np.ndarray) else repr(value)


def _differences(fn, w, x, ct, eps=1e-6):
    """Central differences of <fn(w, x), ct> with respect to w."""
    grad = np.zeros_like(w)
    for i in np.ndindex(w.shape):
        step = np.zeros_like(w)
        step[i] = eps
        grad[i] = (_inner(ct, fn(w + step, x)) - _inner(ct, fn(w - step, x))) / (2 * eps)
    return grad


@pytest.mark.parametrize("fn, args, ct", [
    (mlp, (RNG.standard_normal(3), RNG.standard_normal((5, 4))), None),  # default 1.0
    (lambda w, x: np.tanh(x @ w), (RNG.standard_normal(4), RNG.standard_normal((5, 4))),
     RNG.standard_normal(5)),
    (_two_heads, (RNG.standard_normal(3), RNG.standard_normal((5, 3))),
     {"mean": RNG.standard_normal(3), "energy": 0.5, "rows": None}),
    (_tanh_rnn, (RNG.standard_normal(3), RNG.standard_normal((6, 3))),
     RNG.standard_normal((6, 3))),
], ids=["scalar loss", "vector", "dict", "rnn loop"])
def test_backward_runs_without_pullback_and_agrees_with_vjp_and_differences(tmp_path, fn,
                                                                             args, ct):
    path = tmp_path / "exported.py"
    text = pb.export(fn, *args, path=str(path))
    assert ("def value_and_grad" in text) == (ct is None)
    if fn is _tanh_rnn:
        assert "for i in range(6 - 1, -1, -1):" in text  # its backward a loop too
    assert "# grad of: " in text[text.index("def _backward():"):]
    w, x = args
    given = f"{_source(w)}, {_source(x)}" + ("" if ct is None else
                                             f", grad_output={_source(ct)}")
    got = _run_without_pullback(path, f"m.backward({given}).tolist()")
    if isinstance(ct, dict):  # (pb.vjp's output holds tensors only: no int leaf)
        want = pb.vjp(lambda w, x: {k: v for k, v in fn(w, x).items() if k != "rows"},
                      *args)[1]({k: v for k, v in ct.items() if k != "rows"})[0]
    else:
        want = pb.vjp(fn, *args)[1](np.ones(()) if ct is None else ct)[0]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(got, _differences(fn, w, x, 1.0 if ct is None else ct),
                               rtol=1e-6, atol=1e-8)


def test_backward_checks_its_arguments_and_the_cotangent_naming_them():
    env: dict = {}
    exec(pb.export(_two_heads, np.ones(3), np.ones((5, 3)), argnums=(1, 0)), env)
    ct = {"mean": np.ones(3), "energy": 1.0, "rows": None}
    gx, gw = env["backward"](np.ones(3), np.ones((5, 3)), grad_output=ct)
    np.testing.assert_array_equal(ct["mean"], np.ones(3))  # (the cotangent: not written)
    want = pb.vjp(lambda w, x: {k: v for k, v in _two_heads(w, x).items() if k != "rows"},
                  np.ones(3), np.ones((5, 3)))[1]({"mean": np.ones(3), "energy": 1.0})
    np.testing.assert_allclose(gw, want[0], rtol=1e-12)
    np.testing.assert_allclose(gx, want[1], rtol=1e-12)
    with pytest.raises(ValueError, match=r"_two_heads \(.*\): argument 1 \(x\) has shape "
                       r"\(4, 3\); the exported code is for \(5, 3\)"):
        env["backward"](np.ones(3), np.ones((4, 3)), grad_output=ct)
    with pytest.raises(ValueError, match=r"_two_heads \(.*\): grad_output\['mean'\] has "
                       r"shape \(2,\); the output there has shape \(3,\)"):
        env["backward"](np.ones(3), np.ones((5, 3)), grad_output={**ct, "mean": np.ones(2)})
    with pytest.raises(ValueError, match=r"grad_output is \['energy', 'mean'\]; the output "
                       r"there is a dict with keys \['energy', 'mean', 'rows'\]"):
        env["backward"](np.ones(3), np.ones((5, 3)), grad_output={"mean": 1, "energy": 1})
    with pytest.raises(TypeError, match=r"backward needs grad_output=, a cotangent shaped "
                       r"like the output \(\{'mean': shape \(3,\), 'energy': shape \(\), "
                       r"'rows': 5\}\)"):
        env["backward"](np.ones(3), np.ones((5, 3)))


def test_backward_of_a_returned_argument_and_a_list_output():
    # (an argument returned as it is: its cotangent is its gradient, as in pb.vjp)
    f = lambda w, x: [w, (w * x).sum()]  # noqa: E731
    env: dict = {}
    exec(pb.export(f, np.ones(3), np.arange(3.0)), env)
    got = env["backward"](np.ones(3), np.arange(3.0), grad_output=[np.ones(3), 2.0])
    want = pb.vjp(f, np.ones(3), np.arange(3.0))[1]([np.ones(3), 2.0])[0]
    np.testing.assert_allclose(got, want)
    np.testing.assert_allclose(got, [1.0, 3.0, 5.0])
    with pytest.raises(ValueError, match=r"grad_output is a tuple of 2; the output there is "
                       r"a list of 2"):
        env["backward"](np.ones(3), np.arange(3.0), grad_output=(np.ones(3), 2.0))


COUNT = [0]


def _counted(x):
    COUNT[0] += 1
    return np.sum(x) * COUNT[0]


def _printed(x):
    y = np.sum(x)
    print("y", y)
    return y * 2


def _formatted(x):
    y = np.sum(x)
    print(f"y {float(y):.3f}")
    return y * 2


def test_a_write_outside_the_function_is_refused_naming_its_line():
    with pytest.raises(pb.compiler.ExportError, match=r"export: _counted \(test_export.py:\d+: "
                       r"COUNT\[0\] \+= 1\) changes Python state outside it, which an "
                       r"exported module cannot change; move the change out"):
        pb.export(_counted, np.ones(3))
    assert COUNT == [0]


def test_plain_print_is_exported_and_a_formatted_one_refused(capsys):
    env: dict = {}
    exec(pb.export(_printed, np.ones(3)), env)
    capsys.readouterr()
    value, grad = env["value_and_grad"](np.arange(3.0))
    assert float(value) == 6.0 and capsys.readouterr().out == "y 3.0\n"
    np.testing.assert_allclose(grad, [2.0, 2.0, 2.0])
    with pytest.raises(pb.compiler.ExportError, match=r"export: _formatted \(test_export.py:\d+: "
                       r"print\(f\"y \{float\(y\):.3f\}\"\)\) calls print, which the "
                       r"exported module could run only through pullback"):
        pb.export(_formatted, np.ones(3))


def test_a_function_without_source_whose_traces_disagree_is_refused():
    # (no source: the counter is read as a Python int, a different one in each trace)
    env = {"np": np}
    exec("N = [0]\ndef f(x):\n    N[0] += 1\n    return np.sum(x) * N[0]\n", env)
    with pytest.raises(pb.compiler.ExportError, match=r"export: f \(<string>:2\) traced "
                       r"differently for forward and for backward at <string>:4: it reads "
                       r"Python state that its calls change"):
        pb.export(env["f"], np.ones(3))
    # (the same without the counter exports, its three functions agreeing)
    exec("def g(x):\n    return np.sum(x) * 2\n", env)
    out: dict = {}
    exec(pb.export(env["g"], np.ones(3)), out)
    assert out["forward"](np.ones(3)) == out["value_and_grad"](np.ones(3))[0] == 6.0


RS = np.random.RandomState(0)


def _drawn(x):
    return np.sum(x * RS.randn(3))


def test_a_random_draw_is_refused_naming_its_line():
    with pytest.raises(pb.compiler.ExportError, match=r"export: _drawn \(test_export.py:"
                       r"\d+: return np.sum\(x \* RS.randn\(3\)\)\) draws from a random "
                       r"generator \(RandomState.randn\)"):
        pb.export(_drawn, np.ones(3))
