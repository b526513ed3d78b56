"""pb.compile on a Module and on a training step closing over one: the parameters are
read afresh on every call (an optimizer's in-place step keeps the variant), and any
change of the module's state (another parameter object, train/eval, a hook, a
submodule, a dtype, requires_grad) retraces; results always match eager code."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb
import pullback.nn.functional as F
from pullback import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(3, 8)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(8, 2)
        self.scale = 1.0

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x))) * self.scale


def values(t):
    return t.detach().numpy().copy()


def check_same(compiled, model, x):
    out = compiled(x)
    want = model(x)
    np.testing.assert_allclose(values(out), values(want), rtol=1e-6, atol=1e-7)
    return out


@pytest.fixture
def setup():
    pb.manual_seed(0)
    model = Net()
    return model, pb.compile(model), pb.randn(5, 3)


def misses(fn):
    return fn.cache.info.misses


def test_compiled_module_matches_eager_and_delegates(setup):
    model, fast, x = setup
    assert isinstance(fast, nn.CompiledModule) and fast.module is model
    out = check_same(fast, model, x)
    assert out.grad_fn.name() == "CompiledFunctionBackward"
    out.sum().backward()
    grads = [values(p.grad) for p in model.parameters()]
    model.zero_grad()
    model(x).sum().backward()
    for g, p in zip(grads, model.parameters()):
        np.testing.assert_allclose(g, values(p.grad), rtol=1e-6)
    assert list(fast.parameters()) == list(model.parameters())
    assert fast.state_dict().keys() == model.state_dict().keys()
    assert repr(fast).startswith("CompiledModule(Net(")
    assert pb.compile(model)(x=x).shape == (5, 2)  # forward's argument names bind


def test_optimizer_steps_do_not_retrace(setup):
    model, fast, x = setup
    twin = Net()
    twin.load_state_dict(model.state_dict())
    y = pb.tensor([0, 1, 1, 0, 1])
    opt, topt = pb.optim.Adam(model.parameters(), lr=0.1), pb.optim.Adam(twin.parameters(),
                                                                         lr=0.1)
    for _ in range(5):
        for o, f in ((opt, fast), (topt, twin)):
            o.zero_grad()
            F.cross_entropy(f(x), y).backward()
            o.step()
    assert misses(fast) == 1 and fast.cache.info.hits == 4
    for p, q in zip(model.parameters(), twin.parameters()):
        np.testing.assert_allclose(values(p), values(q), rtol=1e-5, atol=1e-6)
    model.load_state_dict(Net().state_dict())  # copied in place: still the same variant
    check_same(fast, model, x)
    assert misses(fast) == 1


@pytest.mark.parametrize("change", [
    "replace_parameter", "eval", "hook", "submodule", "attribute", "requires_grad", "double",
    "delete_bias"])
def test_module_changes_retrace(setup, change):
    model, fast, x = setup
    check_same(fast, model, x)
    if change == "replace_parameter":
        model.fc1.weight = nn.Parameter(pb.ones(8, 3))
    elif change == "eval":
        model.eval()
    elif change == "hook":
        model.fc1.register_forward_hook(lambda m, a, out: out * 3)
    elif change == "submodule":
        model.act = nn.Tanh()
    elif change == "attribute":
        model.scale = 2.5
    elif change == "requires_grad":
        model.fc2.weight.requires_grad_(False)
    elif change == "double":
        model.double()
        x = x.double()
    elif change == "delete_bias":
        model.fc2.bias = None
    out = check_same(fast, model, x)
    assert misses(fast) == 2
    out.sum().backward()
    if change == "requires_grad":
        assert model.fc2.weight.grad is None and model.fc1.weight.grad is not None
    check_same(fast, model, x)
    assert misses(fast) == 2


def test_attributes_the_forward_does_not_read_do_not_retrace(setup):
    model, fast, x = setup
    for step in range(5):
        model.steps_seen = step  # kept on the model, never read by forward
        model.history = [step]
        check_same(fast, model, x)
    assert misses(fast) == 1
    model.scale = 3.0  # read by forward: retraced
    check_same(fast, model, x)
    assert misses(fast) == 2


def test_train_eval_toggles_keep_both_variants(setup):
    model, fast, x = setup
    for _ in range(3):
        check_same(fast, model, x)
        model.eval()
        check_same(fast, model, x)
        model.train()
    assert misses(fast) == 2 and fast.cache.info.hits == 4


def test_removing_a_hook_retraces(setup):
    model, fast, x = setup
    handle = model.register_forward_pre_hook(lambda m, args: (args[0] * 0,))
    check_same(fast, model, x)
    handle.remove()
    check_same(fast, model, x)
    assert misses(fast) == 2


MODEL = Net()


def step_loss(x, y):
    return F.mse_loss(MODEL(x), y)


def test_training_step_closing_over_a_model():
    global MODEL
    step = pb.compile(step_loss)
    x, y = pb.randn(4, 3), pb.randn(4, 2)
    opt = pb.optim.SGD(MODEL.parameters(), lr=0.1, momentum=0.9)
    for _ in range(4):
        opt.zero_grad()
        loss = step(x, y)
        np.testing.assert_allclose(loss.item(), step_loss(x, y).item(), rtol=1e-6)
        loss.backward()
        opt.step()
    assert misses(step) == 1 and step.cache.info.hits == 3
    MODEL.fc2.weight = nn.Parameter(pb.zeros(2, 8))
    np.testing.assert_allclose(step(x, y).item(), step_loss(x, y).item(), rtol=1e-6)
    assert misses(step) == 2
    MODEL = Net()  # rebinding the global: retraced too
    np.testing.assert_allclose(step(x, y).item(), step_loss(x, y).item(), rtol=1e-6)
    assert misses(step) == 3


def test_a_model_passed_as_an_argument_and_in_a_closure():
    model = Net()

    def loss(m, x):
        return m(x).pow(2).sum()

    fast = pb.compile(loss)
    x = pb.randn(2, 3)
    np.testing.assert_allclose(fast(model, x).item(), loss(model, x).item(), rtol=1e-6)
    model.act = nn.Tanh()
    np.testing.assert_allclose(fast(model, x).item(), loss(model, x).item(), rtol=1e-6)
    assert misses(fast) == 2
    closure = pb.compile(lambda x: model(x).sum())
    np.testing.assert_allclose(closure(x).item(), model(x).sum().item(), rtol=1e-6)
    model.fc1.bias.requires_grad_(False)
    np.testing.assert_allclose(closure(x).item(), model(x).sum().item(), rtol=1e-6)
    assert misses(closure) == 2


def test_generated_code_names_the_parameters():
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
    x = pb.randn(2, 3)
    info = pb.compiler.inspect(pb.compile(model), x)
    assert info.forward.startswith("def Sequential_forward_forward(input_, layer0_weight, "
                                   "layer0_bias, layer2_weight, layer2_bias):")
    net_info = pb.compiler.inspect(pb.compile(Net()), x)
    assert "fc1_weight" in net_info.forward and "# test_compile_module.py:" in net_info.forward


def test_grad_and_nested_compile_see_modules():
    model = Net()
    x = np.ones((2, 3), np.float32)
    # (the parameters require grad: pb.grad runs eagerly with create_graph, so that
    # they get gradients through the result; see docs/design.md, compiler/grad.py)
    g = pb.grad(lambda a: model(a).sum())(x)
    eager = pb.tensor(x, requires_grad=True)
    model(eager).sum().backward()
    np.testing.assert_allclose(g.detach().numpy(), eager.grad.numpy(), rtol=1e-6)
    inner = pb.compile(model)
    outer = pb.compile(lambda t: inner(t).sum() * 2)
    np.testing.assert_allclose(outer(pb.tensor(x)).item(), 2 * model(pb.tensor(x)).sum().item(),
                               rtol=1e-6)


LAYERS = {
    "rnn": (lambda: nn.RNN(3, 4, num_layers=2, bidirectional=True, batch_first=True),
            [(2, 5, 3)]),
    "rnn_cell": (lambda: nn.RNNCell(3, 4, nonlinearity="relu"), [(2, 3), (2, 4)]),
    "bilinear": (lambda: nn.Bilinear(3, 2, 4), [(5, 3), (5, 2)]),
    "reshaping": (lambda: nn.Sequential(nn.Flatten(), nn.Linear(6, 6), nn.Unflatten(1, (2, 3)),
                                        nn.LogSoftmax(dim=-1)), [(4, 2, 3)]),
    "softmax_sigmoid": (lambda: nn.Sequential(nn.Linear(3, 3), nn.Softmax(dim=1),
                                              nn.Sigmoid()), [(4, 3)]),
}


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_compiled_layers_match_eager(name):
    make, shapes = LAYERS[name]
    pb.manual_seed(1)
    model = make()
    inputs = [pb.randn(*s) for s in shapes]
    results = []
    for fn in (model, pb.compile(model)):
        out = fn(*inputs)
        outs = out if isinstance(out, tuple) else (out,)
        model.zero_grad()
        sum((o * o).sum() for o in outs).backward()
        results.append(([values(o) for o in outs],
                        [values(p.grad) for p in model.parameters()]))
    for a, b in zip(results[0][0] + results[0][1], results[1][0] + results[1][1]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
