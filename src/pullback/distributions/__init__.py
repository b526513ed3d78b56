"""pullback.distributions: torch.distributions' probability distributions, written with
pullback's ops, so log_prob, entropy, mean, variance, rsample and kl_divergence are
differentiable (eagerly, in ``pb.compile`` and under ``pb.grad``).

One module per distribution (``normal.py``, ``bernoulli.py``...; ``gamma.py`` holds Beta
too) over the base of ``distribution.py``; ``constraints.py`` holds the regions parameters
and values are checked against; ``kl.py`` the closed-form divergences.

>>> import pullback as pb
>>> from pullback.distributions import Normal, kl_divergence
>>> p, q = Normal(pb.tensor(0.0), pb.tensor(1.0)), Normal(pb.tensor(1.0), pb.tensor(1.0))
>>> kl_divergence(p, q)
tensor(0.5000)
"""

from . import constraints
from .bernoulli import Bernoulli
from .categorical import Categorical
from .distribution import Distribution
from .gamma import Beta, Gamma
from .independent import Independent
from .kl import kl_divergence, register_kl
from .multivariate_normal import MultivariateNormal
from .normal import Normal
from .uniform import Uniform

__all__ = ["Bernoulli", "Beta", "Categorical", "Distribution", "Gamma", "Independent",
           "MultivariateNormal", "Normal", "Uniform", "constraints", "kl_divergence",
           "register_kl"]
