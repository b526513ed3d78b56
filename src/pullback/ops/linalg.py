"""Matrix products. torch names the node after the product it ran: mm, mv, dot."""

from __future__ import annotations

import numpy as np

from .math import conj
from .registry import defop
from .shape import t, transpose, unsqueeze

mm = defop("mm", np.matmul, "MmBackward0",
           vjp=(lambda g, out, x, y: mm(g, conj(t(y))),
                lambda g, out, x, y: mm(conj(t(x)), g)),
           uses=("y", "x"))
mv = defop("mv", np.matmul, "MvBackward0",
           vjp=(lambda g, out, x, v: mm(unsqueeze(g, dim=1), conj(unsqueeze(v, dim=0))),
                lambda g, out, x, v: mv(conj(t(x)), g)),
           uses=("v", "x"))
dot = defop("dot", np.dot, "DotBackward0",
            vjp=(lambda g, out, x, y: g * conj(y),
                 lambda g, out, x, y: g * conj(x)),
            uses=("y", "x"))
# batched (and broadcast-batched) products; the caller sums the batch dims away
bmm = defop("bmm", np.matmul, "BmmBackward0",
            vjp=(lambda g, out, x, y: bmm(g, conj(transpose(y, dim0=-1, dim1=-2))),
                 lambda g, out, x, y: bmm(conj(transpose(x, dim0=-1, dim1=-2)), g)),
            uses=("y", "x"))
addmm = defop("addmm", lambda b, x, w: np.add(b, np.matmul(x, w)), "AddmmBackward0",
              vjp=(lambda g, out, b, x, w: g,
                   lambda g, out, b, x, w: mm(g, conj(t(w))),
                   lambda g, out, b, x, w: mm(conj(t(x)), g)),
              uses=("", "w", "x"))
