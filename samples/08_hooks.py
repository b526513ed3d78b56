"""Tensor hooks: see or replace a gradient as backward computes it.

Shows: register_hook(fn) calls fn(grad) each time the tensor's gradient is
computed; returning a tensor replaces the gradient (doubling it gives v.grad =
[2, 2, 2]); returning None just looks (printing c's gradient [2, 2]);
handle.remove() takes the hook off; a tensor that does not require grad
cannot have a hook.
Seeds: 000 (torch.autograd API docs, Variable.register_hook example) and
003 (torch.autograd notes, section 11).
"""

import pullback as pb

# Replace the gradient: the hook doubles it.
v = pb.tensor([0., 0., 0.], requires_grad=True)
h = v.register_hook(lambda grad: grad * 2)  # double the gradient
v.backward(pb.tensor([1., 1., 1.]))
print(v.grad.data)
h.remove()  # removes the hook

# Once removed, the hook no longer runs.
v.grad = None
v.backward(pb.tensor([1., 1., 1.]))
print(v.grad)


# Look at a non-leaf's gradient on its way through.
def hook_func(grad):  # a hook receives one argument: the gradient
    print(grad)


a = pb.tensor([1., 2.], requires_grad=True)
b = pb.tensor([1., 2.], requires_grad=True)
c = 2 * a + 3 * b + 1
d = 2 * c + 1
hook = c.register_hook(hook_func)  # register a hook on c
d.backward(pb.tensor([1., 1.]))  # the hook runs and prints c's gradient
hook.remove()

# Hooks need a tensor that requires grad.
try:
    pb.tensor([1., 2.]).register_hook(hook_func)
except RuntimeError as error:
    print("RuntimeError:", error)
