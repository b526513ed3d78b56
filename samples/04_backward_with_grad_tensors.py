"""pb.autograd.backward(c, grad_tensors=...) and Tensor.backward(gradient).

Shows: c = 2*a + 3*b + 1 is not a scalar, so backward needs one gradient per
element (grad_tensors); a.grad = 2 and b.grad = 3; c is not a leaf, so c.grad
stays None (with a warning); the graph is freed after one pass, so a second
pass raises; Tensor.backward(gradient) is the same call; with
retain_graph=True gradients accumulate, so zero them between passes.
Seeds: 003 (torch.autograd notes, sections 3, 6, 9 and 10) and 002 (CSDN,
c.backward(torch.ones(a.size())) for a non-scalar c).
"""

import warnings

import pullback as pb

a = pb.tensor([1., 2.], requires_grad=True)
b = pb.tensor([1., 2.], requires_grad=True)
c = 2 * a + 3 * b + 1
grad = pb.tensor([1., 1.])
pb.autograd.backward(c, grad_tensors=grad)
print(a.grad)
print(b.grad)

# a non-leaf does not store its gradient
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    print(c.grad)
for warning in caught:
    print("UserWarning:", str(warning.message).split(". ")[0] + ".")

# the graph was freed by the first pass
try:
    pb.autograd.backward(c, grad_tensors=grad)
except RuntimeError as error:
    print("RuntimeError:", error)

# leaves and non-leaves (section 10)
print(c.is_leaf, a.is_leaf)

# A scalar output needs no gradient: a 1 is implied.
a.grad = None
(2 * a).sum().backward()
print(a.grad)

# Tensor.backward(gradient) is pb.autograd.backward(tensor, gradient) (section 6).
# With retain_graph=True the graph survives, and each pass adds into .grad.
a.grad = None
c = 2 * a + 3 * b + 1
c.backward(pb.ones(a.size()), retain_graph=True)
print(a.grad)
c.backward(pb.ones(a.size()))
print(a.grad)
a.grad.zero_()
print(a.grad)
