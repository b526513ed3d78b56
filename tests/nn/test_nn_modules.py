"""The activation, normalization, dropout, embedding, attention and loss modules against
torch's: outputs, parameter and input gradients for the same weights (copied across),
running statistics, reprs; dropout's draws (seeded, fresh per compiled call)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import pullback as pb
import pullback.nn.functional as F

from .helpers import assert_close, assert_same_run, copy_weights, run_both

R = np.random.default_rng(0)


def data(*shape):
    return R.standard_normal(shape).astype(np.float32)


def ints(high, *shape):
    return R.integers(0, high, shape)


SPREAD = (np.linspace(-5, 7, 24, dtype=np.float32) + 0.05).reshape(2, 3, 4)

LAYERS = {
    "relu6": (lambda T: T.nn.ReLU6(), [SPREAD]),
    "hardtanh": (lambda T: T.nn.Hardtanh(-2.0, 3.0), [SPREAD]),
    "leaky_relu": (lambda T: T.nn.LeakyReLU(0.1), [SPREAD]),
    "elu": (lambda T: T.nn.ELU(0.7), [SPREAD]),
    "selu": (lambda T: T.nn.SELU(), [SPREAD]),
    "celu": (lambda T: T.nn.CELU(1.3), [SPREAD]),
    "gelu": (lambda T: T.nn.GELU(), [SPREAD]),
    "gelu_tanh": (lambda T: T.nn.GELU("tanh"), [SPREAD]),
    "silu": (lambda T: T.nn.SiLU(), [SPREAD]),
    "mish": (lambda T: T.nn.Mish(), [SPREAD]),
    "softplus": (lambda T: T.nn.Softplus(2.0, 4.0), [SPREAD]),
    "softsign": (lambda T: T.nn.Softsign(), [SPREAD]),
    "hardsigmoid": (lambda T: T.nn.Hardsigmoid(), [SPREAD]),
    "hardswish": (lambda T: T.nn.Hardswish(), [SPREAD]),
    "logsigmoid": (lambda T: T.nn.LogSigmoid(), [SPREAD]),
    "glu": (lambda T: T.nn.GLU(1), [data(2, 4, 3)]),
    "prelu": (lambda T: T.nn.PReLU(), [SPREAD]),
    "prelu_channels": (lambda T: T.nn.PReLU(3, init=0.1), [SPREAD]),
    "batch_norm_1d": (lambda T: T.nn.BatchNorm1d(3), [data(4, 3)]),
    "batch_norm_1d_3d": (lambda T: T.nn.BatchNorm1d(3), [data(4, 3, 5)]),
    "batch_norm_2d": (lambda T: T.nn.BatchNorm2d(3), [data(2, 3, 4, 2)]),
    "batch_norm_3d": (lambda T: T.nn.BatchNorm3d(2, affine=False), [data(2, 2, 3, 2, 2)]),
    "batch_norm_eval": (lambda T: T.nn.BatchNorm2d(3).eval(), [data(2, 3, 4, 2)]),
    "batch_norm_no_stats": (lambda T: T.nn.BatchNorm1d(3, track_running_stats=False).eval(),
                            [data(4, 3)]),
    "layer_norm": (lambda T: T.nn.LayerNorm(4), [data(2, 3, 4)]),
    "layer_norm_2d": (lambda T: T.nn.LayerNorm((3, 4), bias=False), [data(2, 3, 4)]),
    "layer_norm_plain": (lambda T: T.nn.LayerNorm(4, elementwise_affine=False),
                         [data(3, 4)]),
    "group_norm": (lambda T: T.nn.GroupNorm(2, 4), [data(3, 4, 5)]),
    "group_norm_4d": (lambda T: T.nn.GroupNorm(3, 6, affine=False), [data(2, 6, 2, 3)]),
    "instance_norm_1d": (lambda T: T.nn.InstanceNorm1d(3), [data(2, 3, 5)]),
    "instance_norm_2d": (lambda T: T.nn.InstanceNorm2d(3, affine=True,
                                                       track_running_stats=True),
                         [data(2, 3, 4, 4)]),
    "instance_norm_unbatched": (lambda T: T.nn.InstanceNorm1d(3, affine=True),
                                [data(3, 6)]),
    "rms_norm": (lambda T: T.nn.RMSNorm(4), [data(2, 3, 4)]),
    "rms_norm_eps": (lambda T: T.nn.RMSNorm((3, 4), eps=1e-3), [data(2, 3, 4)]),
    "local_response_norm": (lambda T: T.nn.LocalResponseNorm(3), [data(2, 5, 4)]),
    "dropout_eval": (lambda T: T.nn.Dropout(0.4).eval(), [data(3, 4)]),
    "dropout2d_p0": (lambda T: T.nn.Dropout2d(0.0), [data(2, 3, 4, 4)]),
    "alpha_dropout_eval": (lambda T: T.nn.AlphaDropout(0.3).eval(), [data(3, 4)]),
    "cosine_similarity": (lambda T: T.nn.CosineSimilarity(dim=-1), [data(3, 4), data(3, 4)]),
    "pairwise_distance": (lambda T: T.nn.PairwiseDistance(p=3.0, keepdim=True),
                          [data(3, 4), data(3, 4)]),
    "sequential": (lambda T: T.nn.Sequential(T.nn.Linear(4, 8), T.nn.LayerNorm(8),
                                             T.nn.GELU(), T.nn.Dropout(0.1).eval(),
                                             T.nn.Linear(8, 3)), [data(5, 4)]),
}


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layer_matches_torch(name, torch):
    make, inputs = LAYERS[name]
    ours, theirs = run_both(make, inputs, torch)
    assert_same_run(ours, theirs, rtol=1e-4, atol=1e-5)


LOOKUPS = {
    "embedding": (lambda T: T.nn.Embedding(6, 3), [ints(6, 2, 4)]),
    "embedding_padding": (lambda T: T.nn.Embedding(6, 3, padding_idx=2),
                          [np.array([[2, 1, 2], [0, 5, 2]])]),
    "embedding_bag_mean": (lambda T: T.nn.EmbeddingBag(6, 3), [ints(6, 3, 4)]),
    "embedding_bag_sum_offsets": (lambda T: T.nn.EmbeddingBag(6, 3, mode="sum"),
                                  [np.array([1, 4, 4, 0, 2, 5]), np.array([0, 3, 3])]),
    "embedding_bag_max_padding": (lambda T: T.nn.EmbeddingBag(6, 3, mode="max",
                                                              padding_idx=4),
                                  [np.array([1, 4, 4, 0, 2, 5]), np.array([0, 2, 5])]),
}


@pytest.mark.parametrize("two_d", [False, True])
def test_embedding_bag_per_sample_weights_match_torch(torch, two_d):
    idx = np.array([[1, 4, 4], [0, 2, 5]]) if two_d else np.array([1, 4, 4, 0, 2, 5])
    weights = data(*idx.shape)
    offsets = None if two_d else np.array([0, 2, 2])
    results = []
    models = [pb.nn.EmbeddingBag(6, 3, mode="sum", padding_idx=2),
              torch.nn.EmbeddingBag(6, 3, mode="sum", padding_idx=2)]
    copy_weights(*models)
    for T, bag in zip((pb, torch), models):
        w = T.tensor(weights, requires_grad=True)
        out = bag(T.tensor(idx), None if offsets is None else T.tensor(offsets),
                  per_sample_weights=w)
        (out * T.tensor(np.arange(out.numel(), dtype=np.float32).reshape(out.shape))
         ).sum().backward()
        results.append([out.detach().numpy(), w.grad.numpy(), bag.weight.grad.numpy()])
    for a, b in zip(*results):
        assert_close(a, b)


@pytest.mark.parametrize("name", sorted(LOOKUPS))
def test_lookup_matches_torch(name, torch):
    make, inputs = LOOKUPS[name]
    ours, theirs = run_both(make, inputs, torch, constants=tuple(range(len(inputs))))
    assert_same_run(ours, theirs)


def _mha(**kw):
    return lambda T: T.nn.MultiheadAttention(8, 2, **kw)


ATTENTION = {
    "mha": (_mha(), [data(5, 2, 8), data(6, 2, 8), data(6, 2, 8)], {}),
    "mha_batch_first": (_mha(batch_first=True), [data(2, 5, 8)] * 3, {}),
    "mha_per_head": (_mha(), [data(5, 2, 8)] * 3, {"average_attn_weights": False}),
    "mha_kdim_vdim": (_mha(kdim=3, vdim=5, bias=False),
                      [data(4, 2, 8), data(6, 2, 3), data(6, 2, 5)], {}),
    "mha_unbatched": (_mha(), [data(4, 8), data(6, 8), data(6, 8)], {}),
    "mha_masks": (_mha(batch_first=True), [data(2, 4, 8), data(2, 5, 8), data(2, 5, 8)],
                  {"key_padding_mask": np.array([[False] * 4 + [True], [False] * 5]),
                   "attn_mask": np.triu(np.ones((4, 5), bool), 2)}),
    "mha_float_mask": (_mha(), [data(4, 2, 8)] * 3, {"attn_mask": data(4, 4)}),
    "mha_bias_kv_zero_attn": (_mha(add_bias_kv=True, add_zero_attn=True, batch_first=True),
                              [data(2, 4, 8), data(2, 5, 8), data(2, 5, 8)],
                              {"key_padding_mask": np.array([[False] * 4 + [True],
                                                             [False] * 5]),
                               "attn_mask": np.triu(np.ones((4, 5), bool), 2)}),
    "mha_zero_attn_float_mask": (_mha(add_zero_attn=True), [data(4, 2, 8)] * 3,
                                 {"attn_mask": data(4, 4)}),
}


@pytest.mark.parametrize("name", sorted(ATTENTION))
def test_multihead_attention_matches_torch(name, torch):
    make, inputs, masks = ATTENTION[name]

    def call(T):
        module = make(T)
        kw = {k: T.tensor(v) for k, v in masks.items()}
        return lambda *xs: module(*xs, **kw)

    results = []
    models = [make(pb), make(torch)]
    copy_weights(models[0], models[1])
    for T, model in zip((pb, torch), models):
        kw = {k: T.tensor(v) for k, v in masks.items()}
        xs = [T.tensor(a, requires_grad=True) for a in inputs]
        out, weights = model(*xs, **kw)
        w = T.tensor(np.random.default_rng(1).standard_normal(out.shape).astype(np.float32))
        ((out * w).sum() + weights.sum()).backward()
        results.append((out.detach().numpy(), weights.detach().numpy(),
                        [x.grad.numpy() for x in xs],
                        {k: p.grad.numpy() for k, p in model.named_parameters()}))
    (o, w, gx, gp), (to, tw, tgx, tgp) = results
    assert_close(o, to, 1e-4, 1e-5)
    assert_close(w, tw, 1e-4, 1e-5)
    for a, b in zip(gx, tgx):
        assert_close(a, b, 1e-4, 1e-5)
    assert gp.keys() == tgp.keys()
    for k in gp:
        assert_close(gp[k], tgp[k], 1e-4, 1e-5)


def test_multihead_attention_without_weights(torch):
    mha = pb.nn.MultiheadAttention(8, 2)
    out, weights = mha(*[pb.tensor(data(3, 2, 8))] * 3, need_weights=False)
    assert weights is None and out.shape == (3, 2, 8)


UNIT = (0.05 + 0.9 * R.random((3, 4))).astype(np.float32)
SIGNS = np.sign(data(3, 4)).astype(np.float32)
LOSSES = {
    "l1": (lambda T: T.nn.L1Loss(), [data(3, 4), data(3, 4)], ()),
    "smooth_l1": (lambda T: T.nn.SmoothL1Loss(beta=0.5), [data(3, 4), data(3, 4)], ()),
    "huber": (lambda T: T.nn.HuberLoss(reduction="sum", delta=0.7),
              [data(3, 4), data(3, 4)], ()),
    "soft_margin": (lambda T: T.nn.SoftMarginLoss(), [data(3, 4), SIGNS], (1,)),
    "kl_div": (lambda T: T.nn.KLDivLoss(reduction="batchmean"),
               [np.log(UNIT), UNIT[::-1].copy()], (1,)),
    "kl_div_log_target": (lambda T: T.nn.KLDivLoss(reduction="sum", log_target=True),
                          [np.log(UNIT), np.log(UNIT[::-1])], ()),
    "poisson_nll": (lambda T: T.nn.PoissonNLLLoss(), [data(3, 4), UNIT * 3], (1,)),
    "poisson_nll_full": (lambda T: T.nn.PoissonNLLLoss(log_input=False, full=True),
                         [UNIT, UNIT * 4], (1,)),
    "gaussian_nll": (lambda T: T.nn.GaussianNLLLoss(full=True),
                     [data(3, 4), data(3, 4), UNIT], (1,)),
    "margin_ranking": (lambda T: T.nn.MarginRankingLoss(0.2),
                       [data(5), data(5), np.sign(data(5))], (2,)),
    "hinge_embedding": (lambda T: T.nn.HingeEmbeddingLoss(0.5), [data(3, 4), SIGNS], (1,)),
    "multilabel_soft_margin": (lambda T: T.nn.MultiLabelSoftMarginLoss(),
                               [data(3, 4), (SIGNS > 0).astype(np.float32)], (1,)),
    "cosine_embedding": (lambda T: T.nn.CosineEmbeddingLoss(0.1),
                         [data(3, 4), data(3, 4), np.sign(data(3))], (2,)),
    "triplet_margin": (lambda T: T.nn.TripletMarginLoss(swap=True),
                       [data(3, 4), data(3, 4), data(3, 4)], ()),
    "cross_entropy_options": (lambda T: T.nn.CrossEntropyLoss(
        weight=T.tensor([0.5, 2.0, 1.0]), ignore_index=1, label_smoothing=0.1),
        [data(5, 3), np.array([0, 2, 1, 1, 0])], (1,)),
    "cross_entropy_probabilities": (lambda T: T.nn.CrossEntropyLoss(label_smoothing=0.2),
                                    [data(3, 3), UNIT[:, :3] / UNIT[:, :3].sum(1,
                                                                               keepdims=True)],
                                    (1,)),
    "cross_entropy_spatial": (lambda T: T.nn.CrossEntropyLoss(reduction="none"),
                              [data(2, 3, 4), ints(3, 2, 4)], (1,)),
    "nll_weighted": (lambda T: T.nn.NLLLoss(weight=T.tensor([1.0, 3.0, 0.5])),
                     [data(4, 3), np.array([0, 2, 1, 1])], (1,)),
}


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_loss_matches_torch(name, torch):
    make, inputs, constants = LOSSES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (KLDivLoss's 'mean' warning)
        ours, theirs = run_both(make, inputs, torch, constants=constants)
    assert_same_run(ours, theirs)


def _stats(module):
    return [getattr(module, n).numpy().copy() for n in ("running_mean", "running_var",
                                                          "num_batches_tracked")]


@pytest.mark.parametrize("momentum", [0.1, None])
def test_batch_norm_running_stats_match_torch(torch, momentum):
    ours, theirs = pb.nn.BatchNorm2d(3, momentum=momentum), \
        torch.nn.BatchNorm2d(3, momentum=momentum)
    copy_weights(ours, theirs)
    for step in range(3):
        x = data(4, 3, 2, 2) * (step + 1) + step
        ours(pb.tensor(x))
        theirs(torch.tensor(x))
    for a, b in zip(_stats(ours), _stats(theirs)):
        assert_close(a, b)
    x = data(2, 3, 2, 2)
    assert_close(ours.eval()(pb.tensor(x)).detach().numpy(),
                 theirs.eval()(torch.tensor(x)).detach().numpy())
    assert int(ours.num_batches_tracked) == 3  # eval mode leaves the counter


def test_batch_norm_compiles_in_eval_and_training_mode(torch):
    """Eval mode reads the running statistics; training mode writes them in place, and
    the generated code writes their new values back (the call that traces updates them
    once, as eager code does). Three compiled training steps against torch's."""
    ours, theirs = pb.nn.BatchNorm1d(3), torch.nn.BatchNorm1d(3)
    step = pb.compile(ours)
    for k in range(3):
        x = data(4 + k, 3)
        got, want = step(pb.tensor(x)), theirs(torch.tensor(x))
        assert_close(got.detach().numpy(), want.detach().numpy())
    for a, b in zip(_stats(ours), _stats(theirs)):
        assert_close(a, b)
    assert int(ours.num_batches_tracked) == 3 and step.cache.info.misses == 3  # 3 shapes
    ours.eval()
    x = pb.tensor(data(4, 3))
    np.testing.assert_allclose(pb.compile(ours)(x).detach().numpy(),
                               ours(x).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_instance_norm_running_stats_match_torch(torch):
    ours = pb.nn.InstanceNorm1d(3, track_running_stats=True)
    theirs = torch.nn.InstanceNorm1d(3, track_running_stats=True)
    x = data(2, 3, 5)
    ours(pb.tensor(x))
    theirs(torch.tensor(x))
    assert_close(ours.running_mean.numpy(), theirs.running_mean.numpy())
    assert_close(ours.running_var.numpy(), theirs.running_var.numpy())


REPRS = ["ReLU6()", "ReLU6(inplace=True)", "Hardtanh(-2.0, 2.0, True)", "LeakyReLU(0.2)",
         "ELU()", "CELU(0.5)", "SELU(True)", "GELU('tanh')", "SiLU()", "Mish(inplace=True)",
         "Softplus(2.0)", "Softsign()", "Hardsigmoid(True)", "Hardswish()", "LogSigmoid()",
         "GLU(1)", "PReLU(3)", "BatchNorm1d(3)",
         "BatchNorm2d(3, affine=False, track_running_stats=False, momentum=None)",
         "LayerNorm((3, 4), elementwise_affine=False, bias=False)", "GroupNorm(2, 4)",
         "InstanceNorm1d(3)", "InstanceNorm2d(3, affine=True)", "RMSNorm(4)",
         "LocalResponseNorm(2)", "Dropout()", "Dropout(0.2, True)", "Dropout1d()",
         "Dropout2d()", "Dropout3d()", "AlphaDropout()", "FeatureAlphaDropout()",
         "Embedding(5, 3)", "Embedding(5, 3, padding_idx=-1, max_norm=1.0)",
         "EmbeddingBag(5, 3, mode='max', padding_idx=0)", "MultiheadAttention(8, 2)",
         "L1Loss()", "SmoothL1Loss()", "HuberLoss()", "KLDivLoss()", "TripletMarginLoss()"]


@pytest.mark.parametrize("expr", REPRS)
def test_repr_matches_torch(expr, torch):
    assert repr(eval("pb.nn." + expr)) == repr(eval("torch.nn." + expr))


def test_state_dict_keys_match_torch(torch):
    for make in (lambda T: T.nn.BatchNorm1d(3), lambda T: T.nn.MultiheadAttention(8, 2),
                 lambda T: T.nn.MultiheadAttention(8, 2, kdim=3, vdim=5),
                 lambda T: T.nn.MultiheadAttention(8, 2, add_bias_kv=True),
                 lambda T: T.nn.InstanceNorm2d(3, affine=True, track_running_stats=True),
                 lambda T: T.nn.EmbeddingBag(4, 2), lambda T: T.nn.RMSNorm(3)):
        assert list(make(pb).state_dict()) == list(make(torch).state_dict())
    assert pb.nn.BatchNorm1d(3).num_batches_tracked.dtype == pb.int64


# ------------------------------------------------------------------------- dropout
def test_dropout_draws_from_the_seeded_generator():
    drop = pb.nn.Dropout(0.25)
    x = pb.ones(1000)
    pb.manual_seed(4)
    a = drop(x)
    pb.manual_seed(4)
    b = drop(x)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    kept = a.numpy() != 0
    assert set(np.unique(a.numpy())) == {0.0, np.float32(1 / 0.75)}
    assert 0.68 < kept.mean() < 0.82


def test_dropout_in_compiled_code_draws_a_fresh_mask_each_call():
    f = pb.compile(lambda x: F.dropout(x, 0.5) * 2)
    x = pb.ones(64)
    first, second = f(x).numpy(), f(x).numpy()
    assert not np.array_equal(first, second)
    pb.manual_seed(9)
    eager = F.dropout(x, 0.5) * 2
    pb.manual_seed(9)
    np.testing.assert_array_equal(f(x).numpy(), eager.numpy())


def test_dropout_edges_are_torchs(torch):
    x = pb.randn(3, 4, requires_grad=True)
    assert F.dropout(x, 0.0) is x and F.dropout(x, 0.5, training=False) is x
    y = F.dropout(x, 1.0)
    assert type(y.grad_fn).__name__ == "MulBackward0" and not y.detach().numpy().any()
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, "
                                         "but got 1.5"):
        F.dropout(x, 1.5)
    with pytest.raises(ValueError, match="dropout probability"):
        pb.nn.Dropout(-0.1)


def test_channel_dropout_drops_whole_channels():
    pb.manual_seed(1)
    y = F.dropout2d(pb.ones(4, 6, 3, 3), 0.5).numpy()
    per_channel = y.reshape(4, 6, 9)
    assert np.all(per_channel.min(-1) == per_channel.max(-1))  # all or nothing
    assert 0 < (per_channel[..., 0] == 0).mean() < 1
    with pytest.raises(RuntimeError, match="dropout1d: Expected 2D or 3D input"):
        F.dropout1d(pb.ones(2, 3, 4, 5))


def test_alpha_dropout_keeps_mean_and_variance():
    pb.manual_seed(2)
    x = pb.randn(200000)
    y = F.alpha_dropout(x, 0.2, training=True).numpy()
    assert abs(y.mean()) < 0.02 and abs(y.std() - 1) < 0.02
    x.requires_grad_()
    out = F.feature_alpha_dropout(x.reshape(2, 4, -1), 0.5, training=True)
    assert type(out.grad_fn).__name__ == "AddBackward0"


# ------------------------------------------------------------------------ embedding
def test_embedding_padding_row_gets_no_gradient_and_from_pretrained(torch):
    emb = pb.nn.Embedding(5, 2, padding_idx=0)
    assert not emb.weight.detach().numpy()[0].any()
    emb(pb.tensor([[0, 1], [0, 4]])).sum().backward()
    g = emb.weight.grad.numpy()
    assert not g[0].any() and g[1].all() and g[4].all()
    frozen = pb.nn.Embedding.from_pretrained(pb.tensor([[1.0, 2.0], [3.0, 4.0]]))
    assert not frozen.weight.requires_grad
    trained = pb.nn.EmbeddingBag.from_pretrained(pb.ones(3, 2), freeze=False, mode="sum")
    assert trained.weight.requires_grad


def test_embedding_max_norm_renormalizes_rows_like_torch(torch):
    w = data(6, 3) * 3
    ours, theirs = pb.tensor(w.copy()), torch.tensor(w.copy())
    idx = np.array([[1, 2], [2, 5]])
    a = F.embedding(pb.tensor(idx), ours, max_norm=1.5)
    b = torch.nn.functional.embedding(torch.tensor(idx), theirs, max_norm=1.5)
    assert_close(a.numpy(), b.numpy())
    assert_close(ours.numpy(), theirs.numpy())


def test_inplace_activations_write_into_their_input(torch):
    for name in ("relu_", "leaky_relu_", "elu_", "hardtanh_", "celu_", "selu_"):
        x = pb.tensor(SPREAD.copy())
        y = getattr(F, name)(x)
        t = getattr(torch.nn.functional, name)(torch.tensor(SPREAD.copy()))
        assert y is x
        assert_close(x.numpy(), t.numpy())
    x = pb.tensor(SPREAD.copy())
    assert pb.nn.SiLU(inplace=True)(x) is x
