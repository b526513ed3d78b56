"""Generated modules: what their source may contain, where they are dumped, how long
``linecache`` keeps them, and how naming scales."""

from __future__ import annotations

import enum
import gc
import linecache
import os
import random
import re
import warnings

import numpy as np
import pytest
from pullback.transforms import codegen, codegen_modules, codegen_text

import pullback as pb
from pullback import config
from pullback.compiler import replay
from pullback.compiler.user_lines import SourceLine
from pullback.ir import Graph
from pullback.ir.naming import RESERVED, TEMP_PREFIX, Namespace, sanitize
from pullback.ops import OPS

RAN: list = []  # what the malicious reprs below would append to, if their text were run
_HOOK = f"__import__('sys').modules[{__name__!r}].RAN.append(1)"


@pytest.fixture(autouse=True)
def no_runs_yet():
    RAN.clear()


class Malicious(int):
    def __repr__(self) -> str:
        return f"({_HOOK} or 1)"


class Scale(float):
    def __repr__(self) -> str:
        return f"({_HOOK} or 2.0)"


class Color(enum.IntEnum):
    RED = 1
    BLUE = 3


def _both(fn, x: np.ndarray) -> tuple:
    """fn's value through pb.compile (second call: the generated code) and its gradient
    through pb.grad (second call too), each checked against eager autograd."""
    t = pb.tensor(x, requires_grad=True)
    fn(t).backward()
    want_value, want_grad = fn(pb.tensor(x)).item(), t.grad.numpy()
    cf, g = pb.compile(fn), pb.grad(fn)
    for _ in range(2):
        t = pb.tensor(x, requires_grad=True)
        out = cf(t)
        out.backward()
        assert out.item() == pytest.approx(want_value)
        np.testing.assert_allclose(t.grad.numpy(), want_grad)
        np.testing.assert_allclose(g(x), want_grad)
    return cf, g


# ------------------------------------------------------------ literals in source
def test_a_malicious_int_repr_never_runs():
    cf, _ = _both(lambda x: (x[Malicious(1)] * 3).sum() + x[:Malicious(2)].sum(),
                  np.arange(6.0).reshape(3, 2))
    assert RAN == []
    assert "RAN" not in cf.cache.variants()[0].forward.source


def test_a_float_subclass_param_is_written_as_its_float():
    cf, _ = _both(lambda x: (x * Scale(2.5)).sum(), np.arange(4.0))
    assert RAN == []
    assert "2.5" in cf.cache.variants()[0].forward.source


def test_an_int_enum_index_in_compile_and_grad():
    cf, g = _both(lambda x: (x[Color.RED] * 2).sum(), np.arange(6.0).reshape(3, 2))
    np.testing.assert_array_equal(g(np.zeros((3, 2))), [[0, 0], [2, 2], [0, 0]])
    assert "t0 = x[1]\n" in cf.cache.variants()[0].forward.source


def test_slices_with_int_enum_bounds():
    _, g = _both(lambda x: (x[Color.RED:Color.BLUE] ** 2).sum() + x[::Color.BLUE].sum(),
                 np.arange(5.0))
    np.testing.assert_array_equal(g(np.ones(5)), [1, 2, 2, 1, 0])


@pytest.mark.parametrize("value", [
    None, ..., True, -3, 2**63 - 1, 0.1, -0.0, float("inf"), float("nan"), complex(-0.0, -0.0),
    complex(float("inf"), 1), "mean", b"\x00'", np.float32(0.1), np.float64(-0.0),
    np.int64(7), np.uint8(255), np.bool_(True), np.complex64(1 - 2j), np.float16(np.nan),
    (1, (2, slice(None, -1, 2))), np.dtype("float32"), np.dtype("int64"), np.dtype(">f8"),
    2**200, [1, 2], Color.RED, Malicious(5), Scale(0.5)])
def test_a_literal_evaluates_to_its_value_of_the_same_type(value):
    em = codegen._Emitter(Graph([], [], []))
    got = eval(em.literal(value), em.globals)  # noqa: S307 - the generated text
    if isinstance(value, np.dtype):  # written as its scalar type where readable
        assert np.dtype(got) == value
    else:
        assert type(got) is {Color: int, Malicious: int, Scale: float}.get(type(value),
                                                                          type(value))
        assert _same(got, value)
    assert RAN == []


def _same(a, b) -> bool:
    if isinstance(a, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, (float, complex, np.inexact)):
        return np.array(a).tobytes() == np.array(b).tobytes() or (np.isnan(a) and np.isnan(b))
    return a == b


def test_only_plain_dtypes_and_known_numbers_are_written_inline():
    em = codegen._Emitter(Graph([], [], []))
    assert em.literal(np.dtype(">f8")).startswith("c")  # byte-swapped: bound
    assert em.literal(2**200).startswith("c")           # long: bound
    assert em.literal([1, 2]).startswith("c")
    assert em.literal(np.float32(0.5)) == "np.float32(0.5)"
    assert em.literal(Color.BLUE) == "3"


def test_function_names_python_reads_differently_still_compile():
    def f(x):
        return (x * 2).sum()

    for name in ["a-b²", "ﬁ", "0 abc", "x\ny"]:
        f.__name__ = f.__qualname__ = name
        np.testing.assert_array_equal(pb.grad(f)(np.ones(2)), [2.0, 2.0])
    assert [sanitize(s) for s in ["ﬁ", "x²", "ｉｆ", "·x", "é"]] == ["fi", "x2", "if_", "v_·x", "é"]


def test_comments_stay_one_line():
    src = SourceLine("a\nb.py", 1, "f", "y = x\u2028import os\r")
    text = codegen_text._comment_text(src, "grad of")
    assert len(text.splitlines()) == 1 and text.startswith("# grad of:")


# ------------------------------------------------------------------ dump files
def _dumped(tmp_path, monkeypatch, names: list) -> list:
    """Compile a few functions with dumping on; the warnings it gave."""
    monkeypatch.setattr(config, "dump_dir", os.fspath(tmp_path))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for k, name in enumerate(names):
            def f(x, k=k):
                return (x * k).exp().sum()
            f.__name__ = f.__qualname__ = name
            x = pb.ones(2, requires_grad=True)
            pb.compile(f)(x).backward()
            np.testing.assert_allclose(x.grad.numpy(), k * np.exp([k, k]))
    return [w for w in caught if "dump_dir" in str(w.message)]


def test_dump_files_are_new_files_with_unguessable_names(tmp_path, monkeypatch):
    assert _dumped(tmp_path, monkeypatch, ["f", "f"]) == []
    paths = sorted(tmp_path.iterdir())
    assert len(paths) == 4  # two forward and two backward modules, none overwritten
    assert all(re.fullmatch(r"f_(forward|backward)_[0-9a-f]{8}\.py", p.name) for p in paths)
    assert sum("def f_forward(" in p.read_text() for p in paths) == 2


def test_a_planted_symlink_is_not_followed(tmp_path, monkeypatch):
    target = tmp_path / "target.txt"
    target.write_text("precious")
    dump = tmp_path / "dump"
    dump.mkdir()
    (dump / "f_forward_deadbeef.py").symlink_to(target)
    tokens = iter(["deadbeef", "00000001", "00000002"])
    monkeypatch.setattr(config, "cache_dir", None)  # (its files' names take tokens too)
    monkeypatch.setattr(codegen_modules.secrets, "token_hex", lambda n: next(tokens))
    assert _dumped(dump, monkeypatch, ["f"]) == []
    assert target.read_text() == "precious"
    assert sorted(p.name for p in dump.iterdir()) == [
        "f_backward_00000002.py", "f_forward_00000001.py", "f_forward_deadbeef.py"]


@pytest.mark.parametrize("where", ["a file", "under a file"])
def test_an_unusable_dump_dir_warns_once_and_compiles_on(tmp_path, monkeypatch, where):
    (tmp_path / "file").write_text("")
    bad = tmp_path / "file" if where == "a file" else tmp_path / "file" / "sub"
    warned = _dumped(bad, monkeypatch, ["f", "g", "h"])
    assert len(warned) == 1
    message = str(warned[0].message)
    assert repr(os.fspath(bad)) in message and "pb.config.dump_dir" in message


# ----------------------------------------------------------- linecache, caches
def _entries() -> set:
    return {k for k in linecache.cache if k.startswith("<pullback:")}


def test_source_is_in_linecache_while_the_module_lives():
    cf = pb.compile(lambda x: pb.log(x).sum())
    cf(pb.ones(2))
    filename = cf.cache.variants()[0].forward.filename
    linecache.checkcache()
    assert linecache.getline(filename, 1).startswith("def ")
    cf.cache.clear()  # evicted
    gc.collect()
    assert filename not in linecache.cache


def test_changing_int_arguments_keep_linecache_bounded(monkeypatch):
    monkeypatch.setattr(config, "cache_size", 16)
    before = _entries()
    cf = pb.compile(lambda x, k: x * k)
    x = pb.ones(3)
    for k in range(3000):
        cf(x, k)
    g = pb.grad(lambda x, k: (x * k).sum())
    cf2 = pb.compile(lambda x, k: (x * k).sum())
    x = pb.ones(3, requires_grad=True)
    for k in range(300):
        g(np.ones(3), k)
        cf2(x, k).backward()  # a forward and a backward module per variant
    gc.collect()
    assert cf.cache.info.size == g.cache.info.size == cf2.cache.info.size == 16
    assert len(_entries() - before) <= 16 + 16 + 2 * 16


def test_replay_keeps_linecache_bounded(monkeypatch):
    monkeypatch.setattr(config, "replay_cache_size", 16)
    replay.clear()
    before = _entries()
    for n in range(1, 401):  # 400 graph structures, each run twice: built once
        for _ in range(2):
            x = pb.ones(n, requires_grad=True)
            (x * 2).sum().backward()
    assert replay.STATS["built"] == 400
    gc.collect()
    assert len(_entries() - before) <= 16
    replay.clear()


# ---------------------------------------------------------------------- naming
class _CountingSet(set):
    checks = 0

    def __contains__(self, item) -> bool:
        _CountingSet.checks += 1
        return set.__contains__(self, item)


def _checks_to_name(monkeypatch, iterations: int) -> int:
    """Membership tests of every Namespace while pb.grad compiles a loop that reassigns
    one name ``iterations`` times."""
    init = Namespace.__init__

    def counting_init(self, reserved=None):
        init(self, reserved)
        self.used = _CountingSet(self.used)

    monkeypatch.setattr(Namespace, "__init__", counting_init)
    _CountingSet.checks = 0

    def f(h, w):
        for _ in range(iterations):
            h = h * w + h
        return h.sum()

    pb.grad(f)(np.ones(2), np.full(2, -0.5))
    return _CountingSet.checks


def test_naming_a_long_loop_is_linear(monkeypatch):
    small, large = _checks_to_name(monkeypatch, 200), _checks_to_name(monkeypatch, 400)
    assert large <= 2.2 * small  # quadratic naming made it 4x
    assert large <= 20 * 400     # a few tests per named value


def _reference_fresh(used: set, counter: list, hint):
    """Namespace.fresh as it was: try base, base_1, base_2, ... from the start."""
    if hint:
        base = sanitize(hint)
    else:
        base = f"{TEMP_PREFIX}{counter[0]}"
        counter[0] += 1
    name, n = base, 0
    while name in used:
        n += 1
        name = f"{base}_{n}"
    used.add(name)
    return name


def test_fresh_names_are_the_names_it_always_gave():
    rng = random.Random(0)
    hints = ["x", "x_1", "x_2", "x_1_1", "x_10", "t0", "t1", "t1_1", None, "c", "lambda", "np"]
    for _ in range(200):
        ns, used, counter = Namespace(), set(RESERVED), [0]
        for _ in range(40):
            hint = rng.choice(hints)
            assert ns.fresh(hint) == _reference_fresh(used, counter, hint)


# --------------------------------------- ops with a list input or several outputs
def _pieces(x, w):
    a0, a1 = x.split(2, dim=1)
    h = pb.cat([a0 * w, a1.tanh()], dim=0)
    first, rest = h.chunk(2, 1)
    return (h ** 2).sum() + first.sum()


def _lines(source: str) -> list:
    return [line.strip() for line in source.splitlines()]


def test_cat_and_split_read_as_numpy():
    x, w = np.arange(12.0).reshape(3, 4) / 10, np.ones((3, 2))
    g = pb.value_and_grad(_pieces, argnums=(0, 1))  # (pb.grad's code has no value: no first)
    g(x, w)
    lines = _lines(g.cache.variants()[0].module.source)
    for expected in ["a0, a1 = np.split(x, [2], axis=1)",
                     "h = np.concatenate([t0, t1], axis=0)",
                     "first, _ = np.split(h, [1], axis=1)",  # the unread piece is _
                     "t6 = np.zeros((6, 1), np.float64)",  # its zero gradient
                     "t7 = np.concatenate([g_first, t6], axis=1)",
                     "t8 = g_h[0:3]", "t9 = g_h[3:6]",  # cat's gradient: the pieces' slices
                     "g_x = np.concatenate([g_a0, g_a1], axis=1)"]:
        assert expected in lines, expected
    compiled = pb.compile(_pieces)
    info = pb.compiler.inspect(compiled, pb.tensor(x, requires_grad=True),
                               pb.tensor(w, requires_grad=True))
    assert "a0:f64[3,2] a1:f64[3,2] = split[dim=1 split_size=2] x" in info.ir
    assert "h:f64[6,2] = cat[dim=0] t0 tanh" in info.ir
    assert "a0, a1 = np.split(x, [2], axis=1)" in _lines(info.forward)
    assert "g_x = np.concatenate([g_a0, g_a1], axis=1)" in _lines(info.backward)


def test_stack_unbind_and_einsum_read_as_numpy():
    def f(x):
        r0, r1 = x.unbind(1)
        m = pb.stack([r1, r0 * 2], dim=-1)
        return pb.einsum("ij,ij->i", m, x).sum()

    g = pb.value_and_grad(f)  # (pb.grad's code computes no value)
    g(np.arange(6.0).reshape(3, 2))
    lines = _lines(g.cache.variants()[0].module.source)
    for expected in ["r0, r1 = x[:, 0, ...], x[:, 1, ...]",
                     "m = np.stack([r1, t0], axis=1)",
                     "t1 = np.einsum('ij,ij->i', m, x)",
                     "g_m = np.einsum('i,ij->ij', t3, x)",
                     "g_r1 = g_m[:, 0]",  # stack's gradient: selects
                     "g_x = np.stack([g_r0, g_r1], axis=1)"]:  # unbind's: a stack
        assert expected in lines, expected


def test_many_pieces_of_unbind_iterate_with_a_name_of_their_own():
    def f(k):
        return pb.stack(k.unbind(1), 0).sum()

    g = pb.value_and_grad(f)
    np.testing.assert_array_equal(g(np.ones((2, 6)))[1], np.ones((2, 6)))
    assert "t0, t1, t2, t3, t4, t5 = (k[:, j, ...] for j in range(6))" in _lines(
        g.cache.variants()[0].module.source)
    total, pieces = pb.compile(lambda x: (x.sum(), x.unbind(0)))(pb.ones(0, 3))
    assert pieces == () and total.item() == 0


def test_a_join_of_dtypes_numpy_promotes_otherwise_names_torchs():
    def f(x, i):
        return pb.cat([x, i], 1).sum()

    compiled = pb.compile(f)
    info = pb.compiler.inspect(compiled, pb.tensor(np.ones((3, 2), np.float32),
                                                   requires_grad=True),
                               pb.tensor(np.arange(3)[:, None]))
    assert "t0 = np.concatenate([x, i], axis=1, dtype=np.float32)" in _lines(info.forward)


def test_only_the_listed_ops_print_as_calls_into_the_op_table():
    # every other op prints as numpy or a plain numpy helper of pullback.ops.runtime
    # (rt.<name>); these draw from pullback's generator (uniform, normal, integers,
    # bernoulli_keep, gumbel_noise), take a chain of view ops as a param (embed; view_chain
    # and view_scatter print as numpy for a chain of one index, else as calls), or are
    # regions that print as loops (scan, while, switch)
    assert sorted(name for name, op in OPS.items() if op.template is None) == [
        "bernoulli_keep", "embed", "gumbel_noise", "integers", "normal", "scan", "switch",
        "uniform", "while"]


def test_a_write_through_one_index_prints_as_numpy_and_exports_without_view_chains():
    # was: t1 = np.float64(0.0); R_1 = ops.view_scatter(R, t1, chain=c_1), and the
    # backward's ops.view_chain(g_R_2, chain=c): a chain of view ops a reader cannot follow
    # (an exported module shipped pullback's view machinery for it)
    def f(d):
        r = pb.zeros(3, 3)
        r[1, :] = d[0]
        r[0, 1:] = 2.0
        return (r * d).sum()

    d = np.arange(9.0).reshape(3, 3) / 7
    info = pb.compiler.inspect(pb.compile(f), pb.tensor(d, requires_grad=True))
    code = info.forward + info.backward
    assert "ops." not in code, code
    assert "rt.index_put(r, np.s_[1, :], " in code and "np.s_[0, 1:]" in code
    text = pb.export(f, d)
    assert "view_scatter" not in text and "_apply_chain" not in text
    env: dict = {}
    exec(text, env)
    value, grad = env["value_and_grad"](d)
    want_value, want = pb.value_and_grad(f)(d)
    np.testing.assert_allclose(value, want_value, rtol=1e-12)
    np.testing.assert_allclose(grad, want, rtol=1e-12)


def test_a_dicts_tensors_are_named_by_their_keys():
    # was: params_0, params_1... by their place in the sorted keys: g_params_1 for b2
    def loss(params, x):
        h = np.tanh(x @ params["w1"] + params["b1"])
        return (h @ params["w2"]).sum()

    params = {"w1": np.ones((3, 2)), "b1": np.ones(2), "w2": np.ones((2, 1))}
    info = pb.compiler.inspect(pb.grad(loss), params, np.ones((4, 3)))
    code = info.backward if info.backward else info.forward
    assert "params_w1" in code and "g_params_b1" in code and "params_0" not in code, code


def test_inspect_without_the_example_arguments_says_to_pass_them():
    """pb.compiler.inspect(g) after calling g: the arguments pick the variant, so it asks
    for them (it said "Got argnum=0, but only 0 positional inputs", or the function's own
    TypeError from inside a trace); a function of no arguments is inspected as it is."""
    def loss(w, x):
        return np.tanh(x @ w).sum()

    for fn in (pb.grad(loss), pb.value_and_grad(loss), pb.compile(loss)):
        with pytest.raises(TypeError, match=r"inspect\(fn, \*args\): loss\(w, x\) takes "
                                            r"arguments: pass the ones to inspect it for"):
            pb.compiler.inspect(fn)
    assert "ones" in pb.compiler.inspect(pb.compile(lambda: pb.ones(2).sum())).forward
