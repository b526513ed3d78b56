"""What the graph looks like: leaves, requires_grad, grad_fn and next_functions.

Shows: which tensors are leaves, how requires_grad spreads to every result that
depends on a tensor that requires it, that only leaves keep .grad after
backward, the grad_fn of each result (AddBackward0, SumBackward0, MulBackward0),
and how grad_fn.next_functions links a node to the nodes of its inputs, with an
AccumulateGrad node standing for each leaf that requires grad.
Seed: 002 (CSDN "PyTorch basics (3): understanding autograd, Variable attributes").
"""

import warnings

import pullback as pb

pb.manual_seed(0)

# A leaf that requires grad, a leaf that does not, and two results.
a = pb.ones(3, 4, requires_grad=True)
b = pb.zeros(3, 4)
c = a.add(b)
d = c.sum()
d.backward()  # d is a scalar (12.), so backward() needs no gradient argument

# c and d depend on a, so they require grad too
print(a.requires_grad, b.requires_grad, c.requires_grad, d.requires_grad)
# leaves are the tensors the user created
print(a.is_leaf, b.is_leaf, c.is_leaf, d.is_leaf)
# only leaves that require grad keep their gradient; reading .grad of a
# non-leaf gives None and a warning
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    print(a.grad, b.grad, c.grad, d.grad)
for warning in caught:
    print("UserWarning:", str(warning.message).split(". ")[0] + ".")
# leaves have no grad_fn
print("\n", a.grad_fn, "\n", b.grad_fn, "\n", c.grad_fn, "\n", d.grad_fn)

# grad_fn.next_functions: the nodes that receive this node's input gradients
x = pb.ones(1)
w = pb.rand(1, requires_grad=True)
b = pb.rand(1, requires_grad=True)
y = w.mul(x)  # next_functions: (w's AccumulateGrad, 0), (None, 0) for x
z = y.add(b)  # next_functions: (y's MulBackward0, 0), (b's AccumulateGrad, 0)

print(".is_leaf")
print(x.is_leaf, w.is_leaf, b.is_leaf, y.is_leaf, z.is_leaf)
print(".requires_grad")
print(x.requires_grad, w.requires_grad, b.requires_grad, y.requires_grad, z.requires_grad)
print(".grad_fn")
print(x.grad_fn, w.grad_fn, b.grad_fn, y.grad_fn, z.grad_fn)
print(".grad_fn.next_functions")
print(y.grad_fn.next_functions)
print(z.grad_fn.next_functions)
print("z.grad_fn.next_functions[0][0] == y.grad_fn")
print(z.grad_fn.next_functions[0][0] == y.grad_fn)
print("z.grad_fn.next_functions[0][0], y.grad_fn")
print(z.grad_fn.next_functions[0][0], y.grad_fn)
# an AccumulateGrad node knows its leaf
print("AccumulateGrad.variable is w:", y.grad_fn.next_functions[0][0].variable is w)
