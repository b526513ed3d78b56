"""In-place operations and the checks that keep gradients correct.

Shows: every tensor has a version counter (_version) that each in-place
operation bumps; backward checks that a value saved for it still has the
version it had when saved, and raises if it was modified in place (so if
there is no error, the gradient is right); an in-place change to a value that
backward does not need is fine; a leaf that requires grad cannot be modified
in place; a detached tensor shares the version counter, so modifying it in
place is caught too.
Seed: 000 (torch.autograd API docs: "In-place operations on Variables",
"In-place correctness checks" and the note on detach()).
"""

import pullback as pb

x = pb.tensor([1., 2., 3.], requires_grad=True)

# exp saves its output for backward (d exp(x) = exp(x))
y = x.exp()
print(y._version)
y.add_(1)  # in place: the saved output has changed
print(y._version)
try:
    y.sum().backward()
except RuntimeError as error:
    print("RuntimeError:", error)

# add does not save anything, so changing its output in place is fine
y = x + 1
y.mul_(2)  # mul_ by a number saves nothing from y either
y.sum().backward()
print(x.grad)

# a leaf that requires grad cannot be modified in place ...
try:
    x.add_(1)
except RuntimeError as error:
    print("RuntimeError:", error)
# ... unless gradients are off, e.g. for an optimizer step
with pb.no_grad():
    x.sub_(0.1 * x.grad)
print(x, x._version)

# a detached tensor shares data and version counter with the original
x.grad = None
y = x.sigmoid()  # sigmoid saves its output
y_detached = y.detach()
y_detached.zero_()
print(y, y._version)
try:
    y.sum().backward()
except RuntimeError as error:
    print("RuntimeError:", error)
