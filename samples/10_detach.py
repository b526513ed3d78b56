"""detach() and detach_(): values without history.

Shows: c.detach() returns a new tensor with the same values ([6, 11]) and
requires_grad=False; detach_() does the same to the tensor itself and returns
it (cc is c); x.detach() equals x element by element; the detached tensor
shares memory with the original, so writing to it changes both.
Seeds: 003 (torch.autograd notes, sections 7 and 8), 004 (notebook, detach)
and 000 (API docs: "the returned Variable uses the same data tensor").
"""

import pullback as pb

a = pb.tensor([1., 2.], requires_grad=True)
b = pb.tensor([1., 2.], requires_grad=True)

# detach: a new tensor, out of the graph
c = 2 * a + 3 * b + 1
cc = c.detach()
print(cc.requires_grad)
print(cc)

# detach_: the tensor itself leaves the graph
c = 2 * a + 3 * b + 1
cc = c.detach_()
print(cc is c)  # an in-place operation
print(cc.requires_grad, cc.is_leaf)
print(cc)

# the notebook's check: same values, only x requires grad
x = pb.tensor([1., 2., 3.], requires_grad=True)
y = x.detach()
print(y.requires_grad)
print(x.requires_grad)
print(x.eq(y).all())
with pb.no_grad():
    print((x ** 2).requires_grad)

# detach shares memory: an in-place change to y shows in x
y.zero_()
print(x)
