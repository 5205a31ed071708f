"""Parity cases of creation.c: factories, clone/contiguous/to(dtype), copy_, fill_, zero_."""
import torch
from parity_lib import case, T

ALL = ["float32", "float64", "float16", "bfloat16", "int8", "uint8", "int16", "int32", "int64", "bool"]
D = {n: getattr(torch, n) for n in ALL}

CASES = []
add = CASES.append

for dt in ALL:
    add(case("zeros_%s" % dt, "zeros", [], lambda dt=dt: torch.zeros(2, 3, dtype=D[dt]), attrs={"shape": [2, 3], "dtype": dt}))
    add(case("ones_%s" % dt, "ones", [], lambda dt=dt: torch.ones(4, dtype=D[dt]), attrs={"shape": [4], "dtype": dt}))
    add(case("full_%s" % dt, "full", [], lambda dt=dt: torch.full((2, 2), 1, dtype=D[dt]),
             attrs={"shape": [2, 2], "value": 1, "dtype": dt}))
    add(case("empty_%s" % dt, "empty", [], lambda dt=dt: torch.zeros(3, 1, dtype=D[dt]), attrs={"shape": [3, 1], "dtype": dt}))
    add(case("arange_%s" % dt, "arange", [], lambda dt=dt: torch.arange(0, 5, 1, dtype=D[dt]) if dt != "bool" else
             torch.arange(0, 2, 1, dtype=torch.int64), attrs={"start": 0, "end": 5 if dt != "bool" else 2, "step": 1,
                                                             "dtype": dt if dt != "bool" else "int64"}))
    # PyTorch 1.13 has no bfloat16 eye on CPU: the reference is the float32 eye converted (exact)
    add(case("eye_%s" % dt, "eye", [], lambda dt=dt: torch.eye(3, 4, dtype=D[dt]) if dt != "bfloat16" else
             torch.eye(3, 4).to(torch.bfloat16), attrs={"n": 3, "m": 4, "dtype": dt}))
    add(case("zeros_like_%s" % dt, "zeros_like", [T((2, 3), dt)], lambda x: torch.zeros_like(x)))
    add(case("clone_%s" % dt, "clone", [T((2, 3), dt, layout="transposed")], lambda x: x.clone()))
    for dt2 in ALL:
        # every conversion; float -> integer truncates toward zero; keep values in range
        add(case("to_%s_%s" % (dt, dt2), "to_dtype", [T((5,), dt, low=-3 if dt2 not in ("uint8",) else 0, high=4)],
                 lambda x, dt2=dt2: x.to(D[dt2]), attrs={"dtype": dt2},
                 # a cast to a narrower float type loses the float64 finite-difference precision
                 fd=False))

add(case("full_float_default", "full", [], lambda: torch.full((2,), 1.5), attrs={"shape": [2], "value": 1.5}))
add(case("full_int_infers_long", "full", [], lambda: torch.full((2,), 7), attrs={"shape": [2], "value": 7, "dtype": "int64"}))
add(case("full_bool_value", "full", [], lambda: torch.full((2,), True), attrs={"shape": [2], "value": True, "dtype": "bool"}))
add(case("zeros_0dim", "zeros", [], lambda: torch.zeros(()), attrs={"shape": []}))
add(case("zeros_empty", "zeros", [], lambda: torch.zeros(0, 3), attrs={"shape": [0, 3]}))
add(case("zeros_neg", "zeros", [], lambda: torch.zeros(-1, 3), attrs={"shape": [-1, 3]},
         error="Trying to create tensor with negative dimension -1: [-1, 3]"))
add(case("ones_requires_grad", "ones", [], lambda: torch.ones(2, requires_grad=True), attrs={"shape": [2], "requires_grad": True}))
add(case("ones_int_requires_grad", "ones", [], lambda: torch.ones(2, dtype=torch.int64, requires_grad=True),
         attrs={"shape": [2], "dtype": "int64", "requires_grad": True},
         error="Only Tensors of floating point and complex dtype can require gradients"))
add(case("scalar_tensor_float", "scalar_tensor", [], lambda: torch.scalar_tensor(2.5), attrs={"value": 2.5}))
add(case("scalar_tensor_int64", "scalar_tensor", [], lambda: torch.scalar_tensor(3, dtype=torch.int64),
         attrs={"value": 3, "dtype": "int64"}))

# arange / linspace / logspace / eye
add(case("arange_int_infer", "arange", [], lambda: torch.arange(2, 11, 3), attrs={"start": 2, "end": 11, "step": 3}))
add(case("arange_float_infer", "arange", [], lambda: torch.arange(0, 1, 0.1), attrs={"start": 0, "end": 1, "step": 0.1}))
add(case("arange_neg_step", "arange", [], lambda: torch.arange(5, -4, -2), attrs={"start": 5, "end": -4, "step": -2}))
add(case("arange_float_f64", "arange", [], lambda: torch.arange(-1.5, 2.25, 0.25, dtype=torch.float64),
         attrs={"start": -1.5, "end": 2.25, "step": 0.25, "dtype": "float64"}))
add(case("arange_empty", "arange", [], lambda: torch.arange(3, 3), attrs={"start": 3, "end": 3}))
add(case("arange_step0", "arange", [], lambda: torch.arange(0, 3, 0), attrs={"start": 0, "end": 3, "step": 0},
         error="step must be nonzero"))
add(case("arange_wrong_sign", "arange", [], lambda: torch.arange(0, 3, -1), attrs={"start": 0, "end": 3, "step": -1},
         error="upper bound and larger bound inconsistent with step sign"))
add(case("linspace_basic", "linspace", [], lambda: torch.linspace(-1, 1, 7), attrs={"start": -1.0, "end": 1.0, "steps": 7}))
add(case("linspace_f64", "linspace", [], lambda: torch.linspace(0, 10, 11, dtype=torch.float64),
         attrs={"start": 0.0, "end": 10.0, "steps": 11, "dtype": "float64"}))
add(case("linspace_int", "linspace", [], lambda: torch.linspace(0, 10, 4, dtype=torch.int64),
         attrs={"start": 0.0, "end": 10.0, "steps": 4, "dtype": "int64"}))
add(case("linspace_one", "linspace", [], lambda: torch.linspace(3, 5, 1), attrs={"start": 3.0, "end": 5.0, "steps": 1}))
add(case("linspace_zero", "linspace", [], lambda: torch.linspace(3, 5, 0), attrs={"start": 3.0, "end": 5.0, "steps": 0}))
add(case("linspace_neg", "linspace", [], lambda: torch.linspace(3, 5, -1), attrs={"start": 3.0, "end": 5.0, "steps": -1},
         error="number of steps must be non-negative"))
add(case("logspace_basic", "logspace", [], lambda: torch.logspace(-2, 2, 5), attrs={"start": -2.0, "end": 2.0, "steps": 5}))
add(case("logspace_one", "logspace", [], lambda: torch.logspace(3, 5, 1), attrs={"start": 3.0, "end": 5.0, "steps": 1}))
add(case("linspace_int32_neg", "linspace", [], lambda: torch.linspace(-5, 5, 6, dtype=torch.int32),
         attrs={"start": -5.0, "end": 5.0, "steps": 6, "dtype": "int32"}))
add(case("logspace_base2", "logspace", [], lambda: torch.logspace(0, 3, 4, base=2.0),
         attrs={"start": 0.0, "end": 3.0, "steps": 4, "base": 2.0}))
add(case("eye_square", "eye", [], lambda: torch.eye(3), attrs={"n": 3}))
add(case("eye_zero", "eye", [], lambda: torch.eye(0), attrs={"n": 0}))
add(case("eye_neg", "eye", [], lambda: torch.eye(-1), attrs={"n": -1}, error="n must be greater or equal to 0, got -1"))

# *_like
add(case("ones_like_f16", "ones_like", [T((2, 3), "float16")], lambda x: torch.ones_like(x)))
add(case("ones_like_dtype", "ones_like", [T((2, 3))], lambda x: torch.ones_like(x, dtype=torch.int32), attrs={"dtype": "int32"}))
add(case("full_like", "full_like", [T((3,), "int16")], lambda x: torch.full_like(x, 5), attrs={"value": 5}))
add(case("full_like_float_on_int", "full_like", [T((3,), "int16")], lambda x: torch.full_like(x, 2.7), attrs={"value": 2.7}))

# clone / contiguous / to
add(case("clone_grad", "clone", [T((2, 3), layout="strided")], lambda x: x.clone(), gradgrad=True))
add(case("clone_0dim", "clone", [T(())], lambda x: x.clone()))
add(case("clone_empty", "clone", [T((0, 2))], lambda x: x.clone()))
add(case("contiguous_copy", "contiguous", [T((3, 4), layout="transposed")], lambda x: x.contiguous(), check_strides=True))
add(case("contiguous_same", "contiguous", [T((3, 4))], lambda x: x.contiguous(), check_strides=True))
add(case("contiguous_strided", "contiguous", [T((3, 4), layout="strided")], lambda x: x.contiguous(), check_strides=True))
add(case("to_same_dtype", "to_dtype", [T((3,))], lambda x: x.to(torch.float32), attrs={"dtype": "float32"}, check_strides=True))
add(case("to_f64_grad", "to_dtype", [T((2, 3))], lambda x: x.to(torch.float64), attrs={"dtype": "float64"}, gradgrad=True))
add(case("to_f32_from_f64_grad", "to_dtype", [T((2, 3), "float64")], lambda x: x.to(torch.float32), attrs={"dtype": "float32"},
         fd=False))
add(case("to_int_special", "to_dtype", [T((4,), values=[1.9, -1.9, 0.5, -0.5])], lambda x: x.to(torch.int32),
         attrs={"dtype": "int32"}))
add(case("to_bool_special", "to_dtype", [T((4,), values=[0.0, -0.0, 0.1, float("nan")])], lambda x: x.to(torch.bool),
         attrs={"dtype": "bool"}))
add(case("to_uint8_from_int_wrap", "to_dtype", [T((3,), "int64", values=[-1, 256, 300])], lambda x: x.to(torch.uint8),
         attrs={"dtype": "uint8"}))
add(case("to_f16_rounding", "to_dtype", [T((4,), "float64", values=[1.0009765625, 65504.0, 65520.0, 1e-8])],
         lambda x: x.to(torch.float16), attrs={"dtype": "float16"}, fd=False, rtol=0, atol=0))
add(case("to_bf16_rounding", "to_dtype", [T((3,), "float32", values=[1.00390625, 1.01171875, 3.0e38])],
         lambda x: x.to(torch.bfloat16), attrs={"dtype": "bfloat16"}, fd=False, rtol=0, atol=0))

# copy_ / fill_ / zero_
add(case("copy_broadcast", "copy_", [T((2, 3)), T((3,))], lambda d, s: d.clone().copy_(s), gradgrad=True))
add(case("copy_convert", "copy_", [T((2, 3)), T((2, 3), "int32")], lambda d, s: d.clone().copy_(s)))
add(case("copy_to_int", "copy_", [T((2, 3), "int16"), T((2, 3), "float64")], lambda d, s: d.clone().copy_(s)))
add(case("copy_f64_to_f32_grad", "copy_", [T((2, 3)), T((2, 3), "float64")], lambda d, s: d.clone().copy_(s), fd=False))
add(case("copy_transposed", "copy_", [T((3, 4), layout="transposed"), T((3, 4), layout="strided")],
         lambda d, s: d.clone().copy_(s)))
add(case("copy_bad_shape", "copy_", [T((2, 3)), T((4,))], lambda d, s: d.clone().copy_(s),
         error="The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1"))
add(case("fill_float", "fill_", [T((2, 3))], lambda x: x.clone().fill_(2.5), attrs={"value": 2.5}))
add(case("fill_int", "fill_", [T((2, 3), "int8")], lambda x: x.clone().fill_(-7), attrs={"value": -7}))
add(case("fill_bool", "fill_", [T((2, 3), "bool")], lambda x: x.clone().fill_(True), attrs={"value": True}))
add(case("fill_f16", "fill_", [T((2,), "float16")], lambda x: x.clone().fill_(0.1), attrs={"value": 0.1}))
add(case("zero_", "zero_", [T((2, 3), layout="transposed")], lambda x: x.clone().zero_()))
