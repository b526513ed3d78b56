"""Every sample in samples/ runs, exits 0 and prints its key results.

The samples are what a new user runs first, so they must not rot: each one
runs in a subprocess (as a user would run it) and its output is checked for
the numbers and names its walkthrough prints.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
SECOND_TIME = "Trying to backward through the graph a second time"

# Lines (or fragments of lines) each sample must print, in this order.
EXPECTED: dict[str, list[str]] = {
    "01_first_gradient.py": [
        "Gradient function for z = <AddBackward0 object at 0x",
        "Gradient function for loss = <BinaryCrossEntropyWithLogitsBackward0 object at 0x",
        "each row of w.grad equals b.grad: True",
        "True\nFalse\nFalse",
    ],
    "02_graph_anatomy.py": [
        "True False True True\nTrue True False False",
        "tensor([[1., 1., 1., 1.],",
        "None None None",
        "UserWarning: The .grad attribute of a Tensor that is not a leaf Tensor is being accessed.",
        "<AddBackward0 object at", "<SumBackward0 object at",
        ".is_leaf\nTrue True True False False",
        ".requires_grad\nFalse True True True True",
        "None None None <MulBackward0 object at",
        "((<AccumulateGrad object at", "(None, 0))",
        "((<MulBackward0 object at", "z.grad_fn.next_functions[0][0] == y.grad_fn\nTrue",
        "AccumulateGrad.variable is w: True",
    ],
    "03_retain_graph_and_accumulation.py": [
        "tensor([1., 1., 1.])\ntensor([2., 2., 2.])", f"RuntimeError: {SECOND_TIME}",
        "tensor([3., 3., 3.])\ntensor([0., 0., 0.])",
        "First call\ntensor([[4., 2., 2., 2., 2.],", "Second call\ntensor([[8., 4., 4., 4., 4.],",
        "Call after zeroing gradients\ntensor([[4., 2., 2., 2., 2.],",
    ],
    "04_backward_with_grad_tensors.py": [
        "tensor([2., 2.])\ntensor([3., 3.])\nNone\nUserWarning:", f"RuntimeError: {SECOND_TIME}",
        "False True\ntensor([2., 2.])\ntensor([2., 2.])\ntensor([4., 4.])\ntensor([0., 0.])",
    ],
    "05_vector_jacobian_product.py": [
        "tensor(7.5000, grad_fn=<MeanBackward0>)", "<MeanBackward0 object at",
        "tensor([[0.5000, 1.0000],\n        [1.5000, 2.0000]])", "tensor([2., 2., 2.])",
        "RuntimeError: grad can be implicitly created only for scalar outputs",
    ],
    "06_autograd_grad.py": [
        "(tensor([4., 4.]), tensor([6., 6.]), tensor([2., 2.]))\n(None, None)",
        f"RuntimeError: {SECOND_TIME}", "(tensor([4., 4.]),)\n(tensor([6., 6.]),)",
        "appears to not have been used in the graph", "(tensor([2., 2.]), None)",
    ],
    "07_higher_order.py": [
        "dy/dx    = tensor([ 3., 12., 27.], grad_fn=<MulBackward0>)",
        "d2y/dx2  = tensor([ 6., 12., 18.], grad_fn=<MulBackward0>)",
        "d3y/dx3  = tensor([6., 6., 6.])", "tensor([ 3., 12., 27.]) False",
        "tensor([ 36., 288., 972.])",
    ],
    "08_hooks.py": [
        "tensor([2., 2., 2.])\ntensor([1., 1., 1.])\ntensor([2., 2.])",
        "RuntimeError: cannot register a hook on a tensor that doesn't require gradient",
    ],
    "09_retain_grad.py": [
        "tensor([2., 2.])\nTrue False\ntensor([14., 24.])\nFalse True",
        "RuntimeError: can't retain_grad on Tensor that has requires_grad=False",
    ],
    "10_detach.py": [
        "False\ntensor([ 6., 11.])\nTrue\nFalse True\ntensor([ 6., 11.])",
        "False\nTrue\ntensor(True)\nFalse\ntensor([0., 0., 0.], requires_grad=True)",
    ],
    "11_turning_gradients_off.py": [
        "False\nFalse\nFalse\nTrue\nFalse\nTrue\nFalse\nFalse\nFalse True",
        "RuntimeError: Inference tensors cannot be saved for backward.", "True\nTrue",
    ],
    "12_freezing_parameters.py": [
        "True\nFalse\nTrue",
        "hidden.weight  requires_grad=False grad: None",
        "fc.weight      requires_grad=True  grad: (5, 8)",
        "fc.bias        requires_grad=True  grad: (5,)",
        "RuntimeError: you can only change requires_grad flags of leaf variables.",
    ],
    "13_in_place_checks.py": [
        "0\n1\nRuntimeError: one of the variables needed for gradient computation has been "
        "modified by an inplace operation: [torch.FloatTensor [3]], which is output 0 of Exp, "
        "is at version 1; expected version 0 instead.",
        "tensor([2., 2., 2.])",
        "RuntimeError: a leaf Variable that requires grad is being used in an in-place operation.",
        "tensor([0.8000, 1.8000, 2.8000], requires_grad=True) 1",
        "tensor([0., 0., 0.], grad_fn=<SigmoidBackward0>) 1",
        "which is output 0 of Sigmoid, is at version 1; expected version 0 instead.",
    ],
    "14_custom_function.py": [
        "tensor([31.8038, 75.9872], grad_fn=<FuncBackward>)\nFuncBackward ['AccumulateGrad', "
        "'AccumulateGrad']\ntensor([ 5.7183, 10.3891]) tensor([22.0855, 56.5981])",
        "gradcheck (float64 inputs):\nTrue",
        "False | Input #0 requires gradient and is not a double precision floating point",
        "GradcheckError: Jacobian mismatch for output 0 with respect to input 1,\n"
        "numerical:tensor([[4.7183]], dtype=pullback.float64)\n"
        "analytical:tensor([[2.]], dtype=pullback.float64)",
        "gradgradcheck:\nFalse\nTrue",
        "tensor([ 363.7264, 1578.8706]) tensor([1404.8088, 8601.4707])",
        "'t1 = Func2_apply.backward(custom_function, g_z)  # Func2.backward'",
        "Profiling one backward:\n---",
        "Name    Self CPU %      Self CPU   CPU total %     CPU total  CPU time avg    # of Calls",
        "Self CPU time total: ",
        "rows: ['Func', 'FuncBackward', 'aten::add', 'aten::exp', 'aten::mul', "
        "'autograd::engine::evaluate_function: FuncBackward', "
        "'autograd::engine::evaluate_function: torch::autograd::AccumulateGrad', "
        "'torch::autograd::AccumulateGrad']",
        "calls: {'aten::exp': 2, 'aten::mul': 4, 'aten::add': 5}",
    ],
    "20_compile_and_grad.py": [
        "loss: tensor(0.2011, grad_fn=<CompiledFunctionBackward>)",
        "cache: CacheInfo(hits=1, misses=1, recompiles=0, fallbacks=0, size=1)",
        "b.grad: tensor([0.0193, 0.0828, 0.0758])", "same as eager: True True",
        "MLP call 2: loss 1.6175, grad_fn CompiledFunctionBackward",
        "cache: CacheInfo(hits=1, misses=1, recompiles=0, fallbacks=0, size=1)",
        "MLP grads same as eager: True",
        "seed example: 0.2011 ndarray ndarray same as .backward(): True True",
        "value: 1.6175 float32",
        "grads: [('ndarray', (6, 8)), ('ndarray', (8,)), ('ndarray', (8, 3)), ('ndarray', (3,))]",
        "same as .backward(): True",
        "{ lambda x:f32[5] w:f32[5,3] b:f32[3] y:f32[3] .",
        "def seed_loss_forward(x, w, b, y):", "# 20_compile_and_grad.py:", ": z = x @ w + b",
        "return loss, z, y, unsqueeze", "def seed_loss_backward(z, y, unsqueeze, g_loss):",
        "# grad of: loss = F.binary_cross_entropy_with_logits(z, y)", "return g_w, g_z",
        "total 44 bytes in 3 values", "hidden       f32[4, 8]",
        "total 400 bytes in 5 values",
    ],
}


# The training samples (not numbered: the tour runs the autograd and compiler ones),
# run with few epochs: (arguments, fragments printed in this order).
TRAINING: dict[str, tuple[list[str], list[str]]] = {
    "train_mlp.py": (["--epochs", "5"], [
        "data: 720 training and 180 test points, 3 classes",
        "Sequential(\n  (0): Linear(in_features=2, out_features=64, bias=True)\n  (1): ReLU()",
        "epoch   1   eager loss 0.9310   compiled loss 0.9310",
        "epoch   5   eager loss 0.6131   compiled loss 0.6131",
        "final test accuracy (eager): ", "final test accuracy (compiled): ",
        "time per epoch (eager): ", " ms\ntime per epoch (compiled): ",
        "first epoch, compiled (includes tracing): ",
        "compiled loss cache: CacheInfo(hits=", ", misses=2, recompiles=0, fallbacks=0",
        "load_state_dict: <All keys matched successfully>",
        "reloaded model test accuracy: ",
        "expected error: RuntimeError: mat1 and mat2 shapes cannot be multiplied (4x3 and 2x64)",
        "next: docs/nn.md"]),
    # 12 epochs: the accuracy test below asserts >= 97 % for both modes
    "digits_mlp.py": (["--epochs", "12", "--plot",
                       os.path.join(tempfile.gettempdir(), "pullback_digits_mlp_loss.png")], [
        "digits: images (1797, 8, 8) pullback.float32 in [0, 1], labels (1797,) "
        "pullback.int64, 10 classes", "scikit-learn: ",
        "data: 1437 training and 360 test images, batches of 64",
        "Sequential(\n  (0): Flatten(start_dim=1, end_dim=-1)",
        "epoch   1/12", "eager loss 1.9074", "compiled loss 1.9074",
        "epoch  12/12", "final test accuracy (eager): ", "final test accuracy (compiled): ",
        "time per epoch (eager): ", " ms\ntime per epoch (compiled): ",
        "first epoch, compiled (includes tracing): ",
        "compiled loss cache: CacheInfo(hits=", ", misses=2, recompiles=0, fallbacks=0",
        "loss curve: ",
        "expected error: RuntimeError: mat1 and mat2 shapes cannot be multiplied (32x8 and "
        "64x128)", "next: samples/char_lstm.py"]),
    # 6 epochs: the accuracy test below asserts >= 97 % for both modes
    "digits_cnn.py": (["--epochs", "6", "--plot",
                       os.path.join(tempfile.gettempdir(), "pullback_digits_cnn_loss.png")], [
        "data: 1437 training and 360 test images, batches of 64",
        "(0): Conv2d(1, 16, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))",
        "(2): MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)",
        "epoch   1/6", "epoch   6/6", "final test accuracy (eager): ",
        "final test accuracy (compiled): ", "time per epoch (compiled): ",
        "compiled loss cache: CacheInfo(hits=", ", recompiles=0, fallbacks=0",
        "expected error: RuntimeError: Given groups=1, weight of size [16, 1, 3, 3], expected "
        "input[4, 8, 8, 1] to have 1 channels, but got 8 channels instead",
        "next: samples/char_lstm.py"]),
    "char_lstm.py": (["--steps", "12"], [
        "text: 3346 characters, 53 distinct, from alice_rabbit_hole.txt",
        "(lstm): LSTM(53, 128, batch_first=True)",
        "loss before training: 3.970 would be a uniform guess",
        "step    1   loss 3.959", "step   12   loss ", "first loss: 3.959   last loss: ",
        "time per step: ",
        "compiled loss cache: CacheInfo(hits=11, misses=1, recompiles=0, fallbacks=0, size=1)",
        "sampled text: 'Alice ",
        "expected error: RuntimeError: Expected hidden[0] size (1, 1, 128), got [1, 1, 7]",
        "next: "]),
    "rosenbrock_newton.py": ([], [
        "start: (-1.2, 1.0), f = 24.2000",
        "gradient at the start (autograd): tensor([-215.6000,  -88.0000], "
        "dtype=pullback.float64)",
        "Hessian at the start (autograd):\ntensor([[1330.,  480.],\n        [ 480.,  200.]], "
        "dtype=pullback.float64)", "Hessian equals the formula: True",
        "iterate  0: x = -1.200000  y = +1.000000  f = 2.420e+01  |grad| = 2.329e+02",
        "step halved to t = 0.125", "iterate 21: x = +1.000000  y = +1.000000",
        "Newton's minimum: (1.000000, 1.000000) after 22 steps", "converged to (1, 1): True",
        "gradient descent, 1000 steps of lr 1e-3: (0.3273, 0.1040), f = 0.4535",
        "expected error: RuntimeError: The Tensor returned by the function given to hessian "
        "should contain a single element", "next: docs/extending.md"]),
    # the scientific samples: plain numpy and scipy models, pullback only at the driver
    "bbvi.py": (["--steps", "100"], [
        "gradient vs central differences (same noise): max relative error ",
        "two calls of the gradient differ (fresh noise): True",
        "the generator advanced: True",
        "value under pb.value_and_grad equals eager numpy with the same seed: True",
        "and leaves the generator where the eager call does: True",
        "step    1   ELBO  -7.5995", "step   25   ELBO ", "step  100   ELBO ",
        "final ELBO (mean of 20 estimates): ", "q mean:   (", "target mean: (+0.000, +0.125)",
        "target std:  (1.500, 1.668)",
        "expected error: TypeError: RandomState.gamma: a value that needs a gradient was "
        "passed as a parameter of the draw; only normal and uniform are differentiable",
        "next: samples/gaussian_process.py"]),
    "gaussian_process.py": (["--steps", "20"], [
        "data: 30 points of sin(x) + noise of std 0.2",
        "value_and_grad returns: float64, ndarray float64 of shape (3,)",
        "gradient vs central differences: max relative error ",
        "gradient vs the slogdet spelling: max relative error ",
        "gradient vs the scipy.linalg spelling: max relative error ",
        "log likelihood at the start: -34.2133", "iteration   2   log likelihood ",
        "L-BFGS-B: CONVERGENCE", "traced once for all of them: CacheInfo(hits=",
        ", misses=1, recompiles=0, fallbacks=0, size=1)", "fitted: lengthscale ",
        "log likelihood after fitting: ", "posterior mean at x = ",
        "expected error: LinAlgError: Matrix is not positive definite",
        "next: samples/mixture_model.py"]),
    "mixture_model.py": (["--steps", "300"], [
        "data: 600 points from 3 components",
        "log likelihood per point at the true parameters: -1.8237",
        "gradient vs central differences: max relative error ",
        "step    1   log likelihood per point -2.4001", "step  300   log likelihood per point ",
        "log likelihood per point: -2.4001 at the start, ",
        "fitted above the true parameters' (the maximum likelihood of this sample is not the "
        "truth): True", "weights fitted: ", "means   fitted: ", "scales  fitted: ",
        "expected error: RuntimeError: scipy.stats.norm.logpdf converts its arguments to numpy "
        "arrays, which would drop their gradient: use pullback.scipy.stats.norm.logpdf instead",
        "next: samples/neural_ode.py"]),
    "neural_ode.py": (["--steps", "30"], [
        "data: the spiral dy/dt = y A from y0 = [2.0, 0.0] at 16 times in [0, 3.0]",
        "vector field: an MLP 2 -> 16 (tanh) -> 2, 82 parameters",
        "gradient (adjoint) vs central differences, 8 parameters, tolerances 1e-11: max "
        "relative error ", "loss at the start: 3.22783   (equals eager odeint's: True)",
        "step    1   loss 3.22783", "step   30   loss ", "loss after 30 steps: ",
        "t = 3.00   data (+1.423, -0.414)   fitted (", "next: docs/scipy.md"]),
    "fixed_point.py": (["--steps", "50"], [
        "sqrt(2) by Newton's iteration: 1.414213562373   np.sqrt: 1.414213562373",
        "first derivative:  0.353553390593   np.sqrt's: 0.353553390593",
        "second derivative: -0.088388347648   np.sqrt's: -0.088388347648",
        "the forward solve took 13 iterations", "fixed_point steps in the traced program: 1",
        "gradient vs central differences (4 entries of A): max relative error ",
        "step    1   loss 0.63399", "step   50   loss ", "loss: 0.63399 at the start, ",
        "traced once for all of them: CacheInfo(hits=50, misses=1, recompiles=0, fallbacks=0",
        "expected error: RuntimeError: fixed_point: no convergence after 100 iterations of "
        "doubling", "next: docs/extending.md"]),
    "kepler_solver.py": ([], [
        "M=0.3 e=0.10: E=0.332655  dE/dM=1.104384  dE/de=0.360641",
        "M=5.9 e=0.97: E=4.959455  dE/dM=1.310999  dE/de=-1.271190",
        "largest difference from the implicit function theorem: ",
        "traced once for every M and e: True",
        "the generated code loops: True and walks the iterations back: True",
        "a batch of orbits at once: [2.3917 0.7692 0.6254 0.7308 1.9239]",
        "the plain while loop: gradients ", "traced once: True, generated code loops: True"]),
    "dp_sgd.py": (["--epochs", "2"], [
        "per-sample gradients: w1 (128, 64, 32), b2 (128, 10); example 5 equals pb.grad on "
        "it alone: True", "epoch  2   test accuracy ", "after 2 epochs of DP-SGD",
        "traced once for every step: CacheInfo(hits=", "misses=1, recompiles=0, fallbacks=0"]),
    "ensemble.py": (["--epochs", "5"], [
        "stacked: {'0.weight': (5, 32, 64), '0.bias': (5, 32), '2.weight': (5, 10, 32), "
        "'2.bias': (5, 10)}",
        "model 3's gradient from the batched call equals its own backward(): True",
        "epoch  5   test accuracy of each model ", "traced once for every step: CacheInfo(",
        "misses=1, recompiles=0, fallbacks=0"]),
    "out_of_core_logistic.py": (["--steps", "10"], [
        "data: 200000 x 10 float64 in 4 chunks of 50000 rows",
        "the value and gradient are lazy: Array, Array of shape (10,)",
        "step 1 with Dask's progress bar:", "100% Completed", "step    1   loss 0.69315",
        "step   10   loss ", "traced once for every step: CacheInfo(hits=10, misses=1, "
        "recompiles=0, fallbacks=0", "equals numpy's on a slice that fits: True"]),
}

# training samples that need an optional dependency (skipped without it)
NEEDS = {"out_of_core_logistic.py": "dask"}

# the scientific samples' finite-difference checks, and how their objective must improve
# in the test run: (regex of the objective's first and last value, higher is better,
# least improvement, largest relative error of the gradient)
SCIENTIFIC = {
    "bbvi.py": (r"step    1   ELBO +(\S+) .*final ELBO \(mean of 20 estimates\): ([^;]+);",
                True, 6.0, 1e-6),
    "gaussian_process.py": (r"at the start: (\S+)\n.*after fitting: (\S+)", True, 20.0,
                            1e-6),
    "mixture_model.py": (r"per point: (\S+) at the start, (\S+) fitted", True, 0.5, 1e-6),
    "neural_ode.py": (r"loss at the start: (\S+) .*loss after 30 steps: (\S+)", False, 2.5,
                      1e-4),
}


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=SAMPLES, capture_output=True,
                          text=True, timeout=120)


# a training sample runs once per test session, for its printout and for its results
_run_once = functools.lru_cache(maxsize=None)(_run)


def test_every_sample_has_expectations():
    """A new sample must say here what it prints; a renamed one must be renamed here."""
    names = sorted(p.name for p in SAMPLES.glob("[0-9][0-9]_*.py"))
    assert names == sorted(EXPECTED)
    others = sorted(p.name for p in SAMPLES.glob("*.py")
                    if p.name not in EXPECTED and not p.name.startswith("_"))
    assert others == sorted(["tour.py", *TRAINING])


@pytest.mark.parametrize("name", sorted(TRAINING))
def test_training_sample_runs_and_prints_its_results(name: str):
    if name in NEEDS:
        pytest.importorskip(NEEDS[name])
    args, fragments = TRAINING[name]
    proc = _run_once(name, *args)
    assert proc.returncode == 0, f"{name} failed:\n{proc.stderr}"
    position = 0
    for fragment in fragments:
        found = proc.stdout.find(fragment, position)
        assert found >= 0, (f"{name} did not print {fragment!r} (after offset {position});"
                            f" it printed:\n{proc.stdout}")
        position = found + len(fragment)
    text = (SAMPLES / name).read_text(encoding="utf-8")
    assert text.startswith('"""') and "import pullback as pb" in text
    assert name in (SAMPLES / "README.md").read_text(encoding="utf-8")


def test_train_mlp_reaches_its_accuracy_with_the_default_epochs():
    proc = _run("train_mlp.py", "--epochs", "30")
    assert proc.returncode == 0, proc.stderr
    for mode in ("eager", "compiled"):
        line = next(ln for ln in proc.stdout.splitlines()
                    if ln.startswith(f"final test accuracy ({mode}): "))
        assert float(line.split(": ")[1].rstrip(" %")) >= 95.0


def _accuracies(stdout: str) -> list[float]:
    return [float(ln.split(": ")[1].rstrip(" %")) for ln in stdout.splitlines()
            if ln.startswith("final test accuracy (")]


def test_digits_mlp_reaches_97_percent_in_its_test_budget():
    """The test run of 12 epochs (the default 20 reach about 98 %), both modes."""
    proc = _run_once("digits_mlp.py", *TRAINING["digits_mlp.py"][0])
    assert proc.returncode == 0, proc.stderr
    accuracies = _accuracies(proc.stdout)
    assert len(accuracies) == 2 and min(accuracies) >= 97.0, proc.stdout
    losses = re.findall(r"eager loss (\S+) .*compiled loss (\S+) ", proc.stdout)
    assert len(losses) == 12 and all(a == b for a, b in losses)  # the same run twice


def test_digits_cnn_reaches_97_percent_in_its_test_budget():
    proc = _run_once("digits_cnn.py", *TRAINING["digits_cnn.py"][0])
    assert proc.returncode == 0, proc.stderr
    accuracies = _accuracies(proc.stdout)
    assert len(accuracies) == 2 and min(accuracies) >= 97.0, proc.stdout


def test_char_lstm_learns():
    proc = _run_once("char_lstm.py", *TRAINING["char_lstm.py"][0])
    assert proc.returncode == 0, proc.stderr
    first, last = re.search(r"first loss: (\S+)   last loss: (\S+)", proc.stdout).groups()
    assert float(last) < float(first) - 0.3, proc.stdout


@pytest.mark.parametrize("name", sorted(SCIENTIFIC))
def test_scientific_sample_checks_its_gradient_and_improves(name: str):
    pattern, higher, least, tolerance = SCIENTIFIC[name]
    proc = _run_once(name, *TRAINING[name][0])
    assert proc.returncode == 0, proc.stderr
    errors = re.findall(r"max relative error (\S+)", proc.stdout)
    assert errors and max(float(e) for e in errors) < tolerance, proc.stdout
    first, last = (float(v) for v in re.search(pattern, proc.stdout, re.S).groups())
    assert (last - first if higher else first - last) > least, proc.stdout


def test_kepler_solver_sample_agrees_with_the_implicit_function_theorem():
    proc = _run_once("kepler_solver.py")
    assert proc.returncode == 0, proc.stderr
    error = re.search(r"implicit function theorem: (\S+)", proc.stdout).group(1)
    assert float(error) < 1e-8, proc.stdout
    apart = re.search(r"the plain while loop: gradients (\S+) from", proc.stdout).group(1)
    assert float(apart) < 1e-12, proc.stdout


def test_fixed_point_sample_checks_its_gradient_and_learns():
    proc = _run_once("fixed_point.py", *TRAINING["fixed_point.py"][0])
    assert proc.returncode == 0, proc.stderr
    error = re.search(r"max relative error (\S+)", proc.stdout).group(1)
    assert float(error) < 1e-6, proc.stdout
    first, last = re.search(r"loss: (\S+) at the start, (\S+) after", proc.stdout).groups()
    assert float(last) < float(first) / 10, proc.stdout


def test_scientific_models_are_numpy_and_scipy_only():
    """pullback appears at the driver (pb.grad, pb.value_and_grad), not in the model."""
    for name in SCIENTIFIC:
        text = (SAMPLES / name).read_text(encoding="utf-8")
        model = text[:text.index("\ndef main(")]
        assert re.findall(r"\bpb\.|pullback", model[model.index('"""', 3) + 3:]) == \
            ["pullback"], name  # only `import pullback as pb`


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_sample_docstring_names_its_seed(name: str):
    text = (SAMPLES / name).read_text(encoding="utf-8")
    assert text.startswith('"""'), f"{name} has no module docstring"
    docstring = text[3:text.index('"""', 3)]
    assert re.search(r"Seeds?: 00[0-4]", docstring), f"{name}'s docstring names no seed"
    assert "import pullback as pb" in text and "import torch" not in text


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_sample_runs_and_prints_its_results(name: str):
    proc = _run(name)
    assert proc.returncode == 0, f"{name} failed:\n{proc.stderr}"
    position = 0
    for fragment in EXPECTED[name]:
        found = proc.stdout.find(fragment, position)
        assert found >= 0, (f"{name} did not print {fragment!r} (after offset {position});"
                            f" it printed:\n{proc.stdout}")
        position = found + len(fragment)


def test_tour_runs_every_sample_under_a_header():
    proc = _run("tour.py", "01_", "08_")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("Some samples make torch's errors and warnings happen on "
                                  "purpose")
    assert "=== 01_first_gradient.py ===\nThe first gradient:" in proc.stdout
    assert "=== 08_hooks.py ===\nTensor hooks:" in proc.stdout
    assert "BinaryCrossEntropyWithLogitsBackward0" in proc.stdout
    assert proc.stdout.rstrip().endswith("all 2 samples ran\nnext: train a model on real "
                                         "data (python samples/digits_cnn.py; samples/"
                                         "README.md lists every sample and what it teaches), "
                                         "then docs/user_guide.md")


def test_tour_includes_the_compiler_samples():
    proc = _run("tour.py", "compile")
    assert proc.returncode == 0, proc.stderr
    assert "=== 20_compile_and_grad.py ===\nCompiling a function:" in proc.stdout
    assert "CompiledFunctionBackward" in proc.stdout
    assert "all 1 samples ran\nnext: " in proc.stdout


def test_digits_loop_serves_a_convolution_too():
    """_training.py gives a CNN sample its data as (N, 1, 8, 8) images."""
    proc = _run("-c", "from _training import digits_data\n"
                "train, x_test, y_test = digits_data((1, 8, 8), batch_size=32)\n"
                "xb, yb = next(iter(train))\n"
                "print(tuple(xb.shape), tuple(yb.shape), tuple(x_test.shape), len(train))")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "(32, 1, 8, 8) (32,) (360, 1, 8, 8) 45"
