"""The helpers generated code calls as ``rt.<name>``: plain numpy functions, for what one
numpy expression cannot say (the special functions numpy lacks, softmax's max shift,
nll's picking by target). Every other op prints as numpy itself (its ``template``).

``pb.export`` ships the functions an exported module calls, as source, so that it runs
without pullback. Each computes exactly what its op's forward computes (the same bits,
the same dtype). One room per kind of op; this module gathers their names, the ones
``rt.<name>`` reads.

>>> import pullback.ops.runtime as rt
>>> rt.log_softmax is rt.losses.log_softmax and rt.scatter.__module__
'pullback.ops.runtime.indexing'
"""

from __future__ import annotations

from .losses import (
    softmax,
    log_softmax,
    bce_logits,
    nll_loss,
    nll_rows,
    nll_backward,
    nll_rows_backward,
    softmax_nll_backward,
    class_one_hot,
)
from .reductions import c_order, logsumexp, prod_others, normalize, renorm
from .ordering import (
    stable_order, sort, topk, argsort_descending, median, argmedian, median_along, cummax,
    cummin, nanmedian, nanmedian_along, mode_index,
)
from .indexing import (
    scatter,
    scatter_add,
    scatter_reduced,
    scatter_reduce,
    put_along,
    index_copy,
    index_add,
    zeros_set,
    zeros_add,
    index_put,
    diagonal_set,
    masked_select,
    masked_select_backward,
    masked_scatter,
    masked_scatter_backward,
)
from .convolution import windows, pad_last, im2col, col2im, conv, conv_transpose
from .pooling import (
    max_pool2d,
    avg_pool2d,
    avg_pool2d_backward,
    adaptive_max_pool2d,
    resample,
    resample_backward,
)
from .embedding import (
    embedding_backward,
    embedding_bag,
    embedding_bag_backward,
    embedding_bag_max_gather,
    renorm_scale,
)
from .linalg import adjugate, matrix_exp, eig, solve_triangular, solve_sylvester, sqrtm
from .special import (
    erf, erfc, erfinv, lgamma, digamma, polygamma, i0, i0e, i1, i1e, iv, ive, j0, j1, jn, y0,
    y1, yn, k0, k0e, k1, k1e, erfcx, log_ndtr, ndtri, gammainc, gammaincc, gammainc_da,
    betainc, betainc_da, betainc_db, xlog1py, sigmoid,
)

__all__ = ["softmax", "log_softmax", "bce_logits", "nll_loss", "nll_backward", "erf", "erfc",
           "erfinv",
           "lgamma", "digamma", "i0", "i0e", "i1", "i1e", "j0", "j1", "y0", "y1", "k0", "k0e",
           "k1", "k1e", "erfcx", "log_ndtr", "ndtri", "nll_rows", "nll_rows_backward",
           "softmax_nll_backward", "jn", "yn", "iv", "ive", "polygamma", "gammainc",
           "gammaincc", "gammainc_da", "betainc", "betainc_da", "betainc_db", "sigmoid"]
