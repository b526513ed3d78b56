"""The transformer modules against torch (float64, torch's weights loaded through its
state dict): outputs, the gradients of every parameter and of the inputs, with causal
and key padding masks, both norm placements, both layouts, relu/gelu/a callable; the same
under ``pb.compile``; torch's parameter names, reprs and errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import pullback as pb

from .helpers import assert_close, copy_weights

R = np.random.default_rng(0)
TOL = {"rtol": 1e-10, "atol": 1e-10}
S, T_LEN, N, E = 5, 4, 3, 8


def data(*shape):
    return R.standard_normal(shape)


def causal(n):
    return np.triu(np.ones((n, n), bool), 1)


def padding(length):
    """(N, length): the last positions of two sequences are padding (no row all True)."""
    mask = np.zeros((N, length), bool)
    mask[0, -2:] = True
    mask[2, -1] = True
    return mask


def as_float(mask):
    return np.where(mask, -np.inf, 0.0)


def dtype64(T):
    return T.float64


def seq(length, batch_first):
    return data(N, length, E) if batch_first else data(length, N, E)


def run(T, model, inputs, masks, flags=None):
    """Output, input gradients, parameter gradients of sum(out * w) for a fixed w; the
    masks (arrays) as tensors and the ``flags`` as they are are keyword arguments."""
    xs = [T.tensor(a, requires_grad=True) for a in inputs]
    out = model(*xs, **{k: T.tensor(v) for k, v in masks.items()}, **(flags or {}))
    w = T.tensor(np.random.default_rng(1).standard_normal(out.shape))
    (out * w).sum().backward()
    return (out.detach().numpy().copy(), [x.grad.numpy().copy() for x in xs],
            {k: p.grad.numpy().copy() for k, p in model.named_parameters()})


def compare(ours, theirs):
    (out, gx, gp), (tout, tgx, tgp) = ours, theirs
    assert out.shape == tout.shape
    assert_close(out, tout, **TOL)
    for a, b in zip(gx, tgx):
        assert_close(a, b, **TOL)
    assert list(gp) == list(tgp)
    for k in gp:
        assert_close(gp[k], tgp[k], **TOL)


def both(make, torch):
    ours, theirs = make(pb), make(torch)
    copy_weights(ours, theirs)
    return ours, theirs


def check(make, inputs, masks, torch, flags=None):
    ours, theirs = both(make, torch)
    compare(run(pb, ours, inputs, masks, flags), run(torch, theirs, inputs, masks, flags))


def enc_layer(T, **kw):
    kw = {"dim_feedforward": 16, "dropout": 0.0, **kw}
    return T.nn.TransformerEncoderLayer(E, 2, dtype=dtype64(T), **kw)


def dec_layer(T, **kw):
    kw = {"dim_feedforward": 16, "dropout": 0.0, **kw}
    return T.nn.TransformerDecoderLayer(E, 2, dtype=dtype64(T), **kw)


@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer_matches_torch(norm_first, batch_first, activation, torch):
    masks = {"src_mask": causal(S), "src_key_padding_mask": padding(S)}
    check(lambda T: enc_layer(T, norm_first=norm_first, batch_first=batch_first,
                              activation=activation),
          [seq(S, batch_first)], masks, torch)


@pytest.mark.parametrize("case", ["float_masks", "no_masks", "no_bias", "callable",
                                  "unbatched", "is_causal"])
def test_encoder_layer_variants_match_torch(case, torch):
    masks = {"src_mask": as_float(causal(S)), "src_key_padding_mask": as_float(padding(S))}
    x, kw, flags = seq(S, False), {}, {}
    if case == "no_masks":
        masks = {}
    elif case == "no_bias":
        kw = {"bias": False}
    elif case == "callable":
        kw = {"activation": lambda x: x.tanh() * 2}
    elif case == "unbatched":
        x, masks = data(S, E), {"src_mask": causal(S)}
    elif case == "is_causal":
        masks, flags = {"src_mask": as_float(causal(S))}, {"is_causal": True}
    check(lambda T: enc_layer(T, **kw), [x], masks, torch, flags)


def test_encoder_layer_activation_module_matches_torch(torch):
    make = lambda T: enc_layer(T, activation=T.nn.GELU(approximate="tanh"))
    check(make, [seq(S, False)], {"src_mask": causal(S)}, torch)
    assert repr(make(pb)) == repr(make(torch))


@pytest.mark.parametrize("batch_first", [False, True])
def test_encoder_stack_with_final_norm_matches_torch(batch_first, torch):
    def make(T):
        layer = enc_layer(T, batch_first=batch_first, norm_first=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch's note on its nested-tensor path
            return T.nn.TransformerEncoder(layer, 2, T.nn.LayerNorm(E, dtype=dtype64(T)))
    masks = {"mask": causal(S), "src_key_padding_mask": padding(S)}
    check(make, [seq(S, batch_first)], masks, torch)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_layer_matches_torch(norm_first, batch_first, torch):
    masks = {"tgt_mask": causal(T_LEN), "tgt_key_padding_mask": padding(T_LEN),
             "memory_key_padding_mask": padding(S),
             "memory_mask": np.triu(np.ones((T_LEN, S), bool), 3)}
    check(lambda T: dec_layer(T, norm_first=norm_first, batch_first=batch_first,
                              activation="gelu"),
          [seq(T_LEN, batch_first), seq(S, batch_first)], masks, torch)


@pytest.mark.parametrize("tgt_is_causal", [None, True])
def test_decoder_stack_matches_torch(tgt_is_causal, torch):
    make = lambda T: T.nn.TransformerDecoder(dec_layer(T), 2, T.nn.LayerNorm(
        E, dtype=dtype64(T)))
    check(make, [seq(T_LEN, False), seq(S, False)], {"tgt_mask": as_float(causal(T_LEN))},
          torch, {"tgt_is_causal": tgt_is_causal})


def transformer(T, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's note on its nested-tensor path
        return T.nn.Transformer(E, 2, 2, 2, 16, 0.0, dtype=dtype64(T), **kw)


TRANSFORMER_MASKS = {"src_mask": causal(S), "tgt_mask": causal(T_LEN),
                     "src_key_padding_mask": padding(S),
                     "tgt_key_padding_mask": padding(T_LEN),
                     "memory_key_padding_mask": padding(S)}


@pytest.mark.parametrize("batch_first", [False, True])
def test_transformer_matches_torch(batch_first, torch):
    check(lambda T: transformer(T, batch_first=batch_first),
          [seq(S, batch_first), seq(T_LEN, batch_first)], TRANSFORMER_MASKS, torch)


def test_transformer_in_eval_mode_matches_torch(torch):
    """Dropout off in eval mode; torch's fused inference path (no gradient) agrees."""
    make = lambda T: T.nn.TransformerEncoderLayer(E, 2, 16, batch_first=True,
                                                  dtype=dtype64(T)).eval()
    ours, theirs = both(make, torch)
    x = seq(S, True)
    with torch.no_grad():
        want = theirs(torch.tensor(x), src_key_padding_mask=torch.tensor(padding(S)))
    got = ours(pb.tensor(x), src_key_padding_mask=pb.tensor(padding(S)))
    assert_close(got.detach().numpy(), want.numpy(), **TOL)
    compare(run(pb, ours, [x], {"src_mask": causal(S)}),
            run(torch, theirs, [x], {"src_mask": causal(S)}))


def test_compiled_transformer_matches_eager():
    pb.manual_seed(0)
    model = transformer(pb, batch_first=True)
    fast = pb.compile(model)
    inputs = [seq(S, True), seq(T_LEN, True)]
    eager = run(pb, model, inputs, TRANSFORMER_MASKS)
    model.zero_grad()
    compiled = run(pb, fast, inputs, TRANSFORMER_MASKS)
    compare(compiled, eager)


def test_compiled_loss_gradients_match_eager():
    """A compiled loss closing over the model: its gradients (parameters and inputs) are
    eager code's; so are those of pb.grad of the loss, compiled."""
    pb.manual_seed(0)
    model = transformer(pb, norm_first=True, activation="gelu")
    masks = {k: pb.tensor(v) for k, v in TRANSFORMER_MASKS.items()}
    w = pb.tensor(data(T_LEN, N, E))

    def loss(src, tgt):
        return (model(src, tgt, **masks) * w).sum()

    inputs = [seq(S, False), seq(T_LEN, False)]
    results = []
    for fn in (loss, pb.compile(loss)):
        model.zero_grad()
        xs = [pb.tensor(a, requires_grad=True) for a in inputs]
        fn(*xs).backward()
        results.append(([x.grad.numpy().copy() for x in xs],
                        {k: p.grad.numpy().copy() for k, p in model.named_parameters()}))
    (gx, gp), (cgx, cgp) = results
    for a, b in zip(gx, cgx):
        assert_close(b, a, **TOL)
    for k in gp:
        assert_close(cgp[k], gp[k], **TOL)
    xs = [pb.tensor(a) for a in inputs]
    eager = pb.grad(loss)(*xs)
    compiled = pb.compile(pb.grad(loss))(*xs)
    assert_close(compiled.detach().numpy(), eager.detach().numpy(), **TOL)


def test_state_dict_keys_and_reprs_match_torch(torch):
    for make in (lambda T: enc_layer(T), lambda T: dec_layer(T, bias=False),
                 lambda T: transformer(T), lambda T: transformer(T, norm_first=True)):
        ours, theirs = make(pb), make(torch)
        assert list(ours.state_dict()) == list(theirs.state_dict())
        assert repr(ours) == repr(theirs)


def test_square_subsequent_mask_matches_torch(torch):
    ours = pb.nn.Transformer.generate_square_subsequent_mask(4)
    theirs = torch.nn.Transformer.generate_square_subsequent_mask(4)
    assert ours.dtype == pb.float32
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert pb.nn.Transformer.generate_square_subsequent_mask(2, dtype=pb.float64).dtype \
        == pb.float64


def test_transformer_initialises_matrices_by_xavier():
    pb.manual_seed(0)
    model = transformer(pb)
    w = model.encoder.layers[0].linear1.weight.detach().numpy()  # (16, 8)
    assert np.abs(w).max() <= np.sqrt(6 / 24) and np.abs(w).max() > 0.5 * np.sqrt(6 / 24)
    assert not np.array_equal(w, model.encoder.layers[1].linear1.weight.detach().numpy())
    bias = model.encoder.layers[0].linear1.bias.detach().numpy()
    assert np.abs(bias).max() <= 1 / np.sqrt(E)


def raised(case, T):
    with pytest.raises(Exception) as info:
        case(T)
    return type(info.value), str(info.value)


def test_errors_match_torch(torch):
    cases = [
        lambda T: T.nn.TransformerEncoderLayer(E, 2, activation="tanh"),
        lambda T: transformer(T)(T.zeros(S, N, E, dtype=T.float64),
                                 T.zeros(T_LEN, N + 1, E, dtype=T.float64)),
        lambda T: transformer(T)(T.zeros(S, N, E, dtype=T.float64),
                                 T.zeros(T_LEN, N, E + 2, dtype=T.float64)),
        lambda T: enc_layer(T)(T.zeros(S, N, E, dtype=T.float64), is_causal=True),
        lambda T: enc_layer(T)(T.zeros(S, N, E, dtype=T.float64),
                               src_mask=T.zeros(S, S, dtype=T.int64)),
    ]
    for case in cases:
        assert raised(case, pb) == raised(case, torch)


def test_mismatched_mask_types_warn_as_torch(torch):
    for T in (pb, torch):
        layer = enc_layer(T)
        with pytest.warns(UserWarning, match="Support for mismatched src_key_padding_mask "
                                             "and src_mask is deprecated"):
            layer(T.zeros(S, N, E, dtype=T.float64), src_mask=T.tensor(as_float(causal(S))),
                  src_key_padding_mask=T.tensor(padding(S)))


@pytest.mark.parametrize("case", ["left_aligned", "not_left_aligned", "with_grad",
                                  "norm_first"])
def test_encoder_inference_padding_matches_torch(case, torch):
    """torch's nested-tensor inference path gives zeros at padded positions (before the
    final norm) where it applies, and the ordinary results elsewhere."""
    def make(T):
        layer = T.nn.TransformerEncoderLayer(E, 2, 16, batch_first=True,
                                             norm_first=case == "norm_first",
                                             dtype=dtype64(T))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch's note on its nested-tensor path
            return T.nn.TransformerEncoder(layer, 2, T.nn.LayerNorm(E, dtype=dtype64(T)))

    ours, theirs = both(make, torch)
    assert ours.use_nested_tensor == theirs.use_nested_tensor == (case != "norm_first")
    x, kpm = seq(S, True), padding(S)
    if case == "not_left_aligned":
        kpm[1, 0] = True
    results = []
    for T, model in ((pb, ours), (torch, theirs)):
        model.eval()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch: nested tensors are a prototype
            if case == "with_grad":
                out = model(T.tensor(x, requires_grad=True),
                            src_key_padding_mask=T.tensor(kpm))
            else:
                with T.no_grad():
                    out = model(T.tensor(x), src_key_padding_mask=T.tensor(kpm))
        results.append(out.detach().numpy())
    assert_close(results[0], results[1], **TOL)


@pytest.mark.parametrize("kind", ["encoder", "decoder"])
def test_dropout_one_in_training_matches_torch(kind, torch):
    """dropout=1 zeroes every block's output (and the attention weights): deterministic,
    so comparable; each block's own dropout is applied inside it, as in torch."""
    if kind == "encoder":
        make = lambda T: enc_layer(T, dropout=1.0, norm_first=True)
        inputs, masks = [seq(S, False)], {"src_mask": causal(S)}
    else:
        make = lambda T: dec_layer(T, dropout=1.0)
        inputs, masks = [seq(T_LEN, False), seq(S, False)], {"tgt_mask": causal(T_LEN)}
    ours, theirs = both(make, torch)
    out = run(pb, ours, inputs, masks)
    compare(out, run(torch, theirs, inputs, masks))
    assert not np.isnan(out[0]).any()
