"""Anomaly detection (reference section 10), compared with torch, and its compiled form."""

from __future__ import annotations

import sys
import warnings

import numpy as np
import pytest

import pullback as pb
from pullback.autograd import anomaly_mode

pytestmark = [pytest.mark.filterwarnings("ignore:Anomaly Detection has been enabled"),
              # tracing computes the backward of sqrt at 0 on concrete values: 0/0
              pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")]

HINT_ON = ("Hint: the backtrace further above shows the operation that failed to compute its "
           "gradient. The variable in question was changed in there or anywhere later. Good "
           "luck!")


@pytest.fixture(autouse=True)
def anomaly_off():
    yield
    pb.autograd.set_detect_anomaly(False)


def _caught(fn):
    """(warnings as (category, text), the error raised or None)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            fn()
            err = None
        except RuntimeError as e:
            err = e
    return [(w.category.__name__, str(w.message)) for w in caught], err


def test_detect_anomaly_state_and_warning(both):
    def snippet(T):
        before = T.is_anomaly_enabled()
        with T.autograd.detect_anomaly():
            inside = T.is_anomaly_enabled(), T.is_anomaly_check_nan_enabled()
        with T.autograd.detect_anomaly(check_nan=False):
            no_nan = T.is_anomaly_check_nan_enabled()
        return before, inside, no_nan, T.is_anomaly_enabled()
    both.same(snippet)
    (warning,) = both.warnings(lambda T: T.autograd.detect_anomaly())
    assert warning[1].startswith("Anomaly Detection has been enabled.")


def test_detect_anomaly_is_not_a_decorator(both):
    both.raises(lambda T: T.autograd.detect_anomaly()(lambda: None),
                "object is not callable", TypeError)


def test_set_detect_anomaly_as_call_and_context(both):
    def snippet(T):
        T.autograd.set_detect_anomaly(True)
        on = T.is_anomaly_enabled()
        T.autograd.set_detect_anomaly(False)
        with T.autograd.set_detect_anomaly(True, check_nan=False):
            inside = T.is_anomaly_enabled(), T.is_anomaly_check_nan_enabled()
            x = T.tensor([0.], requires_grad=True)
            (x.sqrt() * 0).sum().backward()
        return on, inside, x.grad, T.is_anomaly_enabled(), T.is_anomaly_check_nan_enabled()
    both.same(snippet)
    assert both.warnings(lambda T: T.autograd.set_detect_anomaly(False)) == []


def test_backward_error_is_preceded_by_the_forward_traceback(torch):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        with T.autograd.detect_anomaly():
            y = x.exp()  # the line the warning names
            y.add_(1)
            y.sum().backward()
    line = snippet.__code__.co_firstlineno + 3
    for lib, name in ((pb, "ExpBackward0"), (torch, "ExpBackward0")):
        caught, err = _caught(lambda lib=lib: snippet(lib))
        assert str(err).endswith("is at version 1; expected version 0 instead. " + HINT_ON)
        texts = [t for c, t in caught if c == "UserWarning" and "Error detected" in t]
        assert len(texts) == 1
        assert texts[0].startswith(f"Error detected in {name}. Traceback of forward call that "
                                   "caused the error:\n")
        assert f'  File "{__file__}", line {line}, in snippet\n' \
               "    y = x.exp()  # the line the warning names\n" in texts[0]


def test_nan_in_backward(both):
    def snippet(T):
        x = T.tensor([0., 1.], requires_grad=True)
        with T.autograd.detect_anomaly():
            (x.sqrt() * 0).sum().backward()
    text = both.raises(snippet)
    assert text == "Function 'SqrtBackward0' returned nan values in its 0th output."

    def silent(T):
        x = T.tensor([0., 1.], requires_grad=True)
        (x.sqrt() * 0).sum().backward()
        return x.grad
    both.same(silent)


def test_nan_in_a_later_output_index(both):
    def snippet(T):
        a = T.tensor([1.], requires_grad=True)
        b = T.tensor([0.], requires_grad=True)
        with T.autograd.detect_anomaly():
            (a * b.sqrt() * 0).sum().backward()
    both.raises(snippet, r"returned nan values in its \dth output\.$")


def test_node_made_before_anomaly_mode_has_no_forward_information(both):
    def snippet(T):
        x = T.tensor([1., 2.], requires_grad=True)
        y = x.exp()
        y.add_(1)
        with T.autograd.detect_anomaly():
            y.sum().backward()
    mine, theirs = (_caught(lambda T=T: snippet(T))[0] for T in (pb, both.torch))
    expected = ("UserWarning", "Error detected in ExpBackward0. No forward pass information "
                "available. Enable detect anomaly during forward pass for more information.")
    assert expected in mine
    assert any(t.startswith(expected[1]) for _, t in theirs)


def test_traceback_is_kept_in_node_metadata(both):
    def snippet(T):
        with T.autograd.detect_anomaly():
            y = T.ones(1, requires_grad=True).exp()
        return sorted(y.grad_fn.metadata), type(y.grad_fn.metadata["traceback_"]).__name__
    both.same(snippet)


def test_custom_function_nan_and_error(both):
    def snippet(T):
        class Bad(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g * float("nan")
        with T.autograd.detect_anomaly():
            Bad.apply(T.ones(2, requires_grad=True)).sum().backward()
    text = both.raises(snippet)
    assert text == "Function 'BadBackward' returned nan values in its 0th output."


def test_anomaly_off_records_no_traceback_and_engine_replays():
    x = pb.tensor([1., 2.], requires_grad=True)
    assert x.exp().grad_fn._metadata is None
    from pullback.autograd.grad_mode import _NODE_EXTRAS
    assert "anomaly" not in _NODE_EXTRAS


def test_compiled_backward_names_the_line_inside_the_compiled_function():
    @pb.compile
    def f(x):
        y = x.sqrt()
        z = y * 0
        return z.sum()
    x = pb.tensor([0., 1.], requires_grad=True)
    f(x).backward()  # traced and run outside anomaly mode: NaN, silently
    assert np.isnan(x.grad.numpy()[0])
    with pb.autograd.detect_anomaly():
        caught, err = _caught(lambda: f(x).backward())
    assert str(err) == "Function 'CompiledFunctionBackward' returned nan values in its 0th output."
    (text,) = [t for _, t in caught if "Error detected" in t]
    line = f.fn.__code__.co_firstlineno + 2
    assert text.startswith("Error detected in CompiledFunctionBackward. Traceback of forward "
                           "call that caused the error:\n")
    assert f'  File "{__file__}", line {line}, in f\n    y = x.sqrt()\n' in text
    assert text.index("f(x).backward()") < text.index("y = x.sqrt()")  # the call, then inside


def test_compiled_backward_error_names_its_line():
    class Boom(pb.autograd.Function):
        armed = False

        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            if Boom.armed:
                raise ValueError("boom")
            return g * 2

    @pb.compile
    def f(x):
        h = x + 1
        return Boom.apply(h).sum()
    x = pb.ones(2, requires_grad=True)
    f(x).backward()
    Boom.armed = True
    with pb.autograd.detect_anomaly():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with pytest.raises(ValueError, match="boom"):
                f(x).backward()
    (text,) = [str(w.message) for w in caught if "Error detected" in str(w.message)]
    assert "return Boom.apply(h).sum()" in text


def test_grad_front_door_runs_eagerly_in_anomaly_mode():
    f = pb.grad(lambda a: (a.sqrt() * 0).sum())
    assert np.isnan(f(np.array([0., 1.]))[0])
    with pb.autograd.detect_anomaly():
        caught, err = _caught(lambda: f(np.array([0., 1.])))
    assert str(err) == "Function 'SqrtBackward0' returned nan values in its 0th output."
    assert any("(a.sqrt() * 0).sum()" in t for _, t in caught)


def test_anomaly_mode_is_process_wide():
    import threading
    seen = []
    with pb.autograd.set_detect_anomaly(True):
        t = threading.Thread(target=lambda: seen.append(pb.autograd.is_anomaly_enabled()))
        t.start()
        t.join()
    assert seen == [True]
    assert sys.modules["pullback.autograd.anomaly_mode"] is anomaly_mode


def test_nan_from_an_op_with_several_outputs(both):
    def snippet(T):
        x = T.tensor([0., 1., 4., 9.], requires_grad=True)
        with T.autograd.detect_anomaly():
            a, b = x.sqrt().split(2)
            (a * 0 + b).sum().backward()
    both.raises(snippet, r"^Function 'SqrtBackward0' returned nan values in its 0th output\.$")
