"""pb.autograd.grad: gradients returned, not stored, and for non-leaves too.

Shows: with c = 2*a + 3*b + 1 and d = 2*c + 1, autograd.grad(d, (a, b, c), v)
returns (4, 4), (6, 6) and (2, 2): c is not a leaf and still gets its
gradient; nothing is written to a.grad or b.grad; the graph is freed after
the call, so asking again raises unless retain_graph=True.
Seeds: 003 (torch.autograd notes, section 4) and 002 (CSDN: "use autograd.grad
or a hook to get a non-leaf's gradient").
"""

import pullback as pb

a = pb.tensor([1., 2.], requires_grad=True)
b = pb.tensor([1., 2.], requires_grad=True)
c = 2 * a + 3 * b + 1
d = 2 * c + 1
grad = pb.tensor([1., 1.])
print(pb.autograd.grad(d, (a, b, c), grad))  # a non-leaf's gradient too
print((a.grad, b.grad))  # grad() does not write .grad

# one forward pass, one backward pass
try:
    pb.autograd.grad(d, a, grad)
except RuntimeError as error:
    print("RuntimeError:", error)

# keep the graph to ask more than once
d = 2 * (2 * a + 3 * b + 1) + 1
print(pb.autograd.grad(d, a, grad, retain_graph=True))
print(pb.autograd.grad(d, b, grad))

# an input the output does not depend on: an error, or None with allow_unused
e = a * 2
try:
    pb.autograd.grad(e.sum(), (a, b))
except RuntimeError as error:
    print("RuntimeError:", error)
print(pb.autograd.grad((a * 2).sum(), (a, b), allow_unused=True))
