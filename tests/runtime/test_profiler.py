"""The profiler (reference issue 11): names, counts, shapes, memory, columns, the Chrome
trace and the errors, compared with torch where torch records the same thing. Never a
timing: only the structure of what was recorded."""

from __future__ import annotations

import json
import re
import threading

import pytest
from pullback.transforms import codegen

import pullback as pb
from pullback.autograd import profiler, record

EVAL = "autograd::engine::evaluate_function: "


def _names(prof) -> list:
    return [e.name for e in prof.function_events]


def _columns(table: str) -> list:
    return re.split(r"\s{2,}", table.splitlines()[1].strip())


def _program(T, x, w):
    y = (x * w).sum() + T.tanh(x @ w.t()).sum()
    y.backward()


def test_forward_ops_and_backward_nodes():
    x = pb.ones(3, 4, requires_grad=True)
    with pb.autograd.profiler.profile() as prof:
        y = (x * 2).sum()
        y.backward()
    assert _names(prof) == [
        "aten::mul", "aten::sum", EVAL + "SumBackward0", "SumBackward0",
        EVAL + "MulBackward0", "MulBackward0", EVAL + "torch::autograd::AccumulateGrad",
        "torch::autograd::AccumulateGrad"]
    node = prof.function_events[2]
    assert [c.name for c in node.cpu_children] == ["SumBackward0"]
    assert node.cpu_children[0].cpu_parent is node
    # an op is linked to the node it made, as torch's sequence numbers link them
    assert prof.function_events[0].sequence_nr == prof.function_events[5].sequence_nr >= 0


def test_names_follow_torch():
    torch = pytest.importorskip("torch")
    names = {}
    for T in (pb, torch):
        x = T.ones(3, 4, requires_grad=True)
        w = T.full((3, 4), 0.5, requires_grad=True)
        with T.autograd.profiler.profile() as prof:
            _program(T, x, w)
        names[T] = [e.name for e in prof.function_events]
    assert set(names[pb]) <= set(names[torch])
    nodes = [[n for n in names[T] if n.startswith(EVAL)] for T in (pb, torch)]
    assert nodes[0] == nodes[1]


def test_key_averages_counts_calls():
    x = pb.ones(2, 2, requires_grad=True)
    with pb.autograd.profiler.profile() as prof:
        for _ in range(3):
            (x * x).sum().backward()
    rows = {r.key: r for r in prof.key_averages()}
    assert rows["aten::mul"].count == 3
    assert rows["MulBackward0"].count == 3
    assert rows["torch::autograd::AccumulateGrad"].count == 3
    total = sum(r.count for r in rows.values())
    assert total == len(prof.events())


def test_record_shapes_and_grouping():
    a, b = pb.ones(3, 4), pb.ones(2, 5)
    with pb.autograd.profiler.profile(record_shapes=True) as prof:
        a * 2
        b * 2
        a * a
    assert [e.input_shapes for e in prof.function_events] == [
        [[3, 4], []], [[2, 5], []], [[3, 4], [3, 4]]]
    assert [(r.key, r.count) for r in prof.key_averages()] == [("aten::mul", 3)]
    grouped = prof.key_averages(group_by_input_shape=True)
    assert [(r.key, r.input_shapes, r.count) for r in grouped] == [
        ("aten::mul", [[3, 4], []], 1), ("aten::mul", [[2, 5], []], 1),
        ("aten::mul", [[3, 4], [3, 4]], 1)]


def test_table_columns_match_torch():
    torch = pytest.importorskip("torch")
    for kw, group in [({}, False), ({"record_shapes": True}, True),
                      ({"profile_memory": True}, False),
                      ({"record_shapes": True, "profile_memory": True}, True)]:
        tables = []
        for T in (pb, torch):
            x = T.ones(3, 4, requires_grad=True)
            w = T.full((3, 4), 0.5, requires_grad=True)
            with T.autograd.profiler.profile(**kw) as prof:
                _program(T, x, w)
            tables.append(prof.key_averages(group).table(sort_by="cpu_time_total"))
        assert _columns(tables[0]) == _columns(tables[1]), kw
        for t in tables:
            assert t.splitlines()[-1].startswith("Self CPU time total: ")


def test_table_rows_sorting_and_limit():
    x = pb.ones(3, requires_grad=True)
    with pb.autograd.profiler.profile() as prof:
        (x.exp() * x).sum().backward()
    table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=2)
    lines = table.splitlines()
    assert len(lines) == 3 + 2 + 2  # rule, header, rule; 2 rows; rule, footer
    assert lines[0] == lines[2] == lines[-2]
    rows = sorted(prof.key_averages(), key=lambda r: r.self_cpu_time_total, reverse=True)
    assert [line.split()[0] for line in lines[3:5]] == [r.key.split()[0] for r in rows[:2]]
    with pytest.raises(AttributeError, match="no attribute 'bogus'"):
        prof.key_averages().table(sort_by="bogus")
    long = [line for line in prof.key_averages().table().splitlines() if "..." in line]
    assert long and all(len(line.split("...")[0].strip()) == 52 for line in long)


def test_profile_memory_counts_result_bytes():
    torch = pytest.importorskip("torch")
    mems = []
    for T in (pb, torch):
        x = T.ones(3, 4)
        with T.autograd.profiler.profile(profile_memory=True) as prof:
            x * x
        (mul,) = [e for e in prof.function_events if e.name == "aten::mul"]
        mems.append(mul.self_cpu_memory_usage)
    assert mems[0] == mems[1] == 48


def test_memory_of_a_range_includes_its_children():
    with pb.autograd.profiler.profile(profile_memory=True) as prof:
        with pb.autograd.profiler.record_function("block"):
            pb.ones(4, dtype=pb.float64) * 2
            pb.ones(2) + 1
    block = prof.function_events[0]
    assert block.cpu_memory_usage == 32 + 8 and block.self_cpu_memory_usage == 0
    assert "CPU Mem" in _columns(prof.key_averages().table())


def test_record_function_nests_and_decorates():
    @pb.autograd.profiler.record_function("helper")
    def helper(t):
        return t * 2

    assert helper.__name__ == "helper"
    with pb.autograd.profiler.profile() as prof:
        with pb.autograd.profiler.record_function("outer"):
            with pb.autograd.profiler.record_function("inner"):
                helper(pb.ones(2))
            pb.ones(2) + 1
    outer, inner, helper_ev, mul, add = prof.function_events
    assert [e.name for e in (outer, inner, helper_ev, mul, add)] == [
        "outer", "inner", "helper", "aten::mul", "aten::add"]
    assert outer.cpu_children == [inner, add] and inner.cpu_children == [helper_ev]
    assert helper_ev.cpu_children == [mul] and mul.cpu_parent is helper_ev
    assert outer.kind == "user_annotation" and mul.kind == "cpu_op"
    kids = sum(c.cpu_time_total for c in outer.cpu_children)
    assert outer.self_cpu_time_total == pytest.approx(outer.cpu_time_total - kids)
    assert [e.name for e in prof.function_events if e.cpu_parent is None] == ["outer"]
    assert type(outer).__name__ == "FunctionEvent"  # torch's types (reference 11.3)
    assert type(prof.key_averages()).__name__ == "EventList"
    with pb.autograd.profiler.record_function("not profiled"):
        pass  # no profiler: nothing happens


def test_custom_function_is_one_range_named_after_its_class():
    torch = pytest.importorskip("torch")
    names = []
    for T in (pb, torch):
        class Exp(T.autograd.Function):
            @staticmethod
            def forward(ctx, i):
                r = i.exp()
                ctx.save_for_backward(r)
                return r

            @staticmethod
            def backward(ctx, g):
                (r,) = ctx.saved_tensors
                return g * r

        x = T.ones(3, requires_grad=True)
        with T.autograd.profiler.profile() as prof:
            Exp.apply(x).sum().backward()
        names.append([e.name for e in prof.function_events])
        ev = next(e for e in prof.function_events if e.name == "Exp")
        assert "aten::exp" in [c.name for c in ev.cpu_children]
    assert set(names[0]) <= set(names[1])
    assert "ExpBackward" in names[0] and EVAL + "ExpBackward" in names[0]


def test_chrome_trace(tmp_path):
    x = pb.ones(3, 4, requires_grad=True)
    with pb.autograd.profiler.profile(record_shapes=True) as prof:
        with pb.autograd.profiler.record_function("loss"):
            y = (x * 2).sum()
        y.backward()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())
    assert set(trace) == {"traceEvents", "displayTimeUnit"}
    complete = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    meta = [e for e in trace["traceEvents"] if e["ph"] == "M"]
    assert [e["name"] for e in complete] == _names(prof)
    assert {m["name"] for m in meta} == {"process_name", "thread_name"}
    for e in complete:
        assert set(e) == {"ph", "cat", "name", "pid", "tid", "ts", "dur", "args"}
        assert isinstance(e["ts"], float) and e["dur"] >= 0
        assert e["tid"] == threading.get_native_id()
    flows = [e for e in trace["traceEvents"] if e["ph"] in "sf"]
    starts = [e for e in flows if e["ph"] == "s"]
    ends = [e for e in flows if e["ph"] == "f"]
    # forward op -> the node it made: mul -> MulBackward0, sum -> SumBackward0
    assert [s["id"] for s in starts] == [f["id"] for f in ends]
    linked = [sorted(e["name"] for e in complete if e["args"].get("Sequence number") == s["id"])
              for s in starts]
    assert sorted(linked) == [["MulBackward0", "aten::mul"], ["SumBackward0", "aten::sum"]]
    assert all(e["cat"] == "fwdbwd" for e in flows)
    loss, mul = complete[0], complete[1]
    assert loss["cat"] == "user_annotation" and mul["cat"] == "cpu_op"
    assert mul["args"]["Input Dims"] == [[3, 4], []]
    assert mul["ts"] >= loss["ts"] and mul["ts"] + mul["dur"] <= loss["ts"] + loss["dur"]


def test_nested_and_reentered_profilers_are_refused():
    with pb.autograd.profiler.profile() as outer:
        with pytest.raises(RuntimeError, match="^Profiler is already enabled on this thread$"):
            with pb.autograd.profiler.profile():
                pass
        pb.ones(2) * 2
    assert _names(outer) == ["aten::mul"]
    assert _columns(str(outer))[0] == "Name"  # print(prof): the events' table
    assert not record.PROFILING
    with pytest.raises(RuntimeError, match="^Profiler context manager is not reentrant$"):
        with outer:
            pass
    with pytest.raises(RuntimeError, match="^Profiler didn't finish running$"):
        pb.autograd.profiler.profile().key_averages()
    with pytest.raises(ValueError, match="use_cuda=True needs a GPU"):
        pb.autograd.profiler.profile(use_cuda=True)


def test_disabled_and_outside_record_nothing():
    pb.ones(2) * 2  # before: not recorded anywhere
    with pb.autograd.profiler.profile(enabled=False) as prof:
        assert not record.PROFILING
        pb.ones(2) * 2
    assert prof.function_events is None and not record.PROFILING


def test_other_threads_are_not_recorded():
    def work():
        pb.ones(2) + 1

    with pb.autograd.profiler.profile() as prof:
        t = threading.Thread(target=work)
        t.start()
        t.join()
        pb.ones(2) * 2
    assert _names(prof) == ["aten::mul"]


def test_an_op_that_raises_closes_its_range():
    with pb.autograd.profiler.profile(record_shapes=True) as prof:
        with pytest.raises(RuntimeError, match="must match the size"):
            pb.ones(2) + pb.ones(3)
        pb.ones(2) * 2
    add, mul = prof.function_events
    assert (add.name, mul.name) == ("aten::add", "aten::mul")
    assert mul.cpu_parent is None and add.cpu_children == []


def test_with_stack_names_the_users_line():
    with pb.autograd.profiler.profile(with_stack=True) as prof:
        pb.ones(2) * 2
    (mul,) = prof.function_events
    assert mul.stack and mul.stack[0].startswith(__file__ + "(")
    assert mul.stack[0].endswith(": test_with_stack_names_the_users_line")


def test_compiled_region_is_one_row_per_generated_function():
    @pb.compile
    def loss(x, w):
        h = pb.tanh(x @ w)
        return (h * h).sum()

    x, w = pb.ones(3, 4, requires_grad=True), pb.ones(4, 2, requires_grad=True)
    loss(x, w).backward()  # traced outside the profiler
    with pb.autograd.profiler.profile() as prof:
        loss(x, w).backward()
    names = _names(prof)
    # named after the generated functions: the user's (qualified) name, forward/backward
    fwd, bwd = names[0], names[3]
    assert fwd.startswith("compiled::") and fwd.endswith("__locals__loss_forward")
    assert bwd == fwd.replace("_forward", "_backward")
    assert names[1:3] == [EVAL + "CompiledFunctionBackward", "CompiledFunctionBackward"]
    assert not any(n.startswith("aten::") for n in names)
    assert prof.function_events[3].cpu_parent is prof.function_events[2]
    assert not any("_pb_untimed" in m.__dict__ for m in codegen.MODULES)


def test_compiled_detail_breaks_a_region_into_lines():
    @pb.compile
    def f(x):
        y = x * 2
        return pb.exp(y).sum()

    x = pb.ones(3)
    with pb.autograd.profiler.profile(compiled_detail=True) as prof:
        f(x)  # traced inside the profiler: the new module is timed too
    region = next(e for e in prof.function_events if e.name.startswith("compiled::"))
    lines = [c.name for c in region.cpu_children]
    source = next(v for vs in f.cache.entries.values() for v in vs).forward.source
    statements = [ln.strip() for ln in source.splitlines()[1:]
                  if ln.strip() and not ln.strip().startswith(("#", "return", "del "))]
    assert [ln.split(" ", 1)[1] for ln in lines] == statements
    fn_name = region.name[len("compiled::"):]
    assert all(ln.startswith(fn_name + ":") for ln in lines)
    with pb.autograd.profiler.profile() as plain:
        f(x)
    assert _names(plain) == [region.name]


def test_grad_front_door_is_one_row():
    g = pb.grad(lambda x: (x * x).sum())
    x = pb.ones(3)
    g(x)
    with pb.autograd.profiler.profile() as prof:
        g(x)
    (ev,) = prof.function_events
    assert ev.name.startswith("compiled::") and ev.cpu_children == []


def test_profiler_module_mirrors_torch_profiler():
    with pb.profiler.profile(activities=[pb.profiler.ProfilerActivity.CPU],
                             record_shapes=True) as prof:
        with pb.profiler.record_function("step"):
            pb.ones(2) * 2
    assert [e.name for e in prof.events()] == ["step", "aten::mul"]
    assert "Input Shapes" in _columns(prof.key_averages(group_by_input_shape=True).table())
    with pytest.raises(TypeError, match="ProfilerActivity"):
        pb.profiler.profile(activities=["cpu"])
    with pb.profiler.profile(activities=[]) as off:
        pb.ones(2) * 2
    assert off.function_events is None


def test_aten_names_of_table_ops():
    from pullback.ops import OPS
    assert profiler.aten_name(OPS["sum_all"]) == "aten::sum"
    assert profiler.aten_name(OPS["index_select"]) == "aten::index_select"
    assert profiler.aten_name(OPS["argmax"]) == "aten::argmax"


def test_first_call_of_a_compiled_function_shows_its_trace():
    @pb.compile
    def g(x):
        return (x * 3).sum()

    with pb.autograd.profiler.profile() as prof:
        g(pb.ones(2))
    top = [e for e in prof.function_events if e.cpu_parent is None]
    assert top[0].name.startswith("pb.compile: trace ") and top[0].name.endswith("g")
    assert [c.name for c in top[0].cpu_children] == ["aten::mul", "aten::sum"]
    assert [t.name for t in top[1:]] == ["compiled::" + top[1].name.split("::")[1]]
    with pb.autograd.profiler.profile() as prof:
        x = pb.ones(2, requires_grad=True)
        g(x).backward()  # a new variant, and its backward generated on first use
    node = next(e for e in prof.function_events if e.name == "CompiledFunctionBackward")
    made, ran = node.cpu_children
    assert made.name.startswith("pb.compile: codegen ") and made.name.endswith("_backward")
    assert ran.name == "compiled::" + made.name.split()[-1]
    table = prof.key_averages().table(top_level_events_only=True)
    assert "This report only display top-level ops statistics" in table
    assert "aten::mul" not in table and "pb.compile: trace" in table
