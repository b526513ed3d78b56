"""Four ways to turn gradients off.

Shows: (1) pb.no_grad() as a context manager and as a decorator; (2)
pb.set_grad_enabled(flag) as a context manager and as a plain function call;
(3) taking one tensor out: requires_grad_(False) on a leaf, or detach();
(4) pb.inference_mode(), which also marks its results as inference tensors.
In every case the result has requires_grad=False.
Seeds: 003 (torch.autograd notes, section 5), 002 (CSDN: volatile was replaced
by no_grad and set_grad_enabled) and 001 (the tutorial, "Disabling gradient
tracking").
"""

import pullback as pb

x = pb.tensor([1.], requires_grad=True)

# 1. no_grad, as a block ...
with pb.no_grad():
    y = x * 2
print(y.requires_grad)


# ... and as a decorator
@pb.no_grad()
def doubler(x):
    return x * 2


z = doubler(x)
print(z.requires_grad)

# 2. set_grad_enabled(flag): True lets gradients through, False stops them
flag = False
with pb.set_grad_enabled(flag):
    y = x * 2
print(y.requires_grad)

pb.set_grad_enabled(True)  # also works as a function
y = x * 2
print(y.requires_grad)
pb.set_grad_enabled(False)
y = x * 2
print(y.requires_grad)
pb.set_grad_enabled(True)  # turn gradients back on for the rest of the script
print(pb.is_grad_enabled())

# 3. take one tensor out of the graph
w = pb.tensor([1., 2.], requires_grad=True)
w.requires_grad_(False)  # only on a leaf
print((w * 2).requires_grad)
print((x.detach() * 2).requires_grad)

# 4. inference_mode: like no_grad, and its results are inference tensors,
# which a later graph cannot save for its backward pass
with pb.inference_mode():
    y = x * 2
print(y.requires_grad, y.is_inference())
try:
    x * y
except RuntimeError as error:
    print("RuntimeError:", error)
print((x * y.clone()).requires_grad)  # a clone is a normal tensor

# enable_grad turns gradients back on inside a no_grad block
with pb.no_grad():
    with pb.enable_grad():
        y = x * 2
print(y.requires_grad)
