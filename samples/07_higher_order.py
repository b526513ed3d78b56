"""create_graph=True: differentiate a gradient again.

Shows: autograd.grad(..., create_graph=True) returns a gradient that has its
own grad_fn, so it can be differentiated again: for y = x**3 the first,
second and third derivatives are 3x^2, 6x and 6; without create_graph the
gradient is a plain tensor with no history.
Seed: 000 (torch.autograd API docs: "create_graph (bool) - if True, the graph of
the derivative is constructed, allowing higher order derivatives").
"""

import pullback as pb

x = pb.tensor([1., 2., 3.], requires_grad=True)
y = (x ** 3).sum()

(dy,) = pb.autograd.grad(y, x, create_graph=True)
print("dy/dx    =", dy)  # 3x^2, and it has a grad_fn
(d2y,) = pb.autograd.grad(dy.sum(), x, create_graph=True)
print("d2y/dx2  =", d2y)  # 6x
(d3y,) = pb.autograd.grad(d2y.sum(), x)
print("d3y/dx3  =", d3y)  # 6

# without create_graph the result has no history
(plain,) = pb.autograd.grad((x ** 3).sum(), x)
print(plain, plain.requires_grad)

# A gradient of a gradient, as used by gradient penalties:
# the squared norm of dy/dx, differentiated with respect to x.
(dy,) = pb.autograd.grad((x ** 3).sum(), x, create_graph=True)
penalty = (dy ** 2).sum()
penalty.backward()
print(x.grad)  # d/dx sum(9x^4) = 36x^3
