"""The first gradient: a one-layer network, its loss, and d(loss)/dw, d(loss)/db.

Shows: parameters created with requires_grad=True, the grad_fn of each result
(AddBackward0, BinaryCrossEntropyWithLogitsBackward0), loss.backward() filling
w.grad and b.grad, and two ways to stop tracking: pb.no_grad() and detach().
Seed: 001 (the "Automatic differentiation with torch.autograd" tutorial).
"""

import pullback as pb
import pullback.nn.functional as F

pb.manual_seed(0)

x = pb.ones(5)  # input tensor
y = pb.zeros(3)  # expected output
w = pb.randn(5, 3, requires_grad=True)
b = pb.randn(3, requires_grad=True)
z = pb.matmul(x, w) + b
loss = F.binary_cross_entropy_with_logits(z, y)

# Tensors, functions and the computational graph
print(f"Gradient function for z = {z.grad_fn}")
print(f"Gradient function for loss = {loss.grad_fn}")

# Computing gradients
loss.backward()
print(w.grad)
print(b.grad)
# x is all ones, so every row of w.grad equals b.grad
print("each row of w.grad equals b.grad:", w.grad.tolist() == [b.grad.tolist()] * 5)

# Disabling gradient tracking
z = pb.matmul(x, w) + b
print(z.requires_grad)

with pb.no_grad():
    z = pb.matmul(x, w) + b
print(z.requires_grad)

z = pb.matmul(x, w) + b
z_det = z.detach()
print(z_det.requires_grad)
