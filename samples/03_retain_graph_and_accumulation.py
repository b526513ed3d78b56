"""Backward twice: retain_graph=True, and gradients that add up in .grad.

Shows: a backward pass frees the graph's saved values, so a second backward
raises unless the first one passed retain_graph=True; every backward adds into
the leaves' .grad (1 -> 2 -> 3), so you zero it (or set it to None) between
steps; rebuilding the graph is the other way to backward again.
Seeds: 002 (CSDN, the retain_variables example: w.mul(x).sum() twice) and
001 (the tutorial's "Tensor gradients and Jacobian products" part).
"""

import pullback as pb

pb.manual_seed(0)

x = pb.ones(3)
w = pb.rand(3, requires_grad=True)
y = w.mul(x)
z = y.sum()

z.backward(retain_graph=True)  # keep the graph's saved values for another pass
print(w.grad)
z.backward()  # the second pass adds to the first one
print(w.grad)

# The graph is freed now: a third pass has nothing to work with.
try:
    z.backward()
except RuntimeError as error:
    print("RuntimeError:", error)

# Building the graph again works, and the gradient keeps accumulating.
y = w.mul(x)
z = y.sum()
z.backward()
print(w.grad)

# Zero the gradient before the next step (or set w.grad = None).
w.grad.zero_()
print(w.grad)

# The tutorial's Jacobian-product example: out is not a scalar, so backward
# takes a gradient of out's shape and computes v^T . J.
inp = pb.eye(4, 5, requires_grad=True)
out = (inp + 1).pow(2).t()
out.backward(pb.ones_like(out), retain_graph=True)
print(f"First call\n{inp.grad}")
out.backward(pb.ones_like(out), retain_graph=True)
print(f"\nSecond call\n{inp.grad}")
inp.grad.zero_()
out.backward(pb.ones_like(out), retain_graph=True)
print(f"\nCall after zeroing gradients\n{inp.grad}")
