"""The special functions numpy lacks: pullback's numpy kernels (ops/kernels), under the
names generated code calls (sigmoid among them: one buffer, not four), and xlog1py."""

from __future__ import annotations

import numpy as np

from ..kernels.bessel import i0, i0e, i1, i1e, iv, ive, j0, j1, jn, k0, k0e, k1, k1e, y0, y1, yn
from ..kernels.erf_gamma import digamma, erf, erfc, erfinv, lgamma, polygamma
from ..kernels.incomplete_gamma_beta import (
    betainc,
    betainc_da,
    betainc_db,
    gammainc,
    gammainc_da,
    gammaincc,
)
from ..kernels.logistic import sigmoid
from ..kernels.normal import erfcx, log_ndtr, ndtri


def xlog1py(x, y):
    """x log1p(y), 0 where x == 0 (unless y is NaN): torch's and scipy's."""
    with np.errstate(divide="ignore", invalid="ignore"):
        v = np.where(x == 0, 0, x * np.log1p(y))
    return np.where(np.isnan(y), np.nan, v).astype(v.dtype, copy=False)


__all__ = ["erf", "erfc", "erfinv", "lgamma", "digamma", "polygamma", "i0", "i0e", "i1",
           "i1e", "iv", "ive", "j0", "j1", "jn", "y0", "y1", "yn", "k0", "k0e", "k1", "k1e",
           "erfcx", "log_ndtr", "ndtri", "gammainc", "gammaincc", "gammainc_da", "betainc",
           "betainc_da", "betainc_db", "xlog1py", "sigmoid"]
