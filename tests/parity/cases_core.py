"""Parity cases of the core ops: add/sub/mul/div, neg/exp/log, sum/mean/sum_to_size."""
import torch
from parity_lib import case, T

ALL = ["float32", "float64", "float16", "bfloat16", "int8", "uint8", "int16", "int32", "int64", "bool"]
FLOATS = ["float32", "float64", "float16", "bfloat16"]
INTS = ["int8", "uint8", "int16", "int32", "int64"]

CASES = []
add = CASES.append


# ---- add / sub / mul / div over every dtype -------------------------------------------
for dt in ALL:
    add(case("add_%s" % dt, "add", [T((2, 3), dt), T((2, 3), dt)], lambda a, b: torch.add(a, b), gradgrad=dt == "float64"))
    add(case("mul_%s" % dt, "mul", [T((3, 2), dt), T((3, 2), dt)], lambda a, b: a * b, gradgrad=dt == "float64"))
    if dt != "bool":
        add(case("sub_%s" % dt, "sub", [T((4,), dt), T((4,), dt)], lambda a, b: a - b))
    # true division: integers promote to float32; avoid zero divisors
    add(case("div_%s" % dt, "div", [T((2, 2), dt), T((2, 2), dt, low=1, high=4) if dt != "bool" else
                                    T((2, 2), dt, values=[[True, True], [True, True]])],
             lambda a, b: a / b, gradgrad=dt == "float64"))
for dt in INTS:
    add(case("div_floor_%s" % dt, "div", [T((3, 3), dt, low=-9 if dt != "uint8" else 0, high=9),
                                          T((3, 3), dt, low=1, high=4)],
             lambda a, b: torch.div(a, b, rounding_mode="floor"), attrs={"rounding_mode": "floor"}))
    add(case("div_trunc_%s" % dt, "div", [T((3, 3), dt, low=-9 if dt != "uint8" else 0, high=9),
                                          T((3, 3), dt, low=1, high=4)],
             lambda a, b: torch.div(a, b, rounding_mode="trunc"), attrs={"rounding_mode": "trunc"}))
for dt in FLOATS:
    # rounding modes have zero gradient; fd is off because floor/trunc jump
    add(case("div_floor_%s" % dt, "div", [T((3, 3), dt, low=-5, high=5), T((3, 3), dt, low=0.5, high=2)],
             lambda a, b: torch.div(a, b, rounding_mode="floor"), attrs={"rounding_mode": "floor"}, fd=False))
    add(case("div_trunc_%s" % dt, "div", [T((3, 3), dt, low=-5, high=5), T((3, 3), dt, low=0.5, high=2)],
             lambda a, b: torch.div(a, b, rounding_mode="trunc"), attrs={"rounding_mode": "trunc"}, fd=False))

# integer wrap-around like C++
add(case("add_int8_wrap", "add", [T((3,), "int8", values=[100, -100, 127]), T((3,), "int8", values=[100, -100, 1])],
         lambda a, b: a + b))
add(case("mul_uint8_wrap", "mul", [T((2,), "uint8", values=[200, 16]), T((2,), "uint8", values=[2, 16])],
         lambda a, b: a * b))
# float edge values: inf, nan, signed zeros
add(case("div_float_special", "div", [T((5,), values=[1.0, -1.0, 0.0, float("inf"), float("nan")]),
                                      T((5,), values=[0.0, 0.0, 0.0, 2.0, 1.0])],
         lambda a, b: a / b, fd=False, attrs={}, rtol=0, atol=0))
add(case("add_inf_nan", "add", [T((4,), values=[float("inf"), float("-inf"), float("nan"), 1.0]),
                                T((4,), values=[1.0, 2.0, 3.0, float("inf")])],
         lambda a, b: a + b, fd=False))

# ---- broadcasting, layouts, zero-size, 0-dim ------------------------------------------
add(case("add_broadcast", "add", [T((3, 1)), T((4,))], lambda a, b: torch.add(a, b), gradgrad=True))
add(case("add_broadcast_3d", "add", [T((2, 1, 4)), T((3, 1))], lambda a, b: a + b))
add(case("add_alpha_int", "add", [T((2, 3), "int64"), T((3,), "int64")], lambda a, b: torch.add(a, b, alpha=2),
         attrs={"alpha": 2}))
add(case("add_alpha_float", "add", [T((2, 3)), T((3,))], lambda a, b: torch.add(a, b, alpha=-1.5),
         attrs={"alpha": -1.5}, gradgrad=True))
add(case("sub_alpha_float", "sub", [T((2, 3)), T((2, 3))], lambda a, b: torch.sub(a, b, alpha=0.5),
         attrs={"alpha": 0.5}))
add(case("add_transposed", "add", [T((3, 4), layout="transposed"), T((3, 4))], lambda a, b: a + b))
add(case("add_strided", "add", [T((3, 4), layout="strided"), T((4,), layout="strided")], lambda a, b: a + b))
add(case("mul_transposed_both", "mul", [T((2, 3, 4), layout="transposed"), T((2, 3, 4), layout="transposed")],
         lambda a, b: a * b, gradgrad=True))
add(case("div_strided_3d", "div", [T((2, 3, 4), layout="strided"), T((3, 4), low=0.5, high=2, layout="transposed")],
         lambda a, b: a / b, gradgrad=True))
add(case("add_zero_size", "add", [T((0, 3)), T((3,))], lambda a, b: a + b))
add(case("mul_zero_size_bcast", "mul", [T((2, 0, 1)), T((1, 5))], lambda a, b: a * b))
add(case("add_0dim", "add", [T(()), T(())], lambda a, b: a + b, gradgrad=True))
add(case("mul_0dim_tensor", "mul", [T((2, 3)), T(())], lambda a, b: a * b, gradgrad=True))
add(case("div_0dim_num", "div", [T(()), T((3,), low=0.5, high=2)], lambda a, b: a / b, gradgrad=True))
add(case("add_int_and_float", "add", [T((3,), "int32"), T((3,))], lambda a, b: a + b))
add(case("mul_float16_float32", "mul", [T((3,), "float16"), T((3,))], lambda a, b: a * b))
add(case("add_bf16_f16", "add", [T((3,), "bfloat16"), T((3,), "float16")], lambda a, b: a + b))
add(case("add_uint8_int8", "add", [T((3,), "uint8"), T((3,), "int8")], lambda a, b: a + b))
add(case("add_bool_int", "add", [T((3,), "bool"), T((3,), "int16")], lambda a, b: a + b))
add(case("mul_int_0dim_float", "mul", [T((3,), "int32"), T((), "float64")], lambda a, b: a * b))
add(case("mul_f32_0dim_f64", "mul", [T((3,)), T((), "float64")], lambda a, b: a * b))
add(case("mul_f16_0dim_i64", "mul", [T((3,), "float16"), T((), "int64")], lambda a, b: a * b))
add(case("add_int8_0dim_int64", "add", [T((3,), "int8"), T((), "int64")], lambda a, b: a + b))
add(case("div_int_int", "div", [T((2, 2), "int64", low=-5, high=5), T((2,), "int32", low=1, high=3)],
         lambda a, b: a / b))

# ---- Python scalars ---------------------------------------------------------------
add(case("add_scalar_float_on_int", "add", [T((3,), "int64")], lambda a: a + 2.5, attrs={"b_scalar": 2.5}))
add(case("add_scalar_int_on_uint8", "add", [T((3,), "uint8")], lambda a: a + 3, attrs={"b_scalar": 3}))
add(case("add_scalar_bool_on_int", "add", [T((3,), "int16")], lambda a: a + True, attrs={"b_scalar": True}))
add(case("add_scalar_float_on_f16", "add", [T((3,), "float16")], lambda a: a + 1.25, attrs={"b_scalar": 1.25}))
add(case("add_scalar_int_on_bool", "add", [T((3,), "bool")], lambda a: a + 2, attrs={"b_scalar": 2}))
add(case("add_scalar_float_on_bool", "add", [T((3,), "bool")], lambda a: a + 2.0, attrs={"b_scalar": 2.0}))
add(case("sub_scalar", "sub", [T((2, 2))], lambda a: a - 1.5, attrs={"b_scalar": 1.5}))
add(case("rsub_scalar", "rsub", [T((2, 2))], lambda a: 1.5 - a, attrs={"b_scalar": 1.5}))
add(case("rsub_scalar_int", "rsub", [T((2, 2), "int32")], lambda a: 7 - a, attrs={"b_scalar": 7}))
add(case("mul_scalar_float", "mul", [T((2, 3))], lambda a: a * -2.5, attrs={"b_scalar": -2.5}, gradgrad=True))
add(case("mul_scalar_float_on_int", "mul", [T((2, 3), "int8")], lambda a: a * 0.5, attrs={"b_scalar": 0.5}))
add(case("div_scalar", "div", [T((2, 3))], lambda a: a / 4, attrs={"b_scalar": 4}))
add(case("div_scalar_int", "div", [T((2, 3), "int64")], lambda a: a / 2, attrs={"b_scalar": 2}))

# ---- in place and out= ----------------------------------------------------------------
add(case("add_inplace", "add", [T((2, 3)), T((3,))], lambda a, b: a.clone().add_(b), attrs={"inplace": True},
         gradgrad=True))
add(case("add_inplace_alpha", "add", [T((2, 3)), T((2, 3))], lambda a, b: a.clone().add_(b, alpha=2),
         attrs={"inplace": True, "alpha": 2}))
add(case("add_inplace_int_from_bool", "add", [T((2, 3), "int32"), T((2, 3), "bool")], lambda a, b: a.clone().add_(b),
         attrs={"inplace": True}))
add(case("add_inplace_f16_from_f32", "add", [T((4,), "float16"), T((4,))], lambda a, b: a.clone().add_(b),
         attrs={"inplace": True}))
add(case("add_inplace_bad_cast", "add", [T((3,), "int64"), T((3,))], lambda a, b: a.clone().add_(b),
         attrs={"inplace": True}, error="result type Float can't be cast to the desired output type Long"))
add(case("add_inplace_bad_shape", "add", [T((3,)), T((2, 3))], lambda a, b: a.clone().add_(b),
         attrs={"inplace": True}, error="doesn't match the broadcast shape"))
add(case("sub_inplace", "sub", [T((2, 3)), T((2, 3))], lambda a, b: a.clone().sub_(b), attrs={"inplace": True}))
add(case("mul_inplace", "mul", [T((2, 3), layout="transposed"), T((2, 3))], lambda a, b: a.clone().mul_(b),
         attrs={"inplace": True}, gradgrad=True))
add(case("mul_inplace_scalar", "mul", [T((2, 3))], lambda a: a.clone().mul_(3), attrs={"inplace": True, "b_scalar": 3}))
add(case("div_inplace", "div", [T((2, 3)), T((2, 3), low=0.5, high=2)], lambda a, b: a.clone().div_(b),
         attrs={"inplace": True}, gradgrad=True))
add(case("div_inplace_int_error", "div", [T((2, 3), "int64"), T((2, 3), "int64", low=1, high=3)],
         lambda a, b: a.clone().div_(b), attrs={"inplace": True},
         error="result type Float can't be cast to the desired output type Long"))
add(case("add_scalar_inplace", "add", [T((3,), "int32")], lambda a: a.clone().add_(5),
         attrs={"inplace": True, "b_scalar": 5}))
add(case("add_out_f64", "add", [T((2, 3), requires_grad=False), T((3,), requires_grad=False)],
         lambda a, b: torch.add(a, b, out=torch.empty(0, dtype=torch.float64)),
         attrs={"out": True, "out_dtype": "float64"}))
add(case("add_out_grad_error", "add", [T((2, 3)), T((3,))],
         lambda a, b: torch.add(a, b, out=torch.empty(0)), attrs={"out": True, "out_dtype": "float32"},
         error="functions with out=... arguments don't support automatic differentiation, but one of the arguments requires grad."))
add(case("mul_out_int_error", "mul", [T((2, 3), requires_grad=False), T((3,), requires_grad=False)],
         lambda a, b: torch.mul(a, b, out=torch.empty(0, dtype=torch.int64)),
         attrs={"out": True, "out_dtype": "int64"}, error="result type Float can't be cast to the desired output type Long"))

# ---- errors -----------------------------------------------------------------------------
add(case("add_shape_mismatch", "add", [T((2, 3)), T((4,))], lambda a, b: a + b,
         error="The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1"))
add(case("sub_bool_error", "sub", [T((3,), "bool"), T((3,), "bool")], lambda a, b: a - b,
         error="Subtraction, the `-` operator, with two bool tensors is not supported"))
add(case("sub_bool_int_error", "sub", [T((3,), "bool"), T((3,), "int64")], lambda a, b: a - b,
         error="Subtraction, the `-` operator, with a bool tensor is not supported"))
add(case("add_alpha_float_int_error", "add", [T((3,), "int64"), T((3,), "int64")],
         lambda a, b: torch.add(a, b, alpha=1.5), attrs={"alpha": 1.5},
         error="For integral input tensors, argument alpha must not be a floating point number."))
add(case("div_mode_bad", "div", [T((2,)), T((2,))], lambda a, b: torch.div(a, b, rounding_mode="round"),
         attrs={"rounding_mode": "round"},
         error="div expected rounding_mode to be one of None, 'trunc', or 'floor' but found 'round'"))
add(case("neg_bool_error", "neg", [T((3,), "bool")], lambda a: -a,
         error="Negation, the `-` operator, on a bool tensor is not supported"))

# ---- unary ---------------------------------------------------------------------------------
for dt in ALL:
    if dt != "bool":
        add(case("neg_%s" % dt, "neg", [T((2, 3), dt)], lambda a: -a, gradgrad=dt == "float64"))
    # PyTorch 1.13 has no float16 exp/log on CPU, and ctorch follows it
    add(case("exp_%s" % dt, "exp", [T((2, 3), dt)], lambda a: torch.exp(a), gradgrad=dt == "float64",
             error="\"exp_vml_cpu\" not implemented for 'Half'" if dt == "float16" else None))
    add(case("log_%s" % dt, "log", [T((2, 3), dt, low=0.2 if dt in FLOATS else 1, high=3)], lambda a: torch.log(a),
             gradgrad=dt == "float64", error="\"log_vml_cpu\" not implemented for 'Half'" if dt == "float16" else None))
add(case("exp_transposed", "exp", [T((3, 4), layout="transposed")], lambda a: a.exp(), gradgrad=True))
add(case("exp_strided", "exp", [T((2, 3, 2), layout="strided")], lambda a: a.exp()))
add(case("exp_0dim", "exp", [T(())], lambda a: a.exp(), gradgrad=True))
add(case("exp_empty", "exp", [T((0, 4))], lambda a: a.exp()))
add(case("exp_special", "exp", [T((4,), values=[float("inf"), float("-inf"), float("nan"), 100.0])],
         lambda a: a.exp(), fd=False))
add(case("log_special", "log", [T((5,), values=[0.0, -1.0, float("inf"), float("nan"), 1.0])], lambda a: a.log(),
         fd=False))
add(case("log_strided", "log", [T((3, 4), low=0.5, high=4, layout="strided")], lambda a: a.log(), gradgrad=True))
add(case("neg_inplace", "neg", [T((2, 3))], lambda a: a.clone().neg_(), attrs={"inplace": True}))
add(case("exp_inplace", "exp", [T((2, 3))], lambda a: a.clone().exp_(), attrs={"inplace": True}, gradgrad=True))
add(case("log_inplace", "log", [T((2, 3), low=0.5, high=2)], lambda a: a.clone().log_(), attrs={"inplace": True}))
add(case("exp_inplace_int_error", "exp", [T((3,), "int64")], lambda a: a.clone().exp_(), attrs={"inplace": True},
         error="result type Float can't be cast to the desired output type Long"))
add(case("neg_inplace_int", "neg", [T((3,), "int16")], lambda a: a.clone().neg_(), attrs={"inplace": True}))

# ---- reductions -----------------------------------------------------------------------------
for dt in ALL:
    add(case("sum_all_%s" % dt, "sum", [T((3, 4), dt)], lambda a: a.sum(), gradgrad=dt == "float64",
             # float16/bfloat16 accumulate in float either way; the sum of 12 values rounds once
             ))
    add(case("sum_dim_%s" % dt, "sum", [T((3, 4), dt)], lambda a: a.sum(dim=1), attrs={"dims": [1]}))
for dt in FLOATS:
    add(case("mean_all_%s" % dt, "mean", [T((3, 4), dt)], lambda a: a.mean()))
    add(case("mean_dim_%s" % dt, "mean", [T((3, 4), dt)], lambda a: a.mean(dim=0, keepdim=True),
             attrs={"dims": [0], "keepdim": True}))
add(case("sum_dims_nc", "sum", [T((2, 3, 4), layout="transposed")], lambda x: x.sum(dim=(0, 2), keepdim=True),
         attrs={"dims": [0, 2], "keepdim": True}, gradgrad=True))
add(case("sum_neg_dim_strided", "sum", [T((2, 3, 4), layout="strided")], lambda x: x.sum(dim=-1),
         attrs={"dims": [-1]}))
add(case("sum_dims_empty_list", "sum", [T((2, 3))], lambda x: x.sum(dim=[]), attrs={"dims": []}))
add(case("sum_0dim", "sum", [T(())], lambda x: x.sum(), gradgrad=True))
add(case("sum_0dim_dim0", "sum", [T(())], lambda x: x.sum(dim=0), attrs={"dims": [0]}))
add(case("sum_zero_size", "sum", [T((0, 3))], lambda x: x.sum(dim=0), attrs={"dims": [0]}))
add(case("sum_zero_size_all", "sum", [T((2, 0))], lambda x: x.sum()))
add(case("sum_dtype_f64", "sum", [T((3, 4))], lambda x: x.sum(dtype=torch.float64), attrs={"dtype": "float64"},
         fd=False))
add(case("sum_dtype_int32", "sum", [T((3, 4), "int8")], lambda x: x.sum(dtype=torch.int32), attrs={"dtype": "int32"}))
add(case("sum_bool", "sum", [T((5, 3), "bool")], lambda x: x.sum(dim=0), attrs={"dims": [0]}))
add(case("sum_large", "sum", [T((64, 300))], lambda x: x.sum(dim=1), attrs={"dims": [1]},
     # float32 sums of 300 terms: PyTorch accumulates in float32 with a different order
     rtol=1e-4, atol=1e-4))
add(case("sum_dim_dup_error", "sum", [T((2, 3))], lambda x: x.sum(dim=(1, 1)), attrs={"dims": [1, 1]},
         error="dim 1 appears multiple times in the list of dims"))
add(case("sum_dim_range_error", "sum", [T((2, 3))], lambda x: x.sum(dim=2), attrs={"dims": [2]},
         error="Dimension out of range (expected to be in range of [-2, 1], but got 2)"))
add(case("mean_dims_nc", "mean", [T((2, 3, 4), layout="transposed")], lambda x: x.mean(dim=(0, 1)),
         attrs={"dims": [0, 1]}, gradgrad=True))
add(case("mean_0dim", "mean", [T(())], lambda x: x.mean()))
add(case("mean_empty", "mean", [T((0, 3))], lambda x: x.mean(dim=0), attrs={"dims": [0]}))
add(case("mean_int_error", "mean", [T((3,), "int64")], lambda x: x.mean(),
         error="mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: Long"))
add(case("sum_to_size", "sum_to_size", [T((2, 3, 4))], lambda x: x.sum_to_size(3, 1), attrs={"size": [3, 1]},
         gradgrad=True))
add(case("sum_to_size_same", "sum_to_size", [T((2, 3))], lambda x: x.sum_to_size(2, 3), attrs={"size": [2, 3]}))
add(case("sum_to_size_nc", "sum_to_size", [T((4, 3), layout="transposed")], lambda x: x.sum_to_size(1, 3),
         attrs={"size": [1, 3]}))
add(case("sum_to_size_int", "sum_to_size", [T((4, 3), "int32")], lambda x: x.sum_to_size(3), attrs={"size": [3]}))
add(case("sum_to_size_error", "sum_to_size", [T((2, 3))], lambda x: x.sum_to_size(4), attrs={"size": [4]},
         error="is not expandable to size"))
