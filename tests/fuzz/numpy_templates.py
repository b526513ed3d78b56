"""The templates of numpy_programs.py, one function per kind of term, by class.

A template returns a ``Term``: module-level source (helpers, globals), lines of ``f``
and an expression over ``x`` (an array of ``d.size`` elements and rank ``d.rank``, or a
Python float where the template is registered with ``scalar=True``). Names a term
defines end in its index ``k`` so that terms never collide.
"""

from __future__ import annotations

from .numpy_programs import Draw, Term, template

X = "np.ravel(x)"


# ------------------------------------------------------------------------ plain
@template("plain", scalar=True)
def plain_ufuncs(d: Draw) -> Term:
    return Term("plain", expr=f"{d.u(d.u('x'))} * {d.c()}")


@template("plain", scalar=True)
def plain_helper(d: Draw) -> Term:
    k = d.k
    pre = f"def p{k}(v, s):\n    return {d.u('v')} * s + v\n"
    return Term("plain", pre, expr=f"p{k}(x, {d.c()})")


@template("plain", size=2)
def plain_reduce(d: Draw) -> Term:
    e = d.pick(f"np.sum({d.u('x')}, axis=0)", f"np.mean({d.u('x')})",
               f"np.max({X}) * np.min({X})", f"np.prod(1.0 + 0.1 * {X})",
               f"np.cumsum({X})[-1] * {X}[0]", f"np.linalg.norm({X})",
               f"np.dot({X}, {d.u(X)})", f"np.outer({X}, {X}) @ {d.u(X)}")
    return Term("plain", expr=e)


# ------------------------------------------------------------------- containers
@template("containers")
def helper_containers(d: Draw) -> Term:
    k, a, b = d.k, d.u("x"), "x"
    how = d.pick("list", "tuple", "dict", "nested", "loop", "kwargs")
    if how == "dict":
        pre = f"def h{k}(ps):\n    return np.sum(ps['a'] * ps['b'])\n"
        arg = f"{{'a': {a}, 'b': {b}}}"
    elif how == "nested":
        pre = f"def h{k}(ps):\n    (a, b), = ps['pair']\n    return np.sum(a * b)\n"
        arg = f"{{'pair': [({a}, {b})]}}"
    elif how == "loop":
        pre = (f"def h{k}(ps):\n    s = 0.0\n    for a, b in ps:\n"
               f"        s = s + np.sum(a * b)\n    return s\n")
        arg = f"[({a}, {b}), ({b}, {b})]"
    elif how == "kwargs":
        pre = f"def h{k}(**ps):\n    return np.sum(ps['a'] * ps['b'])\n"
        return Term("containers", pre, expr=f"h{k}(a={a}, b={b})")
    else:
        pre = f"def h{k}(ps):\n    a, b = ps\n    return np.sum(a * b)\n"
        arg = f"[{a}, {b}]" if how == "list" else f"({a}, {b})"
    return Term("containers", pre, expr=f"h{k}({arg})")


@template("containers", size=2)
def scipy_special(d: Draw) -> Term:
    e = d.pick(f"scipy.special.logsumexp({d.u(X)})",
               "scipy.special.logsumexp(x, axis=0)",
               f"scipy.special.logsumexp(*[{X}])",
               f"scipy.special.logsumexp(**{{'a': {X}}})",
               f"np.sum(scipy.special.expit([{X}, {d.u(X)}]))",
               f"np.sum(scipy.special.erf(x) * {d.u('x')})")
    return Term("containers", expr=e)


ODE_TS = "np.array([0.0, 0.4, 0.8])"
ODE_KW = "rtol=1e-10, atol=1e-10"


@template("odeint", size=2)
def odeint_args(d: Draw) -> Term:
    """odeint's ``args`` holding the parameters at the top level or in containers;
    the field a def or a lambda; y0 a constant or taken from x."""
    k = d.k
    how = d.pick("top", "list", "tuple", "dict", "nested", "lambda", "y0")
    y0 = f"{X}[:2] * 0.5" if how == "y0" else "np.array([0.5, -0.3])"
    w = f"{X}[:2]"
    if how in ("top", "y0"):
        pre = f"def fld{k}(y, t, W):\n    return -W * y + 0.1 * np.sin(y)\n"
        args = f"({w},)"
    elif how == "list":
        pre = (f"def fld{k}(y, t, ps):\n    for W in ps:\n        y = np.tanh(y * W)\n"
               f"    return y\n")
        args = f"([{w}],)"
    elif how == "tuple":
        pre = f"def fld{k}(y, t, ps):\n    W, b = ps\n    return -W * y + b\n"
        args = f"(({w}, 0.1 * {X}[-2:]),)"
    elif how == "dict":
        pre = f"def fld{k}(y, t, ps):\n    return -ps['W'] * y + 0.2\n"
        args = f"({{'W': {w}}},)"
    elif how == "nested":
        pre = (f"def fld{k}(y, t, ps):\n    for W, b in ps:\n        y = np.tanh(y * W + b)\n"
               f"    return y\n")
        args = f"([({w}, 0.1 * {X}[-2:])],)"
    else:
        pre = ""
        return Term("odeint", expr=f"scipy.integrate.odeint(lambda y, t, W: -W * y, "
                    f"np.array([0.5, -0.3]), {ODE_TS}, args=({w},), {ODE_KW})",
                    tol="ode", no_hessian=True)
    return Term("odeint", pre, expr=f"scipy.integrate.odeint(fld{k}, {y0}, {ODE_TS}, "
                f"args={args}, {ODE_KW})", tol="ode", no_hessian=True)


# ---------------------------------------------------------------------- convert
@template("convert", scalar=True)
def convert_float(d: Draw) -> Term:
    e = d.pick(f"float(np.sum({d.u('x')})) * {d.c()} + np.sum(x)",
               "np.sum(x) * np.max(x).item()",
               f"complex(np.sum({d.u('x')})).real + np.sum(x)",
               f"math.exp(float(np.sum(x)) * 0.3) + np.sum({d.u('x')})",
               "np.sum(x) * float(np.mean(x))")
    return Term("convert", expr=e)


@template("convert", size=2)
def convert_list(d: Draw) -> Term:
    e = d.pick(f"np.sum(np.array({X}.tolist()) ** 2) + np.sum(x)",
               f"sum([float(v) ** 2 for v in {X}]) + np.sum(x)",
               f"np.sum(np.asarray([v.item() for v in {X}]) * {X})",
               f"sum({d.u(X)}.tolist()) + np.sum(x)",
               f"{X}[int(np.argmax(x))] * 2.0",  # int() as an index: legitimate
               "np.sum(x[:int(np.sum(x > -5.0)) - 1])")  # int() as a bound: legitimate
    return Term("convert", expr=e)


# ---------------------------------------------------------------------- inplace
@template("inplace", size=3)
def ufunc_at(d: Draw) -> Term:
    k = d.k
    dst = d.pick("np.zeros(3)", f"{d.u(X)}[:3].copy()", f"{X}[:3] * 2.0")
    op = d.pick("np.add.at", "np.subtract.at", "np.multiply.at", "np.maximum.at")
    body = (f"b{k} = {dst}", f"{op}(b{k}, [0, 0, 2], {d.u(X)}[:3])")
    return Term("inplace", body=body, expr=f"b{k} * {d.u(f'b{k}')}")


@template("inplace", size=3)
def inplace_functions(d: Draw) -> Term:
    k = d.k
    dst = d.pick("np.zeros(3)", f"{X}[:3] * 1.5", f"{d.u(X)}[:3].copy()")
    src = f"{d.u(X)}[:3]"
    call = d.pick(f"np.copyto(b{k}, {src})", f"np.copyto(b{k}, {src}, where=b{k} > 0.1)",
                  f"np.put(b{k}, [0, 2], {src}[:2])", f"np.putmask(b{k}, b{k} > 0, {src})",
                  f"np.place(b{k}, b{k} > 0, {src}[:1])",
                  f"np.put_along_axis(b{k}, np.array([2, 0]), {src}[:2], axis=0)")
    return Term("inplace", body=(f"b{k} = {dst}", call), expr=f"b{k} * {d.u(f'b{k}')}")


@template("inplace", size=2)
def fill_diagonal(d: Draw) -> Term:
    k = d.k
    body = (f"m{k} = np.outer({X}[:2], {d.u(X)}[:2])",
            f"np.fill_diagonal(m{k}, {d.pick(f'{X}[:2] ** 2', '0.0', f'{X}[-1]')})")
    return Term("inplace", body=body, expr=f"m{k} @ {X}[:2]")


@template("inplace", size=3)
def setitem_duplicates(d: Draw) -> Term:
    k = d.k
    op = d.pick("=", "+=", "*=")
    idx = d.pick("[0, 0, 1]", "[2, 0, 2]", "np.array([1, 1, 1])")
    body = (f"b{k} = {d.pick('np.ones(3)', f'{X}[:3] * 1.0')}",
            f"b{k}[{idx}] {op} {d.u(X)}[:3]")
    return Term("inplace", body=body, expr=f"b{k} * {X}[:3]")


# ---------------------------------------------------------------------- scalars
@template("scalars", scalar=True)
def python_scalar(d: Draw) -> Term:
    return Term("scalars", expr=d.pick("np.sin(x) * x ** 3", "np.exp(x) / (1.0 + x * x)",
                                       f"np.tanh(x * 1.3) * {d.u('x')}", "x * x * x"))


@template("scalars", scalar=True)
def float32_meets_scalar(d: Draw) -> Term:
    k = d.k
    pre = (f"C{k} = np.linspace(-1.25, 2.0, {max(d.size, 2)}).astype(np.float32)"
           f"{f'.reshape({d.shape})' if d.shape else ''}\n")
    e = d.pick(f"C{k} * x", f"np.sum(C{k} * x) * {d.c()}", f"C{k} * np.float32(1.5) + x",
               "np.asarray(x, dtype=np.float32) * 2.0",
               "np.float32(2.0) * np.tanh(x)")
    return Term("scalars", pre, expr=e, tol="f32")


@template("scalars", size=1)
def float32_arrays(d: Draw) -> Term:
    e = d.pick("np.sum(x.astype(np.float32) * 2.0)",
               f"np.sum({d.u('x')}.astype(np.float32)) * {d.c()}",
               "x.astype(np.float32) + x")
    return Term("scalars", expr=e, tol="f32")


# ---------------------------------------------------------------------- effects
@template("effects", scalar=True)
def mutate_state(d: Draw) -> Term:
    k = d.k
    how = d.pick("global", "append", "dict", "attr", "rng", "print")
    if how == "print":
        return Term("effects", body=(d.pick(f"print('f called', {k})",
                                            "print('sum', np.sum(x))"),),
                    expr=f"{d.u('x')} * 1.5")
    if how == "global":
        return Term("effects", f"N{k} = 0\n", (f"global N{k}", f"N{k} += 1"),
                    f"np.sum(x) * N{k}", state=(f"N{k}",))
    if how == "append":
        return Term("effects", f"HIST{k} = []\n", (f"HIST{k}.append(len(HIST{k}))",),
                    f"np.sum({d.u('x')}) * len(HIST{k})", state=(f"HIST{k}",))
    if how == "dict":
        return Term("effects", f"D{k} = {{}}\n", (f"D{k}['n'] = D{k}.get('n', 0) + 1",),
                    f"x * D{k}['n']", state=(f"D{k}",))
    if how == "attr":
        pre = f"class S{k}:\n    n = 1.0\n\n\nOBJ{k} = S{k}()\n"
        return Term("effects", pre, (f"OBJ{k}.n = OBJ{k}.n * -2.0",),
                    f"{d.u('x')} * OBJ{k}.n", state=(f"OBJ{k}",))
    return Term("effects", f"RNG{k} = np.random.default_rng(7)\n",
                expr=f"x * RNG{k}.standard_normal()", state=(f"RNG{k}",))


# ----------------------------------------------------------------------- rebind
@template("rebind", scalar=True)
def rebind_global(d: Draw) -> Term:
    k = d.k
    how = d.pick("number", "function", "helper", "defaults", "dict", "list", "globals")
    if how == "number":
        return Term("rebind", f"K{k} = 1.5\n", expr=f"{d.u('x')} * K{k}",
                    between=(f"K{k} = -0.75", f"K{k} = 1.5"))
    if how == "function":
        return Term("rebind", f"g{k} = np.sin\n", expr=f"g{k}(x) * 2.0",
                    between=(f"g{k} = np.cos", f"g{k} = np.sin"))
    if how == "helper":
        return Term("rebind", f"def q{k}(v):\n    return np.sin(v) * v\n", expr=f"q{k}(x)",
                    between=(f"def q{k}(v):\n    return np.cos(v) + v\n",
                             f"def q{k}(v):\n    return np.sin(v) * v\n"))
    if how == "defaults":
        return Term("rebind", f"def q{k}(v, s=1.0):\n    return np.tanh(v) * s\n",
                    expr=f"q{k}(x)", between=(f"q{k}.__defaults__ = (-2.0,)",
                                              f"q{k}.__defaults__ = (1.0,)"))
    if how == "dict":
        return Term("rebind", f"CFG{k} = {{'s': 1.0}}\n", expr=f"x * CFG{k}['s']",
                    between=(f"CFG{k}['s'] = 3.0", f"CFG{k}['s'] = 1.0"))
    if how == "list":
        return Term("rebind", f"LST{k} = [1.0, 2.0]\n", expr=f"x * LST{k}[0] + LST{k}[1]",
                    between=(f"LST{k}[0] = -4.0", f"LST{k}[0] = 1.0"))
    return Term("rebind", f"K{k} = 1.5\n", expr=f"x * globals()['K{k}']",
                between=(f"K{k} = 0.25", f"K{k} = 1.5"))


@template("rebind", size=3)
def rebind_index(d: Draw) -> Term:
    k = d.k
    how = d.pick("slice", "range", "array", "set")
    if how == "slice":
        return Term("rebind", f"SL{k} = slice(0, 2)\n", expr=f"{X}[SL{k}] ** 2",
                    between=(f"SL{k} = slice(1, 3)", f"SL{k} = slice(0, 2)"))
    if how == "range":
        return Term("rebind", f"R{k} = range(2)\n", expr=f"sum({X}[i] ** 2 for i in R{k})",
                    between=(f"R{k} = range(1, 3)", f"R{k} = range(2)"))
    if how == "set":
        return Term("rebind", f"ST{k} = {{0, 1}}\n",
                    expr=f"sum({X}[i] ** 2 for i in sorted(ST{k}))",
                    between=(f"ST{k}.add(2)", f"ST{k}.discard(2)"))
    return Term("rebind", f"A{k} = np.array([1.0, 2.0, 3.0])\n", expr=f"{X}[:3] * A{k}",
                between=(f"A{k}[0] = -5.0", f"A{k}[0] = 1.0"))


# ------------------------------------------------------------------------ casts
@template("casts", scalar=True)
def casts(d: Draw) -> Term:
    e = d.pick("np.sum((np.asarray(3.0 * x).astype(int)) ** 2) + np.sum(x)",
               f"np.sum(np.asarray(x).astype(bool) * {d.u('x')})",
               "np.sum(np.array(x * 2.0, dtype=int) * x)",
               "np.sum(np.floor(x * 2.0) * x)",
               "np.sum(np.asarray(x * 3.0).astype(np.int32).astype(np.float64) * x)",
               "np.sum(np.round(x * 3.0) + x)")
    return Term("casts", expr=e)


# ---------------------------------------------------------------------- layouts
@template("layouts", size=2)
def layout_terms(d: Draw) -> Term:
    e = d.pick(f"{d.u('x')} * x", "np.sum(x * x[::-1])", "np.cumsum(x, axis=0) * x",
               "x.T * 2.0", "np.sum(x ** 3, axis=-1)")
    return Term("layouts", expr=e)


@template("layouts", size=3)
def no_rule_functions(d: Draw) -> Term:
    """numpy functions pullback may lack a rule for: forward and reverse must agree."""
    e = d.pick(f"np.nansum({X} ** 2)", f"np.nanmean({d.u(X)})",
               f"np.interp(0.3, np.array([0.0, 0.5, 1.0]), {X}[:3])",
               f"np.trapezoid({d.u(X)})", f"np.average({X}, weights=np.arange(1.0, {d.size + 1}))",
               f"np.sum(np.cov(np.stack([{X}, {d.u(X)}])))")
    return Term("layouts", expr=e)


@template("layouts", size=2)
def odeint_forward(d: Draw) -> Term:
    k = d.k
    pre = f"def ofld{k}(y, t, W):\n    return -W * y\n"
    return Term("layouts", pre, expr=f"scipy.integrate.odeint(ofld{k}, np.array([0.5, -0.3]), "
                f"np.array([0.0, 0.5]), args=({X}[:2],), rtol=1e-10, atol=1e-10)",
                tol="ode", no_hessian=True)


# ------------------------------------------------------------------------ loops
@template("loops", scalar=True)
def loop_scan(d: Draw) -> Term:
    k, c = d.k, d.c()
    rev = d.pick("False", "True")
    carry = d.pick("h", "(h, g)")
    if carry == "h":
        step = (f"def step{k}(h, v):\n    h = {d.u('h * 0.5 + v')} * {c}\n"
                f"    return h, np.sum(h * v)\n")
        init = "x * 0.5"
    else:
        step = (f"def step{k}(hg, v):\n    h, g = hg\n    h = np.tanh(h + g * v)\n"
                f"    return (h, g * 0.9 + {d.u('h')} * {c}), h * v\n")
        init = "(x * 0.5, x + 1.0)"
    xs = f"np.stack([x, {d.u('x')}, x * {d.c()}])"
    pre = "import pullback as pb\n" + step
    remat = d.pick("False", "False", "True", "2")  # (blocks of 2 over 3 steps: one left)
    body = (f"c{k}, ys{k} = pb.scan(step{k}, {init}, {xs}, reverse={rev}, remat={remat})",)
    out = f"np.sum(ys{k}) + np.sum(c{k}[0] if isinstance(c{k}, tuple) else c{k})"
    return Term("loops", pre, body, out)


@template("loops", scalar=True)
def loop_fori(d: Draw) -> Term:
    k = d.k
    n = d.pick(0, 1, 3)
    pre = (f"import pullback as pb\ndef body{k}(i, v):\n"
           f"    return {d.u('v')} * {d.c()} + v * 0.5 + i * 0.1\n")
    return Term("loops", pre, expr=f"pb.fori_loop(0, {n}, body{k}, x)")


@template("loops", scalar=True)
def loop_while(d: Draw) -> Term:
    k = d.k
    pre = (f"import pullback as pb\ndef more{k}(s):\n"
           f"    return (np.sum(np.abs(s[0])) < 6.0) & (s[1] < 5)\n"
           f"def grow{k}(s):\n    return s[0] * 1.3 + {d.u('s[0]')} * 0.2, s[1] + 1\n")
    body = (f"w{k}, n{k} = pb.while_loop(more{k}, grow{k}, (x, 0))",)
    return Term("loops", pre, body, f"w{k} * (n{k} + 1)")


@template("loops", scalar=True)
def loop_cond(d: Draw) -> Term:
    k = d.k
    inner = d.pick("plain", "scan")
    if inner == "scan":
        other = "pb.scan(lambda h, v: (h * v, h), v, np.stack([v, v * 0.5]))[0]"
    else:
        other = f"{d.u('v')} * {d.c()}"
    pre = (f"import pullback as pb\ndef yes{k}(v):\n    return {d.u('v')} + v\n"
           f"def no{k}(v):\n    return {other}\n")
    return Term("loops", pre, expr=f"pb.cond(np.sum(x) > 0.1, yes{k}, no{k}, x)")


# ------------------------------------------- plain Python loops (the source pass's)
@template("loops", scalar=True)
def pyloop_range(d: Draw) -> Term:
    """``for`` over a fixed ``range``, the counter read or not, or over an array's rows."""
    k, c = d.k, d.c()
    n = d.pick(1, 3, 5)
    how = d.pick("range", "counted", "rows")
    head = f"for v{k} in np.stack([x, {d.u('x')}]):" if how == "rows" else \
        f"for i{k} in range({n}):"
    step = f"v{k} * 0.3" if how == "rows" else f"x * (0.1 * i{k})" if how == "counted" \
        else "x * 0.1"
    body = (f"h{k} = x * 0.5", head, f"    h{k} = {d.u(f'h{k}')} * {c} + {step}")
    return Term("loops", "", body, f"h{k}")


@template("loops", scalar=True)
def pyloop_while(d: Draw) -> Term:
    """``while`` on a traced test with a cap: a trip count that depends on the data (a
    float counter or an int one, traced as a range's counter is); the tests joined by
    ``&`` or by ``and``/``or``."""
    k = d.k
    zero, one = d.pick(("0", "1"), ("0.0", "1.0"))
    test = d.pick(f"(np.sum(np.abs(w{k})) < 4.0) & (n{k} < 5)",
                  f"np.sum(np.abs(w{k})) < 4.0 and n{k} < 5",
                  f"not (np.sum(np.abs(w{k})) >= 4.0 or n{k} >= 5)")
    body = (f"w{k} = x * 0.5", f"n{k} = {zero}", f"while {test}:",
            f"    w{k} = w{k} * 1.3 + {d.u(f'w{k}')} * 0.2", f"    n{k} = n{k} + {one}")
    return Term("loops", "", body, f"w{k} * (n{k} + 1)")


@template("loops", scalar=True)
def pyloop_append(d: Draw) -> Term:
    """A list appended to in a ``for`` loop (over a range or an array's rows) and read
    whole after it: the scan's per-step outputs."""
    k, c = d.k, d.c()
    head = d.pick(f"for i{k} in range({d.pick(1, 3)}):",
                  f"for v{k} in np.stack([x, {d.u('x')}]):")
    body = (f"a{k} = x * 0.5", f"hs{k} = []", head,
            f"    a{k} = {d.u(f'a{k}')} * {c} + x * 0.1", f"    hs{k}.append(a{k} * 0.5)")
    read = d.pick(f"np.stack(hs{k})[-1]", f"sum(hs{k}) * 0.5", f"np.array(hs{k})[0] * 2.0")
    return Term("loops", "", body, read)


@template("loops", scalar=True)
def pyloop_stop(d: Draw) -> Term:
    """A ``break`` or ``continue`` on a traced test, in a ``for`` or a ``while``."""
    k = d.k
    stop = d.pick("break", "continue")
    head = d.pick(f"for i{k} in range(6):",
                  f"while (np.sum(b{k} * b{k}) < 9.0) & (m{k} < 6.0):")
    body = (f"b{k} = x * 0.5", f"m{k} = 0.0", head, f"    m{k} = m{k} + 1.0",
            f"    b{k} = {d.u(f'b{k}')} * 0.9 + b{k} * 0.5 + 0.4",
            f"    if np.sum(b{k}) > 1.0:", f"        {stop}", f"    b{k} = b{k} * 1.1")
    return Term("loops", "", body, f"b{k}")


@template("loops", scalar=True)
def pyloop_branch(d: Draw) -> Term:
    """An ``if`` on a traced value in a loop's body."""
    k, c = d.k, d.c()
    body = (f"s{k} = x * 0.5", f"for i{k} in range({d.pick(2, 4)}):",
            f"    if np.sum(s{k}) > 0.2:", f"        s{k} = {d.u(f's{k}')} * {c}",
            "    else:", f"        s{k} = s{k} * 0.5 + 0.3")
    return Term("loops", "", body, f"s{k}")


@template("items", scalar=True)
@template("loops", scalar=True)
def pyloop_nested(d: Draw) -> Term:
    """Nested loops writing the items of a table (a dynamic programme; the inner loop a
    ``for`` or a ``while`` on an int counter), or a loop writing each step's value into
    a row of an output."""
    k = d.k
    how = d.pick("table", "rows", "while", "named")
    if how == "named":  # (names bound to items before the write; one read after it)
        body = (f"R{k} = np.zeros((3, 3))", f"R{k}[0, 0] = np.sum(x) * 0.3",
                f"for i{k} in range(1, 3):", f"    for j{k} in range(1, 3):",
                f"        a{k} = R{k}[i{k} - 1, j{k}]", f"        b{k} = R{k}[i{k}, j{k} - 1]",
                f"        R{k}[i{k}, j{k}] = {d.u(f'a{k} * 0.5')} + b{k} * 0.5 "
                "+ np.sum(x) * 0.1", f"        R{k}[i{k} - 1, j{k}] = a{k} * {d.c()}")
        return Term("loops", "", body, f"R{k}[1:, 1:] * {d.c()}")
    if how == "while":
        body = (f"R{k} = np.zeros((3, 3))", f"R{k}[0, 0] = np.sum(x) * 0.3",
                f"for i{k} in range(1, 3):", f"    j{k} = 1", f"    while j{k} < 3:",
                f"        R{k}[i{k}, j{k}] = {d.u(f'R{k}[i{k} - 1, j{k}] * 0.5')} "
                f"+ R{k}[i{k}, j{k} - 1] * 0.5 + np.sum(x) * 0.1", f"        j{k} = j{k} + 1")
        return Term("loops", "", body, f"R{k}[1:, 1:] * {d.c()}")
    if how == "rows":
        body = (f"h{k} = x * 0.5", f"out{k} = np.zeros((3,) + np.shape(x))",
                f"for t{k} in range(3):", f"    h{k} = {d.u(f'h{k}')} + x * 0.2",
                f"    out{k}[t{k}] = h{k} * (t{k} + 1)")
        return Term("loops", "", body, f"out{k}[1:] * 0.5")
    body = (f"R{k} = np.zeros((3, 3))", f"R{k}[0, 0] = np.sum(x) * 0.3",
            f"for i{k} in range(1, 3):", f"    for j{k} in range(1, 3):",
            f"        R{k}[i{k}, j{k}] = {d.u(f'R{k}[i{k} - 1, j{k}] * 0.5')} "
            f"+ R{k}[i{k}, j{k} - 1] * 0.5 + np.sum(x) * 0.1")
    return Term("loops", "", body, f"R{k}[1:, 1:] * {d.c()}")


@template("items", scalar=True)
def items_added(d: Draw) -> Term:
    """``+=`` into items at the counters, a static index beside a traced one, a read of
    the item just written."""
    k = d.k
    body = (f"T{k} = np.zeros((3, 4))", f"for i{k} in range(3):",
            f"    for j{k} in range(1, 4):",
            f"        T{k}[i{k}, j{k}] += {d.u(f'T{k}[i{k}, j{k} - 1]')} * {d.c()} "
            f"+ np.sum(x) * 0.1 * (i{k} + 1)",
            f"        T{k}[i{k}, 0] = T{k}[i{k}, j{k}] * 0.5")
    return Term("items", "", body, f"T{k}[1:] * {d.c()}")


@template("items", scalar=True)
def items_rows(d: Draw) -> Term:
    """Rows of a table written whole at a counter: with a value of x's shape, or a
    number broadcast into the row; the previous row read back."""
    k = d.k
    value = d.pick(f"{d.u(f'H{k}[t{k} - 1]')} * 0.5 + x * 0.3",
                   f"np.sum({d.u(f'H{k}[t{k} - 1]')}) * 0.2 + 0.1")
    body = (f"H{k} = np.zeros((4,) + np.shape(x))", f"H{k}[0] = x * 0.5",
            f"for t{k} in range(1, 4):", f"    H{k}[t{k}] = {value}")
    return Term("items", "", body, f"H{k}[1:] * {d.c()}")


@template("loops", scalar=True)
def pyloop_int_arg(d: Draw) -> Term:
    """A helper whose ``int`` argument is its loop's trip count."""
    k = d.k
    pre = (f"def roll{k}(v, n):\n    for _ in range(n):\n"
           f"        v = {d.u('v')} * {d.c()} + 0.2\n    return v\n")
    return Term("loops", pre, expr=f"roll{k}(x, {d.pick(0, 2, 3)}) * 0.5")


@template("loops", scalar=True)
def pyloop_return(d: Draw) -> Term:
    """An early ``return`` inside a helper's loop: in an ``if`` or its ``else``, in a
    ``for``, a ``while`` or a loop nested in another, of one value or a tuple, reading
    the loop's counter (or the item of the array it walks) or not (the
    source pass's while region with a flag, and one ``pb.cond`` for the two exits)."""
    k = d.k
    where = d.pick("for", "while", "nested", "items")
    branch = d.pick("if", "else")
    pair = d.pick(False, True)
    limit = d.pick("0.5", "1.0", "2.0")
    ind = "        " if where == "nested" else "    "
    head = {"for": ["    for i in range(5):"],
            "while": ["    n = 0.0", "    while (np.sum(np.abs(h)) < 40.0) & (n < 6.0):",
                      "        n = n + 1.0"],
            "nested": ["    for i in range(3):", "        for j in range(2):"],
            "items": ["    rs = np.stack([v * 0.5, v, v * 1.5, v * 2.0])",
                      "    for r in rs:"]}[where]
    scale = d.pick("1.5", {"for": "(i + 1.5)", "while": "(n + 0.5)",
                           "nested": "(i + j + 1.5)",  # (the counters at the exit)
                           "items": "(r + 1.5)"}[where])  # (the walked item at the exit)
    out = (f"h * {scale}, np.sum(h)" if pair else f"h * {scale}")
    test = f"np.sum(h) > {limit}"
    second = [f"{ind}    if np.sum(h) < -{limit}:", f"{ind}        return {out}"] \
        if d.pick(False, True) and where != "nested" else []  # (a second return)
    stop = [f"{ind}    if {test}:", f"{ind}        return {out}",
            f"{ind}    h = h + 0.1", *second] if branch == "if" else \
        [f"{ind}    if {test}:".replace(f"if {test}", f"if not ({test})"),
         f"{ind}        h = h + 0.1", f"{ind}    else:", f"{ind}        return {out}"]
    tail = ["        h = h * 0.9"] if where == "nested" else []
    last = "h, np.sum(h) * 0.5" if pair else "h"
    lines = [f"def stop{k}(v):", "    h = v * 0.5", *head,
             f"{ind}    h = {d.u('h')} * 0.9 + v * 0.4", *stop, *tail, f"    return {last}"]
    pre = "\n".join(lines) + "\n"
    if pair:
        pre += f"def pair{k}(v):\n    a, b = stop{k}(v)\n    return a * b\n"
    return Term("loops", pre, expr=f"{'pair' if pair else 'stop'}{k}(x)")
