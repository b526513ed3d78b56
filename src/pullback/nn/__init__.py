"""pullback.nn: torch.nn's modules, parameters, initialisation and functional API.

Each layer is a small module over ``pb.nn.functional`` (``linear.py``, ``activation.py``,
``loss.py``, ``normalization.py``, ``dropout.py``, ``sparse.py``, ``attention.py``,
``rnn.py``); a new layer is a new class of the same shape.

>>> import pullback as pb
>>> from pullback import nn
>>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
>>> sum(p.numel() for p in model.parameters())
67
"""

from . import (
    activation,
    attention,
    distance,
    dropout,
    functional,
    init,
    loss,
    normalization,
    sparse,
)
from .activation import *  # noqa: F403
from .attention import MultiheadAttention
from .compiled import CompiledModule
from .container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .distance import CosineSimilarity, PairwiseDistance
from .dropout import *  # noqa: F403
from .linear import Bilinear, Flatten, Identity, Linear, Unflatten
from .loss import *  # noqa: F403
from .module import Module
from .normalization import *  # noqa: F403
from .parameter import Parameter
from .rnn import RNN, RNNCell
from .sparse import Embedding, EmbeddingBag

__all__ = sorted(["Bilinear", "CompiledModule", "CosineSimilarity", "Embedding",
                  "EmbeddingBag", "Flatten", "Identity", "Linear", "Module", "ModuleDict",
                  "ModuleList", "MultiheadAttention", "PairwiseDistance", "Parameter",
                  "ParameterDict", "ParameterList", "RNN", "RNNCell", "Sequential", "Unflatten",
                  "functional", "init", *activation.__all__, *dropout.__all__, *loss.__all__,
                  *normalization.__all__])
