"""Convolution, pooling and resampling layers against torch's: outputs, parameter and
input gradients for torch's weights copied across; reprs; default initialisation;
errors."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb

from .helpers import assert_same_run, copy_weights, run_both

# torch warns that padding="same" with an even kernel copies the input (it does here too)
pytestmark = pytest.mark.filterwarnings("ignore:Using padding='same':UserWarning")

R = np.random.default_rng(0)


def data(*shape):
    return R.standard_normal(shape).astype(np.float32)


CASES = {
    "conv1d": (lambda T: T.nn.Conv1d(3, 4, 3), [data(2, 3, 9)]),
    "conv1d_strided": (lambda T: T.nn.Conv1d(4, 6, 2, stride=2, padding=1, dilation=2,
                                             groups=2, bias=False), [data(2, 4, 9)]),
    "conv1d_unbatched": (lambda T: T.nn.Conv1d(3, 2, 3, padding="same"), [data(3, 8)]),
    "conv2d": (lambda T: T.nn.Conv2d(3, 4, 3, padding=1), [data(2, 3, 6, 5)]),
    "conv2d_groups": (lambda T: T.nn.Conv2d(4, 6, (3, 2), stride=(2, 1), dilation=(1, 2),
                                            groups=2), [data(2, 4, 7, 8)]),
    "conv2d_same_even": (lambda T: T.nn.Conv2d(2, 3, 4, padding="same"), [data(1, 2, 5, 6)]),
    "conv2d_valid": (lambda T: T.nn.Conv2d(2, 3, 2, padding="valid"), [data(1, 2, 5, 6)]),
    "conv2d_reflect": (lambda T: T.nn.Conv2d(2, 3, 3, padding=1, padding_mode="reflect"),
                       [data(2, 2, 5, 5)]),
    "conv2d_circular": (lambda T: T.nn.Conv2d(2, 3, 3, padding=(1, 2), padding_mode="circular"),
                        [data(2, 2, 5, 5)]),
    "conv2d_replicate_same": (lambda T: T.nn.Conv2d(2, 3, 2, padding="same",
                                                    padding_mode="replicate"), [data(1, 2, 4, 4)]),
    "conv3d": (lambda T: T.nn.Conv3d(2, 3, 2, stride=(1, 2, 1), padding=1),
               [data(1, 2, 4, 5, 3)]),
    "conv_transpose1d": (lambda T: T.nn.ConvTranspose1d(4, 6, 3, stride=2, output_padding=1,
                                                        groups=2), [data(2, 4, 5)]),
    "conv_transpose2d": (lambda T: T.nn.ConvTranspose2d(3, 2, (3, 2), stride=2, padding=1,
                                                        dilation=(1, 2)), [data(2, 3, 4, 5)]),
    "conv_transpose2d_unbatched": (lambda T: T.nn.ConvTranspose2d(3, 2, 2, bias=False),
                                   [data(3, 4, 4)]),
    "max_pool1d": (lambda T: T.nn.MaxPool1d(3, 2, padding=1), [data(2, 3, 9)]),
    "max_pool2d": (lambda T: T.nn.MaxPool2d((3, 2), stride=2, padding=1, dilation=(1, 2),
                                            ceil_mode=True), [data(2, 3, 9, 8)]),
    "avg_pool1d": (lambda T: T.nn.AvgPool1d(3, 2, padding=1, count_include_pad=False),
                   [data(2, 3, 9)]),
    "avg_pool2d": (lambda T: T.nn.AvgPool2d(3, 2, padding=1, ceil_mode=True,
                                            divisor_override=4), [data(2, 3, 9, 8)]),
    "adaptive_avg_pool1d": (lambda T: T.nn.AdaptiveAvgPool1d(4), [data(2, 3, 9)]),
    "adaptive_avg_pool2d": (lambda T: T.nn.AdaptiveAvgPool2d((4, None)), [data(2, 3, 9, 7)]),
    "adaptive_avg_pool2d_global": (lambda T: T.nn.AdaptiveAvgPool2d(1), [data(2, 3, 5, 4)]),
    "adaptive_max_pool2d": (lambda T: T.nn.AdaptiveMaxPool2d((3, 2)), [data(2, 3, 9, 7)]),
    "unfold": (lambda T: T.nn.Unfold((2, 3), padding=1, stride=2), [data(2, 3, 6, 7)]),
    "fold": (lambda T: T.nn.Fold((5, 6), 2, padding=1), [data(2, 8, 42)]),
    "pixel_shuffle": (lambda T: T.nn.PixelShuffle(2), [data(2, 8, 3, 4)]),
    "pixel_unshuffle": (lambda T: T.nn.PixelUnshuffle(2), [data(2, 2, 4, 6)]),
    "upsample_nearest": (lambda T: T.nn.Upsample(scale_factor=2), [data(2, 3, 4, 5)]),
    "upsample_nearest_1d": (lambda T: T.nn.Upsample(size=7), [data(2, 3, 4)]),
    "upsample_linear": (lambda T: T.nn.Upsample(scale_factor=1.7, mode="linear"),
                        [data(2, 3, 5)]),
    "upsample_bilinear": (lambda T: T.nn.Upsample(size=(7, 3), mode="bilinear"),
                          [data(2, 3, 4, 5)]),
    "upsample_bilinear_corners": (lambda T: T.nn.Upsample(scale_factor=1.5, mode="bilinear",
                                                          align_corners=True),
                                  [data(2, 3, 4, 5)]),
    "small_cnn": (lambda T: T.nn.Sequential(
        T.nn.Conv2d(1, 4, 3, padding=1), T.nn.ReLU(), T.nn.MaxPool2d(2),
        T.nn.Conv2d(4, 8, 3, padding=1), T.nn.ReLU(), T.nn.AdaptiveAvgPool2d(1),
        T.nn.Flatten(), T.nn.Linear(8, 3)), [data(2, 1, 8, 8)]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_layer_matches_torch(name, torch):
    make, inputs = CASES[name]
    ours, theirs = run_both(make, inputs, torch)
    assert_same_run(ours, theirs, rtol=1e-4, atol=1e-5)


REPRS = [
    lambda T: T.nn.Conv1d(4, 6, 3),
    lambda T: T.nn.Conv2d(4, 6, (3, 2), stride=2, padding=1, dilation=(1, 2), groups=2,
                          bias=False, padding_mode="reflect"),
    lambda T: T.nn.Conv2d(4, 6, 3, padding="same"),
    lambda T: T.nn.Conv3d(2, 3, 2),
    lambda T: T.nn.ConvTranspose1d(4, 6, 3, stride=2, output_padding=1),
    lambda T: T.nn.ConvTranspose2d(4, 6, 3, groups=2),
    lambda T: T.nn.MaxPool1d(3),
    lambda T: T.nn.MaxPool2d(3, 2, 1, ceil_mode=True, return_indices=True),
    lambda T: T.nn.AvgPool1d(3),
    lambda T: T.nn.AvgPool2d(3, 2, 1, ceil_mode=True, divisor_override=3),
    lambda T: T.nn.AdaptiveAvgPool1d(4),
    lambda T: T.nn.AdaptiveAvgPool2d((4, None)),
    lambda T: T.nn.AdaptiveMaxPool2d(3, return_indices=True),
    lambda T: T.nn.Unfold(2, padding=1),
    lambda T: T.nn.Fold((4, 5), 2),
    lambda T: T.nn.PixelShuffle(2),
    lambda T: T.nn.PixelUnshuffle(2),
    lambda T: T.nn.Upsample(scale_factor=2),
    lambda T: T.nn.Upsample(size=(3, 4), mode="bilinear", align_corners=True),
]


@pytest.mark.parametrize("k", range(len(REPRS)))
def test_repr_matches_torch(k, torch):
    assert repr(REPRS[k](pb)) == repr(REPRS[k](torch))


def test_default_initialisation_is_torchs():
    """kaiming_uniform_(a=sqrt(5)): weights and bias within 1/sqrt(fan_in), fan_in being
    in_channels/groups times the kernel's size (a transposed weight's dim 1 for fan_in)."""
    pb.manual_seed(0)
    conv = pb.nn.Conv2d(8, 6, 3, groups=2)
    bound = 1 / np.sqrt(4 * 9)
    for p in (conv.weight, conv.bias):
        values = p.detach().numpy()
        assert np.abs(values).max() <= bound and np.abs(values).max() > 0.7 * bound
    t = pb.nn.ConvTranspose2d(4, 6, 2)
    assert t.weight.shape == (4, 6, 2, 2)
    assert np.abs(t.bias.detach().numpy()).max() <= 1 / np.sqrt(6 * 4)


def test_max_pool_indices_match_torch(torch):
    x = data(2, 3, 7, 6)
    for T in (pb, torch):
        out = T.nn.MaxPool2d(3, 2, 1, return_indices=True)(T.tensor(x))
        ada = T.nn.AdaptiveMaxPool2d((3, 4), return_indices=True)(T.tensor(x))
        one = T.nn.MaxPool1d(2, return_indices=True)(T.tensor(x[0]))
        if T is pb:
            ours = [o.numpy() for o in (*out, *ada, *one)]
        else:
            for a, b in zip(ours, (*out, *ada, *one)):
                np.testing.assert_array_equal(a, b.numpy())


def test_conv_transpose_output_size_matches_torch(torch):
    x = data(1, 2, 4, 4)
    ours, theirs = [], []
    for T, into in ((pb, ours), (torch, theirs)):
        T.manual_seed(0)
        m = T.nn.ConvTranspose2d(2, 3, 3, stride=2)
        into.append(m(T.tensor(x), output_size=(10, 9)).shape)
    assert tuple(ours[0]) == tuple(theirs[0]) == (1, 3, 10, 9)


@pytest.mark.parametrize("make", [
    lambda T: T.nn.Conv2d(4, 6, 3, groups=3),
    lambda T: T.nn.Conv2d(4, 6, 3, groups=4),
    lambda T: T.nn.ConvTranspose2d(4, 6, 3, padding_mode="reflect"),
    lambda T: T.nn.Conv2d(4, 6, 3, stride=2, padding="same"),
])
def test_constructor_errors_match_torch(make, torch):
    with pytest.raises(ValueError) as theirs:
        make(torch)
    with pytest.raises(ValueError) as ours:
        make(pb)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("call", [
    lambda T, F: F.conv2d(T.ones(4, 9), T.ones(6, 4, 3, 3)),
    lambda T, F: F.conv2d(T.ones(2, 3, 9, 8), T.ones(6, 4, 3, 3)),
    lambda T, F: F.conv2d(T.ones(2, 4, 9, 8), T.ones(6, 4, 3, 3), groups=4),
    lambda T, F: F.conv2d(T.ones(2, 4, 9, 8), T.ones(6, 4, 13, 3)),
    lambda T, F: F.conv2d(T.ones(2, 4, 9, 8), T.ones(6, 4, 3, 3), T.ones(5)),
    lambda T, F: F.conv2d(T.ones(2, 4, 9, 8), T.ones(6, 4, 3, 3), stride=2, padding="same"),
    lambda T, F: F.conv2d(T.ones(2, 4, 9, 8), T.ones(6, 4, 3, 3), padding="foo"),
    lambda T, F: F.conv1d(T.ones(2, 4, 9, 8), T.ones(6, 4, 3)),
    lambda T, F: F.conv_transpose2d(T.ones(2, 4, 9, 8), T.ones(3, 4, 3, 3)),
    lambda T, F: F.conv_transpose2d(T.ones(2, 4, 9, 8), T.ones(4, 4, 3, 3), output_padding=2),
    lambda T, F: F.max_pool2d(T.ones(2, 4, 9, 8), 5, padding=3),
    lambda T, F: F.max_pool2d(T.ones(2, 4, 9, 8), 20),
    lambda T, F: F.avg_pool2d(T.ones(2, 4, 9, 8), 20),
    lambda T, F: F.fold(T.ones(2, 8, 5), (3, 3), 2),
    lambda T, F: F.fold(T.ones(2, 7, 4), (3, 3), 2),
    lambda T, F: F.pixel_shuffle(T.ones(2, 3, 4, 4), 2),
    lambda T, F: F.pixel_unshuffle(T.ones(2, 4, 9, 8), 2),
    lambda T, F: F.adaptive_avg_pool2d(T.ones(9), 2),
    lambda T, F: F.adaptive_max_pool2d(T.ones(4), 2),
    lambda T, F: F.max_pool1d(T.ones(4), 2),
    lambda T, F: F.avg_pool1d(T.ones(4), 2),
    lambda T, F: F.unfold(T.ones(2, 2, 2, 2, 2), 2),
    lambda T, F: F.conv_transpose1d(T.ones(2, 4, 9, 8), T.ones(4, 4, 3)),
    lambda T, F: F.max_pool2d(T.ones(2, 3, 4, 4), 2, stride=0),
    lambda T, F: F.conv2d(T.ones(2, 4, 9, 8), T.ones(6, 4, 3, 3), stride=(1, 2, 3)),
    lambda T, F: F.conv2d(T.ones(2, 3, 5, 5), T.ones(4, 3, 3, 3, dtype=T.float64)),
    lambda T, F: F.conv2d(T.ones(2, 3, 5, 5), T.ones(4, 3, 3, 3), T.ones(4, dtype=T.float64)),
])
def test_functional_errors_match_torch(call, torch):
    with pytest.raises(RuntimeError) as theirs:
        call(torch, torch.nn.functional)
    with pytest.raises(RuntimeError) as ours:
        call(pb, pb.nn.functional)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("kw", [{"scale_factor": 2, "align_corners": True}, {},
                                {"size": 3, "scale_factor": 2}])
def test_interpolate_errors_match_torch(kw, torch):
    with pytest.raises(ValueError) as theirs:
        torch.nn.functional.interpolate(torch.ones(1, 1, 4, 4), **kw)
    with pytest.raises(ValueError) as ours:
        pb.nn.functional.interpolate(pb.ones(1, 1, 4, 4), **kw)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("shape, mode", [((1, 2, 4), "bilinear"), ((1, 2, 4, 4), "linear"),
                                         ((1, 2, 4, 4), "foo"), ((4, 4), "nearest")])
def test_interpolate_mode_errors_match_torch(shape, mode, torch):
    with pytest.raises(NotImplementedError) as theirs:
        torch.nn.functional.interpolate(torch.ones(shape), scale_factor=2, mode=mode)
    with pytest.raises(NotImplementedError) as ours:
        pb.nn.functional.interpolate(pb.ones(*shape), scale_factor=2, mode=mode)
    assert str(ours.value) == str(theirs.value)


def test_cnn_trains_compiled_as_eagerly():
    """A small CNN's gradients under pb.compile and pb.grad are the eager ones."""
    pb.manual_seed(0)
    model = pb.nn.Sequential(pb.nn.Conv2d(1, 3, 3, padding=1), pb.nn.ReLU(),
                             pb.nn.MaxPool2d(2), pb.nn.Conv2d(3, 2, 2, stride=2),
                             pb.nn.Upsample(scale_factor=2, mode="bilinear"),
                             pb.nn.AvgPool2d(2), pb.nn.Flatten())
    x = pb.tensor(data(2, 1, 8, 8))

    def loss(x):
        return (model(x) ** 2).sum()

    loss(x).backward()
    want = [p.grad.numpy().copy() for p in model.parameters()]
    model.zero_grad()
    compiled = pb.compile(loss)
    for _ in range(2):
        model.zero_grad()
        compiled(x).backward()
    for p, w in zip(model.parameters(), want):
        np.testing.assert_allclose(p.grad.numpy(), w, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("make, shape", [
    (lambda T: T.nn.Conv2d(2, 4, 3, stride=2, padding=1, groups=2), (2, 2, 5, 5)),
    (lambda T: T.nn.ConvTranspose2d(2, 4, 3, stride=2, output_padding=1), (2, 2, 4, 4)),
    (lambda T: T.nn.Sequential(T.nn.Conv1d(2, 3, 2), T.nn.Tanh(), T.nn.MaxPool1d(2),
                               T.nn.Upsample(scale_factor=2, mode="linear")), (2, 2, 7)),
    (lambda T: T.nn.Sequential(T.nn.Conv2d(2, 3, 2), T.nn.Tanh(), T.nn.AvgPool2d(2, 1),
                               T.nn.AdaptiveAvgPool2d(2)), (2, 2, 6, 5)),
])
def test_gradient_penalty_matches_torch(make, shape, torch):
    """Double backward: the weights' gradient of |d sum(out^2) / d x|^2."""
    models = [make(pb), make(torch)]
    copy_weights(models[0], models[1])
    x0 = data(*shape)
    results = []
    for T, model in zip((pb, torch), models):
        x = T.tensor(x0.copy(), requires_grad=True)
        out = model(x)
        (gx,) = T.autograd.grad((out * out).sum(), x, create_graph=True)
        (gx * gx).sum().backward()
        results.append([p.grad.numpy().copy() for p in model.parameters()])
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
