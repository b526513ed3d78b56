"""nn.init: values from pullback's seeded generator with torch's bounds and spreads,
written in place under no_grad; torch's gains and errors."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import pullback as pb
from pullback import nn

from .test_module_api import same_error


@pytest.mark.parametrize("args", [("linear",), ("sigmoid",), ("tanh",), ("relu",),
                                  ("leaky_relu",), ("leaky_relu", 0.2), ("leaky_relu", 3),
                                  ("selu",), ("conv2d",)])
def test_calculate_gain_is_torchs(args, torch):
    assert nn.init.calculate_gain(*args) == torch.nn.init.calculate_gain(*args)


@pytest.mark.parametrize("call", [
    lambda T: T.nn.init.calculate_gain("gelu"),
    lambda T: T.nn.init.calculate_gain("leaky_relu", True),
    lambda T: T.nn.init.xavier_uniform_(T.ones(3)),
    lambda T: T.nn.init.eye_(T.ones(2, 2, 2)),
    lambda T: T.nn.init.kaiming_normal_(T.ones(2, 2), mode="fan_avg"),
])
def test_errors_are_torchs(call, torch):
    same_error(call, torch)


def test_fan_in_and_fan_out_are_torchs(torch):
    for shape in [(3, 4), (5, 2, 3, 3), (2, 7, 4)]:
        assert nn.init._calculate_fan_in_and_fan_out(pb.empty(*shape)) == \
            torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(*shape))


def spread(fill, shape=(200, 300), **kw):
    pb.manual_seed(0)
    w = pb.empty(*shape, requires_grad=True)
    out = fill(w, **kw)
    assert out is w and w.is_leaf and w.requires_grad and w._version == 1
    return w.detach().numpy().astype(np.float64)


def test_uniform_and_normal():
    u = spread(nn.init.uniform_, a=-2.0, b=3.0)
    assert u.min() >= -2 and u.max() < 3 and abs(u.mean() - 0.5) < 0.05
    n = spread(nn.init.normal_, mean=1.0, std=2.0)
    assert abs(n.mean() - 1) < 0.05 and abs(n.std() - 2) < 0.05


def test_same_seed_same_values_and_a_generator_of_ones_own():
    assert np.array_equal(spread(nn.init.normal_), spread(nn.init.normal_))
    a = pb.empty(3)
    nn.init.normal_(a, generator=np.random.default_rng(5))
    b = pb.empty(3)
    nn.init.normal_(b, generator=np.random.default_rng(5))
    assert np.array_equal(a.numpy(), b.numpy())


def test_xavier_and_kaiming_spreads():
    fan_in, fan_out = 300, 200
    bound = math.sqrt(6 / (fan_in + fan_out))
    x = spread(nn.init.xavier_uniform_, gain=2.0)
    assert x.max() <= 2 * bound and x.max() > 1.9 * bound
    assert abs(spread(nn.init.xavier_normal_).std() - math.sqrt(2 / (fan_in + fan_out))) < 2e-3
    k = spread(nn.init.kaiming_uniform_, a=math.sqrt(5))
    assert k.max() <= 1 / math.sqrt(fan_in) and k.max() > 0.95 / math.sqrt(fan_in)
    kn = spread(nn.init.kaiming_normal_, mode="fan_out", nonlinearity="relu")
    assert abs(kn.std() - math.sqrt(2 / fan_out)) < 2e-3


def test_constants_and_eye(torch):
    for fill, args in [(nn.init.constant_, (0.25,)), (nn.init.zeros_, ()), (nn.init.ones_, ()),
                       (nn.init.eye_, ())]:
        ours = fill(pb.empty(3, 4), *args).numpy()
        theirs = getattr(torch.nn.init, fill.__name__)(torch.empty(3, 4), *args).numpy()
        np.testing.assert_array_equal(ours, theirs)


def test_zero_element_tensors_warn_as_torch():
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        nn.init.kaiming_uniform_(pb.empty(0, 3))
    assert str(w[0].message) == "Initializing zero-element tensors is a no-op"


def test_init_keeps_the_dtype():
    w = pb.empty(3, 4, dtype=pb.float64)
    nn.init.xavier_uniform_(w)
    assert w.dtype == pb.float64
