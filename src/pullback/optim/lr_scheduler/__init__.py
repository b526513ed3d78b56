"""torch.optim.lr_scheduler: the schedules of a formula of the epoch (``decays.py``),
``ReduceLROnPlateau`` (``plateau.py``), warm restarts, one cycle and the schedulers that
combine others (``cycles.py``), cyclical rates (``cyclic.py``), with torch's (chainable)
formulas, so the learning rates are torch's to the last bit.

>>> import pullback as pb
>>> w = pb.zeros(1, requires_grad=True)
>>> opt = pb.optim.SGD([w], lr=1.0)
>>> sched = pb.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
>>> lrs = []
>>> for _ in range(5):
...     opt.step()
...     sched.step()
...     lrs.append(sched.get_last_lr()[0])
>>> lrs
[1.0, 0.5, 0.5, 0.25, 0.25]
"""

from .base import LRScheduler
from .cycles import ChainedScheduler, CosineAnnealingWarmRestarts, OneCycleLR, SequentialLR
from .cyclic import CyclicLR
from .decays import (ConstantLR, CosineAnnealingLR, ExponentialLR, LambdaLR, LinearLR,
                     MultiplicativeLR, MultiStepLR, PolynomialLR, StepLR)
from .plateau import ReduceLROnPlateau

__all__ = ["ChainedScheduler", "ConstantLR", "CosineAnnealingLR",
           "CosineAnnealingWarmRestarts", "CyclicLR", "ExponentialLR", "LRScheduler", "LambdaLR",
           "LinearLR", "MultiStepLR", "MultiplicativeLR", "OneCycleLR", "PolynomialLR",
           "ReduceLROnPlateau", "SequentialLR", "StepLR"]
