"""pullback.nn: torch.nn's modules, parameters, initialisation and functional API.

Each layer is a small module over ``pb.nn.functional`` (``linear.py``, ``activation.py``,
``loss.py``, ``rnn.py``, ``conv.py``, ``pooling.py``); a new layer is a new class of the
same shape.

>>> import pullback as pb
>>> from pullback import nn
>>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
>>> sum(p.numel() for p in model.parameters())
67
"""

from . import functional, init
from .activation import LogSoftmax, ReLU, Sigmoid, Softmax, Tanh
from .compiled import CompiledModule
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d
from .container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .linear import Bilinear, Flatten, Identity, Linear, Unflatten
from .loss import BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, MSELoss, NLLLoss
from .module import Module
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
)
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNCell

__all__ = ["AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveMaxPool2d", "AvgPool1d",
           "AvgPool2d", "BCELoss", "BCEWithLogitsLoss", "Bilinear", "CompiledModule", "Conv1d",
           "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "CrossEntropyLoss",
           "Flatten", "Fold", "GRU", "GRUCell", "Identity", "LSTM", "LSTMCell", "Linear",
           "LogSoftmax", "MSELoss", "MaxPool1d", "MaxPool2d", "Module", "ModuleDict",
           "ModuleList", "NLLLoss", "Parameter", "ParameterDict", "ParameterList", "PixelShuffle",
           "PixelUnshuffle", "RNN", "RNNCell", "ReLU", "Sequential", "Sigmoid", "Softmax", "Tanh",
           "Unflatten", "Unfold", "Upsample", "functional", "init"]
