"""Freezing parameters with requires_grad = False, then fine-tuning a new head.

Shows: requires_grad spreads forward (b = a + 1 requires grad because a does);
setting requires_grad = False on every parameter freezes them; a new final
layer (the "fc") whose parameters require grad makes the output require grad
again, and backward fills only the new layer's .grad; requires_grad can only
be changed on leaves.
Seed: 003 (torch.autograd notes, section 1). The seed freezes
model.parameters() of an nn.Module and replaces model.fc with nn.Linear(512, 100);
nn.Module is outside this sample set, so the model here is a dict of tensors
and F.linear.
"""

import pullback as pb
import pullback.nn.functional as F

pb.manual_seed(0)

a = pb.tensor([1.], requires_grad=True)
b = a + 1
print(b.requires_grad)  # True: b depends on a

# A small two-layer "model": its parameters are leaf tensors.
model = {
    "hidden.weight": pb.randn(8, 4, requires_grad=True),
    "hidden.bias": pb.randn(8, requires_grad=True),
    "fc.weight": pb.randn(3, 8, requires_grad=True),
    "fc.bias": pb.randn(3, requires_grad=True),
}


def forward(model, x):
    h = F.relu(F.linear(x, model["hidden.weight"], model["hidden.bias"]))
    return F.linear(h, model["fc.weight"], model["fc.bias"])


for param in model.values():
    param.requires_grad = False  # freeze every leaf parameter
x = pb.randn(2, 4)
print(forward(model, x).requires_grad)  # nothing requires grad now

# fine-tune: a new final layer; its parameters require grad
model["fc.weight"] = pb.randn(5, 8, requires_grad=True)
model["fc.bias"] = pb.zeros(5, requires_grad=True)
out = forward(model, x)
print(out.requires_grad)  # the output requires grad again, because of fc

out.sum().backward()
for name, param in model.items():
    grad = None if param.grad is None else tuple(param.grad.shape)
    print(f"{name:14s} requires_grad={param.requires_grad!s:5s} grad: {grad}")

# Only a leaf's flag can change.
try:
    out.requires_grad = False
except RuntimeError as error:
    print("RuntimeError:", error)
