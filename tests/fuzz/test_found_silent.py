"""Silent wrong answers (and internal errors) the numpy fuzz family found
(numpy_programs.py), one program per mechanism and spelling, shrunk by hand.

Each program is checked as the fuzzer checks it (numpy_oracle.check: three calls, the
value against numpy, the derivative against central finite differences in float64, the
state f mutates against numpy's; or a clear error): pullback must give the right answer
or refuse, never a wrong number. The mechanisms are fixed (issues "Never a silently
wrong gradient" and "Silent wrong answers at the edges"); ``PENDING`` names a case
whose fix has not landed (an expected failure until it does).
"""

from __future__ import annotations

import pytest

from .numpy_oracle import check, report
from .numpy_programs import NProgram, Term


def program(door: str, expr: str, body: tuple = (), prelude: str = "", between: tuple = (),
            state: tuple = (), shape: tuple = (3,), layout: str = "C", out_t: bool = False,
            tol: str = "f64", seed: int = 1) -> NProgram:
    """f(x) = np.sum(<expr>) (a 1-vector of it for the vector doors) after ``body``."""
    term = Term("found", prelude, body, expr, between, state, tol)
    return NProgram(seed, door, shape, (term,), (1.0,), shape == (), layout, out_t)


def scalar(door: str, expr: str, **kw) -> NProgram:
    """x a Python float."""
    return program(door, expr, shape=(), **kw)


ODE = "np.array([0.5, -0.3]), np.array([0.0, 0.4, 0.8]), rtol=1e-10, atol=1e-10, args="

WHILE = ("import pullback as pb\ndef more(s):\n"
         "    return (np.sum(np.abs(s[0])) < 6.0) & (s[1] < 5)\n"
         "def grow(s):\n    return s[0] * 1.3 + np.tanh(s[0]) * 0.2, s[1] + 1\n")

FOUND = {
    "conv": {
        # a conversion to a Python number cuts the gradient; the rest still flows
        "float()": program("grad", "float(np.sum(x ** 2)) * 3.0 + np.sum(x)"),
        ".item()": program("grad", "np.sum(x) * np.max(x).item()"),
        "complex()": program("value_and_grad", "complex(np.sum(np.sin(x))).real + np.sum(x)"),
        "math.exp(float())": program("vjp", "math.exp(float(np.sum(x)) * 0.3) + np.sum(x)"),
        "float() of a Python-float x": scalar("grad", "float(np.sin(x)) * x"),
        ".tolist() rebuilt": program("grad", "np.sum(np.array(x.tolist()) ** 2) + np.sum(x)"),
        "sum(.tolist())": program("jacrev", "sum(np.sin(x).tolist()) + np.sum(x)"),
        "[float(v) for v in x]": program("grad", "sum([float(v) ** 2 for v in x]) + np.sum(x)"),
        "[v.item() for v in x]": program("vjp", "np.asarray([v.item() for v in x]) * x"),
        # integer and bool casts let the gradient through (numpy: a constant)
        "astype(int)": program("grad", "((3.0 * x).astype(int)) ** 2 + x"),
        "astype(bool)": program("value_and_grad", "x.astype(bool) * np.sin(x)"),
        "np.array(dtype=int)": program("jacrev", "np.array(x * 2.0, dtype=int) * x"),
        "astype(int32).astype(float)": program(
            "grad", "np.asarray(x * 3.0).astype(np.int32).astype(np.float64) * x"),
    },
    "inplace": {
        # numpy's in-place functions: the write is dropped (value and gradient wrong)
        "np.add.at into zeros": program(
            "value_and_grad", "b * b", ("b = np.zeros(3)", "np.add.at(b, [0, 0, 2], np.sin(x))")),
        "np.subtract.at into a derived array": program(
            "value_and_grad", "b * x", ("b = x * 2.0", "np.subtract.at(b, [0, 0, 2], np.tanh(x))")),
        "np.multiply.at": program(
            "jacrev", "b", ("b = np.exp(0.3 * x)", "np.multiply.at(b, [0, 0, 2], np.sin(x))")),
        "np.maximum.at": program(
            "value_and_grad", "b", ("b = np.zeros(3)", "np.maximum.at(b, [0, 0, 2], np.sin(x))")),
        "np.copyto": program("value_and_grad", "b * x", ("b = x * 1.5", "np.copyto(b, np.sin(x))")),
        "np.copyto(where=)": program(
            "grad", "b * x", ("b = x * 1.5", "np.copyto(b, np.sin(x), where=b > 0.1)")),
        "np.put": program(
            "value_and_grad", "b * x", ("b = x * 1.5", "np.put(b, [0, 2], x[:2] ** 2)")),
        "np.putmask": program(
            "value_and_grad", "b * x", ("b = x * 1.5", "np.putmask(b, b > 0, np.sin(x))")),
        "np.place": program("grad", "b * x", ("b = x * 1.5", "np.place(b, b > 0, np.exp(x)[:1])")),
        "np.put_along_axis": program(
            "value_and_grad", "b * x",
            ("b = x * 1.5", "np.put_along_axis(b, np.array([2, 0]), x[:2] ** 2, axis=0)")),
        "np.fill_diagonal": program(
            "value_and_grad", "m @ x[:2]",
            ("m = np.outer(x[:2], np.sin(x[:2]))", "np.fill_diagonal(m, x[:2] ** 2)")),
        # setitem with a repeated index: numpy's value (last write wins), a wrong gradient
        "b[[0, 0, 1]] = v": program(
            "grad", "b * x", ("b = np.ones(3)", "b[[0, 0, 1]] = np.sin(x)")),
        "b[[1, 1, 1]] += v": program(
            "grad", "b * x", ("b = x * 1.0", "b[np.array([1, 1, 1])] += np.cos(x) * x")),
        "b[[2, 0, 2]] *= v": program(
            "vjp", "b * x", ("b = x * 1.0", "b[[2, 0, 2]] *= np.cos(x)")),
    },
    "odeint": {
        # odeint's args: traced values inside lists or tuples are taken as constants
        "odeint args=([W],)": program(
            "jacrev", "scipy.integrate.odeint(fld, " + ODE + "([x[:2]],))",
            prelude="def fld(y, t, ps):\n    for W in ps:\n        y = np.tanh(y * W)\n"
                    "    return y\n", tol="ode"),
        "odeint args=((W, b),)": program(
            "vjp", "scipy.integrate.odeint(fld, " + ODE + "((x[:2], 0.1 * x[-2:]),))",
            prelude="def fld(y, t, ps):\n    W, b = ps\n    return -W * y + b\n", tol="ode"),
        "odeint args=([(W, b)],)": program(
            "grad",
            "np.sum(scipy.integrate.odeint(fld, " + ODE + "([(x[:2], 0.1 * x[-2:])],))) + x",
            prelude="def fld(y, t, ps):\n    for W, b in ps:\n        y = np.tanh(y * W + b)\n"
                    "    return y\n", tol="ode"),
    },
    "guards": {
        # what f captures, rebound or mutated between calls: the old trace runs on
        "a rebound global function": program(
            "grad", "g(x) * 2.0", prelude="g = np.sin\n", between=("g = np.cos", "g = np.sin")),
        "a redefined helper": program(
            "value_and_grad", "q(x)", prelude="def q(v):\n    return np.sin(v) * v\n",
            between=("def q(v):\n    return np.cos(v) + v\n",
                     "def q(v):\n    return np.sin(v) * v\n")),
        "a helper's __defaults__": program(
            "grad", "q(x)", prelude="def q(v, s=1.0):\n    return np.tanh(v) * s\n",
            between=("q.__defaults__ = (-2.0,)", "q.__defaults__ = (1.0,)")),
        "globals()['K']": program(
            "grad", "x * globals()['K']", prelude="K = 1.5\n", between=("K = 0.25", "K = 1.5")),
        "a captured slice": program(
            "grad", "x[S] ** 2", prelude="S = slice(0, 2)\n",
            between=("S = slice(1, 3)", "S = slice(0, 2)")),
        "a captured range": program(
            "grad", "sum(x[i] ** 2 for i in R)", prelude="R = range(2)\n",
            between=("R = range(1, 3)", "R = range(2)")),
        "a captured set, added to": program(
            "vjp", "sum(x[i] ** 2 for i in sorted(S))", prelude="S = {0, 1}\n",
            between=("S.add(2)", "S.discard(2)")),
        # a Python float traced in float32
        "Python-float x: the value in float32": scalar("value_and_grad", "x * x * x"),
        "Python-float x: a vector output's dtype": scalar("vjp", "np.tanh(x * 1.3) * x"),
        "Python-float x meets a float32 array": scalar(
            "value_and_grad", "C * x", prelude="C = np.array([-1.25, 2.0], dtype=np.float32)\n",
            tol="f32"),
    },
    "effects": {
        # Python state f mutates changes while tracing only
        "global counter": program("grad", "x * N", ("global N", "N += 1"), "N = 0\n",
                                  state=("N",)),
        "list.append": program("grad", "np.sin(x) * len(H)", ("H.append(len(H))",), "H = []\n",
                               state=("H",)),
        "dict item": program("vjp", "x * D['n']", ("D['n'] = D.get('n', 0) + 1",), "D = {}\n",
                             state=("D",)),
        "attribute write": program(
            "grad", "np.tanh(x) * OBJ.n", ("OBJ.n = OBJ.n * -2.0",),
            "class S:\n    n = 1.0\n\n\nOBJ = S()\n", state=("OBJ",)),
    },
    "fwd": {
        # forward doors on non-C-contiguous inputs: zeros
        "jacfwd of a broadcast input": program(
            "jacfwd", "np.cumsum(x, axis=0) * x", shape=(2, 2), layout="broadcast"),
        "jacfwd of a Fortran input": program(
            "jacfwd", "np.sum(x ** 3, axis=-1)", shape=(3, 2), layout="F"),
        "jacfwd of a transposed input": program("jacfwd", "x.T * 2.0", shape=(2, 3), layout="T"),
        "hessian of a transposed input": program(
            "hessian", "np.nanmean(np.sin(x))", shape=(2, 2), layout="T"),
        # jacrev of a transposed output: zeros
        "jacrev of a transposed output": NProgram(
            7, "jacrev", (4,), (Term("found", expr="x * 2.0"), Term("found", expr="x ** 3")),
            (1.0, 1.0), out_t=True),
        # forward mode through odeint: a zero tangent
        "jvp through odeint": program(
            "jvp", "scipy.integrate.odeint(fld, " + ODE + "(x[:2],))",
            prelude="def fld(y, t, W):\n    return -W * y\n", tol="ode"),
        # forward doors run f once per column: a random draw differs by column
        "jacfwd of a function drawing random numbers": program(
            "jacfwd", "x * R.standard_normal()", prelude="R = np.random.default_rng(7)\n",
            state=("R",)),
        "jacfwd prints once per column": program(
            "jacfwd", "np.sin(x) * 1.5", ("print('f called')",)),
        # an internal error: generated tangent code reads a name it never defines
        "linearize of np.nanmean: NameError": program("linearize", "np.nanmean(np.sin(x))"),
        "jacfwd through odeint": program(
            "jacfwd", "scipy.integrate.odeint(fld, " + ODE + "(x[:2],))",
            prelude="def fld(y, t, W):\n    return -W * y\n", tol="ode"),
    },
    "loops": {
        # forward doors of a while loop: the zeros standing for the saved steps' gradient
        # had the first call's trip count (an IndexError at another one)
        **{f"{door} of pb.while_loop": program(
            door, "w * (n + 1)", ("w, n = pb.while_loop(more, grow, (x, 0))",),
            prelude=WHILE, shape=(2, 2), seed=seed)
           for door, seed in (("hessian", 136), ("linearize", 136), ("jacfwd", 3),
                              ("jvp", 4))},
    },
}

#: cases whose fix has not landed yet: strict expected failures
PENDING: set = set()

CASES = [pytest.param(prog, id=name, marks=[pytest.mark.xfail(strict=True, reason=owner)]
                      if name in PENDING else [])
         for owner, cases in FOUND.items() for name, prog in cases.items()]


@pytest.mark.parametrize("prog", CASES)
def test_right_answer_or_a_clear_error(prog):
    m = check(prog)
    assert m is None, report(prog, m)
