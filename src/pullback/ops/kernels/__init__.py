"""Numeric kernels the op families compute with, numpy only; they declare no op:
``erf_gamma`` (erf, erfc, erfinv, lgamma, digamma, polygamma), ``normal`` (erfcx,
log_ndtr, ndtri), ``bessel`` (the Bessel functions j, y, i, k), ``incomplete_gamma_beta``
(the incomplete gamma and beta functions and their derivatives in the shape parameters),
``logistic`` (the sigmoid, into a buffer) and ``summation`` (sums and means as accurate
along any axis as numpy's along the contiguous one)."""
