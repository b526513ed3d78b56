"""scipy with derivatives, in the manner of ``jax.scipy`` and HIPS autograd's
``autograd.scipy``: ``pullback.scipy.special``, ``pullback.scipy.stats``,
``pullback.scipy.linalg``, ``pullback.scipy.signal.convolve`` and
``pullback.scipy.integrate.odeint``, with scipy's names,
parameters and conventions.
scipy itself is not needed; when a program has imported it, scipy's own ufuncs called on
Tensors (``scipy.special.gammaln(t)``) run these functions (``_ufuncs.py``). See
docs/scipy.md.
"""

from . import integrate, linalg, signal, special, stats
from . import _ufuncs
from . import _calls

