"""Changes a transformed function makes to Python state outside it (a global or
nonlocal counter, a captured list or dict, an attribute of a captured object or of an
argument) happen on every call, with that call's values, as in plain Python
(compiler/mutations.py, compiler/source/state.py); the results stay right for each call."""

import collections
import linecache

import numpy as np
import pytest

import pullback as pb
from pullback.compiler.user_lines import TraceError

XS = [np.array([1.0, 2.0]), np.array([-0.5, 3.0]), np.array([2.0, 0.25])]


def run(door, f):
    """``f``'s door (pb.grad on ndarrays, pb.compile on Tensors) called on XS: the
    gradients (of the compiled output's sum, through backward) and the door."""
    if door == "grad":
        g = pb.grad(f)
        return [g(x.copy()) for x in XS], g
    c = pb.compile(f)
    out = []
    for x in XS:
        t = pb.tensor(x, requires_grad=True)
        c(t).sum().backward()
        out.append(t.grad.numpy())
    return out, c


def info(fn):
    i = fn.cache.info
    return i.hits, i.misses


DOORS = ["grad", "compile"]

# ------------------------------------------------------------------ global / nonlocal
STEP = 0


def counts_calls(x):
    global STEP
    STEP += 1
    return (x * x).sum()


@pytest.mark.parametrize("door", DOORS)
def test_a_global_counter_counts_every_call_without_retracing(door):
    global STEP
    STEP = 0
    grads, fn = run(door, counts_calls)
    assert STEP == 3
    for g, x in zip(grads, XS):
        np.testing.assert_allclose(g, 2 * x)
    assert info(fn) == (2, 1)  # only changed, never read: no guard on it


SCALE = 0


def scaled_by_calls(x):
    global SCALE
    SCALE = SCALE + 1
    return (x * x).sum() * SCALE


@pytest.mark.parametrize("door", DOORS)
def test_a_global_the_result_reads_is_right_on_every_call(door):
    global SCALE
    SCALE = 0
    grads, fn = run(door, scaled_by_calls)
    assert SCALE == 3
    for k, (g, x) in enumerate(zip(grads, XS)):
        np.testing.assert_allclose(g, 2 * x * (k + 1))
    assert info(fn) == (0, 3)  # the guard is on the value before the call


def make_counter():
    n = 0

    def f(x):
        nonlocal n
        n += 1
        return (np.sin(x)).sum()
    return f, lambda: n


@pytest.mark.parametrize("door", DOORS)
def test_a_nonlocal_counter(door):
    f, count = make_counter()
    grads, fn = run(door, f)
    assert count() == 3
    for g, x in zip(grads, XS):
        np.testing.assert_allclose(g, np.cos(x))
    assert info(fn) == (2, 1)


TOTAL = 0.0


def accumulates(x):
    global TOTAL
    loss = (x * x).sum()
    TOTAL += loss
    return loss


def test_a_global_accumulating_a_traced_value_gets_each_calls_value():
    global TOTAL
    TOTAL = 0.0
    run("grad", accumulates)
    assert TOTAL == pytest.approx(sum(float((x * x).sum()) for x in XS))
    assert isinstance(TOTAL, float)


# ------------------------------------------------------------------ containers
HISTORY = []


def logs_loss(x):
    loss = (x * x).sum()
    HISTORY.append(loss)
    return loss


@pytest.mark.parametrize("door", DOORS)
def test_history_append_appends_each_calls_value(door):
    HISTORY.clear()
    grads, fn = run(door, logs_loss)
    assert len(HISTORY) == 3
    np.testing.assert_allclose([float(h) for h in HISTORY], [(x * x).sum() for x in XS])
    for g, x in zip(grads, XS):
        np.testing.assert_allclose(g, 2 * x)
    assert info(fn) == (2, 1)
    if door == "grad":  # numpy's scalar, as numpy code would have appended
        assert all(isinstance(h, np.float64) for h in HISTORY)
    else:  # a Tensor, without history
        assert all(isinstance(h, pb.Tensor) and h.grad_fn is None for h in HISTORY)


CACHE = {}
COUNTS = {"calls": 0}


def caches(x):
    loss = (x ** 3).sum()
    CACHE["last"] = loss
    COUNTS["calls"] += 1
    return loss


@pytest.mark.parametrize("door", DOORS)
def test_dict_item_assignment(door):
    CACHE.clear()
    COUNTS["calls"] = 0
    grads, fn = run(door, caches)
    assert COUNTS == {"calls": 3}
    assert float(CACHE["last"]) == pytest.approx((XS[-1] ** 3).sum())
    for g, x in zip(grads, XS):
        np.testing.assert_allclose(g, 3 * x ** 2)
    assert info(fn) == (2, 1)


def pops(x):
    first = QUEUE.pop(0)
    return (x * first).sum()


QUEUE = []


def test_a_list_the_function_reads_while_changing_it_retraces_rightly():
    QUEUE[:] = [1.0, 2.0, 3.0, 4.0]
    grads, fn = run("grad", pops)
    assert QUEUE == [4.0]
    for g, w in zip(grads, [1.0, 2.0, 3.0]):
        np.testing.assert_allclose(g, [w, w])


# ------------------------------------------------------------------ attributes
class Counter:
    def __init__(self):
        self.n = 0
        self.w = np.array([1.0, -2.0])

    def loss(self, x):
        self.n += 1
        self.last = x
        return (self.w * x * x).sum()


@pytest.mark.parametrize("door", DOORS)
def test_self_n_plus_one_in_a_method(door):
    c = Counter()
    grads, fn = run(door, c.loss)
    assert c.n == 3
    np.testing.assert_allclose(np.asarray(c.last), XS[-1])
    for g, x in zip(grads, XS):
        np.testing.assert_allclose(g, 2 * c.w * x)
    assert info(fn) == (2, 1)


def with_object(obj, x):
    obj.calls += 1
    return (x * x).sum()


def test_an_attribute_of_an_object_argument():
    c = Counter()
    c.calls = 0
    f = pb.compile(with_object)
    for x in XS:
        f(c, pb.tensor(x))
    assert c.calls == 3


# ------------------------------------------------------------------ what stays
def helper_append(buf, v):
    buf.append(v)


def local_state(x):
    terms, d = [], {}
    for i in range(2):
        helper_append(terms, x[i] ** 2)
        d[i] = x[i]
    o = Counter()
    o.n += 1
    return np.sum(np.stack(terms)) * o.n + d[0]


def test_the_functions_own_lists_dicts_and_objects_change_as_before():
    g = pb.grad(local_state)
    for x in XS:
        np.testing.assert_allclose(g(x), 2 * x + [1.0, 0.0])
    assert info(g) == (2, 1)
    forward = pb.compiler.inspect(g, XS[0]).forward
    code = [line for line in forward.splitlines() if not line.strip().startswith("#")]
    assert not [line for line in code if "append" in line or "set_" in line]


def test_prints_still_run_on_every_call(capsys):
    def f(x):
        loss = (x * x).sum()
        print("loss", loss)
        HISTORY.append(1)
        return loss
    HISTORY.clear()
    g = pb.grad(f)
    for x in XS:
        g(x)
    printed = capsys.readouterr().out.splitlines()
    assert [float(p.split()[1]) for p in printed] == [float((x * x).sum()) for x in XS]
    assert HISTORY == [1, 1, 1]


def test_the_generated_code_shows_the_change_in_program_order():
    source = pb.compiler.inspect(pb.grad(logs_loss), XS[0]).forward
    assert source.index("append(loss)") < source.index("return")


def test_a_failed_trace_leaves_the_state_as_it_was():
    def f(x):
        HISTORY.append(x)
        raise ValueError("boom")
    HISTORY.clear()
    with pytest.raises(ValueError):
        pb.grad(f)(XS[0])
    assert HISTORY == []


# ------------------------------------------------------------------ refused
LOOP = 0


def loops_on_a_global(x):
    global LOOP
    for LOOP in range(2):
        x = x * (2 + LOOP)
    return x.sum()


def test_binding_a_global_by_a_for_loop_is_refused_with_the_line():
    with pytest.raises(TraceError, match=r"test_side_effects.py:\d+ .*for LOOP in range.*"
                                         r"assign it alone"):
        pb.grad(loops_on_a_global)(XS[0])
    assert LOOP == 0


# ------------------------------------------------------------------ other doors
SEEN = []


def sin_logged(x):
    global STEP
    STEP += 1
    y = np.sin(x).sum()
    SEEN.append(y)
    return y


@pytest.mark.parametrize("door", [
    lambda x: pb.value_and_grad(sin_logged)(x),
    lambda x: pb.vjp(sin_logged, x)[1](1.0),
    lambda x: pb.jvp(sin_logged, (x,), (np.ones(2),)),
    lambda x: pb.linearize(sin_logged, x)[1](np.ones(2)),
    lambda x: pb.grad(lambda v: np.sum(pb.grad(sin_logged)(v) ** 2))(x),
], ids=["value_and_grad", "vjp", "jvp", "linearize", "grad_of_grad"])
def test_every_door_makes_the_change_once_per_call(door):
    global STEP
    STEP = 0
    SEEN.clear()
    for x in XS:
        door(x)
    assert STEP == 3
    np.testing.assert_allclose([float(s) for s in SEEN], [np.sin(x).sum() for x in XS])


class Net(pb.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = pb.nn.Linear(2, 1)
        self.bn = pb.nn.BatchNorm1d(2)
        self.calls = 0
        self.losses = []

    def forward(self, x):
        self.calls += 1
        out = self.lin(self.bn(x)).sum()
        self.losses.append(out)
        return out


def test_a_modules_forward_counting_its_calls_and_keeping_its_losses():
    pb.manual_seed(0)
    net, ref = Net(), Net()
    ref.load_state_dict(net.state_dict())
    f = pb.compile(net)
    for x in XS:
        batch = pb.tensor(np.stack([x, -x, 2 * x]), dtype=pb.float32)  # Linear is float32
        f(batch).backward()
        ref(batch).backward()
    assert net.calls == ref.calls == 3
    np.testing.assert_allclose([float(v) for v in net.losses], [float(v) for v in ref.losses],
                               rtol=1e-6)
    np.testing.assert_allclose(net.bn.running_mean.numpy(), ref.bn.running_mean.numpy(),
                               rtol=1e-6)
    np.testing.assert_allclose(net.lin.weight.grad.numpy(), ref.lin.weight.grad.numpy(),
                               rtol=1e-5)
    assert int(net.bn.num_batches_tracked) == 3
    assert info(f) == (2, 1)


TAGS = set()
LAST_TWO = collections.deque(maxlen=2)
LOSSES = []


def keeps_in_many_ways(x):
    global LOSSES
    loss = (x * x).sum()
    TAGS.add("seen")
    LAST_TWO.append(loss)
    LOSSES = LOSSES + [loss]
    return loss


@pytest.mark.parametrize("door", DOORS)
def test_sets_deques_and_a_global_list_rebound(door):
    global LOSSES
    TAGS.clear()
    LAST_TWO.clear()
    LOSSES = []
    _, fn = run(door, keeps_in_many_ways)
    want = [float((x * x).sum()) for x in XS]
    assert TAGS == {"seen"}
    assert [float(v) for v in LAST_TWO] == pytest.approx(want[1:])
    assert [float(v) for v in LOSSES] == pytest.approx(want)
    assert info(fn) == (2, 1)


BY_KEY = {}


def appends_to_what_a_call_returns(x):
    BY_KEY.setdefault("losses", []).append((x * x).sum())
    return (x * x).sum()


def test_changing_a_container_a_call_returned_is_refused_with_the_line():
    BY_KEY.clear()
    with pytest.raises(TraceError, match=r"test_side_effects.py:\d+ \(BY_KEY.setdefault.*"
                                         r"append changes a list that a call returned"):
        pb.grad(appends_to_what_a_call_returns)(XS[0])
    assert BY_KEY == {}


TICKS = 0


def reads_ticks():
    return TICKS


def ticks_and_reads_in_a_helper(x):
    global TICKS
    TICKS += 1
    return (x * x).sum() * reads_ticks()


def test_a_counter_another_function_reads_stays_guarded():
    global TICKS
    TICKS = 0
    grads, fn = run("grad", ticks_and_reads_in_a_helper)
    for k, (g, x) in enumerate(zip(grads, XS)):
        np.testing.assert_allclose(g, 2 * x * (k + 1))
    assert TICKS == 3 and info(fn) == (0, 3)


# ------------------------------------------------------- a class made by exec, no module
EXECED = '''
import numpy as np

class S:
    n = 1.0

OBJ = S()

def f(x):
    OBJ.n = OBJ.n * -2.0
    return (np.tanh(x) * OBJ.n).sum()
'''


@pytest.mark.parametrize("door", DOORS)
def test_an_attribute_of_an_object_whose_class_exec_made_without_a_module(door):
    # exec in globals without __name__ files the class under ``builtins``: its object is
    # still the user's, OBJ.n stays guarded (it is also read), and the write is right
    env: dict = {}
    name = "<execed side effects>"  # the source pass reads the source back
    linecache.cache[name] = (len(EXECED), None, EXECED.splitlines(True), name)
    exec(compile(EXECED, name, "exec"), env)  # noqa: S102
    obj = env["OBJ"]
    assert type(obj).__module__ == "builtins"
    grads, fn = run(door, env["f"])
    assert obj.n == -8.0
    for k, (g, x) in enumerate(zip(grads, XS)):
        np.testing.assert_allclose(g, (1 - np.tanh(x) ** 2) * (-2.0) ** (k + 1))
    # the harness's restore: the instance's dict cleared and refilled between calls
    vars(obj).clear()
    vars(obj).update({"n": -2.0})
    g = fn(XS[0].copy()) if door == "grad" else None
    if g is not None:
        np.testing.assert_allclose(g, (1 - np.tanh(XS[0]) ** 2) * 4.0)
        assert obj.n == 4.0

# ------------------------------------------------------------------ captured numpy arrays
COUNT = np.zeros(1)
BUMPED = np.zeros(2)
ONLY_WRITTEN = np.zeros(1, dtype=int)


def counts_in_an_array(x):
    COUNT[0] += 1
    return (x * x).sum() * COUNT[0]


def bumps_a_global_array(x):
    global BUMPED
    BUMPED += 1
    return (x * x).sum() * BUMPED[1]


def assigns_an_item(x):
    COUNT[0] = COUNT[0] + 1
    return (x * x).sum() * COUNT[0]


@pytest.mark.parametrize("door", DOORS)
@pytest.mark.parametrize("f", [counts_in_an_array, bumps_a_global_array, assigns_an_item])
def test_a_captured_numpy_array_updated_in_place_on_every_call(door, f):
    """``c[0] += 1``, ``global b; b += 1`` and ``c[0] = c[0] + 1`` on a captured array
    are made by every call, and the reads after them see the call's count."""
    COUNT[:] = 0
    BUMPED[:] = 0
    grads, _ = run(door, f)
    for k, (g, x) in enumerate(zip(grads, XS), 1):
        np.testing.assert_allclose(g, 2 * x * k)
    np.testing.assert_array_equal(COUNT if f is not bumps_a_global_array else BUMPED[:1], [3])


def test_an_array_read_after_its_update_stays_right_past_the_retrace_limit():
    """Read after the update, the array's value reaches the trace: each call retraces,
    and past the retrace limit the function runs eagerly, still right on every call."""
    COUNT[:] = 0
    g = pb.grad(counts_in_an_array)
    with pytest.warns(UserWarning, match="global COUNT is unchanged since it was traced"):
        grads = [g(XS[0].copy()) for _ in range(10)]
    for k, gk in enumerate(grads, 1):
        np.testing.assert_allclose(gk, 2 * XS[0] * k)
    assert COUNT[0] == 10


def counts_without_reading(x):
    ONLY_WRITTEN[0] += 1
    return (x * x).sum()


@pytest.mark.parametrize("door", DOORS)
def test_an_array_counter_only_written_never_retraces(door):
    ONLY_WRITTEN[:] = 0
    grads, fn = run(door, counts_without_reading)
    assert ONLY_WRITTEN[0] == 3 and ONLY_WRITTEN.dtype == np.int_
    for g, x in zip(grads, XS):
        np.testing.assert_allclose(g, 2 * x)
    assert info(fn) == (2, 1)


TALLY = np.zeros(1)


def tallies(x):
    global TALLY
    TALLY += 1
    return (x * x).sum()


@pytest.mark.parametrize("door", DOORS)
def test_an_array_rebound_outside_is_the_one_written(door):
    """Only written: no retrace, but its identity stays guarded, so a new array bound
    to the name is the one the next calls write into."""
    global TALLY
    TALLY = np.zeros(1)
    first = TALLY
    _, fn = run(door, tallies)
    assert info(fn) == (2, 1) and first[0] == 3
    TALLY = np.full(1, 10.0)
    fn(XS[0].copy() if door == "grad" else pb.tensor(XS[0]))
    assert first[0] == 3 and TALLY[0] == 11 and info(fn) == (2, 2)


LAST = np.zeros(2)


def keeps_the_last_input(x):
    LAST[:] = x * 2.0
    return (x * x).sum()


def test_a_traced_value_written_into_a_captured_array_under_compile():
    """Under pb.compile (no gradient flows into it) the array takes each call's value."""
    c = pb.compile(keeps_the_last_input)
    for x in XS:
        c(pb.tensor(x))
        np.testing.assert_allclose(LAST, 2 * x)
    with pytest.raises(TraceError, match=r"test_side_effects.py:\d+ \(LAST\[:\] = x \* 2.0\): "
                                         "writes a value that needs a gradient into 'LAST', "
                                         "a numpy array the function did not make"):
        pb.grad(keeps_the_last_input)(XS[0].copy())


def adds_with_out(x):
    np.add(BUMPED, 1, out=BUMPED)
    return (x * x).sum() * BUMPED[0]


def copies_into(x):
    np.copyto(BUMPED, BUMPED + 1)
    return (x * x).sum() * BUMPED[0]


def adds_at(x):
    np.add.at(BUMPED, [0], 1.0)
    return (x * x).sum() * BUMPED[0]


@pytest.mark.parametrize("door", DOORS)
@pytest.mark.parametrize("f, line", [(adds_with_out, r"np.add\(BUMPED, 1, out=BUMPED\)\): "
                                                     r"np.add\(\.\.\., out=\.\.\.\)"),
                                     (copies_into, r"np.copyto\(BUMPED, BUMPED \+ 1\)\): "
                                                   r"np.copyto\(\.\.\.\)"),
                                     (adds_at, r"np.add.at\(BUMPED, \[0\], 1.0\)\): "
                                               r"np.add.at\(\.\.\.\)")])
def test_a_numpy_function_writing_into_a_captured_array_is_refused(door, f, line):
    """Generated code would not write again: refused with the line and what to do."""
    BUMPED[:] = 0
    with pytest.raises(TraceError, match=r"test_side_effects.py:\d+ \(" + line + " writes "
                       r"into a numpy array the function did not make.*b\[0\] = b\[0\] \+ 1.*"
                       r"Python number \(global n; n \+= 1\) or a pb Tensor buffer"):
        run(door, f)


def fills(x):
    BUMPED.fill(2.0)
    return (x * x).sum() * BUMPED[0]


def sorts(x):
    BUMPED.sort()
    return (x * x).sum() * BUMPED[0]


@pytest.mark.parametrize("door", DOORS)
@pytest.mark.parametrize("f, line", [(fills, r"BUMPED.fill\(2.0\)\): BUMPED.fill\(\.\.\.\)"),
                                     (sorts, r"BUMPED.sort\(\)\): BUMPED.sort\(\.\.\.\)")])
def test_an_array_method_writing_into_a_captured_array_is_refused(door, f, line):
    with pytest.raises(TraceError, match=r"test_side_effects.py:\d+ \(" + line + " writes "
                       "into a numpy array the function did not make"):
        run(door, f)


INDEX = np.array([1])


def fills_its_own_arrays(x):
    y = np.zeros(3, dtype=int)
    y[:] = np.arange(3)
    z = np.zeros(2)
    np.add(z, 1, out=z)
    np.copyto(z, z + 1)
    np.add.at(z, [0], 1.0)
    y.fill(2)
    y.put(INDEX, 0)
    h = np.zeros(2)
    h[:] = x * z
    return (h * x).sum() * y[2]


@pytest.mark.parametrize("door", DOORS)
def test_arrays_the_function_makes_are_its_own(door):
    grads, fn = run(door, fills_its_own_arrays)
    for g, x in zip(grads, XS):
        np.testing.assert_allclose(g, 4 * x * np.array([3.0, 2.0]))
    assert info(fn) == (2, 1)


class CountsInAnArray(pb.nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = np.zeros(1)
        self.w = pb.nn.Parameter(pb.tensor([1.0, -2.0]))

    def forward(self, x):
        self.calls[0] += 1
        return (x * self.w).sum() * self.calls[0]


def test_a_modules_numpy_array_attribute_updated_in_forward():
    m = CountsInAnArray()
    c = pb.compile(m)
    for k, x in enumerate(XS, 1):
        m.w.grad = None
        out = c(pb.tensor(x))
        out.backward()
        np.testing.assert_allclose(out.item(), float(x @ [1.0, -2.0]) * k)
        np.testing.assert_allclose(m.w.grad.numpy(), x * k)
    np.testing.assert_array_equal(m.calls, [3])
