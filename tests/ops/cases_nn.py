"""Op cases of torch.nn.functional's primitives: activations (ops/activations.py),
normalization (ops/normalization.py), embedding (ops/embedding.py) and the losses
(ops/losses.py, ops/cross_entropy.py)."""

from __future__ import annotations

import numpy as np

from .case_types import A, _c

F = "nn.functional"
R34 = A((3, 4))
# values on both sides of every kink (hardtanh's +-1, hardswish's +-3, leaky_relu's 0),
# off the kinks themselves (finite differences straddle no kink)
SPREAD = A(values=[[-4.1, -2.7, -1.3, -0.6], [-0.2, 0.3, 0.8, 1.4], [2.2, 3.3, 5.1, 6.7]])
_SELU = (1.6732632423543772848170429916717, 1.0507009873554804934193349852946)


def _f(name, **kw):
    return lambda T, *xs: getattr(T.nn.functional, name)(*xs, **kw)


ACTIVATION_CASES = [
    _c("hardtanh", SPREAD, p={"min_val": -1.0, "max_val": 1.0}, torch=_f("hardtanh")),
    _c("hardtanh", SPREAD, p={"min_val": 0.0, "max_val": 6.0}, tag="relu6",
       torch=_f("hardtanh", min_val=0.0, max_val=6.0)),
    # on the bounds: torch's gradient is 0 there
    _c("hardtanh", A(values=[-1.0, 1.0, 0.5]), p={"min_val": -1.0, "max_val": 1.0},
       tag="bounds", fd=False, torch=_f("hardtanh")),
    _c("leaky_relu", SPREAD, p={"negative_slope": 0.2}, torch=_f("leaky_relu", negative_slope=0.2)),
    _c("elu", SPREAD, p={"alpha": 1.5, "scale": 1.0, "input_scale": 1.0},
       torch=_f("elu", alpha=1.5)),
    _c("elu", SPREAD, p={"alpha": _SELU[0], "scale": _SELU[1], "input_scale": 1.0}, tag="selu",
       torch=_f("selu")),
    _c("celu", SPREAD, p={"alpha": 0.7}, torch=_f("celu", alpha=0.7)),
    _c("gelu", R34, p={"approximate": "none"}, torch=_f("gelu")),
    _c("gelu", R34, p={"approximate": "tanh"}, torch=_f("gelu", approximate="tanh")),
    _c("silu", R34, torch=_f("silu")),
    _c("mish", R34, torch=_f("mish")),
    _c("softplus", SPREAD, p={"beta": 2.0, "threshold": 5.0},
       torch=_f("softplus", beta=2.0, threshold=5.0)),
    _c("softplus", A((2, 3)), p={"beta": 1.0, "threshold": 20.0}, torch=_f("softplus")),
    _c("hardsigmoid", SPREAD, torch=_f("hardsigmoid")),
    _c("hardswish", SPREAD, torch=_f("hardswish")),
    _c("log_sigmoid", R34, torch=_f("logsigmoid")),
    _c("glu", A((3, 4)), p={"dim": 1}, torch=_f("glu", dim=1)),
    _c("glu", A((2, 4, 3)), p={"dim": 1}, torch=_f("glu", dim=1)),
    _c("prelu", A((2, 3, 4), "away"), A((3,)), torch=_f("prelu")),
    _c("prelu", A((5,), "away"), A((1,)), torch=_f("prelu")),
    _c("prelu", A((2, 3), "away"), A((1,)), torch=_f("prelu")),
]

_RM, _RV = [0.3, -0.2, 0.1], [0.5, 1.5, 2.0]
NORM_CASES = [
    _c("layer_norm", A((3, 4)), A((4,)), A((4,)), p={"normalized_ndim": 1, "eps": 1e-5},
       torch=lambda T, x, w, b: T.nn.functional.layer_norm(x, (4,), w, b)),
    _c("layer_norm", A((2, 3, 4)), A((3, 4)), A((3, 4)), p={"normalized_ndim": 2, "eps": 0.1},
       torch=lambda T, x, w, b: T.nn.functional.layer_norm(x, (3, 4), w, b, eps=0.1)),
    _c("batch_norm", A((4, 3)), A((3,)), A((3,)), p={"eps": 1e-5},
       torch=lambda T, x, w, b: T.nn.functional.batch_norm(x, None, None, w, b, True)),
    _c("batch_norm", A((2, 3, 4)), A((3,)), A((3,)), p={"eps": 1e-3},
       torch=lambda T, x, w, b: T.nn.functional.batch_norm(x, None, None, w, b, True, eps=1e-3)),
    _c("batch_norm_eval", A((2, 3, 4)), A(values=_RM, grad=False), A(values=_RV, grad=False),
       A((3,)), A((3,)), p={"eps": 1e-5},
       torch=lambda T, x, m, v, w, b: T.nn.functional.batch_norm(x, m, v, w, b, False)),
    _c("group_norm", A((2, 6, 3)), A((6,)), A((6,)), p={"num_groups": 3, "eps": 1e-5},
       torch=lambda T, x, w, b: T.nn.functional.group_norm(x, 3, w, b)),
    _c("group_norm", A((2, 4, 2, 3)), A((4,)), A((4,)), p={"num_groups": 1, "eps": 1e-5},
       torch=lambda T, x, w, b: T.nn.functional.group_norm(x, 1, w, b)),
]

# the dropout mask: ones with probability 1 - p, drawn from pullback's generator
RANDOM_NN_CASES = [
    _c("bernoulli_keep", A((3, 4), grad=False), p={"p": 0.25, "shape": (3, 4)}, rng_seed=5,
       reference=lambda x: (np.random.default_rng(5).random((3, 4)) < 0.75).astype(x.dtype)),
    _c("bernoulli_keep", A((2, 3, 4), grad=False), p={"p": 0.5, "shape": (2, 3, 1)}, rng_seed=5,
       reference=lambda x: (np.random.default_rng(5).random((2, 3, 1)) < 0.5).astype(x.dtype)),
    # gumbel_softmax's noise: Gumbel(0, 1) draws shaped and typed as the input
    _c("gumbel_noise", A((2, 3), grad=False), rng_seed=5,
       reference=lambda x: -np.log(np.random.default_rng(5).exponential(size=x.shape)).astype(
           x.dtype)),
]


def _bag_rows(i, o):
    """(bag, rows) of each non-empty bag given flat indices and offsets."""
    ends = list(o[1:]) + [len(i)]
    return [(b, i[lo:hi]) for b, (lo, hi) in enumerate(zip(o, ends)) if hi > lo]


def _bag_sum(w, i, o):
    out = np.zeros((len(o), w.shape[1]), w.dtype)
    for b, rows in _bag_rows(i, o):
        for r in rows:
            out[b] += w[r]
    return out


def _bag_backward(mode):
    """embedding_bag's gradient for the weight, row by row in index order (torch has no
    double backward through it to compare with)."""
    def run(g, w, i, o):
        out = np.zeros(w.shape, g.dtype)
        for b, rows in _bag_rows(i, o):
            if mode == "max":
                at = rows[np.argmax(w[rows], axis=0)]
                out[at, np.arange(w.shape[1])] += g[b]
                continue
            for r in rows:
                out[r] += g[b] / g.dtype.type(len(rows)) if mode == "mean" else g[b]
        return out
    return run


def _bag_max_gather(gw, w, i, o):
    """The transpose of max-mode's backward (torch has no double backward for it): each
    bag's entries of gw at the rows holding its maxima."""
    out = np.zeros((len(o), w.shape[1]), gw.dtype)
    for b, (lo, hi) in enumerate(zip(o, list(o[1:]) + [len(i)])):
        if hi > lo:
            rows = i[lo:hi][np.argmax(w[i[lo:hi]], axis=0)]
            out[b] = gw[rows, np.arange(w.shape[1])]
    return out


def _renorm_scale(T, w, i, max_norm):
    """embedding's max_norm factor per row, from torch's renormalized copy of w."""
    w2 = w.detach().clone()
    T.nn.functional.embedding(i, w2, max_norm=max_norm)
    return (w2 / w.detach()).mean(1, keepdim=True)


_IDX = A((2, 4), "int", high=5)
_FLAT, _OFFSETS = A(values=[1, 3, 3, 0, 4, 2, 1], domain="int"), A(values=[0, 2, 2, 5],
                                                                   domain="int")
_BAG_P = {"padding_idx": None, "include_last_offset": False}
EMBEDDING_CASES = [
    _c("embedding", A((5, 3)), _IDX, p={"padding_idx": None},
       torch=lambda T, w, i: T.nn.functional.embedding(i, w)),
    # the padding row gets no gradient (finite differences see one)
    _c("embedding", A((5, 3)), _IDX, p={"padding_idx": 1}, fd=False,
       torch=lambda T, w, i: T.nn.functional.embedding(i, w, padding_idx=1)),
    _c("embedding", A((4, 2)), A((), "int", high=4), p={"padding_idx": None},
       torch=lambda T, w, i: T.nn.functional.embedding(i, w)),
    _c("renorm_scale", A(values=np.arange(1.0, 16.0).reshape(5, 3) / 4, grad=False), _IDX,
       p={"max_norm": 3.0, "norm_type": 2.0},
       torch=lambda T, w, i: _renorm_scale(T, w, i, 3.0)),
    _c("class_one_hot", _IDX, p={"num_classes": 6},
       torch=lambda T, i: T.nn.functional.one_hot(i, 6)),
    _c("class_one_hot", A((0,), "int"), p={"num_classes": 3},
       torch=lambda T, i: T.nn.functional.one_hot(i, 3)),
    _c("embedding_backward", A((2, 4, 3)), _IDX, p={"num_weights": 5, "padding_idx": 2},
       torch_name=False, torch=lambda T, g, i: T.ops.aten.embedding_dense_backward(
           g, i, 5, 2, False)),
    *[_c("embedding_bag", A((5, 3)), _FLAT, _OFFSETS, p={"mode": m, **_BAG_P},
         torch=lambda T, w, i, o, m=m: T.nn.functional.embedding_bag(i, w, o, mode=m))
      for m in ("sum", "mean", "max")],
    _c("embedding_bag", A((5, 3)), _IDX, A(values=[0, 4], domain="int"),
       p={"mode": "mean", "padding_idx": 3, "include_last_offset": False}, tag="2d", fd=False,
       torch=lambda T, w, i, o: T.nn.functional.embedding_bag(i, w, mode="mean",
                                                              padding_idx=3)),
    # the last offset ends the last bag (torch's float64 kernel reads on to the end)
    _c("embedding_bag", A((5, 3)), _FLAT, _OFFSETS,
       p={"mode": "sum", "padding_idx": None, "include_last_offset": True}, tag="last",
       reference=lambda w, i, o: _bag_sum(w, i[:o[-1]], o[:-1])),
    *[_c("embedding_bag_backward", A((4, 3)), A((5, 3), grad=False), _FLAT, _OFFSETS,
         p={"mode": m, **_BAG_P}, reference=_bag_backward(m))
      for m in ("sum", "mean", "max")],
    _c("embedding_bag_max_gather", A((5, 3)), A((5, 3), grad=False), _FLAT, _OFFSETS,
       p={"mode": "max", **_BAG_P}, reference=_bag_max_gather),
]


def _nll(x, t, w, ignore=-100, r="mean", tag="", **flags):
    return _c("nll_loss", x, t, w, p={"ignore_index": ignore, "reduction": r}, tag=tag, **flags,
              torch=lambda T, x, t, w: T.nn.functional.nll_loss(x, t, w, ignore_index=ignore,
                                                                reduction=r))


def _nll_vjp(shape, ignore, r):
    def run(T, g, t, w):
        x0 = T.zeros(shape, dtype=g.dtype, requires_grad=True)
        out = T.nn.functional.nll_loss(x0, t, w, ignore_index=ignore, reduction=r)
        return T.autograd.grad(out, x0, g, create_graph=True)[0]
    return run


def _softmax_nll_vjp(r):
    """nll's gradient through log_softmax at its output logp, by torch's nll rule."""
    def run(T, g, t, logp):
        x0 = T.zeros(tuple(logp.shape), dtype=g.dtype, requires_grad=True)
        out = T.nn.functional.nll_loss(x0, t, reduction=r)
        d = T.autograd.grad(out, x0, g)[0]
        return d - T.exp(logp) * d.sum(1, keepdim=True)
    return run


def _pointwise_losses(op, fname, x, y, **kw):
    return [_c(op, x, y, p={"reduction": r, **kw},
               torch=lambda T, a, b, r=r: getattr(T.nn.functional, fname)(a, b, reduction=r,
                                                                          **kw))
            for r in ("mean", "sum", "none")]


_W3, _W4 = A((3,), "pos", grad=False), A((4,), "pos", grad=False)
_T5 = A(values=[0, 2, 1, 1, 0], domain="int")
_T5_IGNORED = A(values=[0, -100, 1, 1, -100], domain="int")
_T2x3 = A(values=[[0, 3, 1], [2, 1, 3]], domain="int")
_SIGNS = A(values=[[1.0, -1.0, 1.0, 1.0], [-1.0, -1.0, 1.0, -1.0], [1.0, 1.0, -1.0, 1.0]],
           grad=False)
LOSS_CASES = [
    *[_nll(A((5, 3)), _T5, _W3, r=r) for r in ("mean", "sum", "none")],
    *[_nll(A((5, 3)), _T5_IGNORED, _W3, r=r, tag="ignored") for r in ("mean", "sum", "none")],
    # extra dims: torch's nodes are NllLoss2DBackward0 and a ViewBackward0 over it
    _nll(A((2, 4, 3)), _T2x3, _W4, ignore=1, torch_name=False),
    _nll(A((2, 4, 3)), _T2x3, _W4, r="none", torch_name=False),
    _nll(A((3,)), A(values=2, domain="int"), _W3),
    # every target ignored: 0 / 0 in the mean, as torch
    _c("nll_loss", A((2, 3)), A(values=[-100, -100], domain="int"), _W3,
       p={"ignore_index": -100, "reduction": "mean"}, fd=False,
       torch=lambda T, x, t, w: T.nn.functional.nll_loss(x, t, w)),
    *[_c("nll_backward", A(() if r != "none" else (5,)), _T5_IGNORED, _W3,
         p={"shape": (5, 3), "ignore_index": -100, "reduction": r}, torch_name=False,
         torch=_nll_vjp((5, 3), -100, r)) for r in ("mean", "sum", "none")],
    _c("nll_backward", A((2, 3)), _T2x3, _W4, p={"shape": (2, 4, 3), "ignore_index": 1,
                                                  "reduction": "none"},
       torch_name=False, torch=_nll_vjp((2, 4, 3), 1, "none")),
    # cross-entropy's backward as one op (peephole's lean_cross_entropy): no VJP rule
    *[_c("softmax_nll_backward", A((), grad=False), t, A((5, 3), grad=False),
         p={"ignore_index": -100, "reduction": r}, torch_name=False,
         torch=_softmax_nll_vjp(r), tag=tag)
      for r in ("mean", "sum") for t, tag in ((_T5, ""), (_T5_IGNORED, "ignored"))],
    *_pointwise_losses("smooth_l1_loss", "smooth_l1_loss", SPREAD, A((3, 4)), beta=0.7),
    *_pointwise_losses("huber_loss", "huber_loss", SPREAD, A((3, 4)), delta=0.8),
    _c("smooth_l1_loss", SPREAD, A((4,)), p={"reduction": "mean", "beta": 1.0}, tag="bcast",
       torch=lambda T, a, b: T.nn.functional.smooth_l1_loss(a, b.expand(3, 4))),
    *_pointwise_losses("soft_margin_loss", "soft_margin_loss", A((3, 4)), _SIGNS),
]

NN_OP_CASES = (ACTIVATION_CASES + NORM_CASES + RANDOM_NN_CASES + EMBEDDING_CASES
               + LOSS_CASES)
