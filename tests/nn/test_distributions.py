"""pullback.distributions against torch.distributions (float64): log_prob, entropy, mean,
variance, kl_divergence and their gradients (eager, under pb.grad and pb.compile),
sample shapes, dtypes and statistics, and torch's error texts."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb

R = np.random.default_rng(0)


def arr(*shape, low=-1.0, high=1.0):
    return R.uniform(low, high, shape)


LOC, SCALE, X = arr(2, 3), arr(2, 3, low=0.5, high=2.0), arr(4, 2, 3, low=-2, high=2)
P, LOGITS = arr(3, low=0.1, high=0.9), arr(2, 3, low=-2, high=2)
CAT_P, CAT_L = arr(2, 4, low=0.1, high=1.0), arr(3, 4, low=-2, high=2)
LOW, HIGH = arr(3, low=-2, high=-1), arr(3, low=1, high=2)
CONC, RATE = arr(2, 3, low=0.3, high=3), arr(3, low=0.5, high=2)
_A = arr(2, 3, 3)
COV = _A @ _A.transpose(0, 2, 1) + np.eye(3)
TRIL = np.linalg.cholesky(COV)


def _mvn(kind):
    return lambda D, m, c: D.MultivariateNormal(m, **{kind: c})

# name: (params as arrays, build(D, *params), values scored by log_prob)
CASES = {
    "normal": ((LOC, SCALE), lambda D, m, s: D.Normal(m, s), X),
    "normal_float_scale": ((LOC,), lambda D, m: D.Normal(m, 0.7), X),
    "bernoulli_probs": ((P,), lambda D, p: D.Bernoulli(probs=p), np.array([[0., 1., 1.]])),
    "bernoulli_logits": ((LOGITS,), lambda D, lg: D.Bernoulli(logits=lg),
                         np.array([[0., 1., 1.], [1., 0., 0.]])),
    "categorical_probs": ((CAT_P,), lambda D, p: D.Categorical(probs=p), np.array([[0, 3]])),
    "categorical_logits": ((CAT_L,), lambda D, lg: D.Categorical(logits=lg),
                           np.array([[0], [3], [2]])),
    "uniform": ((LOW, HIGH), lambda D, a, b: D.Uniform(a, b), arr(5, 3, low=-0.9, high=0.9)),
    "independent_normal": ((LOC, SCALE), lambda D, m, s: D.Independent(D.Normal(m, s), 1), X),
    "gamma": ((CONC, RATE), lambda D, c, r: D.Gamma(c, r), arr(4, 2, 3, low=0.1, high=3)),
    "beta": ((CONC, RATE), lambda D, a, b: D.Beta(a, b), arr(4, 2, 3, low=0.05, high=0.95)),
    "mvn_covariance": ((LOC[0], COV), _mvn("covariance_matrix"), X),
    "mvn_precision": ((LOC, COV[0]), _mvn("precision_matrix"), X[:, :1]),
    "mvn_scale_tril": ((LOC, TRIL), _mvn("scale_tril"), X[0]),
}
MOMENTS = ("mean", "variance", "stddev")


def both(torch, name):
    """The case's distribution in each library, with its parameter leaves."""
    params, build, _ = CASES[name]
    out = []
    for lib, D in ((pb, pb.distributions), (torch, torch.distributions)):
        leaves = [lib.tensor(a, dtype=lib.float64, requires_grad=True) for a in params]
        out.append((build(D, *leaves), leaves))
    return out


def summary(lib, d, value):
    """Every differentiable quantity of ``d``, and one scalar of all of them."""
    logp = d.log_prob(lib.tensor(value, dtype=lib.int64 if "Categorical" in repr(d)
                                 else lib.float64))
    parts = [logp, d.entropy()] + [getattr(d, m) for m in MOMENTS
                                   if "Categorical" not in repr(d)]
    total = sum((p * (1 + lib.arange(p.numel(), dtype=lib.float64).reshape(p.shape))).sum()
                for p in parts)
    return parts, total


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_and_gradients_match_torch(name, torch):
    (d, leaves), (td, tleaves) = both(torch, name)
    assert d.batch_shape == tuple(td.batch_shape) and d.event_shape == tuple(td.event_shape)
    parts, total = summary(pb, d, CASES[name][2])
    tparts, ttotal = summary(torch, td, CASES[name][2])
    for a, b in zip(parts, tparts):
        assert a.shape == tuple(b.shape) and str(a.dtype)[9:] == str(b.dtype)[6:]
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-12)
    total.backward()
    ttotal.backward()
    for x, t in zip(leaves, tleaves):
        np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-8, atol=1e-12)


KL_PAIRS = {
    "normal_normal": (lambda D, a, b, c, e: (D.Normal(a, c), D.Normal(b, e)), False),
    "bernoulli_bernoulli": (lambda D, a, b, c, e: (D.Bernoulli(logits=a),
                                                   D.Bernoulli(probs=c / 3)), False),
    "categorical_categorical": (lambda D, a, b, c, e: (D.Categorical(logits=a),
                                                       D.Categorical(probs=e)), False),
    "uniform_uniform": (lambda D, a, b, c, e: (D.Uniform(a - c, a + c),
                                               D.Uniform(a - 2 * c, a + 3 * e)), False),
    "uniform_normal": (lambda D, a, b, c, e: (D.Uniform(a - c, a + c), D.Normal(b, e)), False),
    "normal_uniform": (lambda D, a, b, c, e: (D.Normal(a, c), D.Uniform(b - e, b + e)), True),
    "independent": (lambda D, a, b, c, e: (D.Independent(D.Normal(a, c), 2),
                                           D.Independent(D.Normal(b, e), 2)), False),
    "gamma_gamma": (lambda D, a, b, c, e: (D.Gamma(c, e), D.Gamma(e, c * c)), False),
    "beta_beta": (lambda D, a, b, c, e: (D.Beta(c, e), D.Beta(e, c * c)), False),
    "mvn_mvn": (lambda D, a, b, c, e: (
        D.MultivariateNormal(a, scale_tril=(c.unsqueeze(-1) * b.unsqueeze(-2)).tril(-1)
                             + c.diag_embed()),
        D.MultivariateNormal(b[0], covariance_matrix=c[0].diag() + 0.1)), False),
}


@pytest.mark.parametrize("name", sorted(KL_PAIRS))
def test_kl_divergence_matches_torch(name, torch):
    build, infinite = KL_PAIRS[name]
    arrays = [arr(2, 3), arr(2, 3), arr(2, 3, low=0.5, high=1.5), arr(2, 3, low=0.5, high=1.5)]
    results = []
    for lib in (pb, torch):
        leaves = [lib.tensor(a, dtype=lib.float64, requires_grad=True) for a in arrays]
        kl = lib.distributions.kl_divergence(*build(lib.distributions, *leaves))
        if not infinite:
            (kl * lib.arange(1, kl.numel() + 1, dtype=lib.float64).reshape(kl.shape)).sum() \
                .backward()
        results.append((kl.detach().numpy(), [x.grad for x in leaves]))
    (kl, grads), (tkl, tgrads) = results
    np.testing.assert_allclose(kl, tkl, rtol=1e-12)
    for g, t in zip(grads, tgrads):
        assert (g is None) == (t is None)
        if g is not None:
            np.testing.assert_allclose(g.numpy(), t.numpy(), rtol=1e-8, atol=1e-12)


def test_grad_and_compile_match_torch_autograd(torch):
    """A variational loss (rsample-free) under pb.grad and pb.compile, as torch computes it."""
    def loss(lib, m, s, lg, x):
        D = lib.distributions
        q = D.Normal(m, s.exp())
        nll = -q.log_prob(x).sum() - D.Bernoulli(logits=lg).entropy().sum()
        kl = D.kl_divergence(q, D.Normal(lib.zeros_like(m), lib.ones_like(m))).sum()
        cat = D.Categorical(logits=lg).log_prob(lib.tensor([2, 0], dtype=lib.int64)).sum()
        return nll + kl + cat

    args = [arr(2, 3), arr(2, 3), arr(2, 3), arr(2, 3)]
    ts = [torch.tensor(a, requires_grad=True) for a in args]
    loss(torch, *ts).backward()
    pbs = [pb.tensor(a) for a in args]
    grads = pb.grad(lambda *xs: loss(pb, *xs), argnums=(0, 1, 2))(*pbs)
    for g, t in zip(grads, ts):
        np.testing.assert_allclose(g.numpy(), t.grad.numpy(), rtol=1e-8, atol=1e-12)
    compiled = pb.compile(lambda *xs: loss(pb, *xs))
    for _ in range(2):
        np.testing.assert_allclose(compiled(*pbs).item(), loss(torch, *ts).item(), rtol=1e-12)


def test_normal_rsample_is_reparameterized():
    pb.manual_seed(0)
    loc = pb.tensor([1.0, -2.0], dtype=pb.float64, requires_grad=True)
    scale = pb.tensor([0.5, 2.0], dtype=pb.float64, requires_grad=True)
    z = pb.distributions.Normal(loc, scale).rsample((20000,))
    assert z.shape == (20000, 2) and z.dtype == pb.float64 and z.requires_grad
    np.testing.assert_allclose(z.mean(0).detach().numpy(), [1.0, -2.0], atol=0.05)
    np.testing.assert_allclose(z.std(0).detach().numpy(), [0.5, 2.0], rtol=0.03)
    z.mean().backward()
    np.testing.assert_allclose(loc.grad.numpy(), [0.5, 0.5])
    eps = (z.detach() - loc.detach()) / scale.detach()
    np.testing.assert_allclose(scale.grad.numpy(), eps.mean(0).numpy() / 2, atol=1e-12)
    grad = pb.grad(lambda m: pb.distributions.Normal(m, 1.0).rsample((3,)).sum())(loc.detach())
    np.testing.assert_allclose(grad.numpy(), [3.0, 3.0])


@pytest.mark.parametrize("name", ["normal", "bernoulli_logits", "categorical_probs",
                                  "uniform", "gamma", "beta", "mvn_covariance"])
def test_sample_shapes_dtypes_and_statistics(name, torch):
    (d, _), (td, _) = both(torch, name)
    pb.manual_seed(1)
    torch.manual_seed(1)
    s, ts = d.sample((20000,)), td.sample((20000,))
    assert s.shape == tuple(ts.shape) and str(s.dtype)[9:] == str(ts.dtype)[6:]
    assert not s.requires_grad
    assert d.sample().shape == tuple(td.sample().shape)
    mean, var = (getattr(td, m).detach().numpy() for m in ("mean", "variance")) \
        if not name.startswith("categorical") else (td.probs.detach().numpy(),) * 2
    if name.startswith("categorical"):  # each category's frequency
        s = pb.nn.functional.one_hot(s, 4).double()
        var = mean * (1 - mean)
    np.testing.assert_allclose(s.mean(0).numpy(), mean, atol=4 * np.sqrt(var.max() / 20000))
    np.testing.assert_allclose(s.var(0).numpy(), var, rtol=0.05, atol=0.01)


def test_expand_keeps_parameters_and_checks():
    d = pb.distributions.Bernoulli(probs=pb.tensor([0.2, 0.7])).expand((4, 2))
    assert d.batch_shape == (4, 2) and d._validate_args
    assert d.log_prob(pb.ones(4, 2)).shape == (4, 2)
    c = pb.distributions.Categorical(logits=pb.zeros(3)).expand((5,))
    assert c.batch_shape == (5,) and c.sample((2,)).shape == (2, 5)
    assert pb.distributions.Normal(0.0, 1.0).expand((2,)).entropy().shape == (2,)


def test_register_kl_and_missing_pair(torch):
    class MyNormal(pb.distributions.Normal):
        pass

    p, q = MyNormal(0.0, 1.0), pb.distributions.Normal(1.0, 1.0)
    assert pb.distributions.kl_divergence(p, q).item() == pytest.approx(0.5)

    @pb.distributions.register_kl(MyNormal, pb.distributions.Normal)
    def _kl(p, q):
        return pb.tensor(42.0)

    assert pb.distributions.kl_divergence(p, q).item() == 42.0
    pb.distributions.kl._KL_REGISTRY.pop((MyNormal, pb.distributions.Normal))
    pb.distributions.kl._KL_MEMOIZE.clear()
    with pytest.raises(NotImplementedError) as ours:
        pb.distributions.kl_divergence(pb.distributions.Uniform(0.0, 1.0),
                                       pb.distributions.Bernoulli(0.5))
    with pytest.raises(NotImplementedError) as theirs:
        torch.distributions.kl_divergence(torch.distributions.Uniform(0.0, 1.0),
                                          torch.distributions.Bernoulli(0.5))
    assert str(ours.value) == str(theirs.value)


ERRORS = [
    lambda D, T: D.Normal(T([0.0, 1.0]), T([-1.0, 1.0])),
    lambda D, T: D.Normal(0.0, -1.0),
    lambda D, T: D.Normal(0.0, 1.0).log_prob(0.0),
    lambda D, T: D.Normal(T([0.0, 0.0, 0.0]), 1.0).log_prob(T([0.0, 1.0])),
    lambda D, T: D.Independent(D.Normal(T([0.0, 0.0, 0.0]), 1.0), 1).log_prob(T([0.0, 1.0])),
    lambda D, T: D.Independent(D.Normal(T([0.0, 0.0, 0.0]), 1.0), 2),
    lambda D, T: D.Bernoulli(0.3).log_prob(T([0.5])),
    lambda D, T: D.Bernoulli(T([1.5])),
    lambda D, T: D.Bernoulli(),
    lambda D, T: D.Bernoulli(probs=0.5, logits=0.0),
    lambda D, T: D.Uniform(1.0, 0.0),
    lambda D, T: D.Uniform(0.0, 1.0).log_prob(T([2.0])),
    lambda D, T: D.Categorical(T([0.2, 0.3])).log_prob(T([2])),
    lambda D, T: D.Categorical(T([-0.2, 0.3])),
    lambda D, T: D.Categorical(T(0.2)),
    lambda D, T: D.Categorical(logits=T(0.2)),
    lambda D, T: D.Normal("a", 1.0),
    lambda D, T: D.Gamma(T([1.0, -1.0]), 1.0),
    lambda D, T: D.Gamma(1.0, 1.0).log_prob(T([-1.0])),
    lambda D, T: D.Beta(1.0, 1.0).log_prob(T([1.5])),
    lambda D, T: D.Beta(T([1.0, -2.0]), 1.0),
    lambda D, T: D.MultivariateNormal(T(0.0), T([[1.0]])),
    lambda D, T: D.MultivariateNormal(T([0.0]), T([[1.0]]), scale_tril=T([[1.0]])),
    lambda D, T: D.MultivariateNormal(T([0.0]), scale_tril=T([1.0])),
    lambda D, T: D.MultivariateNormal(T([0.0, 0.0]), scale_tril=T([[1.0, 1.0], [0.0, 1.0]])),
    lambda D, T: D.MultivariateNormal(T([0.0, 0.0]), T([[1.0, 2.0], [2.0, 1.0]])),
    lambda D, T: D.MultivariateNormal(T([0.0, 0.0]), T([[1.0, 0.0], [0.0, 1.0]])).log_prob(
        T([0.0, 0.0, 0.0])),
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors_match_torch(i, torch):
    with pytest.raises(Exception) as ours:
        ERRORS[i](pb.distributions, pb.tensor)
    with pytest.raises(Exception) as theirs:
        ERRORS[i](torch.distributions, torch.tensor)
    assert type(ours.value) is type(theirs.value)
    assert str(ours.value) == str(theirs.value)


def test_validate_args_off_and_repr(torch):
    d = pb.distributions.Normal(0.0, -1.0, validate_args=False)
    assert np.isnan(d.log_prob(pb.tensor(0.0)).item())
    assert repr(pb.distributions.Normal(pb.zeros(2), 1.0)) == \
        repr(torch.distributions.Normal(torch.zeros(2), 1.0))
    assert repr(pb.distributions.Bernoulli(0.3)) == repr(torch.distributions.Bernoulli(0.3))
    old = pb.distributions.Distribution._validate_args
    try:
        pb.distributions.Distribution.set_default_validate_args(False)
        assert not pb.distributions.Uniform(1.0, 0.0)._validate_args
    finally:
        pb.distributions.Distribution.set_default_validate_args(old)


def test_enumerate_support_cdf_icdf_and_perplexity_match_torch(torch):
    pairs = [(pb.distributions, pb.tensor), (torch.distributions, torch.tensor)]
    results = []
    for D, T in pairs:
        b = D.Bernoulli(probs=T([0.2, 0.9]))
        c = D.Categorical(logits=T([[0.0, 1.0, 2.0]] * 2))
        n, u = D.Normal(T([0.0, 1.0]), T([1.0, 2.0])), D.Uniform(T([0.0]), T([2.0]))
        v = T([0.5, 0.25])
        results.append([b.enumerate_support(), b.enumerate_support(expand=False),
                        c.enumerate_support(), n.cdf(v), n.icdf(v), u.cdf(v), u.icdf(v),
                        c.perplexity(), n.expand((3, 2)).variance])
    for a, t in zip(*results):
        assert a.shape == tuple(t.shape)
        np.testing.assert_allclose(a.numpy(), t.numpy(), rtol=1e-6)
