"""A custom autograd Function, checked with gradcheck and gradgradcheck.

Shows: a Function computing 3*x + 2*y + exp(x) + exp(y) with its own forward and
backward (ctx.save_for_backward, ctx.saved_tensors, the FuncBackward node); the
gradients backward gives for grad_tensors [1, 1]; gradcheck in float64 (True), and
what it says about float32 and about a wrong backward; gradgradcheck, which this
backward fails (it reuses exp(x) computed in forward, where grad is off, so its own
derivative is lost) and a version that recomputes exp(x) in backward passes; the same
Function inside pb.compile, where generated code calls its forward and backward; and the
profiler's table of one forward and backward (the Function's forward is a row named
after its class, its backward a FuncBackward node; pullback has no GPU, so use_cuda is
left out).
Seed: 003 (torch.autograd notes, sections 13 "torch.autograd.Function", 14 "gradcheck",
15 "gradgradcheck" and 16 "torch.autograd.profiler.profile").
"""

import warnings

import pullback as pb
from pullback.autograd import gradcheck, gradgradcheck


class Func(pb.autograd.Function):
    """3*x + 2*y + exp(x) + exp(y), as the seed writes it."""

    @staticmethod
    def forward(ctx, x, y):
        # the inputs are Tensors; ctx is the context, the rest of the arguments are ours
        expx = pb.exp(x)
        expy = pb.exp(y)
        result = 3 * x + 2 * y + expx + expy
        ctx.save_for_backward(expx, expy)  # keep what backward needs
        return result

    @staticmethod
    def backward(ctx, grad_output):
        # one gradient per output in, one gradient per input out
        expx, expy = ctx.saved_tensors
        grad_x = grad_output * (3 + expx)
        grad_y = grad_output * (2 + expy)
        return grad_x, grad_y


myfunc = Func.apply  # the alias the seed uses

print("The Function:")
x = pb.tensor([1., 2.], requires_grad=True)
y = pb.tensor([3., 4.], requires_grad=True)
z = myfunc(x, y)
print(z)
print(type(z.grad_fn).__name__, [type(n).__name__ for n, _ in z.grad_fn.next_functions])
z.backward(pb.tensor([1., 1.]))
print(x.grad, y.grad)

print("\ngradcheck (float64 inputs):")
pb.manual_seed(0)
iptx = pb.randn(20, dtype=pb.float64, requires_grad=True)
ipty = pb.randn(20, dtype=pb.float64, requires_grad=True)
ipt = iptx, ipty
print(gradcheck(myfunc, ipt, atol=1e-4))

print("\nfloat32 inputs get a warning (and usually fail the default tolerances):")
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    ok = gradcheck(myfunc, (iptx.float().detach().requires_grad_(),
                            ipty.float().detach().requires_grad_()), raise_exception=False)
print(ok, "|", str(caught[0].message).split(".")[0])


class WrongFunc(Func):
    @staticmethod
    def backward(ctx, grad_output):
        expx, expy = ctx.saved_tensors
        return grad_output * (3 + expx), grad_output * 2  # forgot exp(y)


print("\na wrong backward:")
small = pb.tensor([0.5], dtype=pb.float64, requires_grad=True), \
    pb.tensor([1.0], dtype=pb.float64, requires_grad=True)
try:
    gradcheck(WrongFunc.apply, small)
except pb.autograd.GradcheckError as error:
    print(type(error).__name__ + ":", error)

print("gradgradcheck:")
print(gradgradcheck(myfunc, ipt, raise_exception=False))


class Func2(pb.autograd.Function):
    """The same function, with a backward that is itself differentiable."""

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return 3 * x + 2 * y + pb.exp(x) + pb.exp(y)

    @staticmethod
    def backward(ctx, grad_output):
        x, y = ctx.saved_tensors
        return grad_output * (3 + pb.exp(x)), grad_output * (2 + pb.exp(y))


print(gradgradcheck(Func2.apply, ipt))

print("\nInside pb.compile:")


@pb.compile
def loss(x, y):
    z = Func2.apply(x, y)
    return (z * z).sum()


x.grad = y.grad = None
loss(x, y).backward()
print(x.grad, y.grad)
backward_code = str(pb.compiler.inspect(loss, x, y).backward)
print([line.strip() for line in backward_code.splitlines() if "Func2" in line])

print("\nProfiling one backward:")
x = pb.tensor([1., 2.], requires_grad=True)
y = pb.tensor([3., 4.], requires_grad=True)
grad = pb.tensor([1., 1.])
with pb.autograd.profiler.profile() as prof:
    z = myfunc(x, y)
    z.backward(grad)
print(prof.key_averages().table(sort_by="cpu_time_total"))
rows = prof.key_averages()
print("rows:", sorted(r.key for r in rows))
print("calls:", {r.key: r.count for r in rows if r.key.startswith("aten::")})
