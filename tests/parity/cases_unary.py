"""Parity cases of the unary ops (src/ops/unary.c), all through the runner "unary"
(tests/parity/run_unary.c) with attrs {"fn": name, params...}.

For every op: one case per dtype (the dtypes PyTorch 1.13 refuses on CPU become error
cases whose expected message is PyTorch's own, read from torch here), plus
non-contiguous, 0-dim, zero-size, in-place and out= forms, and double backward for the
common ones."""
import math
import torch
import torch.nn.functional as F
from parity_lib import case, T

ALL = ["float32", "float64", "float16", "bfloat16", "int8", "uint8", "int16", "int32", "int64", "bool"]
FLOATS = ["float32", "float64", "float16", "bfloat16"]

CASES = []
add = CASES.append


def torch_error(fn, dtype):
    """PyTorch's error message (first line) for fn on a small tensor of dtype, or None."""
    try:
        fn(torch.ones(2, dtype=getattr(torch, dtype)))
        return None
    except Exception as e:  # the expected message is PyTorch's own wording
        return str(e).split("\n")[0]


def U(fn, **params):
    d = {"fn": fn}
    d.update(params)
    return d


# name, torch function, attrs, float domain (low, high), int domain (low, high),
# gradgrad on float64, fd (finite differences: off at jumps/kinks or zero-gradient ops)
OPS = [
    ("abs", torch.abs, U("abs"), (0.2, 2), (-5, 5), False, True),
    ("neg", torch.neg, U("neg"), (-2, 2), (-5, 5), False, True),
    ("sign", torch.sign, U("sign"), (-2, 2), (-5, 5), False, False),
    ("exp", torch.exp, U("exp"), (-2, 2), (-3, 3), True, True),
    ("exp2", torch.exp2, U("exp2"), (-2, 2), (-3, 3), True, True),
    ("expm1", torch.expm1, U("expm1"), (-2, 2), (-3, 3), True, True),
    ("log", torch.log, U("log"), (0.2, 3), (1, 6), True, True),
    ("log2", torch.log2, U("log2"), (0.2, 3), (1, 6), True, True),
    ("log10", torch.log10, U("log10"), (0.2, 3), (1, 6), True, True),
    ("log1p", torch.log1p, U("log1p"), (-0.7, 3), (0, 6), True, True),
    ("sqrt", torch.sqrt, U("sqrt"), (0.2, 3), (0, 6), True, True),
    ("rsqrt", torch.rsqrt, U("rsqrt"), (0.2, 3), (1, 6), True, True),
    ("sin", torch.sin, U("sin"), (-3, 3), (-3, 3), True, True),
    ("cos", torch.cos, U("cos"), (-3, 3), (-3, 3), True, True),
    ("tan", torch.tan, U("tan"), (-1.2, 1.2), (-1, 2), True, True),
    ("asin", torch.asin, U("asin"), (-0.9, 0.9), (-1, 2), True, True),
    ("acos", torch.acos, U("acos"), (-0.9, 0.9), (-1, 2), True, True),
    ("atan", torch.atan, U("atan"), (-3, 3), (-3, 3), True, True),
    ("sinh", torch.sinh, U("sinh"), (-2, 2), (-3, 3), True, True),
    ("cosh", torch.cosh, U("cosh"), (-2, 2), (-3, 3), True, True),
    ("tanh", torch.tanh, U("tanh"), (-2, 2), (-3, 3), True, True),
    ("asinh", torch.asinh, U("asinh"), (-3, 3), (-3, 3), True, True),
    ("acosh", torch.acosh, U("acosh"), (1.2, 3), (1, 4), True, True),
    ("atanh", torch.atanh, U("atanh"), (-0.9, 0.9), (-1, 2), True, True),
    ("sigmoid", torch.sigmoid, U("sigmoid"), (-3, 3), (-3, 3), True, True),
    ("logit", torch.logit, U("logit"), (0.05, 0.95), (0, 2), True, True),
    ("erf", torch.erf, U("erf"), (-2, 2), (-3, 3), True, True),
    ("erfc", torch.erfc, U("erfc"), (-2, 2), (-3, 3), True, True),
    ("erfinv", torch.erfinv, U("erfinv"), (-0.9, 0.9), (-1, 2), True, True),
    ("lgamma", torch.lgamma, U("lgamma"), (2.5, 5), (1, 6), True, True),
    ("digamma", torch.digamma, U("digamma"), (2, 5), (1, 6), True, True),
    ("floor", torch.floor, U("floor"), (-3, 3), (-5, 5), False, False),
    ("ceil", torch.ceil, U("ceil"), (-3, 3), (-5, 5), False, False),
    ("round", torch.round, U("round"), (-3, 3), (-5, 5), False, False),
    ("trunc", torch.trunc, U("trunc"), (-3, 3), (-5, 5), False, False),
    ("frac", torch.frac, U("frac"), (-3, 3), (-5, 5), True, False),
    ("reciprocal", torch.reciprocal, U("reciprocal"), (0.3, 2), (1, 6), True, True),
    ("square", torch.square, U("square"), (-2, 2), (-5, 5), True, True),
    ("relu", torch.relu, U("relu"), (-2, 2), (-5, 5), True, True),
    ("relu6", F.relu6, U("relu6"), (-3, 8), (0, 9), True, True),
    ("gelu", F.gelu, U("gelu"), (-3, 3), (-3, 3), True, True),
    ("gelu_tanh", lambda x: F.gelu(x, approximate="tanh"), U("gelu", approximate="tanh"), (-3, 3), (-3, 3), True, True),
    ("silu", F.silu, U("silu"), (-3, 3), (-3, 3), True, True),
    ("mish", F.mish, U("mish"), (-3, 3), (-3, 3), True, True),
    ("softplus", F.softplus, U("softplus"), (-3, 3), (-3, 3), True, True),
    # softplus with a threshold jumps at beta*x == threshold (bfloat16 values can sit on it): no fd
    ("softplus_beta", lambda x: F.softplus(x, beta=2, threshold=1.5), U("softplus", beta=2, threshold=1.5),
     (-2, 2), (-3, 3), True, False),
    ("softsign", F.softsign, U("softsign"), (-3, 3), (-3, 3), True, True),
    ("hardtanh", lambda x: F.hardtanh(x, -0.5, 1.5), U("hardtanh", min_val=-0.5, max_val=1.5), (-2, 2), (-3, 3),
     True, True),
    # PyTorch 1.13 has no double backward for hardsigmoid
    ("hardsigmoid", F.hardsigmoid, U("hardsigmoid"), (-4, 4), (-5, 5), False, True),
    ("hardswish", F.hardswish, U("hardswish"), (-4, 4), (-5, 5), True, True),
    ("leaky_relu", lambda x: F.leaky_relu(x, 0.2), U("leaky_relu", negative_slope=0.2), (-2, 2), (-3, 3), True, True),
    ("elu", lambda x: F.elu(x, 0.7), U("elu", alpha=0.7), (-2, 2), (-3, 3), True, True),
    ("selu", F.selu, U("selu"), (-2, 2), (-3, 3), True, True),
    ("celu", lambda x: F.celu(x, 1.3), U("celu", alpha=1.3), (-2, 2), (-3, 3), True, True),
    ("clamp", lambda x: torch.clamp(x, -0.5, 0.5), U("clamp", min=-0.5, max=0.5), (-2, 2), (-3, 3), True, True),
    ("clamp_int", lambda x: torch.clamp(x, -1, 1), U("clamp", min=-1, max=1), (-2, 2), (-3, 3), True, True),
    ("clamp_min", lambda x: torch.clamp(x, min=0.25), U("clamp", min=0.25), (-2, 2), (-3, 3), True, True),
    ("clamp_max", lambda x: torch.clamp(x, max=-0.25), U("clamp", max=-0.25), (-2, 2), (-3, 3), True, True),
    ("nan_to_num", torch.nan_to_num, U("nan_to_num"), (-2, 2), (-3, 3), False, True),
    ("isnan", torch.isnan, U("isnan"), (-2, 2), (-3, 3), False, False),
    ("isinf", torch.isinf, U("isinf"), (-2, 2), (-3, 3), False, False),
    ("isfinite", torch.isfinite, U("isfinite"), (-2, 2), (-3, 3), False, False),
    ("logical_not", torch.logical_not, U("logical_not"), (-2, 2), (-3, 3), False, False),
    ("bitwise_not", torch.bitwise_not, U("bitwise_not"), (-2, 2), (-100, 100), False, False),
    ("round_decimals", lambda x: torch.round(x, decimals=2), U("round_decimals", decimals=2), (-3, 3), (-5, 5),
     False, False),
    ("round_decimals_neg", lambda x: torch.round(x * 100, decimals=-1), None, None, None, False, False),
    ("polygamma1", lambda x: torch.polygamma(1, x), U("polygamma", n=1), (0.7, 4), (1, 5), True, True),
    ("polygamma2", lambda x: torch.polygamma(2, x), U("polygamma", n=2), (0.7, 4), (1, 5), False, True),
    ("polygamma3", lambda x: torch.polygamma(3, x), U("polygamma", n=3), (0.7, 4), (1, 5), False, True),
]

# float32 tolerance notes: lgamma/digamma/polygamma have roots in or near their domains
# where PyTorch's float implementation (its own series in float) differs from ours
# (double, rounded once) by a few float ulps of the terms, so a small absolute floor.
ATOL = {"lgamma": 1e-5, "digamma": 1e-5, "erfinv": 1e-6, "polygamma1": 1e-5, "polygamma2": 1e-5,
        "polygamma3": 1e-5}

for name, fn, attrs, fdom, idom, gg, fd in OPS:
    if attrs is None:
        continue
    for dt in ALL:
        lo, hi = fdom if dt in FLOATS else idom
        if dt == "uint8" and lo < 0:
            lo = 0
        err = torch_error(fn, dt)
        # PyTorch 1.13 lacks hardtanh's bfloat16 backward ("hardshrink_backward_cpu"): values only
        rg = False if (dt == "bfloat16" and name in ("hardtanh", "relu6")) else None
        add(case("%s_%s" % (name, dt), "unary", [T((2, 3), dt, low=lo, high=hi, requires_grad=rg)], fn, attrs=attrs,
                 gradgrad=gg and dt == "float64" and err is None, fd=fd, error=err,
                 atol=ATOL.get(name) if dt == "float32" else None))
    if torch_error(fn, "float32") is not None:
        continue
    lo, hi = fdom
    # non-contiguous, 0-dim, zero-size
    add(case("%s_transposed" % name, "unary", [T((3, 4), low=lo, high=hi, layout="transposed")], fn, attrs=attrs,
             fd=fd, atol=ATOL.get(name)))
    add(case("%s_strided" % name, "unary", [T((2, 5), "float64", low=lo, high=hi, layout="strided")], fn,
             attrs=attrs, fd=fd))
    add(case("%s_0dim" % name, "unary", [T((), low=lo, high=hi)], fn, attrs=attrs, fd=fd, atol=ATOL.get(name)))
    add(case("%s_empty" % name, "unary", [T((0, 3), low=lo, high=hi)], fn, attrs=attrs, fd=False))
    # out= into an empty tensor (inputs must not require grad)
    if name == "softsign":  # no out= form in PyTorch
        continue
    out_dt = str(fn(torch.ones(1)).dtype).replace("torch.", "")
    add(case("%s_out" % name, "unary", [T((2, 3), low=lo, high=hi, requires_grad=False)],
             lambda a, fn=fn, odt=out_dt: fn(a), attrs=dict(attrs, out=1, out_dtype=out_dt), fd=False,
             atol=ATOL.get(name)))

# in-place forms (on a clone, so autograd flows through the in-place op)
INPLACE = [
    ("abs", lambda a: a.abs_()), ("neg", lambda a: a.neg_()), ("sign", lambda a: a.sign_()),
    ("exp", lambda a: a.exp_()), ("exp2", lambda a: a.exp2_()), ("expm1", lambda a: a.expm1_()),
    ("log", lambda a: a.log_()), ("log2", lambda a: a.log2_()), ("log10", lambda a: a.log10_()),
    ("log1p", lambda a: a.log1p_()), ("sqrt", lambda a: a.sqrt_()), ("rsqrt", lambda a: a.rsqrt_()),
    ("sin", lambda a: a.sin_()), ("cos", lambda a: a.cos_()), ("tan", lambda a: a.tan_()),
    ("asin", lambda a: a.asin_()), ("acos", lambda a: a.acos_()), ("atan", lambda a: a.atan_()),
    ("sinh", lambda a: a.sinh_()), ("cosh", lambda a: a.cosh_()), ("tanh", lambda a: a.tanh_()),
    ("asinh", lambda a: a.asinh_()), ("acosh", lambda a: a.acosh_()), ("atanh", lambda a: a.atanh_()),
    ("sigmoid", lambda a: a.sigmoid_()), ("logit", lambda a: a.logit_()), ("erf", lambda a: a.erf_()),
    ("erfc", lambda a: a.erfc_()), ("erfinv", lambda a: a.erfinv_()), ("lgamma", lambda a: a.lgamma_()),
    ("digamma", lambda a: a.digamma_()), ("floor", lambda a: a.floor_()), ("ceil", lambda a: a.ceil_()),
    ("round", lambda a: a.round_()), ("trunc", lambda a: a.trunc_()), ("frac", lambda a: a.frac_()),
    ("reciprocal", lambda a: a.reciprocal_()), ("square", lambda a: a.square_()), ("relu", lambda a: a.relu_()),
    ("relu6", lambda a: F.relu6(a, inplace=True)), ("gelu", None), ("silu", lambda a: F.silu(a, inplace=True)),
    ("mish", lambda a: F.mish(a, inplace=True)), ("softsign", None),
    ("hardtanh", lambda a: F.hardtanh_(a, -0.5, 1.5)), ("hardsigmoid", lambda a: F.hardsigmoid(a, inplace=True)),
    ("hardswish", lambda a: F.hardswish(a, inplace=True)), ("leaky_relu", lambda a: F.leaky_relu_(a, 0.2)),
    ("elu", lambda a: F.elu_(a, 0.7)), ("selu", lambda a: F.selu(a, inplace=True)),
    ("celu", lambda a: F.celu_(a, 1.3)), ("clamp", lambda a: a.clamp_(-0.5, 0.5)),
    ("clamp_min", lambda a: a.clamp_(min=0.25)), ("clamp_max", lambda a: a.clamp_(max=-0.25)),
    ("nan_to_num", lambda a: a.nan_to_num_()), ("logical_not", lambda a: a.logical_not_()),
    ("round_decimals", lambda a: a.round_(decimals=2)), ("polygamma1", lambda a: a.polygamma_(1)),
    ("softplus", None),
]
SPEC = {o[0]: o for o in OPS}
for name, ifn in INPLACE:
    if ifn is None:
        continue
    _, _, attrs, fdom, _, _, fd = SPEC[name]
    # PyTorch 1.13 has no derivative for in-place asinh/acosh/atanh, and gives logical_not_
    # on a float clone an identity gradient (a quirk): values only for those
    rg = False if name in ("asinh", "acosh", "atanh", "logical_not") else None
    add(case("%s_inplace" % name, "unary", [T((2, 3), low=fdom[0], high=fdom[1], requires_grad=rg)],
             lambda a, ifn=ifn: ifn(a.clone()), attrs=dict(attrs, inplace=1), fd=fd, atol=ATOL.get(name)))
add(case("bitwise_not_inplace_int16", "unary", [T((5,), "int16", low=-50, high=50)], lambda a: a.clone().bitwise_not_(),
         attrs=U("bitwise_not", inplace=1), fd=False))
add(case("abs_inplace_int32", "unary", [T((5,), "int32", low=-50, high=50)], lambda a: a.clone().abs_(),
         attrs=U("abs", inplace=1), fd=False))
add(case("relu_inplace_int64", "unary", [T((5,), "int64", low=-50, high=50)], lambda a: a.clone().relu_(),
         attrs=U("relu", inplace=1), fd=False))
# in-place casting checks
add(case("exp_inplace_int_error", "unary", [T((3,), "int64")], lambda a: a.clone().exp_(),
         attrs=U("exp", inplace=1), error="result type Float can't be cast to the desired output type Long"))
add(case("clamp_inplace_int_float_error", "unary", [T((3,), "int64")], lambda a: a.clone().clamp_(0.5, 1),
         attrs=U("clamp", min=0.5, max=1, inplace=1),
         error="result type Float can't be cast to the desired output type long int"))
# double backward (float32 too) for the common ones
for name in ["exp", "log", "sin", "cos", "tanh", "sigmoid", "sqrt", "relu", "gelu", "gelu_tanh", "silu", "mish",
             "softplus", "elu", "selu", "hardswish", "erf", "atan", "reciprocal", "leaky_relu", "lgamma"]:
    _, fn, attrs, fdom, _, _, fd = SPEC[name]
    add(case("%s_gradgrad_f32" % name, "unary", [T((3, 3), low=fdom[0], high=fdom[1])], fn, attrs=attrs,
             gradgrad=True, fd=fd, atol=ATOL.get(name)))

# ---- edge values: kinks, infinities, nan ------------------------------------------------
INF, NAN = float("inf"), float("nan")
EDGE = [-INF, -3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0, 6.0, INF, NAN]
for name in ["abs", "sign", "relu", "relu6", "hardtanh", "hardsigmoid", "leaky_relu", "elu", "selu",
             "celu", "clamp", "clamp_min", "softplus", "nan_to_num", "floor", "round", "frac", "sqrt", "rsqrt",
             "reciprocal", "log", "atanh", "asin", "logit", "erfinv", "isnan", "isinf", "isfinite", "logical_not",
             "exp", "tanh", "sigmoid", "gelu", "silu", "mish", "trunc", "ceil", "digamma", "lgamma", "erfc"]:
    _, fn, attrs, _, _, _, _ = SPEC[name]
    add(case("%s_edges" % name, "unary", [T((len(EDGE),), "float64", values=EDGE)], fn, attrs=attrs, fd=False))
# gradient edge values in float32 too (relu'(0) = 0, abs'(0) = 0, sqrt'(0) = inf, ...)
for name in ["abs", "relu", "relu6", "hardtanh", "leaky_relu", "clamp", "sqrt", "elu"]:
    _, fn, attrs, _, _, _, _ = SPEC[name]
    add(case("%s_edges_f32" % name, "unary", [T((len(EDGE),), values=EDGE)], fn, attrs=attrs, fd=False))
# hardswish' at exactly 3 depends on the element's position in PyTorch (scalar path 1.5,
# vectorised path 1.0), so its edge case leaves 3 out; -3 and the rest agree.
HS_EDGE = [-INF, -3.0, -1.0, 0.0, 2.9, 3.1, INF, -2.5]  # nan too is position-dependent
add(case("hardswish_edges", "unary", [T((len(HS_EDGE),), "float64", values=HS_EDGE)], F.hardswish,
         attrs=U("hardswish"), fd=False))
add(case("hardswish_edges_f32", "unary", [T((len(HS_EDGE),), values=HS_EDGE)], F.hardswish,
         attrs=U("hardswish"), fd=False))
add(case("round_half_even", "unary", [T((8,), values=[-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 1e8 + 0.5])],
         torch.round, attrs=U("round"), fd=False))
add(case("round_decimals_neg", "unary", [T((6,), values=[125.0, 135.0, -125.0, 14.9, 0.0, 1e5 + 5])],
         lambda x: torch.round(x, decimals=-1), attrs=U("round_decimals", decimals=-1), fd=False))
add(case("round_decimals_f64", "unary", [T((6,), "float64", values=[0.125, 0.135, -2.675, 1.005, 0.0, 1e5 + 0.005])],
         lambda x: torch.round(x, decimals=2), attrs=U("round_decimals", decimals=2), fd=False))
add(case("logit_eps", "unary", [T((8,), "float64", values=[-1.0, 0.0, 0.1, 0.2, 0.5, 0.8, 0.95, 2.0])],
         lambda x: torch.logit(x, eps=0.15), attrs=U("logit", eps=0.15), fd=False, gradgrad=True))
add(case("logit_eps_f32", "unary", [T((2, 3), low=0.0, high=1.0)], lambda x: torch.logit(x, eps=0.3),
         attrs=U("logit", eps=0.3), fd=False))
add(case("nan_to_num_values", "unary", [T((6,), values=[NAN, INF, -INF, 1.0, -2.0, NAN])],
         lambda x: torch.nan_to_num(x, nan=1.5, posinf=9.0, neginf=-9.0),
         attrs=U("nan_to_num", nan=1.5, posinf=9.0, neginf=-9.0), fd=False))
add(case("nan_to_num_posinf_only", "unary", [T((4,), "float64", values=[NAN, INF, -INF, 1.0])],
         lambda x: torch.nan_to_num(x, posinf=7.0), attrs=U("nan_to_num", posinf=7.0), fd=False))
for dt in ["float16", "bfloat16"]:
    add(case("nan_to_num_defaults_%s" % dt, "unary", [T((4,), dt, values=[NAN, INF, -INF, 1.0])],
             torch.nan_to_num, attrs=U("nan_to_num"), fd=False))
add(case("hardtanh_min_gt_max", "unary", [T((5,), values=[-2.0, 0.0, 1.0, 1.5, 3.0])],
         lambda x: F.hardtanh(x, 2.0, 1.0), attrs=U("hardtanh", min_val=2.0, max_val=1.0), fd=False))
add(case("clamp_min_gt_max", "unary", [T((5,), values=[-2.0, 0.0, 1.0, 1.5, 3.0])],
         lambda x: torch.clamp(x, 2.0, 1.0), attrs=U("clamp", min=2.0, max=1.0), fd=False))
add(case("clamp_int_float_bounds", "unary", [T((6,), "int64", low=-5, high=5)], lambda x: torch.clamp(x, -1.5, 2.5),
         attrs=U("clamp", min=-1.5, max=2.5), fd=False))
add(case("clamp_bool_int_bounds", "unary", [T((6,), "bool")], lambda x: torch.clamp(x, 0, 1),
         attrs=U("clamp", min=0, max=1), fd=False))
add(case("clamp_none_error", "unary", [T((3,))], lambda x: torch.clamp(x), attrs=U("clamp"),
         error="torch.clamp: At least one of 'min' or 'max' must not be None"))
add(case("hardtanh_uint8_negative", "unary", [T((3,), "uint8", low=0, high=5)], lambda x: F.hardtanh(x),
         attrs=U("hardtanh", min_val=-1.0, max_val=1.0), error="cannot do hardtanh on an unsigned type with negative limits"))
add(case("gelu_bad_approximate", "unary", [T((3,))], lambda x: F.gelu(x, approximate="foo"),
         attrs=U("gelu", approximate="foo"), error="approximate argument must be either none or tanh."))
add(case("celu_alpha_zero", "unary", [T((3,))], lambda x: F.celu(x, 0.0), attrs=U("celu", alpha=0.0),
         error="ZeroDivisionError"))
add(case("polygamma_negative_n", "unary", [T((3,))], lambda x: torch.polygamma(-1, x), attrs=U("polygamma", n=-1),
         error="polygamma(n, x) does not support negative n."))
add(case("elu_negative_alpha", "unary", [T((2, 3))], lambda x: F.elu(x, -0.5), attrs=U("elu", alpha=-0.5)))
add(case("leaky_relu_negative_slope", "unary", [T((2, 3))], lambda x: F.leaky_relu(x, -0.5),
         attrs=U("leaky_relu", negative_slope=-0.5)))
add(case("digamma_negative", "unary", [T((5,), "float64", values=[-0.5, -1.5, -2.25, 0.25, -3.7])], torch.digamma,
         attrs=U("digamma"), gradgrad=True))
add(case("polygamma1_negative", "unary", [T((4,), "float64", values=[-0.5, -1.5, 0.25, 0.1])],
         lambda x: torch.polygamma(1, x), attrs=U("polygamma", n=1)))
add(case("lgamma_negative", "unary", [T((4,), "float64", values=[-0.5, -1.5, -2.25, 0.25])], torch.lgamma,
         attrs=U("lgamma")))
add(case("erfinv_tails", "unary", [T((6,), "float64", values=[-0.999999, -0.99, 0.5, 0.99, 0.9999999, 1e-9])],
         torch.erfinv, attrs=U("erfinv"), fd=False,
         # PyTorch's Newton steps use erf(x) - y, which cancels near +-1; ours use erfc there
         rtol=1e-9, grad_rtol=1e-8))
add(case("elu_small_f32", "unary", [T((4,), values=[-1e-4, -3e-3, -0.37, -5.0])], lambda x: F.elu(x),
         attrs=U("elu"), fd=False))
add(case("exp_large_f64", "unary", [T((3, 2), "float64", low=-20, high=20)], torch.exp, attrs=U("exp"),
         gradgrad=True))

# names are global over every family: prefix ours
for _c in CASES:
    _c.name = "un_" + _c.name
