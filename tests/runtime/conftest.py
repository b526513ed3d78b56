"""The ``both`` fixture: run one snippet with pullback and with torch, compare the results.

A snippet is a function of the library module (``T`` is ``pullback`` or ``torch``), so
the same code runs on both. Results are normalised before comparing: a tensor becomes
its values, dtype, ``requires_grad``, ``is_leaf`` and grad_fn class name; a node its
``name()``; sizes become tuples and dtypes their short names.
"""

from __future__ import annotations

import re
import warnings
from typing import Any, Callable

import numpy as np
import pytest

import pullback as pb

_SUFFIX = re.compile(r" \(Triggered internally at [^)]*\.\)$")


def _is_tensor(v: Any) -> bool:
    return isinstance(v, pb.Tensor) or type(v).__name__ in ("Tensor", "Parameter")


def _is_node(v: Any) -> bool:
    return isinstance(v, pb.autograd.Node) or (
        hasattr(v, "next_functions") and hasattr(v, "name") and not _is_tensor(v))


def norm(v: Any) -> Any:
    """A library-independent, comparable form of a snippet's result."""
    if _is_tensor(v):
        fn = v.grad_fn
        return {"tensor": np.array(v.detach().numpy()), "dtype": str(v.dtype).split(".")[-1],
                "requires_grad": v.requires_grad, "is_leaf": v.is_leaf,
                "grad_fn": None if fn is None else type(fn).__name__}
    if _is_node(v):
        return ("node", v.name())
    if type(v).__name__ == "Size":
        return tuple(v)
    if type(v).__name__ == "dtype" or type(v).__module__ == "pullback.dtypes":
        return str(v).split(".")[-1]
    if isinstance(v, dict):
        return {k: norm(x) for k, x in v.items()}
    if isinstance(v, (tuple, list)):
        return type(v) is list, [norm(x) for x in v]
    if isinstance(v, np.ndarray):
        return {"array": v}
    return v


def assert_same(a: Any, b: Any, path: str = "result", rtol: float = 1e-5,
                atol: float = 1e-6) -> None:
    """``a`` (pullback, normalised) equals ``b`` (torch, normalised)."""
    if isinstance(b, dict) and ("tensor" in b or "array" in b):
        assert isinstance(a, dict) and a.keys() == b.keys(), f"{path}: {a!r} != {b!r}"
        key = "tensor" if "tensor" in b else "array"
        x, y = a[key], b[key]
        assert x.shape == y.shape, f"{path}: shape {x.shape} != torch {y.shape}"
        if y.dtype.kind in "fc":
            np.testing.assert_allclose(x, y, rtol=rtol, atol=atol, equal_nan=True,
                                       err_msg=path)
        else:
            np.testing.assert_array_equal(x, y, err_msg=path)
        for k in b:
            if k != key:
                assert a[k] == b[k], f"{path}.{k}: pullback {a[k]!r} != torch {b[k]!r}"
        return
    if isinstance(b, dict):
        assert isinstance(a, dict) and a.keys() == b.keys(), f"{path}: {a!r} != {b!r}"
        for k in b:
            assert_same(a[k], b[k], f"{path}[{k!r}]", rtol, atol)
        return
    if isinstance(b, tuple) and len(b) == 2 and isinstance(b[1], list):
        assert isinstance(a, tuple) and len(a) == 2 and a[0] == b[0], f"{path}: {a!r} != {b!r}"
        assert len(a[1]) == len(b[1]), f"{path}: length {len(a[1])} != torch {len(b[1])}"
        for i, (x, y) in enumerate(zip(a[1], b[1])):
            assert_same(x, y, f"{path}[{i}]", rtol, atol)
        return
    if isinstance(b, float) and isinstance(a, float):
        assert a == pytest.approx(b, rel=rtol, abs=atol, nan_ok=True), f"{path}: {a} != {b}"
        return
    assert a == b, f"{path}: pullback {a!r} != torch {b!r}"


def _error(fn: Callable[[], Any]) -> BaseException | None:
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the point is to catch and compare
        return e
    return None


def _strip(message: str) -> str:
    return _SUFFIX.sub("", str(message))


class Both:
    """Runs snippets on pullback and torch; see the module docstring."""

    def __init__(self, torch: Any) -> None:
        self.torch = torch

    def run(self, snippet: Callable[[Any], Any]) -> tuple[Any, Any]:
        """The raw results (pullback, torch)."""
        return snippet(pb), snippet(self.torch)

    def same(self, snippet: Callable[[Any], Any], rtol: float = 1e-5,
             atol: float = 1e-6) -> Any:
        """Run on both, assert equal normalised results, return pullback's raw result."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mine = snippet(pb)
            theirs = snippet(self.torch)
        assert_same(norm(mine), norm(theirs), rtol=rtol, atol=atol)
        return mine

    def raises(self, snippet: Callable[[Any], Any], phrase: str | None = None,
               exc: type = RuntimeError) -> str:
        """Both raise ``exc``; torch's message contains ``phrase`` (a regex) and so does
        pullback's. Without a phrase the messages must be equal. Returns pullback's text."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mine = _error(lambda: snippet(pb))
            theirs = _error(lambda: snippet(self.torch))
        assert theirs is not None, "torch did not raise: the test is wrong"
        assert isinstance(theirs, exc), f"torch raised {type(theirs).__name__}: {theirs}"
        assert mine is not None, f"pullback did not raise; torch raised {theirs!r}"
        assert type(mine).__name__ == type(theirs).__name__, (
            f"pullback raised {type(mine).__name__}: {mine}; torch {type(theirs).__name__}")
        if phrase is None:
            assert _strip(mine) == _strip(theirs), f"\npullback: {mine}\ntorch:    {theirs}"
        else:
            assert re.search(phrase, str(theirs)), f"phrase not in torch's text: {theirs}"
            assert re.search(phrase, str(mine)), f"\npullback: {mine}\ntorch:    {theirs}"
        return str(mine)

    def warnings(self, snippet: Callable[[Any], Any]) -> list:
        """Both emit the same warnings (category and text without torch's C++ suffix);
        returns them as (category name, text) pairs."""
        out = []
        for lib in (pb, self.torch):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                warnings.filterwarnings("ignore", message=".*torch.jit.script.*")
                snippet(lib)
            out.append([(w.category.__name__, _strip(w.message)) for w in caught])
        assert out[0] == out[1], f"\npullback: {out[0]}\ntorch:    {out[1]}"
        return out[0]


@pytest.fixture
def both(torch) -> Both:
    """Compare a snippet's behaviour on pullback with torch's."""
    prev_pb, prev_torch = pb.is_grad_enabled(), torch.is_grad_enabled()
    yield Both(torch)
    pb.set_grad_enabled(prev_pb)
    torch.set_grad_enabled(prev_torch)
