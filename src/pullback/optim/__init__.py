"""pullback.optim: torch.optim's optimizers and learning-rate schedulers.

Each optimizer updates a parameter group in a few numpy calls on flat arrays (its
parameters are views of one array per group and dtype: ``flat.py``), not a loop over
parameters; docs/design.md says why it is numpy and not generated code.

>>> import pullback as pb
>>> from pullback import nn
>>> model = nn.Linear(3, 1)
>>> opt = pb.optim.Adam(model.parameters(), lr=0.01)
>>> loss = model(pb.ones(4, 3)).pow(2).mean()
>>> loss.backward()
>>> opt.step()
>>> opt.zero_grad()
>>> model.weight.grad is None, model.weight.is_leaf
(True, True)
"""

from . import lr_scheduler
from .adadelta import Adadelta, Adamax
from .adam import Adam, AdamW, NAdam, RAdam
from .lbfgs import LBFGS
from .optimizer import Optimizer
from .rmsprop import Adagrad, RMSprop
from .rprop import ASGD, Rprop
from .sgd import SGD

__all__ = ["ASGD", "SGD", "Adadelta", "Adagrad", "Adam", "AdamW", "Adamax", "LBFGS", "NAdam",
           "Optimizer", "RAdam", "RMSprop", "Rprop", "lr_scheduler"]
