"""The op-case table's types: ``Arg`` (a tensor input) and ``Case`` (one call of one
op), shared by ``cases.py`` and ``cases_multi.py``.

An op with several outputs returns a tuple; ``outputs`` lists a result's outputs and
``float_outputs`` those a gradient flows from (the weighted sum the tests
differentiate adds ``(out_k * w_k).sum()`` over them).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from pullback.ops import OPS
from pullback.ops.sampling import manual_seed

DOMAINS = ("real", "pos", "unit", "away", "grid", "ties", "bool", "int", "invertible", "spd",
           "complex")


@dataclass(frozen=True)
class Arg:
    """A tensor input: its shape and where its values come from.

    domain: real (normal), pos (0.5..2), unit (0.1..0.9), away (|x| in 0.25..2: no kink
    at 0), grid (k/4 + 1/8: off 0 and +-0.5, with ties), ties (multiples of 1/2, on the
    kinks), bool, int (0..high-1), invertible (square matrices near the identity: well
    conditioned), spd (symmetric positive-definite, well conditioned), complex (normal
    real and imaginary parts, in the complex dtype of the float one asked for: complex64
    for float32). ``values`` fixes the values instead.
    """

    shape: tuple = ()
    domain: str = "real"
    grad: bool = True
    high: int = 3
    values: Any = None

    @property
    def kind(self) -> str:
        return self.domain if self.domain in ("bool", "int") else "float"

    @property
    def differentiable(self) -> bool:
        return self.kind == "float" and self.grad

    def sample(self, rng: np.random.Generator, dtype: Any) -> np.ndarray:
        if self.values is not None:
            return np.array(self.values, dtype=dtype if self.kind == "float" else None)
        shape, d = self.shape, self.domain
        if d == "bool":
            return rng.random(shape) < 0.5
        if d == "int":
            return rng.integers(0, self.high, shape).astype(np.int64)
        if d == "complex":
            v = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
            return v.astype(np.result_type(dtype, np.complex64))
        if d == "real":
            v = rng.standard_normal(shape)
        elif d == "pos":
            v = rng.uniform(0.5, 2.0, shape)
        elif d == "unit":
            v = rng.uniform(0.1, 0.9, shape)
        elif d == "away":
            v = rng.uniform(0.25, 2.0, shape) * rng.choice([-1.0, 1.0], shape)
        elif d == "grid":
            v = rng.integers(-8, 8, shape) / 4 + 0.125
        elif d == "ties":
            v = rng.integers(-3, 4, shape) / 2
        elif d == "invertible":
            v = np.eye(shape[-1]) + 0.3 * rng.standard_normal(shape)
        elif d == "spd":
            m = rng.standard_normal(shape)
            v = m @ np.swapaxes(m, -1, -2) / shape[-1] + np.eye(shape[-1])
        else:
            raise ValueError(f"unknown domain {d!r}; one of {DOMAINS}")
        return np.asarray(v, dtype=dtype)

    def __repr__(self) -> str:
        if self.values is not None:
            return "v" + "x".join(map(str, np.shape(self.values))) if np.ndim(
                self.values) else f"v{self.values}"
        prefix = {"bool": "b", "int": "i", "invertible": "inv", "spd": "spd",
                  "complex": "c"}.get(self.domain, "")
        return prefix + ("x".join(map(str, self.shape)) if self.shape else "0d")


@dataclass(frozen=True)
class Case:
    """One call of one op. Anything in ``args`` that is not an ``Arg`` is a constant
    passed as is (a Python scalar)."""

    op: str
    args: tuple
    params: dict = field(default_factory=dict)
    torch: Callable | None = None
    tag: str = ""
    fd: bool = True            # finite differences are valid (inputs off any kink)
    second_order: bool = True  # check grad of (grad . v) against finite differences
    torch_name: bool = True    # torch's expression names its node like the op
    reference: Callable | None = None  # numpy's result, for ops torch cannot reproduce
    rng_seed: int | None = None  # seed pullback's generator with this before the call

    @property
    def id(self) -> str:
        parts = [",".join(repr(a) for a in self.args)] if self.args else []
        parts += [f"{k}={_short(v)}" for k, v in self.params.items() if _short(v) is not None]
        return "-".join([self.op] + parts + ([self.tag] if self.tag else []))

    @property
    def arg_specs(self) -> tuple:
        return tuple(a for a in self.args if isinstance(a, Arg))

    @property
    def grad_argnums(self) -> tuple:
        return tuple(i for i, a in enumerate(self.arg_specs) if a.differentiable)

    @property
    def differentiable(self) -> bool:
        return OPS[self.op].differentiable and bool(self.grad_argnums)

    def inputs(self, dtype: Any = np.float64, seed: int | None = None) -> list:
        """Values for the Arg positions (float ones in ``dtype``); deterministic per case."""
        if seed is None:
            seed = zlib.crc32(self.id.encode())
        rng = np.random.default_rng(seed)
        return [a.sample(rng, dtype) for a in self.arg_specs]

    def full_args(self, values: Any) -> tuple:
        it = iter(values)
        return tuple(next(it) if isinstance(a, Arg) else a for a in self.args)

    def fn(self, *values: Any) -> Any:
        """The op on these input values (numpy arrays, Tensors or IR values)."""
        if self.rng_seed is not None:
            manual_seed(self.rng_seed)
        return OPS[self.op](*self.full_args(values), **self.params)


def _short(v: Any) -> str | None:
    """A param value as it reads in a test id (None: leave it out)."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return str(v)
    if isinstance(v, tuple) and all(isinstance(n, int) for n in v):
        return "x".join(map(str, v)) if v else "()"
    return None


def _c(op: str, *args: Any, torch: Callable | None = None, tag: str = "",
       p: dict | None = None, **flags: Any) -> Case:
    return Case(op, args, p or {}, torch, tag, **flags)


A = Arg


def outputs(result: Any) -> list:
    """An op's outputs: its tuple's elements, or the one result."""
    return list(result) if isinstance(result, (tuple, list)) else [result]


def is_float(x: Any) -> bool:
    """Whether a numpy array, pullback Tensor or torch tensor holds floats."""
    d = x.dtype
    if hasattr(d, "is_floating_point") and not hasattr(d, "np"):  # torch's dtype
        return d.is_floating_point or d.is_complex
    return np.dtype(getattr(d, "np", d)).kind in "fc"


def float_outputs(result: Any) -> list:
    return [o for o in outputs(result) if is_float(o)]
