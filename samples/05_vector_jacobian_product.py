"""backward() computes a vector-Jacobian product.

Shows: out = mean(x * x) is a scalar with grad_fn MeanBackward0, and its
backward gives x.grad = x / 2; for a non-scalar y = x * x, y.backward(v) gives
v^T . J, so with v = [1, 1/2, 1/3] and x = [1, 2, 3] you get x.grad = [2, 2, 2];
without v, a non-scalar output raises.
Seed: 004 (torch.autograd notebook, "Tensor" and "vector-Jacobian product").
"""

import pullback as pb

x = pb.tensor([[1., 2.], [3., 4.]])
x.requires_grad_(True)
out = pb.mean(x * x)
print(out)
print(out.grad_fn)

out.backward()
print(x.grad)  # d mean(x^2) / dx = 2x / 4
print(x.data)

# y = x * x has the Jacobian diag(2x); backward(v) gives v^T . J = 2 * x * v
x = pb.tensor([1., 2., 3.], requires_grad=True)
y = x * x
v = pb.tensor([1., 1 / 2., 1 / 3.])
y.backward(v)
print(x.grad)

# a non-scalar output needs the vector v
try:
    (x * x).backward()
except RuntimeError as error:
    print("RuntimeError:", error)
