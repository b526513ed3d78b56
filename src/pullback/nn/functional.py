"""torch.nn.functional names over pullback's ops."""

from ..ops.api import (
                       binary_cross_entropy,
                       binary_cross_entropy_with_logits,
                       cross_entropy,
                       linear,
                       log_softmax,
                       mse_loss,
                       nll_loss,
                       relu,
                       sigmoid,
                       softmax,
                       tanh,
)

__all__ = ["binary_cross_entropy", "binary_cross_entropy_with_logits", "cross_entropy", "linear",
           "log_softmax", "mse_loss", "nll_loss", "relu", "sigmoid", "softmax", "tanh"]
