"""Parity cases of the binary ops of src/ops/binary.c beyond the core add/sub/mul/div cases
of cases_core.py: floor_divide, remainder, fmod, pow, atan2, maximum/minimum, fmax/fmin,
hypot, logaddexp(2), copysign, xlogy, bitwise ops and shifts, logical ops, comparisons,
isclose/allclose/equal, rsub with tensors, and the out=/in-place/scalar forms of add/sub/div.
Every case name starts with "bin_". Attrs: see tests/parity/run_binary.c."""
import torch
from parity_lib import case, T

ALL = ["float32", "float64", "float16", "bfloat16", "int8", "uint8", "int16", "int32", "int64", "bool"]
FLOATS = ["float32", "float64", "float16", "bfloat16"]
INTS = ["int8", "uint8", "int16", "int32", "int64"]
NAN = float("nan")
INF = float("inf")

CASES = []
add = CASES.append


def lo(dt, v):
    """uint8 cannot hold negative draws."""
    return max(v, 0) if dt == "uint8" else v


def pair(dt, shape=(2, 3), a=(-5, 5), b=(-5, 5), rg=None):
    return [T(shape, dt, low=lo(dt, a[0]), high=a[1], requires_grad=rg),
            T(shape, dt, low=lo(dt, b[0]), high=b[1], requires_grad=rg)]


# ---- floor_divide / remainder / fmod: every dtype but bool ------------------------------
for dt in FLOATS + INTS:
    fl = dt in FLOATS
    div_b = (0.5, 2) if fl else (1, 4)
    # floor_divide has no derivative in PyTorch (backward raises): inputs do not require grad
    add(case("bin_floor_divide_%s" % dt, "floor_divide", pair(dt, a=(-9, 9), b=div_b, rg=False),
             lambda a, b: torch.floor_divide(a, b)))
    add(case("bin_remainder_%s" % dt, "remainder", pair(dt, a=(-9, 9), b=div_b), lambda a, b: torch.remainder(a, b)))
    add(case("bin_fmod_%s" % dt, "fmod", pair(dt, a=(-9, 9), b=div_b), lambda a, b: torch.fmod(a, b)))
# signs: Python's % takes the divisor's sign, fmod the dividend's; floor division rounds down
for dt in ["float32", "float64", "int8", "int64"]:
    av = [5, -5, 5, -5, 0, 7] if dt.startswith("int") else [5.0, -5.0, 5.0, -5.0, 0.5, 7.5]
    bv = [3, 3, -3, -3, 2, -2] if dt.startswith("int") else [3.0, 3.0, -3.0, -3.0, 2.0, -2.0]
    fl = dt.startswith("float")
    add(case("bin_remainder_signs_%s" % dt, "remainder", [T((6,), dt, values=av), T((6,), dt, values=bv)],
             lambda a, b: a % b, fd=False))
    add(case("bin_fmod_signs_%s" % dt, "fmod", [T((6,), dt, values=av), T((6,), dt, values=bv)],
             lambda a, b: torch.fmod(a, b), fd=False))
    add(case("bin_floor_divide_signs_%s" % dt, "floor_divide",
             [T((6,), dt, values=av, requires_grad=False), T((6,), dt, values=bv, requires_grad=False)],
             lambda a, b: a // b))
# float floor division is exact like Python's (1 // 0.1 == 9), with IEEE results for 0 divisors
add(case("bin_floor_divide_exact_f64", "floor_divide",
         [T((7,), "float64", values=[1.0, -0.5, 0.5, -0.0, 7.0, -7.0, 0.0], requires_grad=False),
          T((7,), "float64", values=[0.1, 2.0, -2.0, 3.0, 0.0, 0.0, 0.0], requires_grad=False)],
         lambda a, b: torch.floor_divide(a, b)))
add(case("bin_floor_divide_exact_f32", "floor_divide",
         [T((6,), "float32", values=[1.0, 3.0, -1.0, 1e8, 0.3, 2.5], requires_grad=False),
          T((6,), "float32", values=[0.1, 0.1, 0.1, 3.0, 0.1, 0.5], requires_grad=False)],
         lambda a, b: torch.floor_divide(a, b)))
add(case("bin_remainder_inf", "remainder",
         [T((5,), values=[5.0, -5.0, 5.0, 0.0, INF]), T((5,), values=[INF, INF, -INF, -3.0, 2.0])],
         lambda a, b: torch.remainder(a, b), fd=False))
add(case("bin_fmod_special", "fmod", [T((4,), values=[5.0, -5.0, INF, 1.0]), T((4,), values=[INF, 0.0, 2.0, NAN])],
         lambda a, b: torch.fmod(a, b), fd=False))
# scalar forms, in place, broadcast, 0-dim, layouts
add(case("bin_remainder_scalar_int", "remainder", [T((4,), "int64", low=-9, high=9)], lambda a: a % -3,
         attrs={"b_scalar": -3}))
add(case("bin_remainder_scalar_float_on_int", "remainder", [T((4,), "int64", low=-9, high=9)],
         lambda a: torch.remainder(a, 1.5), attrs={"b_scalar": 1.5}))
add(case("bin_remainder_scalar_f32", "remainder", [T((2, 3), low=-5, high=5)], lambda a: torch.remainder(a, 1.25),
         attrs={"b_scalar": 1.25}))
add(case("bin_fmod_scalar", "fmod", [T((2, 3), low=-5, high=5)], lambda a: torch.fmod(a, -1.5),
         attrs={"b_scalar": -1.5}))
add(case("bin_floor_divide_scalar_int8", "floor_divide", [T((5,), "int8", low=-100, high=100)],
         lambda a: torch.floor_divide(a, 7), attrs={"b_scalar": 7}))
add(case("bin_remainder_inplace", "remainder", [T((2, 3), low=-5, high=5), T((3,), low=0.5, high=2)],
         lambda a, b: a.clone().remainder_(b), attrs={"inplace": 1}))
add(case("bin_fmod_inplace_scalar", "fmod", [T((2, 3), "int32", low=-20, high=20)], lambda a: a.clone().fmod_(3),
         attrs={"inplace": 1, "b_scalar": 3}))
add(case("bin_floor_divide_inplace", "floor_divide", [T((2, 3), "int64", low=-20, high=20), T((3,), "int64", low=1, high=5)],
         lambda a, b: a.clone().floor_divide_(b), attrs={"inplace": 1}))
add(case("bin_remainder_bcast_nc", "remainder",
         [T((3, 4), low=-5, high=5, layout="transposed"), T((3, 1), low=0.5, high=2, layout="strided")],
         lambda a, b: torch.remainder(a, b)))
add(case("bin_fmod_0dim", "fmod", [T((2, 3), "int16", low=-50, high=50), T((), "int64", values=7)],
         lambda a, b: torch.fmod(a, b)))
add(case("bin_fmod_empty", "fmod", [T((0, 3)), T((3,), low=0.5, high=2)], lambda a, b: torch.fmod(a, b)))
add(case("bin_remainder_mixed", "remainder", [T((4,), "int32", low=-9, high=9), T((4,), low=0.5, high=2)],
         lambda a, b: torch.remainder(a, b)))
# integer division by zero and bool inputs fail like PyTorch
add(case("bin_floor_divide_zero", "floor_divide", [T((3,), "int64", values=[5, -7, 0]), T((3,), "int64", values=[1, 0, 2])],
         lambda a, b: torch.floor_divide(a, b), error="ZeroDivisionError"))
add(case("bin_remainder_zero", "remainder", [T((3,), "int32", values=[5, -7, 0])], lambda a: torch.remainder(a, 0),
         attrs={"b_scalar": 0}, error="ZeroDivisionError"))
add(case("bin_fmod_zero", "fmod", [T((3,), "uint8", values=[5, 7, 0]), T((), "uint8", values=0)],
         lambda a, b: torch.fmod(a, b), error="ZeroDivisionError"))
add(case("bin_div_floor_zero", "div_ext", [T((3,), "int16", values=[5, -7, 0]), T((3,), "int16", values=[1, 0, 2])],
         lambda a, b: torch.div(a, b, rounding_mode="floor"), attrs={"rounding_mode": "floor"}, error="ZeroDivisionError"))
add(case("bin_div_trunc_zero", "div_ext", [T((3,), "int8", values=[5, -7, 0])],
         lambda a: torch.div(a, 0, rounding_mode="trunc"), attrs={"rounding_mode": "trunc", "b_scalar": 0},
         error="ZeroDivisionError"))
add(case("bin_remainder_bool", "remainder", [T((2,), "bool"), T((2,), "bool")], lambda a, b: torch.remainder(a, b),
         error="\"remainder_cpu\" not implemented for 'Bool'"))
add(case("bin_fmod_bool", "fmod", [T((2,), "bool"), T((2,), "bool")], lambda a, b: torch.fmod(a, b),
         error="\"fmod_cpu\" not implemented for 'Bool'"))
add(case("bin_floor_divide_bool", "floor_divide", [T((2,), "bool"), T((2,), "bool")],
         lambda a, b: torch.floor_divide(a, b), error="\"div_floor_cpu\" not implemented for 'Bool'"))
add(case("bin_remainder_inplace_cast", "remainder", [T((3,), "int64"), T((3,), low=0.5, high=2)],
         lambda a, b: a.clone().remainder_(b), attrs={"inplace": 1},
         error="result type Float can't be cast to the desired output type Long"))

# ---- div extras: rounding modes with scalars, in place, out= ------------------------------
add(case("bin_div_scalar_floor_int", "div_ext", [T((5,), "int64", low=-9, high=9)],
         lambda a: torch.div(a, 2, rounding_mode="floor"), attrs={"b_scalar": 2, "rounding_mode": "floor"}))
add(case("bin_div_scalar_trunc_f32", "div_ext", [T((5,), low=-9, high=9)],
         lambda a: torch.div(a, -2.5, rounding_mode="trunc"), attrs={"b_scalar": -2.5, "rounding_mode": "trunc"}, fd=False))
add(case("bin_div_inplace_floor_int", "div_ext", [T((2, 3), "int32", low=-9, high=9), T((3,), "int32", low=1, high=4)],
         lambda a, b: a.clone().div_(b, rounding_mode="floor"), attrs={"inplace": 1, "rounding_mode": "floor"}))
add(case("bin_div_inplace_true_int", "div_ext", [T((3,), "int64"), T((3,), "int64", low=1, high=3)],
         lambda a, b: a.clone().div_(b), attrs={"inplace": 1},
         error="result type Float can't be cast to the desired output type Long"))
add(case("bin_div_inplace_f32", "div_ext", [T((2, 3)), T((2, 3), low=0.5, high=2)], lambda a, b: a.clone().div_(b),
         attrs={"inplace": 1}, gradgrad=True))
add(case("bin_div_out_int", "div_ext", [T((4,), "int64", low=-9, high=9), T((4,), "int64", low=1, high=4)],
         lambda a, b: torch.div(a, b, rounding_mode="floor", out=torch.empty(0, dtype=torch.int64)),
         attrs={"out": 1, "out_dtype": "int64", "rounding_mode": "floor"}))
add(case("bin_div_trunc_f32_near_int", "div_ext",
         [T((4,), values=[0.3, 0.9, -0.6, 2.9999999], requires_grad=False),
          T((4,), values=[0.1, 0.3, 0.2, 1.0], requires_grad=False)],
         lambda a, b: torch.div(a, b, rounding_mode="trunc"), attrs={"rounding_mode": "trunc"}))
add(case("bin_div_floor_f16", "div_ext", [T((2, 3), "float16", low=-9, high=9, requires_grad=False),
                                          T((2, 3), "float16", low=0.5, high=2, requires_grad=False)],
         lambda a, b: torch.div(a, b, rounding_mode="floor"), attrs={"rounding_mode": "floor"}))
add(case("bin_div_mode_bad", "div_ext", [T((2,)), T((2,))], lambda a, b: torch.div(a, b, rounding_mode="round"),
         attrs={"rounding_mode": "round"},
         error="div expected rounding_mode to be one of None, 'trunc', or 'floor' but found 'round'"))

# ---- out= of add/sub/mul/div, sub with alpha in place, rsub with tensors ------------------
add(case("bin_add_out_alpha", "binary_out", [T((2, 3), requires_grad=False), T((3,), requires_grad=False)],
         lambda a, b: torch.add(a, b, alpha=2, out=torch.empty(0)), attrs={"fn": "add", "alpha": 2, "out_dtype": "float32"}))
add(case("bin_sub_out_f64", "binary_out", [T((2, 3), "int32"), T((3,), "int32")],
         lambda a, b: torch.sub(a, b, out=torch.empty(0, dtype=torch.float64)),
         attrs={"fn": "sub", "out_dtype": "float64"}))
add(case("bin_mul_out_int", "binary_out", [T((4,), "int16", low=-9, high=9), T((), "int64", values=3)],
         lambda a, b: torch.mul(a, b, out=torch.empty(0, dtype=torch.int16)), attrs={"fn": "mul", "out_dtype": "int16"}))
add(case("bin_div_out_f32", "binary_out", [T((4,), "int64", low=-9, high=9), T((4,), "int64", low=1, high=4)],
         lambda a, b: torch.div(a, b, out=torch.empty(0)), attrs={"fn": "div", "out_dtype": "float32"}))
add(case("bin_add_out_cast_error", "binary_out", [T((3,), "int64"), T((3,), "int64")],
         lambda a, b: torch.add(a, b, out=torch.empty(0, dtype=torch.bool)), attrs={"fn": "add", "out_dtype": "bool"},
         error="result type Long can't be cast to the desired output type Bool"))
add(case("bin_sub_alpha_inplace", "sub_alpha_", [T((2, 3)), T((3,))], lambda a, b: a.clone().sub_(b, alpha=2.5),
         attrs={"alpha": 2.5}))
add(case("bin_sub_alpha_inplace_int", "sub_alpha_", [T((2, 3), "int64"), T((3,), "int64")],
         lambda a, b: a.clone().sub_(b, alpha=-3), attrs={"alpha": -3}))
for dt in FLOATS + INTS:
    add(case("bin_rsub_%s" % dt, "rsub_tensor", pair(dt), lambda a, b: torch.rsub(a, b)))
add(case("bin_rsub_alpha", "rsub_tensor", [T((2, 3)), T((3,))], lambda a, b: torch.rsub(a, b, alpha=2), attrs={"alpha": 2}))
add(case("bin_rsub_alpha_int", "rsub_tensor", [T((4,), "int64"), T((), "int64", values=5)],
         lambda a, b: torch.rsub(a, b, alpha=3), attrs={"alpha": 3}))
add(case("bin_rsub_bool", "rsub_tensor", [T((2,), "bool"), T((2,), "int64")], lambda a, b: torch.rsub(a, b),
         error="Subtraction, the `-` operator, with a bool tensor is not supported."))
add(case("bin_sub_bool_bool", "sub", [T((2,), "bool"), T((2,), "bool")], lambda a, b: a - b,
         error="Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or `logical_xor()` "
               "operator instead."))
add(case("bin_add_shape_error", "add", [T((2, 3)), T((2, 4))], lambda a, b: a + b,
         error="The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1"))
add(case("bin_add_inplace_cast", "add", [T((3,), "int64")], lambda a: a.clone().add_(1.5),
         attrs={"inplace": 1, "b_scalar": 1.5}, error="result type Float can't be cast to the desired output type Long"))

# ---- pow ----------------------------------------------------------------------------------
for dt in FLOATS:
    # PyTorch 1.13 has no float16 log on CPU: the exponent's gradient cannot be taken there
    add(case("bin_pow_%s" % dt, "pow", [T((2, 3), dt, low=0.5, high=2),
                                        T((2, 3), dt, low=-2, high=2, requires_grad=dt != "float16")],
             lambda a, b: torch.pow(a, b), gradgrad=dt == "float64"))
for dt in INTS:
    add(case("bin_pow_%s" % dt, "pow", [T((2, 3), dt, low=lo(dt, -3), high=4), T((2, 3), dt, low=0, high=4)],
             lambda a, b: torch.pow(a, b)))
add(case("bin_pow_int_neg_exp_tensor", "pow",
         [T((6,), "int64", values=[0, 1, -1, -1, 2, 5]), T((6,), "int64", values=[-1, -3, -3, -2, -1, 0])],
         lambda a, b: torch.pow(a, b)))
add(case("bin_pow_int8_wrap", "pow", [T((3,), "int8", values=[5, -7, 3])], lambda a: torch.pow(a, 3),
         attrs={"b_scalar": 3}))
add(case("bin_pow_int64_big", "pow", [T((2,), "int64", values=[3, -3])], lambda a: torch.pow(a, 39),
         attrs={"b_scalar": 39}))
for e in [2, 3, 0.5, -1, -0.5, -2, 2.5, 1, 0, 0.0]:
    add(case("bin_pow_scalar_%r" % e, "pow", [T((2, 3), low=0.5, high=2)], lambda a, e=e: torch.pow(a, e),
             attrs={"b_scalar": e}, gradgrad=e in (2, 2.5)))
add(case("bin_pow_scalar_f64_gg", "pow", [T((2, 3), "float64", low=0.5, high=2)], lambda a: a ** -1.5,
         attrs={"b_scalar": -1.5}, gradgrad=True))
add(case("bin_pow_scalar_neg_base", "pow", [T((5,), low=-2, high=2)], lambda a: a ** 3, attrs={"b_scalar": 3},
         gradgrad=True))
add(case("bin_pow_int_float_scalar", "pow", [T((4,), "int64", low=0, high=5)], lambda a: a ** 2.5,
         attrs={"b_scalar": 2.5}))
add(case("bin_pow_int_int_scalar", "pow", [T((4,), "int32", low=-5, high=5)], lambda a: a ** 2, attrs={"b_scalar": 2}))
add(case("bin_pow_bool_int_scalar", "pow", [T((4,), "bool")], lambda a: a ** 2, attrs={"b_scalar": 2}))
add(case("bin_pow_f16_scalar", "pow", [T((2, 3), "float16", low=0.5, high=2)], lambda a: a ** 2.5,
         attrs={"b_scalar": 2.5}))
add(case("bin_pow_bf16_scalar", "pow", [T((2, 3), "bfloat16", low=0.5, high=2)], lambda a: a ** -0.5,
         attrs={"b_scalar": -0.5}))
add(case("bin_pow_number_base", "pow", [T((2, 3), low=-2, high=2)], lambda b: torch.pow(2, b), attrs={"a_scalar": 2},
         gradgrad=True))
add(case("bin_pow_number_base_f64", "pow", [T((2, 3), "float64", low=-2, high=2)], lambda b: torch.pow(0.75, b),
         attrs={"a_scalar": 0.75}, gradgrad=True))
add(case("bin_pow_number_base_int", "pow", [T((4,), "int64", low=0, high=6)], lambda b: torch.pow(3, b),
         attrs={"a_scalar": 3}))
add(case("bin_pow_float_number_int_tensor", "pow", [T((4,), "int64", low=-2, high=6)], lambda b: torch.pow(2.5, b),
         attrs={"a_scalar": 2.5}))
add(case("bin_pow_zero_base", "pow", [T((6,), values=[0.0, -1.0, 0.0, 2.0, 1.5, 2.0])], lambda b: torch.pow(0, b),
         attrs={"a_scalar": 0}, fd=False))
# 0^0 = 1 and the special gradients at base 0 / exponent 0, as PyTorch's formulas give them
add(case("bin_pow_special", "pow", [T((6,), values=[0.0, 0.0, 2.0, -3.0, 0.5, 0.0]),
                                    T((6,), values=[0.0, -1.0, 0.0, 2.0, 1.5, 2.0])],
         lambda a, b: torch.pow(a, b), fd=False))
add(case("bin_pow_special_f64_gg", "pow", [T((4,), "float64", values=[0.0, 2.0, 0.0, 1.5]),
                                           T((4,), "float64", values=[0.0, 0.0, 2.0, 1.5])],
         lambda a, b: torch.pow(a, b), fd=False, gradgrad=True))
add(case("bin_pow_bcast_nc", "pow", [T((3, 4), low=0.5, high=2, layout="transposed"), T((4,), low=-1, high=2)],
         lambda a, b: a ** b))
add(case("bin_pow_0dim_exp", "pow", [T((2, 3), low=0.5, high=2), T((), low=-1, high=2)], lambda a, b: a ** b))
# PyTorch 1.13's exponent gradient takes log() of the int64 base itself (float32 precision) while
# ctorch's formula sees the base already cast to float64: agreement to float32 precision only
add(case("bin_pow_int_tensor_float_0dim", "pow", [T((3,), "int64", low=1, high=4), T((), "float64", values=0.5)],
         lambda a, b: a ** b, grad_rtol=1e-6))
add(case("bin_pow_empty", "pow", [T((0, 2)), T((2,))], lambda a, b: a ** b))
add(case("bin_pow_inplace", "pow", [T((2, 3), low=0.5, high=2), T((3,), low=-1, high=2)],
         lambda a, b: a.clone().pow_(b), attrs={"inplace": 1}))
add(case("bin_pow_inplace_scalar", "pow", [T((2, 3), "int64", low=-3, high=3)], lambda a: a.clone().pow_(3),
         attrs={"inplace": 1, "b_scalar": 3}))
add(case("bin_pow_out", "pow", [T((2, 3), low=0.5, high=2, requires_grad=False), T((3,), requires_grad=False)],
         lambda a, b: torch.pow(a, b, out=torch.empty(0, dtype=torch.float64)), attrs={"out": 1, "out_dtype": "float64"}))
add(case("bin_pow_int_neg_scalar", "pow", [T((3,), "int64")], lambda a: a ** -1, attrs={"b_scalar": -1},
         error="Integers to negative integer powers are not allowed."))
add(case("bin_pow_bool_bool", "pow", [T((2,), "bool"), T((2,), "bool")], lambda a, b: a ** b,
         error="\"pow\" not implemented for 'Bool'"))
add(case("bin_pow_shape_error", "pow", [T((2, 3)), T((2, 4))], lambda a, b: a ** b,
         error="The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1"))
add(case("bin_pow_inplace_cast", "pow", [T((3,), "int64"), T((3,))], lambda a, b: a.clone().pow_(b),
         attrs={"inplace": 1}, error="result type Float can't be cast to the desired output type Long"))

# ---- atan2 (integers and bool promote to float32; no float16 kernel in PyTorch 1.13) ------
for dt in ["float32", "float64", "bfloat16"] + INTS + ["bool"]:
    add(case("bin_atan2_%s" % dt, "atan2", pair(dt, a=(-3, 3), b=(-3, 3)), lambda a, b: torch.atan2(a, b),
             gradgrad=dt == "float64"))
add(case("bin_atan2_bcast", "atan2", [T((3, 1), layout="strided"), T((4,))], lambda a, b: torch.atan2(a, b)))
add(case("bin_atan2_mixed", "atan2", [T((3,), "int32", low=-3, high=3), T((3,), "float64")],
         lambda a, b: torch.atan2(a, b)))
# float32 self, float64 other: PyTorch's formula squares the float32 self in float32, ctorch's
# sees self cast to float64 already: the float64 gradient agrees to float32 precision only
add(case("bin_atan2_inplace", "atan2", [T((2, 3)), T((2, 3), "float64")], lambda a, b: a.clone().atan2_(b),
         attrs={"inplace": 1}, grad_rtol=1e-6))
add(case("bin_atan2_special", "atan2", [T((6,), values=[0.0, -0.0, 0.0, -0.0, INF, 1.0]),
                                        T((6,), values=[0.0, 0.0, -0.0, -0.0, INF, NAN])],
         lambda a, b: torch.atan2(a, b), fd=False))
add(case("bin_atan2_f16", "atan2", [T((2,), "float16"), T((2,), "float16")], lambda a, b: torch.atan2(a, b),
         error="\"atan2_cpu\" not implemented for 'Half'"))

# ---- maximum / minimum (NaN propagating) and fmax / fmin (NaN ignoring) -----------------
for name, f in [("maximum", torch.maximum), ("minimum", torch.minimum), ("fmax", torch.fmax), ("fmin", torch.fmin)]:
    for dt in ALL:
        add(case("bin_%s_%s" % (name, dt), name, pair(dt, a=(-9, 9), b=(-9, 9)), lambda a, b, f=f: f(a, b),
                 gradgrad=dt == "float64" and name == "maximum"))
    # ties split the gradient half-half (maximum/minimum) or give it to self (fmax/fmin); NaNs
    add(case("bin_%s_ties_nan" % name, name,
             [T((6,), values=[1.0, 2.0, NAN, 1.0, NAN, -0.5]), T((6,), values=[1.0, 3.0, 1.0, NAN, NAN, -0.5])],
             lambda a, b, f=f: f(a, b), fd=False))
    add(case("bin_%s_bcast_nc" % name, name, [T((3, 4), layout="transposed"), T((3, 1), layout="strided")],
             lambda a, b, f=f: f(a, b)))
add(case("bin_maximum_f64_gg_ties", "maximum", [T((4,), "float64", values=[1.0, 2.0, -1.0, 0.5]),
                                                T((4,), "float64", values=[1.0, 1.0, 3.0, 0.5])],
         lambda a, b: torch.maximum(a, b), fd=False, gradgrad=True))
add(case("bin_maximum_int_float0dim", "maximum", [T((4,), "int64", low=-3, high=3), T((), values=1.5)],
         lambda a, b: torch.maximum(a, b)))
add(case("bin_minimum_0dim", "minimum", [T(()), T(())], lambda a, b: torch.minimum(a, b)))
add(case("bin_minimum_empty", "minimum", [T((2, 0)), T((1,))], lambda a, b: torch.minimum(a, b)))
add(case("bin_maximum_u8_i8", "maximum", [T((4,), "uint8", low=0, high=255), T((4,), "int8", low=-100, high=100)],
         lambda a, b: torch.maximum(a, b)))
add(case("bin_maximum_out", "maximum", [T((2, 3), requires_grad=False), T((3,), requires_grad=False)],
         lambda a, b: torch.maximum(a, b, out=torch.empty(0)), attrs={"out": 1, "out_dtype": "float32"}))
add(case("bin_minimum_out", "minimum", [T((2, 3), "int32"), T((3,), "int64")],
         lambda a, b: torch.minimum(a, b, out=torch.empty(0, dtype=torch.float64)), attrs={"out": 1, "out_dtype": "float64"}))

# ---- hypot / logaddexp / logaddexp2: float32, float64, bfloat16 on CPU ---------------------
for name, f in [("hypot", torch.hypot), ("logaddexp", torch.logaddexp), ("logaddexp2", torch.logaddexp2)]:
    for dt in ["float32", "float64", "bfloat16"]:
        add(case("bin_%s_%s" % (name, dt), name, pair(dt, a=(-3, 3), b=(-3, 3)), lambda a, b, f=f: f(a, b),
                 gradgrad=dt == "float64"))
    add(case("bin_%s_bcast_nc" % name, name, [T((3, 4), layout="transposed"), T((4,), layout="strided")],
             lambda a, b, f=f: f(a, b)))
    add(case("bin_%s_0dim" % name, name, [T((2, 3), "float64"), T(())], lambda a, b, f=f: f(a, b)))
    add(case("bin_%s_f16" % name, name, [T((2,), "float16"), T((2,), "float16")], lambda a, b, f=f: f(a, b),
             error="\"%s_cpu\" not implemented for 'Half'" % name))
    add(case("bin_%s_int" % name, name, [T((2,), "int64"), T((2,), "int64")], lambda a, b, f=f: f(a, b),
             error="\"%s_cpu\" not implemented for 'Long'" % name))
    add(case("bin_%s_special" % name, name, [T((5,), values=[INF, -INF, INF, NAN, 1e30]),
                                             T((5,), values=[INF, -INF, -INF, 1.0, 1e30])],
             lambda a, b, f=f: f(a, b), fd=False))
add(case("bin_hypot_inplace", "hypot", [T((2, 3)), T((3,))], lambda a, b: a.clone().hypot_(b), attrs={"inplace": 1}))
add(case("bin_logaddexp_large", "logaddexp", [T((3,), "float64", values=[1000.0, -1000.0, 0.0]),
                                              T((3,), "float64", values=[1000.0, -999.0, 1e-20])],
         lambda a, b: torch.logaddexp(a, b)))

# ---- copysign and xlogy (integers and bool promote to float32) ----------------------------
for dt in ALL:
    add(case("bin_copysign_%s" % dt, "copysign", pair(dt, a=(-3, 3), b=(-3, 3)), lambda a, b: torch.copysign(a, b)))
    add(case("bin_xlogy_%s" % dt, "xlogy", [T((2, 3), dt, low=lo(dt, -3), high=3),
                                            T((2, 3), dt, low=0.25 if dt in FLOATS else 1, high=3)],
             lambda a, b: torch.xlogy(a, b), gradgrad=dt == "float64"))
add(case("bin_copysign_scalar", "copysign", [T((2, 3))], lambda a: torch.copysign(a, -1), attrs={"b_scalar": -1}))
add(case("bin_copysign_scalar_negzero", "copysign", [T((3,), "int64")], lambda a: torch.copysign(a, -0.0),
         attrs={"b_scalar": -0.0}))
add(case("bin_copysign_zeros", "copysign", [T((4,), values=[0.0, -0.0, 2.0, -3.0]), T((4,), values=[-1.0, 1.0, -0.0, 0.0])],
         lambda a, b: torch.copysign(a, b), fd=False))
add(case("bin_copysign_mixed", "copysign", [T((3,), "float16"), T((3,), "bfloat16")], lambda a, b: torch.copysign(a, b)))
add(case("bin_copysign_inplace", "copysign", [T((2, 3)), T((3,))], lambda a, b: a.clone().copysign_(b),
         attrs={"inplace": 1}))
add(case("bin_copysign_inplace_scalar", "copysign", [T((2, 3), "float64")], lambda a: a.clone().copysign_(-2.0),
         attrs={"inplace": 1, "b_scalar": -2.0}))
add(case("bin_xlogy_special", "xlogy", [T((5,), values=[0.0, 0.0, 1.0, 2.0, 0.0]), T((5,), values=[NAN, 0.0, NAN, 0.0, -1.0])],
         lambda a, b: torch.xlogy(a, b), fd=False))
add(case("bin_xlogy_number_other", "xlogy", [T((2, 3), low=-2, high=2)], lambda a: torch.xlogy(a, 2),
         attrs={"b_scalar": 2}))
add(case("bin_xlogy_number_self", "xlogy", [T((2, 3), low=0.25, high=3)], lambda b: torch.xlogy(2.5, b),
         attrs={"a_scalar": 2.5}))
add(case("bin_xlogy_bcast_nc", "xlogy", [T((3, 4), layout="transposed"), T((4,), low=0.25, high=3, layout="strided")],
         lambda a, b: torch.xlogy(a, b)))
add(case("bin_xlogy_inplace", "xlogy", [T((2, 3)), T((3,), low=0.25, high=3)], lambda a, b: a.clone().xlogy_(b),
         attrs={"inplace": 1}))

# ---- bitwise ops and shifts ------------------------------------------------------------------
for name, f in [("bitwise_and", torch.bitwise_and), ("bitwise_or", torch.bitwise_or), ("bitwise_xor", torch.bitwise_xor)]:
    for dt in INTS + ["bool"]:
        add(case("bin_%s_%s" % (name, dt), name, pair(dt, a=(-100, 100), b=(-100, 100)), lambda a, b, f=f: f(a, b)))
    add(case("bin_%s_scalar" % name, name, [T((4,), "int64", low=-100, high=100)], lambda a, f=f: f(a, 0x5A),
             attrs={"b_scalar": 0x5A}))
    add(case("bin_%s_float" % name, name, [T((2,)), T((2,))], lambda a, b, f=f: f(a, b),
             error="\"%s_cpu\" not implemented for 'Float'" % name))
add(case("bin_bitwise_or_u8_i8", "bitwise_or", [T((4,), "uint8", low=0, high=255), T((4,), "int8", low=-100, high=100)],
         lambda a, b: a | b))
add(case("bin_bitwise_xor_bool_int", "bitwise_xor", [T((4,), "bool")], lambda a: a ^ 1, attrs={"b_scalar": 1}))
add(case("bin_bitwise_and_inplace", "bitwise_and", [T((2, 3), "int32", low=-100, high=100), T((3,), "bool")],
         lambda a, b: a.clone().bitwise_and_(b), attrs={"inplace": 1}))
add(case("bin_bitwise_and_inplace_cast", "bitwise_and", [T((2,), "bool"), T((2,), "int64")],
         lambda a, b: a.clone().bitwise_and_(b), attrs={"inplace": 1},
         error="result type Long can't be cast to the desired output type Bool"))
add(case("bin_bitwise_and_nc", "bitwise_and", [T((3, 4), "int64", low=-100, high=100, layout="transposed"),
                                               T((3, 4), "int64", low=-100, high=100, layout="strided")],
         lambda a, b: a & b))
for name, f, cpu in [("bitwise_left_shift", torch.bitwise_left_shift, "lshift_cpu"),
                     ("bitwise_right_shift", torch.bitwise_right_shift, "rshift_cpu")]:
    for dt in INTS:
        bits = {"int8": 8, "uint8": 8, "int16": 16, "int32": 32, "int64": 64}[dt]
        add(case("bin_%s_%s" % (name, dt), name, [T((2, 3), dt, low=lo(dt, -50), high=50), T((2, 3), dt, low=0, high=bits)],
                 lambda a, b, f=f: f(a, b)))
    # out-of-range counts: PyTorch 1.13 on x86 shifts in 32-bit registers below int64, counts wrap
    add(case("bin_%s_range_int64" % name, name, [T((6,), "int64", values=[5, -3, 5, -3, 5, -3]),
                                                 T((6,), "int64", values=[-1, 32, 64, 65, 70, 127])],
             lambda a, b, f=f: f(a, b)))
    add(case("bin_%s_range_int8" % name, name, [T((6,), "int8", values=[5, -3, 5, -3, 5, -3]),
                                                T((6,), "int8", values=[7, 8, 33, 32, 70, -1])],
             lambda a, b, f=f: f(a, b)))
    add(case("bin_%s_range_int32" % name, name, [T((5,), "int32", values=[5, -3, 5, -3, 5]),
                                                 T((5,), "int32", values=[31, 32, 33, -1, 70])],
             lambda a, b, f=f: f(a, b)))
    add(case("bin_%s_scalar" % name, name, [T((4,), "uint8", low=0, high=255)], lambda a, f=f: f(a, 3),
             attrs={"b_scalar": 3}))
    add(case("bin_%s_float" % name, name, [T((2,)), T((2,))], lambda a, b, f=f: f(a, b),
             error="\"%s\" not implemented for 'Float'" % cpu))
    add(case("bin_%s_bool" % name, name, [T((2,), "bool"), T((2,), "bool")], lambda a, b, f=f: f(a, b),
             error="\"%s\" not implemented for 'Bool'" % cpu))
add(case("bin_bitwise_left_shift_mixed", "bitwise_left_shift", [T((3,), "uint8", low=0, high=40), T((3,), "int8", low=0, high=4)],
         lambda a, b: torch.bitwise_left_shift(a, b)))
add(case("bin_bitwise_right_shift_inplace", "bitwise_right_shift", [T((2, 3), "int64", low=-1000, high=1000)],
         lambda a: a.clone().bitwise_right_shift_(2), attrs={"inplace": 1, "b_scalar": 2}))

# ---- logical ops: any dtype, bool result ---------------------------------------------------
for name, f in [("logical_and", torch.logical_and), ("logical_or", torch.logical_or), ("logical_xor", torch.logical_xor)]:
    for dt in ALL:
        add(case("bin_%s_%s" % (name, dt), name, [T((2, 3), dt, low=lo(dt, -1), high=2), T((2, 3), dt, low=lo(dt, -1), high=2)],
                 lambda a, b, f=f: f(a, b)))
    add(case("bin_%s_mixed" % name, name, [T((4,), values=[1.5, 0.0, NAN, -0.0]), T((4,), "int64", values=[0, 0, 1, 3])],
             lambda a, b, f=f: f(a, b)))
    add(case("bin_%s_inplace" % name, name, [T((2, 2), "int64", low=-1, high=2), T((2,), low=-1, high=1, requires_grad=False)],
             lambda a, b, name=name: getattr(a.clone(), name + "_")(b), attrs={"inplace": 1}))
    add(case("bin_%s_bcast_0dim" % name, name, [T((3, 4), "int8", low=-1, high=2, layout="transposed"), T((), "bool", values=True)],
             lambda a, b, f=f: f(a, b)))

# ---- comparisons: computed in the promoted dtype, bool result ------------------------------
CMP = [("eq", torch.eq), ("ne", torch.ne), ("lt", torch.lt), ("le", torch.le), ("gt", torch.gt), ("ge", torch.ge)]
for name, f in CMP:
    for dt in ALL:
        add(case("bin_%s_%s" % (name, dt), name, [T((3, 4), dt, low=lo(dt, -2), high=3), T((3, 4), dt, low=lo(dt, -2), high=3)],
                 lambda a, b, f=f: f(a, b)))
    add(case("bin_%s_int_float_scalar" % name, name, [T((5,), "int64", low=-3, high=4)], lambda a, f=f: f(a, 2.5),
             attrs={"b_scalar": 2.5}))
    add(case("bin_%s_int_int_scalar" % name, name, [T((5,), "uint8", low=0, high=4)], lambda a, f=f: f(a, 2),
             attrs={"b_scalar": 2}))
    add(case("bin_%s_nan" % name, name, [T((4,), values=[NAN, 1.0, NAN, INF]), T((4,), values=[NAN, NAN, 1.0, INF])],
             lambda a, b, f=f: f(a, b)))
    add(case("bin_%s_mixed_0dim" % name, name, [T((2, 3), "int32", low=-3, high=3), T((), "float64", values=0.5)],
             lambda a, b, f=f: f(a, b)))
    add(case("bin_%s_bcast_nc" % name, name, [T((3, 4), layout="transposed"), T((3, 1), layout="strided")],
             lambda a, b, f=f: f(a, b)))
    # b does not require grad: PyTorch 1.13 would mark the int64 result of eq_ etc. as requiring grad
    add(case("bin_%s_inplace" % name, name, [T((2, 3), "int64", low=-2, high=2), T((3,), low=-2, high=2, requires_grad=False)],
             lambda a, b, name=name: getattr(a.clone(), name + "_")(b), attrs={"inplace": 1}))
    add(case("bin_%s_inplace_scalar" % name, name, [T((2, 3), "float64", low=-2, high=2)],
             lambda a, name=name: getattr(a.clone(), name + "_")(0.5), attrs={"inplace": 1, "b_scalar": 0.5}))
    add(case("bin_%s_out" % name, name, [T((2, 3), "int16", low=-2, high=2), T((3,), "int16", low=-2, high=2)],
             lambda a, b, f=f: f(a, b, out=torch.empty(0, dtype=torch.float32)), attrs={"out": 1, "out_dtype": "float32"}))
    add(case("bin_%s_empty" % name, name, [T((0, 3)), T((3,))], lambda a, b, f=f: f(a, b)))
# int64 values beyond 2^53 compare exactly; against a float they compare in float32
add(case("bin_eq_int64_exact", "eq", [T((3,), "int64", values=[2 ** 53 + 1, 2 ** 62 + 1, -2 ** 63]),
                                      T((3,), "int64", values=[2 ** 53, 2 ** 62, -2 ** 63])], lambda a, b: a == b))
add(case("bin_lt_int64_exact", "lt", [T((2,), "int64", values=[2 ** 53, 2 ** 62])], lambda a: a < 2 ** 62 + 1,
         attrs={"b_scalar": 2 ** 62 + 1}))
add(case("bin_eq_int64_float_scalar", "eq", [T((2,), "int64", values=[2 ** 53 + 1, 3])], lambda a: a == float(2 ** 53),
         attrs={"b_scalar": float(2 ** 53)}))
add(case("bin_gt_u8_i8", "gt", [T((4,), "uint8", low=0, high=255), T((4,), "int8", low=-100, high=100)], lambda a, b: a > b))
add(case("bin_eq_shape_error", "eq", [T((2, 3)), T((2, 4))], lambda a, b: a == b,
         error="The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1"))

# ---- isclose / allclose / equal --------------------------------------------------------------
for dt in ALL:
    add(case("bin_isclose_%s" % dt, "isclose", [T((3, 4), dt, low=lo(dt, -2), high=3), T((3, 4), dt, low=lo(dt, -2), high=3)],
             lambda a, b: torch.isclose(a, b, rtol=0.1, atol=0.5), attrs={"rtol": 0.1, "atol": 0.5}))
add(case("bin_isclose_default", "isclose", [T((5,), values=[1.0, 2.0, NAN, INF, INF]),
                                            T((5,), values=[1.000001, 2.1, NAN, INF, -INF])],
         lambda a, b: torch.isclose(a, b)))
add(case("bin_isclose_equal_nan", "isclose", [T((3,), "float64", values=[NAN, 1.0, NAN]),
                                              T((3,), "float64", values=[NAN, NAN, 2.0])],
         lambda a, b: torch.isclose(a, b, equal_nan=True), attrs={"equal_nan": 1}))
add(case("bin_isclose_int_atol", "isclose", [T((4,), "int64", values=[5, -7, 0, 2 ** 62]),
                                             T((4,), "int64", values=[6, -6, 2, -2 ** 62])],
         lambda a, b: torch.isclose(a, b, rtol=0, atol=1), attrs={"rtol": 0.0, "atol": 1.0}))
add(case("bin_isclose_int_as_float", "isclose", [T((3,), "int64", values=[2 ** 53 + 1, 2 ** 24 + 1, 2 ** 24 + 2]),
                                                 T((3,), "int64", values=[2 ** 53, 2 ** 24, 2 ** 24])],
         lambda a, b: torch.isclose(a, b, rtol=0, atol=0.5), attrs={"rtol": 0.0, "atol": 0.5}))
add(case("bin_isclose_int8_no_wrap", "isclose", [T((2,), "int8", values=[100, 10]), T((2,), "int8", values=[-100, 3])],
         lambda a, b: torch.isclose(a, b, rtol=0.5, atol=56.5), attrs={"rtol": 0.5, "atol": 56.5}))
add(case("bin_isclose_int_wrap", "isclose", [T((1,), "int64", values=[2 ** 62]), T((1,), "int64", values=[-2 ** 62])],
         lambda a, b: torch.isclose(a, b, atol=1e30), attrs={"atol": 1e30}))
add(case("bin_isclose_bool_atol", "isclose", [T((4,), "bool", values=[True, False, True, False]),
                                         T((4,), "bool", values=[True, True, False, False])],
         lambda a, b: torch.isclose(a, b, rtol=0, atol=1), attrs={"rtol": 0.0, "atol": 1.0}))
add(case("bin_isclose_bcast", "isclose", [T((3, 4), layout="transposed"), T(())],
         lambda a, b: torch.isclose(a, b, atol=1.0), attrs={"atol": 1.0}))
add(case("bin_isclose_dtype_error", "isclose", [T((2,)), T((2,), "float64")], lambda a, b: torch.isclose(a, b),
         error="Float did not match Double"))
add(case("bin_isclose_rtol_error", "isclose", [T((2,)), T((2,))], lambda a, b: torch.isclose(a, b, rtol=-1),
         attrs={"rtol": -1.0}, error="rtol must be greater than or equal to zero, but got -1"))
add(case("bin_isclose_atol_error", "isclose", [T((2,)), T((2,))], lambda a, b: torch.isclose(a, b, atol=-0.5),
         attrs={"atol": -0.5}, error="atol must be greater than or equal to zero, but got -0.5"))
add(case("bin_allclose_true", "allclose", [T((2,), values=[1.0, 2.0]), T((2,), values=[1.0, 2.000001])],
         lambda a, b: torch.tensor(torch.allclose(a, b))))
add(case("bin_allclose_false", "allclose", [T((3, 2)), T((3, 2))], lambda a, b: torch.tensor(torch.allclose(a, b))))
add(case("bin_allclose_nan", "allclose", [T((2,), "float64", values=[NAN, 1.0]), T((2,), "float64", values=[NAN, 1.0])],
         lambda a, b: torch.tensor(torch.allclose(a, b, equal_nan=True)), attrs={"equal_nan": 1}))
add(case("bin_allclose_int", "allclose", [T((3,), "int32", values=[1, 2, 3]), T((3,), "int32", values=[1, 2, 4])],
         lambda a, b: torch.tensor(torch.allclose(a, b, rtol=0, atol=1)), attrs={"rtol": 0.0, "atol": 1.0}))
add(case("bin_allclose_shape_error", "allclose", [T((3,)), T((2,))], lambda a, b: torch.tensor(torch.allclose(a, b)),
         error="The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 0"))
add(case("bin_allclose_dtype_error", "allclose", [T((3,), "int64"), T((3,))], lambda a, b: torch.tensor(torch.allclose(a, b)),
         error="Long did not match Float"))
add(case("bin_equal_true", "equal", [T((2, 3), "int64", values=[[1, 2, 3], [4, 5, 6]]), T((2, 3), "int64", values=[[1, 2, 3], [4, 5, 6]])],
         lambda a, b: torch.tensor(torch.equal(a, b))))
add(case("bin_equal_false", "equal", [T((2, 3)), T((2, 3))], lambda a, b: torch.tensor(torch.equal(a, b))))
add(case("bin_equal_dtypes", "equal", [T((2,), "bool", values=[True, False]), T((2,), values=[1.0, 0.0])],
         lambda a, b: torch.tensor(torch.equal(a, b))))
add(case("bin_equal_shape", "equal", [T((1,), values=[1.0]), T((), values=1.0)], lambda a, b: torch.tensor(torch.equal(a, b))))
add(case("bin_equal_nan", "equal", [T((2,), values=[1.0, NAN]), T((2,), values=[1.0, NAN])],
         lambda a, b: torch.tensor(torch.equal(a, b))))
add(case("bin_equal_nc", "equal", [T((3, 4), "int32", layout="transposed", values=[[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]]),
                                   T((3, 4), "int32", values=[[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]])],
         lambda a, b: torch.tensor(torch.equal(a, b))))

# ---- promotion with 0-dim tensors and Python numbers (through run_core.c's add/sub/mul runners) ----
add(case("bin_add_int_float_number", "add", [T((3,), "int32")], lambda a: a + 2.5, attrs={"b_scalar": 2.5}))
add(case("bin_add_int8_0dim_int64", "add", [T((3,), "int8", values=[1, 2, 100]), T((), "int64", values=1000)],
         lambda a, b: a + b))
add(case("bin_add_f16_0dim_f32", "add", [T((3,), "float16"), T((), "float32", values=1000.0)], lambda a, b: a + b))
add(case("bin_mul_int_0dim_float", "mul", [T((3,), "int64"), T((), "float64", values=0.5)], lambda a, b: a * b))
add(case("bin_add_bool_int_number", "add", [T((3,), "bool")], lambda a: a + 3, attrs={"b_scalar": 3}))
add(case("bin_mul_u8_number_wrap", "mul", [T((3,), "uint8", values=[1, 2, 200])], lambda a: a * 300,
         attrs={"b_scalar": 300}))
add(case("bin_add_int64_big", "add", [T((3,), "int64", values=[2 ** 53 + 1, 2 ** 62 + 3, 2 ** 63 - 1]),
                                      T((3,), "int64", values=[1, 5, 1])], lambda a, b: a + b))
add(case("bin_sub_gg", "sub", [T((2, 3), "float64"), T((3,), "float64")], lambda a, b: torch.sub(a, b, alpha=2),
         attrs={"alpha": 2}, gradgrad=True))
add(case("bin_pow_inplace_scalar_cast", "pow", [T((3,), "int8")], lambda a: a.clone().pow_(2.5),
         attrs={"inplace": 1, "b_scalar": 2.5}, error="Found dtype Char but expected Float"))
add(case("bin_pow_inplace_scalar_bool", "pow", [T((3,), "bool")], lambda a: a.clone().pow_(2),
         attrs={"inplace": 1, "b_scalar": 2}, error="Found dtype Bool but expected Long"))
