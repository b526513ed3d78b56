"""Compiling a function: pb.compile, pb.value_and_grad, and the code they generate.

Shows: a function decorated with @pb.compile is traced on its first call and
runs generated numpy code after that (the second call is a cache hit); its
output's grad_fn is one CompiledFunctionBackward node, and .backward() through
it gives the same gradients as eager code. pb.value_and_grad takes numpy arrays
and returns numpy arrays, with no Tensors or graph at all. Last, what the
compiler made: the traced IR, the generated forward and backward functions,
and the values the forward keeps for the backward.
Seed: 001 (the first-gradient example z = x @ w + b, compiled), plus a small MLP.
"""

import numpy as np

import pullback as pb
import pullback.nn.functional as F

pb.manual_seed(0)


# 1. The seed example, compiled
@pb.compile
def seed_loss(x, w, b, y):
    z = x @ w + b
    loss = F.binary_cross_entropy_with_logits(z, y)
    return loss


x = pb.ones(5)  # input tensor
y = pb.zeros(3)  # expected output
w = pb.randn(5, 3, requires_grad=True)
b = pb.randn(3, requires_grad=True)

loss = seed_loss(x, w, b, y)  # first call: traced, then compiled
loss = seed_loss(x, w, b, y)  # second call: runs the generated code
print("loss:", loss)
print("cache:", seed_loss.cache.info)
loss.backward()
print("w.grad:", w.grad)
print("b.grad:", b.grad)

w_eager, b_eager = w.detach().requires_grad_(), b.detach().requires_grad_()
F.binary_cross_entropy_with_logits(x @ w_eager + b_eager, y).backward()
print("same as eager:", np.allclose(w.grad.numpy(), w_eager.grad.numpy()),
      np.allclose(b.grad.numpy(), b_eager.grad.numpy()))


# 2. A small MLP: tanh hidden layer, cross-entropy loss
def mlp_loss(x, w1, b1, w2, b2, target):
    hidden = pb.tanh(x @ w1 + b1)
    logits = hidden @ w2 + b2
    return F.cross_entropy(logits, target)


inputs = pb.randn(4, 6)
target = pb.tensor([0, 2, 1, 1])
params = [(pb.randn(6, 8) * 0.5).requires_grad_(), pb.zeros(8, requires_grad=True),
          (pb.randn(8, 3) * 0.5).requires_grad_(), pb.zeros(3, requires_grad=True)]

compiled_mlp = pb.compile(mlp_loss)
for step in range(2):
    out = compiled_mlp(inputs, *params, target)
    print(f"MLP call {step + 1}: loss {out.item():.4f}, grad_fn {out.grad_fn.name()}")
print("cache:", compiled_mlp.cache.info)
out.backward()
eager = [p.detach().requires_grad_() for p in params]
mlp_loss(inputs, *eager, target).backward()
print("MLP grads same as eager:",
      all(np.allclose(p.grad.numpy(), q.grad.numpy(), atol=1e-6) for p, q in zip(params, eager)))


# 3. pb.value_and_grad: numpy arrays in, numpy arrays out
# (seed_loss.__wrapped__ is the undecorated function, as with functools.wraps)
seed_value_and_grad = pb.value_and_grad(seed_loss.__wrapped__, argnums=(1, 2))
value, (gw, gb) = seed_value_and_grad(x.numpy(), w.detach().numpy(), b.detach().numpy(),
                                      y.numpy())
print("seed example:", f"{float(value):.4f}", type(gw).__name__, type(gb).__name__,
      "same as .backward():", np.allclose(gw, w.grad.numpy()), np.allclose(gb, b.grad.numpy()))

arrays = [p.detach().numpy() for p in params]
loss_and_grads = pb.value_and_grad(mlp_loss, argnums=(1, 2, 3, 4))
value, grads = loss_and_grads(inputs.numpy(), *arrays, target.numpy())
value, grads = loss_and_grads(inputs.numpy(), *arrays, target.numpy())
print("value:", f"{float(value):.4f}", np.asarray(value).dtype)
print("grads:", [(type(g).__name__, g.shape) for g in grads])
print("same as .backward():",
      all(np.allclose(g, p.grad.numpy(), atol=1e-6) for g, p in zip(grads, params)))
print("cache:", loss_and_grads.cache.info)


# 4. What the compiler made for the seed example
info = pb.compiler.inspect(seed_loss, x, w, b, y)
print("\n# IR of the traced forward")
print(info.ir)
print("\n# generated forward")
print(info.forward)
print("# generated backward")
print(info.backward)
print("# values the forward keeps for the backward")
print(info.saved_report())
print("\n# MLP: values kept for the backward")
print(pb.compiler.inspect(compiled_mlp, inputs, *params, target).saved_report())
