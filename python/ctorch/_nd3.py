"""3-d convolution and pooling, composed from the C library's 2-d ops so that autograd differentiates them.

conv3d: the output at depth d sums, over the kernel's depth taps kd, a 2-d convolution of the input slice at
depth d*stride + kd*dilation with the weight's slice kd; the slices of all output depths are folded into the
batch, so each tap is one conv2d call. Pooling is separable: max over a box is the max over depth of the 2-d
max over height and width; average pooling sums the same way and divides by a window count built from a
mask (PyTorch's count_include_pad / ceil_mode / divisor_override rules); adaptive pooling uses PyTorch's bins
floor(i*L/out) .. ceil((i+1)*L/out) per dimension. Ties in max pooling share the gradient (amax) where
PyTorch gives it to one element; with distinct values the results are the same.
"""
import builtins as _b
import math as _math


def _torch():
    import ctorch
    return ctorch


def _triple(x, what="kernel_size"):
    if isinstance(x, (tuple, list)):
        if len(x) == 1:
            return (int(x[0]),) * 3
        if len(x) != 3:
            raise RuntimeError("expected %s to be a single integer value or a list of 3 values to match the "
                               "convolution dimensions, but got %s=%d values" % (what, what, len(x)))
        return tuple(int(v) for v in x)
    if isinstance(x, bool) or not isinstance(x, int):
        raise TypeError("%s must be int or tuple of ints, not %s" % (what, type(x).__name__))
    return (x, x, x)


def _batched(input, name, msg=None):
    T = _torch()
    if not isinstance(input, T.Tensor):
        raise TypeError("%s(): argument 'input' (position 1) must be Tensor, not %s" % (name, type(input).__name__))
    if input.dim() == 4:
        return input.unsqueeze(0), True
    if input.dim() != 5:
        raise RuntimeError(msg or ("Expected 4D (unbatched) or 5D (batched) input to %s, but got input of size: %s"
                                   % (name, list(input.shape))))
    return input, False


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    T = _torch()
    F = T.nn.functional
    x, unb = _batched(input, "conv3d")
    if not isinstance(weight, T.Tensor) or weight.dim() != 5:
        raise RuntimeError("Expected 5-dimensional weight for 5-dimensional input %s, but got %s-dimensional weight "
                           "of size %s instead" % (list(x.shape), weight.dim() if isinstance(weight, T.Tensor) else 0,
                                                   list(weight.shape) if isinstance(weight, T.Tensor) else []))
    s, d = _triple(stride, "stride"), _triple(dilation, "dilation")
    if any(v <= 0 for v in s):
        raise RuntimeError("non-positive stride is not supported")
    if any(v <= 0 for v in d):
        raise RuntimeError("dilation should be greater than zero")
    k = tuple(weight.shape[2:])
    if isinstance(padding, str):
        if padding not in ("same", "valid"):
            raise RuntimeError("Invalid padding string: '%s'" % padding)
        if padding == "same" and any(v != 1 for v in s):
            raise RuntimeError("padding='same' is not supported for strided convolutions")
        if padding == "valid":
            p_lo = p_hi = (0, 0, 0)
        else:
            tot = [d[i] * (k[i] - 1) for i in range(3)]
            p_lo = tuple(t // 2 for t in tot)
            p_hi = tuple(t - t // 2 for t in tot)
    else:
        p_lo = p_hi = _triple(padding, "padding")
        if any(v < 0 for v in p_lo):
            raise RuntimeError("negative padding is not supported")
    C = x.shape[1]
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if weight.shape[1] * groups != C:
        raise RuntimeError("Given groups=%d, weight of size %s, expected input%s to have %d channels, but got %d "
                           "channels instead" % (groups, list(weight.shape), list(x.shape), weight.shape[1] * groups,
                                                 C))
    if weight.shape[0] % groups:
        raise RuntimeError("Given groups=%d, expected weight to be divisible by %d at dimension 0, but got weight of "
                           "size %s instead" % (groups, groups, list(weight.shape)))
    padded = [x.shape[2 + i] + p_lo[i] + p_hi[i] for i in range(3)]
    eff = [d[i] * (k[i] - 1) + 1 for i in range(3)]
    if any(padded[i] < eff[i] for i in range(3)):
        raise RuntimeError("Calculated padded input size per channel: (%d x %d x %d). Kernel size: (%d x %d x %d). "
                           "Kernel size can't be greater than actual input size" % (tuple(padded) + tuple(eff)))
    if bias is not None and (bias.dim() != 1 or bias.shape[0] != weight.shape[0]):
        raise RuntimeError("Given weight of size %s, expected bias to be 1-dimensional with %d elements, but got bias "
                           "of size %s instead" % (list(weight.shape), weight.shape[0], list(bias.shape)))
    # zero padding done explicitly (asymmetric for 'same'); conv2d then runs unpadded
    if any(p_lo) or any(p_hi):
        x = F.pad(x, (p_lo[2], p_hi[2], p_lo[1], p_hi[1], p_lo[0], p_hi[0]))
    N, Cin, D = x.shape[0], x.shape[1], x.shape[2]
    Dout = (D - eff[0]) // s[0] + 1
    out = None
    for kd in range(k[0]):
        st = kd * d[0]
        xs = x[:, :, st:st + s[0] * (Dout - 1) + 1:s[0]]
        xs = xs.transpose(1, 2).reshape(N * Dout, Cin, x.shape[3], x.shape[4])
        y = F.conv2d(xs, weight[:, :, kd], None, s[1:], 0, d[1:], groups)
        out = y if out is None else out + y
    O, Ho, Wo = out.shape[1], out.shape[2], out.shape[3]
    out = out.reshape(N, Dout, O, Ho, Wo).transpose(1, 2)
    if bias is not None:
        out = out + bias.reshape(1, O, 1, 1, 1)
    return out.squeeze(0) if unb else out


def _pool_geometry(name, x, k, s, p, d, ceil_mode):
    """out sizes and the extra right padding each spatial dim needs (PyTorch's pooling_output_shape)"""
    outs, extra = [], []
    for i in range(3):
        L = x.shape[2 + i]
        if s[i] <= 0:
            raise RuntimeError("stride should be greater than zero, but got d%s: %d" % ("THW"[i], s[i]))
        if d[i] <= 0:
            raise RuntimeError("dilation should be greater than zero, but got dilationT: %d" % d[i])
        if p[i] < 0 or p[i] * 2 > k[i]:
            raise RuntimeError("pad should be at most half of kernel size, but got pad=%d and kernel_size=%d" % (
                p[i], k[i]))
        num = L + 2 * p[i] - d[i] * (k[i] - 1) - 1 + (s[i] - 1 if ceil_mode else 0)
        o = num // s[i] + 1 if num >= 0 else 0
        if ceil_mode and o > 0 and (o - 1) * s[i] >= L + p[i]:
            o -= 1
        outs.append(o)
        need = (o - 1) * s[i] + d[i] * (k[i] - 1) + 1 if o > 0 else 0
        extra.append(_b.max(0, need - (L + 2 * p[i])))
    return outs, extra


def _slices_d(x, k0, s0, d0, o0):
    for kd in range(k0):
        st = kd * d0
        yield x[:, :, st:st + s0 * (o0 - 1) + 1:s0]


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    T = _torch()
    F = T.nn.functional
    x, unb = _batched(input, "max_pool3d", "non-empty 4D or 5D (batch mode) tensor expected for input")
    if return_indices:
        raise NotImplementedError("ctorch: max_pool3d(return_indices=True) is not implemented")
    k = _triple(kernel_size)
    s = k if stride is None or (isinstance(stride, (list, tuple)) and len(stride) == 0) else _triple(stride, "stride")
    p, d = _triple(padding, "padding"), _triple(dilation, "dilation")
    outs, extra = _pool_geometry("max_pool3d", x, k, s, p, d, ceil_mode)
    if any(o <= 0 for o in outs):
        raise RuntimeError("Given input size: (%dx%dx%dx%d). Calculated output size: (%dx%dx%dx%d). Output size is "
                           "too small" % ((x.shape[1],) + tuple(x.shape[2:]) + (x.shape[1],) + tuple(outs)))
    if any(p) or any(extra):
        x = F.pad(x, (p[2], p[2] + extra[2], p[1], p[1] + extra[1], p[0], p[0] + extra[0]), value=-_math.inf)
    N, C = x.shape[0], x.shape[1]
    best = None
    for xs in _slices_d(x, k[0], s[0], d[0], outs[0]):
        y = F.max_pool2d(xs.reshape(N, C * outs[0], x.shape[3], x.shape[4]), k[1:], s[1:], 0, d[1:])
        best = y if best is None else T.maximum(best, y)
    out = best.reshape(N, C, outs[0], outs[1], outs[2])
    return out.squeeze(0) if unb else out


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    T = _torch()
    F = T.nn.functional
    x, unb = _batched(input, "avg_pool3d", "non-empty 4D or 5D (batch mode) tensor expected for input")
    k = _triple(kernel_size)
    s = k if stride is None or (isinstance(stride, (list, tuple)) and len(stride) == 0) else _triple(stride, "stride")
    p = _triple(padding, "padding")
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    outs, extra = _pool_geometry("avg_pool3d", x, k, s, p, (1, 1, 1), ceil_mode)
    if any(o <= 0 for o in outs):
        raise RuntimeError("input image (T: %d H: %d W: %d) smaller than kernel size (kT: %d kH: %d kW: %d)" % (
            tuple(x.shape[2:]) + k))
    shape = tuple(x.shape[2:])
    pads = (p[2], p[2] + extra[2], p[1], p[1] + extra[1], p[0], p[0] + extra[0])
    xp = F.pad(x, pads) if any(pads) else x
    kk = k[1] * k[2]

    def box_sum(t):
        n, c = t.shape[0], t.shape[1]
        tot = None
        for ts in _slices_d(t, k[0], s[0], 1, outs[0]):
            y = F.avg_pool2d(ts.reshape(n, c * outs[0], t.shape[3], t.shape[4]), k[1:], s[1:], 0, False, True,
                             1)
            tot = y if tot is None else tot + y
        return tot.reshape(n, c, outs[0], outs[1], outs[2])

    total = box_sum(xp)
    if divisor_override is not None:
        out = total / divisor_override
    else:
        # the count: padding counts when count_include_pad, the ceil_mode overhang never does
        ones = T.ones((1, 1) + shape, dtype=x.dtype)
        if count_include_pad:
            m = F.pad(ones, (p[2], p[2], p[1], p[1], p[0], p[0]), value=1.0)
            m = F.pad(m, (0, extra[2], 0, extra[1], 0, extra[0]))
        else:
            m = F.pad(ones, pads)
        out = total / box_sum(m)
    _ = kk
    return out.squeeze(0) if unb else out


def _adaptive_bins(L, o):
    return [((i * L) // o, -((-(i + 1) * L) // o)) for i in range(o)]


def _adaptive_sizes(output_size, x):
    os = list(output_size) if isinstance(output_size, (tuple, list)) else [output_size] * 3
    if len(os) != 3:
        raise ValueError("adaptive pool 3d: output_size must be 3")
    return [x.shape[2 + i] if os[i] is None else int(os[i]) for i in range(3)]


def adaptive_avg_pool3d(input, output_size):
    T = _torch()
    F = T.nn.functional
    if not isinstance(input, T.Tensor) or input.dim() not in (4, 5):
        raise RuntimeError("adaptive_avg_pool3d(): Expected 4D or 5D tensor, but got %s" % (
            list(input.shape) if isinstance(input, T.Tensor) else type(input).__name__))
    x, unb = _batched(input, "adaptive_avg_pool3d")
    o = _adaptive_sizes(output_size, x)
    if any(v < 0 for v in o):
        raise RuntimeError("adaptive_avg_pool3d: elements of output_size must be greater than or equal to 0 but "
                           "received %s" % o)
    N, C = x.shape[0], x.shape[1]
    parts = [x[:, :, a:b].mean(2) for a, b in _adaptive_bins(x.shape[2], o[0])]
    y = T.stack(parts, 2) if parts else x[:, :, :0]
    y = F.adaptive_avg_pool2d(y.reshape(N, C * o[0], x.shape[3], x.shape[4]), (o[1], o[2]))
    out = y.reshape(N, C, o[0], o[1], o[2])
    return out.squeeze(0) if unb else out


def adaptive_max_pool3d(input, output_size, return_indices=False):
    T = _torch()
    F = T.nn.functional
    if return_indices:
        raise NotImplementedError("ctorch: adaptive_max_pool3d(return_indices=True) is not implemented")
    if not isinstance(input, T.Tensor) or input.dim() not in (4, 5):
        raise RuntimeError("adaptive_max_pool3d(): Expected 4D or 5D tensor, but got %s" % (
            list(input.shape) if isinstance(input, T.Tensor) else type(input).__name__))
    x, unb = _batched(input, "adaptive_max_pool3d")
    o = _adaptive_sizes(output_size, x)
    N, C = x.shape[0], x.shape[1]
    parts = [x[:, :, a:b].amax(2) for a, b in _adaptive_bins(x.shape[2], o[0])]
    y = T.stack(parts, 2)
    y = F.adaptive_max_pool2d(y.reshape(N, C * o[0], x.shape[3], x.shape[4]), (o[1], o[2]))
    out = y.reshape(N, C, o[0], o[1], o[2])
    return out.squeeze(0) if unb else out


def install(torch):
    nn = torch.nn
    F = nn.functional
    from .nn.layers import _ConvNd, _MaxPoolNd, _AvgPoolNd, _AdaptiveAvgPoolNd, _AdaptiveMaxPoolNd

    for name, fn in (("conv3d", conv3d), ("max_pool3d", max_pool3d), ("avg_pool3d", avg_pool3d),
                     ("adaptive_avg_pool3d", adaptive_avg_pool3d), ("adaptive_max_pool3d", adaptive_max_pool3d)):
        if not hasattr(F, name):
            setattr(F, name, fn)
        if not hasattr(torch, name) and name in ("conv3d", "max_pool3d", "avg_pool3d", "adaptive_avg_pool3d",
                                                 "adaptive_max_pool3d"):
            setattr(torch, name, fn)

    class Conv3d(_ConvNd):
        def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                     bias=True, padding_mode="zeros", device=None, dtype=None):
            super().__init__(3, in_channels, out_channels, kernel_size, stride, padding, dilation, False, 0, groups,
                             bias, padding_mode, dtype)

        def forward(self, input):
            if self.padding_mode != "zeros":
                return conv3d(F.pad(input, self._reversed_padding_repeated_twice, self.padding_mode), self.weight,
                              self.bias, self.stride, 0, self.dilation, self.groups)
            return conv3d(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)

    # the pools are the 1-d/2-d modules' classes (nn/layers.py) with the 3-d function F.<_fn>, set above
    pools = [type(name, (base,), {"_fn": fn, "__module__": __name__})
             for name, base, fn in (("MaxPool3d", _MaxPoolNd, "max_pool3d"), ("AvgPool3d", _AvgPoolNd, "avg_pool3d"),
                                    ("AdaptiveAvgPool3d", _AdaptiveAvgPoolNd, "adaptive_avg_pool3d"),
                                    ("AdaptiveMaxPool3d", _AdaptiveMaxPoolNd, "adaptive_max_pool3d"))]
    for cls in [Conv3d] + pools:
        if not hasattr(nn, cls.__name__):
            setattr(nn, cls.__name__, cls)
