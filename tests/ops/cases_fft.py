"""Op cases of the discrete Fourier transforms (ops/fourier.py): the three primitives
over one and several dims, odd and even lengths, every ``norm``, one-sided and not.

Real inputs (``A(shape)``: c2c and c2r then read a real array, as torch's fftn and
irfftn do after their cast, a ToCopyBackward0 below the node compared; the gradient
checked is the real part of the rule's) and complex ones (``A(shape, "complex")``: both
parts of the gradient, torch's conjugate Wirtinger convention). The transforms are
linear: no second-order cases. tests/ops/test_fft.py checks the public functions.
"""

from __future__ import annotations

from .case_types import A, _c


def _c2c(shape, dim, norm, forward, domain="real"):
    def torch(T, x):
        f = T.fft.fftn if forward else T.fft.ifftn
        return f(x, dim=dim, norm=norm)
    return _c("fft_c2c", A(shape, domain), p={"dim": dim, "norm": norm, "forward": forward},
              torch=torch, second_order=False)


def _r2c(shape, dim, norm, onesided):
    def torch(T, x):
        return (T.fft.rfftn(x, dim=dim, norm=norm) if onesided
                else T.fft.fft(x, dim=dim[0], norm=norm))
    return _c("fft_r2c", A(shape), p={"dim": dim, "norm": norm, "onesided": onesided},
              torch=torch, second_order=False)


def _c2r(shape, dim, norm, n, domain="real"):
    def torch(T, x):
        s = tuple(x.shape[d] for d in dim[:-1]) + (n,)
        return T.fft.irfftn(x, s=s, dim=dim, norm=norm)
    return _c("fft_c2r", A(shape, domain), p={"dim": dim, "norm": norm, "last_dim_size": n},
              torch=torch, second_order=False)


FFT_CASES = [
    _c2c((6,), (0,), "backward", True),
    _c2c((3, 5), (1,), "ortho", True),
    _c2c((3, 4), (0, 1), "forward", True),
    _c2c((2, 3, 4), (2, 0), "backward", False),
    _c2c((5,), (0,), "ortho", False),
    _c2c((4, 3), (0,), "forward", False),
    _r2c((6,), (0,), "backward", True),
    _r2c((3, 5), (1,), "ortho", True),      # odd length: no Nyquist entry
    _r2c((4, 3), (0,), "forward", True),
    _r2c((3, 4), (0, 1), "backward", True),
    _r2c((2, 3, 5), (2, 1), "ortho", True),  # the one-sided dim is the last one named
    _r2c((5,), (0,), "backward", False),
    _r2c((3, 4), (1,), "forward", False),
    _c2r((4,), (0,), "backward", 6),         # even: entries 1 and 2 doubled
    _c2r((4,), (0,), "ortho", 7),            # odd: entries 1, 2 and 3 doubled
    _c2r((3, 3), (1,), "forward", 4),
    _c2r((3, 4), (0, 1), "backward", 7),
    _c2r((2, 4, 3), (2, 1), "ortho", 6),
    _c2r((1,), (0,), "backward", 1),         # a single point: nothing doubled
    # complex inputs
    _c2c((6,), (0,), "backward", True, "complex"),
    _c2c((3, 5), (1, 0), "ortho", False, "complex"),
    _c2c((4, 3), (0,), "forward", True, "complex"),
    _c2r((4,), (0,), "backward", 6, "complex"),  # the imaginary parts of entries 0 and
    _c2r((4,), (0,), "ortho", 7, "complex"),     # n/2 (even n) do not count
    _c2r((3, 4), (0, 1), "forward", 6, "complex"),
    _c2r((2, 3, 3), (1, 2), "backward", 5, "complex"),
]
