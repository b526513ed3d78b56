"""Every layer's output, parameter gradients and input gradients against torch's, for
the same weights (torch's, copied across with load_state_dict)."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb

from .helpers import assert_same_run, run_both

R = np.random.default_rng(0)


def data(*shape):
    return R.standard_normal(shape).astype(np.float32)


CASES = {
    "linear": (lambda T: T.nn.Linear(4, 5), [data(3, 4)]),
    "linear_3d": (lambda T: T.nn.Linear(4, 5), [data(2, 3, 4)]),
    "linear_1d": (lambda T: T.nn.Linear(4, 5), [data(4)]),
    "linear_no_bias": (lambda T: T.nn.Linear(4, 2, bias=False), [data(3, 4)]),
    "bilinear": (lambda T: T.nn.Bilinear(3, 4, 5), [data(6, 3), data(6, 4)]),
    "bilinear_3d": (lambda T: T.nn.Bilinear(3, 2, 4, bias=False), [data(2, 5, 3), data(2, 5, 2)]),
    "bilinear_1d": (lambda T: T.nn.Bilinear(3, 2, 4), [data(3), data(2)]),
    "identity": (lambda T: T.nn.Identity(54, unused=True), [data(2, 3)]),
    "flatten": (lambda T: T.nn.Flatten(), [data(2, 3, 4)]),
    "flatten_0_1": (lambda T: T.nn.Flatten(0, 1), [data(2, 3, 4)]),
    "unflatten": (lambda T: T.nn.Unflatten(1, (2, 3)), [data(4, 6)]),
    "unflatten_neg": (lambda T: T.nn.Unflatten(-1, (2, -1)), [data(4, 6)]),
    "relu": (lambda T: T.nn.ReLU(), [data(3, 4)]),
    "tanh": (lambda T: T.nn.Tanh(), [data(3, 4)]),
    "sigmoid": (lambda T: T.nn.Sigmoid(), [data(3, 4)]),
    "softmax": (lambda T: T.nn.Softmax(dim=1), [data(3, 4)]),
    "log_softmax": (lambda T: T.nn.LogSoftmax(dim=-1), [data(3, 4)]),
    "sequential": (lambda T: T.nn.Sequential(T.nn.Linear(4, 8), T.nn.ReLU(), T.nn.Linear(8, 3),
                                             T.nn.Tanh(), T.nn.Linear(3, 2)), [data(5, 4)]),
    "rnn_cell": (lambda T: T.nn.RNNCell(3, 4), [data(2, 3), data(2, 4)]),
    "rnn_cell_relu_unbatched": (lambda T: T.nn.RNNCell(3, 4, bias=False, nonlinearity="relu"),
                                [data(3)]),
    "rnn": (lambda T: T.nn.RNN(3, 4), [data(5, 2, 3)]),
    "rnn_h0": (lambda T: T.nn.RNN(3, 4), [data(5, 2, 3), data(1, 2, 4)]),
    "rnn_deep_batch_first": (lambda T: T.nn.RNN(3, 4, num_layers=2, batch_first=True),
                             [data(2, 5, 3), data(2, 2, 4)]),
    "rnn_bidirectional": (lambda T: T.nn.RNN(3, 4, num_layers=2, bidirectional=True),
                          [data(5, 2, 3)]),
    "rnn_relu_no_bias": (lambda T: T.nn.RNN(3, 4, nonlinearity="relu", bias=False),
                         [data(6, 2, 3)]),
    "rnn_unbatched": (lambda T: T.nn.RNN(3, 4, bidirectional=True), [data(5, 3), data(2, 4)]),
    "rnn_unbatched_batch_first": (lambda T: T.nn.RNN(3, 4, batch_first=True), [data(5, 3)]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_layer_matches_torch(name, torch):
    make, inputs = CASES[name]
    ours, theirs = run_both(make, inputs, torch)
    assert_same_run(ours, theirs)


def test_relu_inplace_matches_torch(torch):
    results = []
    for T in (pb, torch):
        x = T.tensor(data(3, 4) * 0 + np.arange(12, dtype=np.float32).reshape(3, 4) - 6,
                     requires_grad=True)
        y = T.nn.ReLU(inplace=True)(x * 1)
        y.sum().backward()
        results.append((y.detach().numpy(), x.grad.numpy(), type(y.grad_fn).__name__))
    np.testing.assert_array_equal(results[0][0], results[1][0])
    np.testing.assert_array_equal(results[0][1], results[1][1])
    assert results[0][2] == results[1][2]


LOSSES = {
    "mse": (lambda T: T.nn.MSELoss(), [data(3, 4), data(3, 4)], ()),
    "mse_sum": (lambda T: T.nn.MSELoss(reduction="sum"), [data(3, 4), data(3, 4)], ()),
    "mse_none": (lambda T: T.nn.MSELoss(reduction="none"), [data(3, 4), data(3, 4)], ()),
    "cross_entropy": (lambda T: T.nn.CrossEntropyLoss(),
                      [data(5, 3), np.array([0, 2, 1, 1, 0])], (1,)),
    "cross_entropy_sum": (lambda T: T.nn.CrossEntropyLoss(reduction="sum"),
                          [data(5, 3), np.array([0, 2, 1, 1, 0])], (1,)),
    "nll": (lambda T: T.nn.NLLLoss(), [np.log(np.full((4, 3), 1 / 3, np.float32)) + data(4, 3),
                                       np.array([0, 2, 1, 1])], (1,)),
    "bce": (lambda T: T.nn.BCELoss(), [np.float32(0.05) + 0.9 * R.random((3, 4), np.float32),
                                       R.random((3, 4), np.float32)], (1,)),
    "bce_with_logits": (lambda T: T.nn.BCEWithLogitsLoss(reduction="sum"),
                        [data(3, 4), R.random((3, 4), np.float32)], ()),
}


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_loss_matches_torch(name, torch):
    make, inputs, constants = LOSSES[name]  # (constants: targets without a gradient)
    ours, theirs = run_both(make, inputs, torch, constants=constants)
    assert_same_run(ours, theirs)


def test_default_initialisation_bounds_are_torchs():
    """Linear and Bilinear weights and biases within torch's bounds; RNN's too; all
    drawn from pullback's seeded generator (the same seed, the same weights)."""
    pb.manual_seed(3)
    a = pb.nn.Linear(50, 20)
    pb.manual_seed(3)
    b = pb.nn.Linear(50, 20)
    assert np.array_equal(a.weight.detach().numpy(), b.weight.detach().numpy())
    bound = 1 / np.sqrt(50)
    for p in (a.weight, a.bias):
        values = p.detach().numpy()
        assert np.abs(values).max() <= bound and np.abs(values).max() > 0.8 * bound
    assert values.std() > 0.4 * bound  # spread over the interval, not a constant
    rnn = pb.nn.RNN(3, 16)
    assert all(np.abs(p.detach().numpy()).max() <= 0.25 for p in rnn.parameters())
    bil = pb.nn.Bilinear(4, 3, 2)
    assert np.abs(bil.weight.detach().numpy()).max() <= 0.5
