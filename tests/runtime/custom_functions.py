"""Custom Functions several runtime tests use, made for either library (``T`` is
pullback or torch)."""

from __future__ import annotations

from typing import Any


def cube(T: Any) -> type:
    """x ** 3 with a backward written with ops: twice differentiable."""
    class Cube(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * x ** 2 * g
    return Cube


def square_once(T: Any) -> type:
    """x ** 2 with a @once_differentiable backward."""
    class Sq(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 2

        @staticmethod
        @T.autograd.function.once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g
    return Sq
