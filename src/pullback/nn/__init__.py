"""pullback.nn: torch.nn's modules, parameters, initialisation and functional API.

Each layer is a small module over ``pb.nn.functional`` (``linear.py``, ``activation.py``,
``loss.py``, ``normalization.py``, ``dropout.py``, ``sparse.py``, ``attention.py``,
``transformer.py``, ``rnn.py``, ``conv.py``, ``pooling.py``); a new layer is a new class
of the same shape.

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
    padding,
    sparse,
    utils,
)
from .activation import *  # noqa: F403
from .attention import MultiheadAttention
from .compiled import CompiledModule
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d
from .container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .distance import CosineSimilarity, PairwiseDistance
from .dropout import *  # noqa: F403
from .linear import Bilinear, Flatten, Identity, Linear, Unflatten
from .loss import *  # noqa: F403
from .module import Module
from .normalization import *  # noqa: F403
from .padding import *  # noqa: F403
from .parameter import Parameter
from .pooling import (
    AdaptiveAvgPool1d,
    AdaptiveAvgPool2d,
    AdaptiveMaxPool2d,
    AvgPool1d,
    AvgPool2d,
    Fold,
    MaxPool1d,
    MaxPool2d,
    PixelShuffle,
    PixelUnshuffle,
    Unfold,
    Upsample,
    UpsamplingBilinear2d,
    UpsamplingNearest2d,
)
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNCell
from .sparse import Embedding, EmbeddingBag
from .transformer import (
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)

__all__ = sorted(["AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveMaxPool2d", "AvgPool1d",
                  "AvgPool2d", "Bilinear", "CompiledModule", "Conv1d", "Conv2d", "Conv3d",
                  "ConvTranspose1d", "ConvTranspose2d", "CosineSimilarity", "Embedding",
                  "EmbeddingBag", "Flatten", "Fold", "GRU", "GRUCell", "Identity", "LSTM",
                  "LSTMCell", "Linear", "MaxPool1d", "MaxPool2d", "Module", "ModuleDict",
                  "ModuleList", "MultiheadAttention", "PairwiseDistance", "Parameter",
                  "ParameterDict", "ParameterList", "PixelShuffle", "PixelUnshuffle", "RNN",
                  "RNNCell", "Sequential", "Transformer", "TransformerDecoder",
                  "TransformerDecoderLayer", "TransformerEncoder", "TransformerEncoderLayer",
                  "Unflatten", "Unfold", "Upsample", "UpsamplingBilinear2d",
                  "UpsamplingNearest2d", "functional",
                  "init", *activation.__all__, *dropout.__all__, *loss.__all__,
                  *normalization.__all__, *padding.__all__])
