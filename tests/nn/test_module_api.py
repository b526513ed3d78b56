"""Module's API against torch's: registration and its errors, traversal order,
train/eval, zero_grad, requires_grad_, apply, to(), hooks, state_dict and
load_state_dict (keys, errors, the returned named tuple), repr, containers."""

from __future__ import annotations

import copy
import re

import numpy as np
import pytest

import pullback as pb


def error_of(fn, lib):
    """(type, message) of what ``fn(lib)`` raises, library names made torch's (a class
    path by its class name, ``pullback.int64`` as ``torch.int64``)."""
    try:
        fn(lib)
    except Exception as e:  # noqa: BLE001 (the exception is the result)
        text = re.sub(r"<class '[\w.]*\.(\w+)'>", r"<class '\1'>", str(e))
        return type(e).__name__, re.sub(r"\bpullback\.(\w+)", r"torch.\1", text)
    return None


def same_error(fn, torch):
    ours, theirs = error_of(fn, pb), error_of(fn, torch)
    assert theirs is not None and ours == theirs, f"\n ours:  {ours}\n torch: {theirs}"


def big(T):
    nn = T.nn
    return nn.Sequential(
        nn.Linear(4, 8), nn.ReLU(), nn.ModuleList([nn.Linear(2, 2) for _ in range(3)]),
        nn.ParameterList([nn.Parameter(T.ones(3, 4)),
                          nn.Parameter(T.ones(2, dtype=T.float64))]),
        nn.ParameterDict({"a": nn.Parameter(T.ones(3))}),
        nn.ParameterDict({"b": nn.Parameter(T.ones(3)), "c": nn.Parameter(T.ones(2, 2))}),
        nn.RNN(4, 8, num_layers=2, batch_first=True, nonlinearity="relu", bias=False,
               bidirectional=True),
        nn.RNNCell(3, 5, nonlinearity="relu"), nn.RNNCell(3, 5, bias=False), nn.RNN(2, 3),
        nn.Softmax(dim=1), nn.LogSoftmax(-1), nn.Flatten(), nn.Unflatten(1, (2, 3)),
        nn.Bilinear(2, 3, 4), nn.Identity(), nn.CrossEntropyLoss(), nn.MSELoss(),
        nn.ModuleDict({"x": nn.Tanh(), "y": nn.Sequential(nn.Sigmoid())}),
        nn.Linear(2, 3, bias=False), nn.Softmax(), nn.ReLU(inplace=True), nn.ModuleList(),
        nn.Sequential(), nn.BCELoss(), nn.BCEWithLogitsLoss(), nn.NLLLoss())


def test_repr_is_torchs(torch):
    assert repr(big(pb)) == repr(big(torch)).replace("torch.float", "pullback.float")


def test_parameter_repr_and_flags(torch):
    for T in (pb, torch):
        p = T.nn.Parameter(T.ones(2))
        frozen = T.nn.Parameter(T.ones(2), requires_grad=False)
        assert (p.requires_grad, p.is_leaf, frozen.requires_grad) == (True, True, False)
        assert type(p * 2).__name__ == "Tensor" and isinstance(p, T.Tensor)
    assert repr(pb.nn.Parameter(pb.ones(2))) == repr(torch.nn.Parameter(torch.ones(2)))
    assert repr(pb.nn.Parameter(pb.ones(2), requires_grad=False)) == \
        repr(torch.nn.Parameter(torch.ones(2), requires_grad=False))


def user_model(T):
    nn = T.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Linear(3, 4)
            self.blocks = nn.ModuleList([nn.Linear(4, 4), nn.Linear(4, 4)])
            self.shared = self.blocks[0]
            self.head = nn.Sequential(nn.Tanh(), nn.Linear(4, 2))
            self.scale = nn.Parameter(T.ones(()))
            self.register_buffer("count", T.zeros(1))
            self.register_buffer("cache", T.zeros(2), persistent=False)
            self.register_buffer("nothing", None)
            self.register_parameter("unused", None)

        def forward(self, x):
            h = self.embed(x)
            for b in self.blocks:
                h = b(h).relu()
            return self.head(h) * self.scale

    return Net()


def test_traversal_order_is_torchs(torch):
    ours, theirs = user_model(pb), user_model(torch)
    for method in ("named_parameters", "named_buffers", "named_children", "named_modules"):
        assert [n for n, _ in getattr(ours, method)()] == \
            [n for n, _ in getattr(theirs, method)()], method
    assert [n for n, _ in ours.named_parameters(remove_duplicate=False)] == \
        [n for n, _ in theirs.named_parameters(remove_duplicate=False)]
    assert [n for n, _ in ours.named_parameters(recurse=False)] == ["scale"]
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert len(list(ours.parameters())) == len(list(theirs.parameters()))
    assert len(list(ours.modules())) == len(list(theirs.modules()))
    assert ours.get_submodule("blocks.1") is ours.blocks[1]
    assert ours.get_parameter("head.1.bias") is ours.head[1].bias


def test_state_dict_round_trip_and_detached():
    a, b = user_model(pb), user_model(pb)
    state = a.state_dict()
    assert all(not v.requires_grad and v.is_leaf for v in state.values())
    assert a.state_dict(keep_vars=True)["scale"] is a.scale
    keys = b.load_state_dict(state)
    assert repr(keys) == "<All keys matched successfully>" and keys.missing_keys == []
    x = pb.randn(5, 3)
    assert np.array_equal(a(x).detach().numpy(), b(x).detach().numpy())
    assert b.embed.weight._version == 2  # initialised, then copied in place (as torch)


@pytest.mark.parametrize("case", ["missing", "unexpected", "both", "size", "not_a_tensor"])
def test_load_state_dict_errors_are_torchs(case, torch):
    def load(T):
        model = T.nn.Sequential(T.nn.Linear(2, 3), T.nn.Linear(3, 1))
        state = dict(model.state_dict())
        if case in ("missing", "both"):
            del state["0.bias"]
        if case in ("unexpected", "both"):
            state["0.extra"] = T.zeros(1)
            state["2.weight"] = T.zeros(1)
        if case == "size":
            state["1.weight"] = T.zeros(2, 3)
        if case == "not_a_tensor":
            state["1.bias"] = [1.0]
        model.load_state_dict(state)
    same_error(load, torch)


def test_load_state_dict_not_strict_returns_the_keys(torch):
    results = []
    for T in (pb, torch):
        model = T.nn.Linear(2, 3)
        state = {"weight": T.zeros(3, 2), "extra": T.ones(1)}
        keys = model.load_state_dict(state, strict=False)
        results.append((repr(keys), keys.missing_keys, keys.unexpected_keys,
                        model.weight.detach().numpy().sum()))
    assert results[0] == results[1]
    assert results[0][0] == "_IncompatibleKeys(missing_keys=['bias'], unexpected_keys=['extra'])"


def test_load_state_dict_assign_replaces_the_parameters():
    model = pb.nn.Linear(2, 3)
    new = pb.nn.Linear(2, 3).state_dict()
    model.load_state_dict(new, assign=True)
    assert isinstance(model.weight, pb.nn.Parameter) and model.weight.requires_grad
    assert np.array_equal(model.weight.detach().numpy(), new["weight"].numpy())


REGISTRATION_ERRORS = {
    "param_before_init": lambda T: _bare(T).__setattr__("w", T.nn.Parameter(T.ones(1))),
    "buffer_before_init": lambda T: _bare(T).register_buffer("b", T.ones(1)),
    "module_before_init": lambda T: _bare(T).__setattr__("m", T.nn.Linear(1, 1)),
    "tensor_as_param": lambda T: setattr(T.nn.Linear(1, 1), "weight", T.ones(1, 1)),
    "int_as_module": lambda T: setattr(T.nn.Sequential(T.nn.ReLU()), "0", 3),
    "register_non_param": lambda T: T.nn.Linear(1, 1).register_parameter("w", T.ones(1)),
    "register_non_leaf": lambda T: T.nn.Linear(1, 1).register_parameter(
        "w", _non_leaf_param(T)),
    "param_dot": lambda T: T.nn.Linear(1, 1).register_parameter("a.b", None),
    "param_empty": lambda T: T.nn.Linear(1, 1).register_parameter("", None),
    "param_exists": lambda T: T.nn.Linear(1, 1).register_parameter("training", None),
    "param_name_type": lambda T: T.nn.Linear(1, 1).register_parameter(3, None),
    "buffer_dot": lambda T: T.nn.Linear(1, 1).register_buffer("a.b", None),
    "buffer_type": lambda T: T.nn.Linear(1, 1).register_buffer("b", [1]),
    "buffer_exists": lambda T: T.nn.Linear(1, 1).register_buffer("weight", None),
    "module_type": lambda T: T.nn.Linear(1, 1).add_module("m", 3),
    "module_dot": lambda T: T.nn.Linear(1, 1).add_module("a.b", T.nn.ReLU()),
    "module_exists": lambda T: T.nn.Linear(1, 1).add_module("weight", T.nn.ReLU()),
    "assign_buffer_int": lambda T: setattr(_with_buffer(T), "b", 3),
    "missing_attribute": lambda T: T.nn.Linear(1, 1).nope,
    "train_not_bool": lambda T: T.nn.Linear(1, 1).train(1),
    "no_forward": lambda T: T.nn.Module()(T.ones(1)),
    "linear_shape": lambda T: T.nn.Linear(4, 5)(T.ones(2, 3)),
    "linear_shape_3d": lambda T: T.nn.Linear(4, 5)(T.ones(2, 2, 3)),
    "sequential_index": lambda T: T.nn.Sequential(T.nn.ReLU())[3],
    "parameter_list_call": lambda T: T.nn.ParameterList()(1),
    "parameter_dict_key": lambda T: T.nn.ParameterDict()[3],
    "to_int": lambda T: T.nn.Linear(1, 1).to(T.int64),
    "sequential_add": lambda T: T.nn.Sequential() + T.nn.ReLU(),
    "rnn_nonlinearity": lambda T: T.nn.RNN(2, 3, nonlinearity="gelu"),
    "rnn_input_dims": lambda T: T.nn.RNN(2, 3)(T.ones(2, 2, 2, 2)),
    "rnn_input_size": lambda T: T.nn.RNN(2, 3)(T.ones(4, 2, 5)),
    "rnn_hidden_size": lambda T: T.nn.RNN(2, 3, num_layers=2)(T.ones(4, 2, 2),
                                                              T.zeros(1, 2, 3)),
    "rnn_unbatched_hidden": lambda T: T.nn.RNN(2, 3)(T.ones(4, 2), T.zeros(1, 1, 3)),
    "rnn_cell_dims": lambda T: T.nn.RNNCell(2, 3)(T.ones(1, 1, 2)),
    "rnn_cell_size": lambda T: T.nn.RNNCell(2, 3)(T.ones(4, 5)),
    "bilinear_batch": lambda T: T.nn.Bilinear(2, 3, 4)(T.ones(5, 2), T.ones(6, 3)),
    "bilinear_size": lambda T: T.nn.Bilinear(2, 3, 4)(T.ones(5, 3), T.ones(5, 3)),
}


def _bare(T):
    class Bare(T.nn.Module):
        def __init__(self):
            pass
    return Bare()


def _non_leaf_param(T):
    p = T.nn.Parameter(T.ones(1))
    q = p * 2
    q.__class__ = T.nn.Parameter
    return q


def _with_buffer(T):
    m = T.nn.Linear(1, 1)
    m.register_buffer("b", T.zeros(1))
    return m


@pytest.mark.parametrize("name", sorted(REGISTRATION_ERRORS))
def test_errors_are_torchs(name, torch):
    same_error(REGISTRATION_ERRORS[name], torch)


def test_setattr_moves_names_between_kinds():
    m = pb.nn.Linear(2, 2)
    m.register_buffer("extra", pb.zeros(1))
    m.extra = pb.nn.Parameter(pb.ones(1))  # a buffer name given a Parameter: now a parameter
    assert "extra" in m._parameters and "extra" not in m._buffers
    m.extra = None
    assert m.extra is None
    m.plain = 3
    m.plain = pb.nn.ReLU()
    assert "plain" in m._modules and "plain" not in m.__dict__
    del m.plain
    assert not hasattr(m, "plain")
    m.extra2 = pb.ones(1)  # a plain Tensor attribute is neither a parameter nor a buffer
    assert "extra2" in m.__dict__ and "extra2" not in m.state_dict()


def test_train_eval_zero_grad_requires_grad_and_apply():
    model = user_model(pb)
    assert model.eval() is model and not any(m.training for m in model.modules())
    model.train()
    assert all(m.training for m in model.modules())
    model(pb.randn(2, 3)).sum().backward()
    model.zero_grad(set_to_none=False)
    assert all(p.grad is not None and not p.grad.numpy().any() for p in model.parameters())
    model.zero_grad()
    assert all(p.grad is None for p in model.parameters())
    model.requires_grad_(False)
    assert not any(p.requires_grad for p in model.parameters())
    seen = []
    model.head.apply(lambda m: seen.append(type(m).__name__))
    assert seen == ["Tanh", "Linear", "Sequential"]


def test_to_double_float_keep_parameter_objects(torch):
    model = user_model(pb)
    weight = model.embed.weight
    model(pb.randn(2, 3)).sum().backward()
    model.double()
    assert model.embed.weight is weight and weight.dtype == pb.float64
    assert weight.grad.dtype == pb.float64 and model.count.dtype == pb.float64
    assert model(pb.randn(2, 3, dtype=pb.float64)).dtype == pb.float64
    assert model.float().embed.weight.dtype == pb.float32
    assert model.to(pb.float64).scale.dtype == pb.float64
    assert model.to("cpu") is model and model.to(device="cpu", dtype=pb.float32) is model
    assert model.scale.dtype == pb.float32


def hook_log(T):
    log = []
    lin = T.nn.Linear(2, 2)
    with T.no_grad():
        lin.weight.copy_(T.eye(2))
        lin.bias.zero_()
    h1 = lin.register_forward_pre_hook(lambda m, args: (args[0] * 2,))
    lin.register_forward_pre_hook(lambda m, args: log.append("pre-first"), prepend=True)
    h3 = lin.register_forward_hook(lambda m, args, out: out + 1)
    lin.register_forward_hook(lambda m, args, kwargs, out: log.append(sorted(kwargs)),
                              with_kwargs=True)
    log.append(lin(T.ones(1, 2)).detach().numpy().tolist())
    h1.remove()
    h3.remove()
    h1.remove()  # (a second remove does nothing)
    log.append(lin(T.ones(1, 2)).detach().numpy().tolist())
    return log


def test_forward_hooks_as_torchs(torch):
    assert hook_log(pb) == hook_log(torch) == ["pre-first", [], [[3.0, 3.0]], "pre-first", [],
                                               [[1.0, 1.0]]]


def test_always_call_hook_runs_on_error():
    lin = pb.nn.Linear(2, 2)
    seen = []
    lin.register_forward_hook(lambda m, a, out: seen.append(out), always_call=True)
    with pytest.raises(RuntimeError):
        lin(pb.ones(1, 3))
    assert seen == [None]


def test_deepcopy_copies_parameters_and_hooks():
    model = user_model(pb)
    model.register_forward_hook(lambda m, a, out: out * 0)
    twin = copy.deepcopy(model)
    assert twin.embed.weight is not model.embed.weight
    assert isinstance(twin.embed.weight, pb.nn.Parameter)
    assert np.array_equal(twin.embed.weight.detach().numpy(), model.embed.weight.detach().numpy())
    assert not twin(pb.ones(1, 3)).detach().numpy().any()


def test_containers_behave_as_torchs(torch):
    results = []
    for T in (pb, torch):
        nn = T.nn
        seq = nn.Sequential(nn.Linear(1, 2), nn.ReLU(), nn.Tanh())
        seq.append(nn.Sigmoid()).insert(0, nn.Identity())
        del seq[1]
        seq[0] = nn.Softmax(0)
        out = [type(m).__name__ for m in seq] + [len(seq), list(seq._modules),
                                                  type(seq[-1]).__name__,
                                                  [type(m).__name__ for m in seq[1:3]],
                                                  len(seq + seq)]
        ml = nn.ModuleList([nn.ReLU(), nn.Tanh()])
        ml += [nn.Sigmoid()]
        ml.insert(1, nn.Identity())
        del ml[0]
        out += [[type(m).__name__ for m in ml], list(ml._modules), len(ml[1:])]
        md = nn.ModuleDict({"b": nn.ReLU(), "a": nn.Tanh()})
        md["c"] = nn.Sigmoid()
        out += [list(md), "a" in md, type(md.pop("b")).__name__, list(md.keys())]
        pl = nn.ParameterList([T.ones(2), nn.Parameter(T.zeros(1))])
        pl.append(T.ones(3))
        out += [len(pl), [type(p).__name__ for p in pl], [n for n, _ in pl.named_parameters()]]
        pd = nn.ParameterDict({"z": T.ones(1), "y": T.ones(2)})
        pd["x"] = T.ones(3)
        out += [list(pd), [n for n, _ in pd.named_parameters()], "y" in pd, len(pd),
                type(pd["x"]).__name__]
        results.append(out)
    assert results[0] == results[1]
