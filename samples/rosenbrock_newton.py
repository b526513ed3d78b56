"""Newton's method on the Rosenbrock function, with autograd's gradient and Hessian.

Shows: f(x, y) = (1 - x)**2 + 100 * (y - x**2)**2, whose minimum (1, 1) sits at the
end of a long curved valley; its gradient from pb.autograd.grad and its Hessian from
pb.autograd.functional.hessian (checked against the formula at the start); Newton steps
x <- x - t * H^-1 g (pb.linalg.solve), with the step t halved until f decreases, each
iterate printed with f and the gradient's norm, converging to (1, 1) in about twenty
steps where gradient descent from the same start is still far away after a thousand;
and the error hessian gives a function that does not return one number.

    python samples/rosenbrock_newton.py
"""

import numpy as np

import pullback as pb


def rosenbrock(v):
    x, y = v[0], v[1]
    return (1 - x) ** 2 + 100 * (y - x ** 2) ** 2


def gradient(v):
    """df/dv at v, by backpropagation (a new leaf, so nothing accumulates)."""
    v = v.detach().requires_grad_(True)
    (g,) = pb.autograd.grad(rosenbrock(v), v)
    return g


def hessian_by_hand(v):
    x, y = float(v[0]), float(v[1])
    return pb.tensor([[2 - 400 * (y - x ** 2) + 800 * x ** 2, -400 * x],
                      [-400 * x, 200.0]], dtype=pb.float64)


def newton(v, steps=50, tolerance=1e-10):
    """Damped Newton: the full step unless f would grow, then half of it, and so on."""
    for k in range(steps + 1):
        f, g = rosenbrock(v).item(), gradient(v)
        print(f"iterate {k:2d}: x = {v[0].item():+.6f}  y = {v[1].item():+.6f}  "
              f"f = {f:.3e}  |grad| = {g.norm().item():.3e}")
        if g.norm().item() < tolerance:
            return v, k
        direction = pb.linalg.solve(pb.autograd.functional.hessian(rosenbrock, v), g)
        t = 1.0
        while rosenbrock(v - t * direction).item() > f and t > 1e-8:
            t /= 2
        if t < 1:
            print(f"            step halved to t = {t:g}: the full step would raise f")
        v = v - t * direction
    return v, steps


def gradient_descent(v, steps, lr):
    for _ in range(steps):
        v = v - lr * gradient(v)
    return v


def main():
    start = pb.tensor([-1.2, 1.0], dtype=pb.float64)  # the classic start
    print(f"start: ({start[0].item()}, {start[1].item()}), f = {rosenbrock(start).item():.4f}")
    print(f"gradient at the start (autograd): {gradient(start)}")
    hessian = pb.autograd.functional.hessian(rosenbrock, start)
    print(f"Hessian at the start (autograd):\n{hessian}")
    print("Hessian equals the formula:",
          np.allclose(hessian.numpy(), hessian_by_hand(start).numpy()))

    v, k = newton(start)
    print(f"Newton's minimum: ({v[0].item():.6f}, {v[1].item():.6f}) after {k} steps")
    print("converged to (1, 1):", np.allclose(v.numpy(), [1.0, 1.0]))

    w = gradient_descent(start, 1000, 1e-3)
    print(f"gradient descent, 1000 steps of lr 1e-3: ({w[0].item():.4f}, {w[1].item():.4f}),"
          f" f = {rosenbrock(w).item():.4f}")

    try:
        pb.autograd.functional.hessian(lambda v: v ** 2, start)
    except RuntimeError as error:
        print("expected error: RuntimeError:", error)
    print("next: docs/extending.md (pb.autograd.functional: jacobian, hessian, vjp, jvp)")


if __name__ == "__main__":
    main()
