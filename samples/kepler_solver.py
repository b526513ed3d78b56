"""An iterative solver as a while loop, differentiated in reverse mode.

Kepler's equation E - e sin(E) = M gives a planet's eccentric anomaly E from its mean
anomaly M and the orbit's eccentricity e; there is no closed form, so it is solved by
Newton's iteration until the step is tiny. Written with pb.while_loop (JAX's
signature), the loop is one region of the traced program whatever the number of
iterations: pb.grad differentiates it by walking the iterations back (which JAX's
while_loop cannot), traces once for every M and e, and its generated code holds a
Python while loop. The gradients are checked against the implicit function theorem,
dE/dM = 1 / (1 - e cos E) and dE/de = sin E / (1 - e cos E), and against central
differences. The same solver written as a plain Python ``while`` loop over numpy
(no pullback in it) is converted by the compiler's source pass into the same region:
the same gradients, one trace.

    python samples/kepler_solver.py
"""

import numpy as np

import pullback as pb


def eccentric_anomaly(mean_anomaly, e):
    """E with E - e sin E = M, by Newton's iteration from E = M."""
    def not_done(state):
        E, step = state
        return np.abs(step).max() > 1e-13  # (a batch of orbits: until all converge)

    def newton(state):
        E, _ = state
        step = (E - e * np.sin(E) - mean_anomaly) / (1 - e * np.cos(E))
        return E - step, step

    E, _ = pb.while_loop(not_done, newton, (mean_anomaly, np.ones_like(mean_anomaly)))
    return E


def eccentric_anomaly_plain(mean_anomaly, e):
    """The same iteration as a plain while loop: numpy only."""
    E, step = mean_anomaly, np.ones_like(mean_anomaly)
    while np.abs(step).max() > 1e-13:
        step = (E - e * np.sin(E) - mean_anomaly) / (1 - e * np.cos(E))
        E = E - step
    return E


def main() -> None:
    grad = pb.grad(eccentric_anomaly, argnums=(0, 1))
    worst = 0.0
    for M, e in [(0.3, 0.1), (1.2, 0.5), (2.5, 0.9), (5.9, 0.97)]:
        E = eccentric_anomaly(M, e)
        dM, de = grad(M, e)
        denom = 1 - e * np.cos(E)
        h = 1e-6
        fd = (eccentric_anomaly(M + h, e) - eccentric_anomaly(M - h, e)) / (2 * h)
        worst = max(worst, abs(dM - 1 / denom), abs(de - np.sin(E) / denom), abs(dM - fd))
        print(f"M={M:.1f} e={e:.2f}: E={E:.6f}  dE/dM={dM:.6f}  dE/de={de:.6f}")
    print(f"largest difference from the implicit function theorem: {worst:.1e}")
    print(f"traced once for every M and e: {grad.cache.info.misses == 1}")
    source = pb.compiler.inspect(grad, 1.0, 0.5).forward
    print("the generated code loops:", "while True:" in source,
          "and walks the iterations back:", "range(len(" in source)
    batch = pb.grad(lambda M: eccentric_anomaly(M, 0.6).sum())(np.linspace(0.1, 6.0, 5))
    print("a batch of orbits at once:", np.round(batch, 4))

    plain = pb.grad(eccentric_anomaly_plain, argnums=(0, 1))
    cases = [(0.3, 0.1), (1.2, 0.5), (2.5, 0.9), (5.9, 0.97)]
    apart = max(abs(a - b) for M, e in cases for a, b in zip(plain(M, e), grad(M, e)))
    print(f"the plain while loop: gradients {apart:.1e} from pb.while_loop's, "
          f"traced once: {plain.cache.info.misses == 1}, generated code loops: "
          f"{'while True:' in pb.compiler.inspect(plain, 1.0, 0.5).forward}")


if __name__ == "__main__":
    main()
