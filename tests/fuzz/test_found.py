"""Programs the fuzzer found, shrunk by hand, each run in torch and in pullback.

``FIXED``: every defect found, fixed since (regression tests). A defect found and not
fixed yet goes in as a strict xfail beside a ``FOUND:`` exclusion in generator.py.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch as _torch

import pullback as pb
import pullback.nn.functional as pbF


def run(src: str, lib: str, data: dict, how: str = "eager") -> tuple:
    """(value, {name: grad}) or ("raises", exception type name) of ``f`` in ``src``,
    on ``data`` (inputs named x* require grad); ``how``: eager or compile."""
    T, F = (_torch, _torch.nn.functional) if lib == "torch" else (pb, pbF)
    env = {"T": T, "F": F, "np": np}
    exec(src, env)
    f = env["f"]
    if how == "compile":
        f = pb.compile(f)
    args = {k: T.tensor(v, requires_grad=k.startswith("x")) for k, v in data.items()}
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            out = f(*args.values())
            out = out[0] + (out[1] * out[1]).sum() if isinstance(out, tuple) else out
            if out.requires_grad:
                out.backward()
        except Exception as e:  # noqa: BLE001
            return "raises", type(e).__name__
    grads = {k: None if a.grad is None else a.grad.numpy() for k, a in args.items()}
    return (out.detach().numpy(), str(out.dtype).split(".")[-1], out.requires_grad), grads


def agree(src: str, data: dict, how: str = "eager") -> None:
    want, got = run(src, "torch", data), run(src, "pb", data, how)
    if want[0] == "raises" or got[0] == "raises":
        assert got == want
        return
    (wv, wdt, wreq), wg = want
    (gv, gdt, greq), gg = got
    np.testing.assert_allclose(gv, wv, rtol=1e-12, atol=1e-12)
    assert (gdt, greq) == (wdt, wreq)
    for k, w in wg.items():
        assert (gg[k] is None) == (w is None), k
        if w is not None:
            np.testing.assert_allclose(gg[k], w, rtol=1e-12, atol=1e-12)


NAN = np.nan
FIXED = {
    # the clamp's gradient was g * mask, NaN where g is inf or NaN outside [min, max]
    "clamp grad of inf": ("def f(x0, c1):\n    return (x0.clamp(0.0, 0.5) / c1).sum()",
                          dict(x0=np.array([-0.3, 0.2]), c1=np.array([0.0, 1.0]))),
    # softmax over a size-0 dim raised numpy's ValueError (max of an empty array)
    "softmax of empty": ("def f(x0):\n    return T.softmax(x0, dim=0).sum() + "
                         "T.log_softmax(x0, 0).sum()", dict(x0=np.zeros((0, 3)))),
    # flatten(0, 1) of an empty tensor reshaped to (-1, ...): ambiguous for numpy
    "flatten of empty": ("def f(x0):\n    return x0.flatten(0, 1).sum()",
                         dict(x0=np.zeros((2, 3, 0)))),
    # mean over an empty dim with keepdim=True lost the kept dims
    "mean keepdim of empty": ("def f(x0):\n    y = x0.mean(dim=(0, -1), keepdim=True)\n"
                              "    return T.zeros_like(y).sum() + y.dim()",
                              dict(x0=np.zeros((2, 3, 0)))),
    # y[..., :1] = v wrote all of y (the whole-tensor test read the slice as dim 0's)
    "setitem after ellipsis": ("def f(x0, x1):\n    y = x0 * 1\n    y[..., :1] = x1\n"
                               "    return (y * T.tensor([[1.0, 10.0]])).sum()",
                               dict(x0=np.array([[-1.0, -0.75]]), x1=np.array([[5.0]]))),
    # every float output of a compiled function requires grad, also one that does not
    # depend on a differentiable input
    "compile: requires_grad of outputs": (
        "def f(x0, c1):\n    return (x0.detach() * c1).sum()",
        dict(x0=np.array([1.0, 2.0]), c1=np.array([3.0, 4.0])), "compile"),
    # torch saves the exponent of 2.0 ** v and raises after a write to v; pullback not
    "eager: 2.0 ** v and a later write": (
        "def f(x0):\n    v = x0 * 1\n    p = 2.0 ** v\n    v -= 1\n    return p.sum()",
        dict(x0=np.array([0.5, 1.0])), "eager"),
    # the gradient of x ** y wrt x where y = 0 and the incoming gradient is inf:
    # torch 0, pullback NaN (near x ** y at x = 0, whose y-gradient was NaN too)
    "eager: x ** 0 under an inf gradient": (
        "def f(x0, x1):\n    return (x0 ** x1 * T.tensor([float('inf')], "
        "dtype=T.float64)).sum()", dict(x0=np.array([1.5]), x1=np.array([0.0])), "eager"),
    # y *= y: mul saved its operand y after the write had bumped y's version, so no
    # "modified by an inplace operation" (in-place nodes now save before the write)
    "eager: y *= y": ("def f(x0):\n    y = x0 + 0\n    y *= y\n    return y.sum()",
                      dict(x0=np.array([1.0, 2.0])), "eager"),
    # the refreshed expand's backward wrote its gradient through the (read-only)
    # broadcast: ValueError; the broadcast positions now add up
    "eager: write into the base of an expand": (
        "def f(x0):\n    v = x0 * 1\n    e = v.expand(3, 2)\n    v.mul_(3)\n    return e.sum()",
        dict(x0=np.array([[-0.5, 0.25]])), "eager"),
    # CopySlices asked the write's node for the old view's gradient though y needs none
    # (and the node saved nothing for it): TypeError ... 'numpy.ndarray' and 'Meta'
    "eager: y[0].mul_(x), y without grad": (
        "def f(c0, x1):\n    y = c0 + 0\n    y[0].mul_(x1)\n    return y.sum()",
        dict(c0=np.ones((3, 4)), x1=np.full(4, 2.0)), "eager"),
    # max/min over a dim saved their input (torch saves the indices), so a later write
    # to it raised "modified by an inplace operation" where torch does not
    "eager: max(dim) and a later write": (
        "def f(x0):\n    v = x0 * 1\n    m = v.max(dim=0).values\n    v -= 1\n    return m.sum()",
        dict(x0=np.array([[0.9, 1.6], [0.8, 2.0]])), "eager"),
    # torch saves the result of x ** y (PowBackward1) even when only x needs grad, and
    # raises after a write to it; pullback saved it only for y's rule
    "eager: x ** y and a later write": (
        "def f(x0, c1):\n    p = (x0 * x0 + 0.25).pow(c1)\n    p.sub_(1)\n    return p.sum()",
        dict(x0=np.array([0.5]), c1=np.array([1.75])), "eager"),
    # torch's view (and reshape) of a non-contiguous tensor is a view where the strides
    # allow one; pullback's view raised (and its reshape copied)
    "eager: view of a transposed tensor": (
        "def f(x0):\n    return (x0.t().view(2, 2, 4) * T.arange(16.).reshape(2, 2, 4)).sum()",
        dict(x0=np.arange(16.0).reshape(4, 4)), "eager"),
    # sign(NaN) is 0 in torch (and so is abs's gradient at NaN); it was NaN (numpy's)
    "eager: sign and abs at NaN": (
        "def f(x0):\n    return T.sign(x0).sum() + x0.abs().sum()",
        dict(x0=np.array([NAN, -1.0])), "eager"),
    # float32 -= float64 in place gave float64 when compiled (float32 in torch): generated
    # code now writes torch's promotion of the operands and a cast to the target's dtype
    "compile: in-place keeps the dtype": (
        "def f(x0, x1):\n    v = x0 + 0\n    v -= x1\n    return v.sum()",
        dict(x0=np.array(0.25, np.float32), x1=np.array(-1.75)), "compile"),
    # a 0-d float64 times a float32 vector is float32 in torch (dimensioned tensors' dtypes
    # beat 0-d ones' of the same category), float64 in numpy and so in pullback
    "0-d tensor promotion": (
        "def f(x0, x1):\n    return (x0 * x1).sum()",
        dict(x0=np.array(1.5), x1=np.array([1.0, 2.0], np.float32))),
    # transforms/inplace.py made the out= result of `v0 = x * 2 + 1` an owned buffer
    # though v6 views it, and wrote (v0 * c1) into it before v6 was read
    "compile: inplace pass and a view": (
        "def f(x0, c1, c2):\n    v0 = x0 * 2 + 1\n    v6 = v0[:]\n"
        "    return (v0 * c1).sum() + (v6 * c2).sum()",
        dict(x0=np.array([1.0, 2.0]), c1=np.array([1.0, 10.0]), c2=np.array([100., 1000.])),
        "compile"),
    # pb.compile: TraceError "in-place mul_() on a tensor captured from outside" (the
    # tracer took tensors made by factories inside the function for captured ones)
    "compile: write into zeros_like": (
        "def f(x0):\n    y = T.zeros_like(x0)\n    y.mul_(2)\n    y += x0\n    return y.sum()",
        dict(x0=np.array([1.0, 2.0])), "compile"),
    # an in-place op under no_grad dropped the intermediate's gradient when compiled
    # (torch keeps the target's history)
    "compile: in-place under no_grad": (
        "def f(x0):\n    v = x0.clone()\n    with T.no_grad():\n        v.exp_()\n"
        "    return (v * T.tensor([1.0, 2.0], dtype=T.float64)).sum()",
        dict(x0=np.array([0.5, -0.25])), "compile"),
    # a write to v after d = v.detach() was not seen by d when compiled
    "compile: detach alias": (
        "def f(x0):\n    v = x0 * 2\n    d = v.detach()\n    v += 1\n    return d.sum() + v.sum()",
        dict(x0=np.array([1.0, 2.0])), "compile"),
    # a view whose base was written is read anew from the base (view_chain) where it is
    # next used: under no_grad, and that value then serves every later use, gradient-free
    "compile: stale view first read under no_grad": (
        "def f(x0, x1):\n    v0 = x0 * 1\n    v1 = v0[0]\n    v0[1] = x1\n"
        "    with T.no_grad():\n        v2 = v1 + 1\n    return (v1 * 2).sum() + v0.sum()",
        dict(x0=np.array([1.3, 1.7]), x1=np.array(0.87)), "compile"),
    # torch: "Index put requires the source and destination dtypes match"; pullback cast it
    "eager: index put of another dtype": (
        "def f(x0, x1):\n    v = x0 * 1\n    v[[0, 1]] = x1\n    return v.sum()",
        dict(x0=np.array([1.0, 2.0, 3.0]), x1=np.array([5.0, 6.0], np.float32)), "eager"),
    # v.detach_() inside pb.compile: the gradient still flowed through v (the tracer was
    # not told; detach() was)
    "compile: detach_ in place": (
        "def f(x0):\n    v = x0 * 2\n    v.detach_()\n    return (v * x0).sum()",
        dict(x0=np.array([1.0, 2.0]))),
    # x[:, :, [1, 1]] was laid out as numpy lays it out (not C order), so a flatten of
    # it copied where torch's is a view, and a later write into it was not seen
    "eager: flatten of an advanced index is a view": (
        "def f(x0, c1):\n    v6 = x0[:, :, [1, 1]]\n    v10 = v6.flatten()\n    v6 -= c1\n"
        "    return (v10 * T.arange(18.0, dtype=T.float64)).sum()",
        dict(x0=np.arange(18.0).reshape(3, 3, 2), c1=np.array(1.5))),
    # cat left a 1-d empty tensor (which torch's cat skips) out of its node: its .grad
    # was None, torch's an empty tensor, and an empty slice joined to others lost its
    # requires_grad
    "eager: cat of a 1-d empty tensor": (
        "def f(x0, x1, c2):\n    v0 = x0[1:3]\n    v1 = T.cat((v0, c2), dim=0)\n"
        "    return (T.cat([x1, v0], -1) * 2).sum() + (v1 * 3).sum()",
        dict(x0=np.array([0.55]), x1=np.array([0.9, 0.2]), c2=np.array([0.5]))),
    # torch saves prod's result (g * result / x) and raises after a write to it;
    # pullback's rule read x only
    "eager: prod and a later write": (
        "def f(x0):\n    p = x0.prod()\n    p.mul_(2)\n    return p.sum()",
        dict(x0=np.array([1.5, 2.0])), "eager"),
    # torch's lerp wants one dtype: "expected dtype double for `end` but got dtype float"
    "eager: lerp of two dtypes": (
        "def f(x0, x1):\n    return T.lerp(x0, x1, 0.3).sum()",
        dict(x0=np.array([1.0, 2.0]), x1=np.array([0.5, 1.0], np.float32)), "eager"),
}

#: defects found and not fixed yet, each kept out of the programs by a FOUND: exclusion
FOUND = {
    # torch's GatherBackward0 saves self (its formula reads self's sizes) and refuses a
    # backward after a write to it; pullback's take_along saves only the index
    "gather of a value written later": (
        "def f(x0, i1):\n    v = x0 * 2\n    g = T.gather(v, 0, i1)\n    v.add_(1.0)\n"
        "    return (g * g).sum()",
        dict(x0=np.array([1.5, -0.5]), i1=np.array([0, 0, 1])), "eager"),
    # pb.compile refuses the write into its argument (TraceError) where torch refuses the
    # write into a multi-output view (RuntimeError)
    "split piece of an argument": (
        "def f(x0):\n    v0, = x0.split(1, 0)\n    with T.no_grad():\n"
        "        v0[..., 1:].add_(1.0)\n    return (v0 * 2).sum()",
        dict(x0=np.array([[0.5, 1.0, 2.0]])), "compile"),
}


@pytest.mark.parametrize("name", FOUND)
@pytest.mark.xfail(strict=True, reason="found by the fuzzer, not fixed yet")
def test_found(name):
    src, data, how = FOUND[name]
    agree(src, data, how)


@pytest.mark.parametrize("name", FIXED)
def test_fixed(name):
    src, data, *how = FIXED[name]  # (an entry found in one mode names it)
    for mode in how or ("eager", "compile"):
        agree(src, data, mode)


def test_flatten_of_one_dim_returns_the_tensor_itself(torch):
    """torch's flatten returns the tensor itself when start_dim == end_dim."""
    for T in (torch, pb):
        x = T.tensor(np.ones(3), requires_grad=True) * 2
        assert x.flatten() is x and x.flatten(0, 0) is x
