"""LSTM, GRU and their cells against torch for the same weights (copied across):
outputs, final states, every parameter's gradient and the gradients of the input and
the initial states; torch's errors for bad shapes; dropout between layers."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import pullback as pb

from .helpers import assert_close, copy_weights

R = np.random.default_rng(0)


def data(*shape):
    return R.standard_normal(shape).astype(np.float32)


# name: (build(lib), input, initial state: None, an array or a tuple of arrays)
CASES = {
    "lstm_cell": (lambda T: T.nn.LSTMCell(3, 4), data(2, 3), (data(2, 4), data(2, 4))),
    "lstm_cell_zero_state": (lambda T: T.nn.LSTMCell(3, 4), data(2, 3), None),
    "lstm_cell_unbatched_no_bias": (lambda T: T.nn.LSTMCell(3, 4, bias=False), data(3),
                                    (data(4), data(4))),
    "gru_cell": (lambda T: T.nn.GRUCell(3, 4), data(2, 3), data(2, 4)),
    "gru_cell_unbatched": (lambda T: T.nn.GRUCell(3, 4, bias=False), data(3), None),
    "lstm": (lambda T: T.nn.LSTM(3, 4), data(5, 2, 3), None),
    "lstm_h0_c0": (lambda T: T.nn.LSTM(3, 4), data(5, 2, 3), (data(1, 2, 4), data(1, 2, 4))),
    "lstm_deep_batch_first": (lambda T: T.nn.LSTM(3, 4, num_layers=2, batch_first=True),
                              data(2, 5, 3), (data(2, 2, 4), data(2, 2, 4))),
    "lstm_bidirectional_deep": (lambda T: T.nn.LSTM(3, 4, num_layers=2, bidirectional=True),
                                data(5, 2, 3), (data(4, 2, 4), data(4, 2, 4))),
    "lstm_no_bias": (lambda T: T.nn.LSTM(3, 4, bias=False), data(6, 2, 3), None),
    "lstm_unbatched": (lambda T: T.nn.LSTM(3, 4, bidirectional=True), data(5, 3),
                       (data(2, 4), data(2, 4))),
    "lstm_unbatched_batch_first": (lambda T: T.nn.LSTM(3, 4, batch_first=True), data(5, 3),
                                   None),
    "lstm_proj": (lambda T: T.nn.LSTM(3, 5, num_layers=2, proj_size=2, bidirectional=True),
                  data(4, 2, 3), (data(4, 2, 2), data(4, 2, 5))),
    "gru": (lambda T: T.nn.GRU(3, 4), data(5, 2, 3), None),
    "gru_h0": (lambda T: T.nn.GRU(3, 4), data(5, 2, 3), data(1, 2, 4)),
    "gru_deep_bidirectional_batch_first": (
        lambda T: T.nn.GRU(3, 4, num_layers=2, bidirectional=True, batch_first=True),
        data(2, 5, 3), data(4, 2, 4)),
    "gru_no_bias_unbatched": (lambda T: T.nn.GRU(3, 4, bias=False), data(5, 3), data(1, 4)),
}


def _leaves(lib, tree):
    """numpy arrays (nested in tuples) as leaf tensors that require grad."""
    if tree is None:
        return None
    if isinstance(tree, tuple):
        return tuple(_leaves(lib, t) for t in tree)
    return lib.tensor(tree.copy(), requires_grad=True)


def _flat(tree):
    if tree is None:
        return []
    if isinstance(tree, (tuple, list)):
        return [a for t in tree for a in _flat(t)]
    return [tree]


def run(lib, model, x, state):
    """Outputs, parameter grads and the input/state grads after backpropagating a fixed
    random cotangent through every output."""
    xs, hs = _leaves(lib, x), _leaves(lib, state)
    out = model(xs) if hs is None else model(xs, hs)
    outs = _flat(out)
    rng = np.random.default_rng(1)
    loss = sum((o * lib.tensor(rng.standard_normal(tuple(o.shape)).astype(np.float32))).sum()
               for o in outs)
    loss.backward()
    return ([o.detach().numpy().copy() for o in outs],
            {k: p.grad.numpy().copy() for k, p in model.named_parameters()},
            [t.grad.numpy().copy() for t in _flat((xs, hs))])


def compare(ours, theirs):
    (outs, grads, xgrads), (touts, tgrads, txgrads) = ours, theirs
    assert [o.shape for o in outs] == [t.shape for t in touts]
    for o, t in zip(outs, touts):
        assert_close(o, t)
    assert list(grads) == list(tgrads)  # names and registration order
    for k in grads:
        assert grads[k].shape == tgrads[k].shape
        assert_close(grads[k], tgrads[k])
    for g, t in zip(xgrads, txgrads):
        assert_close(g, t)


@pytest.mark.filterwarnings("ignore:LSTM with projections is not supported with oneDNN")
@pytest.mark.parametrize("name", sorted(CASES))
def test_recurrent_layer_matches_torch(name, torch):
    make, x, state = CASES[name]
    ours, theirs = make(pb), make(torch)
    copy_weights(ours, theirs)
    compare(run(pb, ours, x, state), run(torch, theirs, x, state))


def test_compiled_lstm_matches_eager():
    pb.manual_seed(0)
    model = pb.nn.LSTM(3, 4, num_layers=2, batch_first=True)
    x = data(2, 5, 3)
    fast = pb.compile(model)
    eager = run(pb, model, x, None)
    model.zero_grad()
    compiled = run(pb, fast, x, None)
    compare(compiled, eager)
    assert fast.cache.info.misses == 1


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_dropout_one_between_layers_matches_torch(kind, torch):
    """dropout=1 zeroes the second layer's input: deterministic, so comparable."""
    make = lambda T: getattr(T.nn, kind)(3, 4, num_layers=2, dropout=1.0)
    ours, theirs = make(pb), make(torch)
    copy_weights(ours, theirs)
    x = data(5, 2, 3)
    compare(run(pb, ours, x, None), run(torch, theirs, x, None))
    ours.eval(), theirs.eval()  # no dropout in eval mode
    ours.zero_grad(), theirs.zero_grad()
    compare(run(pb, ours, x, None), run(torch, theirs, x, None))


def test_dropout_between_layers_keeps_and_scales():
    """With p = 0.5 about half the first layer's outputs reach the second, doubled:
    the training output differs from the eval output, is repeatable under a seed and
    backpropagates."""
    model = pb.nn.GRU(3, 64, num_layers=2, dropout=0.5)
    x = pb.tensor(data(6, 8, 3))
    with pb.no_grad():
        model.eval()
        quiet = model(x)[0].numpy()
        model.train()
        pb.manual_seed(3)
        noisy = model(x)[0].numpy()
        pb.manual_seed(3)
        again = model(x)[0].numpy()
    np.testing.assert_array_equal(noisy, again)
    assert np.abs(noisy - quiet).max() > 1e-3
    layer_out = pb.nn.functional.dropout(pb.ones(200, 100), 0.25).numpy()  # (what it uses)
    np.testing.assert_allclose(np.unique(layer_out), [0.0, 1 / 0.75], rtol=1e-6)
    assert abs((layer_out == 0).mean() - 0.25) < 0.02


ERRORS = [
    (lambda T: T.nn.LSTMCell(3, 4)(T.ones(2, 2, 3)), ValueError),
    (lambda T: T.nn.LSTMCell(3, 4)(T.ones(2, 3), (T.ones(2, 2, 4), T.ones(2, 4))), ValueError),
    (lambda T: T.nn.LSTMCell(3, 4)(T.ones(2, 3), (T.ones(3, 4), T.ones(2, 4))), RuntimeError),
    (lambda T: T.nn.LSTMCell(3, 4)(T.ones(2, 3), (T.ones(2, 4), T.ones(2, 5))), RuntimeError),
    (lambda T: T.nn.LSTMCell(3, 4)(T.ones(2, 5)), RuntimeError),
    (lambda T: T.nn.GRUCell(3, 4)(T.ones(2, 2, 3)), ValueError),
    (lambda T: T.nn.GRUCell(3, 4)(T.ones(2, 3), T.ones(1, 2, 4)), ValueError),
    (lambda T: T.nn.LSTM(3, 4)(T.ones(5, 2, 3), (T.ones(2, 4), T.ones(2, 4))), RuntimeError),
    (lambda T: T.nn.LSTM(3, 4)(T.ones(5, 3), (T.ones(1, 2, 4), T.ones(1, 2, 4))), RuntimeError),
    (lambda T: T.nn.LSTM(3, 4)(T.ones(5, 2, 3), (T.ones(1, 3, 4), T.ones(1, 2, 4))),
     RuntimeError),
    (lambda T: T.nn.LSTM(3, 4)(T.ones(5, 2, 3), (T.ones(1, 2, 4), T.ones(1, 2, 5))),
     RuntimeError),
    (lambda T: T.nn.LSTM(3, 4)(T.ones(5, 2, 2)), RuntimeError),
    (lambda T: T.nn.LSTM(3, 4)(T.ones(2, 5, 2, 2)), ValueError),
    (lambda T: T.nn.GRU(3, 4)(T.ones(2, 5, 2, 2)), ValueError),
    (lambda T: T.nn.GRU(3, 4)(T.ones(5, 2, 3), T.ones(2, 2, 4)), RuntimeError),
    (lambda T: T.nn.LSTM(3, 4, proj_size=4), ValueError),
    (lambda T: T.nn.LSTM(3, 4, proj_size=-1), ValueError),
    (lambda T: T.nn.GRU(3, 4, dropout=1.5), ValueError),
]


@pytest.mark.parametrize("index", range(len(ERRORS)))
def test_bad_input_gets_torchs_error(index, torch):
    call, kind = ERRORS[index]
    with pytest.raises(kind) as theirs:
        call(torch)
    with pytest.raises(kind) as ours:
        call(pb)
    assert str(ours.value) == str(theirs.value)


def test_repr_parameters_and_init_are_torchs(torch):
    for make in (lambda T: T.nn.LSTM(3, 4, proj_size=2, num_layers=2, bidirectional=True),
                 lambda T: T.nn.GRU(3, 4, 2, dropout=0.5), lambda T: T.nn.LSTMCell(3, 4),
                 lambda T: T.nn.GRUCell(3, 4, bias=False)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ours, theirs = make(pb), make(torch)
        assert repr(ours) == repr(theirs)
        assert [(k, tuple(p.shape)) for k, p in ours.named_parameters()] == \
            [(k, tuple(p.shape)) for k, p in theirs.named_parameters()]
        bound = 1 / np.sqrt(4)
        assert all(np.abs(p.detach().numpy()).max() <= bound for p in ours.parameters())


def test_dropout_with_one_layer_warns_like_torch(torch):
    for lib in (pb, torch):
        with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater "
                                             "than 1, but got dropout=0.5 and num_layers=1"):
            lib.nn.LSTM(3, 4, dropout=0.5)
