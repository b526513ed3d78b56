"""retain_grad(): keep a non-leaf's gradient in its .grad.

Shows: a non-leaf normally gets no .grad; after c.retain_grad(), backward
stores c's gradient ([2, 2] for d = 2*c + 1) and c.retains_grad is True;
retain_grad() on a leaf does nothing (leaves keep .grad anyway); on a tensor
that does not require grad it raises.
Seeds: 003 (torch.autograd notes, section 12) and 002 (CSDN: retain_grad
"enables the .grad attribute for non-leaf Variables").
"""

import pullback as pb

a = pb.tensor([1., 2.], requires_grad=True)
b = pb.tensor([1., 2.], requires_grad=True)
c = 2 * a + 3 * b + 1
d = 2 * c + 1
c.retain_grad()
d.backward(pb.tensor([1., 1.]))
print(c.grad)
print(c.retains_grad, d.retains_grad)

# A retained gradient accumulates like a leaf's.
c = 2 * a + 3 * b + 1
c.retain_grad()
(2 * c + 1).backward(pb.tensor([1., 1.]), retain_graph=True)
(c * c).sum().backward()
print(c.grad)  # 2 + 2*c = 2 + 2*[6, 11]

# On a leaf it is a no-op: the leaf is not marked as retaining.
a.retain_grad()
print(a.retains_grad, a.is_leaf)

try:
    pb.tensor([1., 2.]).retain_grad()
except RuntimeError as error:
    print("RuntimeError:", error)
