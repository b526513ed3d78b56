"""Complex autograd: torch's conjugate Wirtinger convention ([13.1]-[13.3], [2.15])."""

import numpy as np
import pytest

import pullback as pb


def _both(torch, fn):
    out = []
    for m in (pb, torch):
        out.append(fn(m))
    return out


def _grad(z):
    return np.asarray(z.grad.numpy() if hasattr(z.grad, "numpy") else z.grad)


@pytest.mark.parametrize("name", ["abs2", "abs", "holomorphic", "holomorphic_1j",
                                  "exp_times_z", "matmul", "div_log_sqrt"])
def test_complex_gradients_match_torch(torch, name):
    def run(m):
        if name == "matmul":
            a = m.tensor([[1 + 1j, 2 - 1j], [0.5j, 3 + 0j]], requires_grad=True)
            b = m.tensor([[1 - 2j], [2 + 0.5j]], requires_grad=True)
            (a @ b).abs().sum().backward()
            return _grad(a), _grad(b)
        z = m.tensor([1 + 2j, -0.5 + 1j], requires_grad=True)
        if name == "abs2":
            (z * z.conj()).real.sum().backward()
        elif name == "abs":
            z.abs().sum().backward()
        elif name == "holomorphic":
            (z * z).backward(m.tensor([1 + 0j, 1 + 0j]))
        elif name == "holomorphic_1j":
            (z * z).backward(m.tensor([1j, 1j]))
        elif name == "exp_times_z":
            (m.exp(z) * z).abs().sum().backward()
        else:
            (m.log(z) / m.sqrt(z)).real.sum().backward()
        return (_grad(z),)
    ours, theirs = _both(torch, run)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_real_to_complex_to_real_matches_the_real_computation():
    x = pb.tensor([1.0, 2.0], requires_grad=True)
    c = pb.complex(x, pb.zeros(2))
    (c * c).real.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0])
    assert x.grad.dtype == pb.float32


def test_implicit_gradient_of_a_complex_output_is_refused():
    z = pb.tensor(1 + 2j, requires_grad=True)
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for real "
                                           "scalar outputs but got torch.complex64"):
        (z * z).backward()


def test_complex_gradients_through_compiled_code(torch):
    f = pb.compile(lambda z: (pb.exp(z) * z).abs().sum())
    for _ in range(2):
        z = pb.tensor([1 + 1j, 2 - 1j], requires_grad=True)
        f(z).backward()
    tz = torch.tensor([1 + 1j, 2 - 1j], requires_grad=True)
    (torch.exp(tz) * tz).abs().sum().backward()
    np.testing.assert_allclose(z.grad.numpy(), tz.grad.numpy(), rtol=1e-5)
