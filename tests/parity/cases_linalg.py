"""Parity cases of the linalg family: mm, bmm, mv, dot, addmm, addmv, baddbmm, matmul, outer,
linear, einsum.

Tolerances: float32 products are summed in float32 in k order by ctorch's reference GEMM and
in a different (blocked/vectorised) order by PyTorch's BLAS, so a result element can differ by
a few ulps of the largest partial sum; where K is large or values cancel, cases set
atol=1e-5 (values in [-2, 2], K <= 64: |partial sums| <= ~30, ulp ~ 2e-6) and say so."""
import torch
from parity_lib import case, T

FLOATS = ["float32", "float64", "float16", "bfloat16"]
INTS = ["int8", "uint8", "int16", "int32", "int64"]
NUM = FLOATS + INTS

CASES = []
add = CASES.append


def via_f32(f, dt, bf16=False):
    """PyTorch 1.13's CPU has no float16 mm/bmm/mv/dot; ctorch accumulates float16 in float32
    and rounds once, so the reference is the float32 product rounded to float16. bf16=True does
    the same for bfloat16 where PyTorch's CPU kernel rounds every partial sum to bfloat16
    (addmv, baddbmm: a few bf16 ulps of the partial sums away from the float32 result)."""
    if dt == "float16":
        return lambda *xs: f(*[x.float() for x in xs]).half()
    if dt == "bfloat16" and bf16:
        return lambda *xs: f(*[x.float() for x in xs]).bfloat16()
    return f


def ilow(dt):
    return 0 if dt == "uint8" else -3


# ---- mm / matmul 2-D over every numeric dtype --------------------------------------------
for dt in NUM:
    lo = ilow(dt) if dt in INTS else -2.0
    add(case("mm_%s" % dt, "mm", [T((3, 4), dt, low=lo, high=3), T((4, 5), dt, low=lo, high=3)],
             via_f32(lambda a, b: torch.mm(a, b), dt), gradgrad=dt == "float64"))
    add(case("matmul_2d_%s" % dt, "matmul", [T((2, 3), dt, low=lo, high=3), T((3, 2), dt, low=lo, high=3)],
             via_f32(lambda a, b: torch.matmul(a, b), dt)))
    add(case("bmm_%s" % dt, "bmm", [T((2, 3, 4), dt, low=lo, high=3), T((2, 4, 2), dt, low=lo, high=3)],
             via_f32(lambda a, b: torch.bmm(a, b), dt)))
    add(case("mv_%s" % dt, "mv", [T((3, 4), dt, low=lo, high=3), T((4,), dt, low=lo, high=3)],
             via_f32(lambda a, b: torch.mv(a, b), dt)))
    add(case("addmm_%s" % dt, "addmm", [T((3, 2), dt, low=lo, high=3), T((3, 4), dt, low=lo, high=3),
                                        T((4, 2), dt, low=lo, high=3)],
             via_f32(lambda s, a, b: torch.addmm(s, a, b), dt)))
for dt in ["float32", "float64", "bfloat16", "int32", "int64", "int8"]:
    lo = ilow(dt) if dt in INTS else -2.0
    add(case("dot_%s" % dt, "dot", [T((5,), dt, low=lo, high=3), T((5,), dt, low=lo, high=3)],
             lambda a, b: torch.dot(a, b), gradgrad=dt == "float64"))
# int8 wraps like C++ (values up to 40*40*8 overflow int8)
add(case("mm_int8_wrap", "mm", [T((2, 8), "int8", low=20, high=40), T((8, 2), "int8", low=20, high=40)],
         lambda a, b: torch.mm(a, b)))
add(case("mm_uint8_wrap", "mm", [T((2, 8), "uint8", low=100, high=200), T((8, 2), "uint8", low=100, high=200)],
         lambda a, b: torch.mm(a, b)))

# ---- layouts: transposed and strided operands (no copies in the kernel) ----------------------
for la in ["transposed", "strided"]:
    for lb in ["contiguous", "transposed", "strided"]:
        add(case("mm_%s_%s" % (la, lb), "mm", [T((4, 3), layout=la), T((3, 5), layout=lb)],
                 lambda a, b: torch.mm(a, b), gradgrad=True))
add(case("mm_transposed_f64", "mm", [T((6, 5), "float64", layout="transposed"), T((5, 4), "float64", layout="transposed")],
         lambda a, b: a @ b, gradgrad=True))
add(case("bmm_transposed", "bmm", [T((2, 3, 4), layout="transposed"), T((2, 4, 3), layout="strided")],
         lambda a, b: torch.bmm(a, b), gradgrad=True))
add(case("bmm_mT", "bmm", [T((2, 4, 3)), T((2, 5, 4))], lambda a, b: torch.bmm(a.mT, b.mT),
         attrs={"mT": 1}))
add(case("mv_transposed", "mv", [T((4, 5), layout="transposed"), T((5,), layout="strided")],
         lambda a, b: torch.mv(a, b), gradgrad=True))
# a larger product: tiles of the blocked kernel and the thread pool. K = 64 in float32: see the
# module note (ulps of partial sums up to ~30)
add(case("mm_large_f32", "mm", [T((70, 64)), T((64, 300), layout="transposed")], lambda a, b: a @ b,
         atol=1e-5, grad_atol=1e-5))
add(case("mm_large_f64", "mm", [T((70, 300), "float64"), T((300, 260), "float64")], lambda a, b: a @ b))

# ---- zero-size ------------------------------------------------------------------------------
add(case("mm_k0", "mm", [T((2, 0)), T((0, 3))], lambda a, b: torch.mm(a, b)))
add(case("mm_m0", "mm", [T((0, 3)), T((3, 4))], lambda a, b: torch.mm(a, b)))
add(case("bmm_b0", "bmm", [T((0, 2, 3)), T((0, 3, 4))], lambda a, b: torch.bmm(a, b)))
add(case("matmul_k0_batched", "matmul", [T((2, 3, 0)), T((0, 4))], lambda a, b: a @ b))
add(case("dot_empty", "dot", [T((0,)), T((0,))], lambda a, b: torch.dot(a, b)))
add(case("addmm_k0", "addmm", [T((2, 3)), T((2, 0)), T((0, 3))], lambda s, a, b: torch.addmm(s, a, b, beta=2),
         attrs={"beta": 2}))

# ---- matmul: every rank combination, broadcast batch dims ------------------------------------
MM_SHAPES = [
    ("1d_1d", (4,), (4,)),
    ("2d_1d", (3, 4), (4,)),
    ("1d_2d", (4,), (4, 3)),
    ("3d_1d", (2, 3, 4), (4,)),
    ("3d_2d", (2, 3, 4), (4, 5)),
    ("1d_3d", (4,), (2, 4, 5)),
    ("2d_3d", (3, 4), (2, 4, 5)),
    ("3d_3d", (2, 3, 4), (2, 4, 5)),
    ("bcast_4d_3d", (2, 1, 3, 4), (5, 4, 2)),
    ("bcast_3d_4d", (1, 3, 4), (2, 6, 4, 2)),
    ("bcast_1d_4d", (4,), (2, 1, 4, 3)),
    ("bcast_4d_1d", (2, 1, 3, 4), (4,)),
    ("bcast_size1", (1, 3, 4), (3, 4, 2)),
]
for name, sa, sb in MM_SHAPES:
    add(case("matmul_%s" % name, "matmul", [T(sa), T(sb)], lambda a, b: torch.matmul(a, b), gradgrad=True))
    add(case("matmul_%s_f64" % name, "matmul", [T(sa, "float64"), T(sb, "float64")], lambda a, b: a @ b))
add(case("matmul_bcast_transposed", "matmul", [T((2, 1, 4, 3), layout="transposed"), T((5, 3, 2), layout="strided")],
         lambda a, b: a @ b, gradgrad=True))
add(case("matmul_3d_2d_int64", "matmul", [T((2, 3, 4), "int64"), T((4, 5), "int64")], lambda a, b: a @ b))
add(case("matmul_bcast_int32", "matmul", [T((2, 1, 3, 4), "int32"), T((5, 4, 2), "int32")], lambda a, b: a @ b))
add(case("matmul_out", "matmul", [T((3, 4), requires_grad=False), T((4, 2), requires_grad=False)],
         lambda a, b: torch.matmul(a, b, out=torch.empty(0)), attrs={"out": 1}))

# ---- add* forms ---------------------------------------------------------------------------------
add(case("addmm_beta_alpha", "addmm", [T((3, 2)), T((3, 4)), T((4, 2))],
         lambda s, a, b: torch.addmm(s, a, b, beta=0.5, alpha=2.0), attrs={"beta": 0.5, "alpha": 2.0}, gradgrad=True))
add(case("addmm_bcast_self", "addmm", [T((2,)), T((3, 4)), T((4, 2))],
         lambda s, a, b: torch.addmm(s, a, b, alpha=-1.5), attrs={"alpha": -1.5}, gradgrad=True))
add(case("addmm_0dim_self", "addmm", [T(()), T((3, 4), layout="transposed"), T((4, 2))],
         lambda s, a, b: torch.addmm(s, a, b, beta=3), attrs={"beta": 3}))
add(case("addmm_beta0_nan", "addmm", [T((3, 2), values=[[float("nan")] * 2] * 3, requires_grad=False),
                                      T((3, 4)), T((4, 2))],
         lambda s, a, b: torch.addmm(s, a, b, beta=0), attrs={"beta": 0}))
add(case("addmm_int64_ab", "addmm", [T((3, 2), "int64"), T((3, 4), "int64"), T((4, 2), "int64")],
         lambda s, a, b: torch.addmm(s, a, b, beta=2, alpha=3), attrs={"beta": 2, "alpha": 3}))
add(case("addmm_inplace", "addmm", [T((3, 2), requires_grad=False), T((3, 4)), T((4, 2))],
         lambda s, a, b: s.clone().addmm_(a, b, beta=2), attrs={"beta": 2, "inplace": 1}))
for dt in ["float32", "float64", "int64", "bfloat16"]:
    add(case("addmv_%s" % dt, "addmv", [T((3,), dt), T((3, 4), dt), T((4,), dt)],
             via_f32(lambda s, a, b: torch.addmv(s, a, b, beta=2, alpha=3), dt, True), attrs={"beta": 2, "alpha": 3}))
    add(case("baddbmm_%s" % dt, "baddbmm", [T((2, 3, 2), dt), T((2, 3, 4), dt), T((2, 4, 2), dt)],
             via_f32(lambda s, a, b: torch.baddbmm(s, a, b, beta=2, alpha=3), dt, True), attrs={"beta": 2, "alpha": 3}))
add(case("addmv_bcast", "addmv", [T((1,)), T((3, 4), layout="transposed"), T((4,))],
         lambda s, a, b: torch.addmv(s, a, b, beta=0.5), attrs={"beta": 0.5}, gradgrad=True))
add(case("baddbmm_bcast", "baddbmm", [T((3, 1)), T((2, 3, 4)), T((2, 4, 2), layout="transposed")],
         lambda s, a, b: torch.baddbmm(s, a, b, alpha=0.5), attrs={"alpha": 0.5}, gradgrad=True))

# ---- outer / linear -------------------------------------------------------------------------------
add(case("outer_f32", "outer", [T((3,)), T((4,))], lambda a, b: torch.outer(a, b), gradgrad=True))
add(case("outer_promote", "outer", [T((3,)), T((4,), "float64")], lambda a, b: torch.outer(a, b)))
add(case("outer_int", "outer", [T((3,), "int32"), T((4,), "int64")], lambda a, b: torch.outer(a, b)))
add(case("linear_2d_bias", "linear", [T((4, 3)), T((5, 3)), T((5,))],
         lambda x, w, b: torch.nn.functional.linear(x, w, b), gradgrad=True))
add(case("linear_3d_bias", "linear", [T((2, 4, 3)), T((5, 3), layout="transposed"), T((5,))],
         lambda x, w, b: torch.nn.functional.linear(x, w, b), gradgrad=True))
add(case("linear_nobias", "linear", [T((4, 3), "float64"), T((5, 3), "float64")],
         lambda x, w: torch.nn.functional.linear(x, w), gradgrad=True))
add(case("linear_1d", "linear", [T((3,)), T((5, 3)), T((5,))], lambda x, w, b: torch.nn.functional.linear(x, w, b)))

# ---- einsum ----------------------------------------------------------------------------------------
EIN = [
    ("mm", "ij,jk->ik", [(3, 4), (4, 5)]),
    ("bmm", "bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("diag", "ii->i", [(4, 4)]),
    ("trace", "ii", [(4, 4)]),
    ("transpose", "ij->ji", [(3, 4)]),
    ("outer", "i,j->ij", [(3,), (4,)]),
    ("attn", "bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]),
    ("ellipsis", "...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]),
    ("implicit", "ij,jk", [(3, 4), (4, 5)]),
    ("sum_all", "ij->", [(3, 4)]),
    ("rowsum", "ij->i", [(3, 4)]),
    ("repeated_sum", "ij,ij->", [(3, 4), (3, 4)]),
    ("three", "ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("hadamard", "ij,ij->ij", [(3, 4), (3, 4)]),
    ("bcast_label", "ij,jk->ik", [(3, 1), (4, 5)]),
    ("batch_diag", "bii->bi", [(2, 3, 3)]),
    ("ellipsis_mid", "i...j,j->i...", [(2, 3, 4), (4,)]),
    ("upper", "IJ,JK->IK", [(2, 3), (3, 2)]),
]
for name, eq, shapes in EIN:
    add(case("einsum_%s" % name, "einsum", [T(s) for s in shapes],
             (lambda eq: lambda *xs: torch.einsum(eq, *xs))(eq), attrs={"eq": eq}, gradgrad=True))
add(case("einsum_f64_transposed", "einsum", [T((4, 3), "float64", layout="transposed"), T((4, 5), "float64")],
         lambda a, b: torch.einsum("ji,jk->ik", a, b), attrs={"eq": "ji,jk->ik"}))
add(case("einsum_int64", "einsum", [T((2, 3), "int64"), T((3, 4), "int64")],
         lambda a, b: torch.einsum("ij,jk->ik", a, b), attrs={"eq": "ij,jk->ik"}))
add(case("einsum_zero_k", "einsum", [T((2, 0)), T((0, 3))], lambda a, b: torch.einsum("ij,jk->ik", a, b),
         attrs={"eq": "ij,jk->ik"}))

# ---- errors (PyTorch's words) --------------------------------------------------------------------
add(case("mm_err_shapes", "mm", [T((2, 3)), T((4, 5))], lambda a, b: torch.mm(a, b),
         error="mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"))
add(case("mm_err_dtype", "mm", [T((2, 3)), T((3, 2), "float64")], lambda a, b: torch.mm(a, b),
         error="expected scalar type Float but found Double"))
add(case("mm_err_bool", "mm", [T((2, 3), "bool"), T((3, 2), "bool")], lambda a, b: torch.mm(a, b),
         error="\"addmm_impl_cpu_\" not implemented for 'Bool'"))
add(case("mm_err_1d", "mm", [T((3,)), T((3, 2))], lambda a, b: torch.mm(a, b), error="self must be a matrix"))
add(case("matmul_err_0d", "matmul", [T(()), T((2, 3))], lambda a, b: torch.matmul(a, b),
         error="both arguments to matmul need to be at least 1D, but they are 0D and 2D"))
add(case("matmul_err_1d_2d", "matmul", [T((3,)), T((4, 2))], lambda a, b: torch.matmul(a, b),
         error="mat1 and mat2 shapes cannot be multiplied (1x3 and 4x2)"))
add(case("matmul_err_fold_t", "matmul", [T((3,)), T((2, 4, 5))], lambda a, b: torch.matmul(a, b),
         error="size mismatch, got 10, 10x4,3"))
add(case("matmul_err_batch", "matmul", [T((2, 2, 3)), T((3, 3, 4))], lambda a, b: torch.matmul(a, b),
         error="The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0"))
add(case("bmm_err_sizes", "bmm", [T((2, 2, 3)), T((2, 4, 4))], lambda a, b: torch.bmm(a, b),
         error="Expected size for first two dimensions of batch2 tensor to be: [2, 3] but got: [2, 4]."))
add(case("dot_err_dtype", "dot", [T((3,)), T((3,), "float64")], lambda a, b: torch.dot(a, b),
         error="dot : expected both vectors to have same dtype, but found Float and Double"))
add(case("dot_err_size", "dot", [T((3,)), T((4,))], lambda a, b: torch.dot(a, b),
         error="inconsistent tensor size, expected tensor [3] and src [4] to have the same number of elements, but got 3 and 4 elements respectively"))
add(case("mv_err_size", "mv", [T((2, 3)), T((4,))], lambda a, b: torch.mv(a, b), error="size mismatch, got 2, 2x3,4"))
add(case("addmm_err_dtype", "addmm", [T((2, 2), "float64"), T((2, 3)), T((3, 2))], lambda s, a, b: torch.addmm(s, a, b),
         error="self and mat2 must have the same dtype"))
add(case("outer_err_dim", "outer", [T((3,)), T((2, 2))], lambda a, b: torch.outer(a, b),
         error="outer: Expected 1-D argument vec2, but got 2-D"))
add(case("einsum_err_operands", "einsum", [T((2, 3))], lambda a: torch.einsum("ij,jk->ik", a),
         attrs={"eq": "ij,jk->ik"}, error="einsum(): fewer operands were provided than specified in the equation"))
add(case("einsum_err_size", "einsum", [T((2, 3)), T((4, 4))], lambda a, b: torch.einsum("ij,jk->ik", a, b),
         attrs={"eq": "ij,jk->ik"}, error="einsum(): subscript j has size 4 for operand 1 which does not broadcast with previously seen size 3"))
add(case("einsum_err_output", "einsum", [T((2, 3))], lambda a: torch.einsum("ij->ik", a), attrs={"eq": "ij->ik"},
         error="einsum(): output subscript k does not appear in the equation for any input operand"))
add(case("einsum_err_dims", "einsum", [T((2, 3))], lambda a: torch.einsum("ijk->ij", a), attrs={"eq": "ijk->ij"},
         error="einsum(): the number of subscripts in the equation (3) does not match the number of dimensions (2) for operand 0 and no ellipsis was given"))
add(case("einsum_err_repeat", "einsum", [T((2, 3))], lambda a: torch.einsum("ii->i", a), attrs={"eq": "ii->i"},
         error="einsum(): subscript i is repeated for operand 0 but the sizes don't match, 3 != 2"))
