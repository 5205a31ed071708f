"""3-d convolution and pooling (functional and modules) against PyTorch 1.13: values and gradients.

float64 at rel 1e-9 / abs 1e-10 (ctorch sums the depth taps of 2-d convolutions, PyTorch runs one 3-d
kernel: the same products added in another order); float32 at rel 1e-5 / abs 1e-5 for the same reason."""
import numpy as np
import pytest
import torch
import ctorch

from conftest import both

R = np.random.RandomState(3)
TOL = {"float64": (1e-9, 1e-10), "float32": (1e-5, 1e-5)}


def case(fn, arrays, dtype):
    rtol, atol = TOL[dtype]

    def f(L):
        xs = [L.tensor(a.tolist(), dtype=getattr(L, dtype), requires_grad=True) for a in arrays]
        o = fn(L, *xs)
        w = L.tensor(np.cos(np.arange(o.numel()) * 0.37).reshape(tuple(o.shape)).tolist(), dtype=o.dtype)
        (o * w).sum().backward()
        return (o.detach(),) + tuple(x.grad for x in xs)
    both(f, rtol=rtol, atol=atol)


F = lambda L: L.nn.functional  # noqa: E731
CASES = {
    "conv3d_bias": (lambda L, x, w, b: F(L).conv3d(x, w, b), [R.randn(2, 3, 5, 6, 7), R.randn(4, 3, 2, 3, 2),
                                                                R.randn(4)]),
    "conv3d_stride_pad_dil": (lambda L, x, w: F(L).conv3d(x, w, None, (2, 1, 2), (1, 2, 0), (2, 1, 1)),
                              [R.randn(1, 2, 7, 6, 5), R.randn(3, 2, 3, 2, 2)]),
    "conv3d_same_groups": (lambda L, x, w: F(L).conv3d(x, w, None, 1, "same", 1, 2),
                           [R.randn(1, 4, 5, 5, 5), R.randn(2, 2, 2, 3, 3)]),
    "conv3d_valid": (lambda L, x, w: F(L).conv3d(x, w, padding="valid"), [R.randn(1, 2, 4, 4, 4),
                                                                          R.randn(2, 2, 3, 3, 3)]),
    "conv3d_unbatched": (lambda L, x, w: L.conv3d(x, w), [R.randn(2, 5, 5, 5), R.randn(3, 2, 3, 3, 3)]),
    "conv3d_noncontig": (lambda L, x, w: F(L).conv3d(x.transpose(2, 4), w), [R.randn(1, 2, 5, 4, 6),
                                                                             R.randn(2, 2, 2, 2, 2)]),
    "max_pool3d": (lambda L, x: F(L).max_pool3d(x, 2), [R.randn(2, 3, 4, 6, 5)]),
    "max_pool3d_ceil_pad": (lambda L, x: F(L).max_pool3d(x, 3, 2, 1, ceil_mode=True), [R.randn(1, 2, 7, 6, 5)]),
    "max_pool3d_dilation": (lambda L, x: F(L).max_pool3d(x, (2, 3, 2), (1, 2, 2), (1, 1, 0), dilation=(2, 1, 2)),
                            [R.randn(1, 2, 7, 6, 7)]),
    "max_pool3d_unbatched": (lambda L, x: L.max_pool3d(x, 2, 1), [R.randn(2, 3, 3, 3)]),
    "avg_pool3d": (lambda L, x: F(L).avg_pool3d(x, 2), [R.randn(2, 3, 4, 6, 5)]),
    "avg_pool3d_ceil_pad": (lambda L, x: F(L).avg_pool3d(x, 3, 2, 1, ceil_mode=True), [R.randn(1, 2, 7, 6, 5)]),
    "avg_pool3d_exclude_pad": (lambda L, x: F(L).avg_pool3d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
                               [R.randn(1, 2, 7, 6, 5)]),
    "avg_pool3d_divisor": (lambda L, x: F(L).avg_pool3d(x, (2, 3, 2), (1, 2, 2), (1, 1, 0), divisor_override=5),
                           [R.randn(1, 2, 7, 6, 7)]),
    "adaptive_avg_pool3d": (lambda L, x: F(L).adaptive_avg_pool3d(x, (3, 2, 4)), [R.randn(2, 3, 7, 5, 9)]),
    "adaptive_avg_pool3d_none": (lambda L, x: F(L).adaptive_avg_pool3d(x, (None, 2, 3)), [R.randn(1, 2, 3, 5, 7)]),
    "adaptive_avg_pool3d_unbatched": (lambda L, x: F(L).adaptive_avg_pool3d(x, 2), [R.randn(3, 4, 4, 4)]),
    "adaptive_max_pool3d": (lambda L, x: F(L).adaptive_max_pool3d(x, (3, 2, 4)), [R.randn(2, 3, 7, 5, 9)]),
}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_functional(name, dtype):
    fn, arrays = CASES[name]
    case(fn, arrays, dtype)


MODULES = {
    "Conv3d": lambda L: L.nn.Conv3d(2, 4, (3, 2, 2), stride=(1, 2, 1), padding=1),
    "Conv3d_nobias_groups": lambda L: L.nn.Conv3d(4, 2, 3, groups=2, bias=False),
    "Conv3d_reflect": lambda L: L.nn.Conv3d(2, 2, 3, padding=1, padding_mode="reflect"),
    "Conv3d_same": lambda L: L.nn.Conv3d(2, 3, (2, 3, 3), padding="same"),
    "MaxPool3d": lambda L: L.nn.MaxPool3d(2, stride=1),
    "AvgPool3d": lambda L: L.nn.AvgPool3d(3, stride=2, padding=1),
    "AdaptiveAvgPool3d": lambda L: L.nn.AdaptiveAvgPool3d((2, 3, 1)),
    "AdaptiveMaxPool3d": lambda L: L.nn.AdaptiveMaxPool3d(2),
}


@pytest.mark.parametrize("name", sorted(MODULES))
def test_module(name):
    # same seed: the default initialisation draws the same numbers; then forward, backward and repr
    x = R.randn(2, 4 if "groups" in name else 2, 5, 6, 5)

    def f(L):
        L.manual_seed(11)
        m = MODULES[name](L)
        xi = L.tensor(x.tolist(), requires_grad=True)
        y = m(xi)
        y.pow(2).sum().backward()
        grads = tuple(p.grad for p in m.parameters())
        return (repr(m), y.detach(), xi.grad) + grads
    both(f, rtol=1e-5, atol=1e-5)


ERRORS = {
    "conv3d_2d_input": lambda L: L.nn.functional.conv3d(L.ones(2, 3), L.ones(1, 1, 1, 1, 1)),
    "conv3d_channels": lambda L: L.nn.functional.conv3d(L.ones(1, 2, 5, 5, 5), L.ones(4, 3, 3, 3, 3)),
    "conv3d_kernel_big": lambda L: L.nn.functional.conv3d(L.ones(1, 1, 2, 2, 2), L.ones(1, 1, 3, 3, 3)),
    "conv3d_stride0": lambda L: L.nn.functional.conv3d(L.ones(1, 2, 5, 5, 5), L.ones(4, 2, 3, 3, 3), stride=0),
    "max_pool3d_pad": lambda L: L.nn.functional.max_pool3d(L.ones(1, 1, 4, 4, 4), 2, padding=2),
    "avg_pool3d_pad": lambda L: L.nn.functional.avg_pool3d(L.ones(1, 1, 4, 4, 4), 2, padding=2),
    "max_pool3d_2d": lambda L: L.nn.functional.max_pool3d(L.ones(2, 3), 2),
    "avg_pool3d_2d": lambda L: L.nn.functional.avg_pool3d(L.ones(2, 3), 2),
    "adaptive_avg_pool3d_2d": lambda L: L.nn.functional.adaptive_avg_pool3d(L.ones(2, 3), 2),
    "max_pool3d_small": lambda L: L.nn.functional.max_pool3d(L.ones(1, 1, 2, 2, 2), 3),
    "avg_pool3d_small": lambda L: L.nn.functional.avg_pool3d(L.ones(1, 1, 2, 2, 2), 3),
    "conv3d_module_groups": lambda L: L.nn.Conv3d(3, 4, 3, groups=2),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors(name):
    ec, et = both(ERRORS[name])
    assert str(ec).split("\n")[0] == str(et).split("\n")[0], "ctorch: %s\ntorch:  %s" % (ec, et)


def test_return_indices_refused():
    with pytest.raises(NotImplementedError):
        ctorch.nn.functional.max_pool3d(ctorch.ones(1, 1, 2, 2, 2), 2, return_indices=True)
