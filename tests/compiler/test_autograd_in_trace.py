"""autograd called inside a traced function: ``pb.autograd.grad`` gives each call's
gradients (its ops are traced), and what generated code could not repeat (``backward()``
filling ``.grad``, an optimizer's step) is refused, never run once and frozen."""

import numpy as np
import pytest

import pullback as pb
from pullback import nn


def inner_grad(x, w):
    loss = (x ** 3 * w).sum()
    (gx,) = pb.autograd.grad(loss, x)
    return (gx * w).sum()


def test_autograd_grad_inside_compile_follows_each_call(torch):
    cf = pb.compile(inner_grad)
    for v in (1.0, 2.0, -0.5):
        x, w = pb.tensor([v, 2 * v], requires_grad=True), pb.tensor([1.0, 3.0], requires_grad=True)
        out = cf(x, w)
        out.backward()
        tx = torch.tensor([v, 2 * v], dtype=torch.float32, requires_grad=True)
        tw = torch.tensor([1.0, 3.0], requires_grad=True)
        ref = (torch.autograd.grad((tx ** 3 * tw).sum(), tx)[0] * tw).sum()
        ref.backward()
        assert out.item() == pytest.approx(ref.item())
        assert x.grad is None and tx.grad is None  # create_graph=False: no path to x
        np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-6)
    assert cf.cache.info.misses == 1


def test_autograd_grad_with_create_graph_inside_compile_is_differentiable():
    def f(x):
        (gx,) = pb.autograd.grad((x ** 3).sum(), x, create_graph=True)
        return (gx * gx).sum()  # sum 9 x^4: its gradient 36 x^3

    cf = pb.compile(f)
    for v in (1.0, 2.0):
        x = pb.tensor([v, -v], dtype=pb.float64, requires_grad=True)
        cf(x).backward()
        np.testing.assert_allclose(x.grad.numpy(), 36 * np.array([v, -v]) ** 3)


@pytest.mark.parametrize("door", ["compile", "grad"])
def test_backward_inside_a_traced_function_is_refused(door):
    def f(x):
        loss = (x * x).sum()
        loss.backward()
        return loss

    x = pb.tensor([1.0, 2.0], requires_grad=True)
    run = pb.compile(f) if door == "compile" else pb.grad(f)
    with pytest.raises(RuntimeError, match=r"backward\(\) was called inside a function being "
                                           r"traced .* outside it"):
        run(x if door == "compile" else np.array([1.0, 2.0]))


def test_an_optimizer_step_inside_a_compiled_function_is_refused():
    model = nn.Linear(3, 1)
    opt = pb.optim.SGD(model.parameters(), lr=0.1)

    def step(x):
        loss = model(x).sum()
        with pb.no_grad():
            opt.step()
        return loss

    with pytest.raises(RuntimeError, match=r"SGD.step\(\) was called inside a function"):
        pb.compile(step)(pb.ones(2, 3))


def test_the_documented_training_step_matches_eager():
    """Compile the loss; backward() and step() on its result, outside: each step's loss
    and parameters as eager training's."""
    pb.manual_seed(1)
    x, y = pb.randn(8, 3), pb.randn(8, 1)

    def train(compiled):
        pb.manual_seed(0)
        model = nn.Linear(3, 1)
        opt = pb.optim.SGD(model.parameters(), lr=0.1)
        loss_fn = lambda: ((model(x) - y) ** 2).mean()  # noqa: E731
        run = pb.compile(loss_fn) if compiled else loss_fn
        losses = []
        for _ in range(4):
            opt.zero_grad()
            loss = run()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return losses

    eager, compiled = train(False), train(True)
    np.testing.assert_allclose(compiled, eager, rtol=1e-6)
    assert compiled[-1] < compiled[0]
