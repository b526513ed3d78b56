"""How users call ops: torch's signatures for primitives, and declarations that are
checked before anything is registered."""

from __future__ import annotations

import inspect
import pickle

import numpy as np
import pytest

import pullback as pb
import pullback.nn.functional as F
from pullback.ops import OPS, PUBLIC, defop, fit_to


@pytest.fixture
def xz():
    return pb.tensor([1.0, -2.0], requires_grad=True), pb.zeros(2)


def test_extra_arguments_are_refused_not_passed_to_numpy(xz):
    x, z = xz
    with pytest.raises(TypeError, match=r"Tensor.tanh\(\) takes 1 positional argument"):
        x.tanh(z)
    with pytest.raises(TypeError, match=r"Tensor.exp_\(\) takes 1 positional argument"):
        x.detach().exp_(z)
    with pytest.raises(TypeError, match=r"Tensor.clamp_\(\) takes from 1 to 3"):
        x.detach().clamp_(0, 1, 5)
    with pytest.raises(TypeError, match=r"tanh\(\) takes 1 positional argument"):
        pb.tanh(x, z)
    assert np.all(z.numpy() == 0)  # nothing was written into it


def test_torch_keywords(xz, torch):
    x, z = xz
    tx, tz = torch.tensor([1.0, -2.0]), torch.zeros(2)
    pairs = [(pb.maximum(x, other=z), torch.maximum(tx, other=tz)),
             (x.mul(other=z), tx.mul(other=tz)),
             (F.relu(input=x), torch.nn.functional.relu(input=tx)),
             (pb.where(condition=x > 0, input=x, other=z),
              torch.where(condition=tx > 0, input=tx, other=tz)),
             (pb.clamp(x, max=0.5), torch.clamp(tx, max=0.5))]
    for ours, theirs in pairs:
        np.testing.assert_array_equal(ours.detach().numpy(), theirs.numpy())


def test_signatures_read_as_torch_documents_them():
    assert str(inspect.signature(pb.maximum)) == "(input, other)"
    # torch's two overloads, where(condition, input, other) and where(condition)
    assert str(inspect.signature(pb.where)) == "(condition, input=None, other=None)"
    assert str(inspect.signature(pb.Tensor.clamp_)) == "(self, min=None, max=None)"
    assert pb.relu is F.relu and pb.maximum.__name__ == "maximum"


@pytest.mark.parametrize("obj", [pb.sum, pb.maximum, pb.exp, F.relu, pb.Tensor.exp,
                                 OPS["tanh"]], ids=repr)
def test_public_functions_and_ops_pickle(obj):
    assert pickle.loads(pickle.dumps(obj)) is obj


def _declared() -> tuple:
    return len(OPS), len(PUBLIC)


@pytest.mark.parametrize("names", [{"function": "grad"}, {"method": "backward"},
                                   {"method": "sum"}, {"inplace": ("a_", "b_")},
                                   {"functional": "relu"}, {"function": "exp"}])
def test_a_declaration_that_would_replace_a_name_is_refused(names):
    before = _declared()
    with pytest.raises((ValueError, TypeError)):
        defop("refused_op", np.negative, "NegBackward0", vjp=(lambda g, out, x: -g,),
              **names)
    assert _declared() == before and "refused_op" not in OPS


def test_a_rule_returning_a_number_is_refused():
    with pytest.raises(TypeError, match="zeros_like"):
        fit_to(0.0, np.ones(3))


def test_config_refuses_negative_counts_and_restores_overrides():
    with pytest.raises(ValueError, match="config.cache_size must be at least 0"):
        pb.config.cache_size = -1
    with pb.config.override(replay=False):
        assert pb.config.replay is False
    assert pb.config.replay is True
