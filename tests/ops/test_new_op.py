"""An op is one declaration: a new op declared after import works everywhere at once.

The program below runs in a fresh interpreter, so the op it declares does not join
the op table of the other tests (whose case table must cover every op).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

PROGRAM = textwrap.dedent('''
    import warnings
    import numpy as np
    import pullback as pb
    import pullback.nn.functional as F
    from pullback.ops import defop

    warnings.simplefilter("error")  # nothing on the way may warn
    # (numpy's cbrt is in the table already: this one is named cuberoot; a numpy
    # implementation declared later is shown with np.astype below)
    cuberoot = defop("cuberoot", np.cbrt, "CbrtBackward0",
                     vjp=(lambda g, out, x: g / (3 * out * out),), uses=("out",),
                     template="np.cbrt({0})", function=True, method=True, inplace=True,
                     functional=True)

    x0 = np.array([1.0, 8.0, 27.0])
    want = 1 / (3 * np.cbrt(x0) ** 2)       # d/dx x^(1/3)
    want2 = -2 / (9 * np.cbrt(x0) ** 5)     # and its second derivative

    def check(got, expected, what):
        got = got.numpy() if isinstance(got, pb.Tensor) else np.asarray(got)
        assert np.allclose(got, expected), (what, got, expected)
        print("ok", what)

    # pb.<name>, Tensor.<name> and nn.functional, eagerly
    for how, f in [("pb.cuberoot", pb.cuberoot), ("Tensor.cuberoot", lambda t: t.cuberoot()),
                   ("F.cuberoot", F.cuberoot)]:
        x = pb.tensor(x0, requires_grad=True)
        y = f(x)
        assert type(y.grad_fn).__name__ == "CbrtBackward0", (how, y.grad_fn)
        y.sum().backward()
        check(x.grad, want, how)

    # the in-place form, with torch's version counter
    x = pb.tensor(x0, requires_grad=True)
    y = x * 1
    y.cuberoot_()
    assert y._version == 1 and type(y.grad_fn).__name__ == "CbrtBackward0"
    y.sum().backward()
    check(x.grad, want, "Tensor.cuberoot_")

    # create_graph: the rule is written with pullback ops, so it differentiates again
    x = pb.tensor(x0, requires_grad=True)
    (g,) = pb.autograd.grad(pb.cuberoot(x).sum(), x, create_graph=True)
    (gg,) = pb.autograd.grad(g.sum(), x)
    check(gg, want2, "second derivative")

    # a graph seen twice runs its backward as generated code (the replay)
    from pullback.compiler import replay
    replay.clear()
    for _ in range(3):
        x = pb.tensor(x0, requires_grad=True)
        pb.cuberoot(x * 2).sum().backward()
    assert replay.STATS["cached"] == 1, replay.STATS
    check(x.grad, 2 / (3 * np.cbrt(2 * x0) ** 2), "replayed backward")

    # the compiler: its template in generated code, its rule in the adjoint
    @pb.compile
    def f(x):
        return pb.cuberoot(x).sum()

    x = pb.tensor(x0, requires_grad=True)
    f(x).backward()
    check(x.grad, want, "pb.compile")
    assert "np.cbrt(x)" in pb.compiler.inspect(f, x).forward
    check(pb.grad(lambda v: pb.cuberoot(v).sum())(x0), want, "pb.grad")
    check(pb.grad(pb.grad(lambda v: pb.cuberoot(v)))(8.0), -2 / (9 * 2.0 ** 5), "grad of grad")

    # a numpy implementation declared later reaches numpy's function under pb.grad:
    # np.astype of an ndarray (here composed of a cast; the face's methods that are
    # numpy's functions, x.trace(), follow the table the same way: test_numpy_face.py)
    from pullback.ops import public
    from pullback.ops.elementwise import to_dtype

    def numpy_astype(x, dtype, /, *, copy=True, device=None):
        return to_dtype(x, dtype)

    public("astype_demo", numpy={np.astype: numpy_astype})(numpy_astype)
    check(pb.grad(lambda v: (np.astype(v * v, np.float32) * [1.0, 2.0, 3.0])
                  .sum())(x0), [2 * x0[0], 4 * x0[1], 6 * x0[2]], "numpy face method")
''')


def test_one_declaration_makes_a_working_op() -> None:
    done = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("ok ") == 10, done.stdout


MULTI_PROGRAM = textwrap.dedent('''
    import warnings
    import numpy as np
    import pullback as pb
    from pullback.ops import defop, public

    warnings.simplefilter("error")
    # two outputs: the rule gets g and out as (sin, cos) pairs, zeros for a missing g
    sincos_op = defop("sincos", lambda x: (np.sin(x), np.cos(x)), "SincosBackward0",
                      outputs=("sin", "cos"), uses=("out",),
                      vjp=(lambda g, out, x: g.sin * out.cos - g.cos * out.sin,))
    # a list: one rule for every element
    addn_op = defop("addn", lambda *tensors: sum(tensors), "AddnBackward0", variadic=True,
                    vjp=(lambda g, out, tensors, i: g,),
                    template=lambda e, a, lit: " + ".join(a))

    @public("sincos", function=True, method=True)
    def sincos(input):
        return sincos_op(input)

    @public("addn", function=True)
    def addn(tensors):
        return addn_op(*tensors)

    x0 = np.array([0.5, 1.0, 2.0])

    def check(got, expected, what):
        got = got.numpy(force=True) if isinstance(got, pb.Tensor) else np.asarray(got)
        assert np.allclose(got, expected), (what, got, expected)
        print("ok", what)

    def loss(x):
        s, c = x.sincos()
        return (pb.addn([s, s * c, x]) * 2).sum()

    want = 2 * (np.cos(x0) + np.cos(2 * x0) + 1)
    x = pb.tensor(x0, requires_grad=True)
    s, c = pb.sincos(x)
    assert s.grad_fn is c.grad_fn and (s.output_nr, c.output_nr) == (0, 1)
    assert type(s.grad_fn).__name__ == "SincosBackward0"
    assert type(pb.addn([s, c]).grad_fn).__name__ == "AddnBackward0"
    s.sum().backward()
    check(x.grad, np.cos(x0), "one output's gradient, zeros for the other's")

    x = pb.tensor(x0, requires_grad=True)
    (g,) = pb.autograd.grad(loss(x), x, create_graph=True)
    check(g, want, "both outputs, and a list")
    (gg,) = pb.autograd.grad(g.sum(), x)
    check(gg, 2 * (-np.sin(x0) - 2 * np.sin(2 * x0)), "second derivative")

    from pullback.compiler import replay
    replay.clear()
    for _ in range(3):
        x = pb.tensor(x0, requires_grad=True)
        loss(x).backward()
    assert replay.STATS["cached"] == 1, replay.STATS
    check(x.grad, want, "replayed backward")

    f = pb.compile(loss)
    x = pb.tensor(x0, requires_grad=True)
    f(x).backward()
    check(x.grad, want, "pb.compile")
    source = pb.compiler.inspect(f, x).forward
    assert "s, c = ops.sincos(x)" in source and "s + t0 + x" in source, source
    check(pb.grad(loss)(x0), want, "pb.grad")
''')


def test_one_declaration_makes_a_multi_output_or_list_op() -> None:
    done = subprocess.run([sys.executable, "-c", MULTI_PROGRAM], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("ok ") == 6, done.stdout
