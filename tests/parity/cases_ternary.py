"""Parity cases of the ternary ops (src/ops/ternary.c): where, lerp, addcmul, addcdiv,
clamp with tensor bounds. Runners in tests/parity/run_ternary.c."""
import torch
from parity_lib import case, T

ALL = ["float32", "float64", "float16", "bfloat16", "int8", "uint8", "int16", "int32", "int64", "bool"]
FLOATS = ["float32", "float64", "float16", "bfloat16"]
INF, NAN = float("inf"), float("nan")

CASES = []
add = CASES.append


def torch_error(fn, *args):
    try:
        fn(*args)
        return None
    except Exception as e:  # PyTorch's own wording is the expected message
        return str(e).split("\n")[0]


def ones(dt, n=2):
    return torch.ones(n, dtype=getattr(torch, dt))


# ---- where ------------------------------------------------------------------------------
for dt in ALL:
    add(case("where_%s" % dt, "where", [T((2, 3), "bool"), T((2, 3), dt), T((2, 3), dt)],
             lambda c, a, b: torch.where(c, a, b), gradgrad=dt == "float64"))
add(case("where_broadcast", "where", [T((3, 1), "bool"), T((1, 4)), T((4,))], lambda c, a, b: torch.where(c, a, b),
         gradgrad=True))
add(case("where_broadcast_cond", "where", [T((2, 3, 4), "bool"), T((3, 1), "float64"), T((4,), "float64")],
         lambda c, a, b: torch.where(c, a, b), gradgrad=True))
add(case("where_mixed_f32_f64", "where", [T((2, 3), "bool"), T((2, 3)), T((2, 3), "float64")],
         lambda c, a, b: torch.where(c, a, b)))
add(case("where_mixed_int_float", "where", [T((2, 3), "bool"), T((2, 3), "int64"), T((2, 3))],
         lambda c, a, b: torch.where(c, a, b)))
add(case("where_mixed_int8_uint8", "where", [T((2, 3), "bool"), T((2, 3), "int8"), T((2, 3), "uint8")],
         lambda c, a, b: torch.where(c, a, b)))
add(case("where_0dim_values_int8", "where", [T((4,), "bool"), T((), "int8"), T((), "int8")],
         lambda c, a, b: torch.where(c, a, b)))
add(case("where_scalar_b", "where", [T((2, 3), "bool"), T((2, 3))], lambda c, a: torch.where(c, a, 0.5),
         attrs={"b_scalar": 0.5}))
add(case("where_scalar_b_int_tensor", "where", [T((2, 3), "bool"), T((2, 3), "int32")],
         lambda c, a: torch.where(c, a, 2), attrs={"b_scalar": 2}))
add(case("where_scalar_b_float_on_int", "where", [T((2, 3), "bool"), T((2, 3), "int32")],
         lambda c, a: torch.where(c, a, 2.5), attrs={"b_scalar": 2.5}))
add(case("where_scalar_a", "where", [T((2, 3), "bool"), T((2, 3), "float64")], lambda c, b: torch.where(c, -1.0, b),
         attrs={"a_scalar": -1.0}, gradgrad=True))
add(case("where_scalars_float", "where", [T((2, 3), "bool")], lambda c: torch.where(c, 1.0, 0.0),
         attrs={"a_scalar": 1.0, "b_scalar": 0.0}))
add(case("where_scalars_int", "where", [T((2, 3), "bool")], lambda c: torch.where(c, 3, -4),
         attrs={"a_scalar": 3, "b_scalar": -4}))
add(case("where_transposed", "where", [T((3, 4), "bool", layout="transposed"), T((3, 4), layout="transposed"),
                                       T((3, 4), layout="strided")], lambda c, a, b: torch.where(c, a, b)))
add(case("where_0dim", "where", [T((), "bool"), T(()), T(())], lambda c, a, b: torch.where(c, a, b)))
add(case("where_empty", "where", [T((0, 3), "bool"), T((0, 3)), T((1, 3))], lambda c, a, b: torch.where(c, a, b),
         fd=False))
add(case("where_nan_inf", "where", [T((4,), "bool", values=[True, False, True, False]),
                                    T((4,), values=[NAN, 1.0, INF, 2.0]), T((4,), values=[0.0, NAN, 1.0, -INF])],
         lambda c, a, b: torch.where(c, a, b), fd=False))
add(case("where_uint8_cond", "where", [T((5,), "uint8", low=0, high=2), T((5,)), T((5,))],
         lambda c, a, b: torch.where(c, a, b)))
add(case("where_float_cond_error", "where", [T((3,)), T((3,)), T((3,))], lambda c, a, b: torch.where(c, a, b),
         error="where expected condition to be a boolean tensor, but got a tensor with dtype Float"))
add(case("where_shape_error", "where", [T((2,), "bool"), T((3,)), T((3,))], lambda c, a, b: torch.where(c, a, b),
         error="must match the size of tensor"))

# ---- lerp -------------------------------------------------------------------------------
for dt in ALL:
    err = torch_error(lambda: torch.lerp(ones(dt), ones(dt), 0.5))
    add(case("lerp_scalar_%s" % dt, "lerp", [T((2, 3), dt), T((2, 3), dt)], lambda s, e: torch.lerp(s, e, 0.3),
             attrs={"weight": 0.3}, error=err, gradgrad=dt == "float64"))
    err = torch_error(lambda: torch.lerp(ones(dt), ones(dt), ones(dt)))
    add(case("lerp_tensor_%s" % dt, "lerp", [T((2, 3), dt), T((2, 3), dt), T((2, 3), dt, low=-0.5, high=1.5)],
             lambda s, e, w: torch.lerp(s, e, w), error=err, gradgrad=dt == "float64"))
add(case("lerp_scalar_big_weight", "lerp", [T((2, 3)), T((2, 3))], lambda s, e: torch.lerp(s, e, 0.8),
         attrs={"weight": 0.8}))
add(case("lerp_scalar_int_weight", "lerp", [T((2, 3)), T((2, 3))], lambda s, e: torch.lerp(s, e, 2),
         attrs={"weight": 2}))
add(case("lerp_broadcast", "lerp", [T((3, 1)), T((1, 4)), T((4,), low=0, high=1)], lambda s, e, w: torch.lerp(s, e, w),
         gradgrad=True))
add(case("lerp_broadcast_scalar_w", "lerp", [T((3, 1)), T((2, 1, 4))], lambda s, e: torch.lerp(s, e, 0.6),
         attrs={"weight": 0.6}))
add(case("lerp_transposed", "lerp", [T((3, 4), layout="transposed"), T((3, 4), layout="strided"),
                                     T((3, 4), layout="transposed", low=0, high=1)], lambda s, e, w: torch.lerp(s, e, w)))
add(case("lerp_0dim", "lerp", [T(()), T(()), T(())], lambda s, e, w: torch.lerp(s, e, w)))
add(case("lerp_empty", "lerp", [T((0, 2)), T((0, 2)), T((0, 2))], lambda s, e, w: torch.lerp(s, e, w), fd=False))
add(case("lerp_inplace", "lerp", [T((2, 3)), T((2, 3)), T((2, 3), low=0, high=1)],
         lambda s, e, w: s.clone().lerp_(e, w), attrs={"inplace": 1}))
add(case("lerp_inplace_scalar", "lerp", [T((2, 3)), T((3,))], lambda s, e: s.clone().lerp_(e, 0.25),
         attrs={"inplace": 1, "weight": 0.25}))
add(case("lerp_out", "lerp", [T((2, 3), requires_grad=False), T((2, 3), requires_grad=False)],
         lambda s, e: torch.lerp(s, e, 0.7), attrs={"out": 1, "out_dtype": "float32", "weight": 0.7}, fd=False))
add(case("lerp_end_dtype_error", "lerp", [T((3,)), T((3,), "float64")], lambda s, e: torch.lerp(s, e, 0.5),
         attrs={"weight": 0.5}, error="expected dtype float for `end` but got dtype double"))
add(case("lerp_weight_dtype_error", "lerp", [T((3,)), T((3,)), T((), "float64")], lambda s, e, w: torch.lerp(s, e, w),
         error="expected dtype float for `weight` but got dtype double"))

# ---- addcmul / addcdiv --------------------------------------------------------------------
for dt in ALL:
    err = torch_error(lambda: torch.addcmul(ones(dt), ones(dt), ones(dt), value=2))
    add(case("addcmul_%s" % dt, "addcmul", [T((2, 3), dt), T((2, 3), dt), T((2, 3), dt)],
             lambda s, a, b: torch.addcmul(s, a, b, value=2), attrs={"value": 2}, error=err,
             gradgrad=dt == "float64"))
    err = torch_error(lambda: torch.addcdiv(ones(dt), ones(dt), ones(dt), value=2))
    add(case("addcdiv_%s" % dt, "addcdiv",
             [T((2, 3), dt), T((2, 3), dt), T((2, 3), dt, low=0.5 if dt in FLOATS else 1, high=2 if dt in FLOATS else 4)],
             lambda s, a, b: torch.addcdiv(s, a, b, value=2), attrs={"value": 2}, error=err,
             gradgrad=dt == "float64"))
add(case("addcmul_value_float", "addcmul", [T((2, 3)), T((2, 3)), T((2, 3))],
         lambda s, a, b: torch.addcmul(s, a, b, value=-0.75), attrs={"value": -0.75}, gradgrad=True))
add(case("addcmul_int_float_value", "addcmul", [T((4,), "int64"), T((4,), "int64"), T((4,), "int64")],
         lambda s, a, b: torch.addcmul(s, a, b, value=2.5), attrs={"value": 2.5}))
add(case("addcmul_mixed", "addcmul", [T((2, 3), "int64"), T((2, 3)), T((2, 3), "int32")],
         lambda s, a, b: torch.addcmul(s, a, b), attrs={"value": 1}))
add(case("addcmul_int8_wrap", "addcmul", [T((3,), "int8", values=[100, -100, 1]), T((3,), "int8", values=[10, 10, 2]),
                                          T((3,), "int8", values=[5, 5, 3])],
         lambda s, a, b: torch.addcmul(s, a, b, value=3), attrs={"value": 3}))
add(case("addcmul_broadcast", "addcmul", [T((3, 1)), T((1, 4)), T((2, 1, 1))], lambda s, a, b: torch.addcmul(s, a, b),
         attrs={"value": 1}, gradgrad=True))
add(case("addcmul_transposed", "addcmul", [T((3, 4), layout="transposed"), T((3, 4), layout="strided"), T((4,))],
         lambda s, a, b: torch.addcmul(s, a, b, value=0.5), attrs={"value": 0.5}))
add(case("addcmul_0dim", "addcmul", [T(()), T(()), T(())], lambda s, a, b: torch.addcmul(s, a, b), attrs={"value": 1}))
add(case("addcmul_empty", "addcmul", [T((0, 3)), T((0, 3)), T((3,))], lambda s, a, b: torch.addcmul(s, a, b),
         attrs={"value": 1}, fd=False))
add(case("addcmul_inplace", "addcmul", [T((2, 3)), T((2, 3)), T((3,))], lambda s, a, b: s.clone().addcmul_(a, b, value=2),
         attrs={"value": 2, "inplace": 1}))
add(case("addcmul_out", "addcmul", [T((2, 3), requires_grad=False), T((2, 3), requires_grad=False),
                                    T((2, 3), requires_grad=False)],
         lambda s, a, b: torch.addcmul(s, a, b), attrs={"value": 1, "out": 1, "out_dtype": "float32"}, fd=False))
add(case("addcdiv_value_float", "addcdiv", [T((2, 3)), T((2, 3)), T((2, 3), low=0.5, high=2)],
         lambda s, a, b: torch.addcdiv(s, a, b, value=-0.75), attrs={"value": -0.75}, gradgrad=True))
add(case("addcdiv_float_self_int_tensors_error", "addcdiv", [T((3,)), T((3,), "int64"), T((3,), "int64", low=1, high=3)],
         lambda s, a, b: torch.addcdiv(s, a, b), attrs={"value": 1}, error="Integer division with addcdiv is no longer supported"))
# values only: PyTorch's backward itself fails here (float grad into the int64 self)
add(case("addcdiv_int_self", "addcdiv", [T((3,), "int64"), T((3,), requires_grad=False), T((3,), "int64", low=1, high=3)],
         lambda s, a, b: torch.addcdiv(s, a, b), attrs={"value": 1}))
add(case("addcdiv_broadcast", "addcdiv", [T((3, 1)), T((1, 4)), T((4,), low=0.5, high=2)],
         lambda s, a, b: torch.addcdiv(s, a, b, value=0.5), attrs={"value": 0.5}, gradgrad=True))
add(case("addcdiv_transposed", "addcdiv", [T((3, 4), layout="transposed"), T((3, 4)), T((3, 4), layout="strided", low=0.5, high=2)],
         lambda s, a, b: torch.addcdiv(s, a, b), attrs={"value": 1}))
add(case("addcdiv_0dim", "addcdiv", [T(()), T(()), T((), low=0.5, high=2)], lambda s, a, b: torch.addcdiv(s, a, b),
         attrs={"value": 1}))
add(case("addcdiv_empty", "addcdiv", [T((2, 0)), T((2, 0)), T((2, 0))], lambda s, a, b: torch.addcdiv(s, a, b),
         attrs={"value": 1}, fd=False))
add(case("addcdiv_inplace", "addcdiv", [T((2, 3)), T((2, 3)), T((2, 3), low=0.5, high=2)],
         lambda s, a, b: s.clone().addcdiv_(a, b, value=-1), attrs={"value": -1, "inplace": 1}))
add(case("addcdiv_out", "addcdiv", [T((2, 3), "float64", requires_grad=False), T((2, 3), "float64", requires_grad=False),
                                    T((2, 3), "float64", low=0.5, high=2, requires_grad=False)],
         lambda s, a, b: torch.addcdiv(s, a, b), attrs={"value": 1, "out": 1, "out_dtype": "float64"}, fd=False))

# ---- clamp with tensor bounds -------------------------------------------------------------
for dt in ALL:
    err = torch_error(lambda: torch.clamp(ones(dt), ones(dt), ones(dt)))
    add(case("clamp_tensor_%s" % dt, "clamp_tensor",
             [T((2, 4), dt, low=-3, high=3), T((2, 4), dt, low=-2, high=0), T((2, 4), dt, low=0, high=2)],
             lambda x, lo, hi: torch.clamp(x, lo, hi), error=err, gradgrad=dt == "float64"))
add(case("clamp_tensor_min_only", "clamp_tensor", [T((3, 4)), T((4,))], lambda x, lo: torch.clamp(x, min=lo),
         attrs={"has_max": 0}))
add(case("clamp_tensor_max_only", "clamp_tensor", [T((3, 4)), T((3, 1))], lambda x, hi: torch.clamp(x, max=hi),
         attrs={"has_min": 0}))
add(case("clamp_tensor_broadcast", "clamp_tensor", [T((2, 3, 4), "float64"), T((3, 1), "float64", low=-1, high=0),
                                                    T((4,), "float64", low=0, high=1)],
         lambda x, lo, hi: torch.clamp(x, lo, hi), gradgrad=True))
add(case("clamp_tensor_min_gt_max", "clamp_tensor", [T((6,), values=[-2.0, 0.0, 1.0, 1.5, 3.0, 2.5]),
                                                     T((6,), values=[2.0, 2.0, 2.0, 2.0, 2.0, 0.0]),
                                                     T((6,), values=[1.0, 1.0, 1.0, 1.0, 1.0, 3.0])],
         lambda x, lo, hi: torch.clamp(x, lo, hi), fd=False))
add(case("clamp_tensor_nan", "clamp_tensor", [T((5,), values=[NAN, 1.0, 1.0, 0.5, 3.0]),
                                              T((5,), values=[0.0, NAN, 0.0, 0.5, 1.0]),
                                              T((5,), values=[1.0, 2.0, NAN, 0.5, 2.0])],
         lambda x, lo, hi: torch.clamp(x, lo, hi), fd=False))
add(case("clamp_tensor_promote_int_float", "clamp_tensor", [T((4,), "int64", low=-5, high=5), T((4,), low=-1, high=0),
                                                            T((4,), "int32", low=1, high=3)],
         lambda x, lo, hi: torch.clamp(x, lo, hi)))
add(case("clamp_tensor_transposed", "clamp_tensor", [T((3, 4), layout="transposed"), T((3, 4), layout="strided", low=-1, high=0),
                                                     T((3, 4), layout="transposed", low=0, high=1)],
         lambda x, lo, hi: torch.clamp(x, lo, hi)))
add(case("clamp_tensor_0dim", "clamp_tensor", [T(()), T((), low=-1, high=0), T((), low=0, high=1)],
         lambda x, lo, hi: torch.clamp(x, lo, hi)))
add(case("clamp_tensor_empty", "clamp_tensor", [T((0, 4)), T((4,)), T((4,))], lambda x, lo, hi: torch.clamp(x, lo, hi),
         fd=False))
add(case("clamp_tensor_inplace", "clamp_tensor", [T((2, 4)), T((2, 4), low=-1, high=0), T((4,), low=0, high=1)],
         lambda x, lo, hi: x.clone().clamp_(lo, hi), attrs={"inplace": 1}))
add(case("clamp_tensor_inplace_int_error", "clamp_tensor", [T((3,), "int64"), T((3,)), T((3,))],
         lambda x, lo, hi: x.clone().clamp_(lo, hi), attrs={"inplace": 1},
         error="result type Float can't be cast to the desired output type Long"))
add(case("clamp_tensor_out", "clamp_tensor", [T((2, 4), requires_grad=False), T((2, 4), requires_grad=False),
                                              T((2, 4), requires_grad=False)],
         lambda x, lo, hi: torch.clamp(x, lo, hi), attrs={"out": 1, "out_dtype": "float32"}, fd=False))
add(case("clamp_tensor_none_error", "clamp_tensor", [T((3,))], lambda x: torch.clamp(x, None, None),
         attrs={"has_min": 0, "has_max": 0}, error="torch.clamp: At least one of 'min' or 'max' must not be None"))

for _c in CASES:
    _c.name = "tern_" + _c.name
