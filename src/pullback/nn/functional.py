"""torch.nn.functional: every op-table binding declared with ``functional=``.

>>> import pullback as pb
>>> import pullback.nn.functional as F
>>> F.relu(pb.tensor([-1., 2.]))
tensor([0., 2.])
"""

from ..ops import Public, subscribe

__all__: list = []


def _install(entry: Public) -> None:
    for name in entry.functional:
        globals()[name] = entry.fn
        if name not in __all__:
            __all__.append(name)


subscribe(_install)
