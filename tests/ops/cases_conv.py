"""Op cases for convolution, pooling and resampling (ops/convolution.py, pooling.py,
resampling.py): strides, paddings, dilations, groups, ceil_mode, empty batches and
one-element edges, each against torch's own op (``torch.convolution`` for every
convolution, the functional forms for the rest, torch's double backward for the
adjoint primitives)."""

from __future__ import annotations

from typing import Callable

from .case_types import A, _c

CONV = ("stride", "padding", "dilation", "transposed", "output_padding", "groups")


def _conv(x: A, w: A, b: A | None, tag: str = "", **p) -> object:
    params = dict(zip(CONV, (p.get("stride", (1, 1)), p.get("padding", (0, 0)),
                             p.get("dilation", (1, 1)), p.get("transposed", False),
                             p.get("output_padding", (0, 0)), p.get("groups", 1))))
    d = len(w.shape) - 2
    params = {k: v[:d] if isinstance(v, tuple) else v for k, v in params.items()}
    if b is None:
        return _c("convolution", x, w, None, p=params, tag=tag,
                  torch=lambda T, x, w: T.convolution(x, w, None, *params.values()))
    return _c("convolution", x, w, b, p=params, tag=tag,
              torch=lambda T, x, w, b: T.convolution(x, w, b, *params.values()))


def _back(fwd: Callable, shape: tuple) -> Callable:
    """torch's backward of ``fwd`` at an input of ``shape``, as a function of the
    incoming gradient (the node torch records for it under create_graph)."""
    def run(T, g):
        x0 = T.zeros(shape, dtype=g.dtype, requires_grad=True)
        return T.autograd.grad(fwd(T, x0), x0, g, create_graph=True)[0]
    return run


def _pool(**p) -> dict:
    return {"kernel": p.get("kernel", (2, 2)), "stride": p.get("stride", (2, 2)),
            "padding": p.get("padding", (0, 0)), "dilation": p.get("dilation", (1, 1)),
            "ceil_mode": p.get("ceil_mode", False)}


def _max(x: A, tag: str = "", **kw) -> object:
    p = _pool(**kw)
    return _c("max_pool2d", x, p=p, tag=tag, torch=lambda T, x: T.nn.functional.max_pool2d(
        x, p["kernel"], p["stride"], p["padding"], p["dilation"], p["ceil_mode"], True))


def _avg_params(**kw) -> dict:
    p = _pool(**kw)
    del p["dilation"]
    return {**p, "count_include_pad": kw.get("count_include_pad", True),
            "divisor_override": kw.get("divisor_override")}


def _avg_torch(p: dict) -> Callable:
    return lambda T, x: T.nn.functional.avg_pool2d(
        x, p["kernel"], p["stride"], p["padding"], p["ceil_mode"], p["count_include_pad"],
        p["divisor_override"])


def _avg(x: A, tag: str = "", **kw) -> object:
    p = _avg_params(**kw)
    return _c("avg_pool2d", x, p=p, tag=tag, torch=_avg_torch(p))


def _avg_back(g: A, input_shape: tuple, tag: str = "", **kw) -> object:
    p = _avg_params(**kw)
    return _c("avg_pool2d_backward", g, p={"input_size": input_shape[-2:], **p}, tag=tag,
              torch=_back(_avg_torch(p), input_shape))


def _interp(**kw) -> Callable:
    return lambda T, x: T.nn.functional.interpolate(x, **kw)


def _resample(op: str, x: A, out: tuple, options: tuple, tag: str, **kw) -> list:
    """The map ``op`` and its transpose, against torch's interpolate and its backward."""
    fwd = _interp(**kw)
    back_in = x.shape[:-len(out)] + out
    return [_c(op, x, p={"output_size": out, "options": options}, tag=tag, torch=fwd),
            _c(op + "_backward", A(back_in), p={"input_size": x.shape[-len(out):],
                                                "options": options}, tag=tag,
               torch=_back(fwd, x.shape))]


CONV_CASES = [
    _conv(A((2, 4, 7, 6)), A((6, 4, 3, 3)), A((6,))),
    _conv(A((2, 4, 9, 8)), A((6, 2, 3, 2)), A((6,)), stride=(2, 1), padding=(1, 2),
          dilation=(1, 2), groups=2),
    _conv(A((2, 3, 9)), A((4, 3, 3)), None, stride=(2,), padding=(1,)),
    _conv(A((2, 4, 10)), A((4, 1, 2)), A((4,)), dilation=(3,), groups=4),
    _conv(A((1, 2, 4, 5, 3)), A((3, 2, 2, 3, 2)), A((3,)), stride=(1, 2, 1), padding=(1, 0, 1),
          dilation=(1, 1, 1), output_padding=(0, 0, 0)),
    _conv(A((2, 4, 5, 4)), A((4, 3, 3, 2)), A((6,)), transposed=True, stride=(2, 2),
          padding=(1, 0), output_padding=(1, 1), groups=2),
    _conv(A((2, 3, 6)), A((3, 2, 3)), None, transposed=True, stride=(3,), dilation=(2,),
          output_padding=(1,)),
    _conv(A((0, 3, 5, 5)), A((2, 3, 3, 3)), A((2,)), tag="empty-batch"),
    _conv(A((1, 1, 1, 1)), A((1, 1, 1, 1)), A((1,)), tag="one"),
    _c("im2col", A((2, 3, 6, 5)), p={"kernel": (2, 3), "dilation": (1, 2), "padding": (1, 1),
                                     "stride": (2, 1)},
       torch=lambda T, x: T.nn.functional.unfold(x, (2, 3), (1, 2), (1, 1), (2, 1))),
    _c("col2im", A((2, 8, 42)), p={"output_size": (5, 6), "kernel": (2, 2),
                                   "dilation": (1, 1), "padding": (1, 1), "stride": (1, 1)},
       torch=lambda T, x: T.nn.functional.fold(x, (5, 6), 2, 1, 1, 1)),
    _c("col2im", A((1, 12, 2)), p={"output_size": (5, 4), "kernel": (3, 2),
                                   "dilation": (2, 1), "padding": (0, 0), "stride": (1, 2)},
       torch=lambda T, x: T.nn.functional.fold(x, (5, 4), (3, 2), (2, 1), 0, (1, 2))),
]

POOL_CASES = [
    _max(A((2, 3, 6, 8))),
    _max(A((2, 3, 9, 8)), kernel=(3, 3), stride=(2, 2), padding=(1, 1)),
    _max(A((3, 9, 8)), kernel=(3, 2), stride=(2, 3), padding=(1, 1), dilation=(2, 1),
         ceil_mode=True),
    _max(A((0, 2, 4, 4)), tag="empty-batch"),
    _c("adaptive_max_pool2d", A((2, 3, 7, 5)), p={"output_size": (3, 2)},
       torch=lambda T, x: T.nn.functional.adaptive_max_pool2d(x, (3, 2), True)),
    _c("adaptive_max_pool2d", A((2, 4, 4)), p={"output_size": (1, 1)},
       torch=lambda T, x: T.nn.functional.adaptive_max_pool2d(x, 1, True)),
    _avg(A((2, 3, 6, 8))),
    _avg(A((2, 3, 9, 8)), kernel=(3, 3), stride=(2, 2), padding=(1, 1), ceil_mode=True,
         count_include_pad=False),
    _avg(A((3, 7, 8)), kernel=(3, 2), stride=(2, 1), padding=(1, 0), divisor_override=5),
    _avg(A((0, 2, 4, 4)), tag="empty-batch"),
    _avg_back(A((2, 3, 3, 4)), (2, 3, 6, 8)),
    _avg_back(A((2, 3, 5, 5)), (2, 3, 9, 8), kernel=(3, 3), stride=(2, 2), padding=(1, 1),
              ceil_mode=True, count_include_pad=False),
    _c("adaptive_avg_pool2d", A((2, 3, 7, 5)), p={"output_size": (3, 4), "options": ()},
       torch=lambda T, x: T.nn.functional.adaptive_avg_pool2d(x, (3, 4))),
    _c("adaptive_avg_pool2d", A((3, 4, 4)), p={"output_size": (1, 1), "options": ()},
       tag="one", torch_name=False,  # (torch's is a mean there)
       torch=lambda T, x: T.nn.functional.adaptive_avg_pool2d(x, 1)),
    _c("adaptive_avg_pool2d_backward", A((2, 3, 3, 4)), p={"input_size": (7, 5),
                                                           "options": ()},
       torch=_back(lambda T, x: T.nn.functional.adaptive_avg_pool2d(x, (3, 4)), (2, 3, 7, 5))),
]

RESAMPLE_CASES = [
    _c("pixel_shuffle", A((2, 8, 3, 4)), p={"upscale_factor": 2},
       torch=lambda T, x: T.pixel_shuffle(x, 2)),
    _c("pixel_unshuffle", A((2, 6, 6)), p={"downscale_factor": 3},
       torch=lambda T, x: T.pixel_unshuffle(x, 3)),
    *_resample("upsample_nearest1d", A((2, 3, 5)), (9,), (None,), "size", size=9),
    *_resample("upsample_nearest2d", A((2, 3, 4, 5)), (8, 10), (2.0, 2.0), "scale",
               scale_factor=2),
    *_resample("upsample_nearest2d", A((1, 2, 5, 7)), (8, 4), (None, None), "size",
               size=(8, 4)),
    *_resample("upsample_linear1d", A((2, 3, 5)), (12,), (False, (2.5,)), "scale",
               scale_factor=2.5, mode="linear"),
    *_resample("upsample_linear1d", A((2, 3, 5)), (3,), (True, (None,)), "corners",
               size=3, mode="linear", align_corners=True),
    *_resample("upsample_bilinear2d", A((2, 3, 4, 5)), (7, 3), (False, (None, None)), "size",
               size=(7, 3), mode="bilinear"),
    *_resample("upsample_bilinear2d", A((1, 2, 4, 5)), (10, 2), (True, (2.5, 0.5)), "corners",
               scale_factor=(2.5, 0.5), mode="bilinear", align_corners=True),
    *_resample("upsample_bilinear2d", A((0, 2, 3, 3)), (6, 6), (False, (2.0, 2.0)),
               "empty-batch", scale_factor=2, mode="bilinear"),
]

CONV_OP_CASES = CONV_CASES + POOL_CASES + RESAMPLE_CASES
