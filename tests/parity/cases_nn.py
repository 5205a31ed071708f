"""Parity cases of the nn family (src/ops/nn.c, conv.c, pool.c; runners in run_nn.c).

Tolerances: PyTorch 1.13's CPU convolutions (oneDNN for float32, im2col+GEMM otherwise) and
norms accumulate in float32 in their own order, while ctorch's reference kernels accumulate
in double and round once. At the sizes here every float32 and float64 case passes at the
harness defaults (float32 rel 1e-5 / abs 1e-6); CONV32 / NORM32 / ATT32 are where a looser
float32 bound would go for larger reductions (PyTorch's float32 accumulation error grows like
sqrt(K) * 6e-8 * sum|terms|). bfloat16 cases whose PyTorch kernel rounds intermediates to
bfloat16 say so beside their looser bound."""
import math
import torch
import torch.nn.functional as F
from parity_lib import case, T

CASES = []
add = CASES.append


def torch_error(fn):
    try:
        fn()
        return None
    except Exception as e:
        return str(e).split("\n")[0]


CONV32 = {}  # default float32 tolerance holds at these sizes (see above)
# For bfloat16 cases whose PyTorch result rounds intermediates to bfloat16 (ctorch rounds once at
# the end): the difference reaches a few bf16 ulps (2^-8 relative) of the largest terms.
BF16_LOOSE = dict(rtol=2e-2, atol=5e-2)
BF16 = {}  # every other bfloat16 case holds the default bfloat16 tolerance (rel 1e-2, abs 1e-2)

# ---------------------------------------------------------------- softmax / log_softmax
for op, tf in (("softmax", F.softmax), ("log_softmax", F.log_softmax)):
    add(case(f"{op}_dim1", op, [T((3, 4, 5))], lambda x, tf=tf: tf(x, 1), attrs={"dim": 1}))
    add(case(f"{op}_last_nc", op, [T((4, 6), layout="transposed")], lambda x, tf=tf: tf(x, -1), attrs={"dim": -1}))
    add(case(f"{op}_strided", op, [T((3, 5), layout="strided", low=-20, high=20)], lambda x, tf=tf: tf(x, 0),
             attrs={"dim": 0}))
    add(case(f"{op}_f64_gg", op, [T((3, 4), "float64")], lambda x, tf=tf: tf(x, 1), attrs={"dim": 1}, gradgrad=True))
    add(case(f"{op}_f64_dim0_gg", op, [T((2, 3, 2), "float64")], lambda x, tf=tf: tf(x, 0), attrs={"dim": 0},
             gradgrad=True))
    # PyTorch's bfloat16 kernels round exp(y) and the row sums to bfloat16 (its gradient is ~1e-2 off
    # the float64 truth here); ctorch forms the gradient in float32 and rounds once
    add(case(f"{op}_bf16", op, [T((4, 7), "bfloat16")], lambda x, tf=tf: tf(x, 1), attrs={"dim": 1}, **BF16_LOOSE))
    add(case(f"{op}_0dim", op, [T(())], lambda x, tf=tf: tf(x, 0), attrs={"dim": 0}))
    add(case(f"{op}_empty", op, [T((0, 3))], lambda x, tf=tf: tf(x, 1), attrs={"dim": 1}))
    add(case(f"{op}_dtype_f64", op, [T((3, 4))], lambda x, tf=tf: tf(x, 1, dtype=torch.float64),
             attrs={"dim": 1, "dtype": "float64"}))
    add(case(f"{op}_int_dtype", op, [T((3, 4), "int64", low=-3, high=3)], lambda x, tf=tf: tf(x, 0, dtype=torch.float32),
             attrs={"dim": 0, "dtype": "float32"}, fd=False))
    add(case(f"{op}_long_err", op, [T((3, 4), "int64")], lambda x, tf=tf: tf(x, -1), attrs={"dim": -1},
             error=f"\"{op}_lastdim_kernel_impl\" not implemented for 'Long'"))
    add(case(f"{op}_half_err", op, [T((3, 4), "float16")], lambda x, tf=tf: tf(x, 0), attrs={"dim": 0},
             error="\"softmax_kernel_impl\" not implemented for 'Half'"))
    add(case(f"{op}_dim_err", op, [T((3, 4))], lambda x, tf=tf: tf(x, 2), attrs={"dim": 2},
             error="Dimension out of range (expected to be in range of [-2, 1], but got 2)"))

# ---------------------------------------------------------------- conv2d


def C2(name, x, w, b=None, tol=CONV32, gg=False, fd=True, **kw):
    attrs = {}
    for k in ("stride", "padding", "dilation"):
        if k in kw:
            v = kw[k]
            if isinstance(v, str):
                attrs["padding_mode"] = v
            else:
                attrs[k] = list(v) if isinstance(v, (tuple, list)) else [v, v]
    if "groups" in kw:
        attrs["groups"] = kw["groups"]
    inputs = [x, w] + ([b] if b is not None else [])
    if b is not None:
        attrs["has_bias"] = 1
    fn = (lambda x, w, b: F.conv2d(x, w, b, **kw)) if b is not None else (lambda x, w: F.conv2d(x, w, None, **kw))
    t = tol if x.dtype == "float32" else (BF16 if x.dtype == "bfloat16" else {})
    add(case(name, "conv2d", inputs, fn, attrs=attrs, gradgrad=gg, fd=fd, **t))


C2("conv2d_basic", T((2, 3, 7, 6)), T((4, 3, 3, 3)), T((4,)))
C2("conv2d_stride_pad_dil", T((2, 3, 9, 8)), T((5, 3, 3, 2)), T((5,)), stride=(2, 1), padding=(1, 2), dilation=(1, 2))
C2("conv2d_groups", T((2, 4, 6, 7)), T((6, 2, 3, 3)), T((6,)), groups=2, stride=2, padding=1)
C2("conv2d_depthwise", T((2, 3, 6, 5)), T((6, 1, 3, 3)), None, groups=3, padding=1)
C2("conv2d_channels_last", T((2, 3, 5, 5), layout="transposed"), T((4, 3, 2, 2), layout="transposed"), T((4,)))
C2("conv2d_strided_in", T((1, 2, 5, 4), layout="strided"), T((3, 2, 2, 3)), T((3,)), padding=1)
C2("conv2d_same_even", T((2, 2, 6, 7)), T((3, 2, 4, 2)), T((3,)), padding="same")
C2("conv2d_same_dil", T((1, 2, 6, 7)), T((3, 2, 3, 2)), None, padding="same", dilation=(2, 3))
C2("conv2d_valid", T((1, 2, 5, 5)), T((3, 2, 3, 3)), None, padding="valid")
C2("conv2d_1x1", T((3, 4, 3, 3)), T((2, 4, 1, 1)), T((2,)))
C2("conv2d_zero_batch", T((0, 3, 5, 5)), T((4, 3, 3, 3)), T((4,)))
C2("conv2d_unbatched", T((3, 5, 6)), T((2, 3, 3, 3)), T((2,)), padding=1)
C2("conv2d_f64_gg", T((2, 2, 5, 4), "float64"), T((3, 2, 2, 3), "float64"), T((3,), "float64"), gg=True, stride=(1, 2),
   padding=1)
C2("conv2d_f64_groups_gg", T((1, 4, 5, 5), "float64"), T((4, 2, 3, 3), "float64"), None, gg=True, groups=2, dilation=2,
   padding=2)
C2("conv2d_bf16", T((2, 3, 6, 6), "bfloat16"), T((4, 3, 3, 3), "bfloat16"), T((4,), "bfloat16"), padding=1)
C2("conv2d_int64", T((2, 3, 5, 5), "int64", low=-4, high=4), T((4, 3, 3, 3), "int64", low=-3, high=3),
   T((4,), "int64", low=-5, high=5), fd=False)
C2("conv2d_int32", T((1, 2, 4, 4), "int32", low=-4, high=4), T((2, 2, 2, 2), "int32", low=-3, high=3), None, fd=False)
add(case("conv2d_chan_err", "conv2d", [T((2, 4, 8, 8)), T((8, 3, 3, 3))], lambda x, w: F.conv2d(x, w),
         error="Given groups=1, weight of size [8, 3, 3, 3], expected input[2, 4, 8, 8] to have 3 channels, but got 4 channels instead"))
add(case("conv2d_group_err", "conv2d", [T((2, 6, 8, 8)), T((7, 3, 3, 3))], lambda x, w: F.conv2d(x, w, groups=2),
         attrs={"groups": 2},
         error="Given groups=2, expected weight to be divisible by 2 at dimension 0, but got weight of size [[7, 3, 3, 3]] instead"))
add(case("conv2d_bias_err", "conv2d", [T((2, 3, 8, 8)), T((4, 3, 3, 3)), T((5,))], lambda x, w, b: F.conv2d(x, w, b),
         attrs={"has_bias": 1},
         error="Given weight of size [4, 3, 3, 3], expected bias to be 1-dimensional with 4 elements, but got bias of size [5] instead"))
add(case("conv2d_ksize_err", "conv2d", [T((1, 2, 4, 4)), T((1, 2, 3, 3))], lambda x, w: F.conv2d(x, w, dilation=2),
         attrs={"dilation": [2, 2]}, error="Kernel size can't be greater than actual input size"))
add(case("conv2d_half_err", "conv2d", [T((1, 2, 4, 4), "float16"), T((1, 2, 3, 3), "float16")], lambda x, w: F.conv2d(x, w),
         error="\"slow_conv2d_cpu\" not implemented for 'Half'"))
# PyTorch's wording depends on whether it takes the oneDNN path (batch > 1 here) or its native one
add(case("conv2d_dtype_err", "conv2d", [T((2, 2, 4, 4)), T((1, 2, 3, 3), "float64")], lambda x, w: F.conv2d(x, w),
         error="Input type (torch.FloatTensor) and weight type (torch.DoubleTensor) should be the same"))
add(case("conv2d_dtype_native_err", "conv2d", [T((1, 2, 4, 4), "float64"), T((1, 2, 3, 3))], lambda x, w: F.conv2d(x, w),
         error="expected scalar type Double but found Float"))
add(case("conv2d_bias_dtype_err", "conv2d", [T((2, 2, 4, 4)), T((1, 2, 3, 3)), T((1,), "float64")],
         lambda x, w, b: F.conv2d(x, w, b), attrs={"has_bias": 1},
         error="Input type (float) and bias type (double) should be the same"))
add(case("conv2d_same_stride_err", "conv2d", [T((1, 2, 4, 4)), T((1, 2, 3, 3))],
         lambda x, w: F.conv2d(x, w, padding="same", stride=2), attrs={"padding_mode": "same", "stride": [2, 2]},
         error="padding='same' is not supported for strided convolutions"))
add(case("conv2d_dim_err", "conv2d", [T((4, 4)), T((1, 2, 3, 3))], lambda x, w: F.conv2d(x, w),
         error="Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: [4, 4]"))

# ---------------------------------------------------------------- conv1d


def C1(name, x, w, b=None, gg=False, fd=True, **kw):
    attrs = dict(kw)
    if isinstance(kw.get("padding"), str):
        attrs["padding_mode"] = attrs.pop("padding")
    inputs = [x, w] + ([b] if b is not None else [])
    if b is not None:
        attrs["has_bias"] = 1
    fn = (lambda x, w, b: F.conv1d(x, w, b, **kw)) if b is not None else (lambda x, w: F.conv1d(x, w, None, **kw))
    t = CONV32 if x.dtype == "float32" else (BF16 if x.dtype == "bfloat16" else {})
    add(case(name, "conv1d", inputs, fn, attrs=attrs, gradgrad=gg, fd=fd, **t))


C1("conv1d_basic", T((2, 3, 9)), T((4, 3, 3)), T((4,)))
C1("conv1d_spdg", T((2, 4, 11)), T((6, 2, 3)), T((6,)), stride=2, padding=2, dilation=2, groups=2)
C1("conv1d_depthwise_nc", T((2, 3, 8), layout="transposed"), T((3, 1, 4)), None, groups=3, padding=1)
C1("conv1d_same", T((1, 2, 7)), T((3, 2, 4)), T((3,)), padding="same", dilation=2)
C1("conv1d_unbatched", T((3, 6)), T((2, 3, 2)), T((2,)))
C1("conv1d_f64_gg", T((2, 2, 7), "float64"), T((3, 2, 3), "float64"), T((3,), "float64"), gg=True, stride=2, padding=1)
C1("conv1d_bf16", T((2, 3, 9), "bfloat16"), T((4, 3, 3), "bfloat16"), None)
add(case("conv1d_dim_err", "conv1d", [T((2, 4, 8, 8)), T((4, 4, 3))], lambda x, w: F.conv1d(x, w),
         error="Expected 2D (unbatched) or 3D (batched) input to conv1d, but got input of size: [2, 4, 8, 8]"))

# ---------------------------------------------------------------- conv_transpose2d


def CT2(name, x, w, b=None, gg=False, fd=True, **kw):
    attrs = {}
    for k in ("stride", "padding", "output_padding", "dilation"):
        if k in kw:
            v = kw[k]
            attrs[k] = list(v) if isinstance(v, (tuple, list)) else [v, v]
    if "groups" in kw:
        attrs["groups"] = kw["groups"]
    inputs = [x, w] + ([b] if b is not None else [])
    if b is not None:
        attrs["has_bias"] = 1
    fn = ((lambda x, w, b: F.conv_transpose2d(x, w, b, **kw)) if b is not None
          else (lambda x, w: F.conv_transpose2d(x, w, None, **kw)))
    t = CONV32 if x.dtype == "float32" else (BF16 if x.dtype == "bfloat16" else {})
    add(case(name, "conv_transpose2d", inputs, fn, attrs=attrs, gradgrad=gg, fd=fd, **t))


CT2("convT2d_basic", T((2, 3, 4, 5)), T((3, 4, 3, 3)), T((4,)))
CT2("convT2d_stride_outpad", T((2, 3, 4, 4)), T((3, 2, 3, 2)), T((2,)), stride=(2, 3), padding=(1, 0),
    output_padding=(1, 2))
CT2("convT2d_groups_dil", T((1, 4, 5, 4)), T((4, 3, 2, 3)), T((6,)), groups=2, dilation=(2, 1), padding=1)
CT2("convT2d_outpad_lt_dil", T((1, 2, 3, 3)), T((2, 2, 3, 3)), None, output_padding=1, dilation=2)
CT2("convT2d_nc", T((2, 3, 4, 4), layout="transposed"), T((3, 2, 2, 2)), T((2,)), stride=2)
CT2("convT2d_unbatched", T((3, 4, 4)), T((3, 2, 3, 3)), None, stride=2)
CT2("convT2d_zero_batch", T((0, 3, 4, 4)), T((3, 2, 3, 3)), T((2,)))
CT2("convT2d_f64_gg", T((1, 2, 3, 4), "float64"), T((2, 3, 2, 2), "float64"), T((3,), "float64"), gg=True, stride=2,
    padding=1, output_padding=1)
# No bfloat16 case: PyTorch 1.13's CPU conv_transpose2d sends bfloat16 to oneDNN as a plain
# convolution (checks channels as for conv2d and returns conv2d's shape), so it cannot be matched.
CT2("convT2d_int64", T((1, 2, 3, 3), "int64", low=-3, high=3), T((2, 2, 2, 2), "int64", low=-3, high=3), None, fd=False,
    stride=2)
add(case("convT2d_chan_err", "conv_transpose2d", [T((2, 4, 8, 8)), T((3, 4, 3, 3))], lambda x, w: F.conv_transpose2d(x, w),
         error="Given transposed=1, weight of size [3, 4, 3, 3], expected input[2, 4, 8, 8] to have 3 channels, but got 4 channels instead"))
add(case("convT2d_outpad_err", "conv_transpose2d", [T((1, 2, 4, 4)), T((2, 2, 3, 3))],
         lambda x, w: F.conv_transpose2d(x, w, output_padding=1), attrs={"output_padding": [1, 1]},
         error="output padding must be smaller than either stride or dilation, but got output_padding_height: 1 output_padding_width: 1 stride_height: 1 stride_width: 1 dilation_height: 1 dilation_width: 1"))
add(case("convT2d_int32_err", "conv_transpose2d", [T((1, 2, 4, 4), "int32"), T((2, 2, 3, 3), "int32")],
         lambda x, w: F.conv_transpose2d(x, w), error="\"slow_conv_transpose2d_out_cpu\" not implemented for 'Int'"))

# ---------------------------------------------------------------- pools


def P(name, op, x, fn, attrs, gg=False, fd=True, **tol):
    add(case(name, op, [x], fn, attrs=attrs, gradgrad=gg, fd=fd, **tol))


P("maxpool2d_basic", "max_pool2d", T((2, 3, 6, 7)), lambda x: F.max_pool2d(x, 2), {"kernel_size": [2, 2]})
P("maxpool2d_indices", "max_pool2d", T((2, 2, 7, 6)),
  lambda x: F.max_pool2d(x, (3, 2), stride=(2, 1), padding=1, return_indices=True),
  {"kernel_size": [3, 2], "stride": [2, 1], "padding": [1, 1], "return_indices": 1})
P("maxpool2d_ceil_dil", "max_pool2d", T((1, 2, 9, 8)),
  lambda x: F.max_pool2d(x, 3, stride=2, dilation=2, ceil_mode=True, return_indices=True),
  {"kernel_size": [3, 3], "stride": [2, 2], "dilation": [2, 2], "ceil_mode": 1, "return_indices": 1})
P("maxpool2d_ceil_pad", "max_pool2d", T((1, 1, 6, 6)), lambda x: F.max_pool2d(x, 3, 2, 1, ceil_mode=True),
  {"kernel_size": [3, 3], "stride": [2, 2], "padding": [1, 1], "ceil_mode": 1})
P("maxpool2d_nc", "max_pool2d", T((2, 3, 5, 5), layout="transposed"), lambda x: F.max_pool2d(x, 2, 1),
  {"kernel_size": [2, 2], "stride": [1, 1]})
P("maxpool2d_unbatched", "max_pool2d", T((3, 5, 4)), lambda x: F.max_pool2d(x, 2, return_indices=True),
  {"kernel_size": [2, 2], "return_indices": 1})
P("maxpool2d_zero_batch", "max_pool2d", T((0, 3, 5, 5)), lambda x: F.max_pool2d(x, 2), {"kernel_size": [2, 2]})
P("maxpool2d_f64_gg", "max_pool2d", T((1, 2, 5, 6), "float64"), lambda x: F.max_pool2d(x, (2, 3), stride=1),
  {"kernel_size": [2, 3], "stride": [1, 1]}, gg=True)
P("maxpool2d_bf16", "max_pool2d", T((2, 2, 6, 6), "bfloat16"), lambda x: F.max_pool2d(x, 3, 2, 1, return_indices=True),
  {"kernel_size": [3, 3], "stride": [2, 2], "padding": [1, 1], "return_indices": 1}, fd=False)
add(case("maxpool2d_long_err", "max_pool2d", [T((1, 1, 4, 4), "int64")], lambda x: F.max_pool2d(x, 2),
         attrs={"kernel_size": [2, 2]}, error="\"max_pool2d\" not implemented for 'Long'"))
add(case("maxpool2d_pad_err", "max_pool2d", [T((1, 1, 4, 4))], lambda x: F.max_pool2d(x, 3, padding=2),
         attrs={"kernel_size": [3, 3], "padding": [2, 2]},
         error="pad should be at most half of kernel size, but got pad=2 and kernel_size=3"))
add(case("maxpool2d_small_err", "max_pool2d", [T((1, 3, 5, 5))], lambda x: F.max_pool2d(x, 6),
         attrs={"kernel_size": [6, 6]},
         error="Given input size: (3x5x5). Calculated output size: (3x0x0). Output size is too small"))

P("avgpool2d_basic", "avg_pool2d", T((2, 3, 6, 7)), lambda x: F.avg_pool2d(x, 2), {"kernel_size": [2, 2]})
P("avgpool2d_pad_nocount", "avg_pool2d", T((2, 2, 7, 6)),
  lambda x: F.avg_pool2d(x, (3, 2), stride=(2, 1), padding=1, count_include_pad=False),
  {"kernel_size": [3, 2], "stride": [2, 1], "padding": [1, 1], "count_include_pad": 0})
P("avgpool2d_pad_count_ceil", "avg_pool2d", T((1, 2, 7, 7)),
  lambda x: F.avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=True),
  {"kernel_size": [3, 3], "stride": [2, 2], "padding": [1, 1], "ceil_mode": 1})
P("avgpool2d_ceil_nocount", "avg_pool2d", T((1, 2, 6, 6)),
  lambda x: F.avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
  {"kernel_size": [3, 3], "stride": [2, 2], "padding": [1, 1], "ceil_mode": 1, "count_include_pad": 0})
P("avgpool2d_divisor", "avg_pool2d", T((1, 2, 5, 5)), lambda x: F.avg_pool2d(x, 2, 1, divisor_override=3),
  {"kernel_size": [2, 2], "stride": [1, 1], "divisor_override": 3})
P("avgpool2d_nc_unbatched", "avg_pool2d", T((3, 5, 4), layout="transposed"), lambda x: F.avg_pool2d(x, 2, 1),
  {"kernel_size": [2, 2], "stride": [1, 1]})
P("avgpool2d_f64", "avg_pool2d", T((1, 2, 5, 6), "float64"), lambda x: F.avg_pool2d(x, (2, 3), 1, (1, 1)),
  {"kernel_size": [2, 3], "stride": [1, 1], "padding": [1, 1]})
P("avgpool2d_bf16", "avg_pool2d", T((2, 2, 6, 6), "bfloat16"), lambda x: F.avg_pool2d(x, 3, 2, 1),
  {"kernel_size": [3, 3], "stride": [2, 2], "padding": [1, 1]})
P("avgpool2d_int64", "avg_pool2d", T((1, 2, 5, 5), "int64", low=-20, high=20), lambda x: F.avg_pool2d(x, 2, 1),
  {"kernel_size": [2, 2], "stride": [1, 1]}, fd=False)
P("avgpool2d_zero_batch", "avg_pool2d", T((0, 2, 4, 4)), lambda x: F.avg_pool2d(x, 2), {"kernel_size": [2, 2]})
add(case("avgpool2d_int32_err", "avg_pool2d", [T((1, 1, 4, 4), "int32")], lambda x: F.avg_pool2d(x, 2),
         attrs={"kernel_size": [2, 2]}, error="\"avg_pool2d\" not implemented for 'Int'"))

P("adaptive_avg_basic", "adaptive_avg_pool2d", T((2, 3, 7, 9)), lambda x: F.adaptive_avg_pool2d(x, (3, 4)),
  {"output_size": [3, 4]})
P("adaptive_avg_up", "adaptive_avg_pool2d", T((1, 2, 3, 4)), lambda x: F.adaptive_avg_pool2d(x, (5, 6)),
  {"output_size": [5, 6]})
P("adaptive_avg_none_nc", "adaptive_avg_pool2d", T((2, 3, 5, 5), layout="transposed"),
  lambda x: F.adaptive_avg_pool2d(x, (None, 2)), {"output_size": [-1, 2]})
P("adaptive_avg_unbatched", "adaptive_avg_pool2d", T((3, 5, 7)), lambda x: F.adaptive_avg_pool2d(x, 1),
  {"output_size": [1, 1]})
P("adaptive_avg_f64", "adaptive_avg_pool2d", T((1, 2, 6, 5), "float64"), lambda x: F.adaptive_avg_pool2d(x, (4, 3)),
  {"output_size": [4, 3]})
P("adaptive_avg_bf16", "adaptive_avg_pool2d", T((1, 2, 6, 5), "bfloat16"), lambda x: F.adaptive_avg_pool2d(x, (4, 3)),
  {"output_size": [4, 3]})
add(case("adaptive_avg_dim_err", "adaptive_avg_pool2d", [T((5, 5))], lambda x: F.adaptive_avg_pool2d(x, 2),
         attrs={"output_size": [2, 2]}, error="adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got [5, 5]"))

P("adaptive_max_basic", "adaptive_max_pool2d", T((2, 3, 7, 9)),
  lambda x: F.adaptive_max_pool2d(x, (3, 4), return_indices=True), {"output_size": [3, 4], "return_indices": 1})
P("adaptive_max_nc", "adaptive_max_pool2d", T((2, 2, 5, 6), layout="transposed"),
  lambda x: F.adaptive_max_pool2d(x, (2, 4)), {"output_size": [2, 4]})
P("adaptive_max_f64_gg", "adaptive_max_pool2d", T((1, 2, 5, 6), "float64"), lambda x: F.adaptive_max_pool2d(x, 3),
  {"output_size": [3, 3]}, gg=True)
P("adaptive_max_bf16", "adaptive_max_pool2d", T((1, 2, 5, 6), "bfloat16"),
  lambda x: F.adaptive_max_pool2d(x, 3, return_indices=True), {"output_size": [3, 3], "return_indices": 1}, fd=False)
add(case("adaptive_max_dim_err", "adaptive_max_pool2d", [T((5, 5))], lambda x: F.adaptive_max_pool2d(x, 2),
         attrs={"output_size": [2, 2]}, error="adaptive_max_pool2d(): Expected 3D or 4D tensor, but got: [5, 5]"))

# ---------------------------------------------------------------- batch_norm
NORM32 = {}  # default float32 tolerance holds at these sizes


def BN(name, x, training, has_running=True, w=False, b=False, momentum=0.1, eps=1e-5, gg=False, stat_dt=None, **tol):
    C = x.shape[1]
    sdt = stat_dt or x.dtype
    inputs = [x]
    if has_running:
        inputs += [T((C,), sdt, low=-0.5, high=0.5, requires_grad=False), T((C,), sdt, low=0.5, high=1.5, requires_grad=False)]
    if w:
        inputs.append(T((C,), sdt))
    if b:
        inputs.append(T((C,), sdt))

    def fn(*a):
        x = a[0]
        k = 1
        rm = rv = ww = bb = None
        if has_running:
            rm, rv = a[1], a[2]
            k = 3
        if w:
            ww = a[k]
            k += 1
        if b:
            bb = a[k]
        y = F.batch_norm(x, rm, rv, ww, bb, training=training, momentum=momentum, eps=eps)
        return (y, rm, rv) if has_running else y

    attrs = {"training": int(training), "has_running": int(has_running), "has_w": int(w), "has_b": int(b),
             "momentum": momentum, "eps": eps}
    t = tol or (NORM32 if x.dtype == "float32" else (BF16 if x.dtype == "bfloat16" else {}))
    add(case(name, "batch_norm", inputs, fn, attrs=attrs, gradgrad=gg, **t))


BN("batchnorm_train", T((4, 3, 5, 6)), True, w=True, b=True)
BN("batchnorm_train_momentum", T((5, 2, 7)), True, momentum=0.3, eps=1e-3)
BN("batchnorm_train_2d", T((8, 5)), True, w=True)
BN("batchnorm_train_nc", T((3, 4, 5, 2), layout="transposed"), True, w=True, b=True)
BN("batchnorm_train_norunning", T((4, 3, 5)), True, has_running=False, b=True)
BN("batchnorm_eval", T((4, 3, 5, 6)), False, w=True, b=True)
BN("batchnorm_eval_nowb", T((2, 3, 4)), False)
BN("batchnorm_f64_train_gg", T((3, 2, 4), "float64"), True, w=True, b=True, gg=True)
BN("batchnorm_f64_eval_gg", T((3, 2, 4), "float64"), False, w=True, b=True, gg=True)
BN("batchnorm_bf16_stats_f32", T((4, 3, 5), "bfloat16"), True, w=True, b=True, stat_dt="float32")
add(case("batchnorm_one_err", "batch_norm", [T((1, 3))], lambda x: F.batch_norm(x, None, None, training=True),
         attrs={"training": 1, "has_running": 0},
         error="Expected more than 1 value per channel when training, got input size torch.Size([1, 3])"))
add(case("batchnorm_eval_err", "batch_norm", [T((2, 3))], lambda x: F.batch_norm(x, None, None, training=False),
         attrs={"training": 0, "has_running": 0}, error="running_mean must be defined in evaluation mode"))
add(case("batchnorm_size_err", "batch_norm", [T((2, 3)), T((4,), requires_grad=False), T((3,), requires_grad=False)],
         lambda x, m, v: F.batch_norm(x, m, v, training=True), attrs={"training": 1},
         error="running_mean should contain 3 elements not 4"))

# ---------------------------------------------------------------- layer_norm / group_norm / rms_norm


def LN(name, x, ns, w=False, b=False, eps=1e-5, gg=False, **tol):
    inputs = [x] + ([T(ns, x.dtype)] if w else []) + ([T(ns, x.dtype)] if b else [])

    def fn(*a):
        k = 1
        ww = bb = None
        if w:
            ww = a[k]
            k += 1
        if b:
            bb = a[k]
        return F.layer_norm(a[0], ns, ww, bb, eps)

    t = tol or (NORM32 if x.dtype == "float32" else (BF16 if x.dtype == "bfloat16" else {}))
    add(case(name, "layer_norm", inputs, fn, attrs={"normalized_shape": list(ns), "has_w": int(w), "has_b": int(b),
                                                     "eps": eps}, gradgrad=gg, **t))


LN("layernorm_last", T((3, 4, 7)), (7,), w=True, b=True)
LN("layernorm_two_dims", T((2, 3, 4, 5)), (4, 5), w=True)
LN("layernorm_nowb_nc", T((5, 6), layout="transposed"), (6,))
LN("layernorm_bias_only", T((4, 6)), (6,), b=True, eps=1e-3)
LN("layernorm_f64_gg", T((3, 5), "float64"), (5,), w=True, b=True, gg=True)
LN("layernorm_f64_2d_gg", T((2, 3, 4), "float64"), (3, 4), gg=True)
LN("layernorm_bf16", T((4, 16), "bfloat16"), (16,), w=True, b=True)
LN("layernorm_zero_batch", T((0, 5)), (5,), w=True, b=True)
add(case("layernorm_shape_err", "layer_norm", [T((2, 3, 4))], lambda x: F.layer_norm(x, (5,)),
         attrs={"normalized_shape": [5]},
         error="Given normalized_shape=[5], expected input with shape [*, 5], but got input of size[2, 3, 4]"))
add(case("layernorm_w_err", "layer_norm", [T((2, 3, 4)), T((5,))], lambda x, w: F.layer_norm(x, (4,), w),
         attrs={"normalized_shape": [4], "has_w": 1},
         error="Expected weight to be of same shape as normalized_shape, but got weight of shape [5] and normalized_shape = [4]"))
add(case("layernorm_half_err", "layer_norm", [T((2, 4), "float16")], lambda x: F.layer_norm(x, (4,)),
         attrs={"normalized_shape": [4]}, error="\"LayerNormKernelImpl\" not implemented for 'Half'"))


def GN(name, x, G, w=False, b=False, eps=1e-5, gg=False, **tol):
    C = x.shape[1]
    inputs = [x] + ([T((C,), x.dtype)] if w else []) + ([T((C,), x.dtype)] if b else [])

    def fn(*a):
        k = 1
        ww = bb = None
        if w:
            ww = a[k]
            k += 1
        if b:
            bb = a[k]
        return F.group_norm(a[0], G, ww, bb, eps)

    t = tol or (NORM32 if x.dtype == "float32" else (BF16 if x.dtype == "bfloat16" else {}))
    add(case(name, "group_norm", inputs, fn, attrs={"num_groups": G, "has_w": int(w), "has_b": int(b), "eps": eps},
             gradgrad=gg, **t))


GN("groupnorm_basic", T((2, 6, 4, 5)), 3, w=True, b=True)
GN("groupnorm_one_group_nc", T((3, 4, 5), layout="transposed"), 1, w=True)
# (bias without weight: PyTorch 1.13's group_norm backward fails, "tensor does not have a device")
GN("groupnorm_instance", T((2, 4, 6)), 4, w=True, b=True)
GN("groupnorm_2d", T((5, 6)), 2)
GN("groupnorm_f64_gg", T((2, 4, 3), "float64"), 2, w=True, b=True, gg=True)
GN("groupnorm_bf16", T((2, 4, 8), "bfloat16"), 2, w=True, b=True)
add(case("groupnorm_div_err", "group_norm", [T((2, 3, 4))], lambda x: F.group_norm(x, 2), attrs={"num_groups": 2},
         error="Expected number of channels in input to be divisible by num_groups, but got input of shape [2, 3, 4] and num_groups=2"))


def rms_ref(x, ns, w, eps):
    dims = tuple(range(x.dim() - len(ns), x.dim()))
    if eps is None:
        eps = torch.finfo(x.dtype).eps
    y = x * torch.rsqrt(x.pow(2).mean(dims, keepdim=True) + eps)
    return y * w if w is not None else y


add(case("rmsnorm_last", "rms_norm", [T((3, 4, 8)), T((8,))], lambda x, w: rms_ref(x, (8,), w, 1e-6),
         attrs={"normalized_shape": [8], "has_w": 1, "eps": 1e-6}, **NORM32))
add(case("rmsnorm_two_dims_nc", "rms_norm", [T((3, 4, 5), layout="transposed")], lambda x: rms_ref(x, (4, 5), None, 1e-5),
         attrs={"normalized_shape": [4, 5], "eps": 1e-5}, **NORM32))
add(case("rmsnorm_default_eps", "rms_norm", [T((2, 6))], lambda x: rms_ref(x, (6,), None, None),
         attrs={"normalized_shape": [6]}, **NORM32))
add(case("rmsnorm_f64_gg", "rms_norm", [T((3, 5), "float64"), T((5,), "float64")], lambda x, w: rms_ref(x, (5,), w, 1e-6),
         attrs={"normalized_shape": [5], "has_w": 1, "eps": 1e-6}, gradgrad=True))
# the reference formula runs op by op in bfloat16 in PyTorch (each step rounded)
add(case("rmsnorm_bf16", "rms_norm", [T((4, 8), "bfloat16"), T((8,), "bfloat16")], lambda x, w: rms_ref(x, (8,), w, 1e-6),
         attrs={"normalized_shape": [8], "has_w": 1, "eps": 1e-6}, **BF16_LOOSE))

# ---------------------------------------------------------------- dropout


def drop_fn(p, seed, training=True):
    def fn(x):
        torch.manual_seed(seed)
        return F.dropout(x, p, training)
    return fn


add(case("dropout_f32", "dropout", [T((5, 7))], drop_fn(0.3, 0), attrs={"p": 0.3, "seed": 0}))
add(case("dropout_f32_big", "dropout", [T((40, 33))], drop_fn(0.5, 1234), attrs={"p": 0.5, "seed": 1234}))
add(case("dropout_nc", "dropout", [T((6, 5), layout="transposed")], drop_fn(0.2, 7), attrs={"p": 0.2, "seed": 7}))
add(case("dropout_f64", "dropout", [T((4, 9), "float64")], drop_fn(0.6, 3), attrs={"p": 0.6, "seed": 3}))
add(case("dropout_bf16", "dropout", [T((4, 9), "bfloat16")], drop_fn(0.25, 5), attrs={"p": 0.25, "seed": 5}))
add(case("dropout_eval", "dropout", [T((3, 4))], drop_fn(0.5, 0, False), attrs={"p": 0.5, "seed": 0, "training": 0}))
add(case("dropout_p0", "dropout", [T((3, 4))], drop_fn(0.0, 0), attrs={"p": 0.0, "seed": 0}))
add(case("dropout_p1", "dropout", [T((3, 4))], drop_fn(1.0, 0), attrs={"p": 1.0, "seed": 0}))
add(case("dropout_empty", "dropout", [T((0, 4))], drop_fn(0.5, 0), attrs={"p": 0.5, "seed": 0}))
add(case("dropout_p_err", "dropout", [T((3,))], drop_fn(1.5, 0), attrs={"p": 1.5, "seed": 0},
         error="dropout probability has to be between 0 and 1, but got 1.5"))
add(case("dropout_int_err", "dropout", [T((3,), "int64")], drop_fn(0.5, 0), attrs={"p": 0.5, "seed": 0},
         error="result type Float can't be cast to the desired output type Long"))

# ---------------------------------------------------------------- embedding
add(case("embedding_basic", "embedding", [T((3, 4), "int64", low=0, high=6), T((6, 5))], lambda i, w: F.embedding(i, w)))
add(case("embedding_padding", "embedding", [T((2, 7), "int64", low=0, high=4), T((4, 3))],
         lambda i, w: F.embedding(i, w, padding_idx=1), attrs={"padding_idx": 1},
         fd=False))  # the padding row is read but gets no gradient by definition, so no finite differences
add(case("embedding_padding_neg", "embedding", [T((9,), "int64", low=0, high=4), T((4, 3))],
         lambda i, w: F.embedding(i, w, padding_idx=-1), attrs={"padding_idx": -1}, fd=False))
add(case("embedding_int32_nc", "embedding", [T((5,), "int32", low=0, high=3), T((3, 4), layout="transposed")],
         lambda i, w: F.embedding(i, w)))
add(case("embedding_0dim", "embedding", [T((), "int64", low=0, high=3), T((3, 4), "float64")],
         lambda i, w: F.embedding(i, w)))
add(case("embedding_empty", "embedding", [T((0, 2), "int64", low=0, high=3), T((3, 4))], lambda i, w: F.embedding(i, w)))
add(case("embedding_bf16", "embedding", [T((4,), "int64", low=0, high=3), T((3, 4), "bfloat16")],
         lambda i, w: F.embedding(i, w)))
add(case("embedding_f16", "embedding", [T((4,), "int64", low=0, high=3), T((3, 4), "float16")],
         lambda i, w: F.embedding(i, w)))
add(case("embedding_int_weight", "embedding", [T((4,), "int64", low=0, high=3), T((3, 4), "int32")],
         lambda i, w: F.embedding(i, w), fd=False))
add(case("embedding_oob_err", "embedding", [T((2,), "int64", values=[0, 5]), T((3, 4))], lambda i, w: F.embedding(i, w),
         error="index out of range in self"))
add(case("embedding_idx_err", "embedding", [T((2,), values=[0.0, 1.0], requires_grad=False), T((3, 4))],
         lambda i, w: F.embedding(i, w),
         error="Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but got torch.FloatTensor instead"))

# ---------------------------------------------------------------- interpolate


def I(name, x, size=None, sf=None, mode="nearest", ac=None, **tol):
    attrs = {"mode": mode}
    if size is not None:
        attrs["size"] = list(size) if isinstance(size, (tuple, list)) else [size]
    if sf is not None:
        attrs["scale_factor"] = [float(s) for s in sf] if isinstance(sf, (tuple, list)) else [float(sf)]
    if ac is not None:
        attrs["align_corners"] = int(ac)
    add(case(name, "interpolate", [x], lambda x: F.interpolate(x, size=size, scale_factor=sf, mode=mode, align_corners=ac),
             attrs=attrs, **tol))


I("interp_nearest_size", T((2, 3, 4, 5)), size=(7, 3))
I("interp_nearest_x2", T((1, 2, 3, 4)), sf=2)
I("interp_nearest_frac", T((1, 2, 5, 7)), sf=(1.7, 0.6))
I("interp_nearest_1d", T((2, 3, 5)), size=(8,))
I("interp_nearest_nc", T((2, 3, 4, 4), layout="transposed"), size=(6, 5))
I("interp_nearest_f64", T((1, 2, 3, 3), "float64"), sf=(2.5, 1.5))
I("interp_nearest_bf16", T((1, 2, 3, 3), "bfloat16"), sf=(2, 3))
I("interp_bilinear_ac", T((2, 2, 4, 5)), size=(7, 9), mode="bilinear", ac=True)
I("interp_bilinear_noac", T((2, 2, 4, 5)), size=(7, 9), mode="bilinear", ac=False)
I("interp_bilinear_down", T((1, 2, 9, 8)), size=(4, 3), mode="bilinear", ac=False)
I("interp_bilinear_sf", T((1, 3, 4, 5)), sf=(1.5, 2.25), mode="bilinear", ac=False)
I("interp_bilinear_sf_ac", T((1, 3, 4, 5)), sf=(2, 0.5), mode="bilinear", ac=True)
I("interp_bilinear_one", T((1, 1, 3, 4)), size=(1, 1), mode="bilinear", ac=True)
I("interp_bilinear_nc", T((2, 2, 5, 4), layout="transposed"), size=(3, 7), mode="bilinear", ac=False)
I("interp_bilinear_f64", T((1, 2, 4, 3), "float64"), sf=(1.3, 2.6), mode="bilinear", ac=False)
# PyTorch 1.13 computes bilinear coordinates and weights in bfloat16 (errors ~3e-2 against float64
# here); ctorch computes them in float32 like the float32 path and rounds the result once
I("interp_bilinear_bf16", T((1, 2, 4, 3), "bfloat16"), size=(6, 5), mode="bilinear", ac=False, rtol=2e-2, atol=6e-2)
add(case("interp_both_err", "interpolate", [T((1, 1, 2, 2))], lambda x: F.interpolate(x, size=3, scale_factor=2.0),
         attrs={"size": [3], "scale_factor": [2.0]}, error="only one of size or scale_factor should be defined"))
add(case("interp_ac_err", "interpolate", [T((1, 1, 2, 2))], lambda x: F.interpolate(x, size=3, align_corners=True),
         attrs={"size": [3], "align_corners": 1},
         error="align_corners option can only be set with the interpolating modes: linear | bilinear | bicubic | trilinear"))
add(case("interp_bilinear_3d_err", "interpolate", [T((1, 2, 2))], lambda x: F.interpolate(x, size=3, mode="bilinear"),
         attrs={"size": [3], "mode": "bilinear"}, error="Got 3D input, but bilinear mode needs 4D input"))

# ---------------------------------------------------------------- scaled_dot_product_attention
ATT32 = {}  # default float32 tolerance holds at these sizes


def sdpa_ref(q, k, v, mask=None, causal=False, scale=None, p=0.0, seed=None):
    E = q.shape[-1]
    s = (1.0 / math.sqrt(E)) if scale is None else scale
    w = q @ k.transpose(-2, -1) * s
    if causal:
        L, S = q.shape[-2], k.shape[-2]
        w = w.masked_fill(~torch.ones(L, S, dtype=torch.bool).tril(), float("-inf"))
    if mask is not None:
        w = w.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else w + mask
    a = torch.softmax(w, -1)
    if p > 0:
        a = F.dropout(a, p)
    return a @ v


def SD(name, shapes, dt="float32", mask=None, causal=False, scale=None, p=0.0, seed=0, gg=False, layout="contiguous", **tol):
    q, k, v = shapes
    inputs = [T(q, dt, layout=layout), T(k, dt), T(v, dt)]
    attrs = {"is_causal": int(causal), "dropout_p": p, "seed": seed}
    if scale is not None:
        attrs["scale"] = scale
    if mask is not None:
        inputs.append(mask)
        attrs["has_mask"] = 1

    def fn(*a):
        torch.manual_seed(seed)
        return sdpa_ref(a[0], a[1], a[2], a[3] if mask is not None else None, causal, scale, p)

    t = tol or (ATT32 if dt == "float32" else (BF16 if dt == "bfloat16" else {}))
    add(case(name, "sdpa", inputs, fn, attrs=attrs, gradgrad=gg, **t))


SD("sdpa_basic", ((2, 3, 5, 4), (2, 3, 6, 4), (2, 3, 6, 3)))
SD("sdpa_3d_nc", ((2, 5, 4), (2, 5, 4), (2, 5, 2)), layout="transposed")
SD("sdpa_bool_mask", ((2, 4, 3), (2, 5, 3), (2, 5, 2)),
   mask=T((4, 5), "bool", values=[[1, 0, 1, 1, 0], [0, 1, 1, 0, 0], [1, 1, 1, 1, 1], [0, 0, 0, 0, 1]]))
SD("sdpa_float_mask", ((2, 4, 3), (2, 5, 3), (2, 5, 2)), mask=T((2, 4, 5), low=-1, high=1, requires_grad=False))
SD("sdpa_float_mask_grad", ((1, 3, 3), (1, 4, 3), (1, 4, 2)), mask=T((3, 4), low=-1, high=1))
SD("sdpa_causal", ((2, 5, 4), (2, 5, 4), (2, 5, 3)), causal=True)
SD("sdpa_causal_rect", ((1, 3, 4), (1, 5, 4), (1, 5, 3)), causal=True)
SD("sdpa_scale", ((2, 3, 4), (2, 3, 4), (2, 3, 4)), scale=0.3)
SD("sdpa_dropout", ((2, 4, 5, 4), (2, 4, 6, 4), (2, 4, 6, 3)), p=0.3, seed=11)
SD("sdpa_f64_gg", ((2, 3, 4), (2, 5, 4), (2, 5, 2)), dt="float64", gg=True)
SD("sdpa_f64_causal_gg", ((1, 4, 3), (1, 4, 3), (1, 4, 2)), dt="float64", causal=True, gg=True)
SD("sdpa_bf16", ((2, 4, 8), (2, 6, 8), (2, 6, 4)), dt="bfloat16")
# long sequences: several 64-query x 64-key blocks of the fused CPU path (kernels_attention.c)
SD("sdpa_long_causal", ((2, 2, 200, 32), (2, 2, 200, 32), (2, 2, 200, 32)), causal=True)
SD("sdpa_long_causal_rect", ((1, 2, 150, 16), (1, 2, 70, 16), (1, 2, 70, 24)), causal=True)
SD("sdpa_long_rect_float_mask", ((2, 130, 16), (2, 300, 16), (2, 300, 24)),
   mask=T((130, 300), low=-2, high=2, requires_grad=False))
SD("sdpa_long_f64_causal", ((1, 2, 150, 8), (1, 2, 150, 8), (1, 2, 150, 8)), dt="float64", causal=True)
SD("sdpa_long_f64_gg", ((1, 70, 4), (1, 90, 4), (1, 90, 3)), dt="float64", gg=True)
