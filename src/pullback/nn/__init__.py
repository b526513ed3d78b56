"""pullback.nn: torch.nn's modules, parameters, initialisation and functional API.

Each layer is a small module over ``pb.nn.functional`` (``linear.py``, ``activation.py``,
``loss.py``, ``rnn.py``); a new layer is a new class of the same shape.

>>> import pullback as pb
>>> from pullback import nn
>>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
>>> sum(p.numel() for p in model.parameters())
67
"""

from . import functional, init
from .activation import LogSoftmax, ReLU, Sigmoid, Softmax, Tanh
from .compiled import CompiledModule
from .container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .linear import Bilinear, Flatten, Identity, Linear, Unflatten
from .loss import BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, MSELoss, NLLLoss
from .module import Module
from .parameter import Parameter
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNCell

__all__ = ["BCELoss", "BCEWithLogitsLoss", "Bilinear", "CompiledModule", "CrossEntropyLoss",
           "Flatten", "GRU", "GRUCell", "Identity", "LSTM", "LSTMCell", "Linear", "LogSoftmax",
           "MSELoss", "Module", "ModuleDict", "ModuleList", "NLLLoss", "Parameter",
           "ParameterDict", "ParameterList", "ReLU", "RNN", "RNNCell", "Sequential", "Sigmoid",
           "Softmax", "Tanh", "Unflatten", "functional", "init"]
