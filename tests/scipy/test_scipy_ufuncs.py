"""scipy.special's own ufuncs called on Tensors: they run pullback.scipy.special's
functions (a graph node, eagerly and under pb.grad); one without a pullback version
names itself in the error; and pullback works without scipy installed."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest
import scipy.special as sp

import pullback as pb
from pullback.scipy import special as S

NAMES = ["gammaln", "digamma", "psi", "erf", "erfc", "erfinv", "erfcx", "expit", "logit",
         "ndtr", "log_ndtr", "ndtri", "i0", "i0e", "i1", "i1e", "gamma", "rgamma"]


@pytest.mark.parametrize("name", NAMES)
def test_scipy_ufunc_on_a_tensor_differentiates(name: str) -> None:
    x = np.array([0.15, 0.4, 0.8])
    t = pb.tensor(x, requires_grad=True)
    y = getattr(sp, name)(t)
    assert isinstance(y, pb.Tensor) and y.grad_fn is not None
    np.testing.assert_allclose(y.detach().numpy(), getattr(sp, name)(x), rtol=1e-12)
    y.sum().backward()
    want = pb.tensor(x, requires_grad=True)
    getattr(S, name)(want).sum().backward()
    np.testing.assert_array_equal(t.grad.numpy(), want.grad.numpy())


def test_binary_scipy_ufuncs_and_pb_grad() -> None:
    x, y = pb.tensor([0.5, 2.0]), pb.tensor([1.5, 0.25])

    def f(x, y):
        return (sp.xlogy(x, y) + sp.xlog1py(x, y) + sp.gammaln(x) * sp.expit(y)).sum()

    gx, gy = pb.grad(f, argnums=(0, 1))(x, y)
    xs, ys = x.clone().requires_grad_(), y.clone().requires_grad_()
    f(xs, ys).backward()
    np.testing.assert_allclose(gx.numpy(), xs.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(gy.numpy(), ys.grad.numpy(), rtol=1e-6)


def test_a_scipy_ufunc_without_a_rule_names_scipy() -> None:
    x = pb.tensor([0.5, 2.0], requires_grad=True)
    with pytest.raises(TypeError, match=r"^scipy\.special\.kv is not differentiable in "
                                        r"pullback yet.*Call it on tensor\.detach\(\)"):
        sp.kv(1.0, x)
    with pytest.raises(TypeError, match=r"^scipy\.special\.gammaln with out= is not "
                                        r"differentiable.*Use pullback\.scipy\.special\."
                                        r"gammaln instead"):
        sp.gammaln(x, out=np.zeros(2, np.float32))
    # without a gradient it runs, and gives a Tensor
    assert isinstance(sp.kv(1.0, x.detach()), pb.Tensor)
    with pytest.raises(TypeError, match=r"^numpy\.add is not differentiable"):
        np.add(x, 1.0, subok=False)  # (np.divmod, dtype=: ops/numpy_floats.py, numpy_ufuncs.py)


def test_pullback_works_without_scipy() -> None:
    code = textwrap.dedent("""
        import sys
        sys.modules["scipy"] = None          # import scipy raises ImportError
        import numpy as np, pullback as pb
        from pullback.scipy import special, stats
        from pullback.scipy.integrate import odeint
        x = pb.tensor([0.5, 2.0], dtype=pb.float64, requires_grad=True)
        (special.gammaln(x).sum() + stats.norm.logpdf(x).sum()).backward()
        print(odeint(lambda y, t: -y, np.ones(1), [0.0, 1.0])[-1, 0].round(6))
        try:
            np.add(x, 1.0, subok=False)
        except TypeError as e:
            print(str(e).split(" is")[0])
        assert "scipy.special" not in sys.modules
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["0.367879", "numpy.add"]


def test_scipy_functions_that_convert_their_arguments_name_themselves() -> None:
    import scipy.integrate
    import scipy.stats

    x = pb.tensor([1.0, 2.0], requires_grad=True)
    for call, name, use in [
        (lambda: sp.logsumexp(x), "scipy.special.logsumexp", "pullback.scipy.special.logsumexp"),
        (lambda: scipy.stats.norm.logpdf(x, 0.0, 2.0), "scipy.stats.norm.logpdf",
         "pullback.scipy.stats.norm.logpdf"),
        (lambda: scipy.stats.norm(0.0, 2.0).logpdf(x), "scipy.stats.norm.logpdf",
         "pullback.scipy.stats.norm.logpdf"),
        (lambda: scipy.stats.multivariate_normal.logpdf(x, cov=np.eye(2)),
         "scipy.stats.multivariate_normal.logpdf",
         "pullback.scipy.stats.multivariate_normal.logpdf"),
        (lambda: scipy.integrate.odeint(lambda y, t: -y, x, [0.0, 1.0]),
         "scipy.integrate.odeint", "pullback.scipy.integrate.odeint")]:
        with pytest.raises(RuntimeError, match=rf"^{name} converts its arguments to numpy "
                                               rf"arrays.*use {use} instead\. Can't call "
                                               r"numpy\(\) on Tensor that requires grad"):
            call()
    with pytest.raises(RuntimeError, match=r"^scipy\.stats\.gamma\.ppf .*pullback has no "
                                           r"version of it yet"):
        scipy.stats.gamma.ppf(x, 2.0)
    with pytest.raises(RuntimeError, match=r"^Can't call numpy\(\)"):  # torch's, elsewhere
        np.asarray(x)
