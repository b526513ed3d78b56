"""Elementwise primitives (arithmetic, unary functions, comparisons, complex parts)
and the public functions that choose among them.

Complex values follow torch's conjugate Wirtinger convention: a holomorphic op's
rule is g * conj(f'(z)). conj of a real value is the value itself, so the real rules
are unchanged (and codegen drops the no-op).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import dtypes
from .kernels import logistic
from .table import args, batching
from .table.other_arrays import code_for_them
from .table.promotion import promoting_template
from .table.registry import defop, is_traced, public, unary


def is_complex(x: Any) -> bool:
    """Whether a value (array, Tensor, IR value or scalar) holds complex numbers."""
    d = getattr(x, "dtype", None)
    if d is None:
        return isinstance(x, complex)
    return bool(getattr(d, "is_complex", False)) or getattr(d, "kind", "") == "c"


def conj(x: Any) -> Any:
    """The complex conjugate; a real value is returned as it is (no op, no node)."""
    return conj_op(x) if is_complex(x) else x


# ------------------------------------------------------------------ complex parts
conj_op = defop("conj", np.conjugate, "ConjBackward0", vjp=(lambda g, out, x: conj(g),),
                template="np.conjugate({0})")
real = defop("real", np.real, "RealBackward0", vjp=(lambda g, out, x: g,), template="{0}.real",
             function=True, aliases=True, numpy={np.real: lambda val: real(args.value(val))},
             batch=batching.as_is)
imag = defop("imag", np.imag, "ImagBackward0", vjp=(lambda g, out, x: g * 1j,),
             template="{0}.imag", function=True, aliases=True,
             numpy={np.imag: lambda val: imag(args.value(val))}, batch=batching.as_is)


def _complex(re, im):
    z = re + 1j * im
    return z if re.dtype != np.float32 else z.astype(np.complex64)


make_complex = defop("complex", _complex, "ComplexBackward0",
                     vjp=(lambda g, out, re, im: real(g),
                          lambda g, out, re, im: imag(g)),
                     elementwise=True, function=True,
                     template=lambda e, a, lit: f"{a[0]} + 1j * {a[1]}" if np.dtype(
                         e.inputs[0].dtype) != np.float32 else
                     f"({a[0]} + 1j * {a[1]}).astype(np.complex64)")
public("conj", function=True, method=True, numpy=np.conjugate)(conj)

# --------------------------------------------------------------------- arithmetic
add_op = defop("add", np.add, "AddBackward0",
               vjp=(lambda g, out, x, y: g,
                    lambda g, out, x, y: g),
               template="{0} + {1}", inplace=True, numpy=np.add, promote=(0, 1))
sub_op = defop("sub", np.subtract, "SubBackward0",
               vjp=(lambda g, out, x, y: g,
                    lambda g, out, x, y: -g),
               template="{0} - {1}", inplace=True, numpy=np.subtract, promote=(0, 1))
rsub = defop("rsub", lambda x, y: np.subtract(y, x), "RsubBackward1",
             vjp=(lambda g, out, x, y: -g,
                  lambda g, out, x, y: g),
             template="{1} - {0}", elementwise=True, promote=(0, 1))
mul = defop("mul", np.multiply, "MulBackward0",
            vjp=(lambda g, out, x, y: g * conj(y),
                 lambda g, out, x, y: g * conj(x)),
            uses=("y", "x"), template="{0} * {1}",
            function=("mul", "multiply"), method=("mul", "multiply"), inplace=True,
            numpy=np.multiply,
            promote=(0, 1))
div = defop("div", np.true_divide, "DivBackward0",
            vjp=(lambda g, out, x, y: g / conj(y),
                 lambda g, out, x, y: -g * conj(x / (y * y))),
            uses=("y", "x y"), template="{0} / {1}",
            function=("div", "divide", "true_divide"),
            method=("div", "divide", "true_divide"), inplace=True,
            numpy=np.true_divide, promote=(0, 1), to_float=True)
reciprocal = defop("reciprocal", np.reciprocal, "ReciprocalBackward0",
                   vjp=(lambda g, out, x: -g * conj(out * out),), uses=("out",),
                   numpy=np.reciprocal, template="np.reciprocal({0})")
neg = defop("neg", np.negative, "NegBackward0", vjp=(lambda g, out, x: -g,), template="-{0}",
            function=("neg", "negative"), method=("neg", "negative"), inplace=True,
            numpy=np.negative)


@public("add", function=True, method=True)
def add(input, other, *, alpha=1):
    return add_op(input, other if alpha == 1 else other * alpha)


@public("sub", function=("sub", "subtract"), method=("sub", "subtract"))
def sub(input, other, *, alpha=1):
    return sub_op(input, other if alpha == 1 else other * alpha)


# ----------------------------------------------------------------------- powers
pow_scalar = defop("pow_scalar", lambda x, exponent: np.power(x, exponent), "PowBackward0",
                   vjp=(lambda g, out, x, exponent: zeros_like(g) if exponent == 0
                        else g * conj(exponent * x ** (exponent - 1)),),
                   uses=("x",), template="{0} ** {exponent}", elementwise=True,
                   inplace="pow_", torch_args=("self", "exponent"), promote=(0, "exponent"))
def _pow_exponent_factor(out, x, y):
    """out * log(x), 0 where x == 0 and y >= 0; the log taken of 1 there, so that the
    second derivative in y finds no 0 * inf either."""
    zero = logical_and(x == 0, y >= 0)
    return where(zero, 0, out * log(where(zero, 1, x)))


# torch's rules, zero where the plain formula is 0 * inf: x ** 0 has no x-gradient, and
# 0 ** y (y >= 0) no y-gradient
power_op = defop("pow", np.power, "PowBackward1",
                 vjp=(lambda g, out, x, y: where(y == 0, 0, g * (y * x ** (y - 1))),
                      lambda g, out, x, y: g * _pow_exponent_factor(out, x, y)),
                 uses=("x y", "x y out"), template="{0} ** {1}",
                 torch_args=("self", "exponent"), promote=(0, 1))


def _log_of(base: float) -> float:
    """log(base) as numpy gives it (-inf at 0, NaN below), without its warnings."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.log(base))


def _rpow_rule(g, out, x, base):
    if base == 0:  # 0 where 0 ** x is 0 or 1 (torch's), else out * log(0), -inf or inf by
        # out's sign: constants, so that a second derivative finds no 0 * inf
        return g * where(x >= 0, 0, where(out > 0, -math.inf, where(out < 0, math.inf,
                                                                    math.nan)))
    return g * (out * _log_of(base))


rpow_scalar = defop("rpow_scalar", lambda x, base: np.power(base, x), "PowBackward2",
                    vjp=(_rpow_rule,), uses=("x out",), template="({base}) ** {0}",
                    elementwise=True, promote=("base", 0))


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float, np.number)) and not isinstance(v, bool)


@public("pow", function=True, method=True,
        numpy={np.power: lambda x, y: power(x, y), np.square: lambda x: power(x, 2)})
def power(input, exponent):
    if _is_number(exponent):
        return pow_scalar(input, exponent=exponent)
    if _is_number(input):
        return rpow_scalar(exponent, base=input)
    return power_op(input, exponent)


# -------------------------------------------------------------- unary functions
exp = unary("exp", np.exp, "ExpBackward0", lambda g, out, x: g * conj(out), "out")
log = unary("log", np.log, "LogBackward0", lambda g, out, x: g / conj(x), "x")
sqrt = unary("sqrt", np.sqrt, "SqrtBackward0", lambda g, out, x: g / (2 * conj(out)), "out")
sin = unary("sin", np.sin, "SinBackward0", lambda g, out, x: g * conj(cos(x)), "x")
cos = unary("cos", np.cos, "CosBackward0", lambda g, out, x: -g * conj(sin(x)), "x")
tanh = unary("tanh", np.tanh, "TanhBackward0", lambda g, out, x: g * conj(1 - out * out),
             "out", functional=True)
absolute = defop("abs", np.abs, "AbsBackward0", vjp=(lambda g, out, x: g * sign_of(x),),
                 uses=("x",), template="np.abs({0})", function=("abs", "absolute"),
                 method=("abs", "absolute"),
                 inplace=True, numpy=np.absolute)
# rt.sigmoid: 1 / (1 + exp(-x)) in one buffer (or into a dead input: the inplace pass's)
sigmoid = defop("sigmoid", logistic.sigmoid, "SigmoidBackward0", template="rt.sigmoid({0})",
                fresh=True,
                vjp=(lambda g, out, x: g * conj(out * (1 - out)),), uses=("out",),
                elementwise=True, function=True, method=True, inplace=True, functional=True)
# torch's threshold_backward: the gradient passes where not out <= 0 (a NaN passes), and
# is 0 elsewhere even when it is inf or NaN (a select, not a product with a mask)
relu = defop("relu", lambda x: np.maximum(x, 0), "ReluBackward0",
             vjp=(lambda g, out, x: where(out <= 0, 0, g),), uses=("out",),
             template="np.maximum({0}, 0)", elementwise=True,
             function=True, method=True, inplace=True, functional=True)


def _sign(x):
    """torch's sign: 0 at a real NaN, where numpy's is NaN (complex: z / |z|, torch's sgn,
    NaN at NaN). abs's rule reads it: torch's gradient of abs at NaN is 0."""
    s = np.sign(x)
    return np.nan_to_num(s) if s.dtype.kind == "f" else s


def _print_sign(e: Any, a: list, lit: Any) -> str:
    if e.out.dtype.kind == "f":
        return f"np.nan_to_num(np.sign({a[0]}))"
    return f"np.sign({a[0]})"


# sgn's rule (torch's sgn_backward): the gradient of z / |z|, which abs's rule reads at a
# complex z (without it the second derivative through complex abs was wrong):
# (g - Re(g conj(sgn)) sgn) / |z|, 0 at z = 0; zero for real x, as sign's
def _sgn_vjp(g, out, x):
    if np.dtype(args.np_dtype(x)).kind != "c":
        return zeros_like(g)
    r = absolute(x)
    return where(r == 0, 0, (g - real(g * conj(out)) * out) / r)


# sign is differentiable in torch, with a zero gradient everywhere (real inputs: it saves
# nothing); sgn (torch.sgn) is sign for complex inputs too, and saves what its rule reads
sign = defop("sign", _sign, "SignBackward0", vjp=(lambda g, out, x: zeros_like(g),),
             template=_print_sign, elementwise=True, fresh=True)
sgn = defop("sgn", _sign, "SgnBackward0", vjp=(_sgn_vjp,), uses=("x out",),
            template=_print_sign, fresh=True, function=True, method=True, batch=batching.as_is)


@public("sign", function=True, method=True, numpy={np.sign: lambda x: sign_of(x)})
def sign_of(input):
    """torch.sign; numpy's np.sign, z / |z| at a complex z (torch.sgn's node there)."""
    return sgn(input) if np.dtype(args.np_dtype(input)).kind == "c" else sign(input)


clamp_op = defop("clamp", lambda x, min=None, max=None: np.clip(x, min, max), "ClampBackward1",
                 # where, not g * mask: torch's gradient is 0 outside [min, max], NaN g or not
                 vjp=(lambda g, out, x, min, max: where(in_range(x, min=min, max=max), g, 0),),
                 uses=("x",), template="np.clip({0}, {min}, {max})", elementwise=True,
                 inplace="clamp_")


# torch's clamp_min / clamp_max: g where x is at or past the bound (a NaN gets 0)
clamp_min = defop("clamp_min", lambda x, min: np.maximum(x, min), "ClampMinBackward0",
                  vjp=(lambda g, out, x, min: where(x >= min, g, 0),), uses=("x",),
                  template="np.maximum({0}, {min})", elementwise=True, function=True,
                  method=True, inplace=True, torch_args=("self", "min"))
clamp_max = defop("clamp_max", lambda x, max: np.minimum(x, max), "ClampMaxBackward0",
                  vjp=(lambda g, out, x, max: where(x <= max, g, 0),), uses=("x",),
                  template="np.minimum({0}, {max})", elementwise=True, function=True,
                  method=True, inplace=True, torch_args=("self", "max"))


_NOVALUE = getattr(np, "_NoValue", None)


def _numpy_clip(a, a_min=_NOVALUE, a_max=_NOVALUE, out=None, *, min=_NOVALUE, max=_NOVALUE,
                **kw):
    args.plain(out, **kw)
    lo = None if a_min is _NOVALUE else a_min
    hi = None if a_max is _NOVALUE else a_max
    lo = lo if min is _NOVALUE else min
    hi = hi if max is _NOVALUE else max
    if lo is None and hi is None:
        raise ValueError("One of max or min must be given")
    x = args.value(a)
    if all(v is None or np.ndim(v) == 0 and not is_traced(v) for v in (lo, hi)):
        return clamp(x, lo, hi)
    if lo is not None:
        x = maximum(x, args.value(lo))
    return x if hi is None else minimum(x, args.value(hi))


@public("clamp", function=("clamp", "clip"), method=("clamp", "clip"),
        numpy={np.clip: _numpy_clip})
def clamp(input, min=None, max=None):
    if min is None and max is None:
        raise RuntimeError("clamp: At least one of 'min' or 'max' must not be None")
    return clamp_op(input, min=min, max=max)


maximum = defop("maximum", np.maximum, "MaximumBackward0",
                vjp=(lambda g, out, x, y: _share(g, x < y, x, y),
                     lambda g, out, x, y: _share(g, y < x, x, y)),
                uses=("x y", "x y"), template="np.maximum({0}, {1})",
                function=True, method=True, numpy=np.maximum, promote=(0, 1))
minimum = defop("minimum", np.minimum, "MinimumBackward0",
                vjp=(lambda g, out, x, y: _share(g, y < x, x, y),
                     lambda g, out, x, y: _share(g, x < y, x, y)),
                uses=("x y", "x y"), template="np.minimum({0}, {1})",
                function=True, method=True, numpy=np.minimum, promote=(0, 1))


def _numpy_where(condition, *xy):
    if len(xy) != 2:
        raise args.Unsupported  # np.where(condition): indices, not values
    return where(args.value(condition), args.value(xy[0]), args.value(xy[1]))


_where_array = promoting_template("np.where({0}, {1}, {2})", (1, 2), False)


def _print_where(e, a, lit):
    """``np.where``; between scalars (a loop's items), Python's ``x if c else y``: of
    the branches as they are when each is a value of the result's dtype or a number
    (written as one: ``g if c else np.float64(0.0)``, the call made only when taken).
    Not in code for Dask's arrays, where ``c`` may be a 0-d Dask array (its truth would
    compute it)."""
    if e.out.shape == () and not code_for_them() and \
            all(len(getattr(v, "shape", ())) == 0 for v in e.inputs):
        typed = [_typed_branch(v, text, e.out.dtype, lit) for v, text in zip(e.inputs[1:], a[1:])]
        if None not in typed and any(hasattr(v, "dtype") for v in e.inputs[1:]):
            return f"{typed[0]} if {a[0]} else {typed[1]}"
        return f"{lit(e.out.dtype)}({a[1]} if {a[0]} else {a[2]})"
    return _where_array(e, a, lit)


def _typed_branch(v, text, dtype, lit):
    """A scalar branch of ``where`` as text of ``dtype`` alone: a value of that dtype as
    it is, a number as that dtype's scalar; None for others."""
    if hasattr(v, "dtype"):
        return text if getattr(v, "shape", None) == () and np.dtype(v.dtype) == dtype \
            and not isinstance(v, np.ndarray) else None
    if type(v) not in (int, float, bool):
        return None
    typed = np.dtype(dtype).type(v)
    return lit(typed) if typed == v else None


where = defop("where", np.where, "WhereBackward0",
              vjp=(None,
                   lambda g, out, cond, x, y: where(cond, g, 0),
                   lambda g, out, cond, x, y: where(cond, 0, g)),
              uses=("", "cond", "cond"), template=_print_where,
              elementwise=True, fresh=True, torch_args=("condition", "self", "other"),
              numpy={np.where: _numpy_where}, promote=(1, 2))  # pb.where: ordering.py

# -------------------------------------------------------------- copies and dtypes
cast = defop("cast", lambda x, dtype: x.astype(dtype), "ToCopyBackward0",
             vjp=(lambda g, out, x, dtype: g,), template="{0}.astype({dtype})", fresh=True,
             batch=batching.as_is)
clone = defop("clone", np.copy, "CloneBackward0", vjp=(lambda g, out, x: g,),
              template="{0}.copy()", fresh=True, function=True, method=True,
              numpy={np.copy: lambda a, order="K", subok=False: clone(args.value(a)),
                     np.positive: lambda x: clone(x) if is_traced(x) else x}, batch=batching.as_is)
# x.contiguous() of a non-contiguous x: a clone laid out C-contiguous (clone keeps the
# layout, as torch's preserve_format does)
clone_contiguous = defop("clone_contiguous", lambda x: np.array(x, order="C"),
                         "CloneBackward0", vjp=(lambda g, out, x: g,),
                         template="np.array({0}, order='C')", fresh=True, batch=batching.as_is)


def to_dtype(input: Any, dtype: Any) -> Any:
    """``input`` as ``dtype`` (the value itself when it already is)."""
    npd = dtypes.to_numpy_dtype(dtype)
    if args.np_dtype(input) == npd:
        return input
    return cast(input, dtype=npd)


def _reciprocal_operands(input):
    """torch's reciprocal: an integer or bool tensor's is in the default float dtype."""
    if args.np_dtype(input).kind in "biu":
        input = to_dtype(input, dtypes.default_float.np)
    return reciprocal, (input,), {}


def _reciprocal_inplace_operands(input):
    """reciprocal_ of an integer tensor: torch's refusal (its float result does not fit)."""
    if args.np_dtype(input).kind in "biu":
        raise RuntimeError(f"result type {dtypes.default_float._scalar_name} can't be cast to "
                           f"the desired output type "
                           f"{dtypes.as_dtype(args.np_dtype(input))._scalar_name}")
    return reciprocal, (input,), {}


@public("reciprocal", function=True, method=True, inplace="reciprocal_",
        operands=_reciprocal_inplace_operands)
def reciprocal_fn(input):
    op, inputs, params = _reciprocal_operands(input)
    return op(*inputs, **params)


# ----------------------------------------------------- non-differentiable ops
zeros_like = defop("zeros_like", np.zeros_like, template="np.zeros_like({0})",
                   batch=batching.example_shaped)
# (they never require grad: they work on Tensors that do, and on traced values)
gt = defop("gt", np.greater, template="{0} > {1}", function=("gt", "greater"),
           method=("gt", "greater"), numpy=np.greater)
ge = defop("ge", np.greater_equal, template="{0} >= {1}", function=("ge", "greater_equal"),
           method=("ge", "greater_equal"), numpy=np.greater_equal)
lt = defop("lt", np.less, template="{0} < {1}", function=("lt", "less"),
           method=("lt", "less"), numpy=np.less)
le = defop("le", np.less_equal, template="{0} <= {1}", function=("le", "less_equal"),
           method=("le", "less_equal"), numpy=np.less_equal)
eq = defop("eq", np.equal, template="{0} == {1}", function=True, method=True, numpy=np.equal)
ne = defop("ne", np.not_equal, template="{0} != {1}", function=("ne", "not_equal"),
           method=("ne", "not_equal"), numpy=np.not_equal)
isnan = defop("isnan", np.isnan, template="np.isnan({0})", function=True, method=True,
              numpy=np.isnan)
def logical_template(operator: str, ufunc: np.ufunc) -> Any:
    """``~m``, ``a & b``: the operator on bool operands (the usual case: masks), numpy's
    logical function on others (``~`` and ``&`` of integers are bitwise)."""
    def write(e: Any, a: list, lit: Any) -> str:
        if all(getattr(v, "dtype", None) == np.bool_ for v in e.inputs):
            return operator.format(*a)
        return f"np.{ufunc.__name__}({', '.join(a)})"
    return write


logical_not = defop("logical_not", np.logical_not, template=logical_template("~{0}",
                                                                            np.logical_not),
                    function=True, method=True, numpy=np.logical_not)
logical_and = defop("logical_and", np.logical_and,
                    template=logical_template("{0} & {1}", np.logical_and), function=True,
                    method=True, numpy=np.logical_and)
logical_or = defop("logical_or", np.logical_or,
                   template=logical_template("{0} | {1}", np.logical_or), function=True,
                   method=True, numpy=np.logical_or)


def _in_range(x, min, max):
    lo = True if min is None else x >= min
    hi = True if max is None else x <= max
    return np.logical_and(lo, hi)


def _print_in_range(e, a, lit):
    lo, hi = (("True" if e.params[k] is None else f"({a[0]} {op} {lit(e.params[k])})")
              for k, op in (("min", ">="), ("max", "<=")))
    return f"np.logical_and({lo}, {hi})"


in_range = defop("in_range", _in_range, elementwise=True, template=_print_in_range)


def _share(g, beaten, x, y):
    """An operand's share of maximum's (minimum's) gradient, as torch's rule: exactly 0
    where it is ``beaten`` (even when ``g`` is inf or NaN), half on ties, else ``g``
    (a NaN on either side is the result). Both operands' shares read the one tie test
    and ``g * 0.5``; in a loop's step, a scalar test costs a tenth of a typed weight
    (``np.float64(0.0 if x < y else ...)``) and multiplies nothing."""
    return where(beaten, 0, where(x == y, g * 0.5, g))
